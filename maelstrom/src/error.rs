//! Maelstrom's error codes, and what an error reply means for the history.
//!
//! A node answers a request it cannot serve with a body of type `error` carrying an
//! integer `code` and, optionally, a `text`. Each code Maelstrom defines is either
//! *definite* — the operation certainly did not happen and never will — or not, in
//! which case it may have happened, may happen later, or never. Codes Maelstrom
//! does not define (1000 and up are the node's own) are never definite. This is
//! what decides between a history's `fail` (certainly did not happen) and `info`
//! (unknown): [`history_type`].

use checker::history::EventType;
use serde_json::Value;

use crate::message::Body;

/// One of Maelstrom's error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCode {
    pub code: i64,
    /// Maelstrom's name for it (`temporarily-unavailable`).
    pub name: &'static str,
    /// The operation certainly did not happen.
    pub definite: bool,
    /// What it means, in a few words.
    pub meaning: &'static str,
}

pub const TIMEOUT: i64 = 0;
pub const NODE_NOT_FOUND: i64 = 1;
pub const NOT_SUPPORTED: i64 = 10;
pub const TEMPORARILY_UNAVAILABLE: i64 = 11;
pub const MALFORMED_REQUEST: i64 = 12;
pub const CRASH: i64 = 13;
pub const ABORT: i64 = 14;
pub const KEY_DOES_NOT_EXIST: i64 = 20;
pub const KEY_ALREADY_EXISTS: i64 = 21;
pub const PRECONDITION_FAILED: i64 = 22;
pub const TXN_CONFLICT: i64 = 30;

/// The first code free for a node's own errors (always indefinite).
pub const FIRST_CUSTOM_CODE: i64 = 1000;

const fn code(code: i64, name: &'static str, definite: bool, meaning: &'static str) -> ErrorCode {
    ErrorCode {
        code,
        name,
        definite,
        meaning,
    }
}

/// Every code Maelstrom defines (resources/errors.edn), ascending.
pub const ERRORS: [ErrorCode; 11] = [
    code(
        TIMEOUT,
        "timeout",
        false,
        "no answer in time; it may still happen",
    ),
    code(
        NODE_NOT_FOUND,
        "node-not-found",
        true,
        "the request was addressed to no such node",
    ),
    code(
        NOT_SUPPORTED,
        "not-supported",
        true,
        "the node does not implement this request",
    ),
    code(
        TEMPORARILY_UNAVAILABLE,
        "temporarily-unavailable",
        true,
        "the node cannot serve it now (no leader, no quorum, not ready) and did not",
    ),
    code(
        MALFORMED_REQUEST,
        "malformed-request",
        true,
        "the request made no sense to the node",
    ),
    code(
        CRASH,
        "crash",
        false,
        "something went wrong; the operation may have happened",
    ),
    code(
        ABORT,
        "abort",
        true,
        "something went wrong before the operation took effect",
    ),
    code(
        KEY_DOES_NOT_EXIST,
        "key-does-not-exist",
        true,
        "the key has no value",
    ),
    code(
        KEY_ALREADY_EXISTS,
        "key-already-exists",
        true,
        "the key exists and is not overwritten",
    ),
    code(
        PRECONDITION_FAILED,
        "precondition-failed",
        true,
        "the compare-and-set's value did not match",
    ),
    code(
        TXN_CONFLICT,
        "txn-conflict",
        true,
        "the transaction conflicted with another and aborted",
    ),
];

/// The code's definition, if Maelstrom defines it.
pub fn lookup(code: i64) -> Option<&'static ErrorCode> {
    ERRORS.iter().find(|e| e.code == code)
}

/// Whether an error with this code proves the operation did not happen. Codes
/// Maelstrom does not define are indefinite.
pub fn is_definite(code: i64) -> bool {
    lookup(code).is_some_and(|e| e.definite)
}

/// The history type of an operation answered with error `code`: `fail` when the
/// code is definite — or when the operation is idempotent (a read: having no
/// effect, it did not happen as far as the state is concerned, as Maelstrom's
/// clients record it) — else `info`.
pub fn history_type(code: i64, idempotent: bool) -> EventType {
    if idempotent || is_definite(code) {
        EventType::Fail
    } else {
        EventType::Info
    }
}

/// An `error` reply, read leniently: a missing or non-integer `code` is kept as
/// `None`, which is indefinite (as Maelstrom's `crash`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorReply {
    pub code: Option<i64>,
    pub text: Option<String>,
}

impl ErrorReply {
    /// The error a body carries, if it is of type `error`.
    pub fn from_body(body: &Body) -> Option<ErrorReply> {
        if !body.is_error() {
            return None;
        }
        Some(ErrorReply {
            code: body.get("code").and_then(Value::as_i64),
            text: body.get("text").map(|t| match t {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }),
        })
    }

    pub fn definite(&self) -> bool {
        self.code.is_some_and(is_definite)
    }

    /// See [`history_type`]; an error without a code is indefinite.
    pub fn history_type(&self, idempotent: bool) -> EventType {
        history_type(self.code.unwrap_or(CRASH), idempotent)
    }

    /// For a history's `error` field: `temporarily-unavailable (11): no leader`.
    pub fn describe(&self) -> String {
        let head = match self.code {
            Some(c) => match lookup(c) {
                Some(e) => format!("{} ({c})", e.name),
                None => format!("error {c}"),
            },
            None => "error without a code".to_string(),
        };
        match &self.text {
            Some(t) if !t.is_empty() => format!("{head}: {t}"),
            _ => head,
        }
    }
}

/// An error reply's body (as a service or a test node answers).
pub fn error_body(code: i64, text: impl Into<String>) -> Body {
    Body::new("error")
        .with("code", code)
        .with("text", Value::String(text.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_matches_maelstroms_codes_and_definiteness() {
        let definite: Vec<i64> = ERRORS
            .iter()
            .filter(|e| e.definite)
            .map(|e| e.code)
            .collect();
        assert_eq!(definite, [1, 10, 11, 12, 14, 20, 21, 22, 30]);
        let indefinite: Vec<i64> = ERRORS
            .iter()
            .filter(|e| !e.definite)
            .map(|e| e.code)
            .collect();
        assert_eq!(indefinite, [0, 13]);
        assert_eq!(lookup(22).unwrap().name, "precondition-failed");
        assert_eq!(lookup(11).unwrap().name, "temporarily-unavailable");
        let mut codes: Vec<i64> = ERRORS.iter().map(|e| e.code).collect();
        codes.dedup();
        assert_eq!(codes.len(), ERRORS.len());
        assert!(codes.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn definite_errors_fail_indefinite_ones_are_info_unless_idempotent() {
        assert_eq!(
            history_type(TEMPORARILY_UNAVAILABLE, false),
            EventType::Fail
        );
        assert_eq!(history_type(PRECONDITION_FAILED, false), EventType::Fail);
        assert_eq!(history_type(CRASH, false), EventType::Info);
        assert_eq!(history_type(TIMEOUT, false), EventType::Info);
        assert_eq!(history_type(FIRST_CUSTOM_CODE + 5, false), EventType::Info);
        assert_eq!(history_type(-3, false), EventType::Info);
        assert_eq!(history_type(CRASH, true), EventType::Fail);
        assert!(!is_definite(FIRST_CUSTOM_CODE));
    }

    #[test]
    fn error_replies_are_read_leniently_and_described() {
        let b = error_body(11, "no leader");
        let e = ErrorReply::from_body(&b).unwrap();
        assert_eq!(e.code, Some(11));
        assert!(e.definite());
        assert_eq!(e.describe(), "temporarily-unavailable (11): no leader");
        assert_eq!(e.history_type(false), EventType::Fail);

        let odd = Body::new("error").with("code", "eleven").with("text", 5);
        let e = ErrorReply::from_body(&odd).unwrap();
        assert_eq!((e.code, e.text.as_deref()), (None, Some("5")));
        assert!(!e.definite());
        assert_eq!(e.history_type(false), EventType::Info);
        assert_eq!(e.history_type(true), EventType::Fail);
        assert_eq!(e.describe(), "error without a code: 5");

        let custom = ErrorReply::from_body(&Body::new("error").with("code", 1234)).unwrap();
        assert_eq!(custom.describe(), "error 1234");
        assert!(ErrorReply::from_body(&Body::new("read_ok")).is_none());
    }
}
