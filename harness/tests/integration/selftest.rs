//! `watermark selftest` end to end, short enough for CI: the default mode measures
//! one bug and the clean broker on one seed each, two campaigns at once, and its
//! table, selftest.json and exit code agree; with `--tuned`, two planted bugs are
//! caught and the clean broker raises no anomaly under the same campaigns (exit 0,
//! the table, one run folder per campaign); bad options are usage errors.
//!
//! Every wait is bounded; on timeout the harness is SIGKILLed and its brokers die with
//! it (PR_SET_PDEATHSIG).

use std::path::Path;
use std::time::Duration;

use crate::support::{assert_no_process_left, read_json, text, watermark};

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
fn the_default_mode_measures_a_bug_and_the_clean_broker_with_campaigns_side_by_side() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let out = watermark(
        &[
            "selftest",
            "--bugs",
            "no-epoch-fence",
            "--seeds",
            "1",
            "--campaign-time-limit",
            "10",
            "--jobs",
            "2",
            "--seed",
            "3",
            "--results",
            dir,
        ],
        Duration::from_secs(400),
    );
    assert_no_process_left(dir);
    let code = out.status.code();
    assert!(matches!(code, Some(0 | 1)), "{}", text(&out));
    let folder = selftest_folder(results.path());
    let report = read_json(&folder.join("selftest.json"));
    assert_eq!(report["mode"], "default-campaign");
    assert_eq!(report["seeds"], serde_json::json!([3]));
    assert_eq!(report["campaign_time_limit"], 10.0);
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{report}");
    let (bug, clean) = (&rows[0], &rows[1]);
    assert_eq!(
        (&bug["bug"], &clean["bug"]),
        (&"no-epoch-fence".into(), &"clean".into())
    );

    // Each campaign is a default run of its own, with its log beside its run folder.
    for row in rows {
        let campaigns = row["campaigns"].as_array().unwrap();
        assert_eq!(campaigns.len(), 1, "{row}");
        let c = &campaigns[0];
        assert_eq!(c["seed"], 3);
        let run = Path::new(c["folder"].as_str().expect("a run folder"));
        assert!(run.starts_with(&folder), "{}", run.display());
        assert!(run.with_file_name("watermark.log").is_file());
        let run_json = read_json(&run.join("run.json"));
        assert_eq!(run_json["workload"], "mixed");
        assert_eq!(run_json["options"]["time_limit"], 10.0);
        assert_eq!(
            run_json["options"]["nemesis"],
            serde_json::json!(["replication"]),
            "the default nemesis"
        );
        let planted = if row["bug"] == "clean" {
            serde_json::Value::Null
        } else {
            row["bug"].clone()
        };
        assert_eq!(run_json["options"]["bug"], planted);
        // A caught campaign says when: within the run's history.
        if c["exit"] == 1 {
            let t = c["detection"]["seconds"]
                .as_f64()
                .expect("a detection time");
            assert!(t > 0.0 && t < c["seconds"].as_f64().unwrap(), "{c}");
        } else {
            assert!(c["detection"].is_null(), "{c}");
        }
    }
    // The clean broker is valid; the bug passes if its one seed caught it.
    assert_eq!(clean["campaigns"][0]["exit"], 0, "{}", text(&out));
    assert_eq!(clean["passed"], true);
    let caught = bug["campaigns"][0]["exit"] == 1;
    assert_eq!(bug["caught"], u64::from(caught));
    assert_eq!(bug["passed"], caught);
    assert_eq!(report["passed"], caught);
    assert_eq!(code, Some(if caught { 0 } else { 1 }), "{}", text(&out));

    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("no-epoch-fence"))
        .unwrap_or_else(|| panic!("no row: {stdout}"));
    let expected = if caught { " 1/1 " } else { " 0/1 " };
    assert!(line.contains(expected), "{line}");
    let clean_line = stdout.lines().find(|l| l.starts_with("clean")).unwrap();
    assert!(
        clean_line.contains("1 valid") && clean_line.contains(" yes "),
        "{clean_line}"
    );
    let verdict = if caught {
        "selftest: PASSED"
    } else {
        "selftest: FAILED"
    };
    assert!(stdout.contains(verdict), "{stdout}");
}

#[test]
fn two_planted_bugs_are_caught_and_the_clean_broker_is_clean() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let out = watermark(
        &[
            "selftest",
            "--tuned",
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
fn options_of_the_other_mode_and_bad_values_are_usage_errors() {
    for args in [
        &["selftest", "--tuned", "--seeds", "2"][..],
        &["selftest", "--tuned", "--jobs", "2"],
        &["selftest", "--runs", "2"],
        &["selftest", "--time-limit", "30"],
        &["selftest", "--min-rate", "0"],
        &["selftest", "--min-rate", "1.5"],
        &["selftest", "--jobs", "0"],
        &["selftest", "--seeds", "0"],
        &["selftest", "--campaign-time-limit", "-3"],
        &["selftest", "--list"],
        &["selftest", "--mutants", "--tuned"],
        &[
            "selftest",
            "--mutants",
            "--mutants-from",
            "examples/mutants",
        ],
        &["selftest", "--mutant-files", "broker/src/log/*.rs"],
    ] {
        let out = watermark(args, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(64), "{args:?}\n{}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}\n{stderr}");
    }
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

/// The shipped example mutants, listed: one per patch, each naming the file it
/// changes and showing its diff; a folder without patches is refused.
#[test]
fn a_folder_of_mutants_is_listed_without_running_anything() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/mutants");
    let out = watermark(
        &["selftest", "--mutants-from", dir, "--list"],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "m001 broker/src/controller/state/isr.rs: alter-partition-ignores-the-partition-epoch"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("+        if hw != self.high_watermark {"),
        "{stdout}"
    );
    assert!(stdout.contains("4 mutants"), "{stdout}");
    let empty = tempfile::tempdir().unwrap();
    let out = watermark(
        &[
            "selftest",
            "--mutants-from",
            empty.path().to_str().unwrap(),
            "--list",
        ],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("no *.diff or *.patch"),
        "{}",
        text(&out)
    );
}
