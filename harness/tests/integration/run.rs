//! `watermark run` end to end, over real broker processes: a default campaign runs
//! the queue and the register together, is valid, leaves a complete run folder, and
//! `watermark check` judges that folder by both checkers as the run did; pre-0.11 truncation under kills and
//! leader isolation loses or diverges data and the checker says so; a harness
//! SIGKILLed mid-run leaves no process behind and a checkable history; bad options
//! exit 64.
//!
//! Every wait is bounded, and every child is killed on the way out (the watermark
//! process through a guard; its brokers die with it by PR_SET_PDEATHSIG).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{
    Guard, WATERMARK, assert_no_process_left, processes_mentioning, read_json, run_folder, text,
    watermark,
};
use serde_json::Value;

#[test]
fn bad_options_exit_64() {
    for args in [
        &["run", "--nodes", "0"][..],
        &["run", "--acks", "2"],
        &["run", "--nemesis", "kill,meteor"],
        &["run", "--nemesis", "replication,kill"],
        &["run", "--workload", "register", "--acks", "1"],
        &["run", "--scenario", "no-such-scenario"],
        &["run", "--scenario", "kip101-data-loss", "--nodes", "2"],
        &["run", "--min-insync", "4"],
        &["run", "--time-limit", "soon"],
        &["run", "--checker-time-limit", "0"],
        &["run", "--no-such-option"],
        &["replay", "/nonexistent/run-folder"],
    ] {
        let out = watermark(args, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(64), "{args:?}\n{}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.trim().is_empty(), "{args:?}: no message");
        assert!(!stderr.contains("panicked"), "{args:?}\n{stderr}");
    }
}

#[test]
fn a_default_run_is_valid_and_leaves_a_complete_run_folder() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let out = watermark(
        &[
            "run",
            "--time-limit",
            "20",
            "--seed",
            "42",
            "--results",
            dir,
        ],
        Duration::from_secs(300),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let folder = run_folder(results.path());
    let name = folder.file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        name.starts_with("mixed-") && name.ends_with("Z-s42"),
        "run folder {name}"
    );

    let run = read_json(&folder.join("run.json"));
    assert_eq!(run["seed"], 42);
    assert_eq!(run["workload"], "mixed");
    assert_eq!(run["options"]["linearizable_reads"], true);
    assert_eq!(run["options"]["nodes"], 3);
    assert_eq!(run["options"]["concurrency"], 6);
    assert_eq!(run["options"]["checker_time_limit"], 120.0);
    assert_eq!(
        run["options"]["nemesis"],
        serde_json::json!(["replication"])
    );
    assert_eq!(run["outcome"], "valid");
    assert!(run["ended_at"].is_string());
    assert!(Path::new(run["broker_bin"].as_str().unwrap()).is_file());

    for file in ["report.html", "junit.xml"] {
        assert!(
            folder.join(file).is_file(),
            "no {file} in {}",
            folder.display()
        );
    }
    // One history, each workload judged by its own checker.
    let results_json = read_json(&folder.join("results.json"));
    assert_eq!(results_json["valid"], true, "{results_json}");
    let checkers = results_json["checkers"].as_object().unwrap();
    // (Beside them, the harness's availability verdict when a plan promised one.)
    assert_eq!(
        checkers
            .keys()
            .filter(|k| *k != "availability")
            .collect::<Vec<_>>(),
        ["linearizable", "queue"],
        "{results_json}"
    );
    assert!(checkers["linearizable"]["stats"]["ops"].as_u64().unwrap() > 100);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("checker queue: valid") && stdout.contains("checker linearizable: valid"),
        "{stdout}"
    );

    let history = std::fs::read_to_string(folder.join("history.jsonl")).unwrap();
    let events: Vec<Value> = history
        .lines()
        .map(|l| serde_json::from_str(l).expect("a history line is JSON"))
        .collect();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["index"], i as u64);
    }
    let count = |f: &str, t: &str| {
        events
            .iter()
            .filter(|e| e["f"] == f && e["type"] == t)
            .count()
    };
    assert!(count("send", "ok") > 100, "too few acknowledged sends");
    assert!(count("poll", "ok") > 100, "too few polls");
    assert!(count("read", "ok") > 50, "too few register reads");
    assert!(
        count("write", "ok") + count("cas", "ok") > 50,
        "too few writes"
    );
    // Workers 0..3 run the queue, 3..6 the register: process p is worker p mod 6;
    // the burst producers, processes from 2^20 on, only send.
    let burst = 1u64 << 20;
    for e in events.iter().filter(|e| e["process"].is_u64()) {
        let p = e["process"].as_u64().unwrap();
        let f = e["f"].as_str().unwrap();
        match f {
            _ if f == "final-poll" => {}
            // The register's final reads, by processes no worker used.
            "read" if e["value"]["final"] == true => {}
            "send" if p >= burst => {}
            _ if p >= burst => panic!("a burst producer only sends: {e}"),
            "send" | "poll" => assert!(p % 6 < 3, "{e}"),
            "read" | "write" | "cas" => assert!(p % 6 >= 3, "{e}"),
            _ => panic!("unexpected operation {e}"),
        }
    }
    // Kafka's default producers beside plain ones, and a load burst within 20 s.
    assert_eq!(run["options"]["producers"], "kafka-default");
    assert_eq!(run["options"]["burst_producers"], 16);
    let sends = |pred: &dyn Fn(&Value) -> bool| {
        events
            .iter()
            .filter(|e| e["f"] == "send" && e["type"] == "ok" && pred(e))
            .count()
    };
    assert!(
        sends(&|e| e["process"].as_u64().is_some_and(|p| p >= burst)) > 20,
        "no load burst in 20 s"
    );
    // Burst producers send batches, each value its own operation (the checker,
    // valid above, holds each at its batch's offset + its slot).
    assert!(
        sends(&|e| e["value"]["batch"].as_u64().is_some_and(|n| n >= 2)) > 10,
        "no batch of several values"
    );
    assert!(
        sends(&|e| e["value"]["producer"].is_u64()) > 50,
        "no idempotent producer's send"
    );
    assert!(
        sends(&|e| e["process"]
            .as_u64()
            .is_some_and(|p| p < burst && p % 6 != 0)
            && !e["value"]["producer"].is_u64())
            > 10,
        "no plain producer's send"
    );
    assert!(
        count("final-poll", "ok") >= 2,
        "no final drain of both partitions"
    );
    assert!(
        events
            .iter()
            .any(|e| e["f"] == "read" && e["type"] == "ok" && e["value"]["final"] == true),
        "no final read of the register"
    );
    // Half the partitions of both topics handed to another replica before the
    // final step (seed 42: the first of each), the others' leaders kept; the final
    // reads and the drain after.
    let handovers: Vec<usize> = (0..events.len())
        .filter(|&i| events[i]["process"] == "nemesis" && events[i]["f"] == "handover")
        .collect();
    assert_eq!(handovers.len(), 4, "a decision per partition");
    for &i in &handovers {
        let v = &events[i]["value"];
        assert_eq!(v["partition"] == 0, v["from"] != v["to"], "{v}");
        assert_eq!(v["replicas"][0], v["to"], "{v}");
    }
    // The register's final reads in two rounds, a process per partition each: the
    // first before every handover, the second (and the drain) after them all.
    let final_reads: Vec<(usize, u64)> = (0..events.len())
        .filter(|&i| events[i]["value"]["final"] == true)
        .map(|i| (i, events[i]["process"].as_u64().unwrap()))
        .collect();
    let readers: BTreeSet<u64> = final_reads.iter().map(|&(_, p)| p).collect();
    assert_eq!(readers.len(), 4, "{readers:?}");
    let (first_round, second_round): (Vec<_>, Vec<_>) = final_reads
        .iter()
        .partition(|&&(_, p)| p < *readers.iter().nth(2).unwrap());
    let (handed_first, handed_last) = (handovers[0], *handovers.last().unwrap());
    assert!(first_round.iter().all(|&&(i, _)| i < handed_first));
    assert!(second_round.iter().all(|&&(i, _)| i > handed_last));
    let first_poll = events.iter().position(|e| e["f"] == "final-poll").unwrap();
    assert!(first_poll > handed_last);
    assert!(
        events.iter().any(|e| e["process"] == "nemesis"),
        "no nemesis event in 20 s with the default 5 s interval"
    );

    for id in 1..=3 {
        let node = folder.join("nodes").join(id.to_string());
        assert!(node.join("broker.log").is_file(), "{}", node.display());
        let log = std::fs::read_to_string(node.join("final-log.jsonl")).unwrap();
        assert_eq!(
            log.lines().count(),
            4,
            "node {id} holds both partitions of both topics"
        );
    }
    assert_no_process_left(dir);

    // `watermark check` judges the run folder as the run did: both checkers.
    let out = watermark(
        &["check", folder.to_str().unwrap(), "--json"],
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let checked: Value = serde_json::from_slice(&out.stdout).unwrap();
    for name in ["queue", "linearizable"] {
        assert_eq!(
            checked["checkers"][name]["valid"], results_json["checkers"][name]["valid"],
            "{name}"
        );
        assert_eq!(
            checked["checkers"][name]["stats"], results_json["checkers"][name]["stats"],
            "{name}"
        );
    }
}

/// Run campaigns with `args` under the given seeds until one ends INVALID with an
/// anomaly of one of `kinds`; panic with what each seed gave if none does.
fn finds_anomalies(args: &[&str], seeds: &[&str], kinds: &[&str]) {
    let mut seen = Vec::new();
    for seed in seeds {
        let results = tempfile::tempdir().unwrap();
        let dir = results.path().to_str().unwrap();
        let mut argv = vec!["run"];
        argv.extend_from_slice(args);
        argv.extend_from_slice(&["--seed", seed, "--results", dir]);
        let out = watermark(&argv, Duration::from_secs(300));
        assert_no_process_left(dir);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0..=2)),
            "seed {seed}: the harness failed\n{}",
            text(&out)
        );
        let r = read_json(&run_folder(results.path()).join("results.json"));
        let mut found: Vec<String> = r["checkers"]["queue"]["anomalies"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x["kind"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        if code == Some(1) && found.iter().any(|k| kinds.contains(&k.as_str())) {
            assert_eq!(r["valid"], false);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains("verdict: INVALID"), "{stdout}");
            return;
        }
        found.dedup();
        seen.push(format!("seed {seed}: exit {code:?}, anomalies {found:?}"));
    }
    panic!("{args:?} found none of {kinds:?}: {seen:#?}");
}

#[test]
fn acks_1_loses_acknowledged_writes_when_the_leader_is_isolated() {
    // Kafka's documented trade-off: with acks=1 an isolated leader acknowledges
    // writes no follower will ever fetch; the controller elects another replica and
    // those writes are gone, their offsets reused.
    finds_anomalies(
        &[
            "--acks",
            "1",
            "--nemesis",
            "isolate-leader",
            "--time-limit",
            "15",
        ],
        &["1", "2", "3"],
        &["lost-write", "inconsistent-offsets"],
    );
}

#[test]
fn hw_truncation_loses_or_diverges_data_under_kills_and_isolation() {
    finds_anomalies(
        &[
            "--truncation",
            "hw",
            "--acks",
            "all",
            // The controller stays up through a crash-all and still names the dead
            // leader to the followers back first (KIP-101's first scenario).
            "--dedicated-controller",
            "--nemesis",
            "kill,crash-all,isolate-leader",
            "--nemesis-interval",
            "2",
            "--time-limit",
            "15",
        ],
        &["1", "2", "3", "4"],
        &["lost-write", "inconsistent-offsets", "replica-divergence"],
    );
}

#[test]
fn a_harness_killed_mid_run_leaves_no_process_and_a_checkable_history() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap().to_string();
    let mut guard = Guard(
        Command::new(WATERMARK)
            .args([
                "run",
                "--time-limit",
                "60",
                "--seed",
                "9",
                "--results",
                &dir,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start watermark"),
    );
    // Wait until the campaign is well under way: brokers up, operations recorded.
    let deadline = Instant::now() + Duration::from_secs(120);
    let history = loop {
        let lines = std::fs::canonicalize(results.path().join("current"))
            .ok()
            .map(|f| f.join("history.jsonl"))
            .and_then(|h| {
                std::fs::read_to_string(&h)
                    .ok()
                    .map(|t| (h, t.lines().count()))
            });
        if let Some((path, n)) = lines
            && n > 200
        {
            break path;
        }
        assert!(
            guard.0.try_wait().unwrap().is_none(),
            "watermark ended before it was killed"
        );
        assert!(Instant::now() < deadline, "the run never got going");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        processes_mentioning(&dir)
            .iter()
            .any(|p| p.contains("--data-dir")),
        "no broker process of this run was found while it ran"
    );
    guard.0.kill().unwrap(); // SIGKILL
    guard.0.wait().unwrap();
    assert_no_process_left(&dir);

    // The prefix on disk is complete lines of JSON (maybe a torn last line), and
    // `watermark check` judges it or says unknown — never a harness failure.
    let out = watermark(
        &["check", history.to_str().unwrap()],
        Duration::from_secs(120),
    );
    assert!(
        matches!(out.status.code(), Some(0..=2)),
        "check of a killed run's history\n{}",
        text(&out)
    );
}

#[test]
fn replay_repeats_the_configuration_and_seed() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let out = watermark(
        &[
            "run",
            "--nodes",
            "1",
            "--min-insync",
            "1",
            "--partitions",
            "1",
            "--nemesis",
            "none",
            "--time-limit",
            "3",
            "--rate",
            "50",
            "--seed",
            "77",
            "--results",
            dir,
        ],
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let first = run_folder(results.path());

    let out = watermark(
        &["replay", first.to_str().unwrap()],
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let second = run_folder(results.path());
    assert_ne!(first, second, "the replay has its own run folder");
    let (a, b) = (
        read_json(&first.join("run.json")),
        read_json(&second.join("run.json")),
    );
    assert_eq!(a["options"], b["options"]);
    assert_eq!(b["seed"], 77);
    assert_eq!(b["replay_of"], first.to_str().unwrap());
    assert_no_process_left(dir);
}
