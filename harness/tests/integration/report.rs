//! report.html and junit.xml from run folders (valid, invalid, register, large),
//! `watermark report` exit codes, and `watermark serve` over real HTTP.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::report_fixtures::{Plant, Server, queue_run, register_run, results_dir};
use checker::verdict::Validity;
use quick_junit::{NonSuccessKind, Report, TestCaseStatus};
use watermark::report::write_reports;

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// Every `href="#x"` in the page has an element with `id="x"`.
fn assert_anchors_resolve(html: &str) {
    let ids: BTreeSet<&str> = html
        .split(" id=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    let mut links = 0;
    for s in html.split("href=\"#").skip(1) {
        let target = &s[..s.find('"').unwrap()];
        assert!(ids.contains(target), "link to #{target} has no target");
        links += 1;
    }
    assert!(links > 0, "no internal links at all");
}

/// Nothing in the page is fetched from elsewhere.
fn assert_self_contained(html: &str) {
    for bad in [
        "http://",
        "https://",
        "<script src",
        "<link",
        "@import",
        "url(",
        "<img",
        "<iframe",
    ] {
        assert!(!html.contains(bad), "report contains {bad:?}");
    }
    for attr in ["src=\"", "href=\""] {
        for s in html.split(attr).skip(1) {
            let v = &s[..s.find('"').unwrap()];
            assert!(
                !v.starts_with("//") && !v.contains(':'),
                "{attr}{v}\" points outside the file"
            );
        }
    }
}

fn junit(dir: &Path) -> Vec<(String, TestCaseStatus)> {
    let report =
        Report::deserialize_from_str(&read(&dir.join("junit.xml"))).expect("junit.xml parses");
    report
        .test_suites
        .iter()
        .flat_map(|s| s.test_cases.iter())
        .map(|c| (c.name.to_string(), c.status.clone()))
        .collect()
}

fn failure_message(status: &TestCaseStatus) -> Option<String> {
    match status {
        TestCaseStatus::NonSuccess {
            kind: NonSuccessKind::Failure,
            message,
            ..
        } => Some(message.as_ref().map(|m| m.to_string()).unwrap_or_default()),
        _ => None,
    }
}

#[test]
fn valid_run_report_shows_verdict_config_faults_and_plots() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("queue-run");
    let results = queue_run(&dir, 4, 6, 600, Plant::Nothing);
    assert_eq!(results.valid, Validity::Valid, "{}", results.render_text());
    let written = write_reports(&dir).unwrap();
    let html = read(&written.html);
    assert!(html.contains(r#"id="verdict" class="verdict v-valid" data-verdict="valid""#));
    assert!(html.contains(r#"id="configuration""#) && html.contains("--replication-factor"));
    assert!(html.contains("None found."));
    for id in ["timeline-plot", "latency-plot", "throughput-plot"] {
        assert!(html.contains(&format!(r#"<svg id="{id}""#)), "{id} missing");
    }
    for fault in ["fault f-kill", "fault f-pause", "fault f-part"] {
        // Shaded on the timeline, latency and throughput plots.
        assert!(
            html.matches(fault).count() >= 3,
            "{fault} not shaded everywhere"
        );
    }
    assert!(html.contains(">kill [2]</text>") && html.contains(">partition isolate-one</text>"));
    assert!(html.contains(r#"class="ok""#) && html.contains(r#"class="fail""#));
    assert!(html.contains(r#"id="replicas""#));
    assert_self_contained(&html);

    let cases = junit(&dir);
    // The whole checker, then one case per anomaly it looks for.
    assert_eq!(cases.len(), 1 + checker::queue::kinds().len(), "{cases:?}");
    assert!(
        cases
            .iter()
            .all(|(_, s)| matches!(s, TestCaseStatus::Success { .. }))
    );
    assert!(cases.iter().any(|(n, _)| n == "checker queue"));
    assert!(cases.iter().any(|(n, _)| n == "queue lost-write"));
}

#[test]
fn invalid_run_report_explains_each_anomaly_and_links_into_the_timeline() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("queue-bad");
    let results = queue_run(&dir, 5, 6, 600, Plant::TruncatedTail);
    assert_eq!(results.valid, Validity::Invalid);
    let kinds: BTreeSet<&str> = results.checkers["queue"]
        .anomalies
        .iter()
        .map(|a| a.kind.name())
        .collect();
    assert!(
        kinds.contains("lost-write") && kinds.contains("replica-divergence"),
        "{kinds:?}"
    );
    write_reports(&dir).unwrap();
    let html = read(&dir.join("report.html"));
    assert!(html.contains(r#"data-verdict="invalid""#));
    for kind in &kinds {
        assert!(
            html.contains(&format!(r#"data-kind="{kind}""#)),
            "{kind} not explained"
        );
    }
    // The lost write's send is linked to its highlighted mark on the timeline and
    // drawn in a close-up.
    let lost = results.checkers["queue"]
        .anomalies
        .iter()
        .find(|a| a.kind.name() == "lost-write")
        .unwrap();
    let op = lost.ops[0].invoke;
    assert!(html.contains(&format!(r##"href="#op-{op}""##)));
    assert!(html.contains(&format!(r#"id="op-{op}" class="hl"#)));
    assert!(html.contains(r#"id="close-up-0""#));
    assert!(html.contains("acknowledged") || html.contains("missing"));
    assert_anchors_resolve(&html);
    assert_self_contained(&html);

    let cases = junit(&dir);
    let lost_case = cases.iter().find(|(n, _)| n == "queue lost-write").unwrap();
    let msg = failure_message(&lost_case.1).expect("lost-write fails");
    assert!(
        msg.contains("lost-write") && msg.contains("missing"),
        "{msg}"
    );
    assert!(
        failure_message(
            &cases
                .iter()
                .find(|(n, _)| n == "queue replica-divergence")
                .unwrap()
                .1
        )
        .is_some()
    );
    assert!(
        failure_message(&cases.iter().find(|(n, _)| n == "checker queue").unwrap().1).is_some()
    );
    let dup = cases.iter().find(|(n, _)| n == "queue duplicate").unwrap();
    assert!(matches!(dup.1, TestCaseStatus::Success { .. }));
}

#[test]
fn nonlinearizable_key_gets_a_linearization_picture() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("register");
    register_run(&dir);
    write_reports(&dir).unwrap();
    let html = read(&dir.join("report.html"));
    assert!(html.contains(r#"data-kind="nonlinearizable""#));
    assert!(html.contains(r#"id="linearization-0""#));
    assert!(html.contains(r#"id="a0-lin-op-6" class="lin-bad""#));
    assert!(html.contains(r#"id="a0-lin-op-2" class="lin-ok""#));
    // The real checker leaves out the indeterminate cas to 3 (nothing could have
    // observed 3, so it changes no verdict): the prefix ends in state 2.
    assert!(html.contains(r#"id="a0-lin-op-0" class="lin-ok""#));
    assert!(!html.contains(r#"id="a0-lin-op-7""#));
    assert!(html.contains("model state after the prefix: <code>2</code>"));
    assert!(
        html.contains("fault f-part"),
        "isolate-leader is shaded as a partition"
    );
    assert_anchors_resolve(&html);
    assert_self_contained(&html);
    let cases = junit(&dir);
    let c = cases
        .iter()
        .find(|(n, _)| n == "linearizable nonlinearizable")
        .unwrap();
    assert!(failure_message(&c.1).unwrap().contains("read → 1"));
}

#[test]
fn a_100k_operation_run_stays_small() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("big");
    queue_run(&dir, 11, 12, 100_000, Plant::TruncatedTail);
    write_reports(&dir).unwrap();
    let size = std::fs::metadata(dir.join("report.html")).unwrap().len();
    assert!(size < 3_000_000, "report.html is {size} bytes");
    let html = read(&dir.join("report.html"));
    assert!(html.contains("each mark covers a pixel column"));
    assert!(
        html.contains(r#"class="hl"#),
        "the anomalies' operations are drawn one by one"
    );
    assert!(html.contains(r#"class="p50""#));
    assert_anchors_resolve(&html);
    assert_self_contained(&html);
    eprintln!("100k-op report: {size} bytes");
}

fn watermark(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_watermark"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn report_command_rerenders_and_names_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    queue_run(&dir, 4, 4, 100, Plant::Nothing);
    let d = dir.to_str().unwrap();
    let (code, out, err) = watermark(&["report", d]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("report.html") && dir.join("junit.xml").is_file());

    let (code, _, err) = watermark(&["report", tmp.path().join("nope").to_str().unwrap()]);
    assert_eq!(code, 64);
    assert!(err.contains("cannot open the run folder"), "{err}");

    // A malformed history line is named by file and line.
    let history = read(&dir.join("history.jsonl"));
    let mut lines: Vec<&str> = history.lines().collect();
    lines[2] = "{\"index\": 2, \"oops\"";
    std::fs::write(dir.join("history.jsonl"), lines.join("\n") + "\n").unwrap();
    let (code, _, err) = watermark(&["report", d]);
    assert_eq!(code, 64);
    assert!(err.contains("history.jsonl:3:"), "{err}");
    std::fs::write(dir.join("history.jsonl"), &history).unwrap();

    // A torn last line (the writer died mid-line) is tolerated.
    std::fs::write(
        dir.join("history.jsonl"),
        format!("{history}{{\"index\":99"),
    )
    .unwrap();
    let (code, _, err) = watermark(&["report", d]);
    assert_eq!(code, 0, "{err}");
    assert!(read(&dir.join("report.html")).contains("incomplete last line"));
    std::fs::write(dir.join("history.jsonl"), &history).unwrap();

    let results = read(&dir.join("results.json"));
    std::fs::write(dir.join("results.json"), "{\n  \"valid\": maybe\n}").unwrap();
    let (code, _, err) = watermark(&["report", d]);
    assert_eq!(code, 64);
    assert!(err.contains("results.json:2:"), "{err}");
    std::fs::write(dir.join("results.json"), &results).unwrap();

    let final_log = dir.join("nodes/2/final-log.jsonl");
    let good_log = read(&final_log);
    std::fs::write(&final_log, "{\"topic\": \"queue\"}\n").unwrap();
    let (code, _, err) = watermark(&["report", d]);
    assert_eq!(code, 64);
    assert!(err.contains("nodes/2/final-log.jsonl:1:"), "{err}");
    std::fs::write(&final_log, good_log).unwrap();

    std::fs::remove_file(dir.join("results.json")).unwrap();
    let (code, _, err) = watermark(&["report", d]);
    assert_eq!(code, 64);
    assert!(
        err.contains("results.json is missing") && err.contains("--json >"),
        "{err}"
    );
    std::fs::write(dir.join("results.json"), &results).unwrap();

    // Without run.json the folder's history is reported as any history is:
    // judged as `watermark check` judges it.
    std::fs::remove_file(dir.join("run.json")).unwrap();
    let (code, _, err) = watermark(&["report", d]);
    assert_eq!(code, 0, "{err}");
    assert!(read(&dir.join("report.html")).contains("<a href=\"history.jsonl\">"));
    crate::report_fixtures::queue_run(&dir, 4, 4, 100, Plant::Nothing);

    // A report that cannot be written: exit 3.
    std::fs::remove_file(dir.join("report.html")).unwrap();
    std::fs::create_dir_all(dir.join("report.html/blocked")).unwrap();
    let (code, _, err) = watermark(&["report", d]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("cannot write"), "{err}");
}

/// A raw HTTP/1.1 GET, so the path reaches the server exactly as written.
fn raw_get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut buf = [0u8; 8192];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => resp.push_str(&String::from_utf8_lossy(&buf[..n])),
            Err(e) => panic!("reading {path}: {e}"),
        }
        assert!(
            Instant::now() < deadline,
            "response to {path} took too long"
        );
    }
    let status = resp
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, resp)
}

#[test]
fn serve_lists_runs_newest_first_and_refuses_escapes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results");
    let runs = results_dir(&root);
    for run in &runs[..3] {
        write_reports(run).unwrap();
    }
    std::os::unix::fs::symlink(&runs[2], root.join("latest")).unwrap();
    std::os::unix::fs::symlink("/etc", root.join("escape")).unwrap();
    std::fs::write(tmp.path().join("secret.txt"), "TOP-SECRET").unwrap();
    let server = Server::start(&root);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let base = format!("http://{}", server.addr);
    let (index, report, json) = rt.block_on(async {
        let c = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        let index = c
            .get(format!("{base}/"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let report = c
            .get(format!("{base}/runs/queue-20261129T210000Z-s5/report.html"))
            .send()
            .await
            .unwrap();
        assert_eq!(report.status(), 200);
        assert!(
            report.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        let report = report.text().await.unwrap();
        let json = c
            .get(format!("{base}/runs/latest/results.json"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        (index, report, json)
    });
    assert!(report.contains(r#"data-verdict="invalid""#));
    assert!(json.contains("nonlinearizable"));

    // Newest first, each with workload, seed, verdict and anomaly counts; the
    // broken folder is listed with what is wrong.
    let order: Vec<usize> = [
        "register-20261129T230000Z-s7",
        "queue-20261129T210000Z-s5",
        "queue-20261129T200000Z-s4",
        "queue-20261129T190000Z-s9",
    ]
    .iter()
    .map(|n| {
        index
            .find(&format!("data-run=\"{n}\""))
            .unwrap_or_else(|| panic!("{n} not listed"))
    })
    .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "not newest first: {order:?}"
    );
    assert!(index.contains("1 nonlinearizable"));
    assert!(index.contains("lost-write"));
    assert!(
        index.contains(r#"class="invalid">invalid"#) && index.contains(r#"class="valid">valid"#)
    );
    assert!(
        index.contains("run.json:1:"),
        "broken run.json not reported"
    );
    assert!(index.contains("href=\"/runs/queue-20261129T210000Z-s5/report.html\""));
    assert!(!index.contains("data-run=\"latest\""));

    let (status, body) = raw_get(&server.addr, "/runs/queue-20261129T200000Z-s4/nodes/");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("href=\"1/\""));

    for path in [
        "/runs/../secret.txt",
        "/runs/../../../../etc/passwd",
        "/runs/%2e%2e/secret.txt",
        "/runs/..%2F..%2F..%2Fetc%2Fpasswd",
        "/runs/queue-20261129T200000Z-s4/../../secret.txt",
        "/runs/%2Fetc%2Fpasswd",
        "/runs/escape/passwd",
    ] {
        let (status, body) = raw_get(&server.addr, path);
        assert!(status == 403 || status == 404, "{path}: {status} {body}");
        assert!(
            body.contains("\"error\":"),
            "{path}: not a JSON error: {body}"
        );
        assert!(
            !body.contains("root:") && !body.contains("TOP-SECRET"),
            "{path} leaked a file"
        );
    }
    let (status, body) = raw_get(&server.addr, "/runs/escape/passwd");
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("FORBIDDEN"));
    let (status, _) = raw_get(&server.addr, "/runs/queue-20261129T200000Z-s4/nothing.txt");
    assert_eq!(status, 404);
}

#[test]
fn unknown_verdict_is_an_error_in_junit_and_says_why_in_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("unknown");
    queue_run(&dir, 4, 4, 100, Plant::Nothing);
    let mut results: serde_json::Value =
        serde_json::from_str(&read(&dir.join("results.json"))).unwrap();
    results["valid"] = "unknown".into();
    results["checkers"]["queue"]["valid"] = "unknown".into();
    results["checkers"]["queue"]["reason"] = "no final drain to judge lost writes against".into();
    std::fs::write(dir.join("results.json"), results.to_string()).unwrap();
    write_reports(&dir).unwrap();
    let html = read(&dir.join("report.html"));
    assert!(html.contains(r#"data-verdict="unknown""#));
    assert!(html.contains("no final drain to judge lost writes against"));
    let cases = junit(&dir);
    let checker = cases.iter().find(|(n, _)| n == "checker queue").unwrap();
    match &checker.1 {
        TestCaseStatus::NonSuccess {
            kind: NonSuccessKind::Error,
            message,
            ..
        } => assert!(message.as_ref().unwrap().contains("no final drain")),
        other => panic!("unknown should be an error: {other:?}"),
    }
    let lost = cases.iter().find(|(n, _)| n == "queue lost-write").unwrap();
    assert!(matches!(lost.1, TestCaseStatus::Skipped { .. }), "{lost:?}");
}

#[test]
fn a_flood_of_one_kind_does_not_hide_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("flood");
    queue_run(&dir, 5, 6, 600, Plant::TruncatedTail);
    let mut results: serde_json::Value =
        serde_json::from_str(&read(&dir.join("results.json"))).unwrap();
    let list = results["checkers"]["queue"]["anomalies"]
        .as_array_mut()
        .unwrap();
    let lost = list
        .iter()
        .find(|a| a["kind"] == "lost-write")
        .unwrap()
        .clone();
    let divergence = list
        .iter()
        .position(|a| a["kind"] == "replica-divergence")
        .unwrap();
    let divergence = list.remove(divergence);
    // The overwritten tail also shows as other kinds; only these two matter here.
    list.retain(|a| a["kind"] == "lost-write");
    for _ in 0..300 {
        list.push(lost.clone());
    }
    list.push(divergence);
    std::fs::write(dir.join("results.json"), results.to_string()).unwrap();
    write_reports(&dir).unwrap();
    let html = read(&dir.join("report.html"));
    assert!(html.contains(r#"data-kind="replica-divergence""#));
    assert!(html.contains(r##"href="#kind-replica-divergence""##));
    assert!(html.contains("302 × lost-write"));
    assert!(html.contains("The first 50 are explained below; all 302 are in"));
    assert_eq!(html.matches(r#"data-kind="lost-write""#).count(), 50);
    assert_anchors_resolve(&html);
}

#[test]
fn serve_names_a_missing_results_directory_and_a_bad_address() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    let (code, _, err) = watermark(&["serve", missing.to_str().unwrap()]);
    assert_eq!(code, 64);
    assert!(err.contains("cannot open the results directory"), "{err}");
    let (code, _, err) = watermark(&[
        "serve",
        tmp.path().to_str().unwrap(),
        "--listen",
        "localhost-ish",
    ]);
    assert_eq!(code, 64);
    assert!(err.contains("--listen localhost-ish"), "{err}");
}

#[test]
fn times_out_of_order_do_not_break_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("scrambled");
    queue_run(&dir, 5, 6, 300, Plant::TruncatedTail);
    let history: String = read(&dir.join("history.jsonl"))
        .lines()
        .map(|l| {
            let mut e: serde_json::Value = serde_json::from_str(l).unwrap();
            let i = e["index"].as_u64().unwrap();
            e["time"] = ((i * 7919) % 1000 * 1_000_000).into();
            e.to_string() + "\n"
        })
        .collect();
    std::fs::write(dir.join("history.jsonl"), history).unwrap();
    write_reports(&dir).unwrap();
    let html = read(&dir.join("report.html"));
    assert!(html.contains(r#"data-verdict="invalid""#));
    assert_anchors_resolve(&html);
}

#[test]
fn an_explanation_whose_operations_are_not_in_the_history_still_renders() {
    // A history cut short (e.g. a harness killed mid-write and re-checked from an
    // older results.json) may lack every operation the explanation names.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("register");
    register_run(&dir);
    std::fs::write(dir.join("history.jsonl"), "").unwrap();
    write_reports(&dir).unwrap();
    let html = read(&dir.join("report.html"));
    assert!(html.contains(r#"id="linearization-0""#));
    assert_anchors_resolve(&html);
}
