//! What CI reads from a run, over the real `watermark` binary: a junit.xml for every
//! outcome (a harness failure and an interruption are errored test cases saying
//! why); `results/current` while a run goes, `results/latest` once it ended;
//! `watermark.log`, the console output with timestamps.
//!
//! Every wait is bounded; the harness is killed on the way out by a guard, and its
//! brokers die with it (PR_SET_PDEATHSIG).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{
    Guard, WATERMARK, assert_no_process_left, read_json, run_folder, text, watermark,
};
use quick_junit::{NonSuccessKind, Report, TestCaseStatus};

/// The test cases of a junit.xml, as (name, status).
fn junit_cases(path: &Path) -> Vec<(String, TestCaseStatus)> {
    let xml = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let report = Report::deserialize_from_str(&xml).expect("junit.xml parses");
    report
        .test_suites
        .into_iter()
        .flat_map(|s| s.test_cases)
        .map(|c| (c.name.to_string(), c.status))
        .collect()
}

/// The single errored case of a run without a verdict: its type and message.
fn errored(path: &Path) -> (String, String) {
    let cases = junit_cases(path);
    assert_eq!(cases.len(), 1, "{cases:?}");
    match &cases[0] {
        (
            name,
            TestCaseStatus::NonSuccess {
                kind: NonSuccessKind::Error,
                message,
                ty,
                ..
            },
        ) if name == "run" => (
            ty.as_ref().map(|t| t.to_string()).unwrap_or_default(),
            message.as_ref().map(|m| m.to_string()).unwrap_or_default(),
        ),
        other => panic!("expected an errored `run` case, got {other:?}"),
    }
}

#[test]
fn a_harness_failure_writes_junit_with_an_errored_case_saying_why() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    // A "broker" that exits at once: the cluster cannot start.
    let out = watermark(
        &[
            "run",
            "--broker-bin",
            "/bin/true",
            "--seed",
            "3",
            "--results",
            dir,
        ],
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let folder = run_folder(results.path());
    let (ty, message) = errored(&folder.join("junit.xml"));
    assert_eq!(ty, "harness-failed");
    assert!(
        message.contains("the cluster did not start"),
        "the reason is missing: {message}"
    );
    let log = std::fs::read_to_string(folder.join("watermark.log")).unwrap();
    assert!(log.contains("the cluster did not start"), "{log}");
    let run = read_json(&folder.join("run.json"));
    assert_eq!(run["outcome"], "harness-failed");
    assert!(
        run["failure"]
            .as_str()
            .is_some_and(|f| f.contains("the cluster did not start")),
        "{run}"
    );
    assert_no_process_left(dir);
}

#[test]
fn an_interrupted_run_writes_junit_with_an_errored_case() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap().to_string();
    let mut guard = Guard(
        Command::new(WATERMARK)
            .args([
                "run",
                "--time-limit",
                "120",
                "--seed",
                "5",
                "--results",
                &dir,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start watermark"),
    );
    // Wait until operations are recorded, then Ctrl-C. While the run goes,
    // `current` points at it and there is no `latest`.
    let deadline = Instant::now() + Duration::from_secs(120);
    let folder = loop {
        let found = std::fs::canonicalize(results.path().join("current")).ok();
        // The history is created a moment after `current` is linked.
        if let Some(f) = found
            && std::fs::read_to_string(f.join("history.jsonl"))
                .unwrap_or_default()
                .lines()
                .count()
                > 20
        {
            break f;
        }
        assert!(
            guard.0.try_wait().unwrap().is_none(),
            "watermark ended before it was interrupted"
        );
        assert!(Instant::now() < deadline, "the run never got going");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        std::fs::symlink_metadata(results.path().join("latest")).is_err(),
        "latest points at a run in progress"
    );
    let pid = nix::unistd::Pid::from_raw(guard.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = guard.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "watermark ignored Ctrl-C");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(130));
    assert_eq!(
        run_folder(results.path()),
        folder,
        "latest moves when the run ends"
    );
    assert!(
        std::fs::symlink_metadata(results.path().join("current")).is_err(),
        "current outlived the run"
    );
    let (ty, message) = errored(&folder.join("junit.xml"));
    assert_eq!(ty, "interrupted");
    assert!(message.contains("Ctrl-C"), "{message}");
    assert_eq!(
        read_json(&folder.join("run.json"))["outcome"],
        "interrupted"
    );
    assert_no_process_left(&dir);
}

/// A short campaign on one node, without faults.
const SHORT: [&str; 12] = [
    "run",
    "--nodes",
    "1",
    "--partitions",
    "1",
    "--nemesis",
    "none",
    "--time-limit",
    "2",
    "--rate",
    "50",
    "--results",
];

#[test]
fn watermark_log_is_the_console_output_with_timestamps() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let mut args = SHORT.to_vec();
    args.extend([dir, "--seed", "11"]);
    let out = watermark(&args, Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let log = std::fs::read_to_string(run_folder(results.path()).join("watermark.log")).unwrap();
    let mut logged: Vec<&str> = Vec::new();
    for line in log.lines() {
        let (stamp, said) = line.split_once(' ').expect("a stamped line");
        // 2026-12-01T04:09:27.123Z
        assert!(
            stamp.len() == 24 && stamp.as_bytes()[10] == b'T' && stamp.ends_with('Z'),
            "not a UTC timestamp: {line}"
        );
        logged.push(said);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut printed: Vec<&str> = stdout.lines().chain(stderr.lines()).collect();
    printed.sort();
    logged.sort();
    assert_eq!(logged, printed, "watermark.log is not the console output");
    assert!(log.contains("watermark: seed 11"), "{log}");
    assert!(log.contains("] starting the cluster"), "{log}");
    assert!(log.contains("verdict: valid"), "{log}");
    assert_no_process_left(dir);
}

/// The series folder `tests-*` under `results`, and its summary.json.
fn series(results: &Path) -> (std::path::PathBuf, serde_json::Value) {
    let found: Vec<_> = std::fs::read_dir(results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("tests-"))
        })
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    let summary = read_json(&found[0].join("summary.json"));
    (found[0].clone(), summary)
}

#[test]
fn test_count_runs_consecutive_seeds_into_one_folder_with_a_summary_and_one_suite() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let mut args = SHORT.to_vec();
    args.extend([dir, "--seed", "100", "--test-count", "2"]);
    let out = watermark(&args, Duration::from_secs(240));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (root, summary) = series(results.path());
    assert_eq!(summary["test_count"], 2);
    assert_eq!(summary["outcome"], "valid");
    assert!(summary["ended_at"].is_string());
    let campaigns = summary["campaigns"].as_array().unwrap();
    let seeds: Vec<u64> = campaigns
        .iter()
        .map(|c| c["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(seeds, [100, 101]);
    for c in campaigns {
        assert_eq!(c["outcome"], "valid", "{c}");
        assert!(c["operations"]["ok"].as_u64().unwrap() > 0, "{c}");
        let folder = root.join(c["folder"].as_str().unwrap());
        let run = read_json(&folder.join("run.json"));
        assert_eq!(run["seed"], c["seed"]);
        assert_eq!(run["options"]["results"], root.to_str().unwrap());
    }
    // The table, on the console.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("1 ") || l.starts_with("2 "))
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(
        rows[0].contains("100") && rows[1].contains("101"),
        "{stdout}"
    );
    // One suite, every campaign's cases named after its seed, all passing.
    let cases = junit_cases(&root.join("junit.xml"));
    for seed in ["seed 100: ", "seed 101: "] {
        assert!(
            cases
                .iter()
                .any(|(n, _)| n == &format!("{seed}checker queue")),
            "{cases:?}"
        );
    }
    assert!(
        cases
            .iter()
            .all(|(_, s)| matches!(s, TestCaseStatus::Success { .. })),
        "{cases:?}"
    );
    // The results directory's latest is the last campaign.
    let last = root.join(campaigns[1]["folder"].as_str().unwrap());
    assert_eq!(run_folder(results.path()), last.canonicalize().unwrap());
    assert_no_process_left(dir);
}

/// A fixed fault script that loses data under pre-0.11 truncation, every time.
const LOSES_DATA: [&str; 4] = ["--truncation", "hw", "--scenario", "kip101-data-loss"];

#[test]
fn a_series_goes_on_past_an_anomaly_and_exits_1() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let mut args = vec!["run"];
    args.extend(LOSES_DATA);
    args.extend(["--results", dir, "--seed", "1", "--test-count", "2"]);
    let out = watermark(&args, Duration::from_secs(300));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let (root, summary) = series(results.path());
    let campaigns = summary["campaigns"].as_array().unwrap();
    assert_eq!(campaigns.len(), 2, "{summary}");
    assert!(
        campaigns.iter().all(|c| c["outcome"] == "invalid"),
        "{summary}"
    );
    assert_eq!(summary["exit_code"], 1);
    let failed: Vec<String> = junit_cases(&root.join("junit.xml"))
        .into_iter()
        .filter(|(_, s)| {
            matches!(
                s,
                TestCaseStatus::NonSuccess {
                    kind: NonSuccessKind::Failure,
                    ..
                }
            )
        })
        .map(|(n, _)| n)
        .collect();
    assert!(
        failed.contains(&"seed 1: checker queue".to_string()),
        "{failed:?}"
    );
    assert!(
        failed.contains(&"seed 2: checker queue".to_string()),
        "{failed:?}"
    );
    assert_no_process_left(dir);
}

#[test]
fn until_invalid_stops_the_series_at_the_first_anomaly() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let mut args = vec!["run"];
    args.extend(LOSES_DATA);
    args.extend([
        "--results",
        dir,
        "--seed",
        "7",
        "--test-count",
        "3",
        "--until-invalid",
    ]);
    let out = watermark(&args, Duration::from_secs(300));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let (_, summary) = series(results.path());
    let campaigns = summary["campaigns"].as_array().unwrap();
    assert_eq!(campaigns.len(), 1, "{summary}");
    assert_eq!(campaigns[0]["seed"], 7);
    assert!(
        campaigns[0]["anomalies"]
            .as_object()
            .is_some_and(|a| !a.is_empty()),
        "{summary}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("1 of 3 campaigns run"), "{stdout}");
    assert_no_process_left(dir);
}

#[test]
fn until_invalid_needs_test_count() {
    let out = watermark(&["run", "--until-invalid"], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(64), "{}", text(&out));
    let out = watermark(&["run", "--test-count", "0"], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(64), "{}", text(&out));
}
