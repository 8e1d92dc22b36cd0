//! The follower's side: becoming follower (which starts the truncation the
//! `truncation` rules settle) and applying the leader's FETCH answers.

use super::{Effects, Replica, ReplicaError, ReplicaLog, Role, Truncation};
use crate::bugs::Bug;
use crate::log::ProducerStamp;
use crate::protocol::FetchResponse;

impl<L: ReplicaLog> Replica<L> {
    /// Follow (the state is set): truncate at once under `hw`, or mark the log to be
    /// settled with the leader under `epoch`.
    pub(super) fn become_follower(&mut self, truncation: Truncation, fx: &mut Effects) {
        self.role = Role::Follower;
        self.rule = truncation;
        if self.bugs.has(Bug::NoEpochFence) {
            // PLANTED BUG (no-epoch-fence): keep every record of the epochs before the
            // new leader's, as if they were the new leader's own.
            self.truncating = None;
            return;
        }
        match truncation {
            Truncation::Hw => {
                self.truncating = Some(Truncation::Hw);
                let hw = self.high_watermark;
                match self.truncate(hw, true, fx) {
                    Ok(()) => self.truncating = None,
                    Err(e) => fx.warnings.push(format!(
                        "truncating to the high watermark {hw}: {e} (retried before fetching)"
                    )),
                }
            }
            Truncation::Epoch => {
                self.truncating = (self.log.log_end_offset() > 0).then_some(Truncation::Epoch);
            }
        }
    }

    /// Follower: apply the leader's FETCH answer. Records must start at our LEO (an
    /// answer to an older fetch is dropped). HW = min(our LEO, the leader's HW). If the
    /// log refuses the records (storage), nothing changes and the error is returned.
    pub fn apply_fetch_response(
        &mut self,
        resp: FetchResponse,
    ) -> (Result<(), ReplicaError>, Effects) {
        let mut fx = Effects::default();
        if self.role != Role::Follower || self.truncating.is_some() {
            let leader = self.leader();
            return (Err(ReplicaError::NotLeader { leader }), fx);
        }
        if resp.leader_epoch != self.leader_epoch() {
            let (requested, current) = (resp.leader_epoch, self.leader_epoch());
            return (
                Err(ReplicaError::FencedLeaderEpoch { requested, current }),
                fx,
            );
        }
        let leo = self.log.log_end_offset();
        if let Some(first) = resp.records.first() {
            if first.offset != leo {
                return (Ok(()), fx);
            }
            // The log takes all of them or none (a full disk): the epoch cache
            // and the producers' state learn of them only once they are in.
            let epochs: Vec<(i32, u64)> = resp
                .records
                .iter()
                .map(|r| (r.leader_epoch, r.offset))
                .collect();
            let stamped: Vec<(u64, ProducerStamp)> = resp
                .records
                .iter()
                .filter_map(|r| Some((r.offset, r.producer?)))
                .collect();
            if let Err(e) = self.log.append_replicated(resp.records) {
                return (Err(e.into()), fx);
            }
            for (epoch, offset) in epochs {
                self.assign_epoch(epoch, offset, &mut fx);
            }
            for (offset, stamp) in stamped {
                self.producers.observe_stamp(offset, stamp);
            }
            fx.appended = true;
        }
        let hw = self.log.log_end_offset().min(resp.high_watermark);
        self.set_high_watermark(hw, &mut fx);
        (Ok(()), fx)
    }
}
