//! Run folders for the report tests, built with the checker's own types and
//! judged by the real checkers: a valid run, a run whose broker lost acknowledged
//! writes and diverged, a register run with a non-linearizable read, and a large run.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use checker::history::{Event, EventType, Process};
use checker::verdict::Results;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

const MS: u64 = 1_000_000;

/// What to break in a generated queue run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    Nothing,
    /// The last records of partition 0 are replaced (truncated, then overwritten by
    /// records no client sent) in the final drain and on nodes 1 and 2, while node 3
    /// keeps them, all committed (KIP-101): lost writes and replica divergence.
    TruncatedTail,
}

struct Gen {
    rng: ChaCha8Rng,
    events: Vec<(u64, u64, Event)>, // (time, tiebreak, event)
    seq: u64,
}

impl Gen {
    fn push(
        &mut self,
        time: u64,
        process: Process,
        kind: EventType,
        f: &str,
        value: Value,
        error: Option<&str>,
    ) {
        self.seq += 1;
        self.events.push((
            time,
            self.seq,
            Event {
                index: 0,
                time,
                process,
                kind,
                f: f.to_string(),
                value,
                error: error.map(str::to_string),
            },
        ));
    }
}

/// A queue run of `ops` client operations by `clients` clients over 2 partitions,
/// with kill, pause and partition faults, written into `dir`.
pub fn queue_run(dir: &Path, seed: u64, clients: u64, ops: usize, plant: Plant) -> Results {
    let mut g = Gen {
        rng: ChaCha8Rng::seed_from_u64(seed),
        events: Vec::new(),
        seq: 0,
    };
    let partitions = 2usize;
    let mut logs: Vec<Vec<Value>> = vec![Vec::new(); partitions];
    let step = 4 * MS; // between invocations, over all clients
    let duration = ops as u64 * step;
    let faults = [
        (0.15, 0.30, "kill", json!([2]), "restart"),
        (0.42, 0.52, "pause", json!([3]), "resume"),
        (
            0.62,
            0.78,
            "partition",
            json!({"topology": "isolate-one", "grudge": {"1": [2, 3, "controller"]}}),
            "heal",
        ),
    ];
    // As the nemesis records them: one info event when a fault starts, one when
    // it ends.
    for (a, b, f, targets, undo) in &faults {
        let (ta, tb) = ((duration as f64 * a) as u64, (duration as f64 * b) as u64);
        let nemesis = Process::Nemesis;
        g.push(ta, nemesis, EventType::Info, f, targets.clone(), None);
        g.push(tb, nemesis, EventType::Info, undo, targets.clone(), None);
    }
    let in_fault = |t: u64| {
        faults.iter().any(|(a, b, ..)| {
            t >= (duration as f64 * a) as u64 && t <= (duration as f64 * b) as u64
        })
    };
    let mut process: Vec<u64> = (0..clients).collect();
    let mut free_at = vec![0u64; clients as usize];
    let mut next_value = 0u64;
    for i in 0..ops {
        let slot = i % clients as usize;
        let t = (i as u64 * step).max(free_at[slot]);
        let p = Process::Client(process[slot]);
        let faulty = in_fault(t);
        let latency = if faulty {
            g.rng.random_range(5..400) * MS
        } else {
            g.rng.random_range(1..15) * MS + g.rng.random_range(0..MS)
        };
        let done = t + latency;
        free_at[slot] = done + MS;
        let part = g.rng.random_range(0..partitions);
        let roll: f64 = g.rng.random();
        let (fail_p, info_p) = if faulty { (0.25, 0.05) } else { (0.02, 0.003) };
        if g.rng.random_bool(0.6) {
            next_value += 1;
            let v = next_value;
            let inv = json!({"partition": part, "value": v});
            g.push(t, p, EventType::Invoke, "send", inv.clone(), None);
            if roll < fail_p {
                g.push(
                    done,
                    p,
                    EventType::Fail,
                    "send",
                    inv,
                    Some("NOT_ENOUGH_REPLICAS"),
                );
            } else if roll < fail_p + info_p {
                logs[part].push(json!(v));
                g.push(done, p, EventType::Info, "send", inv, Some("timeout"));
                process[slot] += clients;
            } else {
                let offset = logs[part].len();
                logs[part].push(json!(v));
                g.push(
                    done,
                    p,
                    EventType::Ok,
                    "send",
                    json!({"partition": part, "value": v, "offset": offset}),
                    None,
                );
            }
        } else {
            let len = logs[part].len();
            let from = if len == 0 {
                0
            } else {
                g.rng.random_range(0..=len)
            };
            let inv = json!({"partition": part, "offset": from});
            g.push(t, p, EventType::Invoke, "poll", inv.clone(), None);
            if roll < fail_p {
                g.push(done, p, EventType::Fail, "poll", inv, Some("NOT_LEADER"));
            } else {
                let records: Vec<Value> = (from..len.min(from + 10))
                    .map(|o| json!([o, logs[part][o]]))
                    .collect();
                g.push(
                    done,
                    p,
                    EventType::Ok,
                    "poll",
                    json!({"partition": part, "records": records}),
                    None,
                );
            }
        }
    }
    let end = g.events.iter().map(|e| e.0).max().unwrap_or(0) + 500 * MS;
    // The final drain, from the healed cluster.
    let keep_on_n3 = logs[0].clone();
    if plant == Plant::TruncatedTail {
        let n = logs[0].len();
        for (i, v) in logs[0].iter_mut().enumerate().skip(n.saturating_sub(2)) {
            *v = json!(-(i as i64) - 1);
        }
    }
    for (part, log) in logs.iter().enumerate() {
        let p = Process::Client(10_000 + part as u64);
        let t = end + part as u64 * 20 * MS;
        let inv = json!({"partition": part, "offset": 0});
        g.push(t, p, EventType::Invoke, "final-poll", inv, None);
        let records: Vec<Value> = log.iter().enumerate().map(|(o, v)| json!([o, v])).collect();
        g.push(
            t + 5 * MS,
            p,
            EventType::Ok,
            "final-poll",
            json!({"partition": part, "records": records, "high_watermark": log.len()}),
            None,
        );
    }
    g.events.sort_by_key(|e| (e.0, e.1));
    let events: Vec<Event> = g
        .events
        .into_iter()
        .enumerate()
        .map(|(i, (_, _, mut e))| {
            e.index = i as u64;
            e
        })
        .collect();

    // Final logs: nodes 1 and 2 hold the (possibly overwritten) logs; node 3 kept
    // partition 0's tail.
    let mut finals = BTreeMap::new();
    for node in ["1", "2", "3"] {
        let mut text = String::new();
        for (part, log) in logs.iter().enumerate() {
            let log = if node == "3" && part == 0 {
                &keep_on_n3
            } else {
                log
            };
            let records: Vec<Value> = log
                .iter()
                .enumerate()
                .map(|(o, v)| json!({"offset": o, "leader_epoch": 1, "key": null, "value": v}))
                .collect();
            let line = json!({"topic": "queue", "partition": part, "log_end_offset": log.len(),
                "high_watermark": log.len(), "records": records});
            text.push_str(&line.to_string());
            text.push('\n');
        }
        finals.insert(node.to_string(), text);
    }
    let replicas: Vec<_> = finals
        .iter()
        .flat_map(|(n, t)| checker::queue::parse_final_log(n, t).unwrap())
        .collect();
    let queue = checker::queue::check(&events, &replicas).expect("fixture history is well formed");
    let mut checkers = BTreeMap::new();
    checkers.insert("queue".to_string(), queue);
    let results = Results::new(checkers);
    write_folder(dir, "queue", seed, &events, &results, &finals);
    results
}

/// A register run in which a read returns a value overwritten before the read
/// began, judged by the real linearizability checker.
pub fn register_run(dir: &Path) -> Results {
    let c = Process::Client;
    let ev = |index: u64, time_ms: u64, p: Process, kind: EventType, f: &str, value: Value| Event {
        index,
        time: time_ms * MS,
        process: p,
        kind,
        f: f.to_string(),
        value,
        error: None,
    };
    use EventType::*;
    let events = vec![
        ev(
            0,
            10,
            c(0),
            Invoke,
            "write",
            json!({"key": "k1", "value": 1}),
        ),
        ev(1, 40, c(0), Ok, "write", json!({"key": "k1", "value": 1})),
        ev(
            2,
            60,
            c(1),
            Invoke,
            "write",
            json!({"key": "k1", "value": 2}),
        ),
        ev(3, 90, c(1), Ok, "write", json!({"key": "k1", "value": 2})),
        ev(
            4,
            95,
            Process::Nemesis,
            Invoke,
            "isolate-leader",
            json!([1]),
        ),
        ev(5, 97, Process::Nemesis, Ok, "isolate-leader", json!([1])),
        ev(
            6,
            110,
            c(2),
            Invoke,
            "read",
            json!({"key": "k1", "value": null}),
        ),
        ev(
            7,
            130,
            c(0),
            Invoke,
            "cas",
            json!({"key": "k1", "value": [2, 3]}),
        ),
        ev(8, 150, c(2), Ok, "read", json!({"key": "k1", "value": 1})),
        ev(
            9,
            190,
            c(0),
            Info,
            "cas",
            json!({"key": "k1", "value": [2, 3]}),
        ),
        ev(10, 300, Process::Nemesis, Invoke, "heal", Value::Null),
        ev(11, 302, Process::Nemesis, Ok, "heal", Value::Null),
    ];
    let results = checker::check::check(
        checker::format::Format::Jsonl,
        &events,
        checker::check::Model::CasRegister,
        &[],
        &checker::linear::Options::default(),
    )
    .expect("fixture history is well formed");
    write_folder(dir, "register", 7, &events, &results, &BTreeMap::new());
    results
}

/// Write run.json, history.jsonl, results.json and the nodes' final logs.
pub fn write_folder(
    dir: &Path,
    workload: &str,
    seed: u64,
    events: &[Event],
    results: &Results,
    finals: &BTreeMap<String, String>,
) {
    fs::create_dir_all(dir.join("nodes")).unwrap();
    let run = json!({
        "workload": workload,
        "seed": seed,
        "options": {"nodes": 3, "partitions": 2, "replication_factor": 3, "min_insync": 2,
                     "acks": "all", "truncation": "epoch", "workload": workload,
                     "nemesis": ["kill", "pause", "partition"], "time_limit": 60.0, "seed": seed},
        "command_line": ["watermark", "run", "--seed", seed.to_string()],
        "versions": {"watermark": "0.1.0", "broker": "broker 0.1.0"},
        "started_at": format!("2026-11-29T2{}:00:00Z", seed % 4),
        "ended_at": null,
        "outcome": null,
    });
    fs::write(
        dir.join("run.json"),
        serde_json::to_string_pretty(&run).unwrap(),
    )
    .unwrap();
    let mut text = String::new();
    for e in events {
        text.push_str(&e.to_json_line());
        text.push('\n');
    }
    fs::write(dir.join("history.jsonl"), text).unwrap();
    fs::write(
        dir.join("results.json"),
        serde_json::to_string_pretty(results).unwrap(),
    )
    .unwrap();
    for (node, text) in finals {
        let d = dir.join("nodes").join(node);
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("final-log.jsonl"), text).unwrap();
    }
}

/// A results directory with a valid, an invalid and a register run, plus a
/// folder whose files are broken.
pub fn results_dir(root: &Path) -> Vec<PathBuf> {
    let valid = root.join("queue-20261129T200000Z-s4");
    let invalid = root.join("queue-20261129T210000Z-s5");
    let register = root.join("register-20261129T230000Z-s7");
    queue_run(&valid, 4, 6, 600, Plant::Nothing);
    queue_run(&invalid, 5, 6, 600, Plant::TruncatedTail);
    register_run(&register);
    let broken = root.join("queue-20261129T190000Z-s9");
    fs::create_dir_all(&broken).unwrap();
    fs::write(broken.join("run.json"), "{\"workload\": \"queue\", ").unwrap();
    vec![valid, invalid, register, broken]
}

/// `watermark serve` as a child process, killed on drop.
pub struct Server {
    child: Child,
    pub addr: String,
}

impl Server {
    pub fn start(root: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_watermark"))
            .args(["serve", root.to_str().unwrap(), "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let _ = tx.send(line);
            // Keep draining, so the server never writes into a closed pipe.
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
        });
        let line = rx.recv_timeout(Duration::from_secs(60));
        let mut server = Server {
            child,
            addr: String::new(),
        };
        let line = line.expect("watermark serve printed nothing within 60 s");
        server.addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A small run folder as `watermark serve` lists it: run.json (started at
/// `started`, ended `outcome`) and, for a verdict, results.json (an invalid one
/// with a lost write).
pub fn tiny_run(dir: &Path, seed: u64, started: &str, outcome: &str) {
    fs::create_dir_all(dir).unwrap();
    let run = json!({"workload": "queue", "seed": seed, "started_at": started,
                     "ended_at": started, "outcome": outcome});
    fs::write(dir.join("run.json"), run.to_string()).unwrap();
    let results = match outcome {
        "valid" => json!({"valid": true, "checkers": {"queue": {"valid": true}}}),
        "invalid" => json!({"valid": false, "checkers": {"queue": {"valid": false,
            "anomalies": [{"kind": "lost-write", "message": "value 1 is missing"}]}}}),
        _ => return,
    };
    fs::write(dir.join("results.json"), results.to_string()).unwrap();
}

/// `2026-11-DDTHH:MM:00Z` and its folder-name form for run `i` of a sequence
/// spread over days 20–27, one every 7 minutes.
pub fn stamp(i: u64) -> (String, String) {
    let minutes = i * 7;
    let (day, hour, minute) = (20 + minutes / 1440 % 8, minutes / 60 % 24, minutes % 60);
    (
        format!("2026-11-{day:02}T{hour:02}:{minute:02}:00Z"),
        format!("202611{day:02}T{hour:02}{minute:02}00Z"),
    )
}

/// A results directory for serve's paging and campaign folders: `loose` run
/// folders (every fifth invalid), a `--test-count` series of `series` campaigns
/// (summary.json; every third invalid) and a self-test folder (`abort/seed-5/`
/// invalid, `clean/seed-5/` valid), the two campaign folders newest. Returns the
/// series' and the self-test's folder names.
pub fn campaigns_dir(root: &Path, loose: u64, series: u64) -> (String, String) {
    for i in 0..loose {
        let (at, compact) = stamp(i);
        let outcome = if i % 5 == 4 { "invalid" } else { "valid" };
        tiny_run(&root.join(format!("queue-{compact}-s{i}")), i, &at, outcome);
    }
    let series_name = "tests-queue-20261130T100000Z-s1000".to_string();
    let dir = root.join(&series_name);
    for i in 0..series {
        let at = format!("2026-11-30T10:{:02}:{:02}Z", i / 60, i % 60);
        let compact = format!("20261130T10{:02}{:02}Z", i / 60, i % 60);
        let outcome = if i % 3 == 2 { "invalid" } else { "valid" };
        tiny_run(
            &dir.join(format!("queue-{compact}-s{}", 1000 + i)),
            1000 + i,
            &at,
            outcome,
        );
    }
    fs::write(
        dir.join("summary.json"),
        json!({"workload": "queue", "seed": 1000, "test_count": series,
               "started_at": "2026-11-30T10:00:00.000Z", "outcome": "invalid"})
        .to_string(),
    )
    .unwrap();
    let selftest_name = "selftest-20261130T120000Z-s5".to_string();
    let dir = root.join(&selftest_name);
    tiny_run(
        &dir.join("abort/seed-5/queue-20261130T120000Z-s5"),
        5,
        "2026-11-30T12:00:00Z",
        "invalid",
    );
    tiny_run(
        &dir.join("clean/seed-5/queue-20261130T120100Z-s5"),
        5,
        "2026-11-30T12:01:00Z",
        "valid",
    );
    fs::write(dir.join("selftest.json"), "[]").unwrap();
    (series_name, selftest_name)
}
