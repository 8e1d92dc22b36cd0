//! The idempotent producer's state of one partition (Kafka's ProducerStateManager,
//! KIP-98): per producer id, its epoch and the sequence → offset of its last five
//! batches. The leader checks each batch of an idempotent produce against it: the
//! next sequence is appended, a batch it already holds is answered with the offset
//! it was first written at (a retry, not appended again), anything else is refused.
//!
//! The state is a pure function of the log: every record carries its producer's id,
//! epoch and sequence ([`ProducerStamp`]), so a replica builds the state from its
//! log when it opens, keeps it up to date with every record appended (as leader or
//! follower) and rebuilds it after a truncation. A new leader therefore knows every
//! batch the old one replicated to it.

use std::collections::{BTreeMap, VecDeque};
use std::io;

use super::ReplicaLog;
use crate::log::{ProducerStamp, Record};

/// Batches remembered per producer (Kafka's `max.in.flight.requests` bound); runs
/// of consecutive batches read back from the log count as one.
pub const BATCHES_KEPT: usize = 5;

/// One batch a producer wrote: its sequences and offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Batch {
    first_sequence: u32,
    last_sequence: u32,
    base_offset: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Producer {
    epoch: u32,
    /// The newest last.
    batches: VecDeque<Batch>,
}

/// What the leader does with an idempotent batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceCheck {
    /// The next batch: append it.
    Append,
    /// Already in the log (a retry): answer with where it was written.
    Duplicate { base_offset: u64 },
}

/// Why an idempotent batch is refused (nothing appended).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceError {
    /// Not the next sequence, nor one of the batches kept (Kafka's
    /// `OUT_OF_ORDER_SEQUENCE_NUMBER`).
    OutOfOrder { expected: u32, got: u32 },
    /// An epoch older than the producer's current one (`INVALID_PRODUCER_EPOCH`).
    StaleEpoch { current: u32, got: u32 },
}

/// Every producer's state in one partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerStates {
    producers: BTreeMap<u64, Producer>,
}

impl ProducerStates {
    /// The state of a log: its records, in offset order.
    #[cfg(test)]
    pub fn from_records<'a>(records: impl IntoIterator<Item = &'a Record>) -> Self {
        let mut s = ProducerStates::default();
        for r in records {
            s.observe(r);
        }
        s
    }

    /// Judge a batch from producer `id` in `epoch` whose records have the sequences
    /// `first_sequence..=last_sequence`.
    pub fn check(
        &self,
        id: u64,
        epoch: u32,
        first_sequence: u32,
        last_sequence: u32,
    ) -> Result<SequenceCheck, SequenceError> {
        let Some(p) = self.producers.get(&id) else {
            // A producer this log never saw starts at 0.
            return in_order(0, first_sequence);
        };
        if epoch < p.epoch {
            return Err(SequenceError::StaleEpoch {
                current: p.epoch,
                got: epoch,
            });
        }
        if epoch > p.epoch {
            // A new epoch starts its sequences again.
            return in_order(0, first_sequence);
        }
        if let Some(b) = p.batches.iter().find(|b| {
            (b.first_sequence..=b.last_sequence).contains(&first_sequence)
                && last_sequence <= b.last_sequence
        }) {
            // Batches are read back from the log, where consecutive ones of a
            // producer may run together: the retried one lies inside, whole (as
            // Kafka matches a retry's first *and* last sequence). One whose start
            // alone is held is not a duplicate: answered as one, the records the log
            // lacks would be acknowledged and never written.
            return Ok(SequenceCheck::Duplicate {
                base_offset: b.base_offset + u64::from(first_sequence - b.first_sequence),
            });
        }
        let next = p.batches.back().map_or(0, |b| b.last_sequence + 1);
        in_order(next, first_sequence)
    }

    /// Take a record of the log into account (appended by the leader, replicated to
    /// a follower, or read at open). Consecutive sequences of one producer and epoch
    /// at consecutive offsets form one batch.
    pub fn observe(&mut self, r: &Record) {
        if let Some(stamp) = r.producer {
            self.observe_stamp(r.offset, stamp);
        }
    }

    /// [`Self::observe`] of a record at `offset` stamped `stamp`.
    pub fn observe_stamp(&mut self, offset: u64, stamp: ProducerStamp) {
        let ProducerStamp {
            id,
            epoch,
            sequence,
            ..
        } = stamp;
        let p = self.producers.entry(id).or_default();
        if epoch != p.epoch {
            p.epoch = epoch;
            p.batches.clear();
        }
        if let Some(last) = p.batches.back_mut()
            && sequence == last.last_sequence + 1
            && offset == last.base_offset + u64::from(sequence - last.first_sequence)
        {
            last.last_sequence = sequence;
            return;
        }
        p.batches.push_back(Batch {
            first_sequence: sequence,
            last_sequence: sequence,
            base_offset: offset,
        });
        while p.batches.len() > BATCHES_KEPT {
            p.batches.pop_front();
        }
    }
}

/// Where the batch the log ends inside starts: None when the log ends with a whole
/// batch (or an unstamped record). A batch's records sit at consecutive offsets with
/// consecutive sequences and one last sequence.
pub fn torn_batch_start<L: ReplicaLog>(log: &L) -> io::Result<Option<u64>> {
    let (start, leo) = (log.log_start_offset(), log.log_end_offset());
    let Some(tail) = log.read(leo.saturating_sub(1).max(start), 1, leo)?.pop() else {
        return Ok(None);
    };
    let Some(stamp) = tail.producer.filter(|s| s.records_after > 0) else {
        return Ok(None);
    };
    let same_batch = |r: &Record, sequence: u32| {
        r.producer.is_some_and(|s| {
            (s.id, s.epoch, s.last_sequence()) == (stamp.id, stamp.epoch, stamp.last_sequence())
                && s.sequence == sequence
        })
    };
    // Walk back from the tail, a window at a time, to the batch's first record.
    let (mut first, mut sequence) = (tail.offset, stamp.sequence);
    while first > start && sequence > 0 {
        let from = first.saturating_sub(4096).max(start);
        let window = log.read(from, (first - from) as usize, first)?;
        for r in window.iter().rev() {
            if !same_batch(r, sequence - 1) {
                return Ok(Some(first));
            }
            first = r.offset;
            sequence -= 1;
            if sequence == 0 {
                break;
            }
        }
        if window.is_empty() {
            break;
        }
    }
    Ok(Some(first))
}

fn in_order(expected: u32, got: u32) -> Result<SequenceCheck, SequenceError> {
    if got == expected {
        Ok(SequenceCheck::Append)
    } else {
        Err(SequenceError::OutOfOrder { expected, got })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(offset: u64, id: u64, epoch: u32, sequence: u32) -> Record {
        Record {
            offset,
            leader_epoch: 1,
            key: None,
            value: crate::value::RecordValue::from(serde_json::json!(offset)),
            producer: Some(ProducerStamp {
                id,
                epoch,
                sequence,
                records_after: 0,
            }),
        }
    }

    #[test]
    fn in_order_batches_are_appended() {
        let mut s = ProducerStates::default();
        assert_eq!(s.check(7, 0, 0, 0), Ok(SequenceCheck::Append));
        s.observe(&rec(0, 7, 0, 0));
        s.observe(&rec(1, 7, 0, 1));
        assert_eq!(s.check(7, 0, 2, 2), Ok(SequenceCheck::Append));
    }

    #[test]
    fn a_retried_batch_gets_its_first_offset() {
        let mut s = ProducerStates::default();
        // Batch 0..=1 at offsets 10, 11; another producer's record in between
        // does not matter.
        s.observe(&rec(10, 7, 0, 0));
        s.observe(&rec(11, 7, 0, 1));
        s.observe(&rec(12, 8, 0, 0));
        s.observe(&rec(13, 7, 0, 2));
        assert_eq!(
            s.check(7, 0, 0, 0),
            Ok(SequenceCheck::Duplicate { base_offset: 10 })
        );
        assert_eq!(
            s.check(7, 0, 1, 1),
            Ok(SequenceCheck::Duplicate { base_offset: 11 })
        );
        assert_eq!(
            s.check(7, 0, 2, 2),
            Ok(SequenceCheck::Duplicate { base_offset: 13 })
        );
    }

    #[test]
    fn only_the_last_five_batches_are_remembered() {
        let mut s = ProducerStates::default();
        for i in 0..7u32 {
            s.observe(&rec(u64::from(i) * 2, 7, 0, i));
        }
        assert_eq!(
            s.check(7, 0, 2, 2),
            Ok(SequenceCheck::Duplicate { base_offset: 4 })
        );
        assert_eq!(
            s.check(7, 0, 1, 1),
            Err(SequenceError::OutOfOrder {
                expected: 7,
                got: 1
            })
        );
    }

    #[test]
    fn a_gap_is_out_of_order() {
        let mut s = ProducerStates::default();
        assert_eq!(
            s.check(7, 0, 3, 3),
            Err(SequenceError::OutOfOrder {
                expected: 0,
                got: 3
            })
        );
        s.observe(&rec(0, 7, 0, 0));
        assert_eq!(
            s.check(7, 0, 2, 2),
            Err(SequenceError::OutOfOrder {
                expected: 1,
                got: 2
            })
        );
    }

    #[test]
    fn a_new_epoch_restarts_at_zero_and_fences_the_old() {
        let mut s = ProducerStates::default();
        s.observe(&rec(0, 7, 0, 0));
        s.observe(&rec(1, 7, 0, 1));
        assert_eq!(s.check(7, 1, 0, 0), Ok(SequenceCheck::Append));
        assert!(matches!(
            s.check(7, 1, 2, 2),
            Err(SequenceError::OutOfOrder { .. })
        ));
        s.observe(&rec(2, 7, 1, 0));
        assert_eq!(
            s.check(7, 0, 2, 2),
            Err(SequenceError::StaleEpoch { current: 1, got: 0 })
        );
        assert_eq!(
            s.check(7, 1, 0, 0),
            Ok(SequenceCheck::Duplicate { base_offset: 2 })
        );
    }

    #[test]
    fn rebuilt_from_a_truncated_log_forgets_the_removed_batches() {
        let log: Vec<Record> = (0..4).map(|i| rec(u64::from(i), 7, 0, i)).collect();
        let full = ProducerStates::from_records(&log);
        assert_eq!(full.check(7, 0, 4, 4), Ok(SequenceCheck::Append));
        // Truncated to offset 2: sequences 2 and 3 are gone, so a retry of
        // sequence 2 is appended again (it is the next one), not answered as a
        // duplicate of a record no longer there.
        let cut = ProducerStates::from_records(&log[..2]);
        assert_eq!(cut.check(7, 0, 2, 2), Ok(SequenceCheck::Append));
        assert_eq!(
            cut.check(7, 0, 0, 0),
            Ok(SequenceCheck::Duplicate { base_offset: 0 })
        );
    }

    #[test]
    fn a_retry_held_only_in_part_is_not_a_duplicate() {
        // The first 3 records of a batch of 10 (sequences 0..=9) reached this log:
        // answered as a duplicate, the other 7 would be acknowledged and never
        // written. Refused instead, as Kafka refuses a batch it holds no match for.
        let mut s = ProducerStates::default();
        for i in 0..3u32 {
            s.observe(&rec(u64::from(i) + 20, 7, 0, i));
        }
        assert_eq!(
            s.check(7, 0, 0, 9),
            Err(SequenceError::OutOfOrder {
                expected: 3,
                got: 0
            })
        );
        assert_eq!(
            s.check(7, 0, 0, 2),
            Ok(SequenceCheck::Duplicate { base_offset: 20 })
        );
    }
}
