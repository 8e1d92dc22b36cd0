//! What CI reads from a run, over the real `watermark` binary: a junit.xml for every
//! outcome (a harness failure and an interruption are errored test cases saying
//! why); `results/current` while a run goes, `results/latest` once it ended;
//! `watermark.log`, the console output with timestamps.
//!
//! Every wait is bounded; the harness is killed on the way out by a guard, and its
//! brokers die with it (PR_SET_PDEATHSIG).

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use quick_junit::{NonSuccessKind, Report, TestCaseStatus};
use support::{Guard, WATERMARK, assert_no_process_left, read_json, run_folder, text, watermark};

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
        if let Some(f) = found
            && std::fs::read_to_string(f.join("history.jsonl"))
                .unwrap()
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
