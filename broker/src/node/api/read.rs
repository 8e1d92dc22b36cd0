//! Consuming (from the leader, never past the high watermark) and the register view
//! (reads at the HW; linearizable ones confirm leadership with the controller).

use std::collections::HashMap;

use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use serde::Serialize;
use serde_json::json;
use tokio::time::Instant;

use super::super::partitions::{Partition, ReplicaManager};
use super::super::purgatory::Waits;
use super::{
    ACK_TIMEOUT, ApiResult, MAX_RECORDS, Shared, parse_bool, parse_partition, parse_u64, path,
    query, refused, replica_error,
};
use crate::bugs::Bug;
use crate::error::{ApiError, Code};
use crate::events::{Api, Event, FenceReason};
use crate::kv::partition_for_key;
use crate::log::Record;
use crate::replica::{ReplicaError, ReplicaLog, Role};
use crate::rpc::CallError;
use crate::value::RecordValue;

pub(super) async fn consume(
    State(node): Shared,
    p: Result<Path<(String, String)>, PathRejection>,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> ApiResult {
    let (topic, partition) = path(p)?;
    let partition = parse_partition(&partition)?;
    let q = query(q)?;
    let offset = parse_u64(&q, "offset", 0)?;
    let max = parse_u64(&q, "max_records", 100)?;
    if max == 0 || max > MAX_RECORDS as u64 {
        return Err(ApiError::invalid(format!(
            "`max_records` must be 1 to {MAX_RECORDS}, got {max}"
        )));
    }
    let part = node.require(&topic, partition)?;
    let r = part.read();
    if r.role() != Role::Leader {
        let e = ReplicaError::NotLeader { leader: r.leader() };
        return Err(refused(&node, &part, Api::Consume, e));
    }
    let hw = r.high_watermark();
    let limit = r.read_limit();
    if offset > limit {
        return Err(ApiError::new(
            Code::OffsetOutOfRange,
            format!("{topic}-{partition}: offset {offset} is past the high watermark {hw}"),
        )
        .with("high_watermark", hw));
    }
    let records = r
        .log()
        .read(offset, max as usize, limit)
        .map_err(|e| replica_error(&part, e.into()))?;
    Ok(Json(Consumed {
        high_watermark: hw,
        log_start_offset: r.log().log_start_offset(),
        records,
    })
    .into_response())
}

pub(super) async fn read_key(
    State(node): Shared,
    p: Result<Path<(String, String)>, PathRejection>,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> ApiResult {
    let (topic, key) = path(p)?;
    let q = query(q)?;
    let linearizable = parse_bool(&q, "linearizable")?;
    let partition = key_partition(&node, &topic, &key).await?;
    let part = node.require(&topic, partition).map_err(|_| {
        ApiError::new(
            Code::NotLeader,
            format!("this broker does not host {topic}-{partition}, where key `{key}` lives"),
        )
        .with("leader", -1)
    })?;
    // A linearizable read must not answer from a new leader's HW that still lags
    // what the previous leader committed: wait until HW reaches this epoch's start.
    let deadline = Instant::now() + ACK_TIMEOUT;
    let read = part
        .purgatory
        .wait_until(deadline, Waits::State, || {
            let r = part.read();
            if r.role() != Role::Leader {
                let e = ReplicaError::NotLeader { leader: r.leader() };
                return Some(Err(refused(&node, &part, Api::Read, e)));
            }
            if linearizable && r.high_watermark() < r.leader_epoch_start_offset() {
                return None;
            }
            let found = r.log().value_below(&key, r.read_limit()).cloned();
            Some(Ok((found, r.leader_epoch())))
        })
        .await;
    let (found, epoch) = match read {
        Some(x) => x?,
        None => {
            return Err(ApiError::new(
                Code::RequestTimedOut,
                format!("{topic}-{partition}: the new leader's high watermark did not catch up"),
            ));
        }
    };
    // PLANTED BUG (stale-read): with `--bug stale-read` the leadership check is skipped.
    if linearizable && !node.ctx().config.bugs.has(Bug::StaleRead) {
        confirm_leadership(&node, &part, epoch).await?;
    }
    let (offset, value) = match found {
        Some((o, v)) => (Some(o), v),
        None => (None, RecordValue::null()),
    };
    Ok(Json(KeyRead {
        key: &key,
        value: &value,
        partition,
        offset,
    })
    .into_response())
}

/// The partition of `topic` where `key` lives (the topic's size asked of the
/// controller when this broker does not know it).
async fn key_partition(node: &ReplicaManager, topic: &str, key: &str) -> Result<u32, ApiError> {
    let partitions = match node.ctx().topic_size(topic).await {
        Ok(Some(n)) => n,
        Ok(None) => {
            return Err(ApiError::new(
                Code::UnknownTopicOrPartition,
                format!("topic `{topic}` is unknown (to this broker and the controller)"),
            ));
        }
        Err(e) => {
            return Err(ApiError::new(
                Code::RequestTimedOut,
                format!("cannot learn how many partitions `{topic}` has: {e}"),
            ));
        }
    };
    Ok(partition_for_key(key, partitions))
}

/// A linearizable read's last check: the controller still names this broker the
/// leader at `epoch` (a deposed leader must not answer from its stale copy).
async fn confirm_leadership(
    node: &ReplicaManager,
    part: &Partition,
    epoch: i32,
) -> Result<(), ApiError> {
    let (topic, partition) = (&part.tp.topic, part.tp.partition);
    match node.ctx().confirm_leadership(topic, partition, epoch).await {
        Ok(state) if state.leader == node.ctx().id && state.leader_epoch == epoch => Ok(()),
        Ok(state) => {
            node.emit(&Event::fenced(Api::Read, FenceReason::NotLeader, &part.tp));
            Err(ApiError::new(
                Code::NotLeader,
                format!(
                    "{topic}-{partition}: the controller names broker {} leader",
                    state.leader
                ),
            )
            .with("leader", state.leader))
        }
        Err(CallError::Api(e)) if e.code == Code::NotLeader => {
            node.emit(&Event::fenced(Api::Read, FenceReason::NotLeader, &part.tp));
            let leader = e.extra.get("leader").cloned().unwrap_or(json!(-1));
            Err(ApiError::new(
                Code::NotLeader,
                format!(
                    "{topic}-{partition}: leadership not confirmed: {}",
                    e.message
                ),
            )
            .with("leader", leader))
        }
        Err(e) => Err(ApiError::new(
            Code::RequestTimedOut,
            format!("{topic}-{partition}: could not confirm leadership: {e}"),
        )),
    }
}

/// A register-view answer (its value exactly as written).
#[derive(Serialize)]
struct KeyRead<'a> {
    key: &'a str,
    value: &'a RecordValue,
    partition: u32,
    offset: Option<u64>,
}

/// A consume answer (the records' values exactly as written).
#[derive(Serialize)]
struct Consumed {
    high_watermark: u64,
    log_start_offset: u64,
    records: Vec<Record>,
}
