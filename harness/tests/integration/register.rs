//! The register workload end to end, over real broker processes: the finding of
//! issue "register workload". With default reads a leader cut off from the cluster
//! (but not from clients) keeps answering reads at its stale high watermark while a
//! new leader takes writes, and the checker reports the stale reads as
//! nonlinearizable; with `--linearizable-reads` the old leader cannot confirm its
//! leadership, so seeded runs under the same faults are valid, and every key
//! written is read once more when the run ends (the final reads).
//!
//! Each run is short: 17 s of faults with one isolation of 3.75 to 6.25 s, longer
//! than the controller's 3 s session timeout, so a new leader is elected meanwhile.
//! Every wait is bounded, and every child is killed on the way out (watermark is
//! SIGKILLed past its bound; its brokers die with it by PR_SET_PDEATHSIG).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use crate::support::{assert_no_process_left, read_json, run_folder, text, watermark};
use serde_json::Value;

/// A run's bound: 17 s of faults, convergence, checking, and a loaded machine.
const RUN_LIMIT: Duration = Duration::from_secs(150);

/// One short register campaign under leader isolation.
fn register_run(seed: u64, linearizable_reads: bool) -> (Output, PathBuf, tempfile::TempDir) {
    let results = tempfile::tempdir().expect("temp dir");
    let results_arg = results.path().to_str().unwrap().to_string();
    let seed = seed.to_string();
    let mut args = vec![
        "run",
        "--workload",
        "register",
        "--nemesis",
        "isolate-leader",
        "--nemesis-interval",
        "5",
        "--time-limit",
        "17",
        "--seed",
        &seed,
        "--results",
        &results_arg,
    ];
    if linearizable_reads {
        args.push("--linearizable-reads");
    }
    let out = watermark(&args, RUN_LIMIT);
    assert_no_process_left(&results_arg);
    let folder = run_folder(results.path());
    (out, folder, results)
}

#[test]
fn default_reads_under_leader_isolation_are_stale() {
    let mut tries = Vec::new();
    for seed in [1u64, 2, 3] {
        let (out, folder, _results) = register_run(seed, false);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0) | Some(1)),
            "seed {seed}: neither valid nor invalid\n{}",
            text(&out)
        );
        // The register's first look: its final reads before the handover.
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("reading every key written before the leaders move"),
            "{said}"
        );
        if code == Some(1) {
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains("nonlinearizable"), "{}", text(&out));
            let results = read_json(&folder.join("results.json"));
            let lin = &results["checkers"]["linearizable"];
            assert_eq!(lin["valid"], Value::Bool(false), "{results}");
            let anomaly = &lin["anomalies"][0];
            assert_eq!(anomaly["kind"], "nonlinearizable", "{anomaly}");
            assert!(anomaly["key"].is_string(), "{anomaly}");
            // The checker's explanation: the operation, the longest prefix, the state.
            let why = &anomaly["explanation"];
            assert!(why["op"]["f"].is_string(), "{why}");
            assert!(
                why["prefix"].is_array() && why["states"].is_array(),
                "{why}"
            );
            // Stale reads are what fails.
            let anomalies = lin["anomalies"].as_array().unwrap();
            assert!(
                anomalies
                    .iter()
                    .any(|a| a["explanation"]["op"]["f"] == "read"),
                "no read among {anomalies:?}"
            );
            let report = std::fs::read_to_string(folder.join("report.html")).unwrap();
            assert!(report.contains("Linearization"), "no linearization view");
            let run = read_json(&folder.join("run.json"));
            assert_eq!(run["workload"], "register", "{run}");
            return;
        }
        tries.push(format!("seed {seed}: valid\n{}", text(&out)));
    }
    panic!(
        "no stale read found over {} seeds:\n{}",
        tries.len(),
        tries.join("\n")
    );
}

#[test]
fn linearizable_reads_under_leader_isolation_are_valid() {
    // The two seeds' campaigns side by side: each spends its time waiting.
    let runs = std::thread::scope(|s| {
        let runs: Vec<_> = [1u64, 2]
            .map(|seed| s.spawn(move || (seed, register_run(seed, true))))
            .into_iter()
            .collect();
        runs.into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect::<Vec<_>>()
    });
    for (seed, (out, folder, _results)) in runs {
        assert_eq!(out.status.code(), Some(0), "seed {seed}\n{}", text(&out));
        let results = read_json(&folder.join("results.json"));
        assert_eq!(
            results["checkers"]["linearizable"]["valid"],
            Value::Bool(true),
            "{results}"
        );
        // The run did isolate a leader, and clients did read.
        let history = std::fs::read_to_string(folder.join("history.jsonl")).unwrap();
        assert!(history.contains("\"isolate-leader\""), "no isolation");
        assert!(
            history
                .lines()
                .any(|l| l.contains("\"type\":\"ok\"") && l.contains("\"f\":\"read\"")),
            "no read succeeded"
        );
        let run = read_json(&folder.join("run.json"));
        assert_eq!(run["options"]["linearizable_reads"], true, "{run}");
        // The final reads: every key written (or tried) was read once more, after
        // the cluster healed, and answered.
        let events: Vec<Value> = history
            .lines()
            .map(|l| serde_json::from_str(l).expect("a history line"))
            .collect();
        let keys = |keep: &dyn Fn(&Value) -> bool| -> BTreeSet<String> {
            events
                .iter()
                .filter(|e| keep(e))
                .filter_map(|e| e["value"]["key"].as_str().map(str::to_string))
                .collect()
        };
        let written = keys(&|e| e["type"] == "invoke" && (e["f"] == "write" || e["f"] == "cas"));
        let read_at_last = keys(&|e| e["type"] == "ok" && e["value"]["final"] == true);
        assert!(!written.is_empty(), "seed {seed}: nothing written");
        assert_eq!(
            written, read_at_last,
            "seed {seed}: keys written ≠ keys read at last"
        );
    }
}
