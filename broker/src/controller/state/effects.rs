//! What applying a command (or the active controller's clock) asks of the active
//! controller: the partition states to push to each broker, the log lines and event
//! lines, whether the replicated state changed. The pure state only describes them;
//! the controller service carries them out, once, on the active controller.

use std::collections::BTreeMap;

use crate::events::Event;
use crate::protocol::{BrokerId, PartitionState};

/// What the active controller must do after an event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects {
    /// Partition states to push (LeaderAndIsr) to each broker: the changed partitions
    /// it replicates, latest state only.
    pub pushes: BTreeMap<BrokerId, Vec<PartitionState>>,
    /// One human-readable line per change, for stderr.
    pub events: Vec<String>,
    /// The replication transitions, for the event lines (`crate::events`), printed
    /// by the active controller as it carries the effects out.
    pub transitions: Vec<Event>,
    /// The replicated state changed.
    pub dirty: bool,
}

impl Effects {
    /// Both effects, in order (`later` wins for a partition pushed by both).
    pub fn merge(&mut self, later: Effects) {
        self.events.extend(later.events);
        self.transitions.extend(later.transitions);
        self.dirty |= later.dirty;
        for (broker, states) in later.pushes {
            for s in &states {
                self.push_to(s, [broker]);
            }
        }
    }

    /// Push `state` to its replicas.
    pub(super) fn push(&mut self, state: &PartitionState) {
        self.push_to(state, state.replicas.iter().copied());
    }

    /// Push `state` to `brokers` (its replicas, or ones it no longer names: the
    /// replicas a reassignment removed, which stop and delete theirs).
    pub(super) fn push_to(
        &mut self,
        state: &PartitionState,
        brokers: impl IntoIterator<Item = BrokerId>,
    ) {
        for r in brokers {
            let list = self.pushes.entry(r).or_default();
            match list
                .iter_mut()
                .find(|s| s.topic == state.topic && s.partition == state.partition)
            {
                Some(old) => *old = state.clone(),
                None => list.push(state.clone()),
            }
        }
    }
}
