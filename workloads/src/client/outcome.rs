//! How an operation ended, in the history's terms: `ok` (it happened), `fail` (it
//! certainly did not), `info` (unknown), with the reason when it did not end `ok`.

use crate::api::ErrorBody;

/// Why an operation did not end `ok`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The broker's error code, when the broker answered.
    pub code: Option<String>,
    /// What happened, for a person.
    pub message: String,
    /// `OFFSET_OUT_OF_RANGE` carries the partition's high watermark.
    pub high_watermark: Option<u64>,
    /// The leader epoch the refusal carries (an idempotent producer's refusal:
    /// the epoch the refusing leader leads).
    pub leader_epoch: Option<i64>,
}

impl Failure {
    pub(crate) fn local(message: impl Into<String>) -> Self {
        Failure {
            code: None,
            message: message.into(),
            high_watermark: None,
            leader_epoch: None,
        }
    }

    pub(super) fn from_body(body: ErrorBody) -> Self {
        Failure {
            message: if body.message.is_empty() {
                body.error.clone()
            } else {
                format!("{}: {}", body.error, body.message)
            },
            code: Some(body.error),
            high_watermark: body.high_watermark,
            leader_epoch: body.leader_epoch,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The outcome of one operation, in the history's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T> {
    /// It happened.
    Ok(T),
    /// It certainly did not happen.
    Fail(Failure),
    /// Unknown: it may or may not have happened.
    Info(Failure),
}

impl<T> Outcome<T> {
    /// What an `ok` carries, turned into something else.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Outcome<U> {
        match self {
            Outcome::Ok(t) => Outcome::Ok(f(t)),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }
}
