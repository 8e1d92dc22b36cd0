//! Kafka queue analysis: did the log keep every acknowledged write, give each
//! offset one value, and hand consumers a gap-free, ordered view?
//!
//! The history is read once, event by event, into a [`QueueHistory`] — its sends
//! and ok polls, compactly ([`reading`], [`ops`]) — then indexed once into an
//! [`Analysis`](analysis::Analysis) — each partition's final log, and the indices
//! the checks share — and each anomaly kind is one function over it
//! ([`anomalies`]), as in Jepsen's Kafka checker, whose names they carry. Time and
//! memory are linear in the records the history holds. Every kind is defined in docs/anomalies.md;
//! the history's shapes are in docs/history.md.
//!
//! Every judgement is made against the *final log* of a partition: what the final
//! drain (`final-poll` ops) read from offset 0 after the cluster healed, or, without
//! a drain, the replicas' final logs. Without either, whether writes were lost
//! cannot be judged and the verdict is at best unknown; so it is when the drain is
//! partial and there are no replica logs to say what it missed.
//!
//! What counts as what:
//! - a send `ok` *with* an offset was acknowledged; an `ok` without an offset
//!   (acks=0) promised nothing, so, like an `info` send, it may or may not appear;
//! - a send that ended in `fail` certainly did not happen: reading it is an
//!   aborted read;
//! - polls only return records below the high watermark, so a value any poll saw
//!   was committed and must survive.
//!
//! This module does no file I/O: the caller passes the history's events (or its
//! lines, through `check::read_history`) and the text of each
//! `nodes/<id>/final-log.jsonl` (docs/run-folder.md).

mod analysis;
mod anomalies;
mod divergence;
mod final_log;
mod ops;
pub(crate) mod reading;
mod sequence;

pub use divergence::replica_divergence;
pub use final_log::{LogError, ReplicaLog, parse_final_log};
pub use reading::QueueHistory;

use std::collections::BTreeMap;

use crate::history::{Event, Outcome, PairError};
use crate::verdict::CheckerResult;
use analysis::Analysis;
use reading::Located;

/// A queue history that cannot be analysed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueError {
    /// Invocations and completions do not pair up.
    Pair(PairError),
    /// An operation's value lacks what docs/history.md says it carries.
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

/// Every kind of anomaly the queue analysis looks for, in the order it reports them.
pub fn kinds() -> Vec<crate::verdict::AnomalyKind> {
    anomalies::CHECKS.iter().map(|(kind, _)| *kind).collect()
}

/// Analyse a queue history (docs/history.md) against the replicas' final logs.
///
/// `replicas` may be empty (no run folder): replica-divergence is then not judged,
/// and the final drain in the history is the only final log.
pub fn check(events: &[Event], replicas: &[ReplicaLog]) -> Result<CheckerResult, QueueError> {
    QueueHistory::from_events(events)
        .check(replicas)
        .map_err(|l| l.error)
}

impl QueueHistory {
    /// Analyse the history read against the replicas' final logs (see [`check`]);
    /// an error says where it is.
    pub(crate) fn check(mut self, replicas: &[ReplicaLog]) -> Result<CheckerResult, Located> {
        if let Some(e) = self.error() {
            return Err(e.clone());
        }
        let a = Analysis::new(&mut self, replicas);
        Ok(judge(&a))
    }
}

fn judge(a: &Analysis) -> CheckerResult {
    let mut result = CheckerResult::from_anomalies(anomalies::all(a));
    let unjudged = a.unjudged();
    if !unjudged.is_empty() {
        result.cap_unknown(format!(
            "no final drain or replica log for partitions {unjudged:?}: lost writes cannot be judged"
        ));
    }
    if !a.undrained.is_empty() {
        let why: Vec<String> = a
            .undrained
            .iter()
            .map(|(p, n)| format!("partition {p}: none of its {n} final-polls answered"))
            .collect();
        result.cap_unknown(format!(
            "partitions could not be read at all once every fault was healed ({}): their \
             replicas' logs were judged for lost writes, but nothing shows the cluster \
             serving them again",
            why.join("; ")
        ));
    }
    // A cluster that took no write at all lost nothing and misread nothing, and
    // promised nothing either: nothing shows it working (Jepsen's stats checker
    // fails such a history too). An `acks=0` send that ended ok counts as taken:
    // its answer is all such a producer asks for.
    let sent = a.sends.len();
    if sent > 0 && !a.sends.iter().any(|s| s.op.outcome == Outcome::Ok) {
        result.cap_unknown(format!(
            "none of the {sent} sends was acknowledged: the cluster took no write, so \
             nothing it promised can be judged"
        ));
    }
    let in_doubt = a.writes_in_doubt();
    if !in_doubt.is_empty() {
        let why: Vec<String> = in_doubt
            .iter()
            .map(|(p, n)| {
                let partial = a.finals[p].partial.as_deref().unwrap_or_default();
                format!("partition {p}: {n} values missing, {partial}")
            })
            .collect();
        result.cap_unknown(format!(
            "the final drain is partial and there are no replica logs to judge by, so lost writes cannot be judged ({})",
            why.join("; ")
        ));
    }
    result.stats = stats(a);
    result
}

/// The counts results.json shows for a queue history.
fn stats(a: &Analysis) -> BTreeMap<String, u64> {
    let sends = |f: fn(&ops::Send) -> bool| a.sends.iter().filter(|s| f(s)).count() as u64;
    let partial = a.finals.values().filter(|l| l.partial.is_some()).count();
    [
        ("partitions-drained-partially", partial as u64),
        ("sends", a.sends.len() as u64),
        ("sends-acknowledged", sends(|s| s.offset.is_some())),
        ("sends-failed", sends(|s| s.op.outcome == Outcome::Fail)),
        (
            "sends-indeterminate",
            sends(|s| s.op.outcome == Outcome::Info),
        ),
        (
            "polls",
            a.polls.iter().filter(|p| !p.is_final).count() as u64,
        ),
        ("partitions", a.partitions.len() as u64),
    ]
    .into_iter()
    .map(|(name, n)| (name.to_string(), n))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::anomalies::CHECKS;
    use crate::verdict::AnomalyKind;

    #[test]
    fn every_queue_kind_has_one_check() {
        let kinds: Vec<AnomalyKind> = CHECKS.iter().map(|(k, _)| *k).collect();
        let mut distinct = kinds.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), kinds.len(), "{kinds:?}");
        // The kinds other checkers find: linearizability, the harness's crashes
        // and the Maelstrom workloads' own.
        let others = [
            AnomalyKind::Nonlinearizable,
            AnomalyKind::Crash,
            AnomalyKind::NonmonotonicCommit,
            AnomalyKind::DuplicateId,
            AnomalyKind::EchoMismatch,
            AnomalyKind::CounterOutOfRange,
            AnomalyKind::ProtocolError,
            AnomalyKind::Unavailable,
            AnomalyKind::ContractViolation,
        ];
        assert!(others.iter().all(|k| !kinds.contains(k)));
        assert_eq!(kinds.len() + others.len(), AnomalyKind::ALL.len());
    }
}
