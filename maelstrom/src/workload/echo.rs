//! echo: a client sends `{"type":"echo","echo":payload}` and expects `echo_ok`
//! with the same payload back. Payloads vary — strings (with escapes and non-ASCII
//! text), numbers, nested arrays and objects — so a node that mangles JSON shows.
//!
//! History (`f` `echo`): invocation `{"node":n,"echo":payload}`; `ok`
//! `{"node":n,"echo":what came back}` — recorded as it came, absent if the reply
//! had none, for the checker to compare (`echo-mismatch`).

use rand::Rng;
use serde_json::{Value, json};

use super::{Client, Completion, Reply, Request, Who, judge};
use crate::message::Body;

pub const OPERATIONS: [&str; 1] = ["echo"];

pub struct EchoClient {
    who: Who,
}

impl EchoClient {
    pub(crate) fn new(who: Who) -> EchoClient {
        EchoClient { who }
    }

    fn payload(&mut self) -> Value {
        let rng = &mut self.who.rng;
        let n: u32 = rng.random_range(0..1000);
        match rng.random_range(0..6) {
            0..=2 => json!(format!("Please echo {n}")),
            3 => json!(format!("tab\there \"quoted\" \\ ünïcödé ✓ {n}")),
            4 => json!(n),
            _ => json!({"n": n, "list": [n, null, true, -1.5], "nested": {"s": format!("x{n}")}}),
        }
    }
}

impl Client for EchoClient {
    fn next_request(&mut self) -> Request {
        let payload = self.payload();
        let value = json!({"node": self.who.node, "echo": payload});
        let body = Body::new("echo").with("echo", payload);
        self.who.request("echo", value, body, false)
    }

    fn complete(&mut self, request: &Request, reply: Reply<'_>) -> Completion {
        judge(request, reply, "echo_ok", |b| {
            let mut value = json!({"node": request.dest});
            if let Some(echo) = b.get("echo") {
                value["echo"] = echo.clone();
            }
            Ok(value)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use checker::history::EventType;

    #[test]
    fn requests_carry_varied_payloads_and_the_history_records_them() {
        let mut c = EchoClient::new(Who::new(3, &nodes(2), 0, 1));
        let reqs: Vec<Request> = (0..60).map(|_| c.next_request()).collect();
        let kinds: std::collections::BTreeSet<&str> = reqs
            .iter()
            .map(|r| match r.body.get("echo").unwrap() {
                Value::String(_) => "string",
                Value::Number(_) => "number",
                _ => "object",
            })
            .collect();
        assert_eq!(kinds.len(), 3);
        let r = &reqs[0];
        assert_eq!(
            (r.f, r.body.kind.as_str(), r.dest.as_str()),
            ("echo", "echo", "n1")
        );
        assert_eq!(r.value["echo"], *r.body.get("echo").unwrap());
        assert_eq!(r.value["node"], "n1");
    }

    #[test]
    fn the_echo_that_came_back_is_recorded_as_it_came() {
        let mut c = EchoClient::new(Who::new(3, &nodes(1), 0, 1));
        let r = c.next_request();
        let good = reply("echo_ok", json!({"echo": r.body.get("echo").unwrap()}));
        let done = c.complete(&r, Reply::Body(&good));
        assert_eq!((done.kind, &done.value), (EventType::Ok, &r.value));
        let wrong = reply("echo_ok", json!({"echo": "something else"}));
        let done = c.complete(&r, Reply::Body(&wrong));
        assert_eq!(done.value["echo"], "something else");
        let none = c.complete(&r, Reply::Body(&reply("echo_ok", json!({}))));
        assert_eq!((none.kind, none.value.get("echo")), (EventType::Ok, None));
        assert_eq!(c.complete(&r, Reply::Timeout).kind, EventType::Info);
    }

    #[test]
    fn a_seed_fixes_the_payloads() {
        let payloads = |seed| {
            let mut c = EchoClient::new(Who::new(seed, &nodes(1), 0, 1));
            (0..20).map(|_| c.next_request().value).collect::<Vec<_>>()
        };
        assert_eq!(payloads(1), payloads(1));
        assert_ne!(payloads(1), payloads(2));
    }
}
