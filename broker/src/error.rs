//! Errors that cross the wire: an HTTP status plus a JSON body with a stable code
//! (docs/api.md lists them and what a client may conclude from each).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value, json};

use crate::value::RecordValue;

/// The stable error codes of docs/api.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    InvalidRequest,
    UnknownTopicOrPartition,
    TopicAlreadyExists,
    PreconditionFailed,
    PayloadTooLarge,
    OffsetOutOfRange,
    NotLeader,
    NotController,
    FencedLeaderEpoch,
    NotEnoughReplicas,
    NotEnoughReplicasAfterAppend,
    RequestTimedOut,
    KafkaStorageError,
    Unauthenticated,
    ClusterAuthorizationFailed,
    OutOfOrderSequenceNumber,
    InvalidProducerEpoch,
    InvalidPartitions,
    ReassignmentInProgress,
    NoReassignmentInProgress,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidRequest => "INVALID_REQUEST",
            Code::UnknownTopicOrPartition => "UNKNOWN_TOPIC_OR_PARTITION",
            Code::TopicAlreadyExists => "TOPIC_ALREADY_EXISTS",
            Code::PreconditionFailed => "PRECONDITION_FAILED",
            Code::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            Code::OffsetOutOfRange => "OFFSET_OUT_OF_RANGE",
            Code::NotLeader => "NOT_LEADER",
            Code::NotController => "NOT_CONTROLLER",
            Code::FencedLeaderEpoch => "FENCED_LEADER_EPOCH",
            Code::NotEnoughReplicas => "NOT_ENOUGH_REPLICAS",
            Code::NotEnoughReplicasAfterAppend => "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
            Code::RequestTimedOut => "REQUEST_TIMED_OUT",
            Code::KafkaStorageError => "KAFKA_STORAGE_ERROR",
            Code::Unauthenticated => "UNAUTHENTICATED",
            Code::ClusterAuthorizationFailed => "CLUSTER_AUTHORIZATION_FAILED",
            Code::OutOfOrderSequenceNumber => "OUT_OF_ORDER_SEQUENCE_NUMBER",
            Code::InvalidProducerEpoch => "INVALID_PRODUCER_EPOCH",
            Code::InvalidPartitions => "INVALID_PARTITIONS",
            Code::ReassignmentInProgress => "REASSIGNMENT_IN_PROGRESS",
            Code::NoReassignmentInProgress => "NO_REASSIGNMENT_IN_PROGRESS",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            Code::InvalidRequest | Code::InvalidPartitions => StatusCode::BAD_REQUEST,
            Code::UnknownTopicOrPartition => StatusCode::NOT_FOUND,
            Code::TopicAlreadyExists | Code::FencedLeaderEpoch => StatusCode::CONFLICT,
            Code::PreconditionFailed => StatusCode::PRECONDITION_FAILED,
            Code::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Code::OffsetOutOfRange => StatusCode::RANGE_NOT_SATISFIABLE,
            Code::NotLeader | Code::NotController => StatusCode::MISDIRECTED_REQUEST,
            Code::NotEnoughReplicas
            | Code::NotEnoughReplicasAfterAppend
            | Code::KafkaStorageError => StatusCode::SERVICE_UNAVAILABLE,
            Code::RequestTimedOut => StatusCode::GATEWAY_TIMEOUT,
            Code::Unauthenticated => StatusCode::UNAUTHORIZED,
            Code::ClusterAuthorizationFailed => StatusCode::FORBIDDEN,
            Code::OutOfOrderSequenceNumber
            | Code::InvalidProducerEpoch
            | Code::ReassignmentInProgress
            | Code::NoReassignmentInProgress => StatusCode::CONFLICT,
        }
    }

    pub fn parse(s: &str) -> Option<Code> {
        ALL.iter().copied().find(|c| c.as_str() == s)
    }
}

const ALL: [Code; 20] = [
    Code::InvalidPartitions,
    Code::ReassignmentInProgress,
    Code::NoReassignmentInProgress,
    Code::OutOfOrderSequenceNumber,
    Code::InvalidProducerEpoch,
    Code::InvalidRequest,
    Code::UnknownTopicOrPartition,
    Code::TopicAlreadyExists,
    Code::PreconditionFailed,
    Code::PayloadTooLarge,
    Code::OffsetOutOfRange,
    Code::NotLeader,
    Code::NotController,
    Code::FencedLeaderEpoch,
    Code::NotEnoughReplicas,
    Code::NotEnoughReplicasAfterAppend,
    Code::RequestTimedOut,
    Code::KafkaStorageError,
    Code::Unauthenticated,
    Code::ClusterAuthorizationFailed,
];

/// An error answer: code, human message, and the code's extra fields.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: Code,
    pub message: String,
    pub extra: Map<String, Value>,
    /// Extra fields that are record values, kept exactly (e.g. `current` for
    /// `PRECONDITION_FAILED`).
    pub exact: Vec<(String, RecordValue)>,
}

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            extra: Map::new(),
            exact: Vec::new(),
        }
    }

    /// Add an extra field (e.g. `leader` for `NOT_LEADER`).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_string(), value.into());
        self
    }

    /// Add an extra field holding a record value, answered exactly.
    pub fn with_exact(mut self, key: &str, value: RecordValue) -> Self {
        self.exact.push((key.to_string(), value));
        self
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        ApiError::new(Code::InvalidRequest, message)
    }

    /// The error a [`body`](Self::body) describes (None: not an error body).
    pub fn from_body(body: &Value) -> Option<ApiError> {
        let mut map = body.as_object()?.clone();
        let code = Code::parse(map.remove("error")?.as_str()?)?;
        let message = match map.remove("message") {
            Some(Value::String(m)) => m,
            _ => String::new(),
        };
        let mut err = ApiError::new(code, message);
        err.extra = map;
        Some(err)
    }

    /// The body as a serde_json value (record values in it as serde_json holds them).
    pub fn body(&self) -> Value {
        let mut body = json!({"error": self.code.as_str(), "message": self.message});
        if let Value::Object(map) = &mut body {
            map.extend(self.extra.clone());
            for (k, v) in &self.exact {
                map.insert(k.clone(), v.to_value());
            }
        }
        body
    }
}

/// The body exactly: `{"error": CODE, "message": …, extra fields…}`.
impl Serialize for ApiError {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("error", self.code.as_str())?;
        map.serialize_entry("message", &self.message)?;
        for (k, v) in &self.extra {
            map.serialize_entry(k, v)?;
        }
        for (k, v) in &self.exact {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.code.status(), axum::Json(&self)).into_response()
    }
}
