//! The kafka workload's check: Maelstrom's Kafka-style logs (`send` a message to
//! a key → its offset; `poll` keys from offsets → `[offset, message]` records;
//! `commit_offsets`; `list_committed_offsets`) judged with the queue checker's
//! anomaly names where the meaning is the same:
//!
//! - `lost-write`: an acknowledged send lost. Where the harness drained a key
//!   after healing (`final-poll` from offset 0 until a poll returned nothing), the
//!   key's final log decides: an acknowledged send, or a message a poll read,
//!   missing from it is lost. Without a complete drain (none, or one that stopped
//!   short), a send is lost if no poll ever returned it although some poll returned
//!   a higher offset of its key, as Jepsen's Kafka checker judges it; an
//!   acknowledged send nobody read past is only *unobserved* (a stat: Maelstrom
//!   sets no bound on how long a message may stay invisible).
//! - `inconsistent-offsets` / `duplicate`: one offset seen with two messages / one
//!   message at two offsets, across acknowledgements and polls.
//! - `unexpected` / `aborted-read`: a message polled that was never sent to its
//!   key / whose every send failed.
//! - `nonmonotonic-poll`: a poll returned, for a key, records below the offset it
//!   asked for, or not in ascending order.
//! - `poll-skip`: a poll of a key from offset `o` whose highest returned offset is
//!   `m` did not return an offset in `[o, m)` known to hold a message (some send
//!   was acknowledged there, or some poll returned it). Clients poll from where
//!   their last poll ended, so this is also a skip between a consumer's
//!   consecutive polls.
//! - `nonmonotonic-send`: a process's acknowledged sends to a key got decreasing
//!   offsets.
//! - `nonmonotonic-commit` (new): a `list_committed_offsets` answered, for a key,
//!   less than (or nothing after) a commit of that key acknowledged before the
//!   listing began. Maelstrom's checker does not judge commits; this holds for a
//!   system that keeps each key's highest commit, and for one that overwrites it
//!   when, as in our workload, each key is committed by one client whose commits
//!   only advance.
//!
//! Reads the operations of docs/history.md ("The Maelstrom workloads", kafka).

mod anomalies;
mod reading;

use std::collections::{BTreeMap, BTreeSet};

use super::reading::{self as shared, HistoryError};
use crate::history::{Event, Outcome};
use crate::verdict::CheckerResult;
use anomalies::Analysis;
use reading::Kafka;

const OPERATIONS: [&str; 5] = [
    "send",
    "poll",
    "final-poll",
    "commit_offsets",
    "list_committed_offsets",
];

/// Check the kafka operations of a history.
pub fn check(events: &[Event]) -> CheckerResult {
    try_check(events).unwrap_or_else(shared::unreadable)
}

/// [`check`], or why the history cannot be read.
pub fn try_check(events: &[Event]) -> Result<CheckerResult, HistoryError> {
    let ops = shared::ops(events, &OPERATIONS)?;
    let k = Kafka::read(&ops)?;
    let a = Analysis::new(&k);
    let mut r = CheckerResult::from_anomalies(anomalies::all(&a));
    let sent: BTreeSet<&str> = k
        .sends
        .iter()
        .filter(|s| s.offset.is_some())
        .map(|s| k.key_name(s.key))
        .collect();
    let undrained: Vec<&str> = sent
        .iter()
        .copied()
        .filter(|name| {
            let key = k.keys.iter().position(|n| n == name);
            !key.and_then(|i| a.finals.get(&(i as u32)))
                .is_some_and(|l| l.complete)
        })
        .collect();
    if !undrained.is_empty() {
        r.notes.push(format!(
            "no complete final drain of {}: a send there is lost only if no poll returned it though a poll returned a higher offset",
            undrained.join(", ")
        ));
    }
    r.stats = stats(&k, &a);
    Ok(r)
}

fn stats(k: &Kafka, a: &Analysis) -> BTreeMap<String, u64> {
    let sends = |o: Outcome| k.sends.iter().filter(|s| k.ops[s.op].outcome == o).count() as u64;
    let ops = |f: &str| {
        k.ops
            .iter()
            .filter(|op| op.invoke.f == f && op.outcome == Outcome::Ok)
            .count() as u64
    };
    BTreeMap::from([
        ("sends".to_string(), k.sends.len() as u64),
        ("sends-acknowledged".to_string(), sends(Outcome::Ok)),
        ("sends-failed".to_string(), sends(Outcome::Fail)),
        ("sends-indeterminate".to_string(), sends(Outcome::Info)),
        ("sends-unobserved".to_string(), a.unobserved() as u64),
        ("polls".to_string(), ops("poll")),
        ("final-polls".to_string(), ops("final-poll")),
        ("commits".to_string(), ops("commit_offsets")),
        ("listings".to_string(), ops("list_committed_offsets")),
        ("keys".to_string(), k.keys.len() as u64),
        (
            "keys-drained".to_string(),
            a.finals.values().filter(|l| l.complete).count() as u64,
        ),
    ])
}

#[cfg(test)]
mod tests;
