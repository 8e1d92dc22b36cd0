//! The pages `watermark serve` renders: the index of the results directory (run
//! folders and campaign folders), a campaign folder's page (a row per campaign,
//! and a strip of its verdicts in the order they ran), and the trend (every run's
//! verdict as a coloured cell, by day). Long lists are paged ([`Paging`]:
//! `?page=N`). Every page is plain HTML; nothing is fetched from elsewhere.

use std::fmt::Write as _;
use std::ops::Range;

use super::listing::{Kind, RunRef, RunSummary, tally};
use crate::report::text::escape;

/// Rows of the index and of a campaign page, per page.
pub const ROWS_PER_PAGE: usize = 100;
/// Runs of the trend, per page.
pub const TREND_PER_PAGE: usize = 1000;
/// Cells of a campaign's strip on the index (its latest runs).
const INDEX_STRIP: usize = 60;
/// Cells of a campaign page's strip (its latest runs).
const CAMPAIGN_STRIP: usize = 2000;

const CSS: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:20px;color:#1d2127}table{border-collapse:collapse}td,th{border:1px solid #dde1e6;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f0f2f5}td.time{white-space:nowrap}.valid{color:#2e8540;font-weight:700}.invalid{color:#c62828;font-weight:700}.unknown{color:#b26a00;font-weight:700}.broken{color:#777}code{font-size:12.5px}nav{margin:0 0 10px}nav a,nav b{margin-right:12px}.paging{margin:8px 0}.paging a,.paging span{margin-right:10px}.strip{line-height:0;max-width:900px}.cell{display:inline-block;width:10px;height:18px;margin:0 2px 2px 0;border-radius:2px;background:#c9ced6}.cell:hover{outline:2px solid #0b57d0}.c-valid{background:#2e8540}.c-invalid{background:#c62828}.c-unknown{background:#e0a030}.c-harness-failed{background:#4a148c}.c-interrupted{background:#7a7f87}.c-unfinished{background:#dde1e6}.c-unreadable{background:repeating-linear-gradient(45deg,#bbb 0 3px,#eee 3px 6px)}.legend span{margin-right:14px;white-space:nowrap}.legend .cell{vertical-align:middle;margin-right:4px}tr.campaign td:first-child{font-weight:600}";

/// Which page of a list is shown: `page` from 1, `per_page` rows, of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paging {
    pub page: usize,
    pub per_page: usize,
    pub total: usize,
}

impl Paging {
    /// Page `page` of `total` rows, or why there is no such page.
    pub fn new(page: usize, per_page: usize, total: usize) -> Result<Paging, String> {
        let paging = Paging {
            page,
            per_page,
            total,
        };
        if page == 0 || page > paging.pages() {
            return Err(format!(
                "no page {page}: pages go from 1 to {}",
                paging.pages()
            ));
        }
        Ok(paging)
    }

    /// How many pages (at least one, even of nothing).
    pub fn pages(&self) -> usize {
        self.total.div_ceil(self.per_page).max(1)
    }

    /// The rows shown, by position.
    pub fn range(&self) -> Range<usize> {
        let start = (self.page - 1) * self.per_page;
        start.min(self.total)..(start + self.per_page).min(self.total)
    }

    /// Links to the other pages of `base` (a path, without query); empty when there
    /// is one page.
    pub fn nav(&self, base: &str) -> String {
        if self.pages() == 1 {
            return String::new();
        }
        let link = |p: usize, text: &str, class: &str| {
            format!("<a class=\"{class}\" href=\"{base}?page={p}\">{text}</a>")
        };
        let mut out = String::from("<p class=\"paging\">");
        if self.page > 1 {
            out.push_str(&link(1, "« first", "first"));
            out.push_str(&link(self.page - 1, "‹ previous", "prev"));
        }
        let r = self.range();
        let _ = write!(
            out,
            "<span class=\"where\">page {} of {} ({}–{} of {})</span>",
            self.page,
            self.pages(),
            r.start + 1,
            r.end,
            self.total
        );
        if self.page < self.pages() {
            out.push_str(&link(self.page + 1, "next ›", "next"));
            out.push_str(&link(self.pages(), "last »", "last"));
        }
        out.push_str("</p>");
        out
    }
}

/// Percent-encode a path segment for an href.
pub fn encode(segment: &str) -> String {
    let mut out = String::new();
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Percent-encode a `/`-separated path, segment by segment.
pub fn encode_path(rel: &str) -> String {
    rel.split('/').map(encode).collect::<Vec<_>>().join("/")
}

/// The top of every page: its title and the links between the pages.
pub fn head(title: &str, here: &str) -> String {
    let mut nav = String::new();
    for (href, text) in [("/", "runs"), ("/trend", "trend")] {
        if href == here {
            let _ = write!(nav, "<b>{text}</b>");
        } else {
            let _ = write!(nav, "<a href=\"{href}\">{text}</a>");
        }
    }
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{CSS}</style></head><body><h1>{t}</h1><nav>{nav}</nav>",
        t = escape(title)
    )
}

/// The end of every page.
pub const FOOT: &str = "</body></html>";

/// The link a run's cell and name lead to: its report, else its folder.
fn run_href(run: &RunRef) -> String {
    let base = format!("/runs/{}/", encode_path(&run.rel));
    if run.has_report {
        base + "report.html"
    } else {
        base
    }
}

/// One coloured cell per run, linking to its report.
pub fn strip(runs: &[RunRef], id: &str) -> String {
    let mut out = format!("<div class=\"strip\" id=\"{}\">", escape(id));
    for r in runs {
        let _ = write!(
            out,
            "<a class=\"cell c-{o}\" data-outcome=\"{o}\" href=\"{}\" title=\"{} · {o} · {}\"></a>",
            run_href(r),
            escape(&r.rel),
            escape(r.started_at.as_deref().unwrap_or("?")),
            o = escape(&r.outcome),
        );
    }
    out.push_str("</div>");
    out
}

/// What each colour of a strip means.
pub fn legend() -> String {
    let mut out = String::from("<p class=\"legend\">");
    for o in [
        "valid",
        "invalid",
        "unknown",
        "harness-failed",
        "interrupted",
        "unfinished",
        "unreadable",
    ] {
        let _ = write!(out, "<span><i class=\"cell c-{o}\"></i>{o}</span>");
    }
    out.push_str("</p>");
    out
}

/// `3 valid, 1 invalid`.
pub fn tally_text(runs: &[RunRef]) -> String {
    let t = tally(runs);
    if t.is_empty() {
        return "no runs".to_string();
    }
    t.iter()
        .map(|(o, n)| format!("{n} {o}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The header row of a table of runs; `within` adds the columns of a campaign
/// page (its position, and where inside the campaign folder it lies).
pub fn runs_header(within: bool) -> String {
    let extra = if within { "<th>#</th>" } else { "" };
    let place = if within { "<th>in</th>" } else { "" };
    format!(
        "<table id=\"runs\"><tr>{extra}<th>run</th>{place}<th>workload</th><th>seed</th><th>started</th><th>verdict</th><th>anomalies</th><th>files</th></tr>"
    )
}

/// One run's row; `within`: its position and its campaign folder's name.
pub fn run_row(s: &RunSummary, within: Option<(usize, &str)>) -> String {
    let run = &s.run;
    let base = format!("/runs/{}/", encode_path(&run.rel));
    let name_cell = if run.has_report {
        format!(
            "<a class=\"report-link\" href=\"{base}report.html\">{}</a>",
            escape(run.name())
        )
    } else {
        escape(run.name())
    };
    let anomalies = if s.anomalies.is_empty() {
        "—".to_string()
    } else {
        s.anomalies
            .iter()
            .map(|(k, n)| format!("{n} {}", escape(k)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut files = String::new();
    for f in &s.files {
        let slash = if *f == "nodes" { "/" } else { "" };
        let _ = write!(files, "<a href=\"{base}{f}{slash}\">{f}{slash}</a> ");
    }
    let problems = if s.problems.is_empty() {
        String::new()
    } else {
        format!(
            "<br><span class=\"broken\">{}</span>",
            escape(&s.problems.join("; "))
        )
    };
    let verdict_class = match s.verdict.as_str() {
        "valid" | "invalid" | "unknown" => s.verdict.as_str(),
        _ => "broken",
    };
    let (number, place) = match within {
        Some((i, campaign)) => {
            let inside = run.within(campaign);
            (
                format!("<td>{i}</td>"),
                format!(
                    "<td>{}</td>",
                    if inside.is_empty() {
                        "—".to_string()
                    } else {
                        escape(&inside)
                    }
                ),
            )
        }
        None => (String::new(), String::new()),
    };
    format!(
        "<tr class=\"run\" data-run=\"{}\">{number}<td>{name_cell}{problems}</td>{place}<td>{}</td><td>{}</td><td class=\"time\">{}</td><td class=\"{verdict_class}\">{}</td><td>{anomalies}</td><td>{files}</td></tr>",
        escape(&run.rel),
        escape(s.workload.as_deref().unwrap_or("?")),
        escape(s.seed.as_deref().unwrap_or("?")),
        escape(run.started_at.as_deref().unwrap_or("?")),
        escape(&s.verdict),
    )
}

/// A campaign folder's row on the index: its kind, how many runs and how they
/// ended, and a strip of its latest verdicts.
pub fn campaign_row(name: &str, kind: Kind, started_at: Option<&str>, runs: &[RunRef]) -> String {
    let latest = &runs[runs.len().saturating_sub(INDEX_STRIP)..];
    let more = if latest.len() < runs.len() {
        format!(
            " <small>(the last {} of {})</small>",
            latest.len(),
            runs.len()
        )
    } else {
        String::new()
    };
    format!(
        "<tr class=\"campaign\" data-campaign=\"{n}\"><td><a class=\"campaign-link\" href=\"/campaigns/{}/\">{n}</a></td><td colspan=\"2\">{} of {} runs</td><td class=\"time\">{}</td><td colspan=\"2\">{}</td><td>{}{more}</td></tr>",
        encode_path(name),
        kind.name(),
        runs.len(),
        escape(started_at.unwrap_or("?")),
        escape(&tally_text(runs)),
        strip(latest, &format!("strip-{name}")),
        n = escape(name),
    )
}

/// A campaign page's header: what the folder is, its verdicts in the order they
/// ran, and what its own summary says.
pub fn campaign_head(name: &str, kind: Kind, runs: &[RunRef], said: Option<&str>) -> String {
    let mut out = head(name, "");
    let _ = write!(
        out,
        "<p><a href=\"/runs/{}/\">the folder's files</a></p><p id=\"campaign-summary\">{}: {} runs — {}{}</p>",
        encode_path(name),
        kind.name(),
        runs.len(),
        escape(&tally_text(runs)),
        said.map(|s| format!("; {}", escape(s))).unwrap_or_default()
    );
    let shown = &runs[runs.len().saturating_sub(CAMPAIGN_STRIP)..];
    let _ = write!(
        out,
        "<h2>Verdicts, in the order they ran</h2>{}{}",
        legend(),
        strip(shown, "campaign-strip")
    );
    if shown.len() < runs.len() {
        let _ = write!(
            out,
            "<p>The last {} of {} runs; every one is in the table below.</p>",
            shown.len(),
            runs.len()
        );
    }
    out
}

/// The trend: runs by UTC day, newest day first, each day a strip of its runs in
/// the order they started.
pub fn trend(runs_newest_first: &[RunRef], paging: &Paging) -> String {
    let mut out = head("watermark trend", "/trend");
    let _ = write!(
        out,
        "<p id=\"trend-count\">{} runs, campaign folders included: one cell per run, coloured by how it ended, a row per day (UTC), newest first. A cell leads to the run's report.</p>{}{}",
        paging.total,
        legend(),
        paging.nav("/trend")
    );
    out.push_str("<table id=\"trend\"><tr><th>day</th><th>runs</th><th>verdicts</th><th>runs, in the order they started</th></tr>");
    let page = &runs_newest_first[paging.range()];
    let mut days: Vec<(&str, Vec<RunRef>)> = Vec::new();
    for r in page {
        let day = r
            .started_at
            .as_deref()
            .and_then(|s| s.get(..10))
            .unwrap_or("unknown");
        match days.last_mut() {
            Some((d, list)) if *d == day => list.push(r.clone()),
            _ => days.push((day, vec![r.clone()])),
        }
    }
    for (day, mut list) in days {
        list.reverse();
        let _ = write!(
            out,
            "<tr class=\"day\" data-day=\"{d}\"><td class=\"time\">{d}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            list.len(),
            escape(&tally_text(&list)),
            strip(&list, &format!("day-{day}")),
            d = escape(day),
        );
    }
    out.push_str("</table>");
    out.push_str(&paging.nav("/trend"));
    out.push_str(FOOT);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_cover_every_row_once_and_refuse_others() {
        let p = Paging::new(1, 100, 0).unwrap();
        assert_eq!((p.pages(), p.range()), (1, 0..0));
        assert_eq!(p.nav("/"), "");
        let p = Paging::new(3, 100, 250).unwrap();
        assert_eq!((p.pages(), p.range()), (3, 200..250));
        let nav = p.nav("/x");
        assert!(nav.contains("page 3 of 3 (201–250 of 250)"), "{nav}");
        assert!(nav.contains(r#"href="/x?page=2""#) && !nav.contains("next"));
        let p = Paging::new(1, 100, 250).unwrap();
        assert!(p.nav("/").contains(r#"class="next" href="/?page=2""#));
        assert_eq!(Paging::new(2, 100, 200).unwrap().range(), 100..200);
        assert!(Paging::new(3, 100, 200).is_err());
        assert!(Paging::new(0, 100, 200).is_err());
        assert!(Paging::new(2, 100, 0).unwrap_err().contains("from 1 to 1"));
    }

    #[test]
    fn strips_and_days_link_each_run_to_its_report() {
        let run = |rel: &str, at: &str, outcome: &str| RunRef {
            rel: rel.into(),
            started_at: Some(at.into()),
            outcome: outcome.into(),
            has_report: outcome != "unfinished",
        };
        let runs = vec![
            run("b/q-2", "2026-11-30T09:00:00Z", "invalid"),
            run("q-1", "2026-11-29T10:00:00Z", "valid"),
            run("a b/q-0", "2026-11-29T08:00:00Z", "unfinished"),
        ];
        let s = strip(&runs, "s");
        assert!(s.contains(
            r#"class="cell c-invalid" data-outcome="invalid" href="/runs/b/q-2/report.html""#
        ));
        assert!(s.contains(r#"href="/runs/a%20b/q-0/""#), "{s}");
        let page = trend(&runs, &Paging::new(1, TREND_PER_PAGE, 3).unwrap());
        let d29 = page.find(r#"data-day="2026-11-29""#).unwrap();
        let d30 = page.find(r#"data-day="2026-11-30""#).unwrap();
        assert!(d30 < d29, "newest day first");
        let day29 = &page[d29..];
        assert!(
            day29.find("a%20b/q-0").unwrap() < day29.find("/runs/q-1/").unwrap(),
            "within a day, in the order they started"
        );
        assert!(page.contains("1 valid, 1 unfinished"));
    }
}
