//! The `disk` fault over real processes: a short campaign with `--nemesis disk` on
//! the clean broker fails nodes' disks (ENOSPC, EIO, through their fault filesystems),
//! records each start and end in the history, and stays
//! valid; the planted bug `append-undo-lost` is caught by a scripted failing disk
//! and kill of each queue partition's leader (exit 1), the clean broker valid on
//! the same schedule.

use std::path::Path;
use std::time::Duration;

use crate::support::{assert_no_process_left, read_json, run_folder, text, watermark};
use serde_json::Value;

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

/// The leader's disk fails for half a second under load (appends fail), then the
/// leader is killed and restarted — for each queue partition in turn, scripted so
/// that it happens whatever the machine's load. The planted `append-undo-lost`
/// leaves a failed append's record in the segment at the offset the next append
/// takes, and recovery keeps it there: caught; the clean broker, on the same
/// schedule, side by side, is valid.
#[test]
fn the_planted_append_undo_lost_is_caught_by_a_failing_disk_and_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let schedule = dir.path().join("schedule.json");
    std::fs::write(
        &schedule,
        r#"{"schedule": 1, "faults": [
{"at": 3, "fault": "disk", "target": "leader of queue/0", "mode": "eio", "for": 0.5},
{"at": 4.5, "fault": "kill", "target": "leader of queue/0", "for": 1},
{"at": 7, "fault": "disk", "target": "leader of queue/1", "mode": "eio", "for": 0.5},
{"at": 8.5, "fault": "kill", "target": "leader of queue/1", "for": 1}
]}"#,
    )
    .unwrap();
    let schedule = schedule.to_str().unwrap();
    let run = |bug: Option<&str>| {
        let results = tempfile::tempdir().unwrap();
        let mut args = vec!["--dedicated-controller", "--schedule", schedule];
        args.extend(["--time-limit", "12", "--seed", "1"]);
        if let Some(bug) = bug {
            args.extend(["--bug", bug]);
        }
        let out = campaign(results.path(), &args);
        assert_no_process_left(results.path().to_str().unwrap());
        let folder = run_folder(results.path());
        assert_eq!(nemesis_events(&folder, "disk").len(), 2, "{}", text(&out));
        (out, read_json(&folder.join("results.json")))
    };
    let (planted, clean) = std::thread::scope(|s| {
        let planted = s.spawn(|| run(Some("append-undo-lost")));
        let clean = s.spawn(|| run(None));
        (planted.join().unwrap(), clean.join().unwrap())
    });
    let (out, r) = planted;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(r["valid"], false, "{r}");
    let (out, r) = clean;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(r["valid"], true, "{r}");
}
