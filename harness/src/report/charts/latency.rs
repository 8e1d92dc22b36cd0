//! Latency over time: from invocation to completion, on a log scale, one dot per
//! completed operation — or, beyond [`super::DETAIL_LIMIT`] operations, the median,
//! 95th percentile and maximum of ok operations per column, and the slowest fail
//! and info.

use std::fmt::Write as _;

use checker::history::{Op, Outcome};

use super::DETAIL_LIMIT;
use super::frame::{
    AXIS, Faults, LEFT, TimeAxis, fault_layer, label_band, open, outcome_class, outcome_slot,
    plot_width, right, time_axis,
};

/// The `q` quantile of `sorted` (nearest rank).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i]
}

/// Latency (invocation to completion, log scale) of every completed operation.
pub fn latency(ops: &[Op], axis: TimeAxis, faults: &Faults) -> String {
    let points = points(ops);
    let band = label_band(&axis, faults);
    let top = band;
    let height = 220.0;
    let total = top + height + AXIS + 4.0;
    let mut out = String::new();
    open(
        &mut out,
        Some("latency-plot"),
        "plot",
        total,
        "latency over time",
    );
    fault_layer(&mut out, &axis, faults, top, height);
    let scale = LogScale::new(&points, top, height);
    scale.grid(&mut out);
    if points.len() <= DETAIL_LIMIT {
        dots(&mut out, &points, &axis, &scale);
    } else {
        percentiles(&mut out, &points, &axis, &scale);
    }
    time_axis(&mut out, &axis, top + height + 2.0);
    out.push_str("</svg>");
    out
}

/// Every completed operation: its invocation time, its latency in milliseconds
/// (at least a microsecond, for the log scale), its outcome.
fn points(ops: &[Op]) -> Vec<(u64, f64, Outcome)> {
    ops.iter()
        .filter_map(|op| {
            let c = op.complete_time?;
            Some((
                op.invoke_time,
                (c.saturating_sub(op.invoke_time) as f64 / 1e6).max(0.001),
                op.outcome,
            ))
        })
        .collect()
}

/// The latency axis: whole decades of milliseconds, from the one below the
/// fastest point to the one above the slowest, over `height` from `top`.
struct LogScale {
    top: f64,
    height: f64,
    lo_dec: f64,
    hi_dec: f64,
}

impl LogScale {
    /// The decades that take in every point (0 to 3, 1 ms to 1 s, if none).
    fn new(points: &[(u64, f64, Outcome)], top: f64, height: f64) -> LogScale {
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
        LogScale {
            top,
            height,
            lo_dec,
            hi_dec,
        }
    }

    /// Where a latency of `ms` milliseconds goes.
    fn y(&self, ms: f64) -> f64 {
        self.top + self.height
            - (ms.log10() - self.lo_dec) / (self.hi_dec - self.lo_dec) * self.height
    }

    /// A grid line and a label at each decade.
    fn grid(&self, out: &mut String) {
        let mut d = self.lo_dec;
        while d <= self.hi_dec {
            let ms = 10f64.powf(d);
            let yy = self.y(ms);
            let label = if ms >= 1000.0 {
                format!("{} s", ms / 1000.0)
            } else {
                format!("{ms} ms")
            };
            let _ = write!(
                out,
                r#"<line class="grid" x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}"/><text class="ytick" x="{:.1}" y="{:.1}">{label}</text>"#,
                right(),
                LEFT - 6.0,
                yy + 4.0
            );
            d += 1.0;
        }
    }
}

/// One dot per point, bigger when there are few.
fn dots(out: &mut String, points: &[(u64, f64, Outcome)], axis: &TimeAxis, scale: &LogScale) {
    let dot = if points.len() <= 300 { 5.0 } else { 3.0 };
    for (t, ms, o) in points {
        let _ = write!(
            out,
            r#"<rect class="{}" x="{:.1}" y="{:.1}" width="{dot}" height="{dot}"/>"#,
            outcome_class(*o),
            axis.x(*t) - dot / 2.0,
            scale.y(*ms) - dot / 2.0
        );
    }
}

/// Per 4-pixel column, the median, 95th percentile and maximum latency of ok
/// operations as three lines, and a mark at the slowest fail and info.
fn percentiles(
    out: &mut String,
    points: &[(u64, f64, Outcome)],
    axis: &TimeAxis,
    scale: &LogScale,
) {
    let columns = (plot_width() / 4.0) as usize;
    let mut cols: Vec<[Vec<f64>; 3]> = (0..columns).map(|_| Default::default()).collect();
    for (t, ms, o) in points {
        cols[axis.bucket(*t, columns)][outcome_slot(*o)].push(*ms);
    }
    let colw = plot_width() / columns as f64;
    let mut lines: [String; 3] = Default::default();
    for (c, col) in cols.iter_mut().enumerate() {
        let x = LEFT + (c as f64 + 0.5) * colw;
        let ok = &mut col[0];
        if !ok.is_empty() {
            ok.sort_by(f64::total_cmp);
            for (i, q) in [0.5, 0.95, 1.0].into_iter().enumerate() {
                let _ = write!(lines[i], "{x:.1},{:.1} ", scale.y(percentile(ok, q)));
            }
        }
        for (k, cls) in [(1, "fail"), (2, "info")] {
            if let Some(max) = col[k].iter().copied().reduce(f64::max) {
                let _ = write!(
                    out,
                    r#"<rect class="{cls}" x="{:.1}" y="{:.1}" width="3" height="3"/>"#,
                    x - 1.5,
                    scale.y(max) - 1.5
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
