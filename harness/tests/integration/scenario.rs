//! `watermark run --scenario` end to end: each KIP-101 and KIP-279 script loses or
//! diverges data against `--truncation hw` and finds nothing against
//! `--truncation epoch`, its steps recorded as nemesis events; duplicate-on-retry
//! writes values twice through the producers' retries (a shipped scenario file
//! played with `--schedule` as `--scenario` plays it), and not with `--retries 0`
//! or `--idempotent`; a controller killed in the middle of a leader failover loses
//! nothing; the seed's two cases on two replicas lose and diverge only under hw; an
//! unclean election loses what the ISR committed; a leader's crash loses acks=1
//! writes and duplicates a retried send; an unknown script is a usage error.
//!
//! Every wait is bounded; on timeout the harness is SIGKILLed and its brokers die with
//! it (PR_SET_PDEATHSIG). A test's campaigns run side by side: each spends its time
//! waiting on its script and cluster, and the scripts are timed by the cluster's
//! state, not by the clock.

use std::path::Path;
use std::time::Duration;

use crate::support::{assert_no_process_left, text, watermark};
use serde_json::Value;

/// Run `scenario` against `truncation`; the exit code, the anomaly kinds and the
/// nemesis steps (`f` of each nemesis event).
fn scenario(name: &str, truncation: &str) -> (Option<i32>, Vec<String>, Vec<String>) {
    scenario_with(name, &["--truncation", truncation])
}

/// Run `scenario` with `extra` options; as [`scenario`].
fn scenario_with(name: &str, extra: &[&str]) -> (Option<i32>, Vec<String>, Vec<String>) {
    let mut args = vec!["--scenario", name];
    args.extend_from_slice(extra);
    run_with(&args)
}

/// Play the scenario file `file` with `extra` options; as [`scenario`].
fn schedule_with(file: &str, extra: &[&str]) -> (Option<i32>, Vec<String>, Vec<String>) {
    let mut args = vec!["--schedule", file];
    args.extend_from_slice(extra);
    run_with(&args)
}

/// Run `a` and `b` side by side (a campaign spends most of its time waiting on its
/// script and its cluster, not computing); their results, in order.
fn both<A: Send, B: Send>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B + Send) -> (A, B) {
    std::thread::scope(|s| {
        let a = s.spawn(a);
        let b = s.spawn(b);
        (join(a), join(b))
    })
}

/// A thread's result, its panic carried on.
fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// `watermark run` with `extra` options, seed 1; as [`scenario`].
fn run_with(extra: &[&str]) -> (Option<i32>, Vec<String>, Vec<String>) {
    let (code, kinds, steps, _) = run_told(extra);
    (code, kinds, steps)
}

/// As [`run_with`], and what the run printed.
fn run_told(extra: &[&str]) -> (Option<i32>, Vec<String>, Vec<String>, String) {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let mut args = vec!["run", "--seed", "1", "--results", dir];
    args.extend_from_slice(extra);
    let out = watermark(&args, Duration::from_secs(300));
    assert_no_process_left(dir);
    assert!(matches!(out.status.code(), Some(0..=2)), "{}", text(&out));
    let folder = std::fs::canonicalize(results.path().join("latest")).unwrap();
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("results.json")).unwrap())
            .unwrap();
    let mut kinds: Vec<String> = r["checkers"]["queue"]["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["kind"].as_str().map(String::from))
        .collect();
    kinds.sort();
    kinds.dedup();
    let steps = nemesis_steps(&folder);
    (out.status.code(), kinds, steps, text(&out))
}

fn nemesis_steps(folder: &Path) -> Vec<String> {
    std::fs::read_to_string(folder.join("history.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["process"] == "nemesis")
        .filter_map(|e| e["f"].as_str().map(String::from))
        // What a kill did to the node's storage, not a step of the script.
        .filter(|f| f != "power-cut")
        .collect()
}

#[test]
fn kip101_data_loss_loses_acknowledged_writes_only_under_hw_truncation() {
    // The scenario's shipped file played as a schedule: what --scenario plays.
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/kip101-data-loss.json"
    );
    let (hw, epoch) = both(
        || schedule_with(file, &["--truncation", "hw"]),
        || scenario("kip101-data-loss", "epoch"),
    );
    let (code, kinds, steps) = hw;
    assert_eq!(code, Some(1), "{kinds:?}");
    assert!(kinds.contains(&"lost-write".to_string()), "{kinds:?}");
    assert_eq!(steps, ["crash-all", "restart", "restart"]);
    let (code, kinds, steps) = epoch;
    assert_eq!((code, kinds), (Some(0), vec![]));
    assert_eq!(steps, ["crash-all", "restart", "restart"]);
}

/// `name` diverges replicas under hw truncation and finds nothing under epoch, taking
/// the `expected` steps both times.
///
/// The script is timed by the cluster's state, but real processes on a loaded
/// machine can still close its window before a step lands (a follower's HW catching
/// up before it is cut off): the hw side is played a second time, alone, when the
/// first play found nothing, and fails only if neither did. The epoch side must be
/// valid on its one play.
fn diverges_only_under_hw(name: &str, expected: &[&str]) {
    let hw = || run_told(&["--scenario", name, "--truncation", "hw"]);
    let (first, epoch) = both(hw, || scenario(name, "epoch"));
    let (code, kinds, steps, told) = match first {
        (Some(0), _, _, told) => {
            eprintln!("{name} under hw truncation found nothing on its first play:\n{told}");
            hw()
        }
        first => first,
    };
    assert_eq!(code, Some(1), "{kinds:?}\n{told}");
    assert!(
        kinds.contains(&"replica-divergence".to_string())
            || kinds.contains(&"inconsistent-offsets".to_string()),
        "{kinds:?}\n{told}"
    );
    assert_eq!(steps, expected, "{told}");
    let (code, kinds, steps) = epoch;
    assert_eq!((code, kinds), (Some(0), vec![]));
    assert_eq!(steps, expected);
}

#[test]
fn kip101_divergence_diverges_replicas_only_under_hw_truncation() {
    let steps = [
        "lose-unflushed",
        "pause",
        "lose-unflushed",
        "restart",
        "restart",
        "resume",
    ];
    diverges_only_under_hw("kip101-divergence", &steps);
}

#[test]
fn kip279_divergence_diverges_replicas_only_under_hw_truncation() {
    let steps = [
        "partition",
        "partition",
        "heal",
        "pause",
        "kill",
        "heal",
        "restart",
        "resume",
    ];
    diverges_only_under_hw("kip279-divergence", &steps);
}

#[test]
fn duplicate_on_retry_writes_twice_unless_idempotent_or_without_retries() {
    let (retried, (once, idempotent)) = both(
        || scenario_with("duplicate-on-retry", &[]),
        || {
            both(
                || scenario_with("duplicate-on-retry", &["--retries", "0"]),
                || scenario_with("duplicate-on-retry", &["--idempotent"]),
            )
        },
    );
    let (code, kinds, steps) = retried;
    assert_eq!((code, kinds), (Some(1), vec!["duplicate".to_string()]));
    assert_eq!(steps, ["partition", "heal"]);
    for (extra, (code, kinds, steps)) in [("--retries 0", once), ("--idempotent", idempotent)] {
        assert_eq!((code, kinds), (Some(0), Vec::<String>::new()), "{extra}");
        assert_eq!(steps, ["partition", "heal"]);
    }
}

#[test]
fn a_controller_failover_in_the_middle_of_a_leader_failover_loses_nothing() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let args = [
        "run",
        "--scenario",
        "controller-failover",
        "--seed",
        "1",
        "--results",
        dir,
    ];
    let out = watermark(&args, Duration::from_secs(300));
    assert_no_process_left(dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let folder = std::fs::canonicalize(results.path().join("latest")).unwrap();
    // Every broker is a voter: no controller process of its own.
    assert!(!folder.join("nodes/controller").exists());
    let events: Vec<Value> = std::fs::read_to_string(folder.join("history.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["process"] == "nemesis")
        .collect();
    let steps: Vec<&str> = events.iter().map(|e| e["f"].as_str().unwrap()).collect();
    // The active controller is named, then the leader killed, then the controller
    // (unless it was the leader), then both restarted.
    assert_eq!(steps[..2], ["active-controller", "kill"], "{steps:?}");
    let controller = &events[0]["value"]["process"];
    let leader = &events[1]["value"][0];
    assert!(controller.is_i64() && leader.is_i64(), "{events:?}");
    let expected: &[&str] = if controller == leader {
        &["active-controller", "kill", "restart"]
    } else {
        &["active-controller", "kill", "kill", "restart", "restart"]
    };
    assert_eq!(steps, expected, "{events:?}");
    let killed: Vec<&Value> = events
        .iter()
        .filter(|e| e["f"] == "kill")
        .map(|e| &e["value"][0])
        .collect();
    assert!(killed.contains(&controller) && killed.contains(&leader));
}

/// The seed's first case loses acknowledged records under hw truncation, on its two
/// replicas, and nothing under epoch.
#[test]
fn the_seeds_first_case_loses_acknowledged_writes_only_under_hw_truncation() {
    let steps = ["partition", "kill", "restart", "kill", "heal", "restart"];
    let (hw, epoch) = both(
        || scenario("seed-hw-loss", "hw"),
        || scenario("seed-hw-loss", "epoch"),
    );
    let (code, kinds, taken) = hw;
    assert_eq!(code, Some(1), "{kinds:?}");
    assert!(kinds.contains(&"lost-write".to_string()), "{kinds:?}");
    assert_eq!(taken, steps);
    let (code, kinds, taken) = epoch;
    assert_eq!((code, kinds), (Some(0), vec![]));
    assert_eq!(taken, steps);
}

#[test]
fn the_seeds_second_case_diverges_replicas_only_under_hw_truncation() {
    diverges_only_under_hw(
        "seed-hw-divergence",
        &["lose-unflushed", "pause", "restart", "resume"],
    );
}

/// With no ISR member alive, an unclean election loses committed records and the
/// coverage counts it; without, nothing is lost.
#[test]
fn an_unclean_election_loses_what_the_isr_committed_and_a_clean_one_waits() {
    let steps = ["partition", "kill", "kill", "heal", "restart", "restart"];
    let (unclean, clean) = both(
        || scenario_with("unclean-election", &["--unclean-election"]),
        || scenario_with("unclean-election", &[]),
    );
    let (code, kinds, taken) = unclean;
    assert_eq!(code, Some(1), "{kinds:?}");
    assert!(kinds.contains(&"lost-write".to_string()), "{kinds:?}");
    assert_eq!(taken, steps);
    let (code, kinds, taken) = clean;
    assert_eq!((code, kinds), (Some(0), vec![]));
    assert_eq!(taken, steps);
}

/// acks=1 loses what the crashed leader acknowledged alone; acks=all loses nothing.
#[test]
fn a_leader_crash_loses_acks1_writes_and_no_acks_all_ones() {
    let (acks1, acks_all) = both(
        || scenario_with("acks1-leader-crash", &[]),
        || scenario_with("acks1-leader-crash", &["--acks", "all"]),
    );
    let (code, kinds, _) = acks1;
    assert_eq!(code, Some(1), "{kinds:?}");
    assert!(kinds.contains(&"lost-write".to_string()), "{kinds:?}");
    let (code, kinds, _) = acks_all;
    assert_eq!((code, kinds), (Some(0), vec![]));
}

/// A leader that dies before answering makes a retrying producer write twice, unless
/// it is idempotent.
#[test]
fn a_leader_crash_before_its_answer_duplicates_unless_idempotent() {
    let steps = ["partition", "kill", "heal", "restart"];
    let (plain, idempotent) = both(
        || scenario_with("duplicate-on-leader-crash", &[]),
        || scenario_with("duplicate-on-leader-crash", &["--idempotent"]),
    );
    let (code, kinds, taken) = plain;
    assert_eq!((code, kinds), (Some(1), vec!["duplicate".to_string()]));
    assert_eq!(taken, steps);
    let (code, kinds, _) = idempotent;
    assert_eq!((code, kinds), (Some(0), vec![]));
}

#[test]
fn unknown_scenarios_are_usage_errors_that_list_the_known_ones() {
    let out = watermark(&["run", "--scenario", "kip999"], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(64), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for name in [
        "kip101-data-loss",
        "kip101-divergence",
        "kip279-divergence",
        "duplicate-on-retry",
        "controller-failover",
    ] {
        assert!(stderr.contains(name), "{stderr}");
    }
}
