//! The reports in a real browser: headless Chromium driven over chromedriver's
//! WebDriver HTTP API opens report.html files and the `watermark serve` pages — the
//! index and its pages, a campaign folder's page, the trend — checks what a reader
//! needs is there (verdict, anomalies, working links into the timeline, shaded
//! faults, no network fetches, rows and coloured cells leading to reports), and
//! saves screenshots.
//!
//! Needs Debian's `chromium` and `chromium-driver` (.ci/run installs them). In CI
//! (`CI=true`) a missing browser fails the test; locally it is skipped, loudly.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::report_fixtures::{Plant, Server, campaigns_dir, queue_run, results_dir};
use serde_json::{Value, json};
use watermark::report::write_reports;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// chromedriver (and the Chromium it starts) in its own process group, killed
/// with the whole group on drop — also when a test panics.
struct Driver {
    child: Child,
    base: String,
    session: Option<String>,
    client: reqwest::Client,
    _profile: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: killpg on the group we created for chromedriver.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Driver {
    async fn start() -> Driver {
        let port = free_port();
        let mut cmd = Command::new(CHROMEDRIVER);
        cmd.arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        // SAFETY: prctl is async-signal-safe; it only asks for SIGKILL when we die.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start chromedriver");
        let profile = tempfile::tempdir().unwrap();
        let mut d = Driver {
            child,
            base: format!("http://127.0.0.1:{port}"),
            session: None,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .build()
                .unwrap(),
            _profile: profile,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = d
                .client
                .get(format!("{}/status", d.base))
                .send()
                .await
                .ok()
                .map(|r| r.status().is_success())
                .unwrap_or(false);
            if ready {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not answer within 60 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let args = vec![
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-dev-shm-usage".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--no-first-run".into(),
            "--hide-scrollbars".into(),
            format!("--user-data-dir={}", d._profile.path().display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args}
        }}});
        let v = d.call("POST", "/session", Some(caps)).await;
        d.session = Some(
            v["sessionId"]
                .as_str()
                .unwrap_or_else(|| panic!("no session: {v}"))
                .to_string(),
        );
        d.session_call(
            "POST",
            "/window/rect",
            Some(json!({"width": 1280, "height": 1000})),
        )
        .await;
        d
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.base);
        let req = match method {
            "GET" => self.client.get(&url),
            "DELETE" => self.client.delete(&url),
            _ => self.client.post(&url).json(&body.unwrap_or(json!({}))),
        };
        let resp = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = resp.status();
        let v: Value = resp.json().await.unwrap();
        assert!(status.is_success(), "{method} {path}: {status} {v}");
        v["value"].clone()
    }

    async fn session_call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let s = self.session.as_ref().unwrap();
        self.call(method, &format!("/session/{s}{path}"), body)
            .await
    }

    async fn goto(&self, url: &str) {
        self.session_call("POST", "/url", Some(json!({"url": url})))
            .await;
    }

    async fn eval(&self, script: &str) -> Value {
        self.session_call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    async fn click(&self, css: &str) {
        let el = self
            .session_call(
                "POST",
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        let id = el
            .as_object()
            .and_then(|m| m.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}"))
            .to_string();
        self.session_call("POST", &format!("/element/{id}/click"), None)
            .await;
    }

    /// A screenshot of the whole page (the window grown to the page's height).
    async fn screenshot(&self, file: &Path, full_page: bool) {
        if full_page {
            let height = self
                .eval("return document.documentElement.scrollHeight")
                .await
                .as_u64()
                .unwrap_or(1200)
                .clamp(600, 12_000);
            self.session_call(
                "POST",
                "/window/rect",
                Some(json!({"width": 1280, "height": height})),
            )
            .await;
        }
        let b64 = self.session_call("GET", "/screenshot", None).await;
        let png = base64_decode(b64.as_str().expect("screenshot is base64"));
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        std::fs::write(file, png).unwrap();
        eprintln!("screenshot: {}", file.display());
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter_map(val) {
        acc = (acc << 6) | c;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// Chromium present, or the reason this test cannot run.
fn browser_available() -> bool {
    let present = Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists();
    if !present {
        let msg = format!(
            "browser test needs {CHROMIUM} and {CHROMEDRIVER}: apt-get install -y chromium chromium-driver (.ci/run does this)"
        );
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg}");
        }
        eprintln!("\n!!!!!!!! SKIPPING the browser test: {msg} !!!!!!!!\n");
    }
    present
}

fn screenshot_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser-screenshots");
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_and_index_render_in_headless_chromium() {
    if !browser_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results");
    let runs = results_dir(&root);
    for run in &runs[..3] {
        write_reports(run).unwrap();
    }
    let shots = screenshot_dir();
    let driver = Driver::start().await;

    // The invalid queue run, opened as a plain file: no network at all.
    let invalid = runs[1].join("report.html");
    driver.goto(&format!("file://{}", invalid.display())).await;
    let facts = driver
        .eval(
            r##"return {
            verdict: document.querySelector('#verdict').textContent,
            kinds: [...document.querySelectorAll('section.anomaly')].map(s => s.dataset.kind),
            faults: document.querySelectorAll('#timeline-plot rect.fault').length,
            latencyFaults: document.querySelectorAll('#latency-plot rect.fault').length,
            ops: document.querySelectorAll('#timeline-plot rect.ok, #timeline-plot rect.fail, #timeline-plot rect.info').length,
            width: document.querySelector('#timeline-plot').getBoundingClientRect().width,
            resources: performance.getEntriesByType('resource').map(e => e.name),
            dangling: [...document.querySelectorAll('a[href^="#"]')]
                .filter(a => !document.getElementById(a.getAttribute('href').slice(1)))
                .map(a => a.getAttribute('href')),
        }"##,
        )
        .await;
    assert_eq!(facts["verdict"], "INVALID", "{facts}");
    let kinds = facts["kinds"].as_array().unwrap();
    assert!(kinds.contains(&json!("lost-write")), "{facts}");
    assert!(kinds.contains(&json!("replica-divergence")), "{facts}");
    assert_eq!(facts["faults"], 3, "three fault periods shaded: {facts}");
    assert_eq!(facts["latencyFaults"], 3, "{facts}");
    assert!(facts["ops"].as_u64().unwrap() > 100, "{facts}");
    assert!(facts["width"].as_f64().unwrap() > 800.0, "{facts}");
    assert_eq!(
        facts["resources"],
        json!([]),
        "the report fetched something"
    );
    assert_eq!(facts["dangling"], json!([]), "links without targets");
    driver
        .screenshot(&shots.join("report-invalid.png"), true)
        .await;

    // Following an anomaly's operation lands on its mark on the timeline.
    driver
        .session_call(
            "POST",
            "/window/rect",
            Some(json!({"width": 1280, "height": 1000})),
        )
        .await;
    driver.click("section.anomaly a.op-link").await;
    let landed = driver
        .eval(
            r#"const id = location.hash.slice(1);
            const el = document.getElementById(id);
            const r = el.getBoundingClientRect();
            return {id, top: r.top, inView: r.top >= 0 && r.bottom <= window.innerHeight + 1};"#,
        )
        .await;
    assert!(
        landed["id"].as_str().unwrap().starts_with("op-"),
        "{landed}"
    );
    assert_eq!(landed["inView"], true, "{landed}");
    driver
        .screenshot(&shots.join("report-invalid-jump.png"), false)
        .await;

    // The register run's linearization picture.
    driver
        .goto(&format!("file://{}", runs[2].join("report.html").display()))
        .await;
    let lin = driver
        .eval(
            r#"return {
            bad: document.querySelectorAll('#linearization-0 rect.lin-bad').length,
            ok: document.querySelectorAll('#linearization-0 rect.lin-ok').length,
            text: document.querySelector('#linearization-0').innerText,
        }"#,
        )
        .await;
    assert_eq!(lin["bad"], 1, "{lin}");
    // Two writes linearized; the indeterminate cas nothing observed is not drawn.
    assert_eq!(lin["ok"], 2, "{lin}");
    assert!(
        lin["text"]
            .as_str()
            .unwrap()
            .contains("cannot be linearized next")
    );
    driver
        .screenshot(&shots.join("report-register.png"), true)
        .await;

    driver
        .goto(&format!("file://{}", runs[0].join("report.html").display()))
        .await;
    let v = driver
        .eval("return document.querySelector('#verdict').textContent")
        .await;
    assert_eq!(v, "VALID");
    driver
        .screenshot(&shots.join("report-valid.png"), true)
        .await;

    // The serve index, and from it a report.
    let server = Server::start(&root);
    driver.goto(&format!("http://{}/", server.addr)).await;
    let index = driver
        .eval(
            r#"return {
            rows: [...document.querySelectorAll('tr.run')].map(r => r.dataset.run),
            links: document.querySelectorAll('a.report-link').length,
        }"#,
        )
        .await;
    assert_eq!(
        index["rows"],
        json!([
            "register-20261129T230000Z-s7",
            "queue-20261129T210000Z-s5",
            "queue-20261129T200000Z-s4",
            "queue-20261129T190000Z-s9"
        ]),
        "{index}"
    );
    assert_eq!(index["links"], 3, "{index}");
    driver
        .session_call(
            "POST",
            "/window/rect",
            Some(json!({"width": 1280, "height": 700})),
        )
        .await;
    driver.screenshot(&shots.join("index.png"), false).await;
    driver
        .click(r#"tr.run[data-run="queue-20261129T210000Z-s5"] a.report-link"#)
        .await;
    let v = driver
        .eval("return document.querySelector('#verdict').textContent")
        .await;
    assert_eq!(v, "INVALID");
    eprintln!("screenshots in {}", shots.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_pages_campaign_folders_and_the_trend_in_headless_chromium() {
    if !browser_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results");
    let runs = results_dir(&root);
    for run in &runs[..3] {
        write_reports(run).unwrap();
    }
    let (series, _selftest) = campaigns_dir(&root, 120, 130);
    // One campaign of the series with a whole run folder and its report.
    let real = root.join(&series).join("queue-20261129T210000Z-s2001");
    queue_run(&real, 2001, 6, 300, Plant::TruncatedTail);
    write_reports(&real).unwrap();
    let shots = screenshot_dir();
    let driver = Driver::start().await;
    let server = Server::start(&root);
    let base = format!("http://{}", server.addr);
    let rows = r#"return {
        runs: document.querySelectorAll('tr.run').length,
        campaigns: [...document.querySelectorAll('tr.campaign')].map(r => r.dataset.campaign),
        where: (document.querySelector('.paging .where') || {}).textContent,
        url: location.href,
    }"#;

    // 120 loose runs, 4 fixtures and 2 campaign folders: two pages of the index.
    driver.goto(&format!("{base}/")).await;
    let page1 = driver.eval(rows).await;
    assert_eq!(page1["runs"], 98, "{page1}");
    assert_eq!(page1["campaigns"].as_array().unwrap().len(), 2, "{page1}");
    assert_eq!(page1["where"], "page 1 of 2 (1–100 of 126)", "{page1}");
    driver
        .screenshot(&shots.join("index-page1.png"), true)
        .await;
    driver.click(".paging a.next").await;
    let page2 = driver.eval(rows).await;
    assert_eq!(page2["runs"], 26, "{page2}");
    assert!(
        page2["url"].as_str().unwrap().ends_with("/?page=2"),
        "{page2}"
    );

    // From the index to the series' page: a row per campaign, a cell per campaign.
    driver.goto(&format!("{base}/")).await;
    driver
        .click(&format!(
            r#"tr.campaign[data-campaign="{series}"] a.campaign-link"#
        ))
        .await;
    let page = driver
        .eval(
            r#"return {
            url: location.href,
            rows: document.querySelectorAll('tr.run').length,
            cells: document.querySelectorAll('#campaign-strip a.cell').length,
            invalid: document.querySelectorAll('#campaign-strip a.cell.c-invalid').length,
            summary: document.querySelector('#campaign-summary').textContent,
            first: document.querySelector('tr.run').dataset.run,
            cellWidth: document.querySelector('#campaign-strip a.cell').getBoundingClientRect().width,
            invalidColour: getComputedStyle(document.querySelector('#campaign-strip a.cell.c-invalid')).backgroundColor,
            resources: performance.getEntriesByType('resource').map(e => e.name),
        }"#,
        )
        .await;
    assert!(
        page["url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/campaigns/{series}/")),
        "{page}"
    );
    assert_eq!(page["rows"], 100, "{page}");
    assert_eq!(page["cells"], 131, "{page}");
    assert_eq!(page["invalid"], 44, "{page}");
    assert!(
        page["summary"]
            .as_str()
            .unwrap()
            .starts_with("series: 131 runs"),
        "{page}"
    );
    assert_eq!(
        page["first"],
        format!("{series}/queue-20261129T210000Z-s2001"),
        "in the order they ran: {page}"
    );
    assert!(page["cellWidth"].as_f64().unwrap() >= 8.0, "{page}");
    assert_eq!(page["invalidColour"], "rgb(198, 40, 40)", "{page}");
    assert_eq!(page["resources"], json!([]), "the page fetched something");
    driver.screenshot(&shots.join("campaign.png"), true).await;
    // Its cell leads to its report.
    driver
        .click(r#"#campaign-strip a.cell[href$="s2001/report.html"]"#)
        .await;
    let v = driver
        .eval("return document.querySelector('#verdict').textContent")
        .await;
    assert_eq!(v, "INVALID");
    // The campaign page's second page of rows.
    driver.goto(&format!("{base}/campaigns/{series}/")).await;
    driver.click(".paging a.next").await;
    let second = driver.eval(rows).await;
    assert_eq!(second["runs"], 31, "{second}");

    // The trend: every run, a row per day, each cell a link.
    driver.click(r#"nav a[href="/trend"]"#).await;
    let trend = driver
        .eval(
            r#"return {
            days: [...document.querySelectorAll('tr.day')].map(r => r.dataset.day),
            cells: document.querySelectorAll('#trend a.cell').length,
            linked: [...document.querySelectorAll('#trend a.cell')].every(a => a.href.includes('/runs/')),
            sized: [...document.querySelectorAll('#trend a.cell')].every(a => a.getBoundingClientRect().height >= 10),
        }"#,
        )
        .await;
    let days = trend["days"].as_array().unwrap();
    assert_eq!(days.first().unwrap(), "2026-11-30", "{trend}");
    assert!(days.contains(&json!("2026-11-29")), "{trend}");
    assert_eq!(trend["cells"], 120 + 4 + 131 + 2, "{trend}");
    assert_eq!(trend["linked"], true);
    assert_eq!(trend["sized"], true);
    driver.screenshot(&shots.join("trend.png"), true).await;
    driver
        .click(r#"tr.day[data-day="2026-11-29"] a.cell.c-invalid[href$="s5/report.html"]"#)
        .await;
    let v = driver
        .eval("return document.querySelector('#verdict').textContent")
        .await;
    assert_eq!(v, "INVALID");
    eprintln!("screenshots in {}", shots.display());
}
