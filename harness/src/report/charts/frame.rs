//! The one plotting frame every picture of the report is drawn in: its width and
//! margins, a time axis mapped onto it, the time ticks below, and the fault periods
//! shaded over it with their labels above. The timeline, the latency and throughput
//! charts and the linearization picture all take their geometry from here.

use std::fmt::Write as _;

use checker::history::{Op, Outcome};

use crate::report::faults::{FaultMark, FaultPeriod};
use crate::report::text::escape;

/// Width of every picture, in SVG units (pixels at 100 %).
pub const WIDTH: f64 = 1100.0;
/// Room on the left for lane labels and y ticks.
pub const LEFT: f64 = 130.0;
const RIGHT: f64 = 14.0;
/// Height of the time axis and its ticks below a plot.
pub(super) const AXIS: f64 = 22.0;
const LABEL_ROW: f64 = 13.0;
const MAX_LABEL_ROWS: usize = 4;

/// Width of the plotting area between the margins.
pub fn plot_width() -> f64 {
    WIDTH - LEFT - RIGHT
}

/// The right edge of the plotting area.
pub fn right() -> f64 {
    WIDTH - RIGHT
}

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

    /// `[t0, t1]` widened on each side by `share` of its span.
    pub fn padded(t0: u64, t1: u64, share: f64) -> TimeAxis {
        let pad = (t1.saturating_sub(t0).max(1) as f64 * share) as u64;
        TimeAxis::new(t0.saturating_sub(pad), t1.saturating_add(pad))
    }

    pub(super) fn span(&self) -> f64 {
        (self.t1 - self.t0) as f64
    }

    pub fn x(&self, t: u64) -> f64 {
        let t = t.clamp(self.t0, self.t1);
        LEFT + (t - self.t0) as f64 / self.span() * plot_width()
    }

    pub(super) fn contains(&self, a: u64, b: u64) -> bool {
        b >= self.t0 && a <= self.t1
    }

    /// Bucket of `t` among `n` equal columns.
    pub(super) fn bucket(&self, t: u64, n: usize) -> usize {
        let t = t.clamp(self.t0, self.t1);
        (((t - self.t0) as f64 / self.span() * n as f64) as usize).min(n - 1)
    }
}

/// The faults every picture shades.
pub struct Faults<'a> {
    pub periods: &'a [FaultPeriod],
    pub marks: &'a [FaultMark],
}

pub(super) fn outcome_class(o: Outcome) -> &'static str {
    match o {
        Outcome::Ok => "ok",
        Outcome::Fail => "fail",
        Outcome::Info => "info",
    }
}

pub(super) fn outcome_slot(o: Outcome) -> usize {
    match o {
        Outcome::Ok => 0,
        Outcome::Fail => 1,
        Outcome::Info => 2,
    }
}

pub(super) fn op_end(op: &Op, axis: &TimeAxis) -> u64 {
    op.complete_time.unwrap_or(axis.t1).max(op.invoke_time)
}

fn fmt_secs(t_ns: f64, step_ns: f64) -> String {
    let s = t_ns / 1e9;
    let decimals = (-(step_ns / 1e9).log10().floor()).max(0.0) as usize;
    format!("{s:.decimals$} s")
}

pub(super) fn nice_step(span: f64, target: f64) -> f64 {
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
pub(super) fn fault_layer(
    out: &mut String,
    axis: &TimeAxis,
    faults: &Faults,
    top: f64,
    height: f64,
) {
    fault_shading(out, axis, faults, top, height);
    fault_labels(out, axis, faults, top);
}

/// Labels of the fault periods, above `top`.
pub(super) fn fault_labels(out: &mut String, axis: &TimeAxis, faults: &Faults, top: f64) {
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
pub(super) fn fault_shading(
    out: &mut String,
    axis: &TimeAxis,
    faults: &Faults,
    top: f64,
    height: f64,
) {
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

pub(super) fn label_band(axis: &TimeAxis, faults: &Faults) -> f64 {
    label_rows(axis, faults).1 as f64 * LABEL_ROW + 4.0
}

pub(super) fn time_axis(out: &mut String, axis: &TimeAxis, y: f64) {
    let step = nice_step(axis.span(), 10.0);
    let first = (axis.t0 as f64 / step).ceil() * step;
    let _ = write!(
        out,
        r#"<line class="axis" x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}"/>"#,
        right()
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

/// Open an `<svg>` of the frame's width and `height`, with its `class` (and `id`, if
/// any) and `title` for screen readers.
pub(in crate::report) fn open(
    out: &mut String,
    id: Option<&str>,
    class: &str,
    height: f64,
    title: &str,
) {
    let id = id.map(|id| format!(r#"id="{id}" "#)).unwrap_or_default();
    let _ = write!(
        out,
        r#"<svg {id}class="{class}" viewBox="0 0 {WIDTH} {height:.0}" width="{WIDTH}" height="{height:.0}" role="img" aria-label="{}">"#,
        escape(title)
    );
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
    fn axis_clamps_and_buckets() {
        let a = TimeAxis::new(100, 200);
        assert_eq!(a.x(0), LEFT);
        assert_eq!(a.x(500), right());
        assert_eq!(a.bucket(200, 10), 9);
        assert_eq!(a.bucket(150, 10), 5);
    }
}
