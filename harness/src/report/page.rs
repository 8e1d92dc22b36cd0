//! `report.html`: one self-contained page a person reads when a campaign fails.
//!
//! Top to bottom: the verdict (and, once `watermark shrink` ran, its minimal
//! reproducer); each anomaly in words with its
//! operations (linked to their marks on the timeline) and a close-up timeline of
//! the moments around it; for non-linearizable keys a Porcupine-style picture of
//! the longest linearizable prefix and the operation that cannot follow it; the
//! configuration, folded behind a line of its essentials, and the checkers; then
//! the whole run — operations per process, latency and throughput — with fault
//! periods shaded; for a Maelstrom system (`--bin`) its messages, and around each
//! anomaly's operations a sequence picture of them. No script, font or image is
//! fetched: CSS and SVG are inline.

use std::fmt::Write as _;

use checker::verdict::{Anomaly, Validity};
use serde_json::Value;

use super::anomalies;
use super::charts::{self, Faults, TimeAxis};
use super::faults::{self, FaultPeriod};
use super::folder::RunData;
use super::text::{OpLinks, escape, short};

fn verdict_class(v: Validity) -> &'static str {
    match v {
        Validity::Valid => "v-valid",
        Validity::Invalid => "v-invalid",
        Validity::Unknown => "v-unknown",
    }
}

fn verdict_word(v: Validity) -> &'static str {
    match v {
        Validity::Valid => "VALID",
        Validity::Invalid => "INVALID",
        Validity::Unknown => "UNKNOWN",
    }
}

const CSS: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2127;background:#fafbfc}
main{max-width:1140px;margin:0 auto;padding:16px 20px 60px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #dde1e6;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 4px}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #dde1e6;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f2f5;font-weight:600}
.verdict{display:inline-block;font-weight:700;font-size:18px;padding:4px 14px;border-radius:4px;color:#fff;margin:6px 0}
.v-valid{background:#2e8540}.v-invalid{background:#c62828}.v-unknown{background:#b26a00}
td.v-valid,td.v-invalid,td.v-unknown{color:#fff;font-weight:600}
.summary li{margin:2px 0}
.anomaly{background:#fff;border:1px solid #e3c4c4;border-left:4px solid #c62828;border-radius:3px;padding:8px 12px;margin:12px 0}
.anomaly .meaning{color:#555;font-style:italic}
pre.crash-log{background:#1d2127;color:#f3f3f3;padding:8px 10px;border-radius:3px;white-space:pre-wrap;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;margin:6px 0}
.ops li{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}
.unseen td{color:#999}
.warn{background:#fff4e5;border:1px solid #f0c36d;padding:6px 10px;border-radius:3px}
.legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:middle}
svg.plot{display:block;max-width:100%;height:auto;background:#fff;border:1px solid #e6e8eb;margin:6px 0}
svg text{font:11px system-ui,sans-serif;fill:#333}
svg .tick{text-anchor:middle}svg .ytick,svg .lane-label{text-anchor:end}
svg .axis{stroke:#888;stroke-width:1}svg .grid{stroke:#e6e6e6;stroke-width:1}
svg .lane{fill:#f5f6f8}
.ok,.sw.ok{fill:#5aa469;background:#5aa469}.fail,.sw.fail{fill:#e05252;background:#e05252}.info,.sw.info{fill:#f0a030;background:#f0a030}
svg .hl{stroke:#111;stroke-width:1.5}svg rect:target{stroke:#0b57d0;stroke-width:3}svg rect[id]{scroll-margin-top:160px}.anomaly:target,h3:target{outline:3px solid #0b57d0}
svg .fault{opacity:.16}svg .fault-strip{opacity:.8}svg .fault-label{font-size:10.5px;font-weight:600}svg .fault-tick{stroke-width:1;opacity:.7}
.f-kill{fill:#d32f2f;stroke:#d32f2f;background:rgba(211,47,47,.25)}.f-pause{fill:#1e63c8;stroke:#1e63c8;background:rgba(30,99,200,.25)}
.f-part{fill:#7b3fb3;stroke:#7b3fb3;background:rgba(123,63,179,.25)}.f-net{fill:#e08a00;stroke:#e08a00;background:rgba(224,138,0,.22)}
svg text.fault-label{stroke:none}svg text.f-kill{fill:#a11}svg text.f-pause{fill:#124a99}svg text.f-part{fill:#5b2a88}svg text.f-net{fill:#8a5200}
.f-disk{fill:#8d6e63;stroke:#8d6e63;background:rgba(141,110,99,.28)}svg text.f-disk{fill:#5d4037}
.f-clock{fill:#00897b;stroke:#00897b;background:rgba(0,137,123,.22)}svg text.f-clock{fill:#00695c}
svg .mark{stroke:#444;stroke-dasharray:3 3}
svg .p50{fill:none;stroke:#2e7d32;stroke-width:1.5}svg .p95{fill:none;stroke:#8bc34a;stroke-width:1}svg .pmax{fill:none;stroke:#aaa;stroke-width:1}
svg .rate-ok{fill:none;stroke:#2e7d32;stroke-width:1.5}svg .rate-fail{fill:none;stroke:#e05252;stroke-width:1.2}svg .rate-info{fill:none;stroke:#f0a030;stroke-width:1.2}
svg .lin-ok{fill:#9ccc65;stroke:#558b2f}svg .lin-pending{fill:#fff3c4;stroke:#b58a00;stroke-dasharray:4 2}svg .lin-bad{fill:#ef5350;stroke:#8e0000;stroke-width:2}
svg .lin-text{font:10.5px ui-monospace,Menlo,monospace}
a{color:#0b57d0}
"#;

/// Render the whole page.
pub fn render(data: &RunData) -> String {
    let end = data.end_time();
    let (periods, marks) = faults::periods(&data.events, end);
    let faults = Faults {
        periods: &periods,
        marks: &marks,
    };
    let anomalies: Vec<(&str, &Anomaly)> = data
        .results
        .checkers
        .iter()
        .flat_map(|(name, c)| c.anomalies.iter().map(move |a| (name.as_str(), a)))
        .collect();
    let links = anomalies::op_links(&anomalies, &data.ops);

    let mut out = String::with_capacity(1 << 20);
    let name = data.name();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>watermark {} — {}</title><style>{CSS}</style></head><body><main>",
        verdict_word(data.results.valid),
        escape(&name)
    );
    header(&mut out, data, &anomalies);
    for w in &data.warnings {
        let _ = write!(out, r#"<p class="warn">{}</p>"#, escape(w));
    }
    shrunk(&mut out, data);
    let messages = super::messages::Messages::read(&data.dir);
    anomalies::section(
        &mut out,
        data,
        &anomalies,
        &links,
        &faults,
        end,
        messages.as_ref(),
    );
    configuration(&mut out, data);
    checkers(&mut out, data);
    whole_run(&mut out, data, &links, &faults, end);
    fault_table(&mut out, &periods, &marks);
    super::coverage::section(&mut out, data);
    super::messages::section(&mut out, &data.dir);
    replicas(&mut out, data);
    files(&mut out, data);
    out.push_str("</main></body></html>\n");
    out
}

/// Links to the raw files: a run folder's, or the history a report was made from
/// (`watermark report HISTORY`, whose configuration names it).
fn files(out: &mut String, data: &RunData) {
    let Some(history) = data.config.get("history").and_then(Value::as_str) else {
        out.push_str(
            r#"<h2 id="files">Files</h2><p>Raw files of this run: <a href="run.json">run.json</a> · <a href="history.jsonl">history.jsonl</a> · <a href="results.json">results.json</a> · <a href="schedule.json">schedule.json</a> · <a href="junit.xml">junit.xml</a> · <a href="nodes/">nodes/</a> · <a href="watermark.log">watermark.log</a></p>"#,
        );
        return;
    };
    let shown = if history.contains('/') || history.contains(':') {
        format!(r#"<span class="mono">{}</span>"#, escape(history))
    } else {
        format!(r#"<a href="{0}">{0}</a>"#, escape(history))
    };
    let _ = write!(
        out,
        r#"<h2 id="files">Files</h2><p>The history: {shown} · <a href="junit.xml">junit.xml</a></p>"#
    );
}

fn header(out: &mut String, data: &RunData, anomalies: &[(&str, &Anomaly)]) {
    let v = data.results.valid;
    let _ = write!(
        out,
        r#"<h1>watermark run <span class="mono">{}</span></h1><div id="verdict" class="verdict {}" data-verdict="{}">{}</div>"#,
        escape(&data.name()),
        verdict_class(v),
        verdict_word(v).to_lowercase(),
        verdict_word(v)
    );
    let ok = data
        .ops
        .iter()
        .filter(|o| o.outcome == checker::history::Outcome::Ok)
        .count();
    let fail = data
        .ops
        .iter()
        .filter(|o| o.outcome == checker::history::Outcome::Fail)
        .count();
    let _ = write!(
        out,
        "<p>{} operations: {ok} ok, {fail} fail, {} info · {:.1} s of history · {} nemesis events</p>",
        data.ops.len(),
        data.ops.len() - ok - fail,
        data.end_time() as f64 / 1e9,
        data.events
            .iter()
            .filter(|e| e.process == checker::history::Process::Nemesis)
            .count()
    );
    if !anomalies.is_empty() {
        out.push_str(r#"<ul class="summary" id="anomaly-summary">"#);
        for g in anomalies::groups(anomalies) {
            let _ = write!(
                out,
                r##"<li><a href="#kind-{kind}"><b>{} × {kind}</b></a> — {}</li>"##,
                g.total,
                g.kind.meaning(),
                kind = g.kind
            );
        }
        out.push_str("</ul>");
    }
}

/// The minimal reproducer `watermark shrink` found (`shrink/summary.json`).
fn shrunk(out: &mut String, data: &RunData) {
    let Some(summary) = std::fs::read_to_string(data.dir.join("shrink").join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
    else {
        return;
    };
    let (o, m) = (&summary["original"], &summary["minimal"]);
    let line = match m.as_object() {
        Some(_) => format!(
            r#"minimal reproducer: {} faults, {} s, reproduced {} of {} (of {} faults, {} s) — <a href="shrink/minimal-schedule.json">shrink/minimal-schedule.json</a>"#,
            m["faults"], m["seconds"], m["reproduced"], m["tries"], o["faults"], o["seconds"]
        ),
        None => "watermark shrink: the original schedule did not reproduce the failure".to_string(),
    };
    let _ = write!(out, r#"<p class="warn" id="shrink">{line}</p>"#);
}

fn configuration(out: &mut String, data: &RunData) {
    let essentials: Vec<String> = ["workload", "seed", "started_at"]
        .iter()
        .filter_map(|k| data.config_str(k).map(|v| format!("{k} {v}")))
        .collect();
    let _ = write!(
        out,
        r#"<h2 id="configuration">Configuration</h2><details><summary>{}</summary><table class="config">"#,
        escape(&essentials.join(" · "))
    );
    let row = |out: &mut String, k: &str, v: &str| {
        let _ = write!(
            out,
            r#"<tr><th>{}</th><td class="mono">{}</td></tr>"#,
            escape(k),
            escape(v)
        );
    };
    let Value::Object(map) = &data.config else {
        return;
    };
    for key in ["workload", "seed", "started_at", "ended_at", "outcome"] {
        if let Some(v) = data.config_str(key) {
            row(out, key, &v);
        }
    }
    if let Some(Value::Array(cmd)) = map.get("command_line") {
        let words: Vec<String> = cmd.iter().map(|w| short(w, 200)).collect();
        row(out, "command line", &words.join(" "));
    }
    if let Some(Value::Object(opts)) = map.get("options") {
        for (k, v) in opts {
            if !v.is_null() {
                row(out, &format!("--{}", k.replace('_', "-")), &short(v, 300));
            }
        }
    }
    for (k, v) in map {
        let shown = [
            "workload",
            "seed",
            "started_at",
            "ended_at",
            "outcome",
            "command_line",
            "options",
        ];
        if !shown.contains(&k.as_str()) && !v.is_null() {
            row(out, k, &short(v, 300));
        }
    }
    out.push_str("</table></details>");
}

fn checkers(out: &mut String, data: &RunData) {
    out.push_str(r#"<h2 id="checkers">Checkers</h2><table><tr><th>checker</th><th>verdict</th><th>anomalies</th><th>stats</th></tr>"#);
    for (name, c) in &data.results.checkers {
        let counts: Vec<String> = c.counts().iter().map(|(k, n)| format!("{n} {k}")).collect();
        let stats: Vec<String> = c.stats.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let reason = c
            .reason
            .as_deref()
            .map(|r| format!(" ({})", escape(r)))
            .unwrap_or_default();
        let _ = write!(
            out,
            r#"<tr class="checker" data-checker="{n}"><td><b>{n}</b></td><td class="{}">{}{reason}</td><td>{}</td><td class="mono">{}</td></tr>"#,
            verdict_class(c.valid),
            verdict_word(c.valid),
            if counts.is_empty() {
                "none".to_string()
            } else {
                escape(&counts.join(", "))
            },
            escape(&stats.join(" · ")),
            n = escape(name)
        );
    }
    out.push_str("</table>");
}

fn legend(out: &mut String, periods: &[FaultPeriod]) {
    out.push_str(r#"<p class="legend"><span><i class="sw ok"></i>ok</span><span><i class="sw fail"></i>fail</span><span><i class="sw info"></i>info (unknown)</span>"#);
    let mut seen = Vec::new();
    for p in periods {
        if !seen.contains(&p.family) {
            seen.push(p.family);
            let word = match p.family {
                faults::Family::Kill => "process killed",
                faults::Family::Pause => "process paused",
                faults::Family::Partition => "network partitioned",
                faults::Family::Network => "links degraded",
                faults::Family::Disk => "disk failing",
                faults::Family::Clock => "clock off",
            };
            let _ = write!(
                out,
                r#"<span><i class="sw {}"></i>{word}</span>"#,
                p.family.class()
            );
        }
    }
    out.push_str("</p>");
}

fn whole_run(out: &mut String, data: &RunData, links: &OpLinks, faults: &Faults, end: u64) {
    let axis = TimeAxis::new(0, end);
    out.push_str(r#"<h2 id="timeline">Timeline</h2>"#);
    let bucketed = data.ops.len() > charts::DETAIL_LIMIT;
    let _ = write!(
        out,
        "<p>Each row is a client process (with many processes, those whose lifetimes do not overlap share a row), each bar an operation from invocation to completion; {} Operations an anomaly involves are outlined in black.</p>",
        if bucketed {
            "with this many operations, each mark covers a pixel column and shows its most common outcome; thin red and orange ticks flag columns holding any fail or info."
        } else {
            "hover for details."
        }
    );
    legend(out, faults.periods);
    out.push_str(&charts::timeline(
        "timeline-plot",
        &data.ops,
        axis,
        faults,
        &links.anchored,
        "",
    ));
    out.push_str(r#"<h2 id="latency">Latency</h2>"#);
    let _ = write!(
        out,
        "<p>From invocation to completion, log scale{}.</p>",
        if bucketed {
            "; lines are the median, 95th percentile and maximum of ok operations per column, dots the slowest fail and info"
        } else {
            ", one dot per completed operation"
        }
    );
    out.push_str(&charts::latency(&data.ops, axis, faults));
    let rates = crate::store::OkRates::of(
        data.ops
            .iter()
            .filter(|op| op.outcome == checker::history::Outcome::Ok)
            .filter_map(|op| op.complete_time),
    );
    let _ = write!(
        out,
        r#"<h2 id="throughput">Throughput</h2><p id="ok-rates">Acknowledged operations: {}.</p>"#,
        rates.describe()
    );
    out.push_str(r#"<p>Completions per second: <span class="legend"><span><i class="sw ok"></i>ok</span><span><i class="sw fail"></i>fail</span><span><i class="sw info"></i>info</span></span></p>"#);
    out.push_str(&charts::throughput(&data.ops, axis, faults));
}

fn fault_table(out: &mut String, periods: &[FaultPeriod], marks: &[faults::FaultMark]) {
    out.push_str(r#"<h2 id="faults">Faults</h2>"#);
    if periods.is_empty() && marks.is_empty() {
        out.push_str("<p>The nemesis injected no faults.</p>");
        return;
    }
    out.push_str("<table><tr><th>fault</th><th>from</th><th>to</th><th>targets</th></tr>");
    for p in periods {
        let _ = write!(
            out,
            r#"<tr class="fault-row"><td><i class="sw {}"></i>{}</td><td>{:.3} s</td><td>{}</td><td class="mono">{}</td></tr>"#,
            p.family.class(),
            escape(&p.label),
            p.start as f64 / 1e9,
            if p.open {
                "the end".to_string()
            } else {
                format!("{:.3} s", p.end as f64 / 1e9)
            },
            escape(&short(&p.targets, 200))
        );
    }
    for m in marks {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{:.3} s</td><td></td><td></td></tr>",
            escape(&m.label),
            m.time as f64 / 1e9
        );
    }
    out.push_str("</table>");
}

fn replicas(out: &mut String, data: &RunData) {
    if data.replicas.is_empty() {
        return;
    }
    out.push_str(r#"<h2 id="replicas">Final replica logs</h2><table><tr><th>node</th><th>topic</th><th>partition</th><th>log end offset</th><th>high watermark</th><th>records</th></tr>"#);
    let mut rows: Vec<_> = data.replicas.iter().collect();
    rows.sort_by(|a, b| (a.partition, &a.node).cmp(&(b.partition, &b.node)));
    for r in rows {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&r.node),
            escape(&r.topic),
            r.partition,
            r.log_end_offset,
            r.high_watermark,
            r.records.len()
        );
    }
    out.push_str("</table>");
}
