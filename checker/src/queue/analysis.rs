//! The queue history indexed once: each partition's final log, which send each
//! value came from, which poll first read it — in time and memory linear in the
//! records the history holds (hash maps keyed by integers, no per-record
//! allocation).
//!
//! The final log of a partition is what the final drain (`final-poll` ops) read
//! from offset 0 after the cluster healed. When a history has no final drain for a
//! partition, the replica with the highest high watermark stands in (its records
//! below the high watermark). A drain is the whole final log only if its
//! final-polls read, contiguously from offset 0, up to the high watermark the
//! broker answered them with, and no replica committed records beyond where it
//! ended that it did not read (a new leader's high watermark may lag); otherwise it
//! is partial, and what it lacks is judged against every replica's log.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::final_log::ReplicaLog;
use super::ops::{Interned, Poll, Records, Send, Val};
use super::reading::QueueHistory;
use crate::history::Outcome;
use crate::linear::fx::FxMap;
use crate::verdict::OpRef;

type FxSet<T> = HashSet<T, std::hash::BuildHasherDefault<crate::linear::fx::Fx>>;

/// Where a value was seen at an offset.
#[derive(Debug, Clone, Copy)]
pub(super) enum Witness {
    /// The acknowledgement of `sends[i]`.
    Send(usize),
    /// The records of `polls[i]` (a poll or a final-poll).
    Poll(usize),
    /// A replica's log standing in for a missing final drain.
    ReplicaLog,
}

/// A partition's final log: the records it ends with, by offset.
#[derive(Debug)]
pub(super) struct FinalLog {
    pub(super) records: BTreeMap<i64, Val>,
    /// Read by the history's final drain (else a replica's log stands in).
    pub(super) drained: bool,
    /// Why the drain is not the whole final log, if it is not.
    pub(super) partial: Option<String>,
}

/// A queue history and the replicas' final logs, indexed once for the anomaly
/// checks (docs/anomalies.md).
#[derive(Debug)]
pub(super) struct Analysis<'a> {
    /// Every send, in invocation order.
    pub(super) sends: &'a [Send],
    /// Every ok poll and final-poll, in invocation order.
    pub(super) polls: &'a [Poll],
    pub(super) records: &'a Records,
    pub(super) names: Interned,
    pub(super) replicas: &'a [ReplicaLog],
    /// Each replica's values, interned (by replica, by record).
    pub(super) replica_values: Vec<Vec<Val>>,
    /// Each partition's replicas (indices into `replicas`).
    pub(super) replicas_of: BTreeMap<i64, Vec<usize>>,
    /// Each partition's final log, where there is one to judge by.
    pub(super) finals: BTreeMap<i64, FinalLog>,
    /// Every partition the history sends to or polls.
    pub(super) partitions: BTreeSet<i64>,
    /// Per (partition, value): the send it came from (index into `sends`). When a
    /// value was sent twice, the first attempt that may have happened counts.
    pub(super) sent: FxMap<(i64, Val), usize>,
    /// Per (partition, value): the first poll (not a final-poll) that read it.
    pub(super) first_read: FxMap<(i64, Val), usize>,
    /// Partitions that could not be read at all once the faults were healed: every
    /// final-poll of theirs failed or was left in doubt (how many it tried). Their
    /// replicas' logs still say whether a write was lost, but nothing shows the
    /// partition served again. (A drain that stopped short is not counted: a new
    /// leader's lagging high watermark, or a slow machine, ends one so.)
    pub(super) undrained: BTreeMap<i64, usize>,
}

impl<'a> Analysis<'a> {
    /// Index a history read with the replicas' logs.
    pub(super) fn new(h: &'a mut QueueHistory, replicas: &'a [ReplicaLog]) -> Analysis<'a> {
        let undrained = std::mem::take(&mut h.undrained);
        let mut names = std::mem::take(&mut h.names);
        let h: &'a QueueHistory = h;
        let replica_values: Vec<Vec<Val>> = replicas
            .iter()
            .map(|r| r.records.iter().map(|(_, v)| names.value(v)).collect())
            .collect();
        let mut replicas_of: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
        for (i, r) in replicas.iter().enumerate() {
            replicas_of.entry(r.partition).or_default().push(i);
        }
        let mut a = Analysis {
            sends: &h.sends,
            polls: &h.polls,
            records: &h.records,
            names,
            replicas,
            replica_values,
            replicas_of,
            finals: BTreeMap::new(),
            partitions: BTreeSet::new(),
            sent: FxMap::default(),
            first_read: FxMap::default(),
            undrained,
        };
        a.finals = a.final_logs();
        a.partitions = a
            .sends
            .iter()
            .map(|s| s.partition)
            .chain(a.polls.iter().map(|p| p.partition))
            .collect();
        a.index();
        a
    }

    fn index(&mut self) {
        for (i, s) in self.sends.iter().enumerate() {
            let sent = self.sent.entry((s.partition, s.value)).or_insert(i);
            if self.sends[*sent].op.outcome == Outcome::Fail {
                *sent = i;
            }
        }
        for (i, p) in self.polls.iter().enumerate().filter(|(_, p)| !p.is_final) {
            for &v in &self.records.values[p.start..p.end] {
                self.first_read.entry((p.partition, v)).or_insert(i);
            }
        }
    }

    /// Every value seen at an offset, in order: sends' acknowledgements, polls'
    /// and final-polls' records, then the final logs that replicas stand in for.
    pub(super) fn observations(&self, mut seen: impl FnMut(i64, i64, Val, Witness)) {
        for (i, s) in self.sends.iter().enumerate() {
            if let Some(o) = s.offset {
                seen(s.partition, o, s.value, Witness::Send(i));
            }
        }
        for (i, p) in self.polls.iter().enumerate() {
            for (o, v) in p.records(self.records) {
                seen(p.partition, o, v, Witness::Poll(i));
            }
        }
        for (p, log) in self.finals.iter().filter(|(_, l)| !l.drained) {
            for (o, v) in &log.records {
                seen(*p, *o, *v, Witness::ReplicaLog);
            }
        }
    }

    /// The operation behind a witness (none for a replica's log).
    pub(super) fn op_ref(&self, by: Witness) -> Option<OpRef> {
        match by {
            Witness::Send(i) => Some(self.sends[i].op_ref(&self.names)),
            Witness::Poll(i) => Some(self.polls[i].op_ref(self.records, &self.names)),
            Witness::ReplicaLog => None,
        }
    }

    /// Every record read: each poll's and final-poll's, in order, then each final
    /// log's (drained ones again), with the poll that read it.
    pub(super) fn reads(&self, mut read: impl FnMut(i64, i64, Val, Option<usize>)) {
        for (i, p) in self.polls.iter().enumerate() {
            for (o, v) in p.records(self.records) {
                read(p.partition, o, v, Some(i));
            }
        }
        for (p, log) in &self.finals {
            for (o, v) in &log.records {
                read(*p, *o, *v, None);
            }
        }
    }

    /// Partitions with neither a final drain nor a replica log: whether writes were
    /// lost there cannot be judged.
    pub(super) fn unjudged(&self) -> BTreeSet<i64> {
        self.partitions
            .iter()
            .filter(|p| !self.finals.contains_key(p))
            .copied()
            .collect()
    }

    /// A partition whose drain is partial and for which no replica's log says what
    /// the drain missed: a value missing from it may or may not be lost.
    pub(super) fn in_doubt(&self, partition: i64) -> bool {
        self.finals
            .get(&partition)
            .is_some_and(|l| l.partial.is_some())
            && !self.replicas_of.contains_key(&partition)
    }

    /// Per partition in doubt, how many sends are missing from its partial drain.
    pub(super) fn writes_in_doubt(&self) -> BTreeMap<i64, u64> {
        let mut in_doubt = BTreeMap::new();
        for (s, _) in self.missing_sends() {
            if self.in_doubt(s.partition) {
                *in_doubt.entry(s.partition).or_default() += 1;
            }
        }
        in_doubt
    }

    /// Sends that must be in the final log and are not — acknowledged with an
    /// offset, or read by a poll, and not failed — with the first poll that read
    /// each. A partially drained partition's final log is what the drain read and
    /// what any replica holds. Partitions without a final log are left out.
    pub(super) fn missing_sends(&self) -> Vec<(&'a Send, Option<&'a Poll>)> {
        let mut holds: FxMap<i64, FxSet<Val>> = FxMap::default();
        for (p, log) in &self.finals {
            let values = holds.entry(*p).or_default();
            values.extend(log.records.values().copied());
            if log.partial.is_some() {
                for &r in self.replicas_of.get(p).into_iter().flatten() {
                    values.extend(self.replica_values[r].iter().copied());
                }
            }
        }
        let (sends, polls) = (self.sends, self.polls);
        let mut missing = Vec::new();
        for s in sends {
            let Some(log) = holds.get(&s.partition) else {
                continue;
            };
            let reader = self
                .first_read
                .get(&(s.partition, s.value))
                .map(|&i| &polls[i]);
            if s.offset.is_none() && reader.is_none() {
                continue;
            }
            if s.op.outcome == Outcome::Fail || log.contains(&s.value) {
                continue;
            }
            missing.push((s, reader));
        }
        missing
    }

    /// Each partition's final log: the final drain, else the replica with the
    /// highest high watermark (the first of equals), its records below that high
    /// watermark.
    fn final_logs(&self) -> BTreeMap<i64, FinalLog> {
        let mut finals: BTreeMap<i64, FinalLog> = BTreeMap::new();
        let mut drains: BTreeMap<i64, Drain> = BTreeMap::new();
        for p in self.polls.iter().filter(|p| p.is_final) {
            let log = finals.entry(p.partition).or_insert_with(|| FinalLog {
                records: BTreeMap::new(),
                drained: true,
                partial: None,
            });
            for (o, v) in p.records(self.records) {
                log.records.entry(o).or_insert(v);
            }
            drains.entry(p.partition).or_default().add(p, self.records);
        }
        for (p, log) in finals.iter_mut() {
            let values: FxSet<Val> = log.records.values().copied().collect();
            let on = self.replicas_of.get(p).map_or(&[][..], Vec::as_slice);
            log.partial = self.incomplete(&drains[p], &values, on);
        }
        let mut best: BTreeMap<i64, usize> = BTreeMap::new();
        for (i, r) in self.replicas.iter().enumerate() {
            let e = best.entry(r.partition).or_insert(i);
            if r.high_watermark > self.replicas[*e].high_watermark {
                *e = i;
            }
        }
        for (p, i) in best {
            let r = &self.replicas[i];
            finals.entry(p).or_insert_with(|| FinalLog {
                records: r
                    .records
                    .iter()
                    .zip(&self.replica_values[i])
                    .filter(|((o, _), _)| *o < r.high_watermark)
                    .map(|((o, _), v)| (*o, *v))
                    .collect(),
                drained: false,
                partial: None,
            });
        }
        finals
    }

    /// Why a partition's final drain is not its whole final log, if it is not: the
    /// final-polls did not read up to the high watermark they were answered with
    /// (or do not say it), or they ended below another replica's high watermark
    /// while that replica's committed records there are missing from the drain (a
    /// new leader whose high watermark still lagged answered the drain).
    fn incomplete(&self, drain: &Drain, drained: &FxSet<Val>, on: &[usize]) -> Option<String> {
        match drain.high_watermark {
            None => return Some("its final-polls do not record the high watermark".into()),
            Some(hw) if drain.reached < hw => {
                return Some(format!(
                    "the drain read offsets below {} of high watermark {hw}",
                    drain.reached
                ));
            }
            Some(_) => {}
        }
        on.iter().find_map(|&i| {
            let r = &self.replicas[i];
            let missed = r.records.iter().zip(&self.replica_values[i]).any(|((o, _), v)| {
                *o >= drain.reached && *o < r.high_watermark && !drained.contains(v)
            });
            missed.then(|| {
                format!(
                    "the drain ended at offset {}, below node {}'s high watermark {}, without its records there",
                    drain.reached, r.node, r.high_watermark
                )
            })
        })
    }
}

/// How far the final drain of one partition got.
#[derive(Default)]
struct Drain {
    /// The final-polls read every offset below this one, contiguously from 0.
    reached: i64,
    /// The highest high watermark the final-polls were answered with.
    high_watermark: Option<i64>,
}

impl Drain {
    /// The next final-poll of the partition, in invocation order.
    fn add(&mut self, q: &Poll, records: &Records) {
        if q.from <= self.reached
            && let Some(last) = q.offsets(records).iter().max()
        {
            self.reached = self.reached.max(last + 1);
        }
        if let Some(hw) = q.high_watermark {
            self.high_watermark = Some(self.high_watermark.map_or(hw, |h| h.max(hw)));
        }
    }
}
