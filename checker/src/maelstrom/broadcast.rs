//! The broadcast workload's check, after Maelstrom's (Jepsen's set-full with
//! broadcasts as adds): once the cluster has healed, every node's final read must
//! hold every value that was acknowledged — or that any read saw, since a value
//! seen exists — and no read may hold a value that was never broadcast.
//!
//! - `lost-write`: a node's last final read lacks such values; one anomaly per
//!   node, with every value it lacks.
//! - `unexpected`: a read returned a value no broadcast carried, or one whose
//!   every broadcast was invoked only after the read completed.
//! - `aborted-read`: a read returned a value whose every broadcast failed.
//!
//! Reads before the end may lag (the system is only eventually consistent): they
//! are measured, not judged — `reads-stale` counts reads that lacked a value
//! acknowledged before they began, and `lag-ms-p50`/`-p95`/`-max` how long after
//! its acknowledgement a value took to become visible for good on a node (to the
//! invocation of the first read of that node from which on every read holds it).
//! A node that was addressed but has no `ok` final read cannot be judged: the
//! verdict is then at best unknown.
//!
//! Reads the operations of docs/history.md ("The Maelstrom workloads"):
//! `broadcast` `{"node":n,"message":m}`; `read`, `final-read` `{"node":n}` →
//! `{"node":n,"messages":[...]}`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde_json::Value;

use super::reading::{self, HistoryError};
use crate::history::{Event, Outcome, Paired};
use crate::values;
use crate::verdict::{Anomaly, AnomalyKind, CheckerResult, OpRef};

const OPERATIONS: [&str; 3] = ["broadcast", "read", "final-read"];
/// Lost values whose operations an anomaly names (it lists every value).
const NAMED_OPS: usize = 10;

/// Check the broadcast operations of a history.
pub fn check(events: &[Event]) -> CheckerResult {
    try_check(events).unwrap_or_else(reading::unreadable)
}

/// [`check`], or why the history cannot be read.
pub fn try_check(events: &[Event]) -> Result<CheckerResult, HistoryError> {
    let ops = reading::ops(events, &OPERATIONS)?;
    let h = History::read(&ops)?;
    let mut anomalies = h.bad_reads();
    let (lost, unjudged) = h.lost();
    anomalies.extend(lost);
    let mut r = CheckerResult::from_anomalies(anomalies);
    if h.reads.iter().all(|r| !r.is_final) {
        r.cap_unknown("no final reads: lost values cannot be judged");
    } else if !unjudged.is_empty() {
        r.cap_unknown(format!(
            "no ok final read of {}: lost values there cannot be judged",
            unjudged.join(", ")
        ));
    }
    r.stats = h.stats();
    Ok(r)
}

/// An `ok` read or final read.
struct Read {
    op: usize,
    node: String,
    /// The values it returned (ids), ascending, each once.
    values: Vec<u32>,
    is_final: bool,
}

/// The history's broadcasts and reads, values interned.
struct History<'a> {
    ops: &'a [Paired<'a>],
    values: Vec<&'a Value>,
    /// Per value: the broadcasts that carried it (indices into `ops`).
    sent: Vec<Vec<usize>>,
    reads: Vec<Read>,
    /// Every node an operation was sent to.
    nodes: BTreeSet<String>,
}

impl<'a> History<'a> {
    fn read(ops: &'a [Paired<'a>]) -> Result<History<'a>, HistoryError> {
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut h = History {
            ops,
            values: Vec::new(),
            sent: Vec::new(),
            reads: Vec::new(),
            nodes: BTreeSet::new(),
        };
        let mut intern = |h: &mut History<'a>, v: &'a Value| -> u32 {
            *ids.entry(values::canonical(v)).or_insert_with(|| {
                h.values.push(v);
                h.sent.push(Vec::new());
                h.values.len() as u32 - 1
            })
        };
        for (i, op) in ops.iter().enumerate() {
            h.nodes.extend(reading::node(op));
            if op.invoke.f == "broadcast" {
                let v = intern(&mut h, reading::arg(op, "message")?);
                h.sent[v as usize].push(i);
                continue;
            }
            if op.outcome != Outcome::Ok {
                continue;
            }
            let Value::Array(got) = reading::result(op, "messages")? else {
                return Err(HistoryError {
                    index: op.completion.map(|c| c.index),
                    message: format!("ok {}'s messages are not an array", op.invoke.f),
                });
            };
            let mut values: Vec<u32> = got.iter().map(|v| intern(&mut h, v)).collect();
            values.sort_unstable();
            values.dedup();
            h.reads.push(Read {
                op: i,
                node: reading::node(op).unwrap_or_default(),
                values,
                is_final: op.invoke.f == "final-read",
            });
        }
        Ok(h)
    }

    /// The first `ok` broadcast of value `v` to complete: (its op, its position).
    fn acked(&self, v: u32) -> Option<(usize, usize)> {
        self.sent[v as usize]
            .iter()
            .filter_map(|&i| Some((i, self.ops[i].complete_pos?)))
            .filter(|(i, _)| self.ops[*i].outcome == Outcome::Ok)
            .min_by_key(|(_, pos)| *pos)
    }

    fn all_failed(&self, v: u32) -> bool {
        let sent = &self.sent[v as usize];
        !sent.is_empty() && sent.iter().all(|&i| self.ops[i].outcome == Outcome::Fail)
    }

    fn broadcast_ref(&self, i: usize) -> OpRef {
        let op = &self.ops[i];
        let m = op
            .invoke
            .value
            .get("message")
            .map(reading::show)
            .unwrap_or_default();
        let at = reading::node(op)
            .map(|n| format!(" at {n}"))
            .unwrap_or_default();
        reading::op_ref(op, format!("broadcast {m}{at} → {}", reading::outcome(op)))
    }

    fn read_ref(&self, r: &Read) -> OpRef {
        let shown: Vec<Value> = r
            .values
            .iter()
            .map(|&v| self.values[v as usize].clone())
            .collect();
        let text = format!(
            "{} at {} → {} messages [{}]",
            self.ops[r.op].invoke.f,
            r.node,
            shown.len(),
            reading::list(&shown, 6)
        );
        reading::op_ref(&self.ops[r.op], text)
    }

    fn anomaly(&self, kind: AnomalyKind, v: u32, message: String, ops: Vec<OpRef>) -> Anomaly {
        let mut a = Anomaly::new(kind, message);
        a.values = vec![values::exported(self.values[v as usize])];
        a.ops = ops;
        a
    }

    /// `unexpected` and `aborted-read`: the first read of each such value.
    fn bad_reads(&self) -> Vec<Anomaly> {
        let mut reported = HashSet::new();
        let mut found = Vec::new();
        for r in &self.reads {
            let read_done = self.ops[r.op].complete_pos.unwrap_or(usize::MAX);
            for &v in &r.values {
                let sent = &self.sent[v as usize];
                let first_sent = sent.iter().map(|&i| self.ops[i].invoke_pos).min();
                let shown = reading::show(self.values[v as usize]);
                let (kind, why) = match first_sent {
                    None => (AnomalyKind::Unexpected, "was never broadcast".to_string()),
                    Some(p) if p > read_done => (
                        AnomalyKind::Unexpected,
                        "was read before any broadcast of it began".to_string(),
                    ),
                    Some(_) if self.all_failed(v) => (
                        AnomalyKind::AbortedRead,
                        "was read although its broadcast failed".to_string(),
                    ),
                    Some(_) => continue,
                };
                if !reported.insert(v) {
                    continue;
                }
                let mut ops: Vec<OpRef> = sent.iter().map(|&i| self.broadcast_ref(i)).collect();
                ops.push(self.read_ref(r));
                let mut a = self.anomaly(
                    kind,
                    v,
                    format!("value {shown} {why} (read at {})", r.node),
                    ops,
                );
                a.node = Some(Value::String(r.node.clone()));
                found.push(a);
            }
        }
        found
    }

    /// Values every final read must hold: acknowledged or read, and not only
    /// ever broadcast by failed broadcasts.
    fn must_hold(&self) -> BTreeSet<u32> {
        let read: HashSet<u32> = self
            .reads
            .iter()
            .flat_map(|r| r.values.iter().copied())
            .collect();
        (0..self.values.len() as u32)
            .filter(|&v| !self.sent[v as usize].is_empty() && !self.all_failed(v))
            .filter(|&v| self.acked(v).is_some() || read.contains(&v))
            .collect()
    }

    /// Each node's last final read (by completion).
    fn final_reads(&self) -> BTreeMap<&str, &Read> {
        let mut last: BTreeMap<&str, &Read> = BTreeMap::new();
        for r in self.reads.iter().filter(|r| r.is_final) {
            let done = |r: &Read| self.ops[r.op].complete_pos;
            let e = last.entry(r.node.as_str()).or_insert(r);
            if done(r) > done(e) {
                *e = r;
            }
        }
        last
    }

    /// `lost-write` per node, and the nodes without a final read.
    fn lost(&self) -> (Vec<Anomaly>, Vec<String>) {
        let must = self.must_hold();
        let finals = self.final_reads();
        let mut found = Vec::new();
        for (node, r) in &finals {
            let lost: Vec<u32> = must
                .iter()
                .copied()
                .filter(|v| r.values.binary_search(v).is_err())
                .collect();
            if lost.is_empty() {
                continue;
            }
            let mut shown: Vec<Value> = lost
                .iter()
                .map(|&v| self.values[v as usize].clone())
                .collect();
            shown.sort_by(reading::value_order);
            let mut a = Anomaly::new(
                AnomalyKind::LostWrite,
                format!(
                    "{node}'s final read lacks {} of the {} values acknowledged or read: {}",
                    lost.len(),
                    must.len(),
                    reading::list(&shown, 10)
                ),
            );
            a.node = Some(Value::String(node.to_string()));
            a.ops.push(self.read_ref(r));
            for &v in lost.iter().take(NAMED_OPS) {
                let by = self
                    .acked(v)
                    .map(|(i, _)| i)
                    .or_else(|| self.sent[v as usize].first().copied());
                a.ops.extend(by.map(|i| self.broadcast_ref(i)));
            }
            a.values = shown.iter().map(values::exported).collect();
            found.push(a);
        }
        let unjudged = self
            .nodes
            .iter()
            .filter(|n| !finals.contains_key(n.as_str()))
            .cloned()
            .collect();
        (found, unjudged)
    }

    /// Intermediate reads that lacked a value acknowledged before they began.
    fn stale_reads(&self) -> u64 {
        let acked_at: Vec<Option<usize>> = (0..self.values.len() as u32)
            .map(|v| self.acked(v).map(|(_, p)| p))
            .collect();
        let mut positions: Vec<usize> = acked_at.iter().flatten().copied().collect();
        positions.sort_unstable();
        let stale = self.reads.iter().filter(|r| !r.is_final).filter(|r| {
            let began = self.ops[r.op].invoke_pos;
            let due = positions.partition_point(|&p| p < began);
            let held = r
                .values
                .iter()
                .filter(|&&v| acked_at[v as usize].is_some_and(|p| p < began))
                .count();
            held < due
        });
        stale.count() as u64
    }

    /// Per acknowledged value and node: nanoseconds from the acknowledgement to the
    /// first read of that node from which on every read holds it.
    fn lags(&self) -> Vec<u64> {
        let mut by_node: BTreeMap<&str, Vec<&Read>> = BTreeMap::new();
        for r in &self.reads {
            by_node.entry(r.node.as_str()).or_default().push(r);
        }
        let mut lags = Vec::new();
        for reads in by_node.values() {
            // Walking back from the last read: the values every read since holds.
            let mut held: HashSet<u32> = HashSet::new();
            let mut since: HashMap<u32, usize> = HashMap::new();
            for (i, r) in reads.iter().enumerate().rev() {
                if i + 1 == reads.len() {
                    held.extend(r.values.iter().copied());
                } else {
                    held.retain(|v| r.values.binary_search(v).is_ok());
                }
                for &v in &held {
                    since.insert(v, i);
                }
            }
            for (v, i) in since {
                if let Some((op, _)) = self.acked(v) {
                    let acked = self.ops[op].completion.map_or(0, |c| c.time);
                    lags.push(self.ops[reads[i].op].invoke.time.saturating_sub(acked));
                }
            }
        }
        lags.sort_unstable();
        lags
    }

    fn stats(&self) -> BTreeMap<String, u64> {
        let broadcasts = self.ops.iter().filter(|o| o.invoke.f == "broadcast");
        let acked = broadcasts
            .clone()
            .filter(|o| o.outcome == Outcome::Ok)
            .count();
        let lost: BTreeSet<u32> = {
            let must = self.must_hold();
            self.final_reads()
                .values()
                .flat_map(|r| {
                    must.iter()
                        .copied()
                        .filter(|v| r.values.binary_search(v).is_err())
                })
                .collect()
        };
        let finals = self.reads.iter().filter(|r| r.is_final).count();
        let mut stats = BTreeMap::from([
            ("broadcasts".to_string(), broadcasts.count() as u64),
            ("broadcasts-acknowledged".to_string(), acked as u64),
            ("reads".to_string(), (self.reads.len() - finals) as u64),
            ("final-reads".to_string(), finals as u64),
            ("nodes".to_string(), self.nodes.len() as u64),
            ("values-lost".to_string(), lost.len() as u64),
            ("reads-stale".to_string(), self.stale_reads()),
        ]);
        let lags = self.lags();
        for (name, p) in [("lag-ms-p50", 50), ("lag-ms-p95", 95), ("lag-ms-max", 100)] {
            if let Some(ns) = reading::percentile(&lags, p) {
                stats.insert(name.to_string(), ns / 1_000_000);
            }
        }
        stats
    }
}

#[cfg(test)]
#[path = "broadcast_tests.rs"]
mod tests;
