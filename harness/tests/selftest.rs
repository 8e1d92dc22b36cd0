//! `watermark selftest` end to end, short enough for CI: two planted bugs are caught
//! and the clean broker raises no anomaly under the same campaigns (exit 0, the
//! table, one run folder per campaign); an unknown bug is a usage error.
//!
//! Every wait is bounded; on timeout the harness is SIGKILLed and its brokers die with
//! it (PR_SET_PDEATHSIG).

mod support;

use std::path::Path;
use std::time::Duration;

use support::{assert_no_process_left, text, watermark};

/// The self-test folder under `results` (there is one).
fn selftest_folder(results: &Path) -> std::path::PathBuf {
    std::fs::read_dir(results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("selftest-")
        })
        .expect("a selftest-* folder")
}

#[test]
fn two_planted_bugs_are_caught_and_the_clean_broker_is_clean() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let out = watermark(
        &[
            "selftest",
            "--bugs",
            "ack-before-replicate,hw-truncation",
            "--time-limit",
            "40",
            "--runs",
            "2",
            "--seed",
            "1",
            "--results",
            dir,
        ],
        Duration::from_secs(600),
    );
    assert_no_process_left(dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}: {stdout}"))
            .to_string()
    };
    for bug in ["ack-before-replicate", "hw-truncation"] {
        let r = row(bug);
        assert!(r.contains(" yes "), "{r}");
        assert!(
            ["lost-write", "inconsistent-offsets", "replica-divergence"]
                .iter()
                .any(|k| r.contains(k)),
            "{r}"
        );
    }
    assert!(row("clean").contains(" clean "), "{}", row("clean"));
    assert!(stdout.contains("selftest: PASSED"), "{stdout}");

    let folder = selftest_folder(results.path());
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("selftest.json")).unwrap())
            .unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 3);
    for r in rows.as_array().unwrap() {
        for c in r["campaigns"].as_array().unwrap() {
            let run = Path::new(c["folder"].as_str().expect("a run folder"));
            assert!(run.join("history.jsonl").is_file(), "{}", run.display());
            assert!(run.starts_with(&folder), "{}", run.display());
        }
    }
    // The clean broker ran the campaigns of both bugs (two runs).
    assert_eq!(rows[2]["bug"], "clean");
    assert_eq!(rows[2]["campaigns"].as_array().unwrap().len(), 2);
}

#[test]
fn an_unknown_bug_is_a_usage_error_naming_the_known_ones() {
    let out = watermark(
        &["selftest", "--bugs", "ack-before-replicate,typo"],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(64), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("typo") && stderr.contains("isr-unchecked"),
        "{stderr}"
    );
}
