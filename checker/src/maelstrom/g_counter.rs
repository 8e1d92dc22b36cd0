//! The g-counter workload's check, after Maelstrom's: once the cluster has healed,
//! every node's final read must be the sum of the acknowledged adds plus any
//! subset of the adds whose outcome is unknown (`info`, or never completed) — at
//! least the acknowledged sum, at most that plus every add in doubt, and exactly
//! one of the sums in between that those adds can make. Failed adds did not
//! happen. A final read outside that set is a `counter-out-of-range`.
//!
//! Reads before the end are judged against what could have happened by then: a
//! read's value cannot exceed the sum of every add (not failed) invoked before the
//! read completed, nor fall below the sum of the negative ones among them (zero
//! for a grow-only counter) — outside that range it is a `counter-out-of-range`
//! too. The counter is only eventually consistent, so a read below the sum of the
//! adds acknowledged before it began is stale, not wrong: [`check`] counts such
//! reads (`reads-stale`), as Maelstrom allows them; [`check_strict`], for systems
//! that promise fresh reads, reports each as a `counter-out-of-range`.
//!
//! The final reads' acceptable sums are kept as disjoint ranges; past
//! [`MAX_RANGES`] of them (many adds in doubt with scattered deltas) they are
//! widened to one range from the least to the greatest, which never rejects a sum
//! the exact set accepts (a note says so).
//!
//! Reads the operations of docs/history.md ("The Maelstrom workloads"): `add`
//! `{"node":n,"delta":d}`; `read`, `final-read` `{"node":n}` →
//! `{"node":n,"value":v}` (a `v` that is no integer is out of range).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::reading::{self, HistoryError};
use crate::history::{Event, Outcome, Paired};
use crate::values;
use crate::verdict::{Anomaly, AnomalyKind, CheckerResult};

const OPERATIONS: [&str; 3] = ["add", "read", "final-read"];
/// Disjoint ranges of acceptable final sums kept before widening to one.
pub const MAX_RANGES: usize = 4096;

/// Check the counter operations of a history, stale reads allowed.
pub fn check(events: &[Event]) -> CheckerResult {
    try_check(events, false).unwrap_or_else(reading::unreadable)
}

/// [`check`], with every stale read an anomaly.
pub fn check_strict(events: &[Event]) -> CheckerResult {
    try_check(events, true).unwrap_or_else(reading::unreadable)
}

/// [`check`] (or [`check_strict`]), or why the history cannot be read.
pub fn try_check(events: &[Event], strict: bool) -> Result<CheckerResult, HistoryError> {
    let ops = reading::ops(events, &OPERATIONS)?;
    let mut adds = Vec::new();
    for op in ops.iter().filter(|op| op.invoke.f == "add") {
        adds.push((op, i128::from(reading::int_arg(op, "delta")?)));
    }
    let bounds = Bounds::new(&adds);
    let (acceptable, exact) = acceptable(&adds);
    let mut anomalies = Vec::new();
    let mut stale = 0;
    let mut finals = BTreeSet::new();
    for op in ops
        .iter()
        .filter(|op| op.invoke.f != "add" && op.outcome == Outcome::Ok)
    {
        let value = reading::result(op, "value")?;
        let read = value.as_i64().map(i128::from);
        let wrong = if op.invoke.f == "final-read" {
            finals.extend(reading::node(op));
            final_wrong(read, &acceptable, &adds)
        } else {
            let (wrong, was_stale) = bounds.judge(op, read, strict);
            stale += u64::from(was_stale);
            wrong
        };
        if let Some(why) = wrong {
            anomalies.push(out_of_range(op, value, why));
        }
    }
    let mut r = CheckerResult::from_anomalies(anomalies);
    let nodes: BTreeSet<String> = ops.iter().filter_map(|op| reading::node(op)).collect();
    let unjudged: Vec<String> = nodes.difference(&finals).cloned().collect();
    if finals.is_empty() {
        r.cap_unknown("no final reads: the final sum cannot be judged");
    } else if !unjudged.is_empty() {
        r.cap_unknown(format!(
            "no ok final read of {}: their final sums cannot be judged",
            unjudged.join(", ")
        ));
    }
    if !exact {
        r.notes.push(format!(
            "the final sums the adds in doubt can make were more than {MAX_RANGES} ranges: final reads were judged against the range from the least to the greatest"
        ));
    }
    r.stats = stats(&adds, &ops, stale);
    Ok(r)
}

/// Why a final read is not an acceptable sum, if it is not.
fn final_wrong(
    read: Option<i128>,
    acceptable: &[(i128, i128)],
    adds: &[(&Paired, i128)],
) -> Option<String> {
    let ok_sum: i128 = adds
        .iter()
        .filter(|(op, _)| op.outcome == Outcome::Ok)
        .map(|(_, d)| d)
        .sum();
    let doubt = adds
        .iter()
        .filter(|(op, _)| op.outcome == Outcome::Info)
        .count();
    let fits = read.is_some_and(|v| {
        let i = acceptable.partition_point(|(_, hi)| *hi < v);
        acceptable.get(i).is_some_and(|(lo, _)| *lo <= v)
    });
    if fits {
        return None;
    }
    let shown: Vec<String> = acceptable
        .iter()
        .take(5)
        .map(|(lo, hi)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}..={hi}")
            }
        })
        .collect();
    let more = if acceptable.len() > 5 { ", …" } else { "" };
    Some(format!(
        "the final read is not the {ok_sum} acknowledged plus any of the {doubt} adds in doubt: acceptable {}{more}",
        shown.join(", ")
    ))
}

fn out_of_range(op: &Paired, value: &Value, why: String) -> Anomaly {
    let node = reading::node(op);
    let at = node.as_deref().unwrap_or("the node");
    let mut a = Anomaly::new(
        AnomalyKind::CounterOutOfRange,
        format!("{at} read {}: {why}", reading::show(value)),
    );
    a.node = node.clone().map(Value::String);
    a.values = vec![values::exported(value)];
    a.ops = vec![reading::op_ref(
        op,
        format!("{} at {at} → {}", op.invoke.f, reading::show(value)),
    )];
    a
}

/// The sums the acknowledged adds plus any subset of the adds in doubt make, as
/// sorted disjoint inclusive ranges; `false` if they were widened to one range.
fn acceptable(adds: &[(&Paired, i128)]) -> (Vec<(i128, i128)>, bool) {
    let ok_sum: i128 = adds
        .iter()
        .filter(|(op, _)| op.outcome == Outcome::Ok)
        .map(|(_, d)| d)
        .sum();
    let mut ranges = vec![(ok_sum, ok_sum)];
    let mut exact = true;
    for (_, d) in adds.iter().filter(|(op, _)| op.outcome == Outcome::Info) {
        if *d == 0 {
            continue;
        }
        let shifted: Vec<(i128, i128)> = ranges.iter().map(|(lo, hi)| (lo + d, hi + d)).collect();
        ranges.extend(shifted);
        ranges.sort_unstable();
        let mut merged: Vec<(i128, i128)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            match merged.last_mut() {
                Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        ranges = merged;
        if ranges.len() > MAX_RANGES {
            let (lo, hi) = (ranges[0].0, ranges[ranges.len() - 1].1);
            ranges = vec![(lo, hi)];
            exact = false;
        }
    }
    (ranges, exact)
}

/// What the adds allow an intermediate read, by the history's positions.
struct Bounds {
    /// Adds that may have happened (not failed), by invocation: (position,
    /// positive part, negative part), with running sums.
    invoked: Vec<(usize, i128, i128)>,
    /// Acknowledged adds by completion: (position, running sum).
    acked: Vec<(usize, i128)>,
}

impl Bounds {
    fn new(adds: &[(&Paired, i128)]) -> Bounds {
        let mut invoked: Vec<(usize, i128, i128)> = adds
            .iter()
            .filter(|(op, _)| op.outcome != Outcome::Fail)
            .map(|(op, d)| (op.invoke_pos, (*d).max(0), (*d).min(0)))
            .collect();
        invoked.sort_unstable();
        let (mut up, mut down) = (0, 0);
        for e in &mut invoked {
            up += e.1;
            down += e.2;
            (e.1, e.2) = (up, down);
        }
        let mut acked: Vec<(usize, i128)> = adds
            .iter()
            .filter(|(op, _)| op.outcome == Outcome::Ok)
            .filter_map(|(op, d)| Some((op.complete_pos?, *d)))
            .collect();
        acked.sort_unstable();
        let mut sum = 0;
        for e in &mut acked {
            sum += e.1;
            e.1 = sum;
        }
        Bounds { invoked, acked }
    }

    /// Why a read is out of range, if it is, and whether it is stale.
    fn judge(&self, op: &Paired, read: Option<i128>, strict: bool) -> (Option<String>, bool) {
        let Some(v) = read else {
            return (Some("not an integer".into()), false);
        };
        let done = op.complete_pos.unwrap_or(usize::MAX);
        let n = self.invoked.partition_point(|e| e.0 < done);
        let (hi, lo) = n
            .checked_sub(1)
            .map_or((0, 0), |i| (self.invoked[i].1, self.invoked[i].2));
        if v > hi {
            let why = format!(
                "more than the {hi} that every add invoked before the read completed sums to"
            );
            return (Some(why), false);
        }
        if v < lo {
            return (
                Some(format!(
                    "less than the {lo} the adds invoked before it could sum to"
                )),
                false,
            );
        }
        let k = self.acked.partition_point(|e| e.0 < op.invoke_pos);
        let due = k.checked_sub(1).map_or(0, |i| self.acked[i].1);
        if v >= due {
            return (None, false);
        }
        let why = strict
            .then(|| format!("stale: less than the {due} acknowledged before the read began"));
        (why, true)
    }
}

fn stats(adds: &[(&Paired, i128)], ops: &[Paired], stale: u64) -> BTreeMap<String, u64> {
    let count = |o: Outcome| adds.iter().filter(|(op, _)| op.outcome == o).count() as u64;
    let sum = |o: Outcome| {
        let s: i128 = adds
            .iter()
            .filter(|(op, _)| op.outcome == o)
            .map(|(_, d)| d)
            .sum();
        u64::try_from(s.max(0)).unwrap_or(u64::MAX)
    };
    let reads = |f: &str| {
        ops.iter()
            .filter(|op| op.invoke.f == f && op.outcome == Outcome::Ok)
            .count() as u64
    };
    BTreeMap::from([
        ("adds".to_string(), adds.len() as u64),
        ("adds-ok".to_string(), count(Outcome::Ok)),
        ("adds-failed".to_string(), count(Outcome::Fail)),
        ("adds-indeterminate".to_string(), count(Outcome::Info)),
        ("sum-acknowledged".to_string(), sum(Outcome::Ok)),
        ("sum-in-doubt".to_string(), sum(Outcome::Info)),
        ("reads".to_string(), reads("read")),
        ("final-reads".to_string(), reads("final-read")),
        ("reads-stale".to_string(), stale),
    ])
}

#[cfg(test)]
#[path = "g_counter_tests.rs"]
mod tests;
