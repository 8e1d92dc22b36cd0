//! broadcast: clients `broadcast` unique integers to their nodes and `read` the
//! set of messages a node holds; after healing, every node is read once more
//! (`final-read`), and every acknowledged message must be there. Before the
//! workload starts, the harness sends each node a `topology` — its neighbours in
//! one of the shapes of [`Topology`] — which a node may use or ignore.
//!
//! History: `broadcast` invocation and `ok` `{"node":n,"message":m}`; `read` and
//! `final-read` invocation `{"node":n}`, `ok` `{"node":n,"messages":[...]}` (as the
//! node listed them). A `read_ok` without a `messages` array is malformed (`fail`:
//! a read changes nothing).

use std::collections::BTreeMap;

use rand::Rng;
use serde_json::{Value, json};

use super::final_reads::FinalReads;
use super::{Client, Completion, Reply, Request, Who, judge};
use crate::message::Body;

pub const OPERATIONS: [&str; 3] = ["broadcast", "read", "final-read"];

/// Each node's neighbours.
pub type Neighbours = BTreeMap<String, Vec<String>>;

/// The shapes of network a `topology` message can describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// Every node is every other's neighbour.
    Total,
    /// A chain: each node's neighbours are the nodes before and after it.
    Line,
    /// A square grid, filled row by row: up to four neighbours each (Maelstrom's default).
    Grid,
    /// A tree with this many children per node, filled breadth first.
    Tree(usize),
}

impl Topology {
    pub const DEFAULT: Topology = Topology::Grid;

    pub fn name(self) -> String {
        match self {
            Topology::Total => "total".into(),
            Topology::Line => "line".into(),
            Topology::Grid => "grid".into(),
            Topology::Tree(b) => format!("tree{b}"),
        }
    }

    /// `total`, `line`, `grid`, `tree` (binary) or `treeN`.
    pub fn from_name(name: &str) -> Option<Topology> {
        match name {
            "total" => Some(Topology::Total),
            "line" => Some(Topology::Line),
            "grid" => Some(Topology::Grid),
            "tree" => Some(Topology::Tree(2)),
            _ => name
                .strip_prefix("tree")?
                .parse()
                .ok()
                .filter(|b| *b >= 1)
                .map(Topology::Tree),
        }
    }

    /// Each node's neighbours; every link goes both ways.
    pub fn neighbours(self, node_ids: &[String]) -> Neighbours {
        let n = node_ids.len();
        let mut links: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut link = |a: usize, b: usize| {
            links[a].push(b);
            links[b].push(a);
        };
        match self {
            Topology::Total => (0..n).for_each(|a| (a + 1..n).for_each(|b| link(a, b))),
            Topology::Line => (1..n).for_each(|b| link(b - 1, b)),
            Topology::Grid => {
                let side = (1..=n).find(|s| s * s >= n).unwrap_or(1);
                for i in 0..n {
                    if (i + 1) % side != 0 && i + 1 < n {
                        link(i, i + 1);
                    }
                    if i + side < n {
                        link(i, i + side);
                    }
                }
            }
            Topology::Tree(b) => (1..n).for_each(|child| link((child - 1) / b.max(1), child)),
        }
        node_ids
            .iter()
            .zip(links)
            .map(|(id, mut l)| {
                l.sort_unstable();
                (
                    id.clone(),
                    l.into_iter().map(|i| node_ids[i].clone()).collect(),
                )
            })
            .collect()
    }
}

/// The `topology` body sent to every node before the workload starts.
pub fn topology_body(neighbours: &Neighbours) -> Body {
    Body::new("topology").with("topology", json!(neighbours))
}

/// Whether a node's answer to `topology` is the `topology_ok` expected.
pub fn check_topology_ok(body: &Body) -> Result<(), String> {
    match crate::error::ErrorReply::from_body(body) {
        Some(e) => Err(format!("the node refused its topology: {}", e.describe())),
        None if body.kind == "topology_ok" => Ok(()),
        None => Err(format!("expected topology_ok, got {}", body.kind)),
    }
}

/// A broadcast client: half broadcasts of unique values, half reads.
pub struct BroadcastClient {
    who: Who,
    sent: u64,
}

impl BroadcastClient {
    pub(crate) fn new(who: Who) -> BroadcastClient {
        BroadcastClient { who, sent: 0 }
    }
}

/// Record a `read_ok`: the node and its messages.
fn read_messages(request: &Request, body: &Body) -> Result<Value, String> {
    match body.get("messages") {
        Some(Value::Array(m)) => Ok(json!({"node": request.dest, "messages": m})),
        _ => Err("without a messages array".into()),
    }
}

impl Client for BroadcastClient {
    fn next_request(&mut self) -> Request {
        if self.who.rng.random_bool(0.5) {
            let message = self.who.unique(self.sent);
            self.sent += 1;
            let value = json!({"node": self.who.node, "message": message});
            let body = Body::new("broadcast").with("message", message);
            self.who.request("broadcast", value, body, false)
        } else {
            let value = json!({"node": self.who.node});
            self.who.request("read", value, Body::new("read"), true)
        }
    }

    fn complete(&mut self, request: &Request, reply: Reply<'_>) -> Completion {
        match request.f {
            "broadcast" => judge(request, reply, "broadcast_ok", |_| {
                Ok(request.value.clone())
            }),
            _ => judge(request, reply, "read_ok", |b| read_messages(request, b)),
        }
    }
}

/// One final read of every node.
pub fn final_reads(node_ids: &[String]) -> FinalReads {
    FinalReads::new(node_ids, read_messages)
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::workload::FinalPhase;
    use checker::history::EventType;

    fn shape(t: Topology, n: usize) -> Vec<(String, Vec<String>)> {
        t.neighbours(&nodes(n)).into_iter().collect()
    }

    fn of(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn topologies_have_the_shapes_they_are_named_for() {
        let line = Topology::Line.neighbours(&nodes(3));
        assert_eq!(line["n1"], of(&["n2"]));
        assert_eq!(line["n2"], of(&["n1", "n3"]));
        let total = Topology::Total.neighbours(&nodes(3));
        assert_eq!(total["n2"], of(&["n1", "n3"]));
        // 5 nodes in a 3-wide grid: n1 n2 n3 / n4 n5.
        let grid = Topology::Grid.neighbours(&nodes(5));
        assert_eq!(grid["n1"], of(&["n2", "n4"]));
        assert_eq!(grid["n3"], of(&["n2"]));
        assert_eq!(grid["n5"], of(&["n2", "n4"]));
        let tree = Topology::Tree(2).neighbours(&nodes(5));
        assert_eq!(tree["n1"], of(&["n2", "n3"]));
        assert_eq!(tree["n2"], of(&["n1", "n4", "n5"]));
    }

    #[test]
    fn every_topology_is_symmetric_and_connected() {
        for t in [
            Topology::Total,
            Topology::Line,
            Topology::Grid,
            Topology::Tree(3),
        ] {
            for n in 1..12 {
                let m: Neighbours = shape(t, n).into_iter().collect();
                for (a, ns) in &m {
                    assert!(!ns.contains(a));
                    for b in ns {
                        assert!(m[b].contains(a), "{} {n}: {a}-{b}", t.name());
                    }
                }
                let mut seen = vec!["n1".to_string()];
                let mut i = 0;
                while i < seen.len() {
                    for b in &m[&seen[i]] {
                        if !seen.contains(b) {
                            seen.push(b.clone());
                        }
                    }
                    i += 1;
                }
                assert_eq!(seen.len(), n, "{} of {n} is not connected", t.name());
            }
        }
    }

    #[test]
    fn topology_names_round_trip() {
        for t in [
            Topology::Total,
            Topology::Line,
            Topology::Grid,
            Topology::Tree(4),
        ] {
            assert_eq!(Topology::from_name(&t.name()), Some(t));
        }
        assert_eq!(Topology::from_name("tree"), Some(Topology::Tree(2)));
        assert_eq!(Topology::from_name("tree0"), None);
        assert_eq!(Topology::from_name("star"), None);
        let b = topology_body(&Topology::Line.neighbours(&nodes(2)));
        assert_eq!(
            b.get("topology"),
            Some(&json!({"n1": ["n2"], "n2": ["n1"]}))
        );
        assert!(check_topology_ok(&reply("topology_ok", json!({}))).is_ok());
        assert!(check_topology_ok(&error(10)).is_err());
    }

    #[test]
    fn clients_broadcast_unique_values_and_read() {
        let mut c = BroadcastClient::new(Who::new(2, &nodes(2), 1, 2));
        let reqs: Vec<Request> = (0..40).map(|_| c.next_request()).collect();
        let sent: Vec<u64> = reqs
            .iter()
            .filter(|r| r.f == "broadcast")
            .map(|r| r.body.get("message").unwrap().as_u64().unwrap())
            .collect();
        assert!(sent.len() > 5 && sent.len() < 35);
        assert!(sent.iter().enumerate().all(|(k, m)| *m == 1 + 2 * k as u64));
        let read = reqs.iter().find(|r| r.f == "read").unwrap();
        assert!(read.idempotent);
        let done = c.complete(
            read,
            Reply::Body(&reply("read_ok", json!({"messages": [3, 1]}))),
        );
        assert_eq!(done.value, json!({"node": "n2", "messages": [3, 1]}));
        let bad = c.complete(read, Reply::Body(&reply("read_ok", json!({"messages": 3}))));
        assert_eq!(bad.kind, EventType::Fail);
        let b = reqs.iter().find(|r| r.f == "broadcast").unwrap();
        let ok = c.complete(b, Reply::Body(&reply("broadcast_ok", json!({}))));
        assert_eq!((ok.kind, &ok.value), (EventType::Ok, &b.value));
        assert_eq!(c.complete(b, Reply::Timeout).kind, EventType::Info);
    }

    #[test]
    fn the_final_phase_reads_every_node() {
        let mut f = final_reads(&nodes(3));
        let mut read = Vec::new();
        while let Some(r) = f.next_request() {
            read.push(r.dest.clone());
            f.complete(&r, Reply::Body(&reply("read_ok", json!({"messages": []}))));
        }
        assert_eq!(read, ["n1", "n2", "n3"]);
    }
}
