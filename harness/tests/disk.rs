//! The `disk` fault over real processes: a short campaign with `--nemesis disk` on
//! the clean broker fails nodes' disks (ENOSPC, EIO, through `POST /debug/disk` with
//! the cluster's credentials), records each start and end in the history, and stays
//! valid; with the planted bug `append-undo-lost` and `--nemesis disk,kill` the
//! campaign is caught (exit 1).

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use support::{assert_no_process_left, read_json, run_folder, text, watermark};

const LIMIT: Duration = Duration::from_secs(300);

fn campaign(results: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run", "--results", results.to_str().unwrap()];
    args.extend_from_slice(extra);
    watermark(&args, LIMIT)
}

fn nemesis_events(folder: &Path, f: &str) -> Vec<Value> {
    std::fs::read_to_string(folder.join("history.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["process"] == "nemesis" && e["f"] == f)
        .collect()
}

#[test]
fn disk_faults_on_the_clean_broker_are_recorded_and_the_run_is_valid() {
    let results = tempfile::tempdir().unwrap();
    let out = campaign(
        results.path(),
        &[
            "--nemesis",
            "disk",
            "--nemesis-interval",
            "2",
            "--time-limit",
            "20",
            "--seed",
            "3",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let folder = run_folder(results.path());
    let starts = nemesis_events(&folder, "disk");
    let ends = nemesis_events(&folder, "disk-ok");
    assert!(starts.len() >= 2, "{starts:?}\n{}", text(&out));
    assert_eq!(starts.len(), ends.len(), "every disk fault ends: {ends:?}");
    for s in &starts {
        assert!(
            (1..=3).contains(&s["value"]["node"].as_i64().unwrap()),
            "{s}"
        );
        assert!(["enospc", "eio"].contains(&s["value"]["mode"].as_str().unwrap()));
        assert!(s["value"]["for_ms"].as_u64().unwrap() >= 4000, "{s}");
    }
    let r = read_json(&folder.join("results.json"));
    assert_eq!(r["valid"], true, "{r}");
    // The report shades the periods as a failing disk.
    let report = std::fs::read_to_string(folder.join("report.html")).unwrap();
    assert!(report.contains("f-disk") && report.contains("disk failing"));
    assert_no_process_left(results.path().to_str().unwrap());
}

/// Measured (2026-12-01, 30 s campaigns at a 1 s interval): seed 1 caught in 5 of 5
/// runs (three debug, two release); seeds 1–7 in 7 of 8 release runs (seed 2 escaped).
/// Timing is not all in the seed, so the test tries seeds 1, 3 and 4 in turn.
#[test]
fn the_planted_append_undo_lost_is_caught_by_disk_and_kill() {
    // A campaign's timing is not all in its seed (docs/selftest.md measures the
    // rate): up to three seeds, each its own campaign, until one is caught.
    let mut outputs = Vec::new();
    for seed in ["1", "3", "4"] {
        let results = tempfile::tempdir().unwrap();
        let out = campaign(
            results.path(),
            &[
                "--bug",
                "append-undo-lost",
                "--dedicated-controller",
                "--nemesis",
                "disk,kill",
                "--nemesis-interval",
                "1",
                "--time-limit",
                "30",
                "--seed",
                seed,
            ],
        );
        assert_no_process_left(results.path().to_str().unwrap());
        let folder = run_folder(results.path());
        assert!(!nemesis_events(&folder, "disk").is_empty());
        if out.status.code() == Some(1) {
            let r = read_json(&folder.join("results.json"));
            assert_eq!(r["valid"], false, "{r}");
            return;
        }
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        outputs.push(text(&out));
    }
    panic!(
        "append-undo-lost escaped three campaigns:\n{}",
        outputs.join("\n---\n")
    );
}
