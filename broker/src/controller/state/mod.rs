//! The controller's decisions as a pure state machine: broker liveness, leader
//! election, ISR changes and fencing, with no sockets, clocks or files inside.
//!
//! Time comes in as an argument (milliseconds on the caller's monotonic clock); each
//! method takes one event (a heartbeat, a clock tick, a proposal) and returns the
//! answer plus [`Effects`]: which partition states to push to which broker, one log
//! line per change, and whether the durable part changed and must be persisted before
//! anyone acts on it. The async shell (`service.rs`) feeds it and carries out the
//! effects; the unit tests drive it step by step.
//!
//! The rules are Kafka's (ZooKeeper controller, and KRaft where it refined them):
//! - A broker registers with its first heartbeat. A heartbeat with a different broker
//!   epoch means the process restarted: it is handled as a failure followed by a
//!   startup, since a restarted broker may have lost unflushed records and must earn
//!   its way back into every ISR through its leader.
//! - A broker silent for longer than the session timeout is dead. Partitions it led
//!   elect the first replica (in replica order) that is alive and in the ISR, with the
//!   leader epoch and partition epoch bumped; partitions it followed drop it from the
//!   ISR (partition epoch bumped). The ISR never becomes empty: when its last member
//!   dies it stays as the sole member and the partition goes offline (leader -1)
//!   until that broker, or, with unclean election, any replica, comes back.
//! - ISR changes proposed by a leader (AlterPartition) are accepted only with the
//!   current leader epoch and partition epoch, and may only add live brokers (KIP-841).
//!
//! This file holds the state and its bookkeeping; the rules live beside it: `topics`
//! (creation), `liveness` (heartbeats, deaths, restarts, elections), `isr`
//! (AlterPartition, leadership confirmation), `producers` (InitProducerId).

mod isr;
mod liveness;
mod producers;
mod topics;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::error::{ApiError, Code};
use crate::events::{Event, IsrCause};
use crate::protocol::{
    BrokerId, BrokerInfo, Metadata, NO_LEADER, PartitionState, TopicMetadata, TopicPartition,
};

/// Milliseconds on the caller's monotonic clock.
pub type Millis = u64;

/// The controller's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// A broker silent for longer than this is dead.
    pub session_timeout_ms: Millis,
    /// Elect an out-of-ISR replica when no ISR member is alive (may lose committed data).
    pub unclean_election: bool,
}

/// What the controller knows about a broker's liveness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// Not heard from since this controller started, still within the start-up grace
    /// period: neither alive (not eligible as a new leader or ISR member) nor yet
    /// declared dead (the partitions it leads keep their leader).
    Pending,
    /// Heartbeating within the session timeout.
    Alive,
    /// Declared dead; its partitions have been moved away.
    Dead,
}

/// One broker as the controller sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerState {
    /// The epoch of the process that registered (None: never registered).
    pub broker_epoch: Option<u64>,
    /// When its last heartbeat arrived (None: not since this controller started).
    pub last_heartbeat: Option<Millis>,
    pub liveness: Liveness,
    /// When it registered, restarted or came back from the dead (None: not since this
    /// controller started; a broker merely confirming it lives after a controller
    /// restart did not come back).
    pub alive_since: Option<Millis>,
}

/// The part of the state that survives controller restarts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Durable {
    pub controller_epoch: i32,
    /// The last registered epoch of each broker, so a broker that restarted while the
    /// controller was down is still recognised as restarted.
    pub broker_epochs: BTreeMap<BrokerId, u64>,
    pub partitions: Vec<PartitionState>,
}

/// What the shell must do after an event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects {
    /// Partition states to push (LeaderAndIsr) to each broker: the changed partitions
    /// it replicates, latest state only.
    pub pushes: BTreeMap<BrokerId, Vec<PartitionState>>,
    /// One human-readable line per change, for stderr.
    pub events: Vec<String>,
    /// The replication transitions, for the event lines (`crate::events`).
    pub transitions: Vec<Event>,
    /// The durable state changed: persist it before answering or pushing.
    pub dirty: bool,
}

impl Effects {
    /// Both effects, in order (`later` wins for a partition pushed by both).
    pub fn merge(&mut self, later: Effects) {
        self.events.extend(later.events);
        self.transitions.extend(later.transitions);
        self.dirty |= later.dirty;
        for states in later.pushes.into_values() {
            for s in &states {
                self.push(s);
            }
        }
    }

    fn push(&mut self, state: &PartitionState) {
        for &r in &state.replicas {
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

/// The controller's whole state.
#[derive(Debug, Clone)]
pub struct ControllerState {
    config: Config,
    controller_epoch: i32,
    brokers: BTreeMap<BrokerId, BrokerState>,
    partitions: BTreeMap<TopicPartition, PartitionState>,
    /// Brokers not heard from by then are declared dead.
    grace_until: Millis,
    /// Producer ids this incarnation gave out (`producers`).
    producers_allocated: u32,
}

impl ControllerState {
    /// Start a controller incarnation from what the previous one persisted (default
    /// for a fresh data dir): the controller epoch is bumped, so brokers can fence
    /// pushes from an older incarnation, and the result must be persisted at once.
    ///
    /// Every broker starts [`Liveness::Pending`]: a restarted controller does not know
    /// who is alive, and declaring everyone dead at once would move every partition
    /// away from its leader (or take it offline) for nothing. Brokers get one session
    /// timeout to heartbeat, the same time a live broker may stay silent, before the
    /// usual failure handling applies to them.
    pub fn start(
        config: Config,
        broker_ids: &[BrokerId],
        durable: Durable,
        now: Millis,
    ) -> Result<(ControllerState, Effects), String> {
        let mut brokers = BTreeMap::new();
        for &id in broker_ids {
            brokers.insert(
                id,
                BrokerState {
                    broker_epoch: durable.broker_epochs.get(&id).copied(),
                    last_heartbeat: None,
                    liveness: Liveness::Pending,
                    alive_since: None,
                },
            );
        }
        let mut partitions = BTreeMap::new();
        for p in durable.partitions {
            check_persisted(&p, &brokers)?;
            let tp = TopicPartition {
                topic: p.topic.clone(),
                partition: p.partition,
            };
            if partitions.insert(tp, p).is_some() {
                return Err("the controller state lists a partition twice".into());
            }
        }
        let controller_epoch = durable
            .controller_epoch
            .checked_add(1)
            .ok_or("the controller epoch is exhausted")?;
        let state = ControllerState {
            config,
            controller_epoch,
            brokers,
            partitions,
            grace_until: now.saturating_add(config.session_timeout_ms),
            producers_allocated: 0,
        };
        let effects = Effects {
            events: vec![format!(
                "controller epoch {controller_epoch}: {} partitions, brokers {:?}",
                state.partitions.len(),
                broker_ids
            )],
            transitions: vec![Event::ControllerEpoch {
                epoch: controller_epoch,
            }],
            dirty: true,
            ..Effects::default()
        };
        Ok((state, effects))
    }

    /// What must survive a restart.
    pub fn durable(&self) -> Durable {
        Durable {
            controller_epoch: self.controller_epoch,
            broker_epochs: self.broker_epochs(),
            partitions: self.partitions.values().cloned().collect(),
        }
    }

    /// The broker epoch of each registered broker (pushes name their target's).
    pub fn broker_epochs(&self) -> BTreeMap<BrokerId, u64> {
        self.brokers
            .iter()
            .filter_map(|(&id, b)| b.broker_epoch.map(|e| (id, e)))
            .collect()
    }

    pub fn controller_epoch(&self) -> i32 {
        self.controller_epoch
    }

    #[cfg(test)]
    pub fn broker(&self, id: BrokerId) -> Option<&BrokerState> {
        self.brokers.get(&id)
    }

    pub fn partition(&self, topic: &str, partition: u32) -> Option<&PartitionState> {
        self.partitions.get(&TopicPartition {
            topic: topic.to_string(),
            partition,
        })
    }

    /// Every broker, alive or not, by id.
    pub fn brokers_info(&self) -> Vec<BrokerInfo> {
        self.brokers
            .keys()
            .map(|&id| BrokerInfo {
                id,
                alive: self.is_alive(id),
            })
            .collect()
    }

    /// `GET /v1/metadata`.
    pub fn metadata(&self) -> Metadata {
        Metadata::from_states(
            self.controller_epoch,
            self.brokers_info(),
            self.partitions.values(),
        )
    }

    /// One topic as `/v1/metadata` shows it.
    pub fn topic_metadata(&self, name: &str) -> Option<TopicMetadata> {
        let states = self.partitions.values().filter(|p| p.topic == name);
        Metadata::from_states(self.controller_epoch, Vec::new(), states)
            .topics
            .pop()
    }

    fn is_alive(&self, id: BrokerId) -> bool {
        self.brokers
            .get(&id)
            .is_some_and(|b| b.liveness == Liveness::Alive)
    }

    fn set_liveness(&mut self, id: BrokerId, liveness: Liveness) {
        if let Some(b) = self.brokers.get_mut(&id) {
            b.liveness = liveness;
        }
    }

    /// Replace a partition's state: log the change (and its ISR change, decided `by`
    /// the controller or proposed by the leader), push it to every replica, mark dirty.
    fn update(
        &mut self,
        tp: TopicPartition,
        next: PartitionState,
        why: &str,
        by: ChangedBy,
        effects: &mut Effects,
    ) {
        let old = self.partitions.get(&tp);
        if let Some(old) = old {
            let (shrink, expand) = match by {
                ChangedBy::Controller => (IsrCause::Controller, IsrCause::Controller),
                ChangedBy::Leader => (IsrCause::Lag, IsrCause::CaughtUp),
            };
            let changes = Event::isr_changes(&tp, &old.isr, &next.isr, shrink, expand);
            effects.transitions.extend(changes);
        }
        let mut line = format!("partition {}-{}: ", next.topic, next.partition);
        match old {
            Some(old) if old.leader != next.leader => {
                let _ = write!(line, "leader {} -> {}, ", old.leader, next.leader);
            }
            _ => {
                let _ = write!(line, "leader {}, ", next.leader);
            }
        }
        let _ = write!(
            line,
            "leader epoch {}, partition epoch {}, isr {}",
            next.leader_epoch,
            next.partition_epoch,
            ids_str(&next.isr)
        );
        if let Some(old) = old.filter(|old| old.isr != next.isr) {
            let _ = write!(line, " (was {})", ids_str(&old.isr));
        }
        let _ = write!(line, " ({why})");
        effects.events.push(line);
        effects.push(&next);
        effects.dirty = true;
        self.partitions.insert(tp, next);
    }
}

/// Who decided a partition's change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChangedBy {
    /// The controller: a broker died or restarted, or an election.
    Controller,
    /// The leader proposed it (AlterPartition): lag shrinks, caught-up expands.
    Leader,
}

fn unknown_partition(topic: &str, partition: u32) -> ApiError {
    ApiError::new(
        Code::UnknownTopicOrPartition,
        format!("the controller knows no partition {topic}-{partition}"),
    )
}

/// A persisted partition must only name configured brokers and be self-consistent.
fn check_persisted(
    p: &PartitionState,
    brokers: &BTreeMap<BrokerId, BrokerState>,
) -> Result<(), String> {
    let name = format!("{}-{}", p.topic, p.partition);
    if let Some(b) = p.replicas.iter().find(|b| !brokers.contains_key(b)) {
        return Err(format!(
            "the controller state has partition {name} on broker {b}, which --brokers does not list"
        ));
    }
    if p.replicas.is_empty()
        || p.isr.is_empty()
        || p.isr.iter().any(|b| !p.replicas.contains(b))
        || (p.leader != NO_LEADER && !p.isr.contains(&p.leader))
    {
        return Err(format!(
            "the controller state of partition {name} is inconsistent (leader {}, isr {:?}, replicas {:?})",
            p.leader, p.isr, p.replicas
        ));
    }
    Ok(())
}

fn ids_str(ids: &[BrokerId]) -> String {
    let parts: Vec<String> = ids.iter().map(|b| b.to_string()).collect();
    format!("[{}]", parts.join(","))
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
