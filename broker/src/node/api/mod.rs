//! The node's HTTP routes: the public API of docs/api.md (produce, consume, the
//! register view, metadata, debug) and the internal replication/control routes
//! (fetch, offsets-for-leader-epoch, leader-and-isr). Every error is JSON with a code,
//! including axum's own rejections (bad JSON, bad path, body too large, no route).
//!
//! `produce` and `read` are the client calls, `debug` the metadata and debug views,
//! `internal` the replication and control calls; this module holds the router and
//! the request decoding they share.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{Method, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use serde::de::DeserializeOwned;

use super::partitions::{Partition, ReplicaManager};
use crate::auth;
use crate::error::{ApiError, Code};
use crate::events::{Api, Event, FenceReason};
use crate::replica::{ReplicaError, SequenceError};

mod debug;
mod internal;
mod produce;
mod read;

/// Largest request body (bigger: 413 PAYLOAD_TOO_LARGE).
const MAX_BODY_BYTES: usize = 1 << 20;
/// Most records one produce or consume request may carry.
const MAX_RECORDS: usize = 10_000;
/// How long an acks=all produce (or a linearizable read) waits for the HW.
const ACK_TIMEOUT: Duration = Duration::from_secs(5);

/// What every handler answers.
type ApiResult = Result<Response, ApiError>;

/// The state every handler gets: the node's partitions (and through them its context).
type Shared = State<Arc<ReplicaManager>>;

/// All routes of a node; internal ones need the cluster's credentials (`auth`).
/// `/v1/metadata` from the node's own view, and `NOT_CONTROLLER` for topic creation,
/// the other admin tasks and InitProducerId, only if `own_metadata` (on a controller
/// voter, the controller's routes answer those).
pub fn router(manager: Arc<ReplicaManager>, own_metadata: bool) -> Router {
    let auth = manager.ctx().auth.clone();
    let mut router = Router::new();
    if own_metadata {
        router = router
            .route("/v1/metadata", get(debug::metadata))
            .route("/v1/topics", post(not_controller))
            .route("/v1/topics/{topic}/partitions", post(not_controller))
            .route(
                "/v1/topics/{topic}/partitions/{partition}/reassign",
                post(not_controller).delete(not_controller),
            )
            .route("/v1/brokers/{id}/decommission", post(not_controller))
            .route("/v1/producers", post(not_controller));
    }
    let router = router
        .route(
            "/v1/topics/{topic}/partitions/{partition}/records",
            post(produce::produce).get(read::consume),
        )
        .route("/v1/topics/{topic}/keys/{key}", get(read::read_key))
        .route("/debug/partitions", get(debug::partitions))
        .route("/debug/log/{topic}/{partition}", get(debug::log))
        .route("/debug/disk", get(debug::disk).post(debug::set_disk))
        .route("/internal/leader-and-isr", post(internal::leader_and_isr))
        .route("/internal/fetch", post(internal::fetch))
        .route(
            "/internal/offsets-for-leader-epoch",
            post(internal::offsets_for_leader_epoch),
        )
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES));
    auth::guarded(router, auth).with_state(manager)
}

/// A broker that is no controller voter sends controller calls to the controller.
async fn not_controller(State(node): Shared) -> ApiError {
    let id = node.ctx().active_controller();
    ApiError::new(
        Code::NotController,
        format!(
            "broker {} is no controller voter; ask broker {id}",
            node.ctx().id
        ),
    )
    .with("controller_id", id)
}

async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::invalid(format!("no route for {method} {uri} (see docs/api.md)"))
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::invalid(format!("{uri} does not take {method} (see docs/api.md)"))
}

// ---- decoding requests, with JSON errors ----

/// The body's bytes, or `PAYLOAD_TOO_LARGE` / `INVALID_REQUEST`.
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

/// The body parsed as JSON `T`, or `INVALID_REQUEST` saying what is wrong.
fn json_body<T: DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> Result<T, ApiError> {
    let bytes = body_bytes(body)?;
    serde_json::from_slice(&bytes).map_err(|e| ApiError::invalid(format!("request body: {e}")))
}

/// The path parameters, or `INVALID_REQUEST`.
fn path<T>(p: Result<Path<T>, PathRejection>) -> Result<T, ApiError> {
    p.map(|Path(t)| t)
        .map_err(|e| ApiError::invalid(format!("request path: {}", e.body_text())))
}

/// The query parameters, or `INVALID_REQUEST`.
fn query(
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<HashMap<String, String>, ApiError> {
    q.map(|Query(m)| m)
        .map_err(|e| ApiError::invalid(format!("query string: {}", e.body_text())))
}

/// A partition number from the path.
fn parse_partition(s: &str) -> Result<u32, ApiError> {
    s.parse().map_err(|_| {
        ApiError::invalid(format!(
            "partition `{s}` is not a partition number (a non-negative integer)"
        ))
    })
}

/// Query parameter `name` as a non-negative integer (`default` if absent).
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

/// Query parameter `name` as `true` or `false` (false if absent).
fn parse_bool(q: &HashMap<String, String>, name: &str) -> Result<bool, ApiError> {
    match q.get(name).map(String::as_str) {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(v) => Err(ApiError::invalid(format!(
            "`{name}` must be true or false, got `{v}`"
        ))),
    }
}

/// The JSON error for the replica's refusal of an `api` request, after its event
/// line: a request fenced by leader epoch or sent to a non-leader is `fenced`, an
/// acks=all produce with too small an ISR `not_enough_replicas`.
fn refused(node: &ReplicaManager, part: &Partition, api: Api, e: ReplicaError) -> ApiError {
    let event = match &e {
        ReplicaError::NotLeader { .. } => {
            Some(Event::fenced(api, FenceReason::NotLeader, &part.tp))
        }
        ReplicaError::FencedLeaderEpoch { requested, current } => {
            let reason = FenceReason::leader_epoch(*requested, *current);
            Some(Event::fenced(api, reason, &part.tp))
        }
        ReplicaError::NotEnoughReplicas { isr, min_insync } => Some(Event::NotEnoughReplicas {
            topic: part.tp.topic.clone(),
            partition: part.tp.partition,
            isr_size: isr.len(),
            min_insync: *min_insync,
            after_append: false,
        }),
        ReplicaError::OffsetOutOfRange { .. }
        | ReplicaError::UnknownReplica { .. }
        | ReplicaError::Sequence { .. }
        | ReplicaError::Io(_) => None,
    };
    if let Some(event) = event {
        node.emit(&event);
    }
    replica_error(part, e)
}

/// The JSON error for the replica's refusal (see docs/api.md for the codes).
fn replica_error(part: &Partition, e: ReplicaError) -> ApiError {
    let name = part.name();
    match e {
        ReplicaError::NotLeader { leader } => {
            ApiError::new(Code::NotLeader, format!("this broker does not lead {name}"))
                .with("leader", leader)
        }
        ReplicaError::FencedLeaderEpoch { current, .. } => ApiError::new(
            Code::FencedLeaderEpoch,
            format!("{name}: the request's leader epoch is not the current one ({current})"),
        )
        .with("leader_epoch", current),
        ReplicaError::NotEnoughReplicas { isr, .. } => ApiError::new(
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
        ReplicaError::Sequence {
            error: SequenceError::OutOfOrder { expected, got },
            leader_epoch,
        } => ApiError::new(
            Code::OutOfOrderSequenceNumber,
            format!(
                "{name}: the producer's next sequence is {expected}, not {got}; nothing was written"
            ),
        )
        .with("expected_sequence", expected)
        .with("leader_epoch", leader_epoch),
        ReplicaError::Sequence {
            error: SequenceError::StaleEpoch { current, got },
            leader_epoch,
        } => ApiError::new(
            Code::InvalidProducerEpoch,
            format!(
                "{name}: producer epoch {got} is fenced by epoch {current}; nothing was written"
            ),
        )
        .with("producer_epoch", current)
        .with("leader_epoch", leader_epoch),
        // A storage failure: the write was taken back, but a crash before the disk
        // let it be cut may bring it back; its outcome is unknown.
        ReplicaError::Io(e) => ApiError::new(
            Code::KafkaStorageError,
            format!("{name}: storage error: {e}"),
        ),
    }
}
