//! The node's metadata view and the debug routes: each partition's LEO, HW, epochs,
//! ISR and follower state, and the whole local log, for the harness's final checks;
//! and the disk fault switch (`/debug/disk`), for the harness's `disk` fault.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::response::IntoResponse;
use serde_json::{Map, Value, json};

use super::{ApiResult, Shared, json_body, parse_partition, path, replica_error};
use crate::disk::{DiskFaults, DiskMode};
use crate::error::ApiError;
use crate::replica::ReplicaLog;

pub(super) async fn metadata(State(node): Shared) -> Json<Value> {
    Json(serde_json::to_value(node.metadata()).unwrap_or(Value::Null))
}

pub(super) async fn partitions(State(node): Shared) -> Json<Value> {
    let mut parts = Vec::new();
    for part in node.all() {
        let r = part.read();
        let state = r.state();
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
            // Offline until the controller's first word.
            "role": r.role(),
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
            "storage_error": part.log_dir.failing().map(|f| f.error),
        }));
    }
    Json(json!({"broker": node.ctx().id, "partitions": parts}))
}

pub(super) async fn log(
    State(node): Shared,
    p: Result<Path<(String, String)>, PathRejection>,
) -> ApiResult {
    let (topic, partition) = path(p)?;
    let partition = parse_partition(&partition)?;
    let part = node.require(&topic, partition)?;
    let r = part.read();
    let leo = r.log_end_offset();
    let records = r
        .log()
        .read(r.log().log_start_offset(), usize::MAX, leo)
        .map_err(|e| replica_error(&part, e.into()))?;
    Ok(Json(LocalLog {
        topic,
        partition,
        log_end_offset: leo,
        high_watermark: r.high_watermark(),
        records,
    })
    .into_response())
}

/// `/debug/log` (the records' values exactly as written).
#[derive(serde::Serialize)]
struct LocalLog {
    topic: String,
    partition: u32,
    log_end_offset: u64,
    high_watermark: u64,
    records: Vec<crate::log::Record>,
}

/// `POST /debug/disk`: `{"mode": "enospc"|"eio"|"ok", "for_ms": N}`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SetDisk {
    mode: String,
    #[serde(default)]
    for_ms: Option<u64>,
}

/// Make the node's storage fail (or work again) from now on, for `for_ms`
/// milliseconds if given (then it works again by itself).
pub(super) async fn set_disk(
    State(node): Shared,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let req: SetDisk = json_body(body)?;
    let Some(mode) = DiskMode::parse(&req.mode) else {
        return Err(ApiError::invalid(format!(
            "`mode` must be enospc, eio or ok, got `{}`",
            req.mode
        )));
    };
    let faults = &node.ctx().config.log.faults;
    let duration = req.for_ms.map(std::time::Duration::from_millis);
    faults.set(mode, duration);
    eprintln!(
        "node {}: disk fault switch: {}{} (POST /debug/disk)",
        node.ctx().id,
        mode.as_str(),
        req.for_ms
            .map_or(String::new(), |ms| format!(" for {ms} ms"))
    );
    Ok(Json(disk_view(faults)).into_response())
}

/// `GET /debug/disk`: the switch's mode and how long it still lasts.
pub(super) async fn disk(State(node): Shared) -> Json<Value> {
    Json(disk_view(&node.ctx().config.log.faults))
}

fn disk_view(faults: &DiskFaults) -> Value {
    let (mode, left) = faults.current();
    json!({"mode": mode.as_str(), "remaining_ms": left.map(|d| d.as_millis() as u64)})
}
