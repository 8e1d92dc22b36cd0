//! `watermark serve` over real HTTP, without a browser: the index pages past a few
//! hundred runs (`?page=N`, 100 rows a page), a `--test-count` series and a
//! self-test are campaign folders with a page each (a row per campaign, paged, and
//! a strip of verdicts), the trend has a cell per run by day, and no path — of a
//! page or a file — leads outside the results directory.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::report_fixtures::{Server, campaigns_dir, results_dir};
use watermark::report::write_reports;

/// A raw HTTP/1.1 GET, so the path reaches the server exactly as written: the
/// status, the Location header (if any) and the body.
fn get(addr: &str, path: &str) -> (u16, Option<String>, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut bytes = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) => panic!("reading {path}: {e}"),
        }
        assert!(Instant::now() < deadline, "{path} took too long");
    }
    let resp = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let location = head
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .map(str::to_string);
    // Chunked bodies keep their chunk sizes; the tests only search them.
    (status, location, body.to_string())
}

fn count(body: &str, needle: &str) -> usize {
    body.matches(needle).count()
}

#[test]
fn the_index_pages_campaign_folders_have_pages_and_the_trend_a_cell_per_run() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results");
    let fixtures = results_dir(&root);
    write_reports(&fixtures[1]).unwrap();
    let (series, selftest) = campaigns_dir(&root, 250, 130);
    std::os::unix::fs::symlink("/etc", root.join("escape")).unwrap();
    std::os::unix::fs::symlink(root.join(&series), root.join("latest")).unwrap();
    std::fs::write(tmp.path().join("secret.txt"), "TOP-SECRET").unwrap();
    let server = Server::start(&root);
    let addr = server.addr.as_str();

    // 250 loose runs + 4 fixture runs + 2 campaign folders = 256 rows: 3 pages,
    // newest first, the campaign folders on top.
    let (status, _, page1) = get(addr, "/");
    assert_eq!(status, 200);
    assert!(
        page1.contains("254 runs and 2 campaign folders, newest first."),
        "{page1}"
    );
    assert_eq!(
        count(&page1, "<tr class=\"run\"") + count(&page1, "<tr class=\"campaign\""),
        100
    );
    let series_row = page1.find(&format!("data-campaign=\"{series}\"")).unwrap();
    let selftest_row = page1
        .find(&format!("data-campaign=\"{selftest}\""))
        .unwrap();
    assert!(selftest_row < series_row, "newest first");
    assert!(page1.find("<tr class=\"run\"").unwrap() > series_row);
    assert!(page1.contains(&format!("href=\"/campaigns/{series}/\"")));
    assert!(page1.contains("series of 130 runs"), "{page1}");
    assert!(page1.contains("87 valid, 43 invalid"), "{page1}");
    assert!(page1.contains("(the last 60 of 130)"));
    assert!(page1.contains("page 1 of 3 (1–100 of 256)"));
    assert!(page1.contains(r#"class="next" href="/?page=2""#));
    let (_, _, page3) = get(addr, "/?page=3");
    assert_eq!(count(&page3, "<tr class=\"run\""), 56);
    assert!(
        page3.contains("data-run=\"queue-20261120T000000Z-s0\""),
        "the oldest last"
    );
    assert!(
        page1.contains("data-run=\"queue-20261129T190000Z-s9\""),
        "the broken folder too"
    );
    assert!(page3.contains(r#"class="prev" href="/?page=2""#) && !page3.contains("class=\"next\""));
    let (_, _, page2) = get(addr, "/?page=2");
    let rows = |p: &str| -> Vec<String> {
        p.split("data-run=\"")
            .skip(1)
            .map(|s| s[..s.find('"').unwrap()].to_string())
            .collect()
    };
    let mut seen: Vec<String> = [rows(&page1), rows(&page2), rows(&page3)].concat();
    assert_eq!(seen.len(), 254, "every run once, on one page");
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 254);
    for (path, status, code) in [
        ("/?page=4", 404, "NO_SUCH_PAGE"),
        ("/?page=0", 404, "NO_SUCH_PAGE"),
        ("/?page=two", 400, "BAD_PAGE"),
        ("/trend?page=2", 404, "NO_SUCH_PAGE"),
        (&format!("/campaigns/{series}/?page=3"), 404, "NO_SUCH_PAGE"),
    ] {
        let (got, _, body) = get(addr, path);
        assert_eq!(got, status, "{path}: {body}");
        assert!(
            body.contains(&format!("\"error\":\"{code}\"")),
            "{path}: {body}"
        );
    }

    // The series: a row per campaign in the order they ran, numbered, 100 a page;
    // its strip has every campaign; its summary's outcome is said.
    let (status, _, campaign) = get(addr, &format!("/campaigns/{series}/"));
    assert_eq!(status, 200, "{campaign}");
    assert!(campaign.contains("series: 130 runs — 87 valid, 43 invalid; its summary: invalid"));
    assert_eq!(count(&campaign, "<tr class=\"run\""), 100);
    assert_eq!(count(&campaign, "<a class=\"cell c-"), 130);
    assert_eq!(count(&campaign, "<a class=\"cell c-invalid\""), 43);
    let first = format!("data-run=\"{series}/queue-20261130T100000Z-s1000\"><td>1</td>");
    assert!(campaign.contains(&first), "{campaign}");
    assert!(campaign.contains(&format!(
        "href=\"/runs/{series}/queue-20261130T100000Z-s1000/results.json\""
    )));
    let (_, _, second) = get(addr, &format!("/campaigns/{series}/?page=2"));
    assert_eq!(count(&second, "<tr class=\"run\""), 30);
    assert!(second.contains("<td>130</td>"));
    // The self-test: where each run lies inside it.
    let (_, _, st) = get(addr, &format!("/campaigns/{selftest}/"));
    assert_eq!(count(&st, "<tr class=\"run\""), 2);
    assert!(
        st.contains("<td>abort/seed-5</td>") && st.contains("<td>clean/seed-5</td>"),
        "{st}"
    );
    assert!(st.contains("self-test: 2 runs — 1 valid, 1 invalid"));
    // Any folder of runs inside it has a page too.
    let (status, _, bug) = get(addr, &format!("/campaigns/{selftest}/abort/"));
    assert_eq!(status, 200);
    assert_eq!(count(&bug, "<tr class=\"run\""), 1);
    // Without the slash, and a run folder instead of a campaign: redirects.
    let (status, location, _) = get(addr, &format!("/campaigns/{series}"));
    assert_eq!(
        (status, location.as_deref()),
        (308, Some(&*format!("/campaigns/{series}/")))
    );
    let (status, location, _) = get(addr, "/campaigns/queue-20261129T210000Z-s5/");
    assert_eq!(status, 303);
    assert_eq!(
        location.as_deref(),
        Some("/runs/queue-20261129T210000Z-s5/")
    );
    let (status, location, _) = get(addr, "/campaigns/latest/");
    assert_eq!((status, location), (200, None), "a link inside is followed");

    // The trend: every run (campaigns' included), a row per day, newest day first.
    let (status, _, trend) = get(addr, "/trend");
    assert_eq!(status, 200);
    assert!(
        trend.contains("386 runs, campaign folders included"),
        "{trend}"
    );
    assert_eq!(count(&trend, "<a class=\"cell c-"), 386);
    assert_eq!(count(&trend, "<a class=\"cell c-unreadable\""), 1);
    let d30 = trend.find("data-day=\"2026-11-30\"").unwrap();
    let d20 = trend.find("data-day=\"2026-11-20\"").unwrap();
    assert!(d30 < d20);
    assert!(trend.contains(
        "<a class=\"cell c-invalid\" data-outcome=\"invalid\" href=\"/runs/queue-20261129T210000Z-s5/report.html\""
    ));

    // Nothing outside the results directory, by any route.
    for path in [
        "/campaigns/../secret.txt",
        "/campaigns/%2e%2e/",
        "/campaigns/..%2F..%2Fetc/",
        "/campaigns/%2Fetc/",
        "/campaigns/escape/",
        &format!("/campaigns/{series}/../../"),
        "/runs/../secret.txt",
        "/runs/escape/passwd",
        "/trend/../../etc/passwd",
    ] {
        let (status, _, body) = get(addr, path);
        assert!(status == 403 || status == 404, "{path}: {status} {body}");
        assert!(
            body.contains("\"error\":"),
            "{path}: not a JSON error: {body}"
        );
        assert!(
            !body.contains("root:") && !body.contains("TOP-SECRET"),
            "{path} leaked"
        );
    }
    let (status, _, body) = get(addr, "/campaigns/escape/");
    assert_eq!(status, 403, "{body}");
}
