//! Kafka's leader-epoch cache (`LeaderEpochFileCache`): for each leader epoch, the
//! first offset written in it. It answers OffsetsForLeaderEpoch with the KIP-279
//! semantics, which is what lets a follower find where its log and the leader's part.

use crate::protocol::LeaderEpoch;

/// Kafka's `LeaderEpochFileCache`: for each leader epoch, the first offset written in it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EpochCache {
    entries: Vec<(LeaderEpoch, u64)>,
}

impl EpochCache {
    /// An empty cache.
    pub fn new() -> Self {
        EpochCache::default()
    }

    /// `(epoch, start_offset)` pairs, both ascending.
    pub fn entries(&self) -> &[(LeaderEpoch, u64)] {
        &self.entries
    }

    pub fn latest_epoch(&self) -> Option<LeaderEpoch> {
        self.entries.last().map(|e| e.0)
    }

    /// Record that `epoch` starts at `start_offset`. As in Kafka, entries that would
    /// break monotonicity (epoch ≥ or start ≥ the new one's) are removed first; assigning
    /// the latest epoch again at a later offset is a no-op. Returns whether it changed.
    pub fn assign(&mut self, epoch: LeaderEpoch, start_offset: u64) -> bool {
        if self
            .entries
            .last()
            .is_some_and(|&(e, s)| e == epoch && start_offset >= s)
        {
            return false;
        }
        while let Some(&(e, s)) = self.entries.last() {
            if e >= epoch || s >= start_offset {
                self.entries.pop();
            } else {
                break;
            }
        }
        self.entries.push((epoch, start_offset));
        true
    }

    /// Drop every entry starting at or after `end_offset` (the log was truncated there).
    pub fn truncate_from_end(&mut self, end_offset: u64) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| e.1 < end_offset);
        self.entries.len() != before
    }

    /// OffsetsForLeaderEpoch (KIP-101 with the KIP-279 semantics): for `requested`,
    /// the largest epoch ≤ `requested` this log knows and the offset where it ends (the
    /// start of the next higher epoch, or LEO for the latest epoch). `None` is Kafka's
    /// UNDEFINED: `requested` is above every epoch known here.
    pub fn end_offset_for(
        &self,
        requested: LeaderEpoch,
        log_end_offset: u64,
    ) -> Option<(LeaderEpoch, u64)> {
        if requested < 0 {
            return None;
        }
        if self.latest_epoch() == Some(requested) {
            return Some((requested, log_end_offset));
        }
        let higher = self.entries.iter().find(|e| e.0 > requested)?;
        match self.entries.iter().rev().find(|e| e.0 <= requested) {
            // Smaller than any known epoch: it ends where the first known one starts.
            None => Some((requested, higher.1)),
            Some(floor) => Some((floor.0, higher.1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_cache_assign_keeps_epochs_and_offsets_monotonic() {
        let mut c = EpochCache::new();
        assert!(c.assign(1, 0));
        assert!(!c.assign(1, 5), "same epoch at a later offset is a no-op");
        assert!(c.assign(2, 5));
        assert!(c.assign(4, 9));
        assert_eq!(c.entries(), &[(1, 0), (2, 5), (4, 9)]);
        // A higher epoch at a lower offset removes the entries it contradicts.
        assert!(c.assign(5, 7));
        assert_eq!(c.entries(), &[(1, 0), (2, 5), (5, 7)]);
        // A lower epoch than the latest removes every entry with epoch ≥ it.
        assert!(c.assign(3, 8));
        assert_eq!(c.entries(), &[(1, 0), (2, 5), (3, 8)]);
    }

    #[test]
    fn epoch_cache_truncates_from_the_end() {
        let mut c = EpochCache::new();
        c.assign(1, 0);
        c.assign(2, 5);
        c.assign(4, 9);
        assert!(c.truncate_from_end(9));
        assert_eq!(c.entries(), &[(1, 0), (2, 5)]);
        assert!(!c.truncate_from_end(20));
    }

    #[test]
    fn end_offset_for_answers_the_largest_epoch_at_or_below_the_request() {
        let mut c = EpochCache::new();
        c.assign(1, 0);
        c.assign(3, 4);
        c.assign(6, 10);
        let leo = 15;
        assert_eq!(
            c.end_offset_for(6, leo),
            Some((6, 15)),
            "latest: ends at LEO"
        );
        assert_eq!(c.end_offset_for(3, leo), Some((3, 10)));
        // KIP-279: epoch 4 is unknown here; the largest epoch ≤ 4 is 3, which ends at 10.
        assert_eq!(c.end_offset_for(4, leo), Some((3, 10)));
        assert_eq!(c.end_offset_for(2, leo), Some((1, 4)));
        assert_eq!(
            c.end_offset_for(0, leo),
            Some((0, 0)),
            "below all: first start"
        );
        assert_eq!(c.end_offset_for(7, leo), None, "above all: UNDEFINED");
        assert_eq!(c.end_offset_for(-1, leo), None);
    }
}
