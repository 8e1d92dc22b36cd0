//! The workloads: what the harness's clients ask the nodes, and how each answer
//! becomes a history completion (docs/history.md, "The Maelstrom workloads").
//!
//! Each workload has a [`Client`]: a seeded, pure generator of requests — given a
//! seed, the node ids, which client it is of how many, and what it has learnt
//! from its replies so far — that also turns each reply into a [`Completion`]: the
//! history type (`ok`, `fail`, `info`), the value to record, and the error. The
//! router sends [`Request::body`] (with a `msg_id` of its own) to
//! [`Request::dest`], records `invoke` with [`Request::f`] and [`Request::value`],
//! then the completion. Workloads that judge the state after healing (broadcast,
//! g-counter: a read of every node; kafka: every key drained from offset 0) also
//! have a [`FinalPhase`], which the harness runs once the cluster has healed.
//!
//! How a reply is judged, for every workload alike:
//! - a reply of the expected type (`read_ok` to `read`) is `ok` with what it says,
//!   unless it lacks what the history needs to record it (then as malformed, below);
//! - an `error` reply is `fail` if its code is definite or the request idempotent
//!   (a read changes nothing), else `info` ([`crate::error::history_type`]);
//! - no reply in time ([`Reply::Timeout`]: the harness's timeout, or the node died)
//!   is `fail` for an idempotent request, else `info`;
//! - a reply of another type, or one without what the history needs, is malformed:
//!   like a timeout, `fail` if idempotent, else `info`, with the error saying why.
//!
//! A `fail` or `info` completion carries the invocation's value.

pub mod broadcast;
pub mod echo;
mod final_reads;
pub mod g_counter;
pub mod kafka;
pub mod lin_kv;
pub mod unique_ids;

use checker::history::EventType;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

pub use final_reads::{FINAL_ATTEMPTS, FinalReads};

use crate::error::ErrorReply;
use crate::message::Body;

/// The workloads, by the names `watermark run -w` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Workload {
    Echo,
    UniqueIds,
    Broadcast,
    GCounter,
    LinKv,
    Kafka,
}

impl Workload {
    pub const ALL: [Workload; 6] = [
        Workload::Echo,
        Workload::UniqueIds,
        Workload::Broadcast,
        Workload::GCounter,
        Workload::LinKv,
        Workload::Kafka,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Workload::Echo => "echo",
            Workload::UniqueIds => "unique-ids",
            Workload::Broadcast => "broadcast",
            Workload::GCounter => "g-counter",
            Workload::LinKv => "lin-kv",
            Workload::Kafka => "kafka",
        }
    }

    pub fn from_name(name: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == name)
    }

    /// The history's operation names (`f`) of this workload, final ones included.
    pub fn operations(self) -> &'static [&'static str] {
        match self {
            Workload::Echo => &echo::OPERATIONS,
            Workload::UniqueIds => &unique_ids::OPERATIONS,
            Workload::Broadcast => &broadcast::OPERATIONS,
            Workload::GCounter => &g_counter::OPERATIONS,
            Workload::LinKv => &lin_kv::OPERATIONS,
            Workload::Kafka => &kafka::OPERATIONS,
        }
    }

    /// Client `client` of `clients`, drawing from `seed`, talking to `node_ids`.
    pub fn client(
        self,
        seed: u64,
        node_ids: &[String],
        client: u32,
        clients: u32,
    ) -> Box<dyn Client> {
        let who = Who::new(seed, node_ids, client, clients);
        match self {
            Workload::Echo => Box::new(echo::EchoClient::new(who)),
            Workload::UniqueIds => Box::new(unique_ids::UniqueIdsClient::new(who)),
            Workload::Broadcast => Box::new(broadcast::BroadcastClient::new(who)),
            Workload::GCounter => Box::new(g_counter::GCounterClient::new(who)),
            Workload::LinKv => Box::new(lin_kv::LinKvClient::new(who)),
            Workload::Kafka => Box::new(kafka::KafkaClient::new(who)),
        }
    }

    /// What every node is sent once it answered `init`, before any client request
    /// (and again after each restart), if the workload sends anything: broadcast's
    /// `topology` (Maelstrom's default grid), which nodes may need before they gossip.
    pub fn setup(self, node_ids: &[String]) -> Option<Body> {
        match self {
            Workload::Broadcast => Some(broadcast::topology_body(
                &broadcast::Topology::DEFAULT.neighbours(node_ids),
            )),
            _ => None,
        }
    }

    /// The requests after healing, if the workload has any.
    pub fn final_phase(self, node_ids: &[String]) -> Option<Box<dyn FinalPhase>> {
        match self {
            Workload::Broadcast => Some(Box::new(broadcast::final_reads(node_ids))),
            Workload::GCounter => Some(Box::new(g_counter::final_reads(node_ids))),
            Workload::Kafka => Some(Box::new(kafka::Drain::new(node_ids, kafka::keys()))),
            Workload::Echo | Workload::UniqueIds | Workload::LinKv => None,
        }
    }
}

/// One request: where it goes, what the history records, what is sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The node it is for (the client's own node; the harness may send it elsewhere).
    pub dest: String,
    /// The history's operation name.
    pub f: &'static str,
    /// The invocation's value.
    pub value: Value,
    /// The body to send, without a `msg_id` (the router numbers its requests).
    pub body: Body,
    /// It changes nothing, so without an answer it did not happen.
    pub idempotent: bool,
}

/// What came back for a request.
#[derive(Debug, Clone, Copy)]
pub enum Reply<'a> {
    /// The reply's body.
    Body(&'a Body),
    /// No reply in time, or the node died first.
    Timeout,
}

/// How an operation ended, as the history records it.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// `Ok`, `Fail` or `Info`.
    pub kind: EventType,
    pub value: Value,
    pub error: Option<String>,
}

/// A workload's client: requests out, completions back.
pub trait Client: Send {
    /// The next request.
    fn next_request(&mut self) -> Request;
    /// How `request` ended, given what came back; updates what the client knows.
    fn complete(&mut self, request: &Request, reply: Reply<'_>) -> Completion;
}

/// The requests after healing, one at a time: the harness sends each, waits for
/// its reply (or times out), records it, and asks for the next.
pub trait FinalPhase: Send {
    /// The next request; `None` once done.
    fn next_request(&mut self) -> Option<Request>;
    fn complete(&mut self, request: &Request, reply: Reply<'_>) -> Completion;
}

/// Who a client is: its rng, its node, its number among the clients.
#[derive(Debug, Clone)]
pub(crate) struct Who {
    pub(crate) rng: ChaCha8Rng,
    /// The node it talks to: node `client mod n`, as Maelstrom binds its clients.
    pub(crate) node: String,
    pub(crate) client: u32,
    pub(crate) clients: u32,
}

impl Who {
    pub(crate) fn new(seed: u64, node_ids: &[String], client: u32, clients: u32) -> Who {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(u64::from(client) + 1);
        let node = match node_ids.len() {
            0 => "n1".to_string(),
            n => node_ids[client as usize % n].clone(),
        };
        Who {
            rng,
            node,
            client,
            clients: clients.max(1),
        }
    }

    /// The `k`th value this client writes: unique among the clients.
    pub(crate) fn unique(&self, k: u64) -> u64 {
        u64::from(self.client) + u64::from(self.clients) * k
    }

    pub(crate) fn request(
        &self,
        f: &'static str,
        value: Value,
        body: Body,
        idempotent: bool,
    ) -> Request {
        Request {
            dest: self.node.clone(),
            f,
            value,
            body,
            idempotent,
        }
    }
}

/// A request's completion without an answer it can record: `fail` if the request
/// is idempotent, else `info`, with the invocation's value.
pub(crate) fn unanswered(request: &Request, error: String) -> Completion {
    Completion {
        kind: if request.idempotent {
            EventType::Fail
        } else {
            EventType::Info
        },
        value: request.value.clone(),
        error: Some(error),
    }
}

/// Judge `reply` to `request` (see the module's rules): `read` reads an answer of
/// type `expected` into the value to record, or says what it lacks.
pub(crate) fn judge(
    request: &Request,
    reply: Reply<'_>,
    expected: &str,
    read: impl FnOnce(&Body) -> Result<Value, String>,
) -> Completion {
    let body = match reply {
        Reply::Timeout => return unanswered(request, "timeout".into()),
        Reply::Body(b) => b,
    };
    if let Some(e) = ErrorReply::from_body(body) {
        return Completion {
            kind: e.history_type(request.idempotent),
            value: request.value.clone(),
            error: Some(e.describe()),
        };
    }
    if body.kind != expected {
        return unanswered(
            request,
            format!("malformed reply: expected {expected}, got {}", body.kind),
        );
    }
    match read(body) {
        Ok(value) => Completion {
            kind: EventType::Ok,
            value,
            error: None,
        },
        Err(why) => unanswered(request, format!("malformed reply: {expected} {why}")),
    }
}

/// `value` (an object) with `field` set.
pub(crate) fn with_field(value: &Value, field: &str, v: Value) -> Value {
    let mut value = value.clone();
    if let Value::Object(m) = &mut value {
        m.insert(field.to_string(), v);
    }
    value
}

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers the workloads' tests share.
    use super::*;

    pub(crate) fn nodes(n: usize) -> Vec<String> {
        crate::init::node_ids(n)
    }

    pub(crate) fn reply(kind: &str, fields: Value) -> Body {
        let mut b = Body::new(kind);
        if let Value::Object(m) = fields {
            b.fields = m;
        }
        b
    }

    pub(crate) fn error(code: i64) -> Body {
        crate::error::error_body(code, "test")
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use serde_json::json;

    #[test]
    fn workloads_are_named_as_the_command_line_names_them() {
        for w in Workload::ALL {
            assert_eq!(Workload::from_name(w.name()), Some(w));
            assert!(!w.operations().is_empty());
        }
        assert_eq!(Workload::from_name("lin_kv"), None);
    }

    #[test]
    fn clients_are_bound_to_nodes_round_robin_and_write_unique_values() {
        let ids = nodes(3);
        let who: Vec<Who> = (0..5).map(|c| Who::new(1, &ids, c, 5)).collect();
        let bound: Vec<&str> = who.iter().map(|w| w.node.as_str()).collect();
        assert_eq!(bound, ["n1", "n2", "n3", "n1", "n2"]);
        let mut values: Vec<u64> = who
            .iter()
            .flat_map(|w| (0..10).map(|k| w.unique(k)))
            .collect();
        values.sort();
        values.dedup();
        assert_eq!(values.len(), 50);
    }

    #[test]
    fn replies_are_judged_by_the_shared_rules() {
        let who = Who::new(1, &nodes(1), 0, 1);
        let write = who.request(
            "write",
            json!({"key": 1, "value": 2}),
            Body::new("write"),
            false,
        );
        let read = who.request(
            "read",
            json!({"key": 1, "value": null}),
            Body::new("read"),
            true,
        );
        fn j(r: &Request, reply: Reply<'_>) -> Completion {
            judge(r, reply, "x_ok", |_| Ok(json!("recorded")))
        }

        let c = j(&write, Reply::Body(&reply("x_ok", json!({}))));
        assert_eq!((c.kind, c.value), (EventType::Ok, json!("recorded")));
        let c = j(&write, Reply::Timeout);
        assert_eq!(
            (c.kind, c.error.as_deref()),
            (EventType::Info, Some("timeout"))
        );
        assert_eq!(c.value, write.value);
        assert_eq!(j(&read, Reply::Timeout).kind, EventType::Fail);
        assert_eq!(j(&write, Reply::Body(&error(11))).kind, EventType::Fail);
        assert_eq!(j(&write, Reply::Body(&error(13))).kind, EventType::Info);
        assert_eq!(j(&read, Reply::Body(&error(13))).kind, EventType::Fail);
        let c = j(&write, Reply::Body(&reply("y_ok", json!({}))));
        assert_eq!(c.kind, EventType::Info);
        assert!(c.error.unwrap().contains("expected x_ok, got y_ok"));
        let c = judge(
            &read,
            Reply::Body(&reply("x_ok", json!({}))),
            "x_ok",
            |_| Err("without a value".into()),
        );
        assert_eq!(c.kind, EventType::Fail);
        assert_eq!(
            c.error.as_deref(),
            Some("malformed reply: x_ok without a value")
        );
    }

    #[test]
    fn every_workload_makes_a_client_and_the_final_phases_exist_where_needed() {
        let ids = nodes(3);
        for w in Workload::ALL {
            let mut c = w.client(4, &ids, 1, 3);
            let r = c.next_request();
            assert!(w.operations().contains(&r.f), "{} made {}", w.name(), r.f);
            assert_eq!(r.dest, "n2");
            assert!(r.body.msg_id.is_none());
        }
        let with_final: Vec<&str> = Workload::ALL
            .into_iter()
            .filter(|w| w.final_phase(&ids).is_some())
            .map(Workload::name)
            .collect();
        assert_eq!(with_final, ["broadcast", "g-counter", "kafka"]);
    }
}
