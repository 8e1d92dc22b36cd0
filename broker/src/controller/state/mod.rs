//! The controller's decisions as a pure state machine: broker liveness, leader
//! election, ISR changes and fencing, with no sockets, clocks or files inside.
//!
//! The state is the Raft state machine of the controller quorum (`super::raft`): the
//! replicated part (brokers' epochs and liveness, partitions) changes only by
//! applying a [`Command`] taken from the Raft log, in log order, on every voter, so
//! every voter holds the same state and a new active controller carries on where the
//! last one stopped. Applying a command is deterministic: no clock, no randomness.
//!
//! What needs a clock is the active controller's alone: when each broker last
//! heartbeated ([`Sessions`], never replicated). From it the active controller
//! *decides* commands (a broker silent past the session timeout → [`Command::Expire`];
//! a heartbeat from a restarted or returning broker → [`Command::Heartbeat`]) and
//! proposes them to the quorum; only once committed do they change the state. A
//! heartbeat that changes nothing is answered from the state without a command.
//!
//! Each applied command returns its answer plus [`Effects`]: which partition states to
//! push to which broker, one log line per change and the transitions for the event
//! lines (`crate::events`); the active controller carries them out, so each event
//! line is printed once, by it, not by every voter applying the log. The unit tests drive the same steps, applying each command at once.
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
//! - A new active controller (a new Raft term: the controller epoch) gives every
//!   broker one session timeout to heartbeat before it counts silence against it.
//! - Every leader imbalance check interval the active controller hands each
//!   partition back to its preferred replica (the first) if that one is alive and in
//!   the ISR (`preferred`).
//!
//! - The admin tasks are commands too: topic creation and new partitions
//!   (`topics`), partition reassignment (`reassignment`, KIP-455: adding replicas
//!   catch up into the ISR before the removed ones leave, completed by the
//!   controller as it applies the ISR change that makes it possible), and broker
//!   decommission (`decommission`). Brokers the voters were not started with join
//!   by heartbeat, with the address other brokers reach them at.
//!
//! This file holds the state and its bookkeeping; the rules live beside it: `command`
//! (the log's commands and how each applies), `sessions` (the active controller's
//! clock), `topics` (creation, new partitions), `liveness` (heartbeats, joins,
//! deaths, restarts, elections), `isr` (AlterPartition, leadership confirmation),
//! `reassignment`, `decommission`, `producers` (InitProducerId).

mod command;
mod decommission;
mod effects;
mod isr;
mod liveness;
mod preferred;
mod producers;
mod reassignment;
mod sessions;
mod topics;

pub use command::{Applied, Command};
pub use effects::Effects;
pub use producers::ProducerId;
pub use sessions::Sessions;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::bugs::Bugs;
use crate::error::{ApiError, Code};
use crate::events::{Event, IsrCause};
use crate::protocol::{
    BrokerId, BrokerInfo, BrokerStatus, Metadata, NO_LEADER, PartitionState, TopicMetadata,
    TopicPartition,
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
    /// How often the active controller moves leaderships back to the preferred
    /// replicas (0: never).
    pub leader_imbalance_check_interval_ms: Millis,
    /// Planted bugs (`--bug`): `elect_out_of_isr` and `no_epoch_bump` are the
    /// controller's; the others are the nodes'.
    pub bugs: Bugs,
}

/// What the controller knows about a broker's liveness (replicated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Liveness {
    /// Never heard from: neither alive (not eligible as a new leader or ISR member)
    /// nor yet declared dead (the partitions it leads keep their leader) until the
    /// active controller's grace period is over.
    Pending,
    /// Heartbeating within the session timeout.
    Alive,
    /// Declared dead; its partitions have been moved away.
    Dead,
}

/// One broker as the controller sees it (replicated).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrokerState {
    /// The epoch of the process that registered (None: never registered).
    pub broker_epoch: Option<u64>,
    pub liveness: Liveness,
    /// The address it registered with (None: not given, or never heard from).
    #[serde(default)]
    pub address: Option<String>,
    /// Registered by its heartbeat alone: not one of the brokers the controller's
    /// voters were started with.
    #[serde(default)]
    pub joined: bool,
    /// Whether it takes replicas (decommission).
    #[serde(default)]
    pub status: BrokerStatus,
}

impl BrokerState {
    /// A broker never heard from.
    fn pending(joined: bool) -> BrokerState {
        BrokerState {
            broker_epoch: None,
            liveness: Liveness::Pending,
            address: None,
            joined,
            status: BrokerStatus::Active,
        }
    }
}

/// The replicated state, as a snapshot of the Raft log holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Durable {
    /// The term of the latest applied log entry.
    pub controller_epoch: i32,
    pub brokers: BTreeMap<BrokerId, BrokerState>,
    pub partitions: Vec<PartitionState>,
    /// Producer ids given out so far (InitProducerId): the next id is this one.
    #[serde(default)]
    pub producer_ids_allocated: u64,
}

/// The controller's whole state: the replicated part and the active controller's
/// sessions.
#[derive(Debug, Clone)]
pub struct ControllerState {
    config: Config,
    /// The brokers this process was started with (`--peers`, `--brokers`); others
    /// join by heartbeat.
    configured: Vec<BrokerId>,
    controller_epoch: i32,
    brokers: BTreeMap<BrokerId, BrokerState>,
    partitions: BTreeMap<TopicPartition, PartitionState>,
    /// Producer ids given out so far, replicated (`producers`).
    producer_ids_allocated: u64,
    /// When each broker last heartbeated: the active controller's alone.
    sessions: Sessions,
}

impl ControllerState {
    /// The state of a fresh quorum: every broker of `broker_ids` never heard from.
    pub fn new(config: Config, broker_ids: &[BrokerId]) -> ControllerState {
        let brokers = broker_ids
            .iter()
            .map(|&id| (id, BrokerState::pending(false)))
            .collect();
        let mut configured = broker_ids.to_vec();
        configured.sort_unstable();
        ControllerState {
            config,
            configured,
            controller_epoch: 0,
            brokers,
            partitions: BTreeMap::new(),
            producer_ids_allocated: 0,
            sessions: Sessions::default(),
        }
    }

    /// The state a snapshot holds. It must name every one of `broker_ids`, and no
    /// other broker but ones that joined by heartbeat, and be self-consistent; the
    /// sessions start afresh.
    pub fn restore(
        config: Config,
        broker_ids: &[BrokerId],
        durable: Durable,
    ) -> Result<ControllerState, String> {
        let listed: Vec<BrokerId> = durable.brokers.keys().copied().collect();
        let mut given = broker_ids.to_vec();
        given.sort_unstable();
        let missing = given.iter().any(|b| !durable.brokers.contains_key(b));
        let unknown = durable
            .brokers
            .iter()
            .any(|(b, s)| !s.joined && given.binary_search(b).is_err());
        if missing || unknown {
            return Err(format!(
                "the controller snapshot has brokers {listed:?}, this cluster has {given:?}"
            ));
        }
        let mut state = ControllerState::new(config, broker_ids);
        state.brokers = durable.brokers;
        state.controller_epoch = durable.controller_epoch;
        state.producer_ids_allocated = durable.producer_ids_allocated;
        for p in durable.partitions {
            check_persisted(&p, &state.brokers)?;
            let tp = TopicPartition {
                topic: p.topic.clone(),
                partition: p.partition,
            };
            if state.partitions.insert(tp, p).is_some() {
                return Err("the controller snapshot lists a partition twice".into());
            }
        }
        Ok(state)
    }

    /// Replace the replicated part with a snapshot's (same brokers and settings).
    pub fn reset_to(&mut self, durable: Durable) -> Result<(), String> {
        let ids = self.configured.clone();
        let sessions = std::mem::take(&mut self.sessions);
        *self = ControllerState::restore(self.config, &ids, durable)?;
        self.sessions = sessions;
        Ok(())
    }

    /// Forget the replicated part: the state of a fresh quorum (same brokers and
    /// settings), the sessions kept.
    pub fn reset_fresh(&mut self) {
        let sessions = std::mem::take(&mut self.sessions);
        *self = ControllerState::new(self.config, &self.configured.clone());
        self.sessions = sessions;
    }

    /// The replicated part, for a snapshot.
    pub fn durable(&self) -> Durable {
        Durable {
            controller_epoch: self.controller_epoch,
            brokers: self.brokers.clone(),
            partitions: self.partitions.values().cloned().collect(),
            producer_ids_allocated: self.producer_ids_allocated,
        }
    }

    /// A log entry of Raft term `epoch` was applied: the controller epoch is the
    /// latest term (it only grows).
    pub fn observe_epoch(&mut self, epoch: i32) {
        self.controller_epoch = self.controller_epoch.max(epoch);
    }

    /// This process became the active controller in term `epoch` at `now`, its state
    /// holding every entry committed before: brokers get one session timeout to
    /// heartbeat, and every partition is pushed to its replicas under the new epoch
    /// (LeaderAndIsr), so each broker learns the new controller and its view.
    pub fn take_over(&mut self, epoch: i32, now: Millis) -> Effects {
        self.observe_epoch(epoch);
        self.sessions = Sessions::starting(now, self.config.session_timeout_ms);
        let mut effects = Effects::default();
        for p in self.partitions.values() {
            effects.push(p);
        }
        effects.events.push(format!(
            "controller epoch {}: active controller, {} partitions, brokers {:?}",
            self.controller_epoch,
            self.partitions.len(),
            self.brokers.keys().collect::<Vec<_>>()
        ));
        effects.transitions.push(Event::ControllerEpoch {
            epoch: self.controller_epoch,
        });
        effects
    }

    /// The settings it runs with.
    pub fn config(&self) -> &Config {
        &self.config
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
            .iter()
            .map(|(&id, b)| BrokerInfo {
                id,
                alive: self.is_alive(id),
                address: b.address.clone(),
                status: b.status,
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
        if let Some(old) = old.filter(|old| old.replicas != next.replicas) {
            let _ = write!(line, ", replicas {}", ids_str(&next.replicas));
            if next.reassigning() {
                let _ = write!(
                    line,
                    " (adding {}, removing {})",
                    ids_str(&next.adding),
                    ids_str(&next.removing)
                );
            }
            let _ = write!(line, " (was {})", ids_str(&old.replicas));
        }
        let _ = write!(line, " ({why})");
        effects.events.push(line);
        effects.push(&next);
        // The replicas it no longer names stop and delete theirs on hearing it.
        if let Some(old) = old {
            let removed = old.replicas.iter().copied();
            effects.push_to(&next, removed.filter(|b| !next.replicas.contains(b)));
        }
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
            "the controller snapshot has partition {name} on broker {b}, which is not a broker of this cluster"
        ));
    }
    if p.replicas.is_empty()
        || p.isr.is_empty()
        || p.isr.iter().any(|b| !p.replicas.contains(b))
        || (p.leader != NO_LEADER && !p.isr.contains(&p.leader))
        || p.adding
            .iter()
            .chain(&p.removing)
            .any(|b| !p.replicas.contains(b))
        || p.adding.iter().any(|b| p.removing.contains(b))
    {
        return Err(format!(
            "the controller snapshot of partition {name} is inconsistent (leader {}, isr {:?}, replicas {:?})",
            p.leader, p.isr, p.replicas
        ));
    }
    Ok(())
}

fn ids_str(ids: &[BrokerId]) -> String {
    let parts: Vec<String> = ids.iter().map(|b| b.to_string()).collect();
    format!("[{}]", parts.join(","))
}

/// Test driver of a takeover: the state of `durable` (a fresh one if it names no
/// broker) taken over by a new active controller, one epoch up, at `now`.
#[cfg(test)]
pub fn start(
    config: Config,
    broker_ids: &[BrokerId],
    durable: Durable,
    now: Millis,
) -> Result<(ControllerState, Effects), String> {
    let mut state = match durable.brokers.is_empty() {
        true => ControllerState::new(config, broker_ids),
        false => ControllerState::restore(config, broker_ids, durable)?,
    };
    let effects = state.take_over(state.controller_epoch + 1, now);
    Ok((state, effects))
}

#[cfg(test)]
mod admin_tests;
#[cfg(test)]
mod props;
#[cfg(test)]
mod reassignment_tests;
#[cfg(test)]
mod tests;
