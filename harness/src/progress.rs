//! What a person watching a campaign sees: a progress bar on a terminal (elapsed /
//! limit, operations ok / fail / info, the faults in force), a line every ten
//! seconds when stderr is not a terminal (CI logs) — in the run's watermark.log
//! either way — and the closing summary (verdict, anomalies by kind with one
//! example each, the run folder).

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use checker::history::EventType;
use checker::verdict::{Results, Validity};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

/// Counts of completed operations and the faults currently in force, updated as
/// events are recorded.
#[derive(Debug, Default)]
pub struct Tally {
    ok: AtomicU64,
    fail: AtomicU64,
    info: AtomicU64,
    /// Labels of the faults in force, oldest first (e.g. `kill 2`).
    faults: Mutex<Vec<String>>,
}

impl Tally {
    /// Count one client event (invocations are not counted).
    pub fn count(&self, kind: EventType) {
        let counter = match kind {
            EventType::Invoke => return,
            EventType::Ok => &self.ok,
            EventType::Fail => &self.fail,
            EventType::Info => &self.info,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Follow a nemesis event (named as in docs/faults.md#in-the-history: `kill`,
    /// `pause`, `partition`, `crash-all`, `lose-unflushed`, `slow`, `flaky`,
    /// `throttle`, `disk` start a fault; `restart`, `resume`, `heal`, `stop-slow`, …,
    /// `disk-ok` end one).
    pub fn nemesis(&self, f: &str, value: &Value) {
        let mut active = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        // Degraded links: named by the processes whose links they are.
        if let Some(procs) = value.get("procs") {
            let label = format!(
                "{} {}",
                f.strip_prefix("stop-").unwrap_or(f),
                targets(procs).join(",")
            );
            if f.starts_with("stop-") {
                if let Some(i) = active.iter().position(|l| *l == label) {
                    active.remove(i);
                }
            } else {
                active.push(label);
            }
            return;
        }
        match f {
            // e.g. `disk 2 enospc`, ended by the `disk-ok` of the same value.
            "disk" | "disk-ok" => {
                let label = format!(
                    "disk {} {}",
                    value["node"],
                    value["mode"].as_str().unwrap_or_default()
                );
                if f == "disk" {
                    active.push(label);
                } else if let Some(i) = active.iter().position(|l| *l == label) {
                    active.remove(i);
                }
            }
            "restart" | "resume" | "heal" => {
                let targets = targets(value);
                let mut sorted = targets.clone();
                sorted.sort();
                let ends = |label: &String| match f {
                    "heal" => match value.get("topology").and_then(Value::as_str) {
                        Some(topology) => *label == format!("partition {topology}"),
                        None => label.starts_with("partition"),
                    },
                    "resume" => *label == format!("pause {}", targets.join(",")),
                    _ => {
                        *label == format!("kill {}", targets.join(","))
                            || *label == format!("lose-unflushed {}", targets.join(","))
                            || *label == format!("crash-all {}", sorted.join(","))
                    }
                };
                if let Some(i) = active.iter().position(ends) {
                    active.remove(i);
                }
            }
            _ => {
                let what = match value.get("topology").and_then(Value::as_str) {
                    Some(topology) => topology.to_string(),
                    None => {
                        let mut t = targets(value);
                        if f == "crash-all" {
                            t.sort();
                        }
                        t.join(",")
                    }
                };
                active.push(format!("{f} {what}"));
            }
        }
    }

    /// (ok, fail, info).
    pub fn counts(&self) -> (u64, u64, u64) {
        (
            self.ok.load(Ordering::Relaxed),
            self.fail.load(Ordering::Relaxed),
            self.info.load(Ordering::Relaxed),
        )
    }

    /// The faults in force, e.g. `kill 2, partition isolate-leader`.
    pub fn faults(&self) -> String {
        let f = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_empty() {
            "none".to_string()
        } else {
            f.join(", ")
        }
    }
}

/// A nemesis event's targets as text: node ids and `controller`.
fn targets(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        Value::Null => Vec::new(),
        other => vec![other.to_string()],
    }
}

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
        "operations: {} ok, {} fail, {} info\n",
        counts.0, counts.1, counts.2
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
    fn tally_counts_completions_and_active_faults() {
        let t = Tally::default();
        for k in [
            EventType::Invoke,
            EventType::Ok,
            EventType::Ok,
            EventType::Info,
        ] {
            t.count(k);
        }
        assert_eq!(t.counts(), (2, 0, 1));
        t.nemesis("kill", &json!([2]));
        t.nemesis("pause", &json!(["controller"]));
        t.nemesis("crash-all", &json!([3, 1, 2]));
        t.nemesis(
            "partition",
            &json!({"topology": "isolate-leader", "grudge": {}}),
        );
        assert_eq!(
            t.faults(),
            "kill 2, pause controller, crash-all 1,2,3, partition isolate-leader"
        );
        t.nemesis("resume", &json!(["controller"]));
        t.nemesis("restart", &json!([2]));
        t.nemesis("restart", &json!([2, 3, 1]));
        assert_eq!(t.faults(), "partition isolate-leader");
        t.nemesis("heal", &json!({"topology": "isolate-leader", "grudge": {}}));
        assert_eq!(t.faults(), "none");
        let slow = json!({"procs": ["controller", 1], "delay_ms": 40, "jitter_ms": 5});
        t.nemesis("slow", &slow);
        t.nemesis("throttle", &json!({"procs": [2], "bytes_per_s": 9000}));
        assert_eq!(t.faults(), "slow controller,1, throttle 2");
        t.nemesis("stop-slow", &slow);
        assert_eq!(t.faults(), "throttle 2");
    }

    #[test]
    fn a_disk_ok_ends_the_disk_fault_of_its_node() {
        let t = Tally::default();
        let two = json!({"node": 2, "mode": "enospc", "for_ms": 9000});
        t.nemesis("disk", &two);
        t.nemesis("disk", &json!({"node": 3, "mode": "eio", "for_ms": 9000}));
        assert_eq!(t.faults(), "disk 2 enospc, disk 3 eio");
        t.nemesis("disk-ok", &two);
        assert_eq!(t.faults(), "disk 3 eio");
    }

    #[test]
    fn a_heal_ends_the_partition_of_its_topology() {
        let t = Tally::default();
        let cut = |topology: &str| json!({"topology": topology, "grudge": {}});
        t.nemesis("partition", &cut("one-way"));
        t.nemesis("partition", &cut("isolate-from-peers"));
        t.nemesis("heal", &cut("isolate-from-peers"));
        assert_eq!(t.faults(), "partition one-way");
        t.nemesis("heal", &json!(null));
        assert_eq!(t.faults(), "none");
    }

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
        let s = summary(&Results::new(checkers), &[], (3, 0, 0), Path::new("r"));
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
            Path::new("results/x"),
        );
        assert!(s.starts_with("verdict: INVALID"), "{s}");
        assert!(s.contains("lost-write: 2"), "{s}");
        assert!(s.contains("send of 7"), "{s}");
        assert!(!s.contains("send of 9"), "{s}");
        assert!(s.contains("note: cluster did not converge"), "{s}");
        assert!(s.contains("run folder: results/x"), "{s}");
    }
}
