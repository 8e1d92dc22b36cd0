//! unique-ids: a client asks `{"type":"generate"}` and expects `generate_ok` with
//! an `id` — any JSON value — unique across every node and every request.
//!
//! History (`f` `generate`): invocation `{"node":n}`; `ok` `{"node":n,"id":id}`. A
//! `generate_ok` without an `id` is malformed (`info`: an id may have been used).

use serde_json::json;

use super::{Client, Completion, Reply, Request, Who, judge};
use crate::message::Body;

pub const OPERATIONS: [&str; 1] = ["generate"];

pub struct UniqueIdsClient {
    who: Who,
}

impl UniqueIdsClient {
    pub(crate) fn new(who: Who) -> UniqueIdsClient {
        UniqueIdsClient { who }
    }
}

impl Client for UniqueIdsClient {
    fn next_request(&mut self) -> Request {
        let value = json!({"node": self.who.node});
        self.who
            .request("generate", value, Body::new("generate"), false)
    }

    fn complete(&mut self, request: &Request, reply: Reply<'_>) -> Completion {
        judge(request, reply, "generate_ok", |b| match b.get("id") {
            Some(id) => Ok(json!({"node": request.dest, "id": id})),
            None => Err("without an id".into()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use checker::history::EventType;

    #[test]
    fn generate_records_the_id_and_its_node() {
        let mut c = UniqueIdsClient::new(Who::new(1, &nodes(3), 2, 3));
        let r = c.next_request();
        assert_eq!(
            (r.f, r.body.kind.as_str(), r.dest.as_str()),
            ("generate", "generate", "n3")
        );
        assert_eq!(r.value, json!({"node": "n3"}));
        let done = c.complete(
            &r,
            Reply::Body(&reply("generate_ok", json!({"id": [3, "x"]}))),
        );
        assert_eq!(done.kind, EventType::Ok);
        assert_eq!(done.value["id"], json!([3, "x"]));
        assert_eq!(done.value["node"], "n3");
    }

    #[test]
    fn a_reply_without_an_id_is_in_doubt() {
        let mut c = UniqueIdsClient::new(Who::new(1, &nodes(1), 0, 1));
        let r = c.next_request();
        let done = c.complete(&r, Reply::Body(&reply("generate_ok", json!({}))));
        assert_eq!(done.kind, EventType::Info);
        assert_eq!(done.value, r.value);
        assert!(done.error.unwrap().contains("without an id"));
        assert_eq!(
            c.complete(&r, Reply::Body(&error(10))).kind,
            EventType::Fail
        );
    }
}
