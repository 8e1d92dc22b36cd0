//! What the self-test measures of the default campaign, as plain computations on
//! finished campaigns: when a campaign detected its bug, each row's detection rate
//! and median time to detection, whether the row passes, and the table.
//!
//! **Time to detection** of an INVALID campaign: seconds on the history's clock
//! (zero just before the cluster starts) at which the earliest anomaly the checkers
//! reported was witnessed. An anomaly is witnessed when the last of its operations
//! completed (or was invoked, if it never completed) — unless only the end of the run
//! shows it: a `lost-write` (a write missing from the final log), a
//! `replica-divergence` (the replicas' final logs), an anomaly that involves a
//! `final-poll`, no operation at all, or a single operation where two observations
//! are needed (`inconsistent-offsets`, `duplicate`: the other was the final log).
//! Those are witnessed at the end of the campaign: the history's last event, after
//! which checking starts.

use checker::history::Event;
use checker::verdict::{Anomaly, AnomalyKind, Results};
use serde::Serialize;

/// When a campaign's anomalies were witnessed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Detection {
    /// Seconds from the run's start (the history's zero).
    pub seconds: f64,
    /// Whether only the end of the run showed it (final drain, final logs).
    pub at_end: bool,
    /// For what only the end showed: the latest moment the run saw an operation of
    /// it (a lost write's acknowledgement) — what lost it came after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<f64>,
}

/// When the earliest of `results`' anomalies was witnessed in `events` (the run's
/// whole history); `None` without anomalies.
pub fn detection(results: &Results, events: &[Event]) -> Option<Detection> {
    let time_of = |index: u64| {
        events
            .binary_search_by_key(&index, |e| e.index)
            .ok()
            .map(|i| events[i].time)
    };
    let end = events.last().map_or(0, |e| e.time);
    let anomalies = || results.checkers.values().flat_map(|c| &c.anomalies);
    let (t, at_end) = anomalies()
        .map(|a| {
            if !witnessed_in_run(a) {
                return (end, true);
            }
            a.ops
                .iter()
                .map(|op| time_of(op.complete.unwrap_or(op.invoke)))
                .try_fold(0u64, |max, t| t.map(|t| max.max(t)))
                // An operation missing from the history: the end is all we know.
                .map_or((end, true), |t| (t, false))
        })
        .min_by_key(|&(t, _)| t)?;
    let after = at_end
        .then(|| {
            anomalies()
                .filter(|a| !witnessed_in_run(a))
                .flat_map(|a| &a.ops)
                .filter(|op| op.f != "final-poll")
                .filter_map(|op| time_of(op.complete.unwrap_or(op.invoke)))
                .max()
        })
        .flatten();
    Some(Detection {
        seconds: t as f64 / 1e9,
        at_end,
        after: after.map(|t| t as f64 / 1e9),
    })
}

/// Whether the operations of `a` show it on their own, during the run.
fn witnessed_in_run(a: &Anomaly) -> bool {
    let needs = match a.kind {
        AnomalyKind::LostWrite | AnomalyKind::ReplicaDivergence => return false,
        AnomalyKind::InconsistentOffsets | AnomalyKind::Duplicate => 2,
        _ => 1,
    };
    a.ops.len() >= needs && a.ops.iter().all(|op| op.f != "final-poll")
}

/// One campaign of a row: a `watermark run` with a seed, and how it ended.
#[derive(Debug, Clone, Serialize)]
pub struct Campaign {
    pub seed: u64,
    /// Its exit code (0 valid, 1 invalid, 2 unknown, 3 harness failure, 130).
    pub exit: i32,
    /// The distinct anomaly kinds it found.
    pub anomalies: Vec<String>,
    /// When it detected them (invalid campaigns whose history could be read).
    pub detection: Option<Detection>,
    /// Its run folder, if it got that far.
    pub folder: Option<std::path::PathBuf>,
    /// Wall-clock seconds, start to exit.
    pub seconds: f64,
}

impl Campaign {
    fn caught(&self) -> bool {
        self.exit == 1
    }
}

/// A bug (or `clean`) and its campaigns, one per seed.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub bug: String,
    pub campaigns: Vec<Campaign>,
}

/// A row's figures, as selftest.json stores them beside its campaigns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    /// Campaigns that ended INVALID.
    pub caught: usize,
    pub runs: usize,
    /// `caught / runs`.
    pub rate: f64,
    /// The median time to detection over the caught campaigns with a detection
    /// time (the mean of the middle two for an even count).
    pub median_time_to_detection: Option<f64>,
    /// Campaigns that ended valid.
    pub valid: usize,
}

impl Row {
    pub fn is_clean(&self) -> bool {
        self.bug == "clean"
    }

    pub fn figures(&self) -> Figures {
        let runs = self.campaigns.len();
        let caught = self.campaigns.iter().filter(|c| c.caught()).count();
        let times: Vec<f64> = self
            .campaigns
            .iter()
            .filter(|c| c.caught())
            .filter_map(|c| c.detection.map(|d| d.seconds))
            .collect();
        Figures {
            caught,
            runs,
            rate: if runs == 0 {
                0.0
            } else {
                caught as f64 / runs as f64
            },
            median_time_to_detection: median(times),
            valid: self.campaigns.iter().filter(|c| c.exit == 0).count(),
        }
    }

    /// How its campaigns ended, in words: `2 invalid, 1 valid`.
    pub fn verdicts(&self) -> String {
        verdicts(&self.campaigns)
    }

    /// The distinct anomaly kinds its campaigns found, sorted.
    pub fn kinds(&self) -> Vec<String> {
        let mut kinds: Vec<String> = self
            .campaigns
            .iter()
            .flat_map(|c| c.anomalies.iter().cloned())
            .collect();
        kinds.sort();
        kinds.dedup();
        kinds
    }

    /// Whether the row passes: a bug caught in at least `min_rate` of its
    /// campaigns (and at least once); the clean broker valid in every one.
    pub fn passed(&self, min_rate: f64) -> bool {
        let f = self.figures();
        if f.runs == 0 {
            return false;
        }
        if self.is_clean() {
            f.valid == f.runs
        } else {
            f.caught >= 1 && f.caught as f64 >= min_rate * f.runs as f64 - 1e-9
        }
    }
}

/// The median of `values`; `None` if there are none.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// How the campaigns of a row ended, in words: `2 invalid, 1 valid`.
fn verdicts(campaigns: &[Campaign]) -> String {
    let names = [
        (1, "invalid"),
        (0, "valid"),
        (2, "unknown"),
        (3, "harness failed"),
        (130, "interrupted"),
    ];
    let mut parts = Vec::new();
    for (code, name) in names {
        let n = campaigns.iter().filter(|c| c.exit == code).count();
        if n > 0 {
            parts.push(format!("{n} {name}"));
        }
    }
    let other = campaigns
        .iter()
        .filter(|c| !names.iter().any(|(code, _)| *code == c.exit))
        .count();
    if other > 0 {
        parts.push(format!("{other} other"));
    }
    parts.join(", ")
}

/// The table: per row, caught / runs, the rate, the median time to detection, how
/// the campaigns ended, the anomaly kinds found, and whether the row passed.
pub fn table(rows: &[Row], min_rate: f64) -> String {
    // The bug column fits the longest name (22 at least, as the others are fixed).
    let w = rows.iter().map(|r| r.bug.len()).max().unwrap_or(0).max(22);
    let mut out = format!(
        "\n{:<w$} {:<7} {:<5} {:<17} {:<27} {:<6} {}\n",
        "bug", "caught", "rate", "median detection", "verdicts", "pass", "anomalies"
    );
    for r in rows {
        let f = r.figures();
        let (caught, rate) = if r.is_clean() {
            ("-".to_string(), "-".to_string())
        } else {
            (
                format!("{}/{}", f.caught, f.runs),
                format!("{:.0}%", f.rate * 100.0),
            )
        };
        let ttd = f
            .median_time_to_detection
            .map_or("-".to_string(), |t| format!("{t:.1} s"));
        let pass = if r.passed(min_rate) { "yes" } else { "NO" };
        let mut kinds: Vec<&str> = r
            .campaigns
            .iter()
            .flat_map(|c| c.anomalies.iter().map(String::as_str))
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        let kinds = if kinds.is_empty() {
            "-".to_string()
        } else {
            kinds.join(", ")
        };
        out.push_str(&format!(
            "{:<w$} {:<7} {:<5} {:<17} {:<27} {:<6} {}\n",
            r.bug,
            caught,
            rate,
            ttd,
            r.verdicts(),
            pass,
            kinds
        ));
    }
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use checker::history::{EventType, Process};
    use checker::verdict::{CheckerResult, OpRef};
    use std::collections::BTreeMap;

    /// Events 0..n, event i at i seconds.
    fn events(n: u64) -> Vec<Event> {
        (0..n)
            .map(|i| Event {
                index: i,
                time: i * 1_000_000_000,
                process: Process::Client(0),
                kind: EventType::Invoke,
                f: "send".into(),
                value: serde_json::Value::Null,
                error: None,
            })
            .collect()
    }

    fn op(invoke: u64, complete: Option<u64>, f: &str) -> OpRef {
        OpRef {
            invoke,
            complete,
            process: 0,
            f: f.into(),
            text: String::new(),
        }
    }

    fn anomaly(kind: AnomalyKind, ops: Vec<OpRef>) -> Anomaly {
        let mut a = Anomaly::new(kind, "x");
        a.ops = ops;
        a
    }

    fn results(anomalies: Vec<Anomaly>) -> Results {
        Results::new(BTreeMap::from([(
            "queue".to_string(),
            CheckerResult::from_anomalies(anomalies),
        )]))
    }

    #[test]
    fn an_anomaly_is_witnessed_when_its_last_operation_completed() {
        let e = events(100);
        let r = results(vec![
            anomaly(
                AnomalyKind::NonmonotonicSend,
                vec![op(10, Some(12), "send"), op(20, Some(31), "send")],
            ),
            anomaly(AnomalyKind::PollSkip, vec![op(40, None, "poll")]),
        ]);
        assert_eq!(
            detection(&r, &e),
            Some(Detection {
                seconds: 31.0,
                at_end: false,
                after: None,
            })
        );
        assert_eq!(detection(&results(vec![]), &e), None);
    }

    #[test]
    fn what_only_the_end_of_the_run_shows_is_witnessed_at_the_end() {
        let e = events(100);
        let end = |after: Option<f64>| Detection {
            seconds: 99.0,
            at_end: true,
            after,
        };
        for (a, after) in [
            (
                anomaly(AnomalyKind::LostWrite, vec![op(3, Some(4), "send")]),
                Some(4.0),
            ),
            (anomaly(AnomalyKind::ReplicaDivergence, vec![]), None),
            (
                anomaly(
                    AnomalyKind::InconsistentOffsets,
                    vec![op(3, Some(4), "send")],
                ),
                Some(4.0),
            ),
            (
                anomaly(
                    AnomalyKind::InconsistentOffsets,
                    vec![op(3, Some(4), "send"), op(95, Some(96), "final-poll")],
                ),
                Some(4.0),
            ),
            // An operation the history does not hold.
            (
                anomaly(AnomalyKind::PollSkip, vec![op(500, Some(501), "poll")]),
                None,
            ),
        ] {
            assert_eq!(
                detection(&results(vec![a.clone()]), &e),
                Some(end(after)),
                "{a:?}"
            );
        }
        // What was lost came after the latest acknowledgement of a lost write.
        let two = results(vec![
            anomaly(AnomalyKind::LostWrite, vec![op(3, Some(4), "send")]),
            anomaly(AnomalyKind::LostWrite, vec![op(20, Some(22), "send")]),
        ]);
        assert_eq!(detection(&two, &e), Some(end(Some(22.0))));
        // The earliest witnessed anomaly counts.
        let both = results(vec![
            anomaly(AnomalyKind::LostWrite, vec![op(3, Some(4), "send")]),
            anomaly(
                AnomalyKind::InconsistentOffsets,
                vec![op(3, Some(4), "send"), op(50, Some(51), "poll")],
            ),
        ]);
        assert_eq!(detection(&both, &e).unwrap().seconds, 51.0);
    }

    /// A campaign of seed 1 that ended `exit`, found `kinds`, detected at `seconds`.
    pub(in crate::commands::selftest) fn campaign(
        exit: i32,
        seconds: Option<f64>,
        kinds: &[&str],
    ) -> Campaign {
        Campaign {
            seed: 1,
            exit,
            anomalies: kinds.iter().map(|k| k.to_string()).collect(),
            detection: seconds.map(|seconds| Detection {
                seconds,
                at_end: false,
                after: None,
            }),
            folder: None,
            seconds: 70.0,
        }
    }

    #[test]
    fn the_rate_and_the_median_count_the_caught_campaigns() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0]), Some(3.0));
        assert_eq!(median(vec![9.0, 1.0, 4.0]), Some(4.0));
        assert_eq!(median(vec![9.0, 1.0, 4.0, 2.0]), Some(3.0));
        let row = Row {
            bug: "stale-read".into(),
            campaigns: vec![
                campaign(1, Some(30.0), &["nonlinearizable"]),
                campaign(0, None, &[]),
                campaign(1, Some(10.0), &["nonlinearizable"]),
                campaign(2, None, &[]),
            ],
        };
        let f = row.figures();
        assert_eq!((f.caught, f.runs, f.valid), (2, 4, 1));
        assert_eq!(f.rate, 0.5);
        assert_eq!(f.median_time_to_detection, Some(20.0));
        assert!(row.passed(0.5) && !row.passed(0.51));
        // Two of three passes at one half; one of three does not.
        let mut three = row.clone();
        three.campaigns.truncate(3);
        assert!(three.passed(0.5) && !three.passed(0.8));
        three.campaigns[0].exit = 0;
        assert!(!three.passed(0.5) && three.passed(0.3));
    }

    #[test]
    fn the_clean_broker_passes_only_if_every_campaign_is_valid() {
        let mut clean = Row {
            bug: "clean".into(),
            campaigns: vec![campaign(0, None, &[]), campaign(0, None, &[])],
        };
        assert!(clean.passed(0.5));
        clean.campaigns[1].exit = 2;
        assert!(!clean.passed(0.5));
        clean.campaigns.clear();
        assert!(!clean.passed(0.5));
    }

    #[test]
    fn the_table_shows_rates_medians_verdicts_and_what_failed() {
        let caught = Row {
            bug: "hw-truncation".into(),
            campaigns: vec![
                campaign(1, Some(41.25), &["lost-write"]),
                campaign(1, Some(20.0), &["replica-divergence", "lost-write"]),
                campaign(0, None, &[]),
            ],
        };
        let escaped = Row {
            bug: "isr-unchecked".into(),
            campaigns: vec![campaign(0, None, &[]), campaign(3, None, &[])],
        };
        let clean = Row {
            bug: "clean".into(),
            campaigns: vec![
                campaign(0, None, &[]),
                campaign(1, Some(5.0), &["duplicate"]),
            ],
        };
        let t = table(&[caught, escaped, clean], 0.5);
        let line = |name: &str| t.lines().find(|l| l.starts_with(name)).unwrap().to_string();
        let hw = line("hw-truncation");
        assert!(hw.contains(" 2/3 ") && hw.contains(" 67% "), "{hw}");
        assert!(
            hw.contains("30.6 s") && hw.contains("2 invalid, 1 valid"),
            "{hw}"
        );
        assert!(
            hw.contains(" yes ") && hw.ends_with("lost-write, replica-divergence"),
            "{hw}"
        );
        let isr = line("isr-unchecked");
        assert!(
            isr.contains(" 0/2 ") && isr.contains(" 0% ") && isr.contains(" NO "),
            "{isr}"
        );
        assert!(isr.contains("1 valid, 1 harness failed"), "{isr}");
        let clean = line("clean");
        assert!(
            clean.contains("1 invalid, 1 valid") && clean.contains(" NO "),
            "{clean}"
        );
        assert!(clean.ends_with("duplicate"), "{clean}");
    }
}
