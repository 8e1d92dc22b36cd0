//! The leader's ISR proposals: which followers to drop (lagging longer than the lag
//! time) or add (caught up), and the proposal in flight to the controller
//! (AlterPartition), which the HW also waits for until a definite answer
//! (KIP-497/KIP-841's maximal ISR).

use super::{Effects, Replica, ReplicaLog, Role};
use crate::bugs::Bug;
use crate::protocol::{BrokerId, LeaderEpoch, PartitionEpoch};

/// An ISR change this leader sent to the controller (AlterPartition) and has no
/// definite answer for, with the epochs it was proposed under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingIsr {
    pub leader_epoch: LeaderEpoch,
    pub partition_epoch: PartitionEpoch,
    pub isr: Vec<BrokerId>,
}

/// What [`Replica::propose_isr`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IsrChange {
    /// Send this proposal to the controller; it is pending from now on.
    Propose {
        pending: PendingIsr,
        /// The broker epoch each proposed follower last fetched with (KIP-903), for
        /// the followers the leader knows one of.
        member_epochs: Vec<(BrokerId, u64)>,
    },
    /// PLANTED BUG (isr-unchecked): the leader shrank its ISR on its own.
    ShrunkUnchecked {
        from: Vec<BrokerId>,
        to: Vec<BrokerId>,
    },
}

impl<L: ReplicaLog> Replica<L> {
    /// The ISR, plus an expansion we proposed (HW must wait for it too).
    pub(super) fn maximal_isr(&self) -> Vec<BrokerId> {
        let mut isr = self.isr().to_vec();
        for r in self.pending_isr.iter().flat_map(|p| &p.isr) {
            if !isr.contains(r) {
                isr.push(*r);
            }
        }
        isr
    }

    /// The ISR we proposed and wait for an answer about, if any.
    #[cfg(test)]
    pub fn pending_isr(&self) -> Option<&[BrokerId]> {
        self.pending_isr.as_ref().map(|p| p.isr.as_slice())
    }

    /// Leader: an ISR change to propose to the controller, if any: first drop members
    /// not caught up for longer than the lag time, else add one replica that has caught
    /// up to the HW within this leader epoch. Nothing while a proposal is in flight.
    pub(super) fn isr_proposal(&self, now_ms: u64) -> Option<Vec<BrokerId>> {
        if self.role != Role::Leader || self.pending_isr.is_some() {
            return None;
        }
        let isr = self.isr();
        let lagging: Vec<BrokerId> = isr
            .iter()
            .copied()
            .filter(|r| *r != self.id)
            .filter(|r| {
                self.followers.get(r).is_none_or(|f| {
                    now_ms.saturating_sub(f.last_caught_up_ms) > self.lag_time_max_ms
                })
            })
            .collect();
        if !lagging.is_empty() {
            return Some(
                isr.iter()
                    .copied()
                    .filter(|r| !lagging.contains(r))
                    .collect(),
            );
        }
        // PLANTED BUG (isr-expand-early): any fetch in this epoch is enough.
        let caught_up = |leo: u64| self.bugs.has(Bug::IsrExpandEarly) || leo >= self.high_watermark;
        let joining = self.followers.iter().find(|(r, f)| {
            !isr.contains(r)
                && f.log_end_offset
                    .is_some_and(|leo| caught_up(leo) && leo >= self.leader_epoch_start)
        })?;
        let mut new_isr = isr.to_vec();
        new_isr.push(*joining.0);
        Some(new_isr)
    }

    /// Leader, on the ISR timer: the [`isr_proposal`](Self::isr_proposal) to send now,
    /// made the pending one. With the isr-unchecked bug planted, a shrink is applied
    /// on the spot instead and nothing is sent.
    pub fn propose_isr(&mut self, now_ms: u64) -> (Option<IsrChange>, Effects) {
        let Some(new_isr) = self.isr_proposal(now_ms) else {
            return (None, Effects::default());
        };
        if self.bugs.has(Bug::IsrUnchecked) && new_isr.len() < self.isr().len() {
            let from = self.isr().to_vec();
            let (shrunk, fx) = self.shrink_isr_unchecked(&new_isr, now_ms);
            let change = shrunk.then_some(IsrChange::ShrunkUnchecked { from, to: new_isr });
            return (change, fx);
        }
        let member_epochs = new_isr
            .iter()
            .filter(|&&b| b != self.id)
            .filter_map(|&b| Some((b, self.followers.get(&b)?.broker_epoch?)))
            .collect();
        let pending = self.set_pending_isr(new_isr);
        let change = IsrChange::Propose {
            pending,
            member_epochs,
        };
        (Some(change), Effects::default())
    }

    /// PLANTED BUG (isr-unchecked): the leader shrinks its ISR to `isr` on its own,
    /// never asking the controller (the partition epoch stays the controller's, so the
    /// controller's next change still applies, and expansions still go through it).
    /// Returns whether the ISR shrank.
    pub(super) fn shrink_isr_unchecked(
        &mut self,
        isr: &[BrokerId],
        now_ms: u64,
    ) -> (bool, Effects) {
        let mut fx = Effects::default();
        if self.role != Role::Leader || !self.bugs.has(Bug::IsrUnchecked) {
            return (false, fx);
        }
        let Some(state) = self.state.as_mut() else {
            return (false, fx);
        };
        if isr.len() >= state.isr.len() || !isr.iter().all(|r| state.isr.contains(r)) {
            return (false, fx);
        }
        for r in state.isr.iter().filter(|r| !isr.contains(r)) {
            if let Some(f) = self.followers.get_mut(r) {
                f.isr_eligible = false;
            }
        }
        state.isr = isr.to_vec();
        fx.wake = true;
        self.advance_hw(now_ms, &mut fx);
        (true, fx)
    }

    /// Leader: we send `isr` to the controller under the current epochs; until a
    /// definite answer (or a newer partition state), HW also waits for the replicas it
    /// adds. Returns the proposal, to match the answer against.
    pub(super) fn set_pending_isr(&mut self, isr: Vec<BrokerId>) -> PendingIsr {
        let pending = PendingIsr {
            leader_epoch: self.leader_epoch(),
            partition_epoch: self.state.as_ref().map_or(-1, |s| s.partition_epoch),
            isr,
        };
        self.pending_isr = Some(pending.clone());
        pending
    }

    /// Whether `sent` is still the proposal in flight (no newer state replaced it).
    pub fn is_pending(&self, sent: &PendingIsr) -> bool {
        self.pending_isr.as_ref() == Some(sent)
    }

    /// The controller definitely answered `sent` (it rejected it, or its accepted
    /// state has been applied): stop waiting for it. A proposal sent under other
    /// epochs (an older leadership's task answering late) leaves the current one be.
    /// Returns whether it cleared.
    pub fn clear_pending_isr(&mut self, sent: &PendingIsr) -> (bool, Effects) {
        let mut fx = Effects::default();
        let clear = self.is_pending(sent);
        if clear {
            self.pending_isr = None;
            // The maximal ISR shrank: an acks=all write may now be judged.
            fx.wake = true;
        }
        (clear, fx)
    }
}
