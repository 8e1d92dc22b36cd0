//! g-counter: a grow-only counter. Clients `add` a delta (1 to [`MAX_DELTA`]) at
//! their node and `read` its value; after healing, every node is read once more
//! (`final-read`), and each must hold the sum of the acknowledged adds, give or
//! take those whose outcome is unknown.
//!
//! History: `add` invocation and `ok` `{"node":n,"delta":d}`; `read` and
//! `final-read` invocation `{"node":n}`, `ok` `{"node":n,"value":v}` — `v` as the
//! node sent it, for the checker to judge (a value that is no integer is out of
//! range). A `read_ok` without a `value` is malformed (`fail`).

use rand::Rng;
use serde_json::{Value, json};

use super::final_reads::FinalReads;
use super::{Client, Completion, Reply, Request, Who, judge};
use crate::message::Body;

pub const OPERATIONS: [&str; 3] = ["add", "read", "final-read"];

/// The largest delta a client adds.
pub const MAX_DELTA: u64 = 5;

/// A g-counter client: adds three times in five, reads otherwise.
pub struct GCounterClient {
    who: Who,
}

impl GCounterClient {
    pub(crate) fn new(who: Who) -> GCounterClient {
        GCounterClient { who }
    }
}

fn read_value(request: &Request, body: &Body) -> Result<Value, String> {
    match body.get("value") {
        Some(v) => Ok(json!({"node": request.dest, "value": v})),
        None => Err("without a value".into()),
    }
}

impl Client for GCounterClient {
    fn next_request(&mut self) -> Request {
        if self.who.rng.random_bool(0.6) {
            let delta = self.who.rng.random_range(1..=MAX_DELTA);
            let value = json!({"node": self.who.node, "delta": delta});
            let body = Body::new("add").with("delta", delta);
            self.who.request("add", value, body, false)
        } else {
            let value = json!({"node": self.who.node});
            self.who.request("read", value, Body::new("read"), true)
        }
    }

    fn complete(&mut self, request: &Request, reply: Reply<'_>) -> Completion {
        match request.f {
            "add" => judge(request, reply, "add_ok", |_| Ok(request.value.clone())),
            _ => judge(request, reply, "read_ok", |b| read_value(request, b)),
        }
    }
}

/// One final read of every node.
pub fn final_reads(node_ids: &[String]) -> FinalReads {
    FinalReads::new(node_ids, read_value)
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use checker::history::EventType;

    #[test]
    fn clients_add_small_deltas_and_read() {
        let mut c = GCounterClient::new(Who::new(5, &nodes(3), 0, 1));
        let reqs: Vec<Request> = (0..100).map(|_| c.next_request()).collect();
        let adds: Vec<u64> = reqs
            .iter()
            .filter(|r| r.f == "add")
            .map(|r| r.body.get("delta").unwrap().as_u64().unwrap())
            .collect();
        assert!(adds.len() > 40 && adds.len() < 80, "{}", adds.len());
        assert!(adds.iter().all(|d| (1..=MAX_DELTA).contains(d)));
        let add = reqs.iter().find(|r| r.f == "add").unwrap();
        assert_eq!(add.value["delta"], *add.body.get("delta").unwrap());
        let ok = c.complete(add, Reply::Body(&reply("add_ok", json!({}))));
        assert_eq!((ok.kind, &ok.value), (EventType::Ok, &add.value));
        assert_eq!(c.complete(add, Reply::Timeout).kind, EventType::Info);
        assert_eq!(
            c.complete(add, Reply::Body(&error(11))).kind,
            EventType::Fail
        );
    }

    #[test]
    fn reads_record_the_value_as_sent() {
        let mut c = GCounterClient::new(Who::new(5, &nodes(1), 0, 1));
        let read = (0..20)
            .map(|_| c.next_request())
            .find(|r| r.f == "read")
            .unwrap();
        let done = c.complete(&read, Reply::Body(&reply("read_ok", json!({"value": "7"}))));
        assert_eq!(
            (done.kind, done.value),
            (EventType::Ok, json!({"node": "n1", "value": "7"}))
        );
        let none = c.complete(&read, Reply::Body(&reply("read_ok", json!({}))));
        assert_eq!(none.kind, EventType::Fail);
        assert_eq!(c.complete(&read, Reply::Timeout).kind, EventType::Fail);
    }
}
