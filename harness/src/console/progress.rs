//! What a person watching a campaign sees: a progress bar on a terminal (elapsed /
//! limit, operations ok / fail / info, the faults in force), a line every ten
//! seconds when stderr is not a terminal (CI logs) — in the run's watermark.log
//! either way — and the closing summary (verdict, anomalies by kind with one
//! example each, the run folder).

use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

use checker::verdict::{Results, Validity};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub use crate::store::OkRates;
use crate::store::Tally;

/// Interval between plain progress lines when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(10);

/// The progress display of one campaign.
pub struct Progress {
    bar: Option<ProgressBar>,
    limit: Duration,
    started: Instant,
    last_line: Instant,
    phase: String,
}

impl Progress {
    /// A bar on a terminal; plain lines otherwise.
    pub fn start(limit: Duration) -> Progress {
        let now = Instant::now();
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(
                Some(limit.as_secs().max(1)),
                ProgressDrawTarget::stderr(),
            );
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len}s {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
            bar.set_style(style);
            bar
        });
        Progress {
            bar,
            limit,
            started: now,
            last_line: now,
            phase: "running".to_string(),
        }
    }

    /// Name what the campaign does now (running, healing, draining, checking).
    pub fn phase(&mut self, phase: &str) {
        self.phase = phase.to_string();
        let line = format!("[{:>5.1}s] {phase}", self.started.elapsed().as_secs_f64());
        match &self.bar {
            Some(bar) => {
                bar.set_message(phase.to_string());
                crate::console::record(&line);
            }
            None => crate::errln!("{line}"),
        }
    }

    /// The campaign proper starts now: elapsed time counts from here.
    pub fn begin_running(&mut self) {
        self.started = Instant::now();
        self.last_line = self.started;
        if let Some(bar) = &self.bar {
            bar.reset_elapsed();
            bar.set_position(0);
        }
        self.phase("running");
    }

    /// Refresh from the tally; call a few times a second. Every ten seconds a
    /// line says where the run is: printed when there is no bar, and in
    /// watermark.log either way.
    pub fn tick(&mut self, tally: &Tally) {
        let elapsed = self.started.elapsed();
        let (ok, fail, info) = tally.counts();
        let msg = format!(
            "ok {ok} fail {fail} info {info} | faults: {}",
            tally.faults()
        );
        if let Some(bar) = &self.bar {
            bar.set_position(elapsed.as_secs().min(self.limit.as_secs()));
            bar.set_message(msg.clone());
        }
        if self.last_line.elapsed() >= LINE_EVERY {
            self.last_line = Instant::now();
            let line = format!(
                "[{:>5.1}s/{}s] {} | {msg}",
                elapsed.as_secs_f64(),
                self.limit.as_secs(),
                self.phase
            );
            match &self.bar {
                Some(_) => crate::console::record(&line),
                None => crate::errln!("{line}"),
            }
        }
    }

    /// Remove the bar (before the summary is printed).
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The closing summary: the verdict, anomalies by kind with one example each, notes
/// (e.g. a cluster that did not converge), and where the run folder is.
pub fn summary(
    results: &Results,
    notes: &[String],
    counts: (u64, u64, u64),
    rates: OkRates,
    run_dir: &Path,
) -> String {
    let mut out = String::new();
    let verdict = match results.valid {
        Validity::Valid => "valid: no anomalies found",
        Validity::Invalid => "INVALID: anomalies found",
        Validity::Unknown => "unknown: the history could not be fully judged",
    };
    out.push_str(&format!("verdict: {verdict}\n"));
    out.push_str(&format!(
        "operations: {} ok, {} fail, {} info ({})\n",
        counts.0,
        counts.1,
        counts.2,
        rates.describe()
    ));
    for (name, c) in &results.checkers {
        out.push_str(&format!("checker {name}: {}", c.valid));
        if let Some(r) = &c.reason {
            out.push_str(&format!(" ({r})"));
        }
        out.push('\n');
        for note in &c.notes {
            out.push_str(&format!("  note: {note}\n"));
        }
        for (kind, n) in c.counts() {
            let example = c.anomalies.iter().find(|a| a.kind == kind);
            out.push_str(&format!("  {kind}: {n}\n"));
            if let Some(a) = example {
                let mut line = format!("    e.g. {}", a.message);
                if let Some(p) = a.partition {
                    line.push_str(&format!(" (partition {p}"));
                    if !a.offsets.is_empty() {
                        let offsets: Vec<String> =
                            a.offsets.iter().take(4).map(|o| o.to_string()).collect();
                        line.push_str(&format!(", offsets {}", offsets.join(", ")));
                    }
                    line.push(')');
                }
                out.push_str(&line);
                out.push('\n');
                for said in a.log.iter().flat_map(|l| l.lines()).take(6) {
                    out.push_str(&format!("      | {said}\n"));
                }
                for op in a.ops.iter().take(3) {
                    out.push_str(&format!("      {op}\n"));
                }
                if let Some(why) = &a.explanation {
                    // The linearizability checker's account: where the longest
                    // linearizable prefix ends, and the state it leaves.
                    if let Some(k) = &a.key {
                        out.push_str(&format!("      key {k}\n"));
                    }
                    if let Some(last) = why.prefix.last() {
                        out.push_str(&format!(
                            "      longest linearizable prefix: {} operations, ending with {last}\n",
                            why.prefix.len()
                        ));
                    }
                    out.push_str(&format!(
                        "      state after it: {}; cannot be linearized next: {}\n",
                        why.states.join(" or "),
                        why.op
                    ));
                }
            }
        }
    }
    for note in notes {
        out.push_str(&format!("note: {note}\n"));
    }
    out.push_str(&format!("run folder: {}\n", run_dir.display()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use checker::verdict::{Anomaly, AnomalyKind, CheckerResult, Explanation, OpRef};
    use serde_json::json;

    #[test]
    fn summary_explains_a_nonlinearizable_key() {
        let op = |invoke, text: &str| OpRef {
            invoke,
            complete: Some(invoke + 1),
            process: 3,
            f: text.split(' ').next().unwrap().to_string(),
            text: text.to_string(),
        };
        let mut a = Anomaly::new(
            AnomalyKind::Nonlinearizable,
            "read → 4 cannot be linearized after the longest linearizable prefix (1 of 2 operations)",
        );
        a.key = Some(json!("k7"));
        a.ops = vec![op(9, "read → 4")];
        a.explanation = Some(Explanation {
            op: op(9, "read → 4"),
            prefix: vec![op(5, "write 6")],
            states: vec!["6".into()],
            pending: Vec::new(),
        });
        let mut checkers = std::collections::BTreeMap::new();
        checkers.insert(
            "linearizable".to_string(),
            CheckerResult::from_anomalies(vec![a]),
        );
        let s = summary(
            &Results::new(checkers),
            &[],
            (3, 0, 0),
            OkRates::default(),
            Path::new("r"),
        );
        assert!(s.contains("nonlinearizable: 1"), "{s}");
        assert!(s.contains("key \"k7\""), "{s}");
        assert!(
            s.contains(
                "longest linearizable prefix: 1 operations, ending with [5..6] process 3: write 6"
            ),
            "{s}"
        );
        assert!(
            s.contains("state after it: 6; cannot be linearized next: [9..10] process 3: read → 4"),
            "{s}"
        );
    }

    #[test]
    fn summary_names_each_kind_once_with_an_example() {
        let mut a = Anomaly::new(AnomalyKind::LostWrite, "acknowledged send of 7 is missing");
        a.partition = Some(1);
        a.offsets = vec![4];
        let mut b = a.clone();
        b.message = "acknowledged send of 9 is missing".into();
        let mut checkers = std::collections::BTreeMap::new();
        checkers.insert(
            "queue".to_string(),
            CheckerResult::from_anomalies(vec![a, b]),
        );
        let r = Results::new(checkers);
        let s = summary(
            &r,
            &["cluster did not converge".into()],
            (10, 2, 1),
            OkRates { peak: 9, median: 3 },
            Path::new("results/x"),
        );
        assert!(s.starts_with("verdict: INVALID"), "{s}");
        assert!(s.contains("lost-write: 2"), "{s}");
        assert!(s.contains("send of 7"), "{s}");
        assert!(!s.contains("send of 9"), "{s}");
        assert!(s.contains("note: cluster did not converge"), "{s}");
        assert!(s.contains("run folder: results/x"), "{s}");
        assert!(s.contains("peak 9 ok/s, median 3 ok/s"), "{s}");
    }
}
