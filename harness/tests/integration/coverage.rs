//! The default nemesis (the replication package) end to end: a short default
//! campaign over real broker processes moves a leader, records every decision of
//! the nemesis in the history before the steps it takes, and reports its fault
//! coverage in the summary, results.json and report.html.
//!
//! Every wait is bounded; the brokers die with the harness (PR_SET_PDEATHSIG).

use std::time::Duration;

use crate::support::{assert_no_process_left, read_json, run_folder, text, watermark};
use serde_json::Value;

#[test]
fn a_short_default_campaign_moves_a_leader_and_records_why_it_chose_each_fault() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let out = watermark(
        &["run", "--time-limit", "20", "--seed", "3", "--results", dir],
        Duration::from_secs(300),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("fault coverage"), "{}", text(&out));
    assert!(
        !stdout.contains("warning: no leader election"),
        "{}",
        text(&out)
    );
    let folder = run_folder(results.path());

    let run = read_json(&folder.join("run.json"));
    assert_eq!(
        run["options"]["nemesis"],
        serde_json::json!(["replication"])
    );

    // At least one leader election, by the brokers' events or the metadata.
    let coverage = &read_json(&folder.join("results.json"))["coverage"];
    let elections = coverage["transitions"]["leader-election"].as_u64().unwrap();
    let observed = coverage["leader_changes_observed"].as_u64().unwrap();
    assert!(elections + observed >= 1, "no leader election: {coverage}");
    assert_eq!(coverage["warnings"], serde_json::json!([]), "{coverage}");
    assert!(
        coverage["patterns"]
            .as_object()
            .is_some_and(|p| !p.is_empty())
    );

    // Every decision is in the history, before the steps it takes.
    let history = std::fs::read_to_string(folder.join("history.jsonl")).unwrap();
    let nemesis: Vec<Value> = history
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["process"] == "nemesis")
        .collect();
    let plans: Vec<&Value> = nemesis.iter().filter(|e| e["f"] == "plan").collect();
    assert!(!plans.is_empty(), "no decision recorded: {nemesis:?}");
    assert_eq!(nemesis[0]["f"], "plan", "a step before any decision");
    let first = &plans[0]["value"];
    assert!(
        first["why"].as_str().unwrap().starts_with("first fault"),
        "{first}"
    );
    for (i, plan) in plans.iter().enumerate() {
        let v = &plan["value"];
        assert_eq!(v["number"], i as u64 + 1, "{v}");
        assert!(v["pattern"].is_string() && v["why"].is_string(), "{v}");
        assert!(v["roles"].is_object() && v["observed"].is_object(), "{v}");
        assert!(!v["steps"].as_array().unwrap().is_empty(), "{v}");
    }
    // Every fault started was ended.
    let count = |fs: &[&str]| {
        nemesis
            .iter()
            .filter(|e| fs.contains(&e["f"].as_str().unwrap()))
            .count()
    };
    let starts = count(&["kill", "pause", "partition", "lose-unflushed", "crash-all"]);
    let ends = count(&["restart", "resume", "heal"]);
    assert!(starts >= 1 && starts == ends, "{nemesis:?}");

    let report = std::fs::read_to_string(folder.join("report.html")).unwrap();
    assert!(report.contains(r#"id="coverage-table""#));
    assert!(report.contains(r#"id="decision-table""#));
    assert_no_process_left(dir);
}
