//! Working with Jepsen's and Porcupine's histories, over the real `watermark`
//! binary: `watermark report HISTORY` renders a report for any history `check`
//! reads (no run.json needed).

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::{text, watermark};

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
