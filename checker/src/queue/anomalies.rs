//! One function per queue anomaly kind, each reading the [`Analysis`] and
//! returning the anomalies of its kind, in the order of the history. The
//! definitions are those of docs/anomalies.md; the names are those of Jepsen's
//! Kafka checker.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use super::analysis::{Analysis, ValueKey, Witness, key_of};
use super::final_log::ReplicaLog;
use super::ops::Send;
use crate::history::Outcome;
use crate::values::{canonical as show, exported};
use crate::verdict::{Anomaly, AnomalyKind, OpRef};

/// A check: the anomalies of one kind in an analysed history.
pub(super) type Check = fn(&Analysis<'_>) -> Vec<Anomaly>;

/// Every queue check, by the kind it finds.
pub(super) const CHECKS: [(AnomalyKind, Check); 9] = [
    (AnomalyKind::LostWrite, lost_writes),
    (AnomalyKind::InconsistentOffsets, inconsistent_offsets),
    (AnomalyKind::Duplicate, duplicates),
    (AnomalyKind::Unexpected, unexpected),
    (AnomalyKind::AbortedRead, aborted_reads),
    (AnomalyKind::PollSkip, poll_skips),
    (AnomalyKind::NonmonotonicPoll, nonmonotonic_polls),
    (AnomalyKind::NonmonotonicSend, nonmonotonic_sends),
    (AnomalyKind::ReplicaDivergence, replica_divergence),
];

/// Every anomaly in the history, by kind (in the order of [`CHECKS`]), then
/// partition, then offsets.
pub(super) fn all(a: &Analysis) -> Vec<Anomaly> {
    let mut found = Vec::new();
    for (kind, check) in CHECKS {
        let of_kind = check(a);
        debug_assert!(of_kind.iter().all(|x| x.kind == kind), "{kind} check");
        found.extend(of_kind);
    }
    found.sort_by(|x, y| (x.kind, x.partition, &x.offsets).cmp(&(y.kind, y.partition, &y.offsets)));
    found
}

fn anomaly(kind: AnomalyKind, partition: i64, message: String) -> Anomaly {
    let mut a = Anomaly::new(kind, message);
    a.partition = Some(partition);
    a
}

/// The operations, each once, in the order first named.
fn dedup_ops(refs: impl Iterator<Item = OpRef>) -> Vec<OpRef> {
    let mut seen = BTreeSet::new();
    refs.filter(|r| seen.insert(r.invoke)).collect()
}

/// lost-write: a send that was acknowledged with an offset, or whose value a poll
/// read, is missing from its partition's final log. A send that failed is never
/// lost; one on a partially drained partition without replica logs is in doubt
/// instead (the verdict is then at best unknown; see `Analysis::in_doubt`).
fn lost_writes(a: &Analysis) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    for (s, reader) in a.missing_sends() {
        if a.in_doubt(s.partition) {
            continue;
        }
        let why = match s.offset {
            Some(o) => format!("acknowledged at offset {o}"),
            None => "read by a poll".to_string(),
        };
        let mut x = anomaly(
            AnomalyKind::LostWrite,
            s.partition,
            format!(
                "value {} ({why}) is missing from the final log",
                show(s.value)
            ),
        );
        x.offsets.extend(s.offset);
        x.values = vec![exported(s.value)];
        x.ops.push(s.op_ref());
        x.ops.extend(reader.map(|q| q.op_ref()));
        anomalies.push(x);
    }
    anomalies
}

/// inconsistent-offsets: one offset of a partition seen with two or more values,
/// across sends' acknowledged offsets, polls, final-polls and the final log.
fn inconsistent_offsets(a: &Analysis) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    for ((p, o), seen) in &a.observed {
        let values: BTreeMap<ValueKey, &Value> =
            seen.iter().map(|s| (key_of(s.value), s.value)).collect();
        if values.len() < 2 {
            continue;
        }
        let mut x = anomaly(
            AnomalyKind::InconsistentOffsets,
            *p,
            format!(
                "offset {o} seen with {} different values: {}",
                values.len(),
                values.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        );
        x.offsets = vec![*o];
        x.values = values.values().map(|v| exported(v)).collect();
        x.ops = dedup_ops(seen.iter().filter_map(|s| a.op_ref(s.by)));
        anomalies.push(x);
    }
    anomalies
}

/// Where one value of a partition was seen.
struct Placement<'a> {
    value: &'a Value,
    /// Every offset it was seen at.
    offsets: BTreeSet<i64>,
    /// Who saw it there.
    seen_by: Vec<Witness>,
}

/// duplicate: one value of a partition seen at two or more offsets.
fn duplicates(a: &Analysis) -> Vec<Anomaly> {
    let mut placements: BTreeMap<(i64, ValueKey), Placement> = BTreeMap::new();
    for ((p, o), seen) in &a.observed {
        for s in seen {
            let e = placements
                .entry((*p, key_of(s.value)))
                .or_insert_with(|| Placement {
                    value: s.value,
                    offsets: BTreeSet::new(),
                    seen_by: Vec::new(),
                });
            e.offsets.insert(*o);
            e.seen_by.push(s.by);
        }
    }
    let mut anomalies = Vec::new();
    for ((p, _), at) in placements {
        if at.offsets.len() < 2 {
            continue;
        }
        let offsets = &at.offsets;
        let mut x = anomaly(
            AnomalyKind::Duplicate,
            p,
            format!(
                "value {} appears at {} offsets: {offsets:?}",
                show(at.value),
                offsets.len()
            ),
        );
        x.offsets = offsets.iter().copied().collect();
        x.values = vec![exported(at.value)];
        x.ops = dedup_ops(at.seen_by.iter().filter_map(|w| a.op_ref(*w)));
        anomalies.push(x);
    }
    anomalies
}

/// The first read of each (partition, value) whose send `judge` picks out, with
/// that send (`None`: never sent), as anomalies of `kind`.
fn bad_reads(
    a: &Analysis,
    kind: AnomalyKind,
    judge: impl Fn(Option<&Send>) -> bool,
    message: impl Fn(&Value, i64) -> String,
) -> Vec<Anomaly> {
    let mut reported: BTreeSet<(i64, ValueKey)> = BTreeSet::new();
    let mut anomalies = Vec::new();
    for (p, o, v, poll) in a.reads() {
        let k = key_of(v);
        let send = a.sent.get(&(p, k.clone())).map(|&i| &a.sends[i]);
        if !judge(send) || !reported.insert((p, k)) {
            continue;
        }
        let mut x = anomaly(kind, p, message(v, o));
        x.offsets = vec![o];
        x.values = vec![exported(v)];
        x.ops.extend(send.map(Send::op_ref));
        x.ops.extend(poll.map(|i| a.polls[i].op_ref()));
        anomalies.push(x);
    }
    anomalies
}

/// unexpected: a value read (by a poll, a final-poll, or in the final log) that no
/// send to its partition carried, whatever that send's outcome.
fn unexpected(a: &Analysis) -> Vec<Anomaly> {
    bad_reads(
        a,
        AnomalyKind::Unexpected,
        |s| s.is_none(),
        |v, o| format!("value {} at offset {o} was never sent", show(v)),
    )
}

/// aborted-read: a value read whose send ended in `fail` (every send of it, if it
/// was sent more than once).
fn aborted_reads(a: &Analysis) -> Vec<Anomaly> {
    bad_reads(
        a,
        AnomalyKind::AbortedRead,
        |s| s.is_some_and(|s| s.op.outcome == Outcome::Fail),
        |v, o| {
            format!(
                "value {} at offset {o} was read although its send failed",
                show(v)
            )
        },
    )
}

/// poll-skip: a poll from offset `o` did not return offsets between `o` and the
/// highest offset it returned that the partition's final log holds.
fn poll_skips(a: &Analysis) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    for p in &a.polls {
        let (Some(log), Some(max)) = (a.finals.get(&p.partition), p.offsets().max()) else {
            continue;
        };
        if max < p.from {
            continue;
        }
        let returned: BTreeSet<i64> = p.offsets().collect();
        let skipped: Vec<i64> = log
            .records
            .range(p.from..max)
            .map(|(o, _)| *o)
            .filter(|o| !returned.contains(o))
            .collect();
        if skipped.is_empty() {
            continue;
        }
        let mut x = anomaly(
            AnomalyKind::PollSkip,
            p.partition,
            format!(
                "poll from offset {} skipped offsets {skipped:?} that the final log holds",
                p.from
            ),
        );
        x.offsets = skipped;
        x.ops = vec![p.op_ref()];
        anomalies.push(x);
    }
    anomalies
}

/// nonmonotonic-poll: a poll returned a record below the offset it asked for, or
/// a record at or below one it returned before it.
fn nonmonotonic_polls(a: &Analysis) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    for p in &a.polls {
        let mut disorder = Vec::new();
        let mut highest: Option<i64> = None;
        for o in p.offsets() {
            if o < p.from || highest.is_some_and(|h| o <= h) {
                disorder.push(o);
            }
            highest = Some(highest.map_or(o, |h| h.max(o)));
        }
        if disorder.is_empty() {
            continue;
        }
        let mut x = anomaly(
            AnomalyKind::NonmonotonicPoll,
            p.partition,
            format!(
                "poll from offset {} returned offsets {disorder:?} below the offset asked for or out of order",
                p.from
            ),
        );
        x.offsets = disorder;
        x.ops = vec![p.op_ref()];
        anomalies.push(x);
    }
    anomalies
}

/// nonmonotonic-send: a process's acknowledged send to a partition got a lower
/// offset than its previous acknowledged send to that partition.
fn nonmonotonic_sends(a: &Analysis) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    let mut last: HashMap<(u64, i64), (&Send, i64)> = HashMap::new();
    for s in &a.sends {
        let Some(offset) = s.offset else { continue };
        let Some((prev, before)) = last.insert((s.op.process(), s.partition), (s, offset)) else {
            continue;
        };
        if offset >= before {
            continue;
        }
        let mut x = anomaly(
            AnomalyKind::NonmonotonicSend,
            s.partition,
            format!(
                "process {} sent {} at offset {before}, then {} at lower offset {offset}",
                s.op.process(),
                show(prev.value),
                show(s.value)
            ),
        );
        x.offsets = vec![offset, before];
        x.values = vec![exported(prev.value), exported(s.value)];
        x.ops = vec![prev.op_ref(), s.op_ref()];
        anomalies.push(x);
    }
    anomalies
}

/// replica-divergence: two replicas of a partition hold different records at an
/// offset both hold below both their high watermarks. A replica that merely lags
/// (a shorter log, a lower high watermark) does not diverge; after KIP-101's
/// divergence both replicas have committed their own, different, records. One
/// anomaly per partition, naming the first such offset.
fn replica_divergence(a: &Analysis) -> Vec<Anomaly> {
    let mut by_partition: BTreeMap<(&str, i64), Vec<&ReplicaLog>> = BTreeMap::new();
    for r in a.replicas {
        by_partition
            .entry((&r.topic, r.partition))
            .or_default()
            .push(r);
    }
    let mut anomalies = Vec::new();
    for ((topic, p), rs) in by_partition {
        let maps: Vec<BTreeMap<i64, &Value>> = rs
            .iter()
            .map(|r| r.records.iter().map(|(o, v)| (*o, v)).collect())
            .collect();
        let mut offsets = BTreeSet::new();
        let mut first: Option<(i64, String, Vec<Value>)> = None;
        for i in 0..rs.len() {
            for j in i + 1..rs.len() {
                let below = rs[i].high_watermark.min(rs[j].high_watermark);
                for (o, x) in maps[i].range(..below) {
                    let Some(y) = maps[j].get(o) else { continue };
                    if x == y {
                        continue;
                    }
                    offsets.insert(*o);
                    if first.as_ref().is_none_or(|(f, _, _)| o < f) {
                        let text = format!(
                            "offset {o}: node {} has {}, node {} has {}",
                            rs[i].node,
                            show(x),
                            rs[j].node,
                            show(y)
                        );
                        first = Some((*o, text, vec![exported(x), exported(y)]));
                    }
                }
            }
        }
        if let Some((_, first, values)) = first {
            let mut x = anomaly(
                AnomalyKind::ReplicaDivergence,
                p,
                format!(
                    "topic {topic}: replicas hold different committed records at {} offsets; first at {first}",
                    offsets.len()
                ),
            );
            x.offsets = offsets.into_iter().collect();
            x.values = values;
            anomalies.push(x);
        }
    }
    anomalies
}
