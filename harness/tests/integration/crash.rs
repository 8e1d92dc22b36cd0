//! A broker that crashes is never a green run, over real processes: with the
//! test-only planted bug `--bug abort` every node aborts (SIGABRT) at its 100th
//! produce request, and the run exits 1 with a `crash` anomaly — in the history,
//! results.json, report.html (its abort message quoted), junit.xml and the summary —
//! unless `--allow-crashes`; `watermark check` of the folder agrees.

use std::time::Duration;

use crate::support::{assert_no_process_left, read_json, run_folder, text, watermark};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(300);

/// A short campaign of aborting brokers into `results`; its output.
fn aborting_run(results: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        "--bug",
        "abort",
        "--nemesis",
        "none",
        "--time-limit",
        "10",
        "--seed",
        "11",
        "--results",
        results.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    watermark(&args, LIMIT)
}

#[test]
fn a_broker_that_aborts_makes_the_run_invalid_with_a_crash_anomaly() {
    let results = tempfile::tempdir().unwrap();
    let out = aborting_run(results.path(), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let folder = run_folder(results.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);

    // The history: a crash event per abort, as it happened, naming the node.
    let history = std::fs::read_to_string(folder.join("history.jsonl")).unwrap();
    let crashes: Vec<Value> = history
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["f"] == "crash")
        .collect();
    assert!(!crashes.is_empty(), "no crash event:\n{}", text(&out));
    let first = &crashes[0];
    assert_eq!(first["process"], "nemesis");
    assert_eq!(first["value"]["status"], "killed by SIGABRT", "{first}");
    let node = first["value"]["node"].as_i64().expect("a node crashed");
    assert_eq!(
        first["value"]["log"],
        format!("nodes/{node}/broker.log").as_str()
    );
    let message = first["value"]["message"].as_str().unwrap();
    assert!(message.contains("PLANTED BUG (abort)"), "{first}");
    assert!(
        first["time"].as_u64().unwrap() < 40_000_000_000,
        "recorded when it happened, not at the end: {first}"
    );
    assert!(
        stderr.contains(&format!(
            "watermark: node {node} crashed (killed by SIGABRT)"
        )),
        "{stderr}"
    );

    // results.json: the harness's `crashes` verdict beside the queue's.
    let r = read_json(&folder.join("results.json"));
    assert_eq!(r["valid"], false, "{r}");
    let verdict = &r["checkers"]["crashes"];
    assert_eq!(verdict["valid"], false, "{r}");
    let anomalies = verdict["anomalies"].as_array().unwrap();
    assert_eq!(anomalies.len(), crashes.len());
    assert!(anomalies.iter().all(|a| a["kind"] == "crash"));
    assert_eq!(anomalies[0]["node"], node);
    assert!(
        anomalies[0]["log"]
            .as_str()
            .unwrap()
            .contains("PLANTED BUG (abort)")
    );
    assert_eq!(verdict["stats"]["crashes"], crashes.len());

    // The report quotes the log; junit.xml fails the crash test case; the
    // summary says it.
    let html = std::fs::read_to_string(folder.join("report.html")).unwrap();
    assert!(html.contains(r#"data-kind="crash""#), "no crash section");
    assert!(html.contains(r#"<pre class="crash-log">PLANTED BUG (abort)"#));
    let junit = std::fs::read_to_string(folder.join("junit.xml")).unwrap();
    assert!(junit.contains(r#"name="crashes crash""#), "{junit}");
    assert!(junit.contains("died on its own"), "{junit}");
    assert!(stdout.contains("checker crashes: INVALID"), "{stdout}");
    assert!(stdout.contains("| PLANTED BUG (abort)"), "{stdout}");
    let log = std::fs::read_to_string(folder.join("watermark.log")).unwrap();
    assert!(log.contains("crashed (killed by SIGABRT)"), "{log}");

    // `watermark check` of the folder agrees; --allow-crashes lets it pass on the
    // history alone (the queue itself lost nothing).
    let d = folder.to_str().unwrap();
    let check = watermark(&["check", d], LIMIT);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check));
    assert!(String::from_utf8_lossy(&check.stdout).contains("crashes: INVALID"));
    let allowed = watermark(&["check", d, "--allow-crashes"], LIMIT);
    assert_eq!(allowed.status.code(), Some(0), "{}", text(&allowed));
    assert!(
        String::from_utf8_lossy(&allowed.stdout).contains("allowed by --allow-crashes"),
        "{}",
        text(&allowed)
    );
    assert_no_process_left(results.path().to_str().unwrap());
}

#[test]
fn allowed_crashes_are_noted_and_the_run_is_judged_on_its_history() {
    let results = tempfile::tempdir().unwrap();
    let out = aborting_run(results.path(), &["--allow-crashes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let folder = run_folder(results.path());
    let run = read_json(&folder.join("run.json"));
    assert_eq!(run["options"]["allow_crashes"], true);
    let r = read_json(&folder.join("results.json"));
    let verdict = &r["checkers"]["crashes"];
    assert_eq!(verdict["valid"], true, "{r}");
    assert!(verdict["stats"]["crashes"].as_u64().unwrap() >= 1, "{r}");
    assert!(
        verdict["notes"][0]
            .as_str()
            .unwrap()
            .ends_with("(allowed by --allow-crashes)")
    );
    // check reads the allowance from run.json.
    let check = watermark(&["check", folder.to_str().unwrap()], LIMIT);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
    assert_no_process_left(results.path().to_str().unwrap());
}
