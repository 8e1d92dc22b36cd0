//! What watermark's router costs a Maelstrom system: every message between nodes,
//! clients and services passes through it (read from a node's stdout, parsed,
//! routed, logged to messages.jsonl, written to the destination's stdin). Measured in
//! one run, against a baseline of the same node driven over a direct pipe:
//!
//! - latency: one request at a time, the median round trip of `echo` through the
//!   router and over the direct pipe — the difference is what the router adds;
//! - throughput: many clients at once on two nodes for a few seconds, messages
//!   routed per second (each echo is two: the request and its reply).
//!
//! `cargo bench -p watermark --bench router` (needs python3: the node is a few
//! lines of it, written here, answering `init` and `echo`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use maelstrom::message::Body;
use serde_json::json;
use watermark::store::{History, HistoryFile, Tally};
use watermark::system::System;
use watermark::system::maelstrom::{MaelstromCluster, MaelstromConfig};

/// The node: `init` and `echo`, one JSON line in, one out, flushed at once.
const NODE: &str = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    b = m["body"]
    r = {"in_reply_to": b.get("msg_id")}
    if b["type"] == "init":
        r["type"] = "init_ok"
    else:
        r["type"] = "echo_ok"
        r["echo"] = b.get("echo")
    sys.stdout.write(json.dumps({"src": m["dest"], "dest": m["src"], "body": r}) + "\n")
    sys.stdout.flush()
"#;

/// Round trips timed one at a time.
const ROUND_TRIPS: usize = 3000;
/// Clients at once, and for how long, in the throughput run.
const CLIENTS: u32 = 32;
const THROUGHPUT_FOR: Duration = Duration::from_secs(4);

fn main() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let node = dir.path().join("echo-node.py");
    std::fs::write(&node, NODE).expect("the node's script");
    let direct = direct_round_trips(&node);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let (routed, throughput) = rt.block_on(routed(&node, dir.path()));
    let (d, r) = (median(direct), median(routed));
    println!("router bench: python3 echo node, {ROUND_TRIPS} round trips one at a time");
    println!("  direct pipe     median round trip {:>8.1} µs", d * 1e6);
    println!("  through router  median round trip {:>8.1} µs", r * 1e6);
    println!(
        "  added by the router               {:>8.1} µs (median)",
        (r - d) * 1e6
    );
    println!(
        "  throughput: {CLIENTS} clients on 2 nodes for {:?}: {:.0} messages/s routed",
        THROUGHPUT_FOR, throughput
    );
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The node driven over its own stdin and stdout, no router.
fn direct_round_trips(node: &std::path::Path) -> Vec<f64> {
    let mut child = Command::new("python3")
        .arg(node)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut call = |body: serde_json::Value| {
        let msg = json!({"src": "c1", "dest": "n1", "body": body});
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        line.clear();
        stdout.read_line(&mut line).unwrap();
    };
    call(json!({"type": "init", "msg_id": 0, "node_id": "n1", "node_ids": ["n1"]}));
    let times = (0..ROUND_TRIPS)
        .map(|i| {
            let t = Instant::now();
            call(json!({"type": "echo", "msg_id": i + 1, "echo": format!("payload {i}")}));
            t.elapsed().as_secs_f64()
        })
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    times
}

/// The same node, two of them, behind the router: round trips one at a time, then
/// messages per second with many clients.
async fn routed(node: &std::path::Path, dir: &std::path::Path) -> (Vec<f64>, f64) {
    let origin = Instant::now();
    let history = Arc::new(History::new(
        HistoryFile::create(&dir.join("history.jsonl"), origin).expect("history"),
        Arc::new(Tally::default()),
    ));
    let config = MaelstromConfig {
        program: "python3".into(),
        args: vec![node.into()],
        nodes: 2,
        root: dir.join("nodes"),
        messages: dir.join("messages.jsonl"),
        origin,
        seed: 1,
        init_timeout: Duration::from_secs(10),
        setup: None,
        clocks: false,
        fault_fs: false,
        power_cut_on_kill: false,
    };
    let cluster = MaelstromCluster::start(config, CLIENTS, history)
        .await
        .expect("the nodes start");
    let requester = cluster.requester();
    let timeout = Duration::from_secs(5);
    let echo = |i: usize| Body::new("echo").with("echo", json!(format!("payload {i}")));
    let mut times = Vec::with_capacity(ROUND_TRIPS);
    for i in 0..ROUND_TRIPS {
        let t = Instant::now();
        let reply = requester.call("c1", "n1", echo(i), timeout, false).await;
        assert!(reply.is_some(), "the node answers");
        times.push(t.elapsed().as_secs_f64());
    }
    let started = Instant::now();
    let tasks: Vec<_> = (1..=CLIENTS)
        .map(|c| {
            let requester = cluster.requester();
            tokio::spawn(async move {
                let (client, dest) = (format!("c{c}"), format!("n{}", 1 + c % 2));
                let mut answered = 0u64;
                while started.elapsed() < THROUGHPUT_FOR {
                    let body = Body::new("echo").with("echo", json!(answered));
                    if requester
                        .call(&client, &dest, body, timeout, false)
                        .await
                        .is_some()
                    {
                        answered += 1;
                    }
                }
                answered
            })
        })
        .collect();
    let mut answered = 0;
    for t in tasks {
        answered += t.await.unwrap_or(0);
    }
    let per_second = 2.0 * answered as f64 / started.elapsed().as_secs_f64();
    let _ = cluster.shutdown().await;
    (times, per_second)
}
