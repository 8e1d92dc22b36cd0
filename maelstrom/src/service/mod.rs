//! The services Maelstrom offers the nodes under test, which they call by name as
//! if they were nodes: `lin-kv` (linearizable), `seq-kv` (sequentially consistent)
//! and `lww-kv` (last write wins) — one key-value API for the three
//! (doc/services.md): `read`, `write`, `cas` with `from`, `to` and
//! `create_if_not_exists`, and errors 20 (key-does-not-exist), 22
//! (precondition-failed), 12 (malformed-request) and 10 (not-supported); the rules
//! are in [`kv`], the weaker models in [`replicas`].
//!
//! A [`Service`] is a pure state machine: the router hands it each request with the
//! node that sent it and sends back the reply it returns, in reply to the
//! request's `msg_id`. Its choices (which past state seq-kv answers from, which
//! replica lww-kv uses) come from a rng seeded at construction, so a seed and a
//! sequence of requests give one sequence of replies.

mod kv;
mod replicas;

pub use replicas::{LWW_REPLICAS, SEQ_STATES};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::message::{Body, Message};
use kv::{Kv, KvRequest};
use replicas::{LwwKv, SeqKv};

/// Which service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceKind {
    LinKv,
    SeqKv,
    LwwKv,
}

impl ServiceKind {
    pub const ALL: [ServiceKind; 3] = [ServiceKind::LinKv, ServiceKind::SeqKv, ServiceKind::LwwKv];

    /// The node id nodes address it by.
    pub fn name(self) -> &'static str {
        match self {
            ServiceKind::LinKv => "lin-kv",
            ServiceKind::SeqKv => "seq-kv",
            ServiceKind::LwwKv => "lww-kv",
        }
    }

    /// The service a destination names, if it names one.
    pub fn from_name(name: &str) -> Option<ServiceKind> {
        ServiceKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

#[derive(Debug, Clone)]
enum State {
    Lin(Kv),
    Seq(SeqKv),
    Lww(LwwKv),
}

/// One service's state.
#[derive(Debug, Clone)]
pub struct Service {
    kind: ServiceKind,
    state: State,
}

impl Service {
    /// An empty store; `seed` fixes its choices.
    pub fn new(kind: ServiceKind, seed: u64) -> Service {
        let rng = ChaCha8Rng::seed_from_u64(seed);
        let state = match kind {
            ServiceKind::LinKv => State::Lin(Kv::default()),
            ServiceKind::SeqKv => State::Seq(SeqKv::new(rng)),
            ServiceKind::LwwKv => State::Lww(LwwKv::new(rng)),
        };
        Service { kind, state }
    }

    pub fn kind(&self) -> ServiceKind {
        self.kind
    }

    /// The reply to request `body` from node `from`, in reply to its `msg_id`.
    pub fn handle(&mut self, from: &str, body: &Body) -> Body {
        let mut reply = match KvRequest::parse(body) {
            Err(error) => error,
            Ok(req) => match &mut self.state {
                State::Lin(kv) => kv.apply(&req),
                State::Seq(seq) => seq.handle(from, &req),
                State::Lww(lww) => lww.handle(&req),
            },
        };
        reply.in_reply_to = body.msg_id;
        reply
    }

    /// The reply message to `request` (addressed to this service).
    pub fn reply(&mut self, request: &Message) -> Message {
        let body = self.handle(&request.src, &request.body);
        request.reply(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn body(kind: &str, id: i64, fields: Value) -> Body {
        let mut b = Body::new(kind);
        if let Value::Object(m) = fields {
            b.fields = m;
        }
        b.msg_id = Some(id);
        b
    }

    fn write(s: &mut Service, from: &str, key: i64, v: i64) {
        let r = s.handle(from, &body("write", 1, json!({"key": key, "value": v})));
        assert_eq!(r.kind, "write_ok");
    }

    /// A read's value (`None`: key-does-not-exist).
    fn read(s: &mut Service, from: &str, key: i64) -> Option<i64> {
        let r = s.handle(from, &body("read", 1, json!({"key": key})));
        r.get("value").and_then(Value::as_i64)
    }

    #[test]
    fn services_are_named_as_nodes_address_them() {
        for k in ServiceKind::ALL {
            assert_eq!(ServiceKind::from_name(k.name()), Some(k));
        }
        assert_eq!(ServiceKind::from_name("lin-tso"), None);
        assert_eq!(ServiceKind::from_name("n1"), None);
    }

    #[test]
    fn replies_answer_the_request_by_its_msg_id() {
        let mut s = Service::new(ServiceKind::LinKv, 1);
        let req = Message::new(
            "n1",
            "lin-kv",
            body("write", 42, json!({"key": "a", "value": 1})),
        );
        let r = s.reply(&req);
        assert_eq!((r.src.as_str(), r.dest.as_str()), ("lin-kv", "n1"));
        assert_eq!(
            (r.body.kind.as_str(), r.body.in_reply_to),
            ("write_ok", Some(42))
        );
        let bad = s.handle("n1", &body("txn", 43, json!({})));
        assert_eq!((bad.kind.as_str(), bad.in_reply_to), ("error", Some(43)));
        assert_eq!(bad.get("code"), Some(&json!(10)));
    }

    #[test]
    fn lin_kv_answers_every_request_from_the_latest_state() {
        let mut s = Service::new(ServiceKind::LinKv, 1);
        assert_eq!(read(&mut s, "n1", 1), None);
        for v in 0..50 {
            write(&mut s, "n1", 1, v);
            assert_eq!(read(&mut s, "n2", 1), Some(v));
        }
        let cas = |from: i64, to: i64| body("cas", 2, json!({"key": 1, "from": from, "to": to}));
        assert_eq!(s.handle("n3", &cas(49, 50)).kind, "cas_ok");
        assert_eq!(s.handle("n2", &cas(49, 51)).get("code"), Some(&json!(22)));
    }

    #[test]
    fn seq_kv_reads_may_lag_but_never_go_backwards_per_client() {
        let mut s = Service::new(ServiceKind::SeqKv, 7);
        let mut last_seen = -1;
        let mut stale = 0;
        for v in 0..400 {
            write(&mut s, "n1", 1, v);
            let seen = read(&mut s, "n2", 1).unwrap_or(-1);
            assert!(seen >= last_seen, "n2 saw {seen} after {last_seen}");
            assert!(seen <= v);
            if seen < v {
                stale += 1;
            }
            last_seen = seen;
            // The writer itself is at the newest state it made.
            assert_eq!(read(&mut s, "n1", 1), Some(v));
        }
        assert!(
            stale > 100,
            "seq-kv should serve stale reads, served {stale}"
        );
    }

    #[test]
    fn seq_kv_updates_take_the_newest_state_and_bring_their_client_there() {
        let mut s = Service::new(ServiceKind::SeqKv, 3);
        for v in 0..100 {
            write(&mut s, "n1", 1, v);
        }
        // An update of any key brings n2 to the newest state, on every key ...
        write(&mut s, "n2", 2, 0);
        assert_eq!(read(&mut s, "n2", 1), Some(99));
        // ... so its cas is evaluated against it.
        let r = s.handle(
            "n2",
            &body("cas", 5, json!({"key": 1, "from": 99, "to": 100})),
        );
        assert_eq!(r.kind, "cas_ok");
        assert_eq!(read(&mut s, "n2", 1), Some(100));
    }

    #[test]
    fn seq_kv_may_order_a_failing_cas_in_the_past() {
        // A client that saw nothing yet may have its cas evaluated against an old
        // state, where it fails, as a read there would: sequentially consistent.
        let failed = (0..20u64)
            .filter(|&seed| {
                let mut s = Service::new(ServiceKind::SeqKv, seed);
                for v in 0..10 {
                    write(&mut s, "n1", 1, v);
                }
                let r = s.handle(
                    "n2",
                    &body("cas", 5, json!({"key": 1, "from": 9, "to": 10})),
                );
                r.kind != "cas_ok"
            })
            .count();
        assert!(failed > 0 && failed < 20, "{failed} of 20 failed");
    }

    #[test]
    fn seq_kv_is_one_total_order_the_same_seed_replays_it() {
        let run = |seed| {
            let mut s = Service::new(ServiceKind::SeqKv, seed);
            let mut seen = Vec::new();
            for v in 0..200 {
                write(&mut s, ["n1", "n2"][v as usize % 2], v % 3, v);
                seen.push(read(&mut s, "n3", v % 3));
            }
            seen
        };
        assert_eq!(run(11), run(11));
        assert_ne!(run(11), run(12));
    }

    #[test]
    fn lww_kv_is_stale_but_converges_and_a_later_write_wins() {
        let mut s = Service::new(ServiceKind::LwwKv, 5);
        let mut stale = 0;
        for v in 0..200 {
            write(&mut s, "n1", 1, v);
            if read(&mut s, "n2", 1) != Some(v) {
                stale += 1;
            }
        }
        assert!(
            stale > 50,
            "lww-kv should serve stale reads, served {stale}"
        );
        let State::Lww(lww) = &mut s.state else {
            unreachable!()
        };
        lww.converge();
        // Every replica agrees: whichever serves the read, the answer is the same.
        let agreed = read(&mut s, "n2", 1);
        for _ in 0..50 {
            assert_eq!(read(&mut s, "n3", 1), agreed);
        }
        assert!(agreed.is_some_and(|v| v > 150), "{agreed:?}");
    }

    #[test]
    fn lww_kv_cas_honours_create_if_not_exists() {
        let mut s = Service::new(ServiceKind::LwwKv, 9);
        let create = body(
            "cas",
            1,
            json!({"key": "x", "from": 0, "to": 1, "create_if_not_exists": true}),
        );
        assert_eq!(s.handle("n1", &create).kind, "cas_ok");
        let plain = body("cas", 2, json!({"key": "y", "from": 0, "to": 1}));
        assert_eq!(s.handle("n1", &plain).get("code"), Some(&json!(20)));
    }
}
