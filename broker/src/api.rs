//! The node's HTTP routes: the public API of docs/api.md (produce, consume, the
//! register view, metadata, debug) and the internal replication/control routes
//! (fetch, offsets-for-leader-epoch, leader-and-isr). Every error is JSON with a code,
//! including axum's own rejections (bad JSON, bad path, body too large, no route).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use crate::error::{ApiError, Code};
use crate::kv::partition_for_key;
use crate::node::Node;
use crate::partition::Partition;
use crate::protocol::{EpochEndOffset, Fetch, LeaderAndIsr, OffsetsForLeaderEpoch};
use crate::replica::{AckStatus, FetchRequest, ReplicaError, ReplicaLog, Role};
use crate::replica_manager;
use crate::rpc::CallError;

/// Largest request body (bigger: 413 PAYLOAD_TOO_LARGE).
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Most records one produce or consume request may carry.
pub const MAX_RECORDS: usize = 10_000;
/// How long an acks=all produce (or a linearizable read) waits for the HW.
pub const ACK_TIMEOUT: Duration = Duration::from_secs(5);

type ApiResult = Result<Response, ApiError>;

/// All routes of a node.
pub fn router(node: Arc<Node>) -> Router {
    Router::new()
        .route("/v1/metadata", get(metadata))
        .route(
            "/v1/topics/{topic}/partitions/{partition}/records",
            post(produce).get(consume),
        )
        .route("/v1/topics/{topic}/keys/{key}", get(read_key))
        .route("/debug/partitions", get(debug_partitions))
        .route("/debug/log/{topic}/{partition}", get(debug_log))
        .route("/internal/leader-and-isr", post(leader_and_isr))
        .route("/internal/fetch", post(fetch))
        .route(
            "/internal/offsets-for-leader-epoch",
            post(offsets_for_leader_epoch),
        )
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(node)
}

async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::invalid(format!("no route for {method} {uri} (see docs/api.md)"))
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::invalid(format!("{uri} does not take {method} (see docs/api.md)"))
}

// ---- decoding requests, with JSON errors ----

fn body_bytes(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                Code::PayloadTooLarge,
                format!("request body is larger than {MAX_BODY_BYTES} bytes"),
            )
        } else {
            ApiError::invalid(format!("cannot read the request body: {}", e.body_text()))
        }
    })
}

fn json_body<T: DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> Result<T, ApiError> {
    let bytes = body_bytes(body)?;
    serde_json::from_slice(&bytes).map_err(|e| ApiError::invalid(format!("request body: {e}")))
}

fn path<T>(p: Result<Path<T>, PathRejection>) -> Result<T, ApiError> {
    p.map(|Path(t)| t)
        .map_err(|e| ApiError::invalid(format!("request path: {}", e.body_text())))
}

fn query(
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<HashMap<String, String>, ApiError> {
    q.map(|Query(m)| m)
        .map_err(|e| ApiError::invalid(format!("query string: {}", e.body_text())))
}

fn parse_partition(s: &str) -> Result<u32, ApiError> {
    s.parse().map_err(|_| {
        ApiError::invalid(format!(
            "partition `{s}` is not a partition number (a non-negative integer)"
        ))
    })
}

fn parse_u64(q: &HashMap<String, String>, name: &str, default: u64) -> Result<u64, ApiError> {
    match q.get(name) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| {
            ApiError::invalid(format!(
                "`{name}` must be a non-negative integer, got `{v}`"
            ))
        }),
    }
}

fn parse_bool(q: &HashMap<String, String>, name: &str) -> Result<bool, ApiError> {
    match q.get(name).map(String::as_str) {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(v) => Err(ApiError::invalid(format!(
            "`{name}` must be true or false, got `{v}`"
        ))),
    }
}

fn replica_error(part: &Partition, e: ReplicaError) -> ApiError {
    let name = format!("{}-{}", part.tp.topic, part.tp.partition);
    match e {
        ReplicaError::NotLeader { leader } => {
            ApiError::new(Code::NotLeader, format!("this broker does not lead {name}"))
                .with("leader", leader)
        }
        ReplicaError::FencedLeaderEpoch { current } => ApiError::new(
            Code::FencedLeaderEpoch,
            format!("{name}: the request's leader epoch is not the current one ({current})"),
        )
        .with("leader_epoch", current),
        ReplicaError::NotEnoughReplicas { isr } => ApiError::new(
            Code::NotEnoughReplicas,
            format!("{name}: ISR {isr:?} is smaller than min.insync.replicas; nothing was written"),
        )
        .with("isr", isr),
        ReplicaError::OffsetOutOfRange { log_end_offset } => ApiError::new(
            Code::OffsetOutOfRange,
            format!("{name}: fetch offset is past the log end offset {log_end_offset}"),
        )
        .with("log_end_offset", log_end_offset),
        ReplicaError::UnknownReplica { replica } => {
            ApiError::invalid(format!("{name}: broker {replica} is not a replica"))
        }
        // A storage failure in the middle of a write leaves its outcome unknown.
        ReplicaError::Io(e) => {
            ApiError::new(Code::RequestTimedOut, format!("{name}: storage error: {e}"))
        }
    }
}

// ---- producing ----

/// A produce body, checked field by field for clear errors.
struct ProduceBody {
    entries: Vec<(Option<String>, Value)>,
    /// `Some(x)` when `if_value` is present (x may be null).
    if_value: Option<Value>,
}

fn parse_produce(bytes: &[u8]) -> Result<ProduceBody, ApiError> {
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::invalid(format!("request body is not JSON: {e}")))?;
    let Value::Object(mut obj) = v else {
        return Err(ApiError::invalid(
            "request body must be an object: {\"records\": [{\"key\": k?, \"value\": v}]}",
        ));
    };
    let records = obj
        .remove("records")
        .ok_or_else(|| ApiError::invalid("request body has no `records`"))?;
    let if_value = obj.remove("if_value");
    if let Some(k) = obj.keys().next() {
        return Err(ApiError::invalid(format!(
            "unknown field `{k}` in the request body (expected `records`, `if_value`)"
        )));
    }
    let Value::Array(records) = records else {
        return Err(ApiError::invalid("`records` must be an array"));
    };
    if records.is_empty() || records.len() > MAX_RECORDS {
        return Err(ApiError::invalid(format!(
            "`records` must hold 1 to {MAX_RECORDS} records, got {}",
            records.len()
        )));
    }
    let mut entries = Vec::with_capacity(records.len());
    for (i, r) in records.into_iter().enumerate() {
        let Value::Object(mut r) = r else {
            return Err(ApiError::invalid(format!("records[{i}] must be an object")));
        };
        let value = r
            .remove("value")
            .ok_or_else(|| ApiError::invalid(format!("records[{i}] has no `value`")))?;
        let key = match r.remove("key") {
            None | Some(Value::Null) => None,
            Some(Value::String(k)) => Some(k),
            Some(other) => {
                return Err(ApiError::invalid(format!(
                    "records[{i}].key must be a string or null, got {other}"
                )));
            }
        };
        if let Some(k) = r.keys().next() {
            return Err(ApiError::invalid(format!(
                "unknown field `{k}` in records[{i}] (expected `key`, `value`)"
            )));
        }
        entries.push((key, value));
    }
    if if_value.is_some() && (entries.len() != 1 || entries[0].0.is_none()) {
        return Err(ApiError::invalid(
            "`if_value` needs exactly one record, with a key",
        ));
    }
    Ok(ProduceBody { entries, if_value })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Acks {
    None,
    Leader,
    All,
}

async fn produce(
    State(node): State<Arc<Node>>,
    p: Result<Path<(String, String)>, PathRejection>,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let (topic, partition) = path(p)?;
    let partition = parse_partition(&partition)?;
    let q = query(q)?;
    let acks = match q.get("acks").map(String::as_str) {
        None | Some("all") | Some("-1") => Acks::All,
        Some("1") => Acks::Leader,
        Some("0") => Acks::None,
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "`acks` must be 0, 1 or all, got `{other}`"
            )));
        }
    };
    let body = parse_produce(&body_bytes(body)?)?;
    let part = node.manager.require(&topic, partition)?;
    if acks == Acks::None {
        let node = node.clone();
        tokio::spawn(async move {
            let _ = append(&node, &part, body, false);
        });
        return Ok(Json(json!({"base_offset": null})).into_response());
    }
    let appended = append(&node, &part, body, acks == Acks::All)?;
    if acks == Acks::All {
        let deadline = Instant::now() + ACK_TIMEOUT;
        let status = part
            .purgatory
            .wait_until(deadline, || {
                match part
                    .lock()
                    .ack_status(appended.end_offset, appended.leader_epoch)
                {
                    AckStatus::Pending => None,
                    other => Some(other),
                }
            })
            .await;
        let name = format!("{topic}-{partition}");
        match status {
            Some(AckStatus::Committed) => {}
            Some(AckStatus::CommittedBelowMinIsr) => {
                let isr = part.lock().isr().to_vec();
                return Err(ApiError::new(
                    Code::NotEnoughReplicasAfterAppend,
                    format!(
                        "{name}: written, but the ISR {isr:?} shrank below min.insync.replicas"
                    ),
                )
                .with("isr", isr));
            }
            Some(AckStatus::LeadershipLost) => {
                return Err(ApiError::new(
                    Code::RequestTimedOut,
                    format!(
                        "{name}: leadership lost while waiting for the ISR; the write at offset \
                         {} may or may not survive",
                        appended.base_offset
                    ),
                ));
            }
            Some(AckStatus::Pending) | None => {
                return Err(ApiError::new(
                    Code::RequestTimedOut,
                    format!(
                        "{name}: the ISR did not replicate offset {} within {ACK_TIMEOUT:?}",
                        appended.base_offset
                    ),
                ));
            }
        }
    }
    Ok(Json(json!({
        "base_offset": appended.base_offset,
        "leader_epoch": appended.leader_epoch,
    }))
    .into_response())
}

/// The leader's append, with the `if_value` check judged under the same lock.
fn append(
    node: &Node,
    part: &Partition,
    body: ProduceBody,
    acks_all: bool,
) -> Result<crate::replica::Appended, ApiError> {
    let mut r = part.lock();
    if let Some(expected) = &body.if_value {
        if r.role() != Role::Leader {
            return Err(replica_error(
                part,
                ReplicaError::NotLeader { leader: r.leader() },
            ));
        }
        let key = body.entries[0]
            .0
            .as_deref()
            .expect("checked: if_value has a key");
        let current = r.log().latest(key).map_or(Value::Null, |(_, v)| v.clone());
        if &current != expected {
            return Err(ApiError::new(
                Code::PreconditionFailed,
                format!("key `{key}` holds {current}, not {expected}"),
            )
            .with("current", current));
        }
    }
    let result = r.append_as_leader(body.entries, acks_all, node.now_ms());
    if let Err(e) = part.checkpoint_epochs(&mut r) {
        eprintln!("node {}: epoch checkpoint: {e}", node.id);
    }
    drop(r);
    let appended = result.map_err(|e| replica_error(part, e))?;
    part.purgatory.wake();
    Ok(appended)
}

// ---- consuming and the register view ----

async fn consume(
    State(node): State<Arc<Node>>,
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
    let part = node.manager.require(&topic, partition)?;
    let r = part.lock();
    if r.role() != Role::Leader {
        return Err(replica_error(
            &part,
            ReplicaError::NotLeader { leader: r.leader() },
        ));
    }
    let hw = r.high_watermark();
    if offset > hw {
        return Err(ApiError::new(
            Code::OffsetOutOfRange,
            format!("{topic}-{partition}: offset {offset} is past the high watermark {hw}"),
        )
        .with("high_watermark", hw));
    }
    let records = r
        .log()
        .read(offset, max as usize, hw)
        .map_err(|e| replica_error(&part, e.into()))?;
    Ok(Json(json!({
        "high_watermark": hw,
        "log_start_offset": r.log().log_start_offset(),
        "records": records,
    }))
    .into_response())
}

async fn read_key(
    State(node): State<Arc<Node>>,
    p: Result<Path<(String, String)>, PathRejection>,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> ApiResult {
    let (topic, key) = path(p)?;
    let q = query(q)?;
    let linearizable = parse_bool(&q, "linearizable")?;
    let partitions = node.topic_size(&topic).await.ok_or_else(|| {
        ApiError::new(
            Code::UnknownTopicOrPartition,
            format!("topic `{topic}` is unknown (to this broker and the controller)"),
        )
    })?;
    let partition = partition_for_key(&key, partitions);
    let part = node.manager.require(&topic, partition).map_err(|_| {
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
        .wait_until(deadline, || {
            let r = part.lock();
            if r.role() != Role::Leader {
                return Some(Err(replica_error(
                    &part,
                    ReplicaError::NotLeader { leader: r.leader() },
                )));
            }
            if linearizable && r.high_watermark() < r.leader_epoch_start_offset() {
                return None;
            }
            let hw = r.high_watermark();
            let found = r.log().value_below(&key, hw).cloned();
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
    if linearizable {
        match node.confirm_leadership(&topic, partition, epoch).await {
            Ok(state) if state.leader == node.id && state.leader_epoch == epoch => {}
            Ok(state) => {
                return Err(ApiError::new(
                    Code::NotLeader,
                    format!(
                        "{topic}-{partition}: the controller names broker {} leader",
                        state.leader
                    ),
                )
                .with("leader", state.leader));
            }
            Err(CallError::Api(e)) if e.code == Code::NotLeader => {
                let leader = e.extra.get("leader").cloned().unwrap_or(json!(-1));
                return Err(ApiError::new(
                    Code::NotLeader,
                    format!(
                        "{topic}-{partition}: leadership not confirmed: {}",
                        e.message
                    ),
                )
                .with("leader", leader));
            }
            Err(e) => {
                return Err(ApiError::new(
                    Code::RequestTimedOut,
                    format!("{topic}-{partition}: could not confirm leadership: {e}"),
                ));
            }
        }
    }
    let (offset, value) = match found {
        Some((o, v)) => (json!(o), v),
        None => (Value::Null, Value::Null),
    };
    Ok(
        Json(json!({"key": key, "value": value, "partition": partition, "offset": offset}))
            .into_response(),
    )
}

// ---- metadata and debugging ----

async fn metadata(State(node): State<Arc<Node>>) -> Json<Value> {
    Json(serde_json::to_value(node.manager.metadata()).unwrap_or(Value::Null))
}

async fn debug_partitions(State(node): State<Arc<Node>>) -> Json<Value> {
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
                    json!({"log_end_offset": f.log_end_offset, "last_caught_up_ms": f.last_caught_up_ms}),
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

async fn debug_log(
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

// ---- internal: controller → node, node → node ----

async fn leader_and_isr(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let msg: LeaderAndIsr = json_body(body)?;
    replica_manager::apply(&node, msg.controller_epoch, msg.brokers, msg.partitions)?;
    Ok(Json(json!({})).into_response())
}

async fn fetch(State(node): State<Arc<Node>>, body: Result<Bytes, BytesRejection>) -> ApiResult {
    let req: Fetch = json_body(body)?;
    let part = node.manager.require(&req.topic, req.partition)?;
    let rreq = FetchRequest {
        replica_id: req.replica_id,
        fetch_offset: req.fetch_offset,
        leader_epoch: req.leader_epoch,
        max_records: req.max_records.clamp(1, MAX_RECORDS),
    };
    let (resp, hw_moved) = {
        let mut r = part.lock();
        let before = r.high_watermark();
        let resp = r.fetch_as_leader(&rreq, node.now_ms());
        (resp, r.high_watermark() != before)
    };
    if hw_moved {
        part.purgatory.wake();
    }
    let resp = resp.map_err(|e| replica_error(&part, e))?;
    if !resp.records.is_empty() {
        return Ok(Json(resp).into_response());
    }
    // Nothing to send: wait in purgatory for an append (or a role change).
    let deadline = Instant::now() + Duration::from_millis(node.args.replica_fetch_wait_max_ms);
    let ready = |final_check: bool| {
        let r = part.lock();
        let changed = r.role() != Role::Leader || r.leader_epoch() != rreq.leader_epoch;
        if final_check || changed || r.log_end_offset() > rreq.fetch_offset {
            Some(r.read_for_follower(&rreq))
        } else {
            None
        }
    };
    let resp = match part.purgatory.wait_until(deadline, || ready(false)).await {
        Some(resp) => resp,
        None => ready(true).expect("a final check always answers"),
    };
    let resp = resp.map_err(|e| replica_error(&part, e))?;
    Ok(Json(resp).into_response())
}

async fn offsets_for_leader_epoch(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let req: OffsetsForLeaderEpoch = json_body(body)?;
    let part = node.manager.require(&req.topic, req.partition)?;
    let r = part.lock();
    if r.role() != Role::Leader {
        return Err(replica_error(
            &part,
            ReplicaError::NotLeader { leader: r.leader() },
        ));
    }
    if req.current_leader_epoch != r.leader_epoch() {
        return Err(replica_error(
            &part,
            ReplicaError::FencedLeaderEpoch {
                current: r.leader_epoch(),
            },
        ));
    }
    let answer = EpochEndOffset::from_answer(r.end_offset_for(req.leader_epoch));
    Ok(Json(answer).into_response())
}
