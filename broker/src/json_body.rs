//! A JSON request body for the broker's routes (the controller's and the Raft
//! RPCs'), whose every failure is a JSON [`ApiError`] like the routes' own errors.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, Code};

/// Largest request body accepted.
pub const MAX_BODY: usize = 1 << 20;

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
