//! kafka: append-only logs by string key (doc/workloads.md, "Kafka"). Clients
//! `send` unique integers to random keys (the node answers the offset it gave the
//! message), `poll` the keys they are assigned from the offsets they have reached,
//! `commit_offsets` they have processed and, on every (re)assignment,
//! `list_committed_offsets` of the keys they take up, to start polling after them.
//! After healing, every key is drained from offset 0 (`final-poll`, [`Drain`]).
//!
//! Each key's offsets are committed by one client only, its *owner* (key `kI` by
//! client I mod clients), as a consumer group gives each partition one consumer; a
//! client's position in a key never goes back, so the commits of a key only
//! advance, and a committed offset that goes backwards is the node's doing, whether
//! it takes a commit to overwrite or to raise the committed offset.
//!
//! History (`f`: value on invocation → value on `ok`):
//! - `send`: `{"key":k,"msg":m}` → `{"key":k,"msg":m,"offset":o}`;
//! - `poll`: `{"offsets":{k:o,...}}` (the offset asked for, per key) →
//!   `{"offsets":{...},"msgs":{k:[[offset,msg],...],...}}` (as the node listed
//!   them; a key without messages may be absent);
//! - `commit_offsets`: `{"offsets":{k:o,...}}` → the same;
//! - `list_committed_offsets`: `{"keys":[k,...]}` → `{"keys":[...],"offsets":{k:o,...}}`;
//! - `final-poll`: as `poll`, one key at a time, from 0 on until a poll returns
//!   nothing for the key.
//!
//! A `send_ok` without an integer `offset` is malformed (`info`: the message may be
//! in the log); a `poll_ok` whose `msgs` are not lists of `[integer, message]`
//! pairs, or a `list_committed_offsets_ok` whose `offsets` are not integers, is
//! malformed (`fail`: they change nothing). Polls and offset listings are
//! idempotent; sends and commits are not.

use std::collections::BTreeMap;

use rand::Rng;
use rand::seq::IndexedRandom;
use serde_json::{Map, Value, json};

use super::{Client, Completion, FinalPhase, Reply, Request, Who, judge, with_field};
use crate::message::Body;
use checker::history::EventType;

pub const OPERATIONS: [&str; 5] = [
    "send",
    "poll",
    "commit_offsets",
    "list_committed_offsets",
    "final-poll",
];

/// Keys the workload uses: `k0` … `k7`.
pub const KEY_COUNT: usize = 8;
/// Keys a client is assigned at a time.
pub const ASSIGNED_KEYS: usize = 3;
/// Attempts at each final poll before the drain gives up on its key.
pub const DRAIN_ATTEMPTS: u32 = 10;

/// Every key of the workload.
pub fn keys() -> Vec<String> {
    (0..KEY_COUNT).map(|i| format!("k{i}")).collect()
}

/// A kafka client; see the module's documentation.
pub struct KafkaClient {
    who: Who,
    sent: u64,
    /// The keys it polls, with the offset it polls each from next.
    positions: BTreeMap<String, i64>,
}

impl KafkaClient {
    pub(crate) fn new(who: Who) -> KafkaClient {
        KafkaClient {
            who,
            sent: 0,
            positions: BTreeMap::new(),
        }
    }

    fn owns(&self, key: &str) -> bool {
        let index: u64 = key.trim_start_matches('k').parse().unwrap_or(0);
        index % u64::from(self.who.clients) == u64::from(self.who.client)
    }

    fn send(&mut self) -> Request {
        let keys = keys();
        let key = keys.choose(&mut self.who.rng).cloned().unwrap_or_default();
        let msg = self.who.unique(self.sent);
        self.sent += 1;
        let value = json!({"key": key, "msg": msg});
        let body = Body::new("send").with("key", key).with("msg", msg);
        self.who.request("send", value, body, false)
    }

    /// Take up a new set of keys: ask where their consumers committed.
    fn assign(&mut self) -> Request {
        let mut chosen: Vec<String> = keys()
            .choose_multiple(&mut self.who.rng, ASSIGNED_KEYS)
            .cloned()
            .collect();
        chosen.sort();
        let value = json!({"keys": chosen});
        let body = Body::new("list_committed_offsets").with("keys", chosen);
        self.who
            .request("list_committed_offsets", value, body, true)
    }

    fn poll(&self) -> Request {
        poll_request(&self.who.node, "poll", &self.positions)
    }

    /// Commit what it has read of the keys it owns, if anything.
    fn commit(&self) -> Option<Request> {
        let offsets: BTreeMap<&String, i64> = self
            .positions
            .iter()
            .filter(|(k, p)| **p > 0 && self.owns(k))
            .map(|(k, p)| (k, p - 1))
            .collect();
        if offsets.is_empty() {
            return None;
        }
        let value = json!({"offsets": offsets});
        let body = Body::new("commit_offsets").with("offsets", json!(offsets));
        Some(self.who.request("commit_offsets", value, body, false))
    }

    /// Move to the keys a `list_committed_offsets` asked about: a key kept keeps
    /// its position, a new one starts after its committed offset (or at 0).
    fn assigned(&mut self, request: &Request, done: &Completion) {
        let Some(Value::Array(keys)) = request.value.get("keys") else {
            return;
        };
        let committed = done
            .value
            .get("offsets")
            .filter(|_| done.kind == EventType::Ok);
        let mut positions = BTreeMap::new();
        for k in keys.iter().filter_map(Value::as_str) {
            let from = self.positions.get(k).copied().or_else(|| {
                let c = committed?.get(k)?.as_i64()?;
                Some(c.saturating_add(1))
            });
            positions.insert(k.to_string(), from.unwrap_or(0).max(0));
        }
        self.positions = positions;
    }

    /// Advance past what a poll returned.
    fn polled(&mut self, done: &Completion) {
        let Some(Value::Object(msgs)) = done.value.get("msgs") else {
            return;
        };
        for (k, pairs) in msgs {
            if let (Some(p), Some(last)) = (self.positions.get_mut(k), last_offset(pairs)) {
                *p = (*p).max(last.saturating_add(1));
            }
        }
    }
}

impl Client for KafkaClient {
    fn next_request(&mut self) -> Request {
        let draw = self.who.rng.random_range(0..100);
        if draw < 50 {
            return self.send();
        }
        if self.positions.is_empty() || draw >= 90 {
            return self.assign();
        }
        if draw < 80 {
            return self.poll();
        }
        self.commit().unwrap_or_else(|| self.send())
    }

    fn complete(&mut self, request: &Request, reply: Reply<'_>) -> Completion {
        match request.f {
            "send" => judge(request, reply, "send_ok", |b| match b.get("offset") {
                Some(o) if o.as_i64().is_some() => {
                    Ok(with_field(&request.value, "offset", o.clone()))
                }
                _ => Err("without an integer offset".into()),
            }),
            "commit_offsets" => judge(request, reply, "commit_offsets_ok", |_| {
                Ok(request.value.clone())
            }),
            "list_committed_offsets" => {
                let done = judge(request, reply, "list_committed_offsets_ok", |b| {
                    let offsets = integer_map(b.get("offsets")).ok_or("without integer offsets")?;
                    Ok(with_field(
                        &request.value,
                        "offsets",
                        Value::Object(offsets),
                    ))
                });
                self.assigned(request, &done);
                done
            }
            _ => {
                let done = complete_poll(request, reply);
                self.polled(&done);
                done
            }
        }
    }
}

/// A poll (`f` `poll` or `final-poll`) of `positions` at `node`.
fn poll_request(node: &str, f: &'static str, positions: &BTreeMap<String, i64>) -> Request {
    let value = json!({"offsets": positions});
    let body = Body::new("poll").with("offsets", json!(positions));
    Request {
        dest: node.to_string(),
        f,
        value,
        body,
        idempotent: true,
    }
}

fn complete_poll(request: &Request, reply: Reply<'_>) -> Completion {
    judge(request, reply, "poll_ok", |b| {
        let msgs =
            poll_msgs(b.get("msgs")).ok_or("whose msgs are not lists of [offset, message]")?;
        Ok(with_field(&request.value, "msgs", Value::Object(msgs)))
    })
}

/// A poll's `msgs`, if well formed: per key, `[integer, message]` pairs.
fn poll_msgs(msgs: Option<&Value>) -> Option<Map<String, Value>> {
    let Value::Object(m) = msgs? else { return None };
    let pairs_ok = |v: &Value| {
        v.as_array().is_some_and(|pairs| {
            pairs.iter().all(|p| {
                p.as_array()
                    .is_some_and(|p| p.len() == 2 && p[0].as_i64().is_some())
            })
        })
    };
    m.values().all(pairs_ok).then(|| m.clone())
}

/// An object of integers, if that is what `v` is.
fn integer_map(v: Option<&Value>) -> Option<Map<String, Value>> {
    let Value::Object(m) = v? else { return None };
    m.values().all(|o| o.as_i64().is_some()).then(|| m.clone())
}

/// The highest offset of a key's `[offset, message]` pairs.
fn last_offset(pairs: &Value) -> Option<i64> {
    pairs
        .as_array()?
        .iter()
        .filter_map(|p| p.get(0)?.as_i64())
        .max()
}

/// The final drain: each key polled from offset 0, one key at a time, until a poll
/// returns nothing for it. A failed poll is retried at the next node, up to
/// [`DRAIN_ATTEMPTS`] times (also the limit on polls that make no progress).
pub struct Drain {
    nodes: Vec<String>,
    keys: Vec<String>,
    /// The key being drained, and the offset its next poll asks for.
    at: usize,
    from: i64,
    attempts: u32,
}

impl Drain {
    pub fn new(node_ids: &[String], keys: Vec<String>) -> Drain {
        Drain {
            nodes: node_ids.to_vec(),
            keys,
            at: 0,
            from: 0,
            attempts: 0,
        }
    }

    fn next_key(&mut self) {
        self.at += 1;
        self.from = 0;
        self.attempts = 0;
    }
}

impl FinalPhase for Drain {
    fn next_request(&mut self) -> Option<Request> {
        let key = self.keys.get(self.at)?;
        let node = match self.nodes.len() {
            0 => "n1".to_string(),
            n => self.nodes[self.attempts as usize % n].clone(),
        };
        Some(poll_request(
            &node,
            "final-poll",
            &BTreeMap::from([(key.clone(), self.from)]),
        ))
    }

    fn complete(&mut self, request: &Request, reply: Reply<'_>) -> Completion {
        let done = complete_poll(request, reply);
        let key = &self.keys[self.at.min(self.keys.len().saturating_sub(1))];
        let last = done
            .value
            .get("msgs")
            .and_then(|m| m.get(key))
            .and_then(last_offset);
        match (done.kind, last) {
            (EventType::Ok, None) => self.next_key(),
            (EventType::Ok, Some(last)) if last >= self.from => {
                self.from = last.saturating_add(1);
                self.attempts = 0;
            }
            _ => {
                self.attempts += 1;
                if self.attempts >= DRAIN_ATTEMPTS {
                    self.next_key();
                }
            }
        }
        done
    }
}

#[cfg(test)]
#[path = "kafka_tests.rs"]
mod tests;
