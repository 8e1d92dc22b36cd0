//! Schedules as data, end to end over real brokers: a schedule written by hand is
//! played by role (the leader killed is whichever node leads when its time comes)
//! and the run's own schedule.json names it so again; a malformed one is refused
//! before anything starts, naming its line and field; a failing run shrinks to the
//! faults that matter.
//!
//! Every wait is bounded; the watermark process is killed on the way out and its
//! brokers die with it (PR_SET_PDEATHSIG).

use std::time::Duration;

use crate::support::{assert_no_process_left, read_json, run_folder, text, watermark};
use serde_json::Value;

/// `watermark run --schedule` of a file holding `contents`: refused with exit 64 before
/// anything started; its stderr.
fn refused(contents: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.json");
    std::fs::write(&file, contents).unwrap();
    let results = dir.path().join("results");
    let (file, r) = (file.to_str().unwrap(), results.to_str().unwrap());
    let out = watermark(
        &["run", "--schedule", file, "--results", r],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(64), "{}", text(&out));
    assert!(!results.exists(), "nothing started");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_malformed_schedule_is_refused_naming_its_line_and_field() {
    let stderr = refused(
        "{\"schedule\": 1, \"faults\": [\n\
         {\"at\": 1, \"fault\": \"kill\", \"target\": \"node 1\", \"for\": 1},\n\
         {\"at\": 2, \"fault\": \"kill\", \"target\": \"the boss\"}\n]}\n",
    );
    assert!(
        stderr.contains("line 3")
            && stderr.contains("field `target`")
            && stderr.contains("the boss"),
        "{stderr}"
    );
    // A scenario file's step with a field it does not take.
    let stderr = refused(
        "{\"schedule\": 1, \"scenario\": \"mine\", \"script\": [\n\
         {\"step\": \"sleep\", \"for\": 1},\n\
         {\"step\": \"await\", \"untill\": {\"is\": \"committed\", \"records\": 1}, \"within\": 1}\n]}\n",
    );
    assert!(
        stderr.contains("line 3") && stderr.contains("`untill`"),
        "{stderr}"
    );
    for args in [
        &["run", "--schedule", "/nonexistent/schedule.json"][..],
        &["shrink", "/nonexistent/run-folder"],
    ] {
        let out = watermark(args, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(64), "{args:?}\n{}", text(&out));
    }
}

#[test]
fn a_hand_written_schedule_is_played_by_role_and_recorded_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("schedule.json");
    std::fs::write(
        &file,
        r#"{"schedule": 1, "faults": [
            {"at": 2, "fault": "kill", "target": "leader of queue/0", "for": 2.5},
            {"at": 6, "fault": "pause", "target": "follower of queue/0", "for": 1}
        ]}"#,
    )
    .unwrap();
    let results = dir.path().join("results");
    let out = watermark(
        &[
            "run",
            "--workload",
            "queue",
            "--partitions",
            "1",
            "--time-limit",
            "9",
            "--rate",
            "50",
            "--seed",
            "3",
            "--schedule",
            file.to_str().unwrap(),
            "--results",
            results.to_str().unwrap(),
        ],
        Duration::from_secs(240),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // The queue takes no first look before the handover: no such step is shown.
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("handing the partitions' leadership over"),
        "{said}"
    );
    assert!(!said.contains("before the leaders move"), "{said}");
    let folder = run_folder(&results);
    let history = std::fs::read_to_string(folder.join("history.jsonl")).unwrap();
    let nemesis: Vec<Value> = history
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["process"] == "nemesis" && e["f"] != "plan" && e["f"] != "handover")
        .collect();
    let fs: Vec<&str> = nemesis.iter().map(|e| e["f"].as_str().unwrap()).collect();
    assert_eq!(fs, ["kill", "restart", "pause", "resume"], "{nemesis:?}");
    // After the schedule, the end of the run's handover of the one partition.
    assert_eq!(history.matches("\"f\":\"handover\"").count(), 1);
    let secs = |i: usize| nemesis[i]["time"].as_u64().unwrap() as f64 / 1e9;
    // On the history's clock (zero before the cluster starts), in the schedule's order
    // and about its gaps apart.
    assert!((secs(1) - secs(0) - 2.5).abs() < 1.0, "{nemesis:?}");
    assert!(secs(2) - secs(0) > 3.0, "{nemesis:?}");

    // The run's schedule names the faults by role, with the process each was.
    let text = std::fs::read_to_string(folder.join("schedule.json")).unwrap();
    let recorded: Value = serde_json::from_str(&text).unwrap();
    let faults = recorded["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 2, "{text}");
    assert_eq!(faults[0]["fault"], "kill");
    assert_eq!(faults[0]["target"], "leader of queue/0", "{text}");
    let killed = nemesis[0]["value"][0].as_i64().unwrap();
    assert_eq!(faults[0]["process"], format!("node {killed}"), "{text}");
    assert!(
        (faults[0]["for"].as_f64().unwrap() - 2.5).abs() < 0.5,
        "{text}"
    );
    assert_eq!(faults[1]["fault"], "pause");
    assert_eq!(
        read_json(&folder.join("run.json"))["options"]["schedule"],
        file.canonicalize().unwrap().to_str().unwrap()
    );
    assert_no_process_left(results.to_str().unwrap());
}

#[test]
fn a_corpus_plays_each_file_as_a_campaign_with_its_own_seed_into_one_suite() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    std::fs::write(
        corpus.join("a-kill.json"),
        r#"{"schedule": 1, "seed": 21, "time_limit": 4, "faults": [
            {"at": 1, "fault": "kill", "target": "follower of queue/0", "for": 1.5}]}"#,
    )
    .unwrap();
    std::fs::write(
        corpus.join("b-none.json"),
        r#"{"schedule": 1, "faults": []}"#,
    )
    .unwrap();
    std::fs::write(corpus.join("README.md"), "not a case").unwrap();
    let results = dir.path().join("results");
    let out = watermark(
        &[
            "run",
            "--corpus",
            corpus.to_str().unwrap(),
            "--workload",
            "queue",
            "--partitions",
            "1",
            "--rate",
            "50",
            "--time-limit",
            "3",
            "--seed",
            "5",
            "--results",
            results.to_str().unwrap(),
        ],
        Duration::from_secs(300),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let folder = std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("corpus-corpus-")
        })
        .expect("a corpus folder");
    let summary = read_json(&folder.join("summary.json"));
    let cases = summary["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2, "{summary}");
    assert_eq!(
        (cases[0]["case"].as_str(), cases[0]["seed"].as_u64()),
        (Some("a-kill"), Some(21))
    );
    assert_eq!(
        (cases[1]["case"].as_str(), cases[1]["seed"].as_u64()),
        (Some("b-none"), Some(5))
    );
    for c in cases {
        assert_eq!(
            (
                c["outcome"].as_str(),
                c["tries"].as_u64(),
                c["failed_tries"].as_u64()
            ),
            (Some("valid"), Some(1), Some(0)),
            "{c}"
        );
    }
    let xml = std::fs::read_to_string(folder.join("junit.xml")).unwrap();
    assert!(
        xml.contains("a-kill: ") && xml.contains("b-none: "),
        "{xml}"
    );
    assert_no_process_left(results.to_str().unwrap());
}

/// A failing run shrunk end to end: a planted bug a linearizable read catches within
/// seconds and without any fault (`ack-off-by-one`), under a schedule of two faults
/// that do not matter; the shrink (its defaults: a candidate adopted when 2 of at
/// most 3 tries reproduce) takes both out and cuts the 15 s run short, and the
/// reproducer it writes states the run's seed and its own length.
#[test]
fn a_failing_run_shrinks_to_the_faults_that_matter() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("two-faults.json");
    std::fs::write(
        &file,
        "{\"schedule\": 1, \"faults\": [\n\
         {\"at\": 1, \"fault\": \"pause\", \"target\": \"follower of queue/0\", \"for\": 1},\n\
         {\"at\": 3, \"fault\": \"kill\", \"target\": \"follower of register/0\", \"for\": 1}\n]}\n",
    )
    .unwrap();
    let results = dir.path().join("results");
    let r = results.to_str().unwrap();
    let out = watermark(
        &[
            "run",
            "--bug",
            "ack-off-by-one",
            "--schedule",
            file.to_str().unwrap(),
            "--time-limit",
            "15",
            "--seed",
            "1",
            "--results",
            r,
        ],
        Duration::from_secs(180),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let run = run_folder(&results);
    let out = watermark(
        &[
            "shrink",
            run.to_str().unwrap(),
            "--jobs",
            "2",
            "--budget",
            "6",
        ],
        Duration::from_secs(600),
    );
    assert_no_process_left(r);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let summary = read_json(&run.join("shrink/summary.json"));
    assert_eq!(summary["original"]["faults"], 2, "{summary}");
    assert_eq!(summary["original_reproduced"], true, "{summary}");
    let minimal = &summary["minimal"];
    assert!(minimal["faults"].as_u64().unwrap() < 2, "{summary}");
    // Cut after the witness plus a margin: within the 15 s, even for a witness
    // that a loaded machine delays to 9 s.
    assert!(minimal["seconds"].as_f64().unwrap() < 15.0, "{summary}");
    assert!(minimal["reproduced"].as_u64().unwrap() >= 2, "{summary}");
    assert_eq!(minimal["tries"], 3, "{summary}");
    let reproducer = read_json(&run.join("shrink/minimal-schedule.json"));
    assert_eq!(reproducer["seed"], 1, "{reproducer}");
    assert_eq!(reproducer["time_limit"], minimal["seconds"], "{reproducer}");
    let rows = std::fs::read_to_string(run.join("shrink/attempts.jsonl")).unwrap();
    let phases: Vec<String> = rows
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["phase"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        phases.first().map(String::as_str),
        Some("original"),
        "{rows}"
    );
    assert_eq!(phases.last().map(String::as_str), Some("confirm"), "{rows}");
    let report = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        report.contains("minimal reproducer"),
        "the report shows the shrink"
    );
}
