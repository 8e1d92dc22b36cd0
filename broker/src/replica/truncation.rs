//! Where a follower cuts its log when it becomes follower (or restarts), so that it
//! keeps no record the leader does not have at the same offset.
//!
//! - [`Truncation::Hw`], pre-0.11 Kafka: cut at the local high watermark. That loses
//!   committed records when the local HW is stale, and lets logs diverge (KIP-101).
//! - [`Truncation::Epoch`], KIP-101 with the KIP-279 fix: ask the leader
//!   (OffsetsForLeaderEpoch) where our latest epoch ends in its log; if it answers
//!   an epoch we know, cut at the smaller of both ends; if it answers an epoch we do
//!   not have, cut where our epochs below it end, and ask again.

use std::io;

use super::{Effects, Replica, ReplicaLog, Truncated};
use crate::bugs::Bug;
use crate::protocol::LeaderEpoch;

/// How a follower decides where to truncate its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truncation {
    /// KIP-101 with the KIP-279 fix: by the end offsets of leader epochs.
    Epoch,
    /// Pre-0.11 Kafka: to the local high watermark.
    Hw,
}

impl<L: ReplicaLog> Replica<L> {
    /// Cut the log at `offset`, with the epoch cache and the HW, and note the cut for
    /// the event lines if it removed records or epochs, or if `settles` (the cut that
    /// ends the follower's truncation, even when nothing had to go).
    ///
    /// The epoch cache is cut even when `offset` is at or past LEO, as Kafka's
    /// `truncateTo` does: an epoch that starts at LEO (this replica led it and wrote
    /// nothing) may be one the leader never had, and kept, it would make the follower
    /// ask the leader about it again and again.
    pub(super) fn truncate(
        &mut self,
        offset: u64,
        settles: bool,
        fx: &mut Effects,
    ) -> io::Result<()> {
        let leo = self.log.log_end_offset();
        if offset < leo {
            let cut = self.log.truncate_to(offset);
            fx.wake = true;
            // The producers' batches above the cut are gone with it (also when the
            // cut failed part way: the state follows whatever the log now holds).
            let rebuilt = self.rebuild_producers();
            cut?;
            rebuilt?;
        }
        let epochs_cut = self.epochs.truncate_from_end(offset.min(leo));
        if epochs_cut {
            fx.epochs_changed(&self.epochs);
        }
        let new_leo = self.log.log_end_offset();
        let hw = self.high_watermark.min(new_leo);
        self.set_high_watermark(hw, fx);
        let records = leo - new_leo;
        if records > 0 || epochs_cut || settles {
            fx.truncations.push(Truncated {
                to: new_leo,
                records,
                rule: self.rule,
            });
        }
        Ok(())
    }

    /// Whether this follower still has to settle its log with the leader before fetching.
    #[cfg(test)]
    pub fn is_truncating(&self) -> bool {
        self.truncating.is_some()
    }

    /// Follower: the leader's LEO is below ours (pre-0.11 Kafka's out-of-range
    /// handling): cut our log to it.
    pub fn truncate_to_leader_end(&mut self, leader_leo: u64) -> (io::Result<()>, Effects) {
        let mut fx = Effects::default();
        let result = self.truncate(leader_leo, false, &mut fx);
        (result, fx)
    }

    /// Follower, before fetching: the epoch to ask the leader's end offset for (our
    /// latest), or None when there is nothing (left) to settle. Settles on its own
    /// what needs no leader: a pending [`Truncation::Hw`], and epoch truncation of a
    /// log without epochs (to the HW, as Kafka does).
    pub fn truncation_epoch(&mut self) -> (io::Result<Option<LeaderEpoch>>, Effects) {
        let mut fx = Effects::default();
        let latest = match self.truncating {
            None => return (Ok(None), fx),
            Some(Truncation::Epoch) => self.epochs.latest_epoch(),
            Some(Truncation::Hw) => None,
        };
        if latest.is_some() {
            return (Ok(latest), fx);
        }
        // No epoch information (an empty log, or one from before epochs): fall back to
        // the high watermark as Kafka does.
        let hw = self.high_watermark;
        let result = self.truncate(hw, true, &mut fx);
        if result.is_ok() {
            self.truncating = None;
        }
        (result.map(|()| None), fx)
    }

    /// Follower in epoch truncation: apply the leader's OffsetsForLeaderEpoch answer for
    /// the epoch [`truncation_epoch`](Self::truncation_epoch) gave (KIP-101 + KIP-279).
    /// If the leader answered an epoch we know, truncate to the smaller of both end
    /// offsets and we are done; if it answered an epoch we do not have, truncate to the
    /// end of our largest epoch below it and ask again. Returns whether it is done.
    pub fn apply_epoch_end_offset(
        &mut self,
        answer: Option<(LeaderEpoch, u64)>,
    ) -> (io::Result<bool>, Effects) {
        let mut fx = Effects::default();
        let result = self.settle_epoch(answer, &mut fx);
        (result, fx)
    }

    /// [`apply_epoch_end_offset`](Self::apply_epoch_end_offset) with its effects noted in `fx`.
    fn settle_epoch(
        &mut self,
        answer: Option<(LeaderEpoch, u64)>,
        fx: &mut Effects,
    ) -> io::Result<bool> {
        if self.truncating.is_none() {
            return Ok(true);
        }
        let leo = self.log.log_end_offset();
        let Some((leader_epoch, leader_end)) = answer else {
            // UNDEFINED: the leader knows no epoch ≤ ours; Kafka falls back to the HW.
            let hw = self.high_watermark;
            self.truncate(hw, true, fx)?;
            self.truncating = None;
            return Ok(true);
        };
        match self.epochs.end_offset_for(leader_epoch, leo) {
            Some((ours, our_end)) if ours == leader_epoch => {
                let end = our_end.min(leader_end);
                // PLANTED BUG (truncate-past-epoch-end): one record past the end.
                let end = end + u64::from(self.bugs.has(Bug::TruncatePastEpochEnd));
                self.truncate(end.min(leo), true, fx)?;
                self.truncating = None;
                Ok(true)
            }
            Some((_, our_end)) => {
                // Settled only if no epoch is left to ask about.
                let last = self
                    .epochs
                    .entries()
                    .iter()
                    .all(|&(_, start)| start >= our_end.min(leo));
                self.truncate(our_end.min(leo), last, fx)?;
                if self.epochs.latest_epoch().is_none() {
                    self.truncating = None;
                }
                Ok(self.truncating.is_none())
            }
            None => {
                // The leader answered an epoch above all of ours (it cannot, for the epoch
                // we asked): settle for the HW as Kafka does with UNDEFINED.
                let hw = self.high_watermark;
                self.truncate(hw, true, fx)?;
                self.truncating = None;
                Ok(true)
            }
        }
    }
}
