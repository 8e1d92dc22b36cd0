//! One function per queue anomaly kind, each reading the [`Analysis`] and
//! returning the anomalies of its kind, in the order of the history. The
//! definitions are those of docs/anomalies.md; the names are those of Jepsen's
//! Kafka checker.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::analysis::{Analysis, Witness};
use super::ops::{Send, Val};
use super::sequence::out_of_sequence;
use crate::history::Outcome;
use crate::linear::fx::FxMap;
use crate::verdict::{Anomaly, AnomalyKind, OpRef};

/// A check: the anomalies of one kind in an analysed history.
pub(super) type Check = fn(&Analysis<'_>) -> Vec<Anomaly>;

/// Every queue check, by the kind it finds.
pub(super) const CHECKS: [(AnomalyKind, Check); 12] = [
    (AnomalyKind::LostWrite, lost_writes),
    (AnomalyKind::InconsistentOffsets, inconsistent_offsets),
    (AnomalyKind::Duplicate, duplicates),
    (AnomalyKind::RefusedDuplicate, refused_duplicates),
    (AnomalyKind::OutOfSequence, out_of_sequence),
    (AnomalyKind::Unexpected, unexpected),
    (AnomalyKind::AbortedRead, aborted_reads),
    (AnomalyKind::UncommittedRead, uncommitted_reads),
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

pub(super) fn anomaly(kind: AnomalyKind, partition: i64, message: String) -> Anomaly {
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
                a.names.show(s.value)
            ),
        );
        x.offsets.extend(s.offset);
        x.values = vec![a.names.exported(s.value)];
        x.ops.push(s.op_ref(&a.names));
        x.ops.extend(reader.map(|q| q.op_ref(a.records, &a.names)));
        anomalies.push(x);
    }
    anomalies
}

/// An observation: offset, value, who saw it.
type Seen = (i64, Val, Witness);

/// The observations (in the order `Analysis::observations` gives them) of the
/// keys that `conflict` finds seen with two or more different things: a first
/// pass keeps one thing per key, a second gathers the few keys that conflict.
fn conflicts<K: std::hash::Hash + Eq + Copy + Ord>(
    a: &Analysis,
    key: impl Fn(i64, i64, Val) -> (K, i64),
) -> BTreeMap<K, Vec<Seen>> {
    let mut first: FxMap<K, i64> = FxMap::default();
    let mut conflicting: FxMap<K, Vec<Seen>> = FxMap::default();
    a.observations(|p, o, v, _| {
        let (k, thing) = key(p, o, v);
        if *first.entry(k).or_insert(thing) != thing {
            conflicting.entry(k).or_default();
        }
    });
    drop(first);
    if !conflicting.is_empty() {
        a.observations(|p, o, v, w| {
            if let Some(seen) = conflicting.get_mut(&key(p, o, v).0) {
                seen.push((o, v, w));
            }
        });
    }
    conflicting.into_iter().collect()
}

/// inconsistent-offsets: one offset of a partition seen with two or more values,
/// across sends' acknowledged offsets, polls, final-polls and the final log.
fn inconsistent_offsets(a: &Analysis) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    for ((p, o), seen) in conflicts(a, |p, o, v| ((p, o), i64::from(v))) {
        let values: BTreeMap<String, Val> = seen.iter().map(|s| (a.names.show(s.1), s.1)).collect();
        let mut x = anomaly(
            AnomalyKind::InconsistentOffsets,
            p,
            format!(
                "offset {o} seen with {} different values: {}",
                values.len(),
                values.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        );
        x.offsets = vec![o];
        x.values = values.values().map(|v| a.names.exported(*v)).collect();
        x.ops = dedup_ops(seen.iter().filter_map(|s| a.op_ref(s.2)));
        anomalies.push(x);
    }
    anomalies
}

/// duplicate: one value of a partition seen at two or more offsets.
fn duplicates(a: &Analysis) -> Vec<Anomaly> {
    let mut found: Vec<(i64, String, Val, Vec<Seen>)> = conflicts(a, |p, o, v| ((p, v), o))
        .into_iter()
        .map(|((p, v), seen)| (p, a.names.show(v), v, seen))
        .collect();
    found.sort_by(|x, y| (x.0, &x.1).cmp(&(y.0, &y.1)));
    let mut anomalies = Vec::new();
    for (p, shown, v, mut seen) in found {
        // Witnesses by offset, then in the order seen.
        seen.sort_by_key(|s| s.0);
        let offsets: BTreeSet<i64> = seen.iter().map(|s| s.0).collect();
        // The send that carried the value: its retries are the usual cause.
        let send = a.sent.get(&(p, v)).map(|&i| &a.sends[i]);
        let cause = match send {
            Some(s) if s.attempts > 1 => match s.producer {
                Some(id) => format!(
                    "; its send was attempted {} times by idempotent producer {id} \
                     (a retry the leader should have recognised by its sequence number \
                     appended it again)",
                    s.attempts
                ),
                None => format!(
                    "; its send was attempted {} times (a retry appended it again)",
                    s.attempts
                ),
            },
            Some(_) => "; its send was attempted once".to_string(),
            None => String::new(),
        };
        let mut x = anomaly(
            AnomalyKind::Duplicate,
            p,
            format!(
                "value {shown} appears at {} offsets: {offsets:?}{cause}",
                offsets.len()
            ),
        );
        x.offsets = offsets.iter().copied().collect();
        x.values = vec![a.names.exported(v)];
        x.ops.extend(send.map(|s| s.op_ref(&a.names)));
        x.ops.extend(seen.iter().filter_map(|s| a.op_ref(s.2)));
        x.ops = dedup_ops(std::mem::take(&mut x.ops).into_iter());
        anomalies.push(x);
    }
    anomalies
}

/// refused-duplicate: an idempotent producer retried a send (an earlier attempt's
/// outcome was unknown), the leader refused the retry as out of sequence, and the
/// value is in the log all the same. Its first attempt was appended, so the retry
/// carried the sequence number of a batch the partition holds: a duplicate, which
/// the leader must recognise and acknowledge (Kafka answers it as the original
/// append). Refused, the producer gives up on a record that was written — its
/// application sends it again, a duplicate the broker caused. A producer has at
/// most five batches in flight per partition (which the leader's memory of five
/// batches is sized for), and takes a refusal as final only for an attempt sent
/// once those ahead of it had ended, so nothing else explains it: had the leader
/// lacked an earlier batch of the producer, that batch would be lost and the
/// retried one after it truncated too.
fn refused_duplicates(a: &Analysis) -> Vec<Anomaly> {
    let refused = |s: &Send| s.refused_out_of_sequence && s.attempts > 1 && s.producer.is_some();
    if !a.sends.iter().any(refused) {
        return Vec::new();
    }
    bad_reads(
        a,
        AnomalyKind::RefusedDuplicate,
        |s| s.is_some_and(refused),
        |v, o, s| {
            let (producer, attempts) = s.map_or((0, 0), |s| (s.producer.unwrap_or(0), s.attempts));
            format!(
                "value {v} is at offset {o}, but idempotent producer {producer}'s retry of it \
                 (attempt {attempts}) was refused as out of sequence: the leader did not \
                 recognise the batch it had appended"
            )
        },
    )
}

/// The first read of each (partition, value) whose send `judge` picks out, with
/// that send (`None`: never sent), as anomalies of `kind`.
fn bad_reads(
    a: &Analysis,
    kind: AnomalyKind,
    judge: impl Fn(Option<&Send>) -> bool,
    message: impl Fn(&str, i64, Option<&Send>) -> String,
) -> Vec<Anomaly> {
    let mut reported: FxMap<(i64, Val), ()> = FxMap::default();
    let mut anomalies = Vec::new();
    a.reads(|p, o, v, poll| {
        let send = a.sent.get(&(p, v)).map(|&i| &a.sends[i]);
        if !judge(send) || reported.insert((p, v), ()).is_some() {
            return;
        }
        let mut x = anomaly(kind, p, message(&a.names.show(v), o, send));
        x.offsets = vec![o];
        x.values = vec![a.names.exported(v)];
        x.ops.extend(send.map(|s| s.op_ref(&a.names)));
        x.ops
            .extend(poll.map(|i| a.polls[i].op_ref(a.records, &a.names)));
        anomalies.push(x);
    });
    anomalies
}

/// unexpected: a value read (by a poll, a final-poll, or in the final log) that no
/// send to its partition carried, whatever that send's outcome.
fn unexpected(a: &Analysis) -> Vec<Anomaly> {
    bad_reads(
        a,
        AnomalyKind::Unexpected,
        |s| s.is_none(),
        |v, o, _| format!("value {v} at offset {o} was never sent"),
    )
}

/// aborted-read: a value read whose send ended in `fail` (every send of it, if it
/// was sent more than once).
fn aborted_reads(a: &Analysis) -> Vec<Anomaly> {
    bad_reads(
        a,
        AnomalyKind::AbortedRead,
        |s| s.is_some_and(|s| s.op.outcome == Outcome::Fail),
        |v, o, _| format!("value {v} at offset {o} was read although its send failed"),
    )
}

/// poll-skip: a poll from offset `o` did not return offsets between `o` and the
/// highest offset it returned that the partition's final log holds.
fn poll_skips(a: &Analysis) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    let mut returned: Vec<i64> = Vec::new();
    for p in a.polls {
        let offsets = p.offsets(a.records);
        let (Some(log), Some(&max)) = (a.finals.get(&p.partition), offsets.iter().max()) else {
            continue;
        };
        if max < p.from {
            continue;
        }
        returned.clear();
        returned.extend_from_slice(offsets);
        returned.sort_unstable();
        let skipped: Vec<i64> = log
            .records
            .range(p.from..max)
            .map(|(o, _)| *o)
            .filter(|o| returned.binary_search(o).is_err())
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
        x.ops = vec![p.op_ref(a.records, &a.names)];
        anomalies.push(x);
    }
    anomalies
}

/// nonmonotonic-poll: a poll returned a record below the offset it asked for, or
/// a record at or below one it returned before it.
fn nonmonotonic_polls(a: &Analysis) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    for p in a.polls {
        let mut disorder = Vec::new();
        let mut highest: Option<i64> = None;
        for &o in p.offsets(a.records) {
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
        x.ops = vec![p.op_ref(a.records, &a.names)];
        anomalies.push(x);
    }
    anomalies
}

/// uncommitted-read: a poll answered with a high watermark `hw` returned a record at
/// offset `hw` or above. A poll serves committed records only (below the HW), and
/// the answer's HW and records are read together: a record at or past it was not
/// committed when served, whatever became of it later (a retry may write the same
/// value at the same offset again, hiding the read from every other check).
fn uncommitted_reads(a: &Analysis) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    for p in a.polls {
        let Some(hw) = p.high_watermark else { continue };
        let past: Vec<i64> = p
            .offsets(a.records)
            .iter()
            .copied()
            .filter(|&o| o >= hw)
            .collect();
        if past.is_empty() {
            continue;
        }
        let mut x = anomaly(
            AnomalyKind::UncommittedRead,
            p.partition,
            format!(
                "poll from offset {} answered high watermark {hw} but returned offsets {past:?}",
                p.from
            ),
        );
        x.offsets = past;
        x.ops = vec![p.op_ref(a.records, &a.names)];
        anomalies.push(x);
    }
    anomalies
}

/// nonmonotonic-send: a process's acknowledged send to a partition got a lower
/// offset than its previous acknowledged send to that partition — or an
/// idempotent producer's did, its sends taken in the order they were invoked
/// (the order of their sequence numbers, which the leader must append them in,
/// even when several are in flight at once).
fn nonmonotonic_sends(a: &Analysis) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    // A pair of sends reported once, though both their process and their producer
    // went backwards.
    let mut reported = BTreeSet::new();
    let by_process = |s: &Send| Some((Sender::Process(s.op.process), s.partition));
    let by_producer = |s: &Send| Some((Sender::Producer(s.producer?), s.partition));
    for key in [&by_process as &dyn Fn(&Send) -> _, &by_producer] {
        let mut last: HashMap<(Sender, i64), (&Send, i64)> = HashMap::new();
        for s in a.sends {
            let (Some(offset), Some(k)) = (s.offset, key(s)) else {
                continue;
            };
            let Some((prev, before)) = last.insert(k, (s, offset)) else {
                continue;
            };
            if offset >= before || !reported.insert((prev.op.invoke_index, s.op.invoke_index)) {
                continue;
            }
            let who = match k.0 {
                Sender::Process(p) => format!("process {p}"),
                Sender::Producer(id) => format!("idempotent producer {id}"),
            };
            let mut x = anomaly(
                AnomalyKind::NonmonotonicSend,
                s.partition,
                format!(
                    "{who} sent {} at offset {before}, then {} at lower offset {offset}",
                    a.names.show(prev.value),
                    a.names.show(s.value)
                ),
            );
            x.offsets = vec![offset, before];
            x.values = vec![a.names.exported(prev.value), a.names.exported(s.value)];
            x.ops = vec![prev.op_ref(&a.names), s.op_ref(&a.names)];
            anomalies.push(x);
        }
    }
    anomalies
}

/// Who sent a value, as nonmonotonic-send keeps order per sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Sender {
    Process(u64),
    Producer(i64),
}

/// replica-divergence of the queue topic's replicas ([`super::divergence`]), their
/// records compared as the values the history interned.
fn replica_divergence(a: &Analysis) -> Vec<Anomaly> {
    super::divergence::diverged(&super::divergence::Compared {
        replicas: a.replicas,
        values: &a.replica_values,
        show: &|v: Val| a.names.show(v),
        export: &|v: Val| a.names.exported(v),
    })
}
