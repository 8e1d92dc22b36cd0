//! The controller's HTTP routes, served by every voter next to the node's routes:
//! the public topic and metadata calls of docs/api.md and the `/internal/` calls of
//! the nodes (protocol.rs). A voter that is not the active controller answers the
//! controller calls with `NOT_CONTROLLER` and the active one's id; metadata it
//! answers from its own copy of the state. Every error, including a body that is
//! not JSON, has the wrong types or is too large, is a JSON [`ApiError`]; unknown
//! routes are the node's fallback. The `/internal/` calls, like the Raft RPCs, need
//! the cluster's credentials (`crate::auth`; the guard is laid over both in
//! [`super::start`]).

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, State};
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};

use super::service::Controller;
use super::state::{Applied, Command};
use crate::error::ApiError;
use crate::json_body::{JsonBody, MAX_BODY};
use crate::protocol::{
    AlterPartition, ConfirmLeadership, CreateTopic, Heartbeat, HeartbeatResponse, Metadata,
    PartitionState,
};

/// The controller's routes, sharing one controller (no fallback: merged into the
/// node's router).
pub fn router(controller: Arc<Controller>) -> Router {
    Router::new()
        .route("/v1/topics", post(create_topic))
        .route("/v1/metadata", get(metadata))
        .route("/v1/producers", post(init_producer_id))
        .route("/internal/heartbeat", post(heartbeat))
        .route("/internal/alter-partition", post(alter_partition))
        .route("/internal/confirm-leadership", post(confirm_leadership))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(controller)
}

/// A dedicated controller's whole router: unknown routes and methods get JSON errors
/// (on a broker, the node's router does that).
pub fn with_fallback(router: Router) -> Router {
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
}

async fn not_found(method: Method, uri: Uri) -> Response {
    let err = ApiError::invalid(format!("the controller has no route {method} {uri}"));
    (StatusCode::NOT_FOUND, Json(err.body())).into_response()
}

async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    let err = ApiError::invalid(format!("{uri} does not take {method} on the controller"));
    (StatusCode::METHOD_NOT_ALLOWED, Json(err.body())).into_response()
}

type Shared = State<Arc<Controller>>;

fn unexpected(what: Applied) -> ApiError {
    ApiError::invalid(format!("the controller answered {what:?}"))
}

async fn create_topic(
    State(c): Shared,
    JsonBody(req): JsonBody<CreateTopic>,
) -> Result<Response, ApiError> {
    match c.propose(Command::CreateTopic(req)).await? {
        Applied::Topic(meta) => Ok((StatusCode::CREATED, Json(meta)).into_response()),
        other => Err(unexpected(other)),
    }
}

/// InitProducerId: an id for an idempotent producer (no body), allocated by a
/// command of the controller's log.
async fn init_producer_id(State(c): Shared) -> Result<Response, ApiError> {
    match c.propose(Command::InitProducerId).await? {
        Applied::Producer(id) => Ok(Json(id).into_response()),
        other => Err(unexpected(other)),
    }
}

async fn metadata(State(c): Shared) -> Json<Metadata> {
    Json(c.metadata())
}

async fn heartbeat(
    State(c): Shared,
    JsonBody(req): JsonBody<Heartbeat>,
) -> Result<Json<HeartbeatResponse>, ApiError> {
    c.heartbeat(&req).await.map(Json)
}

async fn alter_partition(
    State(c): Shared,
    JsonBody(req): JsonBody<AlterPartition>,
) -> Result<Json<PartitionState>, ApiError> {
    match c.propose(Command::AlterPartition(req)).await? {
        Applied::Partition(state) => Ok(Json(state)),
        other => Err(unexpected(other)),
    }
}

async fn confirm_leadership(
    State(c): Shared,
    JsonBody(req): JsonBody<ConfirmLeadership>,
) -> Result<Json<PartitionState>, ApiError> {
    c.confirm_leadership(&req).await.map(Json)
}
