//! Kafka queue analysis (SPEC §7): did the log keep every acknowledged write, give
//! each offset one value, and hand consumers a gap-free, ordered view?
//!
//! The anomaly names are those of Jepsen's Kafka checker. Every judgement is made
//! against the *final log* of a partition: what the final drain (`final-poll` ops)
//! read from offset 0 after the cluster healed. When a history has no final drain
//! for a partition, the replicas' final logs stand in (the replica with the highest
//! high watermark, records below it); without either, whether writes were lost
//! cannot be judged and the verdict is at best unknown.
//!
//! A drain is the whole final log only if its final-polls read, contiguously from
//! offset 0, up to the high watermark the broker answered them with (each ok
//! final-poll carries `high_watermark`), and no replica committed records beyond
//! where it ended that it did not read (a new leader's high watermark may lag).
//! A partial drain's missing values are judged against every replica's log (a
//! value any replica holds was not lost); without replica logs they are in doubt
//! and the verdict is at best unknown.
//!
//! What counts as what:
//! - a send `ok` *with* an offset was acknowledged; an `ok` without an offset
//!   (acks=0) promised nothing, so, like an `info` send, it may or may not appear;
//! - a send that ended in `fail` certainly did not happen: reading it is an
//!   aborted read;
//! - polls only return records below the high watermark, so a value any poll saw
//!   was committed and must survive.
//!
//! This module does no file I/O: the caller passes the history's events and the
//! text of each `nodes/<id>/final-log.jsonl` (docs/run-folder.md).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::Deserialize;
use serde_json::Value;

use crate::history::{Event, Op, Outcome, PairError, pair};
use crate::verdict::{Anomaly, AnomalyKind, CheckerResult, OpRef};

/// One replica's log of one partition, as dumped at the end of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaLog {
    /// The node holding the replica.
    pub node: String,
    pub topic: String,
    pub partition: i64,
    pub log_end_offset: i64,
    pub high_watermark: i64,
    /// (offset, value), as stored.
    pub records: Vec<(i64, Value)>,
}

#[derive(Deserialize)]
struct LogLine {
    topic: String,
    partition: i64,
    log_end_offset: i64,
    high_watermark: i64,
    records: Vec<LogRecord>,
}

#[derive(Deserialize)]
struct LogRecord {
    offset: i64,
    #[serde(default)]
    value: Value,
}

/// A final log that cannot be read: which line, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogError {
    pub node: String,
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for LogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "final log of node {}, line {}: {}",
            self.node, self.line, self.message
        )
    }
}

impl std::error::Error for LogError {}

/// Parse the text of `nodes/<node>/final-log.jsonl`: one line per partition held.
pub fn parse_final_log(node: &str, text: &str) -> Result<Vec<ReplicaLog>, LogError> {
    let mut logs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let l: LogLine = serde_json::from_str(line).map_err(|e| LogError {
            node: node.to_string(),
            line: i + 1,
            message: format!(
                "expected {{\"topic\",\"partition\",\"log_end_offset\",\"high_watermark\",\"records\":[{{\"offset\",\"value\"}}]}}: {e}"
            ),
        })?;
        logs.push(ReplicaLog {
            node: node.to_string(),
            topic: l.topic,
            partition: l.partition,
            log_end_offset: l.log_end_offset,
            high_watermark: l.high_watermark,
            records: l.records.into_iter().map(|r| (r.offset, r.value)).collect(),
        });
    }
    Ok(logs)
}

/// A queue history that cannot be analysed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueError {
    /// Invocations and completions do not pair up.
    Pair(PairError),
    /// An operation's value lacks what SPEC §4 says it carries.
    Shape { index: u64, message: String },
}

impl std::fmt::Display for QueueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueueError::Pair(e) => e.fmt(f),
            QueueError::Shape { index, message } => write!(f, "event index {index}: {message}"),
        }
    }
}

impl std::error::Error for QueueError {}

impl From<PairError> for QueueError {
    fn from(e: PairError) -> Self {
        QueueError::Pair(e)
    }
}

/// A value as a comparable key (JSON values are not `Hash`).
type ValueKey = String;

fn key_of(v: &Value) -> ValueKey {
    v.to_string()
}

#[derive(Debug)]
struct Send<'a> {
    op: &'a Op,
    partition: i64,
    value: Value,
    /// The acknowledged offset (`ok` with an offset only).
    offset: Option<i64>,
}

#[derive(Debug)]
struct Poll<'a> {
    op: &'a Op,
    partition: i64,
    from: i64,
    records: Vec<(i64, Value)>,
    /// The high watermark the broker answered with, if the history records it.
    high_watermark: Option<i64>,
    is_final: bool,
}

fn shape(op: &Op, message: String) -> QueueError {
    QueueError::Shape {
        index: op.complete_index.unwrap_or(op.invoke_index),
        message,
    }
}

fn int_field(v: &Value, field: &str) -> Option<i64> {
    v.get(field).and_then(Value::as_i64)
}

fn parse_send(op: &Op) -> Result<Send<'_>, QueueError> {
    let partition = int_field(&op.invoke_value, "partition").ok_or_else(|| {
        shape(
            op,
            format!(
                "send expects {{\"partition\":p,\"value\":v}}, got {}",
                op.invoke_value
            ),
        )
    })?;
    let value = op.invoke_value.get("value").cloned().unwrap_or(Value::Null);
    let offset = if op.outcome == Outcome::Ok {
        int_field(&op.value, "offset")
    } else {
        None
    };
    Ok(Send {
        op,
        partition,
        value,
        offset,
    })
}

fn parse_poll(op: &Op) -> Result<Option<Poll<'_>>, QueueError> {
    if op.outcome != Outcome::Ok {
        return Ok(None);
    }
    let expect = || {
        shape(
            op,
            format!(
                "{} expects {{\"partition\":p,\"offset\":o}} → {{\"partition\":p,\"records\":[[offset,value],...]}}, got {} → {}",
                op.f, op.invoke_value, op.value
            ),
        )
    };
    let partition = int_field(&op.invoke_value, "partition")
        .or_else(|| int_field(&op.value, "partition"))
        .ok_or_else(expect)?;
    let from = int_field(&op.invoke_value, "offset").unwrap_or(0);
    let mut records = Vec::new();
    for r in op
        .value
        .get("records")
        .and_then(Value::as_array)
        .ok_or_else(expect)?
    {
        match r.as_array().map(Vec::as_slice) {
            Some([o, v]) => records.push((o.as_i64().ok_or_else(expect)?, v.clone())),
            _ => return Err(expect()),
        }
    }
    Ok(Some(Poll {
        op,
        partition,
        from,
        records,
        high_watermark: int_field(&op.value, "high_watermark"),
        is_final: op.f == "final-poll",
    }))
}

fn send_text(s: &Send) -> String {
    let end = match (s.op.outcome, s.offset) {
        (Outcome::Ok, Some(o)) => format!("ok at offset {o}"),
        (Outcome::Ok, None) => "ok (no offset)".to_string(),
        (Outcome::Fail, _) => "fail".to_string(),
        (Outcome::Info, _) => "info".to_string(),
    };
    format!("send {} to partition {} → {end}", s.value, s.partition)
}

fn poll_text(p: &Poll) -> String {
    let shown: Vec<String> = p
        .records
        .iter()
        .take(6)
        .map(|(o, v)| format!("{o}:{v}"))
        .collect();
    let more = if p.records.len() > 6 {
        format!(" …{} more", p.records.len() - 6)
    } else {
        String::new()
    };
    format!(
        "{} partition {} from offset {} → [{}{more}]",
        p.op.f,
        p.partition,
        p.from,
        shown.join(" ")
    )
}

/// A value's offsets in a partition, and the operations that put it there.
type Placements = (Value, BTreeSet<i64>, Vec<OpRef>);

/// Where a value was observed at an offset.
#[derive(Clone)]
struct Seen {
    value: Value,
    op: Option<OpRef>,
}

/// Analyse a queue history (SPEC §4 queue workload) against the replicas' final logs.
///
/// `replicas` may be empty (no run folder): replica-divergence is then not judged,
/// and the final drain in the history is the only final log.
pub fn check(events: &[Event], replicas: &[ReplicaLog]) -> Result<CheckerResult, QueueError> {
    let ops = pair(events)?;
    let mut sends = Vec::new();
    let mut polls = Vec::new();
    for op in &ops {
        match op.f.as_str() {
            "send" => sends.push(parse_send(op)?),
            "poll" | "final-poll" => polls.extend(parse_poll(op)?),
            _ => {}
        }
    }
    let mut anomalies = Vec::new();
    let mut unjudged = BTreeSet::new();

    // The final log of each partition: the final drain, else the best replica.
    let mut finals: BTreeMap<i64, BTreeMap<i64, Value>> = BTreeMap::new();
    for p in polls.iter().filter(|p| p.is_final) {
        let log = finals.entry(p.partition).or_default();
        for (o, v) in &p.records {
            log.entry(*o).or_insert_with(|| v.clone());
        }
    }
    // A drain that did not reach the high watermark is not the whole final log.
    let mut replicas_of: BTreeMap<i64, Vec<&ReplicaLog>> = BTreeMap::new();
    for r in replicas {
        replicas_of.entry(r.partition).or_default().push(r);
    }
    let mut partial: BTreeMap<i64, String> = BTreeMap::new();
    for (p, log) in &finals {
        let values: HashSet<ValueKey> = log.values().map(key_of).collect();
        let on = replicas_of.get(p).map_or(&[][..], Vec::as_slice);
        if let Some(why) = incomplete(&drain_of(&polls, *p), &values, on) {
            partial.insert(*p, why);
        }
    }
    let mut best: BTreeMap<i64, &ReplicaLog> = BTreeMap::new();
    for r in replicas {
        let e = best.entry(r.partition).or_insert(r);
        if r.high_watermark > e.high_watermark {
            *e = r;
        }
    }
    for (p, r) in &best {
        finals.entry(*p).or_insert_with(|| {
            r.records
                .iter()
                .filter(|(o, _)| *o < r.high_watermark)
                .cloned()
                .collect()
        });
    }
    let partitions: BTreeSet<i64> = sends
        .iter()
        .map(|s| s.partition)
        .chain(polls.iter().map(|p| p.partition))
        .collect();
    for p in &partitions {
        if !finals.contains_key(p) {
            unjudged.insert(*p);
        }
    }

    // Every observation of (partition, offset) → value.
    let mut at: BTreeMap<(i64, i64), Vec<Seen>> = BTreeMap::new();
    for s in &sends {
        if let Some(o) = s.offset {
            at.entry((s.partition, o)).or_default().push(Seen {
                value: s.value.clone(),
                op: Some(OpRef::new(s.op, send_text(s))),
            });
        }
    }
    for p in &polls {
        for (o, v) in &p.records {
            at.entry((p.partition, *o)).or_default().push(Seen {
                value: v.clone(),
                op: Some(OpRef::new(p.op, poll_text(p))),
            });
        }
    }
    for (p, log) in &finals {
        if polls.iter().any(|q| q.is_final && q.partition == *p) {
            continue; // already observed through the final polls
        }
        for (o, v) in log {
            at.entry((*p, *o)).or_default().push(Seen {
                value: v.clone(),
                op: None,
            });
        }
    }

    // inconsistent-offsets
    for ((p, o), seen) in &at {
        let values: BTreeMap<ValueKey, &Value> =
            seen.iter().map(|s| (key_of(&s.value), &s.value)).collect();
        if values.len() > 1 {
            let mut a = Anomaly::new(
                AnomalyKind::InconsistentOffsets,
                format!(
                    "offset {o} seen with {} different values: {}",
                    values.len(),
                    values.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            );
            a.partition = Some(*p);
            a.offsets = vec![*o];
            a.values = values.values().map(|v| (*v).clone()).collect();
            a.ops = dedup_ops(seen.iter().filter_map(|s| s.op.clone()));
            anomalies.push(a);
        }
    }

    // duplicate: one value at two offsets
    let mut offsets_of: BTreeMap<(i64, ValueKey), Placements> = BTreeMap::new();
    for ((p, o), seen) in &at {
        for s in seen {
            let e = offsets_of
                .entry((*p, key_of(&s.value)))
                .or_insert_with(|| (s.value.clone(), BTreeSet::new(), Vec::new()));
            e.1.insert(*o);
            e.2.extend(s.op.clone());
        }
    }
    for ((p, _), (v, offs, refs)) in &offsets_of {
        if offs.len() > 1 {
            let mut a = Anomaly::new(
                AnomalyKind::Duplicate,
                format!("value {v} appears at {} offsets: {offs:?}", offs.len()),
            );
            a.partition = Some(*p);
            a.offsets = offs.iter().copied().collect();
            a.values = vec![v.clone()];
            a.ops = dedup_ops(refs.iter().cloned());
            anomalies.push(a);
        }
    }

    // unexpected and aborted-read: what reads saw, against what was sent
    let mut sent: HashMap<(i64, ValueKey), &Send> = HashMap::new();
    for s in &sends {
        let e = sent.entry((s.partition, key_of(&s.value))).or_insert(s);
        // If a value was sent twice, any attempt that may have happened counts.
        if e.op.outcome == Outcome::Fail {
            *e = s;
        }
    }
    let mut reported: BTreeSet<(AnomalyKind, i64, ValueKey)> = BTreeSet::new();
    let mut reads: Vec<(i64, i64, &Value, Option<&Poll>)> = Vec::new();
    for p in &polls {
        for (o, v) in &p.records {
            reads.push((p.partition, *o, v, Some(p)));
        }
    }
    for (p, log) in &finals {
        for (o, v) in log {
            reads.push((*p, *o, v, None));
        }
    }
    for (p, o, v, poll) in reads {
        let k = key_of(v);
        let (kind, message, send) = match sent.get(&(p, k.clone())) {
            None => (
                AnomalyKind::Unexpected,
                format!("value {v} at offset {o} was never sent"),
                None,
            ),
            Some(s) if s.op.outcome == Outcome::Fail => (
                AnomalyKind::AbortedRead,
                format!("value {v} at offset {o} was read although its send failed"),
                Some(*s),
            ),
            Some(_) => continue,
        };
        if !reported.insert((kind, p, k)) {
            continue;
        }
        let mut a = Anomaly::new(kind, message);
        a.partition = Some(p);
        a.offsets = vec![o];
        a.values = vec![v.clone()];
        a.ops.extend(send.map(|s| OpRef::new(s.op, send_text(s))));
        a.ops.extend(poll.map(|q| OpRef::new(q.op, poll_text(q))));
        anomalies.push(a);
    }

    // lost-write: acknowledged or read, yet missing from the final log
    let mut read_by: HashMap<(i64, ValueKey), &Poll> = HashMap::new();
    for p in polls.iter().filter(|p| !p.is_final) {
        for (_, v) in &p.records {
            read_by.entry((p.partition, key_of(v))).or_insert(p);
        }
    }
    // A partially drained partition is judged against what the drain read and what
    // any replica still holds; without replica logs, a value missing from the partial
    // drain is in doubt, not lost.
    let mut final_values: HashMap<i64, HashSet<ValueKey>> = finals
        .iter()
        .map(|(p, log)| (*p, log.values().map(key_of).collect()))
        .collect();
    for (p, values) in final_values.iter_mut() {
        if partial.contains_key(p) {
            for r in replicas_of.get(p).into_iter().flatten() {
                values.extend(r.records.iter().map(|(_, v)| key_of(v)));
            }
        }
    }
    let mut in_doubt: BTreeMap<i64, u64> = BTreeMap::new();
    for s in &sends {
        let Some(log) = final_values.get(&s.partition) else {
            continue;
        };
        let k = (s.partition, key_of(&s.value));
        let reader = read_by.get(&k);
        if s.offset.is_none() && reader.is_none() {
            continue;
        }
        if s.op.outcome == Outcome::Fail || log.contains(&k.1) {
            continue;
        }
        if partial.contains_key(&s.partition) && !replicas_of.contains_key(&s.partition) {
            *in_doubt.entry(s.partition).or_default() += 1;
            continue;
        }
        let why = match (s.offset, reader) {
            (Some(o), _) => format!("acknowledged at offset {o}"),
            (None, _) => "read by a poll".to_string(),
        };
        let mut a = Anomaly::new(
            AnomalyKind::LostWrite,
            format!("value {} ({why}) is missing from the final log", s.value),
        );
        a.partition = Some(s.partition);
        a.offsets.extend(s.offset);
        a.values = vec![s.value.clone()];
        a.ops.push(OpRef::new(s.op, send_text(s)));
        a.ops.extend(reader.map(|q| OpRef::new(q.op, poll_text(q))));
        anomalies.push(a);
    }

    // poll-skip and nonmonotonic-poll
    for p in &polls {
        let mut disorder = Vec::new();
        let mut last: Option<i64> = None;
        for (o, _) in &p.records {
            if *o < p.from || last.is_some_and(|l| *o <= l) {
                disorder.push(*o);
            }
            last = Some(last.map_or(*o, |l| l.max(*o)));
        }
        // Skipped: offsets between the one asked for and the highest returned that
        // the poll did not return although the final log holds them.
        let returned: BTreeSet<i64> = p.records.iter().map(|(o, _)| *o).collect();
        let skipped: Vec<i64> = match (finals.get(&p.partition), last) {
            (Some(log), Some(max)) if max >= p.from => log
                .range(p.from..max)
                .map(|(o, _)| *o)
                .filter(|o| !returned.contains(o))
                .collect(),
            _ => Vec::new(),
        };
        if !skipped.is_empty() {
            let mut a = Anomaly::new(
                AnomalyKind::PollSkip,
                format!(
                    "poll from offset {} skipped offsets {skipped:?} that the final log holds",
                    p.from
                ),
            );
            a.partition = Some(p.partition);
            a.offsets = skipped;
            a.ops = vec![OpRef::new(p.op, poll_text(p))];
            anomalies.push(a);
        }
        if !disorder.is_empty() {
            let mut a = Anomaly::new(
                AnomalyKind::NonmonotonicPoll,
                format!(
                    "poll from offset {} returned offsets {disorder:?} below the offset asked for or out of order",
                    p.from
                ),
            );
            a.partition = Some(p.partition);
            a.offsets = disorder;
            a.ops = vec![OpRef::new(p.op, poll_text(p))];
            anomalies.push(a);
        }
    }

    // nonmonotonic-send: per process and partition, acknowledged offsets ascend
    let mut last_send: HashMap<(u64, i64), &Send> = HashMap::new();
    for s in sends.iter().filter(|s| s.offset.is_some()) {
        if let Some(prev) = last_send.insert((s.op.process, s.partition), s) {
            let (a_off, b_off) = (prev.offset.unwrap_or(0), s.offset.unwrap_or(0));
            if b_off < a_off {
                let mut a = Anomaly::new(
                    AnomalyKind::NonmonotonicSend,
                    format!(
                        "process {} sent {} at offset {a_off}, then {} at lower offset {b_off}",
                        s.op.process, prev.value, s.value
                    ),
                );
                a.partition = Some(s.partition);
                a.offsets = vec![b_off, a_off];
                a.values = vec![prev.value.clone(), s.value.clone()];
                a.ops = vec![
                    OpRef::new(prev.op, send_text(prev)),
                    OpRef::new(s.op, send_text(s)),
                ];
                anomalies.push(a);
            }
        }
    }

    anomalies.extend(divergence(replicas));

    anomalies
        .sort_by(|a, b| (a.kind, a.partition, &a.offsets).cmp(&(b.kind, b.partition, &b.offsets)));
    let mut result = CheckerResult::from_anomalies(anomalies);
    if !unjudged.is_empty() {
        result.cap_unknown(format!(
            "no final drain or replica log for partitions {unjudged:?}: lost writes cannot be judged"
        ));
    }
    if !in_doubt.is_empty() {
        let why: Vec<String> = in_doubt
            .iter()
            .map(|(p, n)| format!("partition {p}: {n} values missing, {}", partial[p]))
            .collect();
        result.cap_unknown(format!(
            "the final drain is partial and there are no replica logs to judge by, so lost writes cannot be judged ({})",
            why.join("; ")
        ));
    }
    result
        .stats
        .insert("partitions-drained-partially".into(), partial.len() as u64);
    let count = |f: &dyn Fn(&Send) -> bool| sends.iter().filter(|s| f(s)).count() as u64;
    result.stats.insert("sends".into(), sends.len() as u64);
    result
        .stats
        .insert("sends-acknowledged".into(), count(&|s| s.offset.is_some()));
    result.stats.insert(
        "sends-failed".into(),
        count(&|s| s.op.outcome == Outcome::Fail),
    );
    result.stats.insert(
        "sends-indeterminate".into(),
        count(&|s| s.op.outcome == Outcome::Info),
    );
    result.stats.insert(
        "polls".into(),
        polls.iter().filter(|p| !p.is_final).count() as u64,
    );
    result
        .stats
        .insert("partitions".into(), partitions.len() as u64);
    Ok(result)
}

/// How far the final drain of one partition got.
struct Drain {
    /// The final-polls read every offset below this one, contiguously from 0.
    reached: i64,
    /// The highest high watermark the final-polls were answered with.
    high_watermark: Option<i64>,
}

fn drain_of(polls: &[Poll], partition: i64) -> Drain {
    let mut drain = Drain {
        reached: 0,
        high_watermark: None,
    };
    for q in polls
        .iter()
        .filter(|q| q.is_final && q.partition == partition)
    {
        if q.from <= drain.reached
            && let Some(last) = q.records.iter().map(|(o, _)| *o).max()
        {
            drain.reached = drain.reached.max(last + 1);
        }
        if let Some(hw) = q.high_watermark {
            drain.high_watermark = Some(drain.high_watermark.map_or(hw, |h| h.max(hw)));
        }
    }
    drain
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

fn dedup_ops(refs: impl Iterator<Item = OpRef>) -> Vec<OpRef> {
    let mut seen = BTreeSet::new();
    refs.filter(|r| seen.insert(r.invoke)).collect()
}

/// replica-divergence: two replicas of a partition hold different records at an
/// offset both hold below both their high watermarks. A replica that merely lags
/// (a shorter log, a lower high watermark) does not diverge; after KIP-101's
/// divergence both replicas have committed their own, different, records.
fn divergence(replicas: &[ReplicaLog]) -> Vec<Anomaly> {
    let mut by_partition: BTreeMap<(&str, i64), Vec<&ReplicaLog>> = BTreeMap::new();
    for r in replicas {
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
                for (o, a) in maps[i].range(..below) {
                    let Some(b) = maps[j].get(o) else { continue };
                    if a == b {
                        continue;
                    }
                    offsets.insert(*o);
                    if first.as_ref().is_none_or(|(f, _, _)| o < f) {
                        let text = format!(
                            "offset {o}: node {} has {a}, node {} has {b}",
                            rs[i].node, rs[j].node
                        );
                        first = Some((*o, text, vec![(*a).clone(), (*b).clone()]));
                    }
                }
            }
        }
        if let Some((_, first, values)) = first {
            let mut a = Anomaly::new(
                AnomalyKind::ReplicaDivergence,
                format!(
                    "topic {topic}: replicas hold different committed records at {} offsets; first at {first}",
                    offsets.len()
                ),
            );
            a.partition = Some(p);
            a.offsets = offsets.into_iter().collect();
            a.values = values;
            anomalies.push(a);
        }
    }
    anomalies
}
