//! The router's rules, line by line, on a node that is a real process but says
//! nothing (`sleep`): what it is handed is what the router wrote.

use std::sync::Arc;
use std::time::Instant;

use checker::history::Event;
use serde_json::json;
use tokio::sync::mpsc::unbounded_channel;
use tokio::sync::oneshot;

use super::*;
use crate::proc::Proc;
use crate::store::{HistoryFile, Tally};
use crate::system::maelstrom::messages::MessageLog;
use crate::system::maelstrom::network::Network;
use crate::system::maelstrom::node::{self, NodeSpec};

#[test]
fn clients_are_c_and_a_number() {
    assert!(is_client("c1") && is_client("c0") && is_client("c42"));
    assert!(!is_client("c") && !is_client("cx") && !is_client("n1"));
}

/// A router for two nodes, n1 a running (silent) process, n2 down.
struct Bench {
    router: Router,
    shared: Arc<Shared>,
    history: Arc<History>,
    _dir: tempfile::TempDir,
}

async fn bench() -> Bench {
    let dir = tempfile::tempdir().unwrap();
    let history = Arc::new(History::new(
        HistoryFile::create(&dir.path().join("history.jsonl"), Instant::now()).unwrap(),
        Arc::new(Tally::default()),
    ));
    let shared = Arc::new(Shared {
        slots: Mutex::new(vec![Slot::default(), Slot::default()]),
        net: Mutex::new(Network::new(2)),
        log: Mutex::new(MessageLog::create(None, Instant::now()).unwrap()),
        held: Mutex::new(HashSet::new()),
    });
    let (tx, _rx) = unbounded_channel();
    let spec = NodeSpec {
        id: "n1".into(),
        index: 0,
        program: "/bin/sleep".into(),
        args: vec!["30".into()],
        env: Vec::new(),
        dir: dir.path().join("n1"),
        stderr: dir.path().join("n1.stderr"),
    };
    let proc = node::start(&spec, 1, tx.clone()).await.unwrap();
    {
        let mut slots = lock(&shared.slots);
        slots[0].proc = Some(proc);
        slots[0].ready = true;
    }
    let ids = vec!["n1".to_string(), "n2".to_string()];
    let stderr = ids
        .iter()
        .map(|i| (i.clone(), dir.path().join(i)))
        .collect();
    let router = Router::new(shared.clone(), tx, ids, stderr, history.clone(), 1);
    Bench {
        router,
        shared,
        history,
        _dir: dir,
    }
}

impl Bench {
    fn line(&mut self, text: &str) {
        self.router
            .line(0, 1, text.as_bytes(), None, Instant::now());
    }

    fn errors(&self) -> Vec<Event> {
        self.history
            .events()
            .into_iter()
            .filter(|e| e.f == PROTOCOL_ERROR)
            .collect()
    }

    fn dropped(&self, why: &str) -> u64 {
        lock(&self.shared.log)
            .stats(0)
            .dropped_by
            .get(why)
            .copied()
            .unwrap_or(0)
    }
}

#[tokio::test]
async fn lines_that_are_no_message_of_the_node_are_protocol_errors() {
    let mut b = bench().await;
    b.line("not json\u{0}at all");
    b.line(r#"{"src":"n2","dest":"n1","body":{"type":"x"}}"#);
    b.line(r#"{"src":"n1","dest":"nowhere","body":{"type":"x"}}"#);
    b.line(r#"{"src":"n1","dest":"c3","body":{"type":"read_ok","in_reply_to":5}}"#);
    b.router.line(0, 1, b"{}", Some(3 << 20), Instant::now());
    let errors: Vec<String> = b
        .errors()
        .iter()
        .map(|e| e.value["error"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(errors.len(), 5, "{errors:?}");
    assert!(errors[0].contains("not JSON"));
    assert_eq!(b.errors()[0].value["line"], "not json\\u{0000}at all");
    assert!(errors[1].contains("message from `n2` written by n1"));
    assert!(errors[2].contains("unknown destination `nowhere`"));
    assert!(errors[3].contains("which it never sent"));
    assert!(errors[4].contains("longer than"));
    assert!(b.errors().iter().all(|e| e.value["node"] == "n1"));
    // A line of a life killed since is not the node's to answer for.
    b.router.line(
        0,
        7,
        br#"{"src":"n1","dest":"n1","body":{"type":"x"}}"#,
        None,
        Instant::now(),
    );
    assert_eq!(b.errors().len(), 5);
}

#[tokio::test]
async fn replies_reach_the_client_waiting_and_late_ones_are_dropped_as_late() {
    let mut b = bench().await;
    let (reply, rx) = oneshot::channel();
    b.router.pending.insert(("c3".into(), 5), reply);
    b.line(r#"{"src":"n1","dest":"c3","body":{"type":"read_ok","in_reply_to":5,"value":2}}"#);
    let got = rx.await.unwrap();
    assert_eq!(
        (got.kind.as_str(), got.get("value")),
        ("read_ok", Some(&json!(2)))
    );
    // A second answer to it (another node's, after a failover) is no error.
    b.line(r#"{"src":"n1","dest":"c3","body":{"type":"read_ok","in_reply_to":5,"value":2}}"#);
    assert_eq!(b.dropped("answered"), 1);
    b.router.abandoned.insert(("c3".into(), 6));
    b.line(r#"{"src":"n1","dest":"c3","body":{"type":"read_ok","in_reply_to":6}}"#);
    assert_eq!(b.dropped("late"), 1);
    assert!(b.errors().is_empty());
}

#[tokio::test]
async fn services_answer_through_the_network_and_partitions_cut_nodes() {
    let mut b = bench().await;
    // n1 asks lin-kv; the answer goes back to n1, a running process.
    b.line(r#"{"src":"n1","dest":"lin-kv","body":{"type":"write","msg_id":1,"key":1,"value":3}}"#);
    let s = lock(&b.shared.log).stats(0);
    assert_eq!(s.links["n1 -> lin-kv"].delivered, 1);
    assert_eq!(s.links["lin-kv -> n1"].delivered, 1);
    // n2 is down; and once cut, n1 cannot reach it.
    b.line(r#"{"src":"n1","dest":"n2","body":{"type":"gossip"}}"#);
    assert_eq!(b.dropped("node down"), 1);
    let all = [Proc::Node(1), Proc::Node(2)];
    lock(&b.shared.net).cut(&crate::net::Grudge::isolate(Proc::Node(1), &all));
    b.line(r#"{"src":"n1","dest":"n2","body":{"type":"gossip"}}"#);
    assert_eq!(b.dropped("partition"), 1);
    let s = lock(&b.shared.log).stats(0);
    assert_eq!(s.between_nodes, 2);
}

#[tokio::test]
async fn a_node_may_relay_a_clients_request_over_its_own_link() {
    let mut b = bench().await;
    // n1 passes c3's request on as it came (Maelstrom's Raft demo proxies so): no
    // protocol error, and it travels n1's link — a partition of n1 drops it.
    let all = [Proc::Node(1), Proc::Node(2)];
    lock(&b.shared.net).cut(&crate::net::Grudge::isolate(Proc::Node(1), &all));
    b.line(r#"{"src":"c3","dest":"n2","body":{"type":"read","msg_id":5,"key":1}}"#);
    assert!(b.errors().is_empty(), "{:?}", b.errors());
    assert_eq!(b.dropped("partition"), 1);
    // Speaking for a service is still refused.
    b.line(r#"{"src":"lin-kv","dest":"n2","body":{"type":"read_ok","in_reply_to":1}}"#);
    assert_eq!(b.errors().len(), 1);
}
