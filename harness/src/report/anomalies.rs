//! The anomalies in words: for each kind what it means, then each anomaly with its
//! place (partition, key, offsets, values), the operations involved (linked to their
//! marks on the timeline), a close-up timeline of the moments around it, and — for a
//! key that is not linearizable — the [`linearization`] picture; for a Maelstrom
//! system, the messages around its operations (`super::messages`).

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use checker::history::Op;
use checker::verdict::{Anomaly, AnomalyKind, OpRef};

use super::charts::{self, Faults, TimeAxis};
use super::folder::RunData;
use super::linearization;
use super::messages::Messages;
use super::text::{OpLinks, escape, short};

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
/// Operations with an anchor on the whole-run timeline.
const MAX_HIGHLIGHTED: usize = 2000;

/// The run's operations by index, with an anchor for those anomalies involve (and
/// those a linearization picture shows), up to a bound.
pub(super) fn op_links<'a>(anomalies: &[(&str, &Anomaly)], ops: &'a [Op]) -> OpLinks<'a> {
    let by_index: HashMap<u64, &Op> = ops.iter().map(|o| (o.invoke_index, o)).collect();
    let anchored = anchored(anomalies, &by_index);
    OpLinks { by_index, anchored }
}

fn anchored(anomalies: &[(&str, &Anomaly)], by_index: &HashMap<u64, &Op>) -> BTreeSet<u64> {
    let mut set = BTreeSet::new();
    let shown = groups(anomalies).into_iter().flat_map(|g| g.shown);
    for (_, a) in shown.map(|i| anomalies[i]) {
        let mut refs: Vec<&OpRef> = a.ops.iter().take(MAX_OPS_LISTED).collect();
        if let Some(e) = &a.explanation {
            refs.push(&e.op);
            refs.extend(
                &e.prefix[e
                    .prefix
                    .len()
                    .saturating_sub(linearization::MAX_PREFIX_SHOWN)..],
            );
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
pub(super) struct Group {
    pub kind: AnomalyKind,
    pub total: usize,
    pub shown: Vec<usize>,
}

/// Group anomalies by kind, in order of first appearance, and pick which to
/// explain: every kind gets its share of [`MAX_ANOMALIES`] (at least a few), so
/// a flood of one kind does not hide the others.
pub(super) fn groups(anomalies: &[(&str, &Anomaly)]) -> Vec<Group> {
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

/// The anomalies, by kind, each explained.
pub(super) fn section(
    out: &mut String,
    data: &RunData,
    anomalies: &[(&str, &Anomaly)],
    links: &OpLinks,
    faults: &Faults,
    end: u64,
    messages: Option<&Messages>,
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
            AnomalyKind::meaning(g.kind),
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
            let view = View {
                data,
                links,
                faults,
                end,
                messages,
            };
            anomaly(out, n, anomalies[n], &view, close_up);
        }
    }
}

/// What every anomaly's section draws from.
struct View<'a> {
    data: &'a RunData,
    links: &'a OpLinks<'a>,
    faults: &'a Faults<'a>,
    end: u64,
    /// A Maelstrom run's messages.
    messages: Option<&'a Messages>,
}

/// One anomaly in words, with its operations (and a close-up timeline, and the
/// messages around its operations).
fn anomaly(
    out: &mut String,
    n: usize,
    (checker, a): (&str, &Anomaly),
    view: &View,
    with_close_up: bool,
) {
    let View {
        data,
        links,
        faults,
        end,
        messages,
    } = *view;
    let _ = write!(
        out,
        r#"<section class="anomaly" id="anomaly-{n}" data-kind="{kind}"><h3>{kind}{} <small>({})</small></h3><p>{}</p><p class="meaning">{}</p>"#,
        escape(&place(a)),
        escape(checker),
        escape(&a.message),
        AnomalyKind::meaning(a.kind),
        kind = a.kind
    );
    evidence(out, a);
    involved(out, a, links);
    if with_close_up {
        close_up(out, n, a, data, links, faults, end);
        if let Some(m) = messages {
            let clients = data.config["options"]["concurrency"].as_u64().unwrap_or(1);
            super::messages::diagram(out, n, a, m, links, clients);
        }
    }
    if let Some(e) = &a.explanation {
        linearization::picture(out, n, e, links);
    }
    out.push_str("</section>");
}

/// Where an anomaly is, for its heading: ` · partition p · key k · node`, as
/// much of it as the anomaly names.
fn place(a: &Anomaly) -> String {
    let mut place = String::new();
    if let Some(p) = a.partition {
        let _ = write!(place, " · partition {p}");
    }
    if let Some(k) = &a.key {
        let _ = write!(place, " · key {}", short(k, 40));
    }
    match &a.node {
        Some(serde_json::Value::String(s)) => {
            let _ = write!(place, " · {s}");
        }
        Some(n) => {
            let _ = write!(place, " · node {n}");
        }
        None => {}
    }
    place
}

/// What an anomaly holds beside its operations: a crashed node's log, and the
/// offsets and values involved (the first 30 of each).
fn evidence(out: &mut String, a: &Anomaly) {
    if let Some(log) = &a.log {
        let _ = write!(
            out,
            r#"<p>its log says:</p><pre class="crash-log">{}</pre>"#,
            escape(log)
        );
    }
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
}

/// The operations an anomaly involves, each linked to its mark on the timeline
/// (the first [`MAX_OPS_LISTED`], the rest counted).
fn involved(out: &mut String, a: &Anomaly, links: &OpLinks) {
    if a.ops.is_empty() {
        return;
    }
    out.push_str(
        r#"<p>operations involved (click to see them on the timeline):</p><ul class="ops">"#,
    );
    for op in a.ops.iter().take(MAX_OPS_LISTED) {
        out.push_str("<li>");
        links.op_link(out, op);
        out.push_str("</li>");
    }
    if a.ops.len() > MAX_OPS_LISTED {
        let _ = write!(out, "<li>… {} more</li>", a.ops.len() - MAX_OPS_LISTED);
    }
    out.push_str("</ul>");
}

/// A close-up timeline of every operation around an anomaly's own.
fn close_up(
    out: &mut String,
    n: usize,
    a: &Anomaly,
    data: &RunData,
    links: &OpLinks,
    faults: &Faults,
    end: u64,
) {
    let involved: Vec<&Op> = a
        .ops
        .iter()
        .filter_map(|r| links.by_index.get(&r.invoke).copied())
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
    out.push_str(&charts::timeline(
        &format!("close-up-{n}"),
        &data.ops,
        axis,
        faults,
        &highlight,
        &format!("a{n}-"),
    ));
}
