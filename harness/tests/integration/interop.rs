//! Working with Jepsen's and Porcupine's histories, over the real `watermark`
//! binary: `watermark report HISTORY` renders a report for any history `check`
//! reads (no run.json needed); `watermark export RUN --format edn` writes Jepsen's
//! history.edn, which `watermark check` judges as it judged the run.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::report_fixtures::{Plant, queue_run, register_run};
use crate::support::{assert_no_process_left, run_folder, text, watermark};

fn porcupine(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../checker/tests/data/porcupine")
        .join(path)
}

fn jepsen(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../checker/tests/data/jepsen")
        .join(path)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// The verdict a report.html shows.
fn verdict(html: &str) -> &str {
    let at = html.find("data-verdict=\"").expect("a verdict") + "data-verdict=\"".len();
    &html[at..at + html[at..].find('"').unwrap()]
}

/// A nonlinearizable register: the read of 4 sees a value never written.
const STALE_EDN: &str = "{:type :invoke, :f :write, :value 1, :process 0, :time 0, :index 0}\n\
     {:type :ok, :f :write, :value 1, :process 0, :time 1000000, :index 1}\n\
     {:type :invoke, :f :read, :value nil, :process 1, :time 2000000, :index 2}\n\
     {:type :ok, :f :read, :value 4, :process 1, :time 3000000, :index 3}\n";

#[test]
fn report_renders_a_jepsen_edn_history_with_its_anomaly_and_linearization() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.edn");
    std::fs::write(&history, STALE_EDN).unwrap();
    let out = watermark(
        &["report", history.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let html = read(&dir.path().join("report.html"));
    assert_eq!(verdict(&html), "invalid");
    assert!(html.contains("nonlinearizable"), "no anomaly in the report");
    assert!(
        html.contains("class=\"lin-bad\""),
        "no linearization picture"
    );
    assert!(html.contains("id=\"timeline\""), "no timeline");
    // The configuration names the history; the page links it.
    assert!(html.contains("cas-register") && html.contains("edn"));
    assert!(html.contains("<a href=\"history.edn\">history.edn</a>"));
    let junit = read(&dir.path().join("junit.xml"));
    assert!(junit.contains("<failure"), "{junit}");
}

#[test]
fn report_renders_porcupine_logs_and_jepsen_store_folders_into_out() {
    let out_dir = tempfile::tempdir().unwrap();
    // A valid Porcupine etcd log, written elsewhere with --out.
    let etcd = out_dir.path().join("etcd");
    let out = watermark(
        &[
            "report",
            porcupine("jepsen/etcd_000.log").to_str().unwrap(),
            "--out",
            etcd.to_str().unwrap(),
        ],
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let html = read(&etcd.join("report.html"));
    assert!(
        ["valid", "invalid"].contains(&verdict(&html)),
        "{}",
        verdict(&html)
    );
    assert!(html.contains("jepsen-log"), "the format is not named");

    // A Jepsen store folder: its history.edn, the report beside it.
    let store = tempfile::tempdir().unwrap();
    std::fs::copy(
        jepsen("register-records.edn"),
        store.path().join("history.edn"),
    )
    .unwrap();
    let out = watermark(
        &["report", store.path().to_str().unwrap()],
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(store.path().join("report.html").is_file());
    assert!(store.path().join("junit.xml").is_file());
}

#[test]
fn report_of_bad_histories_is_bad_usage_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("history.edn");
    std::fs::write(
        &bad,
        "{:type :invoke, :f :read, :process 0}\n{:type :bogus}\n",
    )
    .unwrap();
    let out = watermark(&["report", bad.to_str().unwrap()], Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(64), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("history.edn:2"), "{stderr}");
    let out = watermark(
        &["report", dir.path().join("nothing").to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(64), "{}", text(&out));
}

/// Export a run folder as EDN, check the EDN, and compare the verdict with the
/// run folder's own check.
fn round_trip(run: &Path) -> i32 {
    let run_s = run.to_str().unwrap();
    let direct = watermark(&["check", run_s], Duration::from_secs(120));
    let out = watermark(
        &["export", run_s, "--format", "edn"],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let edn = run.join("history.edn");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        edn.to_str().unwrap()
    );
    // Checked alone, as Knossos would get it: no run.json beside it.
    let alone = tempfile::tempdir().unwrap();
    let copy = alone.path().join("history.edn");
    std::fs::copy(&edn, &copy).unwrap();
    let again = watermark(&["check", copy.to_str().unwrap()], Duration::from_secs(120));
    assert_eq!(
        again.status.code(),
        direct.status.code(),
        "the exported history got another verdict\n--- run folder\n{}\n--- EDN\n{}",
        text(&direct),
        text(&again)
    );
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("(edn)"),
        "{}",
        text(&again)
    );
    direct.status.code().unwrap()
}

#[test]
fn export_edn_then_check_gives_the_same_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let valid = tmp.path().join("valid");
    queue_run(&valid, 3, 4, 200, Plant::Nothing);
    assert_eq!(round_trip(&valid), 0);
    // Lost writes (and replica divergence, which only the final logs show).
    let lost = tmp.path().join("lost");
    queue_run(&lost, 5, 4, 200, Plant::TruncatedTail);
    assert_eq!(round_trip(&lost), 1);
    // A stale read of a register: jepsen.independent tuples, key by key.
    let register = tmp.path().join("register");
    register_run(&register);
    assert_eq!(round_trip(&register), 1);
    let edn = read(&register.join("history.edn"));
    assert!(edn.contains(":f :read, :value [\"k1\" 1]"), "{edn}");
}

#[test]
fn export_edn_of_a_real_run_checks_the_same() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let out = watermark(
        &[
            "run",
            "--truncation",
            "hw",
            "--scenario",
            "kip101-data-loss",
            "--seed",
            "3",
            "--results",
            dir,
        ],
        Duration::from_secs(300),
    );
    assert_no_process_left(dir);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(round_trip(&run_folder(results.path())), 1);
}

#[test]
fn export_refuses_what_is_not_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = watermark(
        &["export", dir.path().to_str().unwrap(), "--format", "edn"],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(64), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("history.jsonl"));
    let out = watermark(&["export", "x", "--format", "csv"], Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(64), "{}", text(&out));
}
