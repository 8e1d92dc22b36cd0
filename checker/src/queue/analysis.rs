//! The queue history read once: its sends and polls, each partition's final log,
//! and the indices every anomaly check reads — what was seen at each offset, which
//! send each value came from, which poll first read it.
//!
//! The final log of a partition is what the final drain (`final-poll` ops) read
//! from offset 0 after the cluster healed. When a history has no final drain for a
//! partition, the replica with the highest high watermark stands in (its records
//! below the high watermark). A drain is the whole final log only if its
//! final-polls read, contiguously from offset 0, up to the high watermark the
//! broker answered them with, and no replica committed records beyond where it
//! ended that it did not read (a new leader's high watermark may lag); otherwise it
//! is partial, and what it lacks is judged against every replica's log.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde_json::Value;

use super::QueueError;
use super::final_log::ReplicaLog;
use super::ops::{Poll, Send};
use crate::history::{Event, Outcome, pair_events};
use crate::verdict::OpRef;

/// A value as a comparable key (JSON values are not `Hash`).
pub(super) type ValueKey = String;

pub(super) fn key_of(v: &Value) -> ValueKey {
    crate::values::canonical(v)
}

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

/// One value seen at one offset of a partition.
#[derive(Debug, Clone, Copy)]
pub(super) struct Observation<'a> {
    pub(super) value: &'a Value,
    pub(super) by: Witness,
}

/// A partition's final log: the records it ends with, by offset.
#[derive(Debug)]
pub(super) struct FinalLog<'a> {
    pub(super) records: BTreeMap<i64, &'a Value>,
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
    pub(super) sends: Vec<Send<'a>>,
    /// Every ok poll and final-poll, in invocation order.
    pub(super) polls: Vec<Poll<'a>>,
    pub(super) replicas: &'a [ReplicaLog],
    /// Each partition's replicas.
    pub(super) replicas_of: BTreeMap<i64, Vec<&'a ReplicaLog>>,
    /// Each partition's final log, where there is one to judge by.
    pub(super) finals: BTreeMap<i64, FinalLog<'a>>,
    /// Every partition the history sends to or polls.
    pub(super) partitions: BTreeSet<i64>,
    /// Every value seen at each (partition, offset): sends' acknowledgements,
    /// polls' records, and the final logs that replicas stand in for.
    pub(super) observed: BTreeMap<(i64, i64), Vec<Observation<'a>>>,
    /// Per (partition, value): the send it came from (index into `sends`). When a
    /// value was sent twice, the first attempt that may have happened counts.
    pub(super) sent: HashMap<(i64, ValueKey), usize>,
    /// Per (partition, value): the first poll (not a final-poll) that read it.
    pub(super) first_read: HashMap<(i64, ValueKey), usize>,
}

impl<'a> Analysis<'a> {
    /// Pair the history's events, read its sends and polls, and index them with
    /// the replicas' logs.
    pub(super) fn new(
        events: &'a [Event],
        replicas: &'a [ReplicaLog],
    ) -> Result<Analysis<'a>, QueueError> {
        let mut sends = Vec::new();
        let mut polls = Vec::new();
        for op in pair_events(events)? {
            match op.invoke.f.as_str() {
                "send" => sends.push(Send::parse(op)?),
                "poll" | "final-poll" => polls.extend(Poll::parse(op)?),
                _ => {}
            }
        }
        let mut replicas_of: BTreeMap<i64, Vec<&ReplicaLog>> = BTreeMap::new();
        for r in replicas {
            replicas_of.entry(r.partition).or_default().push(r);
        }
        let finals = final_logs(&polls, replicas, &replicas_of);
        let partitions = sends
            .iter()
            .map(|s| s.partition)
            .chain(polls.iter().map(|p| p.partition))
            .collect();
        let mut a = Analysis {
            sends,
            polls,
            replicas,
            replicas_of,
            finals,
            partitions,
            observed: BTreeMap::new(),
            sent: HashMap::new(),
            first_read: HashMap::new(),
        };
        a.index();
        Ok(a)
    }

    fn index(&mut self) {
        for (i, s) in self.sends.iter().enumerate() {
            if let Some(o) = s.offset {
                self.observed
                    .entry((s.partition, o))
                    .or_default()
                    .push(Observation {
                        value: s.value,
                        by: Witness::Send(i),
                    });
            }
            let sent = self.sent.entry((s.partition, key_of(s.value))).or_insert(i);
            if self.sends[*sent].op.outcome == Outcome::Fail {
                *sent = i;
            }
        }
        for (i, p) in self.polls.iter().enumerate() {
            for (o, v) in &p.records {
                self.observed
                    .entry((p.partition, *o))
                    .or_default()
                    .push(Observation {
                        value: v,
                        by: Witness::Poll(i),
                    });
                if !p.is_final {
                    self.first_read.entry((p.partition, key_of(v))).or_insert(i);
                }
            }
        }
        for (p, log) in self.finals.iter().filter(|(_, l)| !l.drained) {
            for (o, v) in &log.records {
                self.observed
                    .entry((*p, *o))
                    .or_default()
                    .push(Observation {
                        value: v,
                        by: Witness::ReplicaLog,
                    });
            }
        }
    }

    /// The operation behind a witness (none for a replica's log).
    pub(super) fn op_ref(&self, by: Witness) -> Option<OpRef> {
        match by {
            Witness::Send(i) => Some(self.sends[i].op_ref()),
            Witness::Poll(i) => Some(self.polls[i].op_ref()),
            Witness::ReplicaLog => None,
        }
    }

    /// Every record read: each poll's and final-poll's, in order, then each final
    /// log's (drained ones again), with the poll that read it.
    pub(super) fn reads(&self) -> impl Iterator<Item = (i64, i64, &'a Value, Option<usize>)> + '_ {
        let polled = self.polls.iter().enumerate().flat_map(|(i, p)| {
            p.records
                .iter()
                .map(move |(o, v)| (p.partition, *o, *v, Some(i)))
        });
        let logged = self
            .finals
            .iter()
            .flat_map(|(p, log)| log.records.iter().map(|(o, v)| (*p, *o, *v, None)));
        polled.chain(logged)
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
    pub(super) fn missing_sends(&self) -> Vec<(&Send<'a>, Option<&Poll<'a>>)> {
        let mut holds: HashMap<i64, HashSet<ValueKey>> = HashMap::new();
        for (p, log) in &self.finals {
            let values = holds.entry(*p).or_default();
            values.extend(log.records.values().map(|v| key_of(v)));
            if log.partial.is_some() {
                for r in self.replicas_of.get(p).into_iter().flatten() {
                    values.extend(r.records.iter().map(|(_, v)| key_of(v)));
                }
            }
        }
        let mut missing = Vec::new();
        for s in &self.sends {
            let Some(log) = holds.get(&s.partition) else {
                continue;
            };
            let k = (s.partition, key_of(s.value));
            let reader = self.first_read.get(&k).map(|&i| &self.polls[i]);
            if s.offset.is_none() && reader.is_none() {
                continue;
            }
            if s.op.outcome == Outcome::Fail || log.contains(&k.1) {
                continue;
            }
            missing.push((s, reader));
        }
        missing
    }
}

/// Each partition's final log: the final drain, else the replica with the highest
/// high watermark (the first of equals), its records below that high watermark.
fn final_logs<'a>(
    polls: &[Poll<'a>],
    replicas: &'a [ReplicaLog],
    replicas_of: &BTreeMap<i64, Vec<&ReplicaLog>>,
) -> BTreeMap<i64, FinalLog<'a>> {
    let mut finals: BTreeMap<i64, FinalLog> = BTreeMap::new();
    for p in polls.iter().filter(|p| p.is_final) {
        let log = finals.entry(p.partition).or_insert_with(|| FinalLog {
            records: BTreeMap::new(),
            drained: true,
            partial: None,
        });
        for (o, v) in &p.records {
            log.records.entry(*o).or_insert(v);
        }
    }
    for (p, log) in finals.iter_mut() {
        let values: HashSet<ValueKey> = log.records.values().map(|v| key_of(v)).collect();
        let on = replicas_of.get(p).map_or(&[][..], Vec::as_slice);
        log.partial = incomplete(&Drain::of(polls, *p), &values, on);
    }
    let mut best: BTreeMap<i64, &ReplicaLog> = BTreeMap::new();
    for r in replicas {
        let e = best.entry(r.partition).or_insert(r);
        if r.high_watermark > e.high_watermark {
            *e = r;
        }
    }
    for (p, r) in best {
        finals.entry(p).or_insert_with(|| FinalLog {
            records: r
                .records
                .iter()
                .filter(|(o, _)| *o < r.high_watermark)
                .map(|(o, v)| (*o, v))
                .collect(),
            drained: false,
            partial: None,
        });
    }
    finals
}

/// How far the final drain of one partition got.
struct Drain {
    /// The final-polls read every offset below this one, contiguously from 0.
    reached: i64,
    /// The highest high watermark the final-polls were answered with.
    high_watermark: Option<i64>,
}

impl Drain {
    fn of(polls: &[Poll], partition: i64) -> Drain {
        let mut drain = Drain {
            reached: 0,
            high_watermark: None,
        };
        for q in polls
            .iter()
            .filter(|q| q.is_final && q.partition == partition)
        {
            if q.from <= drain.reached
                && let Some(last) = q.offsets().max()
            {
                drain.reached = drain.reached.max(last + 1);
            }
            if let Some(hw) = q.high_watermark {
                drain.high_watermark = Some(drain.high_watermark.map_or(hw, |h| h.max(hw)));
            }
        }
        drain
    }
}

/// Why a partition's final drain is not its whole final log, if it is not: the
/// final-polls did not read up to the high watermark they were answered with (or do
/// not say it), or they ended below another replica's high watermark while that
/// replica's committed records there are missing from the drain (a new leader whose
/// high watermark still lagged answered the drain).
fn incomplete(
    drain: &Drain,
    drained: &HashSet<ValueKey>,
    replicas: &[&ReplicaLog],
) -> Option<String> {
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
    replicas.iter().find_map(|r| {
        let missed = r.records.iter().any(|(o, v)| {
            *o >= drain.reached && *o < r.high_watermark && !drained.contains(&key_of(v))
        });
        missed.then(|| {
            format!(
                "the drain ended at offset {}, below node {}'s high watermark {}, without its records there",
                drain.reached, r.node, r.high_watermark
            )
        })
    })
}
