//! Internal routes: LeaderAndIsr from the controller (fenced by broker epoch and by
//! controller epoch, a newer one confirmed with the controller first), and the
//! leader's side of replication — FETCH (with its purgatory) and
//! OffsetsForLeaderEpoch.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::IntoResponse;
use serde_json::json;
use tokio::time::Instant;

use super::{ApiResult, MAX_RECORDS, Shared, json_body, refused};
use crate::error::{ApiError, Code};
use crate::events::{Api, Event, FenceReason};
use crate::node::heartbeat;
use crate::node::purgatory::Waits;
use crate::protocol::{EpochEndOffset, Fetch, LeaderAndIsr, OffsetsForLeaderEpoch};
use crate::replica::{FetchRequest, ReplicaError, Role};

pub(super) async fn leader_and_isr(
    State(node): Shared,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let msg: LeaderAndIsr = json_body(body)?;
    // Broker-epoch fencing: a push meant for an earlier process of this broker (sent
    // before it restarted, delivered late) must not act on this one.
    if let Some(e) = msg.broker_epoch.filter(|&e| e != node.ctx().broker_epoch()) {
        node.emit(&Event::Fenced {
            api: Api::LeaderAndIsr,
            reason: FenceReason::StaleBrokerEpoch,
            topic: None,
            partition: None,
        });
        return Err(ApiError::new(
            Code::FencedLeaderEpoch,
            format!(
                "LeaderAndIsr for broker epoch {e}, this process has broker epoch {}",
                node.ctx().broker_epoch()
            ),
        )
        .with("broker_epoch", node.ctx().broker_epoch()));
    }
    // A newer controller epoch is taken only from the controller itself (the answer
    // to a heartbeat this node sends to its --controller), never on a push's word:
    // a forged push with a huge epoch would otherwise deafen the node to the real
    // controller for good.
    let known = node.controller_epoch();
    if msg.controller_epoch > known {
        let confirmed = heartbeat::beat(&node).await.map_err(|e| {
            ApiError::new(
                Code::RequestTimedOut,
                format!(
                    "cannot confirm controller epoch {} with the controller: {e}",
                    msg.controller_epoch
                ),
            )
        })?;
        if confirmed != msg.controller_epoch {
            eprintln!(
                "node {}: LeaderAndIsr with controller epoch {} refused: the controller \
                 answers epoch {confirmed}",
                node.ctx().id,
                msg.controller_epoch
            );
            return Err(ApiError::new(
                Code::FencedLeaderEpoch,
                format!(
                    "controller epoch {} is not the controller's ({confirmed})",
                    msg.controller_epoch
                ),
            )
            .with("controller_epoch", confirmed));
        }
    }
    node.apply_controller(
        Api::LeaderAndIsr,
        msg.controller_epoch,
        msg.brokers,
        msg.partitions,
    )?;
    Ok(Json(json!({})).into_response())
}

pub(super) async fn fetch(State(node): Shared, body: Result<Bytes, BytesRejection>) -> ApiResult {
    let req: Fetch = json_body(body)?;
    let part = node.require(&req.topic, req.partition)?;
    let rreq = FetchRequest {
        replica_id: req.replica_id,
        broker_epoch: req.broker_epoch,
        fetch_offset: req.fetch_offset,
        leader_epoch: req.leader_epoch,
        max_records: req.max_records.clamp(1, MAX_RECORDS),
    };
    let now = node.ctx().now_ms();
    let resp = node.update(&part, |r| r.fetch_as_leader(&rreq, now));
    let resp = resp.map_err(|e| refused(&node, &part, Api::Fetch, e))?;
    if !resp.records.is_empty() {
        return Ok(Json(resp).into_response());
    }
    // Nothing to send: wait in purgatory for an append (or a role change).
    let deadline = Instant::now() + node.ctx().config.replica.replica_fetch_wait_max();
    let ready = |final_check: bool| {
        let r = part.read();
        let changed = r.role() != Role::Leader || r.leader_epoch() != rreq.leader_epoch;
        if final_check || changed || r.log_end_offset() > rreq.fetch_offset {
            Some(r.read_for_follower(&rreq))
        } else {
            None
        }
    };
    let waited = part
        .purgatory
        .wait_until(deadline, Waits::StateOrRecords, || ready(false));
    let resp = match waited.await {
        Some(resp) => resp,
        None => ready(true).expect("a final check always answers"),
    };
    let resp = resp.map_err(|e| refused(&node, &part, Api::Fetch, e))?;
    Ok(Json(resp).into_response())
}

pub(super) async fn offsets_for_leader_epoch(
    State(node): Shared,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let req: OffsetsForLeaderEpoch = json_body(body)?;
    let part = node.require(&req.topic, req.partition)?;
    let r = part.read();
    let api = Api::OffsetsForLeaderEpoch;
    if r.role() != Role::Leader {
        let leader = r.leader();
        return Err(refused(
            &node,
            &part,
            api,
            ReplicaError::NotLeader { leader },
        ));
    }
    if req.current_leader_epoch != r.leader_epoch() {
        let e = ReplicaError::FencedLeaderEpoch {
            requested: req.current_leader_epoch,
            current: r.leader_epoch(),
        };
        return Err(refused(&node, &part, api, e));
    }
    let answer = EpochEndOffset::from_answer(r.end_offset_for(req.leader_epoch));
    Ok(Json(answer).into_response())
}
