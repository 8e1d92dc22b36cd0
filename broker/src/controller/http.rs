//! The controller's HTTP routes: the public topic and metadata calls of docs/api.md,
//! and the `/internal/` calls of the nodes (protocol.rs). Every error, including a
//! body that is not JSON, has the wrong types, is too large, or asks for a route that
//! does not exist, is a JSON [`ApiError`].

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router, middleware};
use serde::de::DeserializeOwned;

use super::service::Controller;
use crate::auth::{self, ClusterAuth};
use crate::error::{ApiError, Code};
use crate::events::{self, Api, Event, FenceReason};
use crate::protocol::{
    AlterPartition, ConfirmLeadership, CreateTopic, Heartbeat, HeartbeatResponse, Metadata,
    PartitionState, TopicPartition,
};

/// Largest request body accepted.
pub const MAX_BODY: usize = 1 << 20;

/// All routes, sharing one controller; internal ones need the cluster's credentials.
pub fn router(controller: Arc<Controller>, auth: Option<Arc<ClusterAuth>>) -> Router {
    Router::new()
        .route("/v1/topics", post(create_topic))
        .route("/v1/metadata", get(metadata))
        .route("/v1/producers", post(init_producer_id))
        .route("/internal/heartbeat", post(heartbeat))
        .route("/internal/alter-partition", post(alter_partition))
        .route("/internal/confirm-leadership", post(confirm_leadership))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state(auth, auth::guard))
        .with_state(controller)
}

type Shared = State<Arc<Controller>>;

async fn create_topic(
    State(c): Shared,
    JsonBody(req): JsonBody<CreateTopic>,
) -> Result<Response, ApiError> {
    let meta = c.apply(|state, _now| state.create_topic(&req))?;
    Ok((StatusCode::CREATED, Json(meta)).into_response())
}

/// InitProducerId: an id for an idempotent producer (no body).
async fn init_producer_id(State(c): Shared) -> Result<Response, ApiError> {
    let id = c.apply(|state, _now| state.init_producer_id())?;
    Ok(Json(id).into_response())
}

async fn metadata(State(c): Shared) -> Json<Metadata> {
    Json(c.read(|state| state.metadata()))
}

async fn heartbeat(
    State(c): Shared,
    JsonBody(req): JsonBody<Heartbeat>,
) -> Result<Json<HeartbeatResponse>, ApiError> {
    c.apply(|state, now| state.heartbeat(&req, now)).map(Json)
}

async fn alter_partition(
    State(c): Shared,
    JsonBody(req): JsonBody<AlterPartition>,
) -> Result<Json<PartitionState>, ApiError> {
    c.apply(|state, _now| Ok(state.alter_partition(&req)))?
        .map(Json)
}

async fn confirm_leadership(
    State(c): Shared,
    JsonBody(req): JsonBody<ConfirmLeadership>,
) -> Result<Json<PartitionState>, ApiError> {
    let answer = c.read(|state| state.confirm_leadership(&req));
    if answer.as_ref().is_err_and(|e| e.code == Code::NotLeader) {
        let tp = TopicPartition {
            topic: req.topic.clone(),
            partition: req.partition,
        };
        let event = Event::fenced(Api::ConfirmLeadership, FenceReason::NotLeader, &tp);
        events::emit(events::CONTROLLER, &event);
    }
    answer.map(Json)
}

async fn not_found(method: Method, uri: Uri) -> Response {
    let err = ApiError::invalid(format!("the controller has no route {method} {uri}"));
    (StatusCode::NOT_FOUND, Json(err.body())).into_response()
}

async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    let err = ApiError::invalid(format!("{uri} does not take {method} on the controller"));
    (StatusCode::METHOD_NOT_ALLOWED, Json(err.body())).into_response()
}

/// A JSON request body whose every failure is a JSON [`ApiError`]: too large → 413
/// `PAYLOAD_TOO_LARGE`, anything unreadable → 400 `INVALID_REQUEST` saying where.
/// Unlike axum's `Json` it does not insist on a `Content-Type` header.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    Code::PayloadTooLarge,
                    format!("the request body is larger than {MAX_BODY} bytes"),
                )
            } else {
                ApiError::invalid(format!("cannot read the request body: {}", e.body_text()))
            }
        })?;
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|e| ApiError::invalid(format!("bad request body: {e}")))
    }
}
