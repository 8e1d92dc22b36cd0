//! The node's metadata view and the debug routes: each partition's LEO, HW, epochs,
//! ISR and follower state, and the whole local log, for the harness's final checks.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::IntoResponse;
use serde_json::{Map, Value, json};

use super::{ApiResult, parse_partition, path, replica_error};
use crate::node::Node;
use crate::replica::{ReplicaLog, Role};

pub(super) async fn metadata(State(node): State<Arc<Node>>) -> Json<Value> {
    Json(serde_json::to_value(node.manager.metadata()).unwrap_or(Value::Null))
}

pub(super) async fn partitions(State(node): State<Arc<Node>>) -> Json<Value> {
    let mut parts = Vec::new();
    for part in node.manager.all() {
        let r = part.lock();
        let state = r.state();
        let role = match (state, r.role()) {
            (None, _) => "offline",
            (_, Role::Leader) => "leader",
            (_, Role::Follower) => "follower",
            (_, Role::Offline) => "offline",
        };
        let mut followers = Map::new();
        for id in state.map(|s| s.replicas.clone()).unwrap_or_default() {
            if let Some(f) = r.follower(id) {
                followers.insert(
                    id.to_string(),
                    json!({"log_end_offset": f.log_end_offset, "last_caught_up_ms": f.last_caught_up_ms,
                           "broker_epoch": f.broker_epoch}),
                );
            }
        }
        parts.push(json!({
            "topic": part.tp.topic,
            "partition": part.tp.partition,
            "role": role,
            "leader": r.leader(),
            "leader_epoch": r.leader_epoch(),
            "partition_epoch": state.map_or(-1, |s| s.partition_epoch),
            "isr": r.isr(),
            "replicas": state.map(|s| s.replicas.clone()).unwrap_or_default(),
            "log_start_offset": r.log().log_start_offset(),
            "log_end_offset": r.log_end_offset(),
            "high_watermark": r.high_watermark(),
            "flushed_offset": r.log().flushed_offset(),
            "epoch_cache": r.epochs().entries(),
            "followers": followers,
        }));
    }
    Json(json!({"broker": node.id, "partitions": parts}))
}

pub(super) async fn log(
    State(node): State<Arc<Node>>,
    p: Result<Path<(String, String)>, PathRejection>,
) -> ApiResult {
    let (topic, partition) = path(p)?;
    let partition = parse_partition(&partition)?;
    let part = node.manager.require(&topic, partition)?;
    let r = part.lock();
    let leo = r.log_end_offset();
    let records = r
        .log()
        .read(r.log().log_start_offset(), usize::MAX, leo)
        .map_err(|e| replica_error(&part, e.into()))?;
    Ok(Json(json!({
        "topic": topic,
        "partition": partition,
        "log_end_offset": leo,
        "high_watermark": r.high_watermark(),
        "records": records,
    }))
    .into_response())
}
