//! lin-kv: clients read, write and compare-and-set integer keys of a
//! linearizable key-value store, recorded exactly as our register workload records
//! its keys (docs/history.md, "The register workload"), so the linearizability
//! checker judges each key against the cas-register model.
//!
//! Keys retire, as the register's do, so the checker's work per key stays bounded:
//! a client draws keys from a window of [`ACTIVE_KEYS`] keys and moves to the next
//! window after [`WRITES_PER_WINDOW`] writes and compare-and-sets of its own.
//! Written values are unique in the run (client c of C writes c, c + C, c + 2C, ...).
//! A client compare-and-sets from the value it last saw the key hold; a key it
//! knows nothing of is read instead (a cas of a key without a value can only fail).
//!
//! History: `read` invocation `{"key":k,"value":null}`, `ok` `{"key":k,"value":v}`;
//! `write` `{"key":k,"value":v}`; `cas` `{"key":k,"value":[from,to]}` (both the
//! same on `ok`). Maelstrom answers a read of a key without a value with error 20
//! (key-does-not-exist): that read is recorded `ok` with `"value":null`, an empty
//! register, as the model starts. A cas answered 20 or 22 (precondition-failed) is
//! `fail`; a read without an answer is `fail` (it changes nothing).

use std::collections::HashMap;

use rand::Rng;
use serde_json::{Value, json};

use super::{Client, Completion, Reply, Request, Who, judge};
use crate::error::{ErrorReply, KEY_DOES_NOT_EXIST};
use crate::message::Body;
use checker::history::EventType;

pub const OPERATIONS: [&str; 3] = ["read", "write", "cas"];

/// Keys a client draws from at a time.
pub const ACTIVE_KEYS: u64 = 5;
/// Writes (and cas) a client makes before moving to the next window of keys.
pub const WRITES_PER_WINDOW: u64 = 8;

/// A lin-kv client: reads half the time, writes and compare-and-sets a quarter each.
pub struct LinKvClient {
    who: Who,
    writes: u64,
    /// The value this client last saw each key hold.
    known: HashMap<u64, Value>,
}

impl LinKvClient {
    pub(crate) fn new(who: Who) -> LinKvClient {
        LinKvClient {
            who,
            writes: 0,
            known: HashMap::new(),
        }
    }

    fn read(&self, key: u64) -> Request {
        let value = json!({"key": key, "value": null});
        self.who
            .request("read", value, Body::new("read").with("key", key), true)
    }
}

/// The key a request is about.
fn key_of(request: &Request) -> Option<u64> {
    request.value.get("key").and_then(Value::as_u64)
}

impl Client for LinKvClient {
    fn next_request(&mut self) -> Request {
        let window = self.writes / WRITES_PER_WINDOW;
        let key = window * ACTIVE_KEYS + self.who.rng.random_range(0..ACTIVE_KEYS);
        let draw = self.who.rng.random_range(0..4);
        let expected = self.known.get(&key).cloned();
        if draw < 2 || (draw == 3 && expected.is_none()) {
            return self.read(key);
        }
        let new = self.who.unique(self.writes);
        self.writes += 1;
        match expected {
            Some(from) if draw == 3 => {
                let value = json!({"key": key, "value": [from, new]});
                let body = Body::new("cas")
                    .with("key", key)
                    .with("from", from)
                    .with("to", new);
                self.who.request("cas", value, body, false)
            }
            _ => {
                let value = json!({"key": key, "value": new});
                let body = Body::new("write").with("key", key).with("value", new);
                self.who.request("write", value, body, false)
            }
        }
    }

    fn complete(&mut self, request: &Request, reply: Reply<'_>) -> Completion {
        let key = key_of(request);
        let done = match (request.f, reply) {
            ("read", Reply::Body(b))
                if ErrorReply::from_body(b).is_some_and(|e| e.code == Some(KEY_DOES_NOT_EXIST)) =>
            {
                Completion {
                    kind: EventType::Ok,
                    value: json!({"key": key, "value": null}),
                    error: None,
                }
            }
            ("read", _) => judge(request, reply, "read_ok", |b| match b.get("value") {
                Some(v) => Ok(json!({"key": key, "value": v})),
                None => Err("without a value".into()),
            }),
            ("write", _) => judge(request, reply, "write_ok", |_| Ok(request.value.clone())),
            _ => judge(request, reply, "cas_ok", |_| Ok(request.value.clone())),
        };
        if let Some(key) = key {
            self.learn(request, &done, key);
        }
        done
    }
}

impl LinKvClient {
    /// What the completion says about the key's value.
    fn learn(&mut self, request: &Request, done: &Completion, key: u64) {
        let now = match (done.kind, request.f) {
            (EventType::Ok, "read") => done.value.get("value").cloned(),
            (EventType::Ok, "write") => request.value.get("value").cloned(),
            (EventType::Ok, _) => request.value.pointer("/value/1").cloned(),
            // A failed read says nothing; a failed or unknown update leaves the
            // value in doubt.
            (EventType::Fail, "read") => return,
            _ => None,
        };
        match now.filter(|v| !v.is_null()) {
            Some(v) => self.known.insert(key, v),
            None => self.known.remove(&key),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    fn client() -> LinKvClient {
        LinKvClient::new(Who::new(9, &nodes(3), 1, 4))
    }

    #[test]
    fn requests_and_history_values_have_the_registers_shapes() {
        let mut c = client();
        c.known.insert(0, json!(7));
        c.known.insert(1, json!(7));
        c.known.insert(2, json!(7));
        c.known.insert(3, json!(7));
        c.known.insert(4, json!(7));
        let reqs: Vec<Request> = (0..40).map(|_| c.next_request()).collect();
        for f in OPERATIONS {
            assert!(reqs.iter().any(|r| r.f == f), "no {f}");
        }
        for r in &reqs {
            let key = r.body.get("key").unwrap();
            assert_eq!(r.value["key"], *key);
            match r.f {
                "read" => assert_eq!(r.value["value"], Value::Null),
                "write" => assert_eq!(r.value["value"], *r.body.get("value").unwrap()),
                _ => assert_eq!(
                    r.value["value"],
                    json!([r.body.get("from").unwrap(), r.body.get("to").unwrap()])
                ),
            }
        }
    }

    #[test]
    fn written_values_are_unique_and_keys_retire() {
        let mut seen = std::collections::HashSet::new();
        let mut per_key: HashMap<u64, u64> = HashMap::new();
        for w in 0..4 {
            let mut c = LinKvClient::new(Who::new(3, &nodes(3), w, 4));
            for _ in 0..400 {
                let r = c.next_request();
                if r.f != "read" {
                    let v = r
                        .body
                        .get("value")
                        .or(r.body.get("to"))
                        .unwrap()
                        .as_u64()
                        .unwrap();
                    assert!(seen.insert(v), "{v} written twice");
                    *per_key.entry(key_of(&r).unwrap()).or_default() += 1;
                }
                // Learn the value so cas happens.
                let ok = reply("read_ok", json!({"value": 1}));
                c.complete(&r, Reply::Body(&ok));
            }
        }
        assert!(*per_key.values().max().unwrap() <= 4 * WRITES_PER_WINDOW);
        assert!(per_key.len() > 10);
    }

    #[test]
    fn cas_expects_what_the_client_last_saw_and_unknown_keys_are_read() {
        let mut c = client();
        for _ in 0..50 {
            let r = c.next_request();
            assert_ne!(r.f, "cas", "no key is known yet");
            if r.f == "write" {
                // Writes are unknown until acknowledged.
                c.complete(&r, Reply::Timeout);
            }
        }
        c.known.insert(0, json!(41));
        c.known.insert(1, json!(41));
        c.known.insert(2, json!(41));
        c.known.insert(3, json!(41));
        c.known.insert(4, json!(41));
        c.writes = 0;
        let cas = (0..50)
            .map(|_| c.next_request())
            .find(|r| r.f == "cas")
            .unwrap();
        assert_eq!(cas.body.get("from"), Some(&json!(41)));
    }

    #[test]
    fn replies_become_completions_and_teach_the_client() {
        let mut c = client();
        let read = c.read(3);
        let missing = c.complete(&read, Reply::Body(&error(20)));
        assert_eq!(
            (missing.kind, &missing.value),
            (EventType::Ok, &json!({"key": 3, "value": null}))
        );
        let done = c.complete(&read, Reply::Body(&reply("read_ok", json!({"value": 12}))));
        assert_eq!(done.value, json!({"key": 3, "value": 12}));
        assert_eq!(c.known[&3], json!(12));
        assert_eq!(c.complete(&read, Reply::Timeout).kind, EventType::Fail);
        assert_eq!(c.known[&3], json!(12), "a failed read teaches nothing");
        let no_value = c.complete(&read, Reply::Body(&reply("read_ok", json!({}))));
        assert_eq!(no_value.kind, EventType::Fail);

        let cas = c.who.request(
            "cas",
            json!({"key": 3, "value": [12, 13]}),
            Body::new("cas")
                .with("key", 3)
                .with("from", 12)
                .with("to", 13),
            false,
        );
        let ok = c.complete(&cas, Reply::Body(&reply("cas_ok", json!({}))));
        assert_eq!((ok.kind, &ok.value), (EventType::Ok, &cas.value));
        assert_eq!(c.known[&3], json!(13));
        let refused = c.complete(&cas, Reply::Body(&error(22)));
        assert_eq!(
            (refused.kind, &refused.value),
            (EventType::Fail, &cas.value)
        );
        assert!(!c.known.contains_key(&3));
        c.known.insert(3, json!(13));
        assert_eq!(
            c.complete(&cas, Reply::Body(&error(13))).kind,
            EventType::Info
        );
        assert!(!c.known.contains_key(&3));
        assert_eq!(
            c.complete(&cas, Reply::Body(&error(11))).kind,
            EventType::Fail
        );
    }
}
