//! `watermark run --bin`: the fixture nodes of fixtures/maelstrom (Python, standard
//! library only, run through their shebang) under watermark's network, faults and
//! checkers, over real processes. The correct nodes are judged valid, the broken
//! ones are caught — each fault that catches one played from a schedule file, so
//! that it happens whatever the machine's load — a node that breaks the protocol
//! does not break the harness, and a binary that cannot run is refused before
//! anything starts. No node outlives its run.
//!
//! The campaigns run side by side: they spend their time waiting on their nodes and
//! clocks, not computing (a few seconds of CPU each).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{read_json, run_folder, text, watermark};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(300);

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/maelstrom")
        .join(name);
    p.to_string_lossy().into_owned()
}

/// A results folder that is removed when the test passes, and kept (its path
/// printed) when it fails, for its watermark.log and messages.jsonl.
struct Results(PathBuf);

impl Drop for Results {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("the run is kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A campaign of `node` into a fresh results folder: its output and run folder.
fn campaign(node: &str, args: &[&str]) -> (std::process::Output, PathBuf, Results) {
    let results = Results(
        tempfile::Builder::new()
            .prefix("wm-mael-")
            .tempdir()
            .unwrap()
            .keep(),
    );
    let bin = fixture(node);
    let mut all = vec!["run", "--bin", &bin, "--results"];
    let r = results.0.to_string_lossy().into_owned();
    all.push(&r);
    // The fixture nodes gossip every 0.1 s: a second settles any of them (the
    // default, Maelstrom's 10 s, is for nodes that share their state slowly).
    all.extend(["--settle", "1"]);
    all.extend_from_slice(args);
    let out = watermark(&all, LIMIT);
    assert_no_node_left(&results.0);
    let folder = run_folder(&results.0);
    (out, folder, results)
}

/// A schedule file of these fault lines, in `dir`.
fn schedule(dir: &Path, faults: &[&str]) -> String {
    let path = dir.join("schedule-in.json");
    let text = format!(
        "{{\"schedule\": 1, \"faults\": [\n{}\n]}}\n",
        faults.join(",\n")
    );
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// No process runs in a directory under `root` (every node works in its own,
/// under the run folder), within a bounded wait.
fn assert_no_node_left(root: &Path) {
    let root = std::fs::canonicalize(root).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let cwd = std::fs::read_link(e.path().join("cwd")).ok()?;
                cwd.starts_with(&root)
                    .then(|| format!("{:?} in {}", e.file_name(), cwd.display()))
            })
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "nodes left behind: {left:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn anomalies(results: &Value, checker: &str, kind: &str) -> usize {
    results["checkers"][checker]["anomalies"]
        .as_array()
        .map_or(0, |a| a.iter().filter(|x| x["kind"] == kind).count())
}

#[test]
fn echo_nodes_are_valid_and_the_run_folder_has_every_file() {
    let (out, folder, _tmp) = campaign(
        "echo.py",
        &[
            "-w",
            "echo",
            "-n",
            "2",
            "-t",
            "4",
            "--rate",
            "20",
            "--nemesis",
            "none",
            "--seed",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for f in [
        "run.json",
        "history.jsonl",
        "results.json",
        "report.html",
        "junit.xml",
        "watermark.log",
        "schedule.json",
        "messages.jsonl",
        "nodes/n1/stderr.log",
        "nodes/n2/stderr.log",
    ] {
        assert!(folder.join(f).is_file(), "no {f} in {}", folder.display());
    }
    let run = read_json(&folder.join("run.json"));
    assert_eq!(run["workload"], "echo");
    assert!(run["options"]["bin"].as_str().unwrap().ends_with("echo.py"));
    assert_eq!(
        run["options"]["bin_sha256"].as_str().map(str::len),
        Some(64)
    );
    let results = read_json(&folder.join("results.json"));
    assert_eq!(results["checkers"]["echo"]["valid"], true);
    let net = &results["network"];
    let sent = net["total"]["sent"].as_u64().unwrap();
    assert!(sent >= 20, "{net}");
    assert_eq!(net["total"]["dropped"], 0, "{net}");
    assert!(
        net["links"]["c1 -> n1"]["sent"].as_u64().unwrap() > 0,
        "{net}"
    );
    let lines = std::fs::read_to_string(folder.join("messages.jsonl")).unwrap();
    assert_eq!(lines.lines().count() as u64, sent);
    let first: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert!(
        first["sent"].is_u64() && first["body"]["type"].is_string(),
        "{first}"
    );
}

/// Clock faults from outside the node: libfaketime moves its wall clock. A node
/// that makes its ids from the wall clock gives some twice once its clock is stepped
/// back; one that counts is valid on the same schedule. The history records the
/// step and its end, the node's clock control file sits in its working directory.
#[test]
fn a_clock_stepped_back_makes_wall_clock_ids_repeat() {
    let tmp = tempfile::tempdir().unwrap();
    let step = schedule(
        tmp.path(),
        &[r#"{"at": 2, "fault": "clock-step", "target": "n1", "offset_ms": -2000, "for": 2}"#],
    );
    let args = [
        "-w",
        "unique-ids",
        "-n",
        "3",
        "-t",
        "5",
        "--rate",
        "60",
        "--seed",
        "4",
        "--schedule",
        &step,
    ];
    let (out, folder, _t1) = campaign("unique_ids_clock.py", &args);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let results = read_json(&folder.join("results.json"));
    assert!(
        anomalies(&results, "unique-ids", "duplicate-id") > 0,
        "{results}"
    );
    assert!(folder.join("nodes/n1/clock").is_file());
    let history = std::fs::read_to_string(folder.join("history.jsonl")).unwrap();
    let nemesis: Vec<Value> = history
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["process"] == "nemesis" && e["f"] != "plan")
        .collect();
    let fs: Vec<&str> = nemesis.iter().filter_map(|e| e["f"].as_str()).collect();
    assert_eq!(fs, ["clock-step", "clock-reset"], "{nemesis:?}");
    assert_eq!(nemesis[0]["value"]["offset_ms"], -2000, "{nemesis:?}");

    let (out, _, _t2) = campaign("unique_ids.py", &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// Storage faults from outside the node: its working directory is a fault
/// filesystem, and power cuts drop what it did not fsync. broadcast.py fsyncs before
/// it acknowledges and loses nothing; with --no-fsync it loses messages once every
/// node's power is cut. Each cut is in the history with what it dropped.
#[test]
fn power_cuts_lose_what_a_node_did_not_fsync() {
    let tmp = tempfile::tempdir().unwrap();
    let cuts = schedule(
        tmp.path(),
        &[
            r#"{"at": 2, "fault": "lose-unflushed", "target": "n1", "for": 0.5}"#,
            r#"{"at": 4, "fault": "crash-all", "for": 1}"#,
        ],
    );
    let args = [
        "-w",
        "broadcast",
        "-n",
        "3",
        "-t",
        "6",
        "--rate",
        "20",
        "--seed",
        "8",
        "--schedule",
        &cuts,
    ];
    let mut unsynced = args.to_vec();
    unsynced.extend(["--bin-arg", "--no-fsync"]);
    let ((out, folder, _t1), (bad, bad_folder, _t2)) = std::thread::scope(|s| {
        let good = s.spawn(|| campaign("broadcast.py", &args));
        let bad = s.spawn(|| campaign("broadcast.py", &unsynced));
        (good.join().unwrap(), bad.join().unwrap())
    });
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(folder.join("nodes/n1/disk").is_dir(), "the node's files");
    let history = std::fs::read_to_string(folder.join("history.jsonl")).unwrap();
    let cuts = history
        .lines()
        .filter(|l| l.contains("\"power-cut\""))
        .count();
    assert_eq!(cuts, 4, "n1's, then every node's: {history}");
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad));
    let results = read_json(&bad_folder.join("results.json"));
    assert!(
        anomalies(&results, "broadcast", "lost-write") > 0,
        "{results}"
    );
}

#[test]
fn unique_ids_are_valid_under_kills_and_duplicates_are_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let kills = schedule(
        tmp.path(),
        &[
            r#"{"at": 1, "fault": "kill", "target": "n1", "for": 1}"#,
            r#"{"at": 3, "fault": "kill", "target": "n2", "for": 1}"#,
        ],
    );
    let args = [
        "-w",
        "unique-ids",
        "-n",
        "3",
        "-t",
        "5",
        "--rate",
        "30",
        "--seed",
        "2",
    ];
    let mut good = args.to_vec();
    good.extend(["--schedule", &kills]);
    let (out, folder, _t1) = campaign("unique_ids.py", &good);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let results = read_json(&folder.join("results.json"));
    assert_eq!(results["network"]["restarts"], 2, "{}", results["network"]);

    let (out, folder, _t2) = campaign("unique_ids_dup.py", &args);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let results = read_json(&folder.join("results.json"));
    assert!(anomalies(&results, "unique-ids", "duplicate-id") > 0);
}

#[test]
fn broadcast_survives_a_partition_and_a_kill_and_a_node_that_never_gossips_is_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let faults = schedule(
        tmp.path(),
        &[
            r#"{"at": 1, "fault": "partition", "isolate": "n2", "for": 2}"#,
            r#"{"at": 3.5, "fault": "kill", "target": "n3", "for": 1}"#,
        ],
    );
    let args = [
        "-w",
        "broadcast",
        "-n",
        "3",
        "-t",
        "6",
        "--rate",
        "20",
        "--seed",
        "8",
    ];
    let mut good = args.to_vec();
    good.extend(["--schedule", &faults]);
    let (out, folder, _t1) = campaign("broadcast.py", &good);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let results = read_json(&folder.join("results.json"));
    let net = &results["network"];
    assert!(
        net["dropped_by"]["partition"].as_u64().unwrap_or(0) > 0,
        "{net}"
    );
    assert!(net["between_nodes"].as_u64().unwrap() > 0, "{net}");
    let history = std::fs::read_to_string(folder.join("history.jsonl")).unwrap();
    let final_reads = history
        .lines()
        .filter(|l| l.contains("\"final-read\"") && l.contains("\"type\":\"ok\""))
        .count();
    assert_eq!(final_reads, 3, "every node is read once healed");
    // Maelstrom's topology before any request, and again to the restarted node.
    let messages = std::fs::read_to_string(folder.join("messages.jsonl")).unwrap();
    let mut topologies: Vec<String> = messages
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["body"]["type"] == "topology")
        .filter_map(|m| m["dest"].as_str().map(String::from))
        .collect();
    topologies.sort();
    assert_eq!(topologies, ["n1", "n2", "n3", "n3"], "{topologies:?}");

    let mut bad = args.to_vec();
    bad.extend(["--nemesis", "none"]);
    let (out, folder, _t2) = campaign("broadcast_no_gossip.py", &bad);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let results = read_json(&folder.join("results.json"));
    assert!(
        anomalies(&results, "broadcast", "lost-write") > 0,
        "{results}"
    );
}

/// Nodes that keep their state in the harness's services: kafka's logs in lin-kv,
/// g-counter's sums in seq-kv.
#[test]
fn nodes_built_on_the_services_are_valid_through_kills_and_a_partition() {
    let tmp = tempfile::tempdir().unwrap();
    let faults = schedule(
        tmp.path(),
        &[
            r#"{"at": 1, "fault": "kill", "target": "n1", "for": 1}"#,
            r#"{"at": 2.5, "fault": "partition", "isolate": "n2", "for": 1.5}"#,
            r#"{"at": 4, "fault": "kill", "target": "n3", "for": 0.5}"#,
        ],
    );
    for (node, workload, service) in [
        ("kafka.py", "kafka", "lin-kv"),
        ("g_counter.py", "g-counter", "seq-kv"),
    ] {
        let args = [
            "-w",
            workload,
            "-n",
            "3",
            "-t",
            "5",
            "--rate",
            "20",
            "--seed",
            "9",
            "--schedule",
            &faults,
        ];
        let (out, folder, _t) = campaign(node, &args);
        assert_eq!(out.status.code(), Some(0), "{node}: {}", text(&out));
        let results = read_json(&folder.join("results.json"));
        let net = &results["network"];
        assert_eq!(net["restarts"], 2, "{node}: {net}");
        let to_service = net["links"]["n1 -> ".to_string() + service]["delivered"].as_u64();
        assert!(
            to_service.unwrap_or(0) > 0,
            "{node} never reached {service}: {net}"
        );
        let history = std::fs::read_to_string(folder.join("history.jsonl")).unwrap();
        let finals = ["\"final-poll\"", "\"final-read\""];
        assert!(
            history
                .lines()
                .any(|l| finals.iter().any(|f| l.contains(f)) && l.contains("\"type\":\"ok\"")),
            "{node}: no final phase"
        );
    }
}

#[test]
fn raft_lin_kv_is_linearizable_through_a_partition_a_kill_and_a_pause() {
    let tmp = tempfile::tempdir().unwrap();
    let faults = schedule(
        tmp.path(),
        &[
            r#"{"at": 2, "fault": "partition", "isolate": "n1", "for": 3}"#,
            r#"{"at": 6, "fault": "kill", "target": "n2", "for": 2}"#,
            r#"{"at": 9, "fault": "pause", "target": "n3", "for": 2}"#,
        ],
    );
    let (out, folder, _t) = campaign(
        "lin_kv_raft.py",
        &[
            "-w",
            "lin-kv",
            "-n",
            "3",
            "-t",
            "12",
            "--rate",
            "20",
            "--seed",
            "3",
            // One client per node keeps the checker's search small on a loaded
            // machine, and its budget below the test's own limit.
            "--concurrency",
            "3",
            "--checker-time-limit",
            "60",
            "--schedule",
            &faults,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let results = read_json(&folder.join("results.json"));
    assert_eq!(results["checkers"]["linearizable"]["valid"], true);
    let net = &results["network"];
    assert!(
        net["dropped_by"]["partition"].as_u64().unwrap_or(0) > 0,
        "{net}"
    );
    assert_eq!(net["restarts"], 1, "{net}");
    for f in ["partition", "heal", "kill", "restart", "pause", "resume"] {
        assert_eq!(net["nemesis_events"][f], 1, "{f}: {net}");
    }
}

#[test]
fn stale_reads_of_a_partitioned_node_are_nonlinearizable() {
    let tmp = tempfile::tempdir().unwrap();
    let faults = schedule(
        tmp.path(),
        &[r#"{"at": 1, "fault": "partition", "isolate": "n1", "for": 7}"#],
    );
    let (out, folder, _t) = campaign(
        "lin_kv_stale.py",
        &[
            "-w",
            "lin-kv",
            "-n",
            "3",
            "-t",
            "9",
            "--rate",
            "30",
            "--seed",
            "4",
            // One client per node keeps the checker's search small on a loaded
            // machine, and its budget below the test's own limit.
            "--concurrency",
            "3",
            "--checker-time-limit",
            "60",
            "--schedule",
            &faults,
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let results = read_json(&folder.join("results.json"));
    assert!(
        anomalies(&results, "linearizable", "nonlinearizable") > 0,
        "{results}"
    );
    // The report draws the messages around the anomaly's operations, linked to them.
    let html = std::fs::read_to_string(folder.join("report.html")).unwrap();
    assert!(
        html.contains(r#"<h2 id="messages">"#),
        "no message statistics"
    );
    assert!(html.contains(r#"id="messages-0""#), "no message picture");
    assert!(html.contains("-seq-op-"), "the picture shows no operation");
}

#[test]
fn a_lossy_kafka_loses_acknowledged_sends_when_its_nodes_are_killed() {
    let tmp = tempfile::tempdir().unwrap();
    let kills = schedule(
        tmp.path(),
        &[
            r#"{"at": 2, "fault": "kill", "target": "n1", "for": 1}"#,
            r#"{"at": 4, "fault": "kill", "target": "n2", "for": 1}"#,
            r#"{"at": 6, "fault": "kill", "target": "n3", "for": 1}"#,
        ],
    );
    let (out, folder, _t) = campaign(
        "kafka_lossy.py",
        &[
            "-w",
            "kafka",
            "-n",
            "3",
            "-t",
            "8",
            "--rate",
            "30",
            "--seed",
            "5",
            "--schedule",
            &kills,
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let results = read_json(&folder.join("results.json"));
    assert!(anomalies(&results, "kafka", "lost-write") > 0, "{results}");
}

#[test]
fn a_node_that_breaks_the_protocol_and_exits_is_judged_not_fatal() {
    let (out, folder, _t) = campaign(
        "garbage.py",
        &[
            "-w",
            "echo",
            "-n",
            "1",
            "-t",
            "5",
            "--rate",
            "10",
            "--nemesis",
            "none",
            "--seed",
            "6",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let results = read_json(&folder.join("results.json"));
    assert!(
        anomalies(&results, "protocol", "protocol-error") >= 12,
        "{results}"
    );
    assert!(anomalies(&results, "crashes", "crash") >= 1, "{results}");
    let history = std::fs::read_to_string(folder.join("history.jsonl")).unwrap();
    let errors: Vec<Value> = history
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["f"] == "protocol-error")
        .collect();
    let said = |needle: &str| {
        errors
            .iter()
            .any(|e| e["value"]["error"].as_str().unwrap().contains(needle))
    };
    for needle in [
        "not JSON",
        "no `src`",
        "no `body.type`",
        "unknown destination",
        "never sent",
        "not UTF-8",
        "longer than",
    ] {
        assert!(
            said(needle),
            "no protocol error saying {needle}: {errors:#?}"
        );
    }
    assert!(
        errors
            .iter()
            .all(|e| e["value"]["node"] == "n1" && e["time"].is_u64())
    );
    let crash = history
        .lines()
        .find(|l| l.contains("\"f\":\"crash\""))
        .unwrap();
    assert!(
        crash.contains("exited with code 3") && crash.contains("nodes/n1/stderr.log"),
        "{crash}"
    );
    // What the node wrote is quoted, never copied raw: no NUL reaches the report.
    let html = std::fs::read(folder.join("report.html")).unwrap();
    assert!(!html.contains(&0), "a NUL byte in report.html");
    assert!(String::from_utf8(html).is_ok(), "report.html is not UTF-8");
    // `watermark check` of the folder judges the protocol errors as the run did.
    let check = watermark(&["check", folder.to_str().unwrap()], LIMIT);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check));
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(said.contains("protocol-error"), "{}", text(&check));
}

#[test]
fn a_node_that_exits_before_init_stops_the_run_naming_it_and_its_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let node = tmp.path().join("dies.sh");
    std::fs::write(
        &node,
        "#!/bin/sh\necho 'cannot open my config' >&2\nexit 7\n",
    )
    .unwrap();
    std::fs::set_permissions(&node, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let results = tmp.path().join("results");
    let out = watermark(
        &[
            "run",
            "--bin",
            node.to_str().unwrap(),
            "-w",
            "echo",
            "-t",
            "2",
            "--results",
            results.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("node n1") && said.contains("before answering init"),
        "{}",
        text(&out)
    );
    assert!(said.contains("cannot open my config"), "{}", text(&out));
    assert_no_node_left(&results);
}

#[test]
fn a_binary_that_cannot_run_is_refused_before_anything_starts() {
    let results = tempfile::tempdir().unwrap();
    let r = results.path().to_string_lossy().into_owned();
    let missing = results
        .path()
        .join("no-such-node")
        .to_string_lossy()
        .into_owned();
    let readme = fixture("README.md");
    for (bin, says) in [(&missing, "no such file"), (&readme, "not executable")] {
        let out = watermark(&["run", "--bin", bin, "-w", "echo", "--results", &r], LIMIT);
        assert_eq!(out.status.code(), Some(64), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{}",
            text(&out)
        );
    }
    let echo = fixture("echo.py");
    let out = watermark(
        &["run", "--bin", &echo, "-w", "register", "--results", &r],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(64), "{}", text(&out));
    assert_eq!(
        std::fs::read_dir(results.path()).unwrap().count(),
        0,
        "a run folder was made"
    );
}
