//! `report.html`: one self-contained page a person reads when a campaign fails.
//!
//! Top to bottom: the verdict and configuration; each anomaly in words with its
//! operations (linked to their marks on the timeline) and a close-up timeline of
//! the moments around it; for non-linearizable keys a Porcupine-style picture of
//! the longest linearizable prefix and the operation that cannot follow it; then
//! the whole run — operations per process, latency and throughput — with fault
//! periods shaded. No script, font or image is fetched: CSS and SVG are inline.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use checker::history::Op;
use checker::verdict::{Anomaly, AnomalyKind, Explanation, OpRef, Validity};
use serde_json::Value;

use super::faults::{self, FaultPeriod};
use super::folder::RunData;
use super::svg::{self, Faults, TimeAxis};

/// Anomalies explained one by one (shared among the kinds); the rest are counted.
const MAX_ANOMALIES: usize = 100;
/// Anomalies that get a close-up timeline, in all and per kind.
const MAX_CLOSE_UPS: usize = 12;
const CLOSE_UPS_PER_KIND: usize = 3;
/// A close-up widens to take in more of an anomaly's operations only while it
/// holds at most this many operations.
const CLOSE_UP_OPS: usize = 400;
/// Time shown either side of a close-up's operations, at least (nanoseconds).
const CLOSE_UP_PAD: u64 = 100_000_000;
/// Operations listed per anomaly.
const MAX_OPS_LISTED: usize = 12;
/// Operations highlighted on the whole-run timeline.
const MAX_HIGHLIGHTED: usize = 2000;
/// Prefix operations drawn in a linearization picture.
const MAX_PREFIX_SHOWN: usize = 16;

/// What the sections share: operations by invocation index, and which of them
/// are drawn one by one (with an anchor) on the whole-run timeline.
struct Ctx<'a> {
    by_index: HashMap<u64, &'a Op>,
    highlight: BTreeSet<u64>,
}

/// The operations anomalies involve (and those a linearization picture shows),
/// up to a bound; only these get anchors, so every link has a target.
fn highlighted(anomalies: &[(&str, &Anomaly)], by_index: &HashMap<u64, &Op>) -> BTreeSet<u64> {
    let mut set = BTreeSet::new();
    let shown = groups(anomalies).into_iter().flat_map(|g| g.shown);
    for (_, a) in shown.map(|i| anomalies[i]) {
        let mut refs: Vec<&OpRef> = a.ops.iter().take(MAX_OPS_LISTED).collect();
        if let Some(e) = &a.explanation {
            refs.push(&e.op);
            refs.extend(&e.prefix[e.prefix.len().saturating_sub(MAX_PREFIX_SHOWN)..]);
            refs.extend(&e.pending);
        }
        for r in refs {
            if set.len() >= MAX_HIGHLIGHTED {
                return set;
            }
            if by_index.contains_key(&r.invoke) {
                set.insert(r.invoke);
            }
        }
    }
    set
}

/// Anomalies of one kind: how many, and which (by position) are explained.
struct Group {
    kind: AnomalyKind,
    total: usize,
    shown: Vec<usize>,
}

/// Group anomalies by kind, in order of first appearance, and pick which to
/// explain: every kind gets its share of [`MAX_ANOMALIES`] (at least a few), so
/// a flood of one kind does not hide the others.
fn groups(anomalies: &[(&str, &Anomaly)]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for (i, (_, a)) in anomalies.iter().enumerate() {
        match groups.iter_mut().find(|g| g.kind == a.kind) {
            Some(g) => {
                g.total += 1;
                g.shown.push(i);
            }
            None => groups.push(Group {
                kind: a.kind,
                total: 1,
                shown: vec![i],
            }),
        }
    }
    let share = (MAX_ANOMALIES / groups.len().max(1)).max(5);
    for g in &mut groups {
        g.shown.truncate(share);
    }
    groups
}

/// Escape text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn short(v: &Value, max: usize) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    if s.chars().count() > max {
        s.chars().take(max - 1).collect::<String>() + "…"
    } else {
        s
    }
}

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

/// What each anomaly kind means, in one sentence (SPEC §7).
pub fn kind_meaning(kind: AnomalyKind) -> &'static str {
    match kind {
        AnomalyKind::LostWrite => {
            "An acknowledged send (or one whose value a poll saw) is missing from the final log: committed data was lost."
        }
        AnomalyKind::InconsistentOffsets => {
            "One offset of a partition was seen holding two different values: replicas or consumers disagree on the log."
        }
        AnomalyKind::Duplicate => "One sent value sits at two offsets of the log.",
        AnomalyKind::Unexpected => "A poll returned a value that no client ever sent.",
        AnomalyKind::AbortedRead => {
            "A poll saw the value of a send that was told it failed: a failed write became visible."
        }
        AnomalyKind::PollSkip => {
            "A poll skipped offsets that the final log holds: a consumer would silently miss records."
        }
        AnomalyKind::NonmonotonicPoll => {
            "A poll returned a record below the offset asked for, or records out of order."
        }
        AnomalyKind::NonmonotonicSend => {
            "A client's later acknowledged send got a lower offset than its earlier one."
        }
        AnomalyKind::ReplicaDivergence => {
            "Replicas' final logs differ below the high watermark: the committed log diverged."
        }
        AnomalyKind::Nonlinearizable => {
            "No order of the operations consistent with real time explains what clients observed."
        }
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
.ops li{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}
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
.f-part{fill:#7b3fb3;stroke:#7b3fb3;background:rgba(123,63,179,.25)}.f-other{fill:#666;stroke:#666;background:rgba(100,100,100,.25)}
svg text.fault-label{stroke:none}svg text.f-kill{fill:#a11}svg text.f-pause{fill:#124a99}svg text.f-part{fill:#5b2a88}
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
    let by_index: HashMap<u64, &Op> = data.ops.iter().map(|o| (o.invoke_index, o)).collect();
    let anomalies: Vec<(&str, &Anomaly)> = data
        .results
        .checkers
        .iter()
        .flat_map(|(name, c)| c.anomalies.iter().map(move |a| (name.as_str(), a)))
        .collect();
    let highlight = highlighted(&anomalies, &by_index);
    let ctx = Ctx {
        by_index,
        highlight,
    };

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
    configuration(&mut out, data);
    checkers(&mut out, data);
    anomaly_section(&mut out, data, &anomalies, &ctx, &faults, end);
    whole_run(&mut out, data, &ctx, &faults, end);
    fault_table(&mut out, &periods, &marks);
    replicas(&mut out, data);
    out.push_str(
        r#"<h2 id="files">Files</h2><p>Raw files of this run: <a href="run.json">run.json</a> · <a href="history.jsonl">history.jsonl</a> · <a href="results.json">results.json</a> · <a href="junit.xml">junit.xml</a> · <a href="nodes/">nodes/</a></p>"#,
    );
    out.push_str("</main></body></html>\n");
    out
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
        for g in groups(anomalies) {
            let _ = write!(
                out,
                r##"<li><a href="#kind-{kind}"><b>{} × {kind}</b></a> — {}</li>"##,
                g.total,
                kind_meaning(g.kind),
                kind = g.kind
            );
        }
        out.push_str("</ul>");
    }
}

fn configuration(out: &mut String, data: &RunData) {
    out.push_str(r#"<h2 id="configuration">Configuration</h2><table class="config">"#);
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
    out.push_str("</table>");
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

fn op_link(out: &mut String, op: &OpRef, linked: &BTreeSet<u64>) {
    let complete = op.complete.map(|c| c.to_string()).unwrap_or_default();
    let label = format!(
        "[{}..{complete}] process {}: {}",
        op.invoke, op.process, op.text
    );
    if linked.contains(&op.invoke) {
        let _ = write!(
            out,
            r##"<a class="op-link" href="#op-{}">{}</a>"##,
            op.invoke,
            escape(&label)
        );
    } else {
        out.push_str(&escape(&label));
    }
}

fn anomaly_section(
    out: &mut String,
    data: &RunData,
    anomalies: &[(&str, &Anomaly)],
    ctx: &Ctx,
    faults: &Faults,
    end: u64,
) {
    out.push_str(r#"<h2 id="anomalies">Anomalies</h2>"#);
    if anomalies.is_empty() {
        out.push_str("<p>None found.</p>");
        return;
    }
    let mut close_ups = 0;
    for g in groups(anomalies) {
        let _ = write!(
            out,
            r#"<h3 class="kind" id="kind-{kind}">{} × {kind}</h3><p class="meaning">{}</p>"#,
            g.total,
            kind_meaning(g.kind),
            kind = g.kind
        );
        if g.shown.len() < g.total {
            let _ = write!(
                out,
                r#"<p>The first {} are explained below; all {} are in <a href="results.json">results.json</a>.</p>"#,
                g.shown.len(),
                g.total
            );
        }
        for (k, &n) in g.shown.iter().enumerate() {
            let close_up = k < CLOSE_UPS_PER_KIND && close_ups < MAX_CLOSE_UPS;
            close_ups += close_up as usize;
            anomaly(out, n, anomalies[n], data, ctx, faults, end, close_up);
        }
    }
}

/// One anomaly in words, with its operations (and a close-up timeline).
#[allow(clippy::too_many_arguments)]
fn anomaly(
    out: &mut String,
    n: usize,
    (checker, a): (&str, &Anomaly),
    data: &RunData,
    ctx: &Ctx,
    faults: &Faults,
    end: u64,
    with_close_up: bool,
) {
    let mut place = String::new();
    if let Some(p) = a.partition {
        let _ = write!(place, " · partition {p}");
    }
    if let Some(k) = &a.key {
        let _ = write!(place, " · key {}", short(k, 40));
    }
    let _ = write!(
        out,
        r#"<section class="anomaly" id="anomaly-{n}" data-kind="{kind}"><h3>{kind}{} <small>({})</small></h3><p>{}</p><p class="meaning">{}</p>"#,
        escape(&place),
        escape(checker),
        escape(&a.message),
        kind_meaning(a.kind),
        kind = a.kind
    );
    if !a.offsets.is_empty() {
        let shown: Vec<String> = a.offsets.iter().take(30).map(|o| o.to_string()).collect();
        let more = if a.offsets.len() > 30 { " …" } else { "" };
        let _ = write!(
            out,
            "<p>offsets: <code>{}{more}</code></p>",
            shown.join(", ")
        );
    }
    if !a.values.is_empty() {
        let shown: Vec<String> = a.values.iter().take(30).map(|v| short(v, 40)).collect();
        let more = if a.values.len() > 30 { " …" } else { "" };
        let _ = write!(
            out,
            "<p>values: <code>{}{more}</code></p>",
            escape(&shown.join(", "))
        );
    }
    if !a.ops.is_empty() {
        out.push_str(
            r#"<p>operations involved (click to see them on the timeline):</p><ul class="ops">"#,
        );
        for op in a.ops.iter().take(MAX_OPS_LISTED) {
            out.push_str("<li>");
            op_link(out, op, &ctx.highlight);
            out.push_str("</li>");
        }
        if a.ops.len() > MAX_OPS_LISTED {
            let _ = write!(out, "<li>… {} more</li>", a.ops.len() - MAX_OPS_LISTED);
        }
        out.push_str("</ul>");
    }
    if with_close_up {
        close_up(out, n, a, data, ctx, faults, end);
    }
    if let Some(e) = &a.explanation {
        linearization(out, n, e, ctx);
    }
    out.push_str("</section>");
}

/// A close-up timeline of every operation around an anomaly's own.
fn close_up(
    out: &mut String,
    n: usize,
    a: &Anomaly,
    data: &RunData,
    ctx: &Ctx,
    faults: &Faults,
    end: u64,
) {
    let involved: Vec<&Op> = a
        .ops
        .iter()
        .filter_map(|r| ctx.by_index.get(&r.invoke).copied())
        .collect();
    if involved.is_empty() {
        return;
    }
    // Start from the first operation listed and take in the next ones while the
    // window stays a close-up.
    let ops_between = |a: u64, b: u64| {
        // Histories are in time order; a malformed one only makes this approximate.
        data.ops
            .partition_point(|o| o.invoke_time <= b)
            .saturating_sub(data.ops.partition_point(|o| o.invoke_time < a))
    };
    let end_of = |o: &Op| o.complete_time.unwrap_or(o.invoke_time).max(o.invoke_time);
    let pad_of = |t0: u64, t1: u64| (t1.saturating_sub(t0) / 5).max(CLOSE_UP_PAD);
    let (mut t0, mut t1) = (involved[0].invoke_time, end_of(involved[0]));
    let mut taken = 1;
    for op in &involved[1..] {
        let (n0, n1) = (t0.min(op.invoke_time), t1.max(end_of(op)));
        let pad = pad_of(n0, n1);
        if ops_between(n0.saturating_sub(pad), n1 + pad) > CLOSE_UP_OPS {
            break;
        }
        (t0, t1, taken) = (n0, n1, taken + 1);
    }
    let pad = pad_of(t0, t1);
    let axis = TimeAxis::new(t0.saturating_sub(pad), (t1 + pad).min(end.max(t1)));
    let highlight: BTreeSet<u64> = involved.iter().map(|o| o.invoke_index).collect();
    let which = if taken == involved.len() {
        "it".to_string()
    } else if taken == 1 {
        "the first of its operations".to_string()
    } else {
        format!("the first {taken} of its operations")
    };
    let _ = write!(
        out,
        "<p>Around {which} ({:.3} s – {:.3} s), every operation; the involved ones are outlined:</p>",
        axis.t0 as f64 / 1e9,
        axis.t1 as f64 / 1e9
    );
    out.push_str(&svg::timeline(
        &format!("close-up-{n}"),
        &data.ops,
        axis,
        faults,
        &highlight,
        &format!("a{n}-"),
    ));
}

/// Porcupine-style: the end of the longest linearizable prefix, the pending
/// operations, and the one that cannot be linearized, on their real time spans.
fn linearization(out: &mut String, n: usize, e: &Explanation, ctx: &Ctx) {
    let skip = e.prefix.len().saturating_sub(MAX_PREFIX_SHOWN);
    let mut shown: Vec<(&OpRef, &str, String)> = Vec::new();
    for (i, r) in e.prefix.iter().enumerate().skip(skip) {
        shown.push((r, "lin-ok", format!("#{}", i + 1)));
    }
    for r in e.pending.iter().take(8) {
        if r.invoke != e.op.invoke {
            shown.push((r, "lin-pending", "pending".into()));
        }
    }
    shown.push((&e.op, "lin-bad", "✗".into()));
    let spans: Vec<(u64, u64)> = shown
        .iter()
        .map(|(r, _, _)| match ctx.by_index.get(&r.invoke) {
            Some(op) => (op.invoke_time, op.complete_time.unwrap_or(u64::MAX)),
            None => (u64::MAX, u64::MAX),
        })
        .collect();
    let t0 = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let t1 = spans
        .iter()
        .flat_map(|s| [s.0, s.1])
        .filter(|&t| t != u64::MAX)
        .max()
        .unwrap_or(t0.saturating_add(1));
    let mut procs: Vec<u64> = shown.iter().map(|(r, _, _)| r.process).collect();
    procs.sort_unstable();
    procs.dedup();
    let _ = write!(
        out,
        r#"<div class="linearization" id="linearization-{n}"><h3>Linearization</h3><p>The checker found a linearizable prefix of {} operations; after it the model is in state {}, and <b>{}</b> cannot be linearized next.</p>"#,
        e.prefix.len(),
        escape(&e.states.join(" or ")),
        escape(&e.op.text)
    );
    if t0 != u64::MAX {
        let lane_h = 26.0;
        let left = 130.0;
        let width = svg::WIDTH - left - 14.0;
        let span = (t1.saturating_sub(t0)).max(1) as f64;
        let pad = span * 0.04;
        let x = |t: u64| left + (t.saturating_sub(t0) as f64 + pad) / (span + 2.0 * pad) * width;
        let height = procs.len() as f64 * lane_h + 10.0;
        let _ = write!(
            out,
            r#"<svg class="plot lin" viewBox="0 0 {} {height:.0}" width="{}" height="{height:.0}" role="img" aria-label="linearization">"#,
            svg::WIDTH,
            svg::WIDTH
        );
        for (l, p) in procs.iter().enumerate() {
            let _ = write!(
                out,
                r#"<text class="lane-label" x="{:.1}" y="{:.1}">process {p}</text>"#,
                left - 6.0,
                l as f64 * lane_h + 20.0
            );
        }
        for ((r, cls, tag), (s, c)) in shown.iter().zip(&spans) {
            if *s == u64::MAX {
                continue;
            }
            let lane = procs.iter().position(|p| *p == r.process).unwrap_or(0);
            let x0 = x(*s);
            let x1 = if *c == u64::MAX { left + width } else { x(*c) }.max(x0 + 4.0);
            let y = lane as f64 * lane_h + 6.0;
            let _ = write!(
                out,
                r#"<rect id="a{n}-lin-op-{}" class="{cls}" x="{x0:.1}" y="{y:.1}" width="{:.1}" height="18" rx="3"><title>{tag} {}</title></rect>"#,
                r.invoke,
                x1 - x0,
                escape(&r.text)
            );
            let label = format!("{tag} {}", r.text);
            let fits = ((x1 - x0 - 6.0) / 6.3).max(0.0) as usize;
            let label: String = if label.chars().count() <= fits {
                label
            } else if tag.chars().count() <= fits {
                tag.clone()
            } else {
                String::new()
            };
            if !label.is_empty() {
                let _ = write!(
                    out,
                    r#"<text class="lin-text" x="{:.1}" y="{:.1}">{}</text>"#,
                    x0 + 3.0,
                    y + 13.0,
                    escape(&label)
                );
            }
        }
        out.push_str("</svg>");
    }
    out.push_str(r#"<p class="legend"><span><i class="sw" style="background:#9ccc65"></i>linearized, in order #k</span><span><i class="sw" style="background:#fff3c4"></i>pending</span><span><i class="sw" style="background:#ef5350"></i>cannot be linearized</span></p>"#);
    let _ = write!(out, r#"<ol class="ops" start="{}">"#, skip + 1);
    for r in &e.prefix[skip..] {
        out.push_str("<li>");
        op_link(out, r, &ctx.highlight);
        out.push_str("</li>");
    }
    out.push_str("</ol>");
    for s in &e.states {
        let _ = write!(
            out,
            "<p>model state after the prefix: <code>{}</code></p>",
            escape(s)
        );
    }
    out.push_str("<p>cannot be linearized next: ");
    op_link(out, &e.op, &ctx.highlight);
    out.push_str("</p>");
    let others: Vec<&OpRef> = e
        .pending
        .iter()
        .filter(|r| r.invoke != e.op.invoke)
        .collect();
    if !others.is_empty() {
        out.push_str("<p>also pending at that point (none fits the state):</p><ul class=\"ops\">");
        for r in others.into_iter().take(MAX_OPS_LISTED) {
            out.push_str("<li>");
            op_link(out, r, &ctx.highlight);
            out.push_str("</li>");
        }
        out.push_str("</ul>");
    }
    out.push_str("</div>");
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
                faults::Family::Other => "other fault",
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

fn whole_run(out: &mut String, data: &RunData, ctx: &Ctx, faults: &Faults, end: u64) {
    let axis = TimeAxis::new(0, end);
    out.push_str(r#"<h2 id="timeline">Timeline</h2>"#);
    let bucketed = data.ops.len() > svg::DETAIL_LIMIT;
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
    out.push_str(&svg::timeline(
        "timeline-plot",
        &data.ops,
        axis,
        faults,
        &ctx.highlight,
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
    out.push_str(&svg::latency(&data.ops, axis, faults));
    out.push_str(r#"<h2 id="throughput">Throughput</h2><p>Completions per second: <span class="legend"><span><i class="sw ok"></i>ok</span><span><i class="sw fail"></i>fail</span><span><i class="sw info"></i>info</span></span></p>"#);
    out.push_str(&svg::throughput(&data.ops, axis, faults));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
