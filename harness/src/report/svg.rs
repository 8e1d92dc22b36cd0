//! The report's pictures as inline SVG: a timeline of operations per process,
//! latency and throughput over time, each with the fault periods shaded.
//!
//! Pictures stay small whatever the run's length: beyond a few thousand operations
//! the timeline draws one mark per process per pixel column (coloured by the worst
//! outcome in it: info over fail over ok), the latency plot draws per-column
//! percentiles, and throughput is always bucketed. Operations an anomaly involves
//! are always drawn one by one, with an `id` the anomaly text links to.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use checker::history::{Op, Outcome};

use super::faults::{FaultMark, FaultPeriod};
use super::html::escape;

/// Width of every picture, in SVG units (pixels at 100 %).
pub const WIDTH: f64 = 1100.0;
const LEFT: f64 = 130.0;
const RIGHT: f64 = 14.0;
const LABEL_ROW: f64 = 13.0;
const MAX_LABEL_ROWS: usize = 4;
const AXIS: f64 = 22.0;
/// Height of the fault strip above the timeline's lanes.
const STRIP: f64 = 7.0;
/// Up to this many processes, each gets its own row.
const ONE_LANE_EACH: usize = 16;
/// Beyond this many operations in view, the timeline and latency plot bucket.
pub const DETAIL_LIMIT: usize = 3000;

/// A time window (nanoseconds since the run started) mapped onto the plot width.
#[derive(Debug, Clone, Copy)]
pub struct TimeAxis {
    pub t0: u64,
    pub t1: u64,
}

impl TimeAxis {
    pub fn new(t0: u64, t1: u64) -> TimeAxis {
        TimeAxis {
            t0,
            t1: t1.max(t0 + 1),
        }
    }

    fn width() -> f64 {
        WIDTH - LEFT - RIGHT
    }

    fn span(&self) -> f64 {
        (self.t1 - self.t0) as f64
    }

    pub fn x(&self, t: u64) -> f64 {
        let t = t.clamp(self.t0, self.t1);
        LEFT + (t - self.t0) as f64 / self.span() * Self::width()
    }

    fn contains(&self, a: u64, b: u64) -> bool {
        b >= self.t0 && a <= self.t1
    }

    /// Bucket of `t` among `n` equal columns.
    fn bucket(&self, t: u64, n: usize) -> usize {
        let t = t.clamp(self.t0, self.t1);
        (((t - self.t0) as f64 / self.span() * n as f64) as usize).min(n - 1)
    }
}

/// The faults every picture shades.
pub struct Faults<'a> {
    pub periods: &'a [FaultPeriod],
    pub marks: &'a [FaultMark],
}

fn outcome_class(o: Outcome) -> &'static str {
    match o {
        Outcome::Ok => "ok",
        Outcome::Fail => "fail",
        Outcome::Info => "info",
    }
}

/// An operation in words, for tooltips.
pub fn op_text(op: &Op) -> String {
    let mut s = format!(
        "process {} {} {} → {}",
        op.process,
        op.f,
        op.invoke_value,
        outcome_class(op.outcome)
    );
    if !op.value.is_null() && op.value != op.invoke_value {
        let _ = write!(s, " {}", op.value);
    }
    if let Some(e) = &op.error {
        let _ = write!(s, " ({e})");
    }
    if s.chars().count() > 160 {
        s = s.chars().take(159).collect::<String>() + "…";
    }
    s
}

/// What a bucketed timeline cell draws in a layer: layer 0 the most common
/// outcome, layer 1 a fail tick, layer 2 an info tick (ticks only where that
/// outcome is present but not the most common). Indices are outcome slots.
fn cell_class(layer: usize, c: &[u32; 3]) -> Option<usize> {
    let base = if c.iter().all(|&n| n == 0) {
        None
    } else {
        (0..3).max_by_key(|&k| (c[k], std::cmp::Reverse(k)))
    };
    match layer {
        0 => base,
        k => (c[k] > 0 && base != Some(k)).then_some(k),
    }
}

fn outcome_slot(o: Outcome) -> usize {
    match o {
        Outcome::Ok => 0,
        Outcome::Fail => 1,
        Outcome::Info => 2,
    }
}

fn op_end(op: &Op, axis: &TimeAxis) -> u64 {
    op.complete_time.unwrap_or(axis.t1).max(op.invoke_time)
}

fn fmt_secs(t_ns: f64, step_ns: f64) -> String {
    let s = t_ns / 1e9;
    let decimals = (-(step_ns / 1e9).log10().floor()).max(0.0) as usize;
    format!("{s:.decimals$} s")
}

fn nice_step(span: f64, target: f64) -> f64 {
    let raw = span / target;
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * mag >= raw {
            return m * mag;
        }
    }
    10.0 * mag
}

/// Place fault labels on rows above the plot so they do not overlap.
fn label_rows(axis: &TimeAxis, faults: &Faults) -> (Vec<Option<usize>>, usize) {
    let mut ends: Vec<f64> = Vec::new();
    let mut rows = Vec::new();
    for p in faults.periods {
        let x = axis.x(p.start);
        let w = p.label.chars().count() as f64 * 6.2 + 6.0;
        if !axis.contains(p.start, p.end) {
            rows.push(None);
            continue;
        }
        let row = ends.iter().position(|&e| e <= x);
        let row = match row {
            Some(r) => Some(r),
            None if ends.len() < MAX_LABEL_ROWS => {
                ends.push(0.0);
                Some(ends.len() - 1)
            }
            None => None,
        };
        if let Some(r) = row {
            ends[r] = x + w;
        }
        rows.push(row);
    }
    (rows, ends.len())
}

/// Shade every fault period over `[top, top + height]`, with labels above `top`.
fn fault_layer(out: &mut String, axis: &TimeAxis, faults: &Faults, top: f64, height: f64) {
    fault_shading(out, axis, faults, top, height);
    fault_labels(out, axis, faults, top);
}

/// Labels of the fault periods, above `top`.
fn fault_labels(out: &mut String, axis: &TimeAxis, faults: &Faults, top: f64) {
    let (rows, nrows) = label_rows(axis, faults);
    let label_top = top - nrows as f64 * LABEL_ROW;
    for (p, row) in faults.periods.iter().zip(rows) {
        let Some(r) = row else { continue };
        let x0 = axis.x(p.start);
        let cls = p.family.class();
        let y = label_top + (r as f64 + 1.0) * LABEL_ROW - 3.0;
        let _ = write!(
            out,
            r#"<line class="fault-tick {cls}" x1="{x0:.1}" x2="{x0:.1}" y1="{:.1}" y2="{top:.1}"/><text class="fault-label {cls}" x="{:.1}" y="{y:.1}">{}</text>"#,
            y - 9.0,
            x0 + 2.0,
            escape(&p.label)
        );
    }
}

/// Translucent shading of every fault period (and a dashed line per mark) over
/// `[top, top + height]`.
fn fault_shading(out: &mut String, axis: &TimeAxis, faults: &Faults, top: f64, height: f64) {
    for p in faults.periods {
        if !axis.contains(p.start, p.end) {
            continue;
        }
        let x0 = axis.x(p.start);
        let x1 = axis.x(p.end).max(x0 + 2.0);
        let cls = p.family.class();
        let until = if p.open { " (until the end)" } else { "" };
        let _ = write!(
            out,
            r#"<rect class="fault {cls}" x="{x0:.1}" y="{top:.1}" width="{:.1}" height="{height:.1}"><title>{} from {:.3} s to {:.3} s{until}</title></rect>"#,
            x1 - x0,
            escape(&p.label),
            p.start as f64 / 1e9,
            p.end as f64 / 1e9,
        );
    }
    for m in faults.marks {
        if !axis.contains(m.time, m.time) {
            continue;
        }
        let x = axis.x(m.time);
        let _ = write!(
            out,
            r#"<line class="mark" x1="{x:.1}" x2="{x:.1}" y1="{top:.1}" y2="{:.1}"><title>{} at {:.3} s</title></line>"#,
            top + height,
            escape(&m.label),
            m.time as f64 / 1e9
        );
    }
}

fn label_band(axis: &TimeAxis, faults: &Faults) -> f64 {
    label_rows(axis, faults).1 as f64 * LABEL_ROW + 4.0
}

fn time_axis(out: &mut String, axis: &TimeAxis, y: f64) {
    let step = nice_step(axis.span(), 10.0);
    let first = (axis.t0 as f64 / step).ceil() * step;
    let _ = write!(
        out,
        r#"<line class="axis" x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}"/>"#,
        WIDTH - RIGHT
    );
    let mut t = first;
    while t <= axis.t1 as f64 + 0.5 {
        let x = axis.x(t as u64);
        let _ = write!(
            out,
            r#"<line class="axis" x1="{x:.1}" x2="{x:.1}" y1="{y:.1}" y2="{:.1}"/><text class="tick" x="{x:.1}" y="{:.1}">{}</text>"#,
            y + 4.0,
            y + 15.0,
            fmt_secs(t, step)
        );
        t += step;
    }
}

fn svg_open(out: &mut String, id: &str, height: f64, title: &str) {
    let _ = write!(
        out,
        r#"<svg id="{id}" class="plot" viewBox="0 0 {WIDTH} {height:.0}" width="{WIDTH}" height="{height:.0}" role="img" aria-label="{}">"#,
        escape(title)
    );
}

/// Lanes: one per process when there are few; else processes whose lifetimes
/// do not overlap share a row (a client whose
/// operation ended in `info` continues under a new number, as in Jepsen).
fn lanes(ops: &[&Op], axis: &TimeAxis) -> (BTreeMap<u64, usize>, Vec<Vec<u64>>) {
    let mut life: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for op in ops {
        let e = life.entry(op.process).or_insert((op.invoke_time, 0));
        e.0 = e.0.min(op.invoke_time);
        e.1 = e.1.max(op_end(op, axis));
    }
    let few = life.len() <= ONE_LANE_EACH;
    let mut order: Vec<(u64, (u64, u64))> = life.into_iter().collect();
    if few {
        let members = order.iter().map(|&(p, _)| vec![p]).collect();
        let lane_of = order
            .iter()
            .enumerate()
            .map(|(l, &(p, _))| (p, l))
            .collect();
        return (lane_of, members);
    }
    order.sort_by_key(|&(p, (s, _))| (s, p));
    let mut lane_end: Vec<u64> = Vec::new();
    let mut members: Vec<Vec<u64>> = Vec::new();
    let mut lane_of = BTreeMap::new();
    for (p, (s, e)) in order {
        let lane = match lane_end.iter().position(|&end| end < s) {
            Some(l) => l,
            None => {
                lane_end.push(0);
                members.push(Vec::new());
                lane_end.len() - 1
            }
        };
        lane_end[lane] = e;
        members[lane].push(p);
        lane_of.insert(p, lane);
    }
    (lane_of, members)
}

fn lane_label(procs: &[u64]) -> String {
    let shown: Vec<String> = procs.iter().take(3).map(|p| p.to_string()).collect();
    let more = if procs.len() > 3 { ", …" } else { "" };
    let noun = if procs.len() == 1 { "process" } else { "procs" };
    format!("{noun} {}{more}", shown.join(", "))
}

/// The timeline of operations per process over `axis`, faults shaded.
///
/// `highlight` holds the invocation indices of operations drawn one by one with
/// `id="{id_prefix}op-{index}"`, whatever the run's size.
pub fn timeline(
    id: &str,
    ops: &[Op],
    axis: TimeAxis,
    faults: &Faults,
    highlight: &BTreeSet<u64>,
    id_prefix: &str,
) -> String {
    let visible: Vec<&Op> = ops
        .iter()
        .filter(|op| axis.contains(op.invoke_time, op_end(op, &axis)))
        .collect();
    let (lane_of, members) = lanes(&visible, &axis);
    let nlanes = members.len().max(1);
    let lane_h = if nlanes <= 24 {
        16.0
    } else {
        (480.0 / nlanes as f64).max(4.0)
    };
    let bar_h = (lane_h - 3.0).max(2.0);
    let band = label_band(&axis, faults);
    // A solid strip per fault between the labels and the lanes, so faults stay
    // visible where operations cover the lanes.
    let top = band + STRIP;
    let height = nlanes as f64 * lane_h;
    let total = top + height + AXIS + 4.0;
    let mut out = String::new();
    svg_open(&mut out, id, total, "timeline of operations per process");
    fault_labels(&mut out, &axis, faults, band);
    for p in faults
        .periods
        .iter()
        .filter(|p| axis.contains(p.start, p.end))
    {
        let x0 = axis.x(p.start);
        let x1 = axis.x(p.end).max(x0 + 2.0);
        let _ = write!(
            out,
            r#"<rect class="fault-strip {}" x="{x0:.1}" y="{band:.1}" width="{:.1}" height="{:.1}"/>"#,
            p.family.class(),
            x1 - x0,
            STRIP - 1.0
        );
    }
    for (l, procs) in members.iter().enumerate() {
        let y = top + l as f64 * lane_h;
        if l % 2 == 1 {
            let _ = write!(
                out,
                r#"<rect class="lane" x="{LEFT}" y="{y:.1}" width="{:.1}" height="{lane_h:.1}"/>"#,
                TimeAxis::width()
            );
        }
        if lane_h >= 10.0 || l % (12.0 / lane_h).ceil() as usize == 0 {
            let _ = write!(
                out,
                r#"<text class="lane-label" x="{:.1}" y="{:.1}">{}</text>"#,
                LEFT - 6.0,
                y + lane_h.min(12.0) - 2.0,
                escape(&lane_label(procs))
            );
        }
    }
    let y_of = |op: &Op| top + lane_of[&op.process] as f64 * lane_h + (lane_h - bar_h) / 2.0;
    if visible.len() <= DETAIL_LIMIT {
        for op in visible
            .iter()
            .filter(|op| !highlight.contains(&op.invoke_index))
        {
            let x0 = axis.x(op.invoke_time);
            let x1 = axis.x(op_end(op, &axis)).max(x0 + 1.0);
            let _ = write!(
                out,
                r#"<rect class="{}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{bar_h:.1}"><title>{}</title></rect>"#,
                outcome_class(op.outcome),
                y_of(op),
                x1 - x0,
                escape(&op_text(op))
            );
        }
    } else {
        // One mark per lane per 2-pixel column, coloured by its most common
        // outcome; thin ticks flag columns with any fail (below) or info (above).
        let columns = (TimeAxis::width() / 2.0) as usize;
        let mut grid = vec![[0u32; 3]; nlanes * columns];
        for op in &visible {
            let lane = lane_of[&op.process];
            let a = axis.bucket(op.invoke_time, columns);
            let b = match op.complete_time {
                Some(t) => axis.bucket(t, columns),
                None => a,
            };
            for cell in &mut grid[lane * columns + a..=lane * columns + b] {
                cell[outcome_slot(op.outcome)] += 1;
            }
        }
        let colw = TimeAxis::width() / columns as f64;
        for lane in 0..nlanes {
            let row = &grid[lane * columns..(lane + 1) * columns];
            let y = top + lane as f64 * lane_h + (lane_h - bar_h) / 2.0;
            let tick = (bar_h / 4.0).clamp(1.0, 3.0);
            let layers = [(0, y, bar_h), (1, y + bar_h - tick, tick), (2, y, tick)];
            for (layer, ly, lh) in layers {
                let class_of = |c: &[u32; 3]| cell_class(layer, c);
                let mut c = 0;
                while c < columns {
                    let Some(k) = class_of(&row[c]) else {
                        c += 1;
                        continue;
                    };
                    let start = c;
                    while c < columns && class_of(&row[c]) == Some(k) {
                        c += 1;
                    }
                    let _ = write!(
                        out,
                        r#"<rect class="{}" x="{:.1}" y="{ly:.1}" width="{:.1}" height="{lh:.1}"/>"#,
                        ["ok", "fail", "info"][k],
                        LEFT + start as f64 * colw,
                        (c - start) as f64 * colw
                    );
                }
            }
        }
    }
    // Faults tint the operations they overlap; highlighted operations stay on top.
    fault_shading(&mut out, &axis, faults, top, height);
    for op in visible
        .iter()
        .filter(|op| highlight.contains(&op.invoke_index))
    {
        let x0 = axis.x(op.invoke_time);
        let x1 = axis.x(op_end(op, &axis)).max(x0 + 3.0);
        let _ = write!(
            out,
            r#"<rect id="{id_prefix}op-{}" class="hl {}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{bar_h:.1}"><title>[{}] {}</title></rect>"#,
            op.invoke_index,
            outcome_class(op.outcome),
            y_of(op),
            x1 - x0,
            op.invoke_index,
            escape(&op_text(op))
        );
    }
    time_axis(&mut out, &axis, top + height + 2.0);
    out.push_str("</svg>");
    out
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i]
}

/// Latency (invocation to completion, log scale) of every completed operation.
pub fn latency(ops: &[Op], axis: TimeAxis, faults: &Faults) -> String {
    let points: Vec<(u64, f64, Outcome)> = ops
        .iter()
        .filter_map(|op| {
            let c = op.complete_time?;
            Some((
                op.invoke_time,
                (c.saturating_sub(op.invoke_time) as f64 / 1e6).max(0.001),
                op.outcome,
            ))
        })
        .collect();
    let band = label_band(&axis, faults);
    let top = band;
    let height = 220.0;
    let total = top + height + AXIS + 4.0;
    let mut out = String::new();
    svg_open(&mut out, "latency-plot", total, "latency over time");
    fault_layer(&mut out, &axis, faults, top, height);
    let (lo, hi) = points.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
        (lo.min(p.1), hi.max(p.1))
    });
    let (lo_dec, mut hi_dec) = if points.is_empty() {
        (0.0, 3.0)
    } else {
        (lo.log10().floor(), hi.log10().ceil())
    };
    if hi_dec <= lo_dec {
        hi_dec = lo_dec + 1.0;
    }
    let y = |ms: f64| top + height - (ms.log10() - lo_dec) / (hi_dec - lo_dec) * height;
    let mut d = lo_dec;
    while d <= hi_dec {
        let ms = 10f64.powf(d);
        let yy = y(ms);
        let label = if ms >= 1000.0 {
            format!("{} s", ms / 1000.0)
        } else {
            format!("{ms} ms")
        };
        let _ = write!(
            out,
            r#"<line class="grid" x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}"/><text class="ytick" x="{:.1}" y="{:.1}">{label}</text>"#,
            WIDTH - RIGHT,
            LEFT - 6.0,
            yy + 4.0
        );
        d += 1.0;
    }
    if points.len() <= DETAIL_LIMIT {
        // Few points: bigger dots.
        let dot = if points.len() <= 300 { 5.0 } else { 3.0 };
        for (t, ms, o) in &points {
            let _ = write!(
                out,
                r#"<rect class="{}" x="{:.1}" y="{:.1}" width="{dot}" height="{dot}"/>"#,
                outcome_class(*o),
                axis.x(*t) - dot / 2.0,
                y(*ms) - dot / 2.0
            );
        }
    } else {
        let columns = (TimeAxis::width() / 4.0) as usize;
        let mut cols: Vec<[Vec<f64>; 3]> = (0..columns).map(|_| Default::default()).collect();
        for (t, ms, o) in &points {
            let k = match o {
                Outcome::Ok => 0,
                Outcome::Fail => 1,
                Outcome::Info => 2,
            };
            cols[axis.bucket(*t, columns)][k].push(*ms);
        }
        let colw = TimeAxis::width() / columns as f64;
        let mut lines: [String; 3] = Default::default();
        for (c, col) in cols.iter_mut().enumerate() {
            let x = LEFT + (c as f64 + 0.5) * colw;
            let ok = &mut col[0];
            if !ok.is_empty() {
                ok.sort_by(f64::total_cmp);
                for (i, q) in [0.5, 0.95, 1.0].into_iter().enumerate() {
                    let _ = write!(lines[i], "{x:.1},{:.1} ", y(percentile(ok, q)));
                }
            }
            for (k, cls) in [(1, "fail"), (2, "info")] {
                if let Some(max) = col[k].iter().copied().reduce(f64::max) {
                    let _ = write!(
                        out,
                        r#"<rect class="{cls}" x="{:.1}" y="{:.1}" width="3" height="3"/>"#,
                        x - 1.5,
                        y(max) - 1.5
                    );
                }
            }
        }
        for (pts, cls) in lines.iter().zip(["p50", "p95", "pmax"]) {
            let _ = write!(
                out,
                r#"<polyline class="{cls}" points="{}"/>"#,
                pts.trim_end()
            );
        }
    }
    time_axis(&mut out, &axis, top + height + 2.0);
    out.push_str("</svg>");
    out
}

/// Completions per second over time, one line per outcome.
pub fn throughput(ops: &[Op], axis: TimeAxis, faults: &Faults) -> String {
    let columns = 150usize;
    let mut counts = vec![[0u32; 3]; columns];
    for op in ops {
        let Some(t) = op.complete_time else { continue };
        let k = match op.outcome {
            Outcome::Ok => 0,
            Outcome::Fail => 1,
            Outcome::Info => 2,
        };
        counts[axis.bucket(t, columns)][k] += 1;
    }
    let bucket_secs = axis.span() / 1e9 / columns as f64;
    let max = counts
        .iter()
        .flat_map(|c| c.iter())
        .copied()
        .max()
        .unwrap_or(0) as f64
        / bucket_secs;
    let ymax = if max > 0.0 {
        nice_step(max, 4.0) * 4.0
    } else {
        1.0
    };
    let band = label_band(&axis, faults);
    let top = band;
    let height = 160.0;
    let total = top + height + AXIS + 4.0;
    let mut out = String::new();
    svg_open(&mut out, "throughput-plot", total, "throughput over time");
    fault_layer(&mut out, &axis, faults, top, height);
    let y = |rate: f64| top + height - rate / ymax * height;
    for i in 0..=4 {
        let r = ymax * i as f64 / 4.0;
        let yy = y(r);
        let _ = write!(
            out,
            r#"<line class="grid" x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}"/><text class="ytick" x="{:.1}" y="{:.1}">{r:.0}/s</text>"#,
            WIDTH - RIGHT,
            LEFT - 6.0,
            yy + 4.0
        );
    }
    let colw = TimeAxis::width() / columns as f64;
    for (k, cls) in ["ok", "fail", "info"].iter().enumerate() {
        let mut pts = String::new();
        for (c, count) in counts.iter().enumerate() {
            let x = LEFT + (c as f64 + 0.5) * colw;
            let _ = write!(pts, "{x:.1},{:.1} ", y(count[k] as f64 / bucket_secs));
        }
        let _ = write!(
            out,
            r#"<polyline class="rate-{cls}" points="{}"/>"#,
            pts.trim_end()
        );
    }
    time_axis(&mut out, &axis, top + height + 2.0);
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_are_one_two_five() {
        assert_eq!(nice_step(10.0, 10.0), 1.0);
        assert_eq!(nice_step(17.0, 10.0), 2.0);
        assert_eq!(nice_step(40.0, 10.0), 5.0);
        assert_eq!(fmt_secs(2.5e9, 5e8), "2.5 s");
        assert_eq!(fmt_secs(20e9, 5e9), "20 s");
    }

    #[test]
    fn bucketed_cells_show_the_majority_and_flag_fail_and_info() {
        assert_eq!(cell_class(0, &[0, 0, 0]), None);
        assert_eq!(cell_class(0, &[9, 1, 1]), Some(0));
        assert_eq!(cell_class(1, &[9, 1, 0]), Some(1));
        assert_eq!(cell_class(2, &[9, 1, 0]), None);
        assert_eq!(cell_class(2, &[9, 0, 1]), Some(2));
        assert_eq!(cell_class(0, &[1, 5, 0]), Some(1));
        assert_eq!(
            cell_class(1, &[1, 5, 0]),
            None,
            "no tick over its own colour"
        );
        assert_eq!(cell_class(0, &[2, 2, 0]), Some(0), "ties go to ok");
    }

    #[test]
    fn axis_clamps_and_buckets() {
        let a = TimeAxis::new(100, 200);
        assert_eq!(a.x(0), LEFT);
        assert_eq!(a.x(500), WIDTH - RIGHT);
        assert_eq!(a.bucket(200, 10), 9);
        assert_eq!(a.bucket(150, 10), 5);
    }
}
