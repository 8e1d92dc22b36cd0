//! The final phase of broadcast and g-counter: once the cluster has healed, one
//! `final-read` of every node in turn, each retried (up to [`FINAL_ATTEMPTS`]
//! times) until it is answered `ok`, so the checker has every node's final state.

use serde_json::{Value, json};

use super::{Completion, FinalPhase, Reply, Request, judge};
use crate::message::Body;

/// Attempts at each node's final read before moving on without it.
pub const FINAL_ATTEMPTS: u32 = 5;

/// How a workload records a `read_ok`: the value to record, or what it lacks.
pub(crate) type ReadOk = fn(&Request, &Body) -> Result<Value, String>;

/// One final read of each node, in order.
pub struct FinalReads {
    nodes: Vec<String>,
    next: usize,
    attempts: u32,
    read: ReadOk,
}

impl FinalReads {
    pub(crate) fn new(node_ids: &[String], read: ReadOk) -> FinalReads {
        FinalReads {
            nodes: node_ids.to_vec(),
            next: 0,
            attempts: 0,
            read,
        }
    }
}

impl FinalPhase for FinalReads {
    fn next_request(&mut self) -> Option<Request> {
        let node = self.nodes.get(self.next)?;
        Some(Request {
            dest: node.clone(),
            f: "final-read",
            value: json!({"node": node}),
            body: Body::new("read"),
            idempotent: true,
        })
    }

    fn complete(&mut self, request: &Request, reply: Reply<'_>) -> Completion {
        let read = self.read;
        let done = judge(request, reply, "read_ok", |b| read(request, b));
        self.attempts += 1;
        if done.kind == checker::history::EventType::Ok || self.attempts >= FINAL_ATTEMPTS {
            self.next += 1;
            self.attempts = 0;
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use checker::history::EventType;

    fn read(r: &Request, b: &Body) -> Result<Value, String> {
        b.get("value")
            .map(|v| json!({"node": r.dest, "value": v}))
            .ok_or_else(|| "without a value".into())
    }

    #[test]
    fn every_node_is_read_once_and_a_failing_one_is_retried_then_skipped() {
        let mut f = FinalReads::new(&nodes(2), read);
        let r = f.next_request().unwrap();
        assert_eq!(
            (r.f, r.dest.as_str(), r.idempotent),
            ("final-read", "n1", true)
        );
        for _ in 0..FINAL_ATTEMPTS {
            let r = f.next_request().unwrap();
            assert_eq!(r.dest, "n1");
            assert_eq!(f.complete(&r, Reply::Timeout).kind, EventType::Fail);
        }
        let r = f.next_request().unwrap();
        assert_eq!(r.dest, "n2");
        let ok = f.complete(&r, Reply::Body(&reply("read_ok", json!({"value": 3}))));
        assert_eq!(
            (ok.kind, ok.value),
            (EventType::Ok, json!({"node": "n2", "value": 3}))
        );
        assert!(f.next_request().is_none());
    }
}
