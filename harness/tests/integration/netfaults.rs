//! Degraded links end to end: a short campaign of the real `watermark` binary with
//! `--nemesis slow,flaky,throttle` on the clean broker is valid, records each fault's
//! start and end with its targets, parameters and seed, and shades them in the
//! report.

use std::time::Duration;

use crate::support::{assert_no_process_left, read_json, run_folder, text, watermark};
use serde_json::Value;

#[test]
fn slow_flaky_and_throttled_links_leave_a_valid_campaign_that_records_them() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let out = watermark(
        &[
            "run",
            "--nemesis",
            "slow,flaky,throttle",
            "--nemesis-interval",
            "2",
            "--time-limit",
            "25",
            "--seed",
            "3",
            "--results",
            dir,
        ],
        Duration::from_secs(600),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let folder = run_folder(results.path());
    let run = read_json(&folder.join("run.json"));
    assert_eq!(run["outcome"], "valid");
    assert_eq!(
        run["options"]["nemesis"],
        serde_json::json!(["slow", "flaky", "throttle"])
    );

    let history = std::fs::read_to_string(folder.join("history.jsonl")).unwrap();
    let nemesis: Vec<Value> = history
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a history line is JSON"))
        .filter(|e| e["process"] == "nemesis")
        .collect();
    let mut started = std::collections::BTreeSet::new();
    for kind in ["slow", "flaky", "throttle"] {
        let starts: Vec<&Value> = nemesis.iter().filter(|e| e["f"] == kind).collect();
        let stop = format!("stop-{kind}");
        let stops: Vec<&Value> = nemesis.iter().filter(|e| e["f"] == stop).collect();
        // Every fault started is ended (at the latest at the time limit), with the
        // same targets and parameters.
        assert_eq!(starts.len(), stops.len(), "{kind}: {nemesis:?}");
        for (start, stop) in starts.iter().zip(&stops) {
            assert_eq!(start["value"], stop["value"], "{kind}");
            let v = &start["value"];
            assert!(!v["procs"].as_array().unwrap().is_empty(), "{v}");
            assert!(v["seed"].is_u64(), "{v}");
            let params = match kind {
                "slow" => ["delay_ms", "jitter_ms"].as_slice(),
                "flaky" => &["reset", "loss"],
                _ => &["bytes_per_s"],
            };
            for p in params {
                assert!(v[p].is_number(), "{kind} without {p}: {v}");
            }
            started.insert(kind);
        }
    }
    assert_eq!(started.len(), 3, "every kind shows up: {nemesis:?}");

    let report = std::fs::read_to_string(folder.join("report.html")).unwrap();
    assert!(
        report.contains("links degraded") && report.contains("class=\"fault f-net"),
        "degraded links are shaded in the report"
    );
    assert_no_process_left(dir);
}
