//! The timeline: every operation as a bar from invocation to completion, one lane per
//! client process (processes whose lifetimes do not overlap share a lane when there
//! are many), the fault periods shaded over it. Beyond [`super::DETAIL_LIMIT`]
//! operations it draws one mark per lane per pixel column instead; operations an
//! anomaly involves are always drawn one by one, with an `id` the anomaly text links
//! to.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use checker::history::Op;

use super::DETAIL_LIMIT;
use super::frame::{
    AXIS, Faults, LEFT, TimeAxis, fault_labels, fault_shading, label_band, op_end, open,
    outcome_class, outcome_slot, plot_width, time_axis,
};
use crate::report::text::escape;

/// Height of the fault strip above the timeline's lanes.
const STRIP: f64 = 7.0;
/// Up to this many processes, each gets its own row.
const ONE_LANE_EACH: usize = 16;

/// An operation in words, for tooltips.
fn op_text(op: &Op) -> String {
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

/// A lane's label: its processes, the first three of them.
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
    let layout = Layout::new(&visible, axis, faults);
    let total = layout.top + layout.height + AXIS + 4.0;
    let mut out = String::new();
    open(
        &mut out,
        Some(id),
        "plot",
        total,
        "timeline of operations per process",
    );
    fault_labels(&mut out, &axis, faults, layout.band);
    layout.fault_strip(&mut out, faults);
    layout.lane_rows(&mut out);
    if visible.len() <= DETAIL_LIMIT {
        layout.each_op(&mut out, &visible, highlight);
    } else {
        layout.bucketed(&mut out, &visible);
    }
    // Faults tint the operations they overlap; highlighted operations stay on top.
    fault_shading(&mut out, &axis, faults, layout.top, layout.height);
    layout.highlighted(&mut out, &visible, highlight, id_prefix);
    time_axis(&mut out, &axis, layout.top + layout.height + 2.0);
    out.push_str("</svg>");
    out
}

/// Where a timeline's parts go: its axis, its lanes and which process is in
/// which, and the heights of the fault labels, the fault strip, lanes and bars.
struct Layout {
    axis: TimeAxis,
    lane_of: BTreeMap<u64, usize>,
    members: Vec<Vec<u64>>,
    nlanes: usize,
    lane_h: f64,
    bar_h: f64,
    /// The fault labels' band, above the strip.
    band: f64,
    /// Where the lanes start.
    top: f64,
    /// The lanes' height.
    height: f64,
}

impl Layout {
    /// The layout of the operations `visible` over `axis`, with `faults`' labels.
    fn new(visible: &[&Op], axis: TimeAxis, faults: &Faults) -> Layout {
        let (lane_of, members) = lanes(visible, &axis);
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
        Layout {
            axis,
            lane_of,
            members,
            nlanes,
            lane_h,
            bar_h,
            band,
            top,
            height,
        }
    }

    /// The fault strip: a solid mark per fault period between labels and lanes.
    fn fault_strip(&self, out: &mut String, faults: &Faults) {
        let (axis, band) = (&self.axis, self.band);
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
    }

    /// The lanes: every other one shaded, each labelled with its processes where
    /// there is room for the label.
    fn lane_rows(&self, out: &mut String) {
        let lane_h = self.lane_h;
        for (l, procs) in self.members.iter().enumerate() {
            let y = self.top + l as f64 * lane_h;
            if l % 2 == 1 {
                let _ = write!(
                    out,
                    r#"<rect class="lane" x="{LEFT}" y="{y:.1}" width="{:.1}" height="{lane_h:.1}"/>"#,
                    plot_width()
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
    }

    /// The top of an operation's bar, in its process's lane.
    fn y_of(&self, op: &Op) -> f64 {
        self.top + self.lane_of[&op.process] as f64 * self.lane_h + (self.lane_h - self.bar_h) / 2.0
    }

    /// Every operation not highlighted, as a bar with its tooltip.
    fn each_op(&self, out: &mut String, visible: &[&Op], highlight: &BTreeSet<u64>) {
        let (axis, bar_h) = (&self.axis, self.bar_h);
        for op in visible
            .iter()
            .filter(|op| !highlight.contains(&op.invoke_index))
        {
            let x0 = axis.x(op.invoke_time);
            let x1 = axis.x(op_end(op, axis)).max(x0 + 1.0);
            let _ = write!(
                out,
                r#"<rect class="{}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{bar_h:.1}"><title>{}</title></rect>"#,
                outcome_class(op.outcome),
                self.y_of(op),
                x1 - x0,
                escape(&op_text(op))
            );
        }
    }

    /// Too many operations to draw one by one: one mark per lane per 2-pixel
    /// column, coloured by its most common outcome; thin ticks flag columns with
    /// any fail (below) or info (above).
    fn bucketed(&self, out: &mut String, visible: &[&Op]) {
        let columns = (plot_width() / 2.0) as usize;
        let grid = self.grid(visible, columns);
        let colw = plot_width() / columns as f64;
        let (lane_h, bar_h) = (self.lane_h, self.bar_h);
        for lane in 0..self.nlanes {
            let row = &grid[lane * columns..(lane + 1) * columns];
            let y = self.top + lane as f64 * lane_h + (lane_h - bar_h) / 2.0;
            let tick = (bar_h / 4.0).clamp(1.0, 3.0);
            let layers = [(0, y, bar_h), (1, y + bar_h - tick, tick), (2, y, tick)];
            for (layer, ly, lh) in layers {
                layer_marks(out, row, layer, ly, lh, colw);
            }
        }
    }

    /// The operations counted by outcome in each lane's `columns` columns, lane
    /// after lane: an operation counts in every column it spans.
    fn grid(&self, visible: &[&Op], columns: usize) -> Vec<[u32; 3]> {
        let mut grid = vec![[0u32; 3]; self.nlanes * columns];
        for op in visible {
            let lane = self.lane_of[&op.process];
            let a = self.axis.bucket(op.invoke_time, columns);
            let b = match op.complete_time {
                Some(t) => self.axis.bucket(t, columns),
                None => a,
            };
            for cell in &mut grid[lane * columns + a..=lane * columns + b] {
                cell[outcome_slot(op.outcome)] += 1;
            }
        }
        grid
    }

    /// The highlighted operations, outlined on top, each with the `id` an anomaly
    /// links to.
    fn highlighted(
        &self,
        out: &mut String,
        visible: &[&Op],
        highlight: &BTreeSet<u64>,
        id_prefix: &str,
    ) {
        let (axis, bar_h) = (&self.axis, self.bar_h);
        for op in visible
            .iter()
            .filter(|op| highlight.contains(&op.invoke_index))
        {
            let x0 = axis.x(op.invoke_time);
            let x1 = axis.x(op_end(op, axis)).max(x0 + 3.0);
            let _ = write!(
                out,
                r#"<rect id="{id_prefix}op-{}" class="hl {}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{bar_h:.1}"><title>[{}] {}</title></rect>"#,
                op.invoke_index,
                outcome_class(op.outcome),
                self.y_of(op),
                x1 - x0,
                op.invoke_index,
                escape(&op_text(op))
            );
        }
    }
}

/// One layer of a bucketed lane's `row` of cells, at height `ly`, `lh` high: a
/// mark for each run of neighbouring columns of one class (see [`cell_class`]).
fn layer_marks(out: &mut String, row: &[[u32; 3]], layer: usize, ly: f64, lh: f64, colw: f64) {
    let columns = row.len();
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
