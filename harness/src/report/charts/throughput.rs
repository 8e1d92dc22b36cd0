//! Throughput over time: completions per second in 150 columns, one line per outcome.

use std::fmt::Write as _;

use checker::history::Op;

use super::frame::{
    AXIS, Faults, LEFT, TimeAxis, fault_layer, label_band, nice_step, open, outcome_slot,
    plot_width, right, time_axis,
};

/// Completions per second over time, one line per outcome.
pub fn throughput(ops: &[Op], axis: TimeAxis, faults: &Faults) -> String {
    let columns = 150usize;
    let mut counts = vec![[0u32; 3]; columns];
    for op in ops {
        let Some(t) = op.complete_time else { continue };
        counts[axis.bucket(t, columns)][outcome_slot(op.outcome)] += 1;
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
    open(
        &mut out,
        Some("throughput-plot"),
        "plot",
        total,
        "throughput over time",
    );
    fault_layer(&mut out, &axis, faults, top, height);
    let y = |rate: f64| top + height - rate / ymax * height;
    for i in 0..=4 {
        let r = ymax * i as f64 / 4.0;
        let yy = y(r);
        let _ = write!(
            out,
            r#"<line class="grid" x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}"/><text class="ytick" x="{:.1}" y="{:.1}">{r:.0}/s</text>"#,
            right(),
            LEFT - 6.0,
            yy + 4.0
        );
    }
    let colw = plot_width() / columns as f64;
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
