//! Preferred-replica election (Kafka's auto leader rebalance): after failures every
//! partition a dead broker led moved to another replica, and without this its
//! leadership would never come back — one broker would end up leading everything.
//! Every `--leader-imbalance-check-interval-ms` the active controller moves each
//! partition whose preferred replica (the first in replica order) is alive, in the
//! ISR and not leading, back to it. The ISR holds every committed record, so the
//! move loses nothing: the old leader becomes a follower of the new epoch and
//! settles its log (and its pending `acks=all` requests) like any deposed leader.
//!
//! (Kafka acts per broker once more than 10 % of its preferred partitions are led
//! elsewhere; with the handful of partitions per broker of a test cluster, any one
//! is more than that, so here every such partition moves at each check.)

use serde::{Deserialize, Serialize};

use super::{ChangedBy, ControllerState, Effects};
use crate::protocol::{LeaderEpoch, NO_LEADER, TopicPartition};

/// A partition to hand back to its preferred replica, as the active controller saw
/// it when it decided: if its leader epoch moved on since, the election no longer
/// applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreferredElection {
    pub topic: String,
    pub partition: u32,
    pub leader_epoch: LeaderEpoch,
}

impl ControllerState {
    /// The partitions whose preferred replica could lead again now, as a command
    /// (None: every partition is led by its preferred replica, or cannot be).
    pub fn preferred_decision(&self) -> Option<super::Command> {
        let partitions: Vec<PreferredElection> = self
            .partitions
            .values()
            .filter(|p| self.preferred_eligible(p).is_some())
            .map(|p| PreferredElection {
                topic: p.topic.clone(),
                partition: p.partition,
                leader_epoch: p.leader_epoch,
            })
            .collect();
        (!partitions.is_empty()).then_some(super::Command::ElectPreferred { partitions })
    }

    /// The preferred replica of `p`, if it should take the leadership: `p` has a
    /// leader, another one, and the preferred replica is alive and in the ISR.
    fn preferred_eligible(&self, p: &crate::protocol::PartitionState) -> Option<i32> {
        let preferred = *p.replicas.first()?;
        (p.leader != NO_LEADER
            && p.leader != preferred
            && p.isr.contains(&preferred)
            && self.is_alive(preferred))
        .then_some(preferred)
    }

    /// Apply preferred elections: each partition still in the epoch it was decided
    /// in, and still eligible, is led by its preferred replica in a new leader epoch.
    pub(super) fn apply_preferred(&mut self, elections: &[PreferredElection]) -> Effects {
        let mut effects = Effects::default();
        for e in elections {
            let tp = TopicPartition {
                topic: e.topic.clone(),
                partition: e.partition,
            };
            let Some(p) = self.partitions.get(&tp) else {
                continue;
            };
            if p.leader_epoch != e.leader_epoch {
                continue;
            }
            let Some(preferred) = self.preferred_eligible(p) else {
                continue;
            };
            let previous = p.leader;
            let mut next = p.clone();
            next.leader = preferred;
            next.leader_epoch += 1;
            next.partition_epoch += 1;
            effects
                .transitions
                .push(self.elected(&next, true, previous));
            let why =
                format!("preferred replica {preferred} back in the ISR (was led by {previous})");
            self.update(tp, next, &why, ChangedBy::Controller, &mut effects);
        }
        effects
    }
}
