//! out-of-sequence: an idempotent producer's sequence, as the leaders must keep
//! it.
//!
//! A leader refuses an idempotent batch as out of sequence when its sequence is
//! not the one after the producer's last batch it holds. Whether the refusal was
//! the leader's mistake depends on what it had to hold, so the check needs more
//! than the order of events: the epoch of the leader that acknowledged each batch
//! before it and of the one that refused it. A leader cut off from the others
//! that has not learnt it was deposed refuses, rightly, a batch its successors
//! acknowledged the predecessor of; only its older epoch tells it apart from a
//! leader that lost the producer's state.

use std::collections::{BTreeSet, HashMap};

use super::analysis::Analysis;
use super::anomalies::anomaly;
use super::ops::Send;
use crate::history::Outcome;
use crate::verdict::{Anomaly, AnomalyKind};

/// A producer's sends to one partition so far, in the order invoked.
struct SoFar<'a> {
    /// Every one ended `ok` with an offset and the acknowledging leader's epoch.
    all_acknowledged: bool,
    /// When the last of them ended (history index).
    last_end: u64,
    /// The newest epoch that acknowledged one of them.
    newest_epoch: Option<i64>,
    /// The last one acknowledged.
    last: Option<&'a Send>,
}

/// out-of-sequence: an idempotent producer's send ended `fail`, its last
/// attempt refused as out of sequence by the leader of epoch `E`, although every
/// send the producer made to the partition before it (invoked before it) had
/// been acknowledged, by leaders of epochs up to `E`, before it ended. Those
/// batches were committed (`acks=all`) in epochs no newer than `E`, so the leader
/// of `E` held them all and none of this one (every attempt was refused): its
/// sequence was the very one to append next. The producer sends a refused batch
/// again while one ahead of it is pending, so the final refusal answered an
/// attempt sent once they had all ended. A partition with a send that never
/// ended is not judged (whose it was is unknown). One anomaly per producer and
/// partition, at its first such send.
pub(super) fn out_of_sequence(a: &Analysis) -> Vec<Anomaly> {
    let open: BTreeSet<i64> = a
        .sends
        .iter()
        .filter(|s| s.op.complete_index.is_none())
        .map(|s| s.partition)
        .collect();
    let mut so_far: HashMap<(i64, i64), SoFar> = HashMap::new();
    let mut reported = BTreeSet::new();
    let mut anomalies = Vec::new();
    for s in a.sends {
        // (A send without an end has no producer either.)
        let (Some(id), Some(ended)) = (s.producer, s.op.complete_index) else {
            continue;
        };
        if open.contains(&s.partition) {
            continue;
        }
        let p = so_far.entry((id, s.partition)).or_insert(SoFar {
            all_acknowledged: true,
            last_end: 0,
            newest_epoch: None,
            last: None,
        });
        let refused = s.refused_out_of_sequence && s.op.outcome == Outcome::Fail;
        if let (true, Some(epoch)) = (refused, s.leader_epoch)
            && p.all_acknowledged
            && p.last_end < ended
            && p.newest_epoch.is_none_or(|newest| newest <= epoch)
            && reported.insert((id, s.partition))
        {
            anomalies.push(refusal(a, id, s, epoch, p));
        }
        let acknowledged = s.op.outcome == Outcome::Ok && s.offset.is_some();
        match s.leader_epoch {
            Some(e) if acknowledged => {
                p.newest_epoch = p.newest_epoch.max(Some(e));
                p.last = Some(s);
            }
            _ => p.all_acknowledged = false,
        }
        p.last_end = p.last_end.max(ended);
    }
    anomalies
}

/// The anomaly for `s`, refused by the leader of `epoch` after `before`.
fn refusal(a: &Analysis, id: i64, s: &Send, epoch: i64, before: &SoFar) -> Anomaly {
    let ahead = match (before.last, before.newest_epoch) {
        (Some(last), Some(newest)) => format!(
            "although every batch the producer sent the partition before it had been \
             acknowledged, by leaders of epochs up to {newest} (the last: {} at offset {})",
            a.names.show(last.value),
            last.offset.unwrap_or(-1)
        ),
        _ => "although it was the producer's first batch to the partition".to_string(),
    };
    let mut x = anomaly(
        AnomalyKind::OutOfSequence,
        s.partition,
        format!(
            "idempotent producer {id}'s batch with {} was refused as out of sequence by the \
             leader of epoch {epoch}, {ahead}: that leader lost the producer's sequence",
            a.names.show(s.value)
        ),
    );
    x.values = vec![a.names.exported(s.value)];
    x.ops = before.last.iter().map(|l| l.op_ref(&a.names)).collect();
    x.ops.push(s.op_ref(&a.names));
    x
}
