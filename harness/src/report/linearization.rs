//! Porcupine's picture of a non-linearizable key: the end of the longest
//! linearizable prefix, the operations pending at that point, and the one that cannot
//! be linearized next, on their real time spans, drawn in the report's plotting frame.

use std::fmt::Write as _;

use checker::verdict::{Explanation, OpRef};

use super::charts::TimeAxis;
use super::charts::frame;
use super::text::{OpLinks, escape};

/// Prefix operations drawn in a linearization picture.
pub(super) const MAX_PREFIX_SHOWN: usize = 16;
/// Other pending operations listed under it.
const MAX_PENDING_LISTED: usize = 12;

/// Height of a process's lane in the picture.
const LANE_H: f64 = 26.0;

/// Porcupine-style: the end of the longest linearizable prefix, the pending
/// operations, and the one that cannot be linearized, on their real time spans.
pub(super) fn picture(out: &mut String, n: usize, e: &Explanation, links: &OpLinks) {
    let skip = e.prefix.len().saturating_sub(MAX_PREFIX_SHOWN);
    let shown = shown(e, skip);
    let _ = write!(
        out,
        r#"<div class="linearization" id="linearization-{n}"><h3>Linearization</h3><p>The checker found a linearizable prefix of {} operations; after it the model is in state {}, and <b>{}</b> cannot be linearized next.</p>"#,
        e.prefix.len(),
        escape(&e.states.join(" or ")),
        escape(&e.op.text)
    );
    spans(out, n, &shown, links);
    out.push_str(r#"<p class="legend"><span><i class="sw" style="background:#9ccc65"></i>linearized, in order #k</span><span><i class="sw" style="background:#fff3c4"></i>pending</span><span><i class="sw" style="background:#ef5350"></i>cannot be linearized</span></p>"#);
    listing(out, e, skip, links);
    out.push_str("</div>");
}

/// The operations drawn, each with its class and tag: the prefix's from `skip`
/// on (`#k`), up to 8 pending ones, and last the one that cannot be linearized.
fn shown(e: &Explanation, skip: usize) -> Vec<(&OpRef, &'static str, String)> {
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
    shown
}

/// The operations `shown` on their real time spans, one lane per process; no
/// picture when none of them is in the run's history.
fn spans(out: &mut String, n: usize, shown: &[(&OpRef, &str, String)], links: &OpLinks) {
    let spans: Vec<(u64, u64)> = shown
        .iter()
        .map(|(r, _, _)| match links.by_index.get(&r.invoke) {
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
    if t0 == u64::MAX {
        return;
    }
    let mut procs: Vec<u64> = shown.iter().map(|(r, _, _)| r.process).collect();
    procs.sort_unstable();
    procs.dedup();
    let axis = TimeAxis::padded(t0, t1, 0.04);
    let height = procs.len() as f64 * LANE_H + 10.0;
    frame::open(out, None, "plot lin", height, "linearization");
    for (l, p) in procs.iter().enumerate() {
        let _ = write!(
            out,
            r#"<text class="lane-label" x="{:.1}" y="{:.1}">process {p}</text>"#,
            frame::LEFT - 6.0,
            l as f64 * LANE_H + 20.0
        );
    }
    for ((r, cls, tag), span) in shown.iter().zip(&spans) {
        if span.0 == u64::MAX {
            continue;
        }
        let lane = procs.iter().position(|p| *p == r.process).unwrap_or(0);
        let y = lane as f64 * LANE_H + 6.0;
        bar(out, n, &axis, y, (r, cls, tag), *span);
    }
    out.push_str("</svg>");
}

/// One operation's bar at height `y` over its span, from its invocation to its
/// completion (`u64::MAX`: none, to the right edge), labelled with its tag and
/// text, or its tag alone, or nothing, whichever fits.
fn bar(
    out: &mut String,
    n: usize,
    axis: &TimeAxis,
    y: f64,
    (r, cls, tag): (&OpRef, &str, &str),
    (s, c): (u64, u64),
) {
    let x0 = axis.x(s);
    let x1 = if c == u64::MAX {
        frame::right()
    } else {
        axis.x(c)
    }
    .max(x0 + 4.0);
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
        tag.to_string()
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

/// The prefix in order from `skip` on, the model's states after it, the
/// operation that cannot follow it, and the others pending at that point.
fn listing(out: &mut String, e: &Explanation, skip: usize, links: &OpLinks) {
    let _ = write!(out, r#"<ol class="ops" start="{}">"#, skip + 1);
    for r in &e.prefix[skip..] {
        out.push_str("<li>");
        links.op_link(out, r);
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
    links.op_link(out, &e.op);
    out.push_str("</p>");
    let others: Vec<&OpRef> = e
        .pending
        .iter()
        .filter(|r| r.invoke != e.op.invoke)
        .collect();
    if !others.is_empty() {
        out.push_str("<p>also pending at that point (none fits the state):</p><ul class=\"ops\">");
        for r in others.into_iter().take(MAX_PENDING_LISTED) {
            out.push_str("<li>");
            links.op_link(out, r);
            out.push_str("</li>");
        }
        out.push_str("</ul>");
    }
}
