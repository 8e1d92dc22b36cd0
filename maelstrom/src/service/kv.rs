//! The key-value requests every service answers — `read`, `write`, `cas` — and the
//! one rule that decides each against a key's current value, shared by the three
//! consistency models (doc/services.md, the lin-kv workload's RPCs):
//!
//! - `read` of a key with a value answers `read_ok` with it; without one, error 20
//!   (key-does-not-exist);
//! - `write` sets the value, creating the key, and answers `write_ok`;
//! - `cas` sets `to` if the value is `from` (`cas_ok`); a key without a value is
//!   error 20 unless `create_if_not_exists` is `true`, which creates it with `to`;
//!   another value is error 22 (precondition-failed).
//!
//! A request without the fields it needs is error 12 (malformed-request); a type
//! the services do not know is error 10 (not-supported). Keys and values may be
//! any JSON; keys are told apart by their exact text.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::{self, error_body};
use crate::message::Body;

/// A request to a key-value service.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum KvRequest {
    Read {
        key: Value,
    },
    Write {
        key: Value,
        value: Value,
    },
    Cas {
        key: Value,
        from: Value,
        to: Value,
        create: bool,
    },
}

impl KvRequest {
    /// The request a body makes, or the error reply it deserves.
    pub(crate) fn parse(body: &Body) -> Result<KvRequest, Body> {
        let field = |name: &str| {
            body.get(name).cloned().ok_or_else(|| {
                error_body(
                    error::MALFORMED_REQUEST,
                    format!("{} request without `{name}`", body.kind),
                )
            })
        };
        match body.kind.as_str() {
            "read" => Ok(KvRequest::Read { key: field("key")? }),
            "write" => Ok(KvRequest::Write {
                key: field("key")?,
                value: field("value")?,
            }),
            "cas" => Ok(KvRequest::Cas {
                key: field("key")?,
                from: field("from")?,
                to: field("to")?,
                create: body.get("create_if_not_exists") == Some(&Value::Bool(true)),
            }),
            other => Err(error_body(
                error::NOT_SUPPORTED,
                format!("this service answers read, write and cas, not {other}"),
            )),
        }
    }

    pub(crate) fn key(&self) -> &Value {
        match self {
            KvRequest::Read { key } | KvRequest::Write { key, .. } | KvRequest::Cas { key, .. } => {
                key
            }
        }
    }

    /// The reply to this request against the key's `current` value, and the value
    /// the key holds afterwards if the request sets one.
    pub(crate) fn decide(&self, current: Option<&Value>) -> (Body, Option<Value>) {
        match (self, current) {
            (KvRequest::Read { .. }, Some(v)) => {
                (Body::new("read_ok").with("value", v.clone()), None)
            }
            (KvRequest::Read { .. }, None) | (KvRequest::Cas { create: false, .. }, None) => (
                error_body(error::KEY_DOES_NOT_EXIST, "key does not exist"),
                None,
            ),
            (KvRequest::Write { value, .. }, _) => (Body::new("write_ok"), Some(value.clone())),
            (KvRequest::Cas { to, .. }, None) => (Body::new("cas_ok"), Some(to.clone())),
            (KvRequest::Cas { from, to, .. }, Some(v)) if v == from => {
                (Body::new("cas_ok"), Some(to.clone()))
            }
            (KvRequest::Cas { from, .. }, Some(v)) => (
                error_body(
                    error::PRECONDITION_FAILED,
                    format!("current value {v} is not {from}"),
                ),
                None,
            ),
        }
    }
}

/// A key's identity: its exact text.
pub(crate) fn key_text(key: &Value) -> String {
    checker::values::canonical(key)
}

/// One copy of the store: each key's value.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Kv {
    values: BTreeMap<String, Value>,
}

impl Kv {
    pub(crate) fn get(&self, key: &Value) -> Option<&Value> {
        self.values.get(&key_text(key))
    }

    /// Whether `req` would change this copy.
    pub(crate) fn would_change(&self, req: &KvRequest) -> bool {
        let current = self.get(req.key());
        matches!(req.decide(current).1, Some(new) if Some(&new) != current)
    }

    /// Apply `req`, returning its reply.
    pub(crate) fn apply(&mut self, req: &KvRequest) -> Body {
        let (reply, new) = req.decide(self.get(req.key()));
        if let Some(v) = new {
            self.values.insert(key_text(req.key()), v);
        }
        reply
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(kind: &str, fields: &[(&str, Value)]) -> Result<KvRequest, Body> {
        let mut b = Body::new(kind);
        for (k, v) in fields {
            b = b.with(k, v.clone());
        }
        KvRequest::parse(&b)
    }

    fn code(b: &Body) -> Option<i64> {
        b.get("code").and_then(Value::as_i64)
    }

    #[test]
    fn read_write_cas_follow_the_services_rules() {
        let mut kv = Kv::default();
        let read = req("read", &[("key", json!(1))]).unwrap();
        assert_eq!(code(&kv.apply(&read)), Some(20));
        let cas = req(
            "cas",
            &[("key", json!(1)), ("from", json!(0)), ("to", json!(5))],
        )
        .unwrap();
        assert_eq!(code(&kv.apply(&cas)), Some(20));
        let write = req("write", &[("key", json!(1)), ("value", json!(0))]).unwrap();
        assert_eq!(kv.apply(&write).kind, "write_ok");
        assert_eq!(kv.apply(&read).get("value"), Some(&json!(0)));
        assert_eq!(kv.apply(&cas).kind, "cas_ok");
        assert_eq!(kv.get(&json!(1)), Some(&json!(5)));
        let stale = kv.apply(&cas);
        assert_eq!(code(&stale), Some(22));
        assert!(
            stale
                .get("text")
                .unwrap()
                .as_str()
                .unwrap()
                .contains("5 is not 0")
        );
    }

    #[test]
    fn cas_may_create_a_missing_key() {
        let mut kv = Kv::default();
        let fields = [
            ("key", json!("k")),
            ("from", json!(1)),
            ("to", json!([2])),
            ("create_if_not_exists", json!(true)),
        ];
        assert_eq!(kv.apply(&req("cas", &fields).unwrap()).kind, "cas_ok");
        assert_eq!(kv.get(&json!("k")), Some(&json!([2])));
        // Once it exists, the precondition holds again.
        assert_eq!(code(&kv.apply(&req("cas", &fields).unwrap())), Some(22));
    }

    #[test]
    fn keys_are_told_apart_by_their_exact_text() {
        let mut kv = Kv::default();
        kv.apply(&req("write", &[("key", json!(1)), ("value", json!("int"))]).unwrap());
        kv.apply(&req("write", &[("key", json!("1")), ("value", json!("str"))]).unwrap());
        kv.apply(
            &req(
                "write",
                &[("key", json!({"b": 1, "a": 2})), ("value", json!("obj"))],
            )
            .unwrap(),
        );
        assert_eq!(kv.get(&json!(1)), Some(&json!("int")));
        assert_eq!(kv.get(&json!("1")), Some(&json!("str")));
        assert_eq!(kv.get(&json!({"a": 2, "b": 1})), Some(&json!("obj")));
    }

    #[test]
    fn bad_requests_are_malformed_or_not_supported() {
        assert_eq!(code(&req("read", &[]).unwrap_err()), Some(12));
        assert_eq!(
            code(&req("write", &[("key", json!(1))]).unwrap_err()),
            Some(12)
        );
        assert_eq!(
            code(&req("cas", &[("key", json!(1)), ("to", json!(1))]).unwrap_err()),
            Some(12)
        );
        assert_eq!(
            code(&req("append", &[("key", json!(1))]).unwrap_err()),
            Some(10)
        );
    }

    #[test]
    fn only_requests_that_set_a_new_value_change_the_store() {
        let mut kv = Kv::default();
        let w = req("write", &[("key", json!(1)), ("value", json!(3))]).unwrap();
        assert!(kv.would_change(&w));
        kv.apply(&w);
        assert!(
            !kv.would_change(&w),
            "rewriting the same value changes nothing"
        );
        let failing = req(
            "cas",
            &[("key", json!(1)), ("from", json!(9)), ("to", json!(4))],
        )
        .unwrap();
        assert!(!kv.would_change(&failing));
        assert!(!kv.would_change(&req("read", &[("key", json!(1))]).unwrap()));
    }
}
