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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::election::{Election, assign_replicas, elect};
use crate::error::{ApiError, Code};
use crate::protocol::{
    AlterPartition, BrokerId, BrokerInfo, ConfirmLeadership, CreateTopic, Heartbeat,
    HeartbeatResponse, Metadata, NO_LEADER, PartitionState, TopicMetadata, TopicPartition,
};

/// Milliseconds on the caller's monotonic clock.
pub type Millis = u64;

/// Longest topic name Kafka accepts.
const MAX_TOPIC_NAME: usize = 249;
/// A sanity bound on partitions per topic, so a typo cannot allocate millions.
const MAX_PARTITIONS: u32 = 10_000;

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
    /// The durable state changed: persist it before answering or pushing.
    pub dirty: bool,
}

impl Effects {
    /// Both effects, in order (`later` wins for a partition pushed by both).
    pub fn merge(&mut self, later: Effects) {
        self.events.extend(later.events);
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
        };
        let effects = Effects {
            events: vec![format!(
                "controller epoch {controller_epoch}: {} partitions, brokers {:?}",
                state.partitions.len(),
                broker_ids
            )],
            dirty: true,
            ..Effects::default()
        };
        Ok((state, effects))
    }

    /// What must survive a restart.
    pub fn durable(&self) -> Durable {
        Durable {
            controller_epoch: self.controller_epoch,
            broker_epochs: self
                .brokers
                .iter()
                .filter_map(|(&id, b)| b.broker_epoch.map(|e| (id, e)))
                .collect(),
            partitions: self.partitions.values().cloned().collect(),
        }
    }

    pub fn controller_epoch(&self) -> i32 {
        self.controller_epoch
    }

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

    /// `POST /v1/topics`: validate, assign replicas round-robin, elect the first
    /// replica not known to be dead.
    ///
    /// A new partition's logs are all empty, so every replica is trivially in sync:
    /// the ISR is every replica not known dead (live ones, and ones a freshly started
    /// controller has not heard from yet, which are declared dead and dropped from
    /// the ISR if they do not heartbeat within the grace period). If every replica
    /// is dead, the partition starts offline with the ISR = all replicas, so the
    /// first of them to come back leads it.
    pub fn create_topic(
        &mut self,
        req: &CreateTopic,
    ) -> Result<(TopicMetadata, Effects), ApiError> {
        validate_topic_name(&req.name)?;
        let n = self.brokers.len() as u32;
        if req.partitions == 0 || req.partitions > MAX_PARTITIONS {
            return Err(ApiError::invalid(format!(
                "partitions is {}; it must be between 1 and {MAX_PARTITIONS}",
                req.partitions
            )));
        }
        if req.replication_factor == 0 || req.replication_factor > n {
            return Err(ApiError::invalid(format!(
                "replication_factor is {}; it must be between 1 and the number of brokers ({n})",
                req.replication_factor
            )));
        }
        if req.min_insync_replicas == 0 || req.min_insync_replicas > req.replication_factor {
            return Err(ApiError::invalid(format!(
                "min_insync_replicas is {}; it must be between 1 and replication_factor ({})",
                req.min_insync_replicas, req.replication_factor
            )));
        }
        if self.partitions.keys().any(|tp| tp.topic == req.name) {
            return Err(ApiError::new(
                Code::TopicAlreadyExists,
                format!("topic `{}` already exists", req.name),
            ));
        }
        let ids: Vec<BrokerId> = self.brokers.keys().copied().collect();
        let mut effects = Effects::default();
        for p in 0..req.partitions {
            let replicas = assign_replicas(&ids, p, req.replication_factor);
            let candidates: Vec<BrokerId> = replicas
                .iter()
                .copied()
                .filter(|b| self.brokers[b].liveness != Liveness::Dead)
                .collect();
            let (leader, isr) = match candidates.first() {
                Some(&first) => (first, candidates),
                None => (NO_LEADER, replicas.clone()),
            };
            let state = PartitionState {
                topic: req.name.clone(),
                partition: p,
                leader,
                leader_epoch: 0,
                partition_epoch: 0,
                isr,
                replicas,
                min_insync_replicas: req.min_insync_replicas,
            };
            effects.events.push(format!(
                "partition {}-{p}: created, replicas {}, leader {leader}, isr {}",
                req.name,
                ids_str(&state.replicas),
                ids_str(&state.isr)
            ));
            effects.push(&state);
            self.partitions.insert(
                TopicPartition {
                    topic: req.name.clone(),
                    partition: p,
                },
                state,
            );
        }
        effects.dirty = true;
        let meta = self
            .topic_metadata(&req.name)
            .expect("the topic was just created with at least one partition");
        Ok((meta, effects))
    }

    /// `POST /internal/heartbeat`: register, detect restarts, keep the broker alive.
    pub fn heartbeat(
        &mut self,
        hb: &Heartbeat,
        now: Millis,
    ) -> Result<(HeartbeatResponse, Effects), ApiError> {
        let id = hb.broker_id;
        let Some(broker) = self.brokers.get(&id) else {
            return Err(ApiError::invalid(format!(
                "broker {id} is not one of the controller's brokers {:?}",
                self.brokers.keys().collect::<Vec<_>>()
            )));
        };
        let was = broker.liveness;
        let known_epoch = broker.broker_epoch;
        let mut effects = Effects::default();
        let mut started = was != Liveness::Alive;
        match known_epoch {
            None => {
                effects.events.push(format!(
                    "broker {id}: registered (broker epoch {})",
                    hb.broker_epoch
                ));
                effects.dirty = true;
            }
            Some(old) if old != hb.broker_epoch => {
                effects.events.push(format!(
                    "broker {id}: restarted (broker epoch {old} -> {}), leaving every ISR",
                    hb.broker_epoch
                ));
                self.set_liveness(id, Liveness::Dead);
                self.broker_failed(id, "restarted", &mut effects);
                effects.dirty = true;
                started = true;
            }
            Some(_) if was == Liveness::Dead => {
                effects.events.push(format!("broker {id}: alive again"));
            }
            Some(_) => {}
        }
        let b = self.brokers.get_mut(&id).expect("checked above");
        b.broker_epoch = Some(hb.broker_epoch);
        b.last_heartbeat = Some(now);
        b.liveness = Liveness::Alive;
        if started {
            self.elect_offline(&format!("broker {id} came back"), &mut effects);
        }
        let response = HeartbeatResponse {
            controller_epoch: self.controller_epoch,
            brokers: self.brokers_info(),
            partitions: self
                .partitions
                .values()
                .filter(|p| p.replicas.contains(&id))
                .cloned()
                .collect(),
        };
        Ok((response, effects))
    }

    /// The controller itself did not run from `from` to `now` (it was paused or starved
    /// of CPU): that time does not count against any broker's silence, since their
    /// heartbeats were waiting in the controller's own sockets. Without this, a paused
    /// controller would declare every broker dead the moment it resumes and churn
    /// every partition through needless elections.
    pub fn stalled(&mut self, from: Millis, now: Millis) -> Effects {
        let gap = now.saturating_sub(from);
        for b in self.brokers.values_mut() {
            if let Some(last) = b.last_heartbeat.as_mut() {
                *last = last.saturating_add(gap).min(now);
            }
        }
        self.grace_until = self.grace_until.max(from).saturating_add(gap);
        Effects {
            events: vec![format!(
                "controller: did not run for {gap} ms (paused?); brokers' silence meanwhile does not count"
            )],
            ..Effects::default()
        }
    }

    /// The clock moved: declare dead every broker silent past the session timeout, and
    /// every broker not heard from since start once the grace period is over.
    pub fn tick(&mut self, now: Millis) -> Effects {
        let mut effects = Effects::default();
        let timeout = self.config.session_timeout_ms;
        let mut dead = Vec::new();
        for (&id, b) in &self.brokers {
            let why = match (b.liveness, b.last_heartbeat) {
                (Liveness::Alive, Some(last)) if now.saturating_sub(last) > timeout => format!(
                    "no heartbeat for {} ms, session timeout {timeout} ms",
                    now - last
                ),
                (Liveness::Pending, _) if now >= self.grace_until => {
                    format!("no heartbeat within {timeout} ms of the controller's start")
                }
                _ => continue,
            };
            effects.events.push(format!("broker {id}: dead ({why})"));
            dead.push(id);
        }
        // All of them are dead before any election, so none is elected only to be
        // replaced a moment later (as Kafka handles a batch of dead brokers).
        for &id in &dead {
            self.set_liveness(id, Liveness::Dead);
        }
        for &id in &dead {
            self.broker_failed(id, "died", &mut effects);
        }
        if !dead.is_empty() && self.config.unclean_election {
            // A broker that was still pending is dead now: an unclean election that
            // waited for it may go ahead.
            self.elect_offline("no ISR member can come back any more", &mut effects);
        }
        effects
    }

    /// `POST /internal/alter-partition`: a leader proposes a new ISR.
    pub fn alter_partition(
        &mut self,
        req: &AlterPartition,
    ) -> Result<(PartitionState, Effects), ApiError> {
        let tp = TopicPartition {
            topic: req.topic.clone(),
            partition: req.partition,
        };
        let Some(p) = self.partitions.get(&tp) else {
            return Err(unknown_partition(&req.topic, req.partition));
        };
        let name = format!("{}-{}", p.topic, p.partition);
        let fenced = |why: String| {
            ApiError::new(
                Code::FencedLeaderEpoch,
                format!("AlterPartition for {name}: {why}"),
            )
            .with("leader", p.leader)
            .with("leader_epoch", p.leader_epoch)
            .with("partition_epoch", p.partition_epoch)
        };
        let known_epoch = self
            .brokers
            .get(&req.broker_id)
            .and_then(|b| b.broker_epoch);
        if known_epoch != Some(req.broker_epoch) {
            return Err(fenced(format!(
                "broker {} sent broker epoch {}, the controller knows {:?}",
                req.broker_id, req.broker_epoch, known_epoch
            )));
        }
        if req.broker_id != p.leader || req.leader_epoch != p.leader_epoch {
            return Err(fenced(format!(
                "broker {} with leader epoch {} is not the leader (leader {}, leader epoch {})",
                req.broker_id, req.leader_epoch, p.leader, p.leader_epoch
            )));
        }
        if req.partition_epoch != p.partition_epoch {
            return Err(fenced(format!(
                "partition epoch {} is stale (current {})",
                req.partition_epoch, p.partition_epoch
            )));
        }
        let mut seen = BTreeSet::new();
        for &b in &req.new_isr {
            if !p.replicas.contains(&b) {
                return Err(ApiError::invalid(format!(
                    "new_isr {:?} of {name}: broker {b} is not a replica {:?}",
                    req.new_isr, p.replicas
                )));
            }
            if !seen.insert(b) {
                return Err(ApiError::invalid(format!(
                    "new_isr {:?} of {name} names broker {b} twice",
                    req.new_isr
                )));
            }
            if !p.isr.contains(&b) && !self.is_alive(b) {
                return Err(ApiError::invalid(format!(
                    "new_isr {:?} of {name} adds broker {b}, which is not alive",
                    req.new_isr
                )));
            }
        }
        if !seen.contains(&p.leader) {
            return Err(ApiError::invalid(format!(
                "new_isr {:?} of {name} does not contain the leader {}",
                req.new_isr, p.leader
            )));
        }
        // Keep the ISR in replica order, so equal sets compare equal.
        let new_isr: Vec<BrokerId> = p
            .replicas
            .iter()
            .copied()
            .filter(|b| seen.contains(b))
            .collect();
        if new_isr == p.isr {
            return Ok((p.clone(), Effects::default()));
        }
        let mut next = p.clone();
        next.isr = new_isr;
        next.partition_epoch += 1;
        let mut effects = Effects::default();
        let why = format!("proposed by leader {}", req.broker_id);
        self.update(tp, next.clone(), &why, &mut effects);
        Ok((next, effects))
    }

    /// `POST /internal/confirm-leadership`: does the caller still lead with this epoch?
    pub fn confirm_leadership(&self, req: &ConfirmLeadership) -> Result<PartitionState, ApiError> {
        let Some(p) = self.partition(&req.topic, req.partition) else {
            return Err(unknown_partition(&req.topic, req.partition));
        };
        if p.leader == req.broker_id
            && p.leader_epoch == req.leader_epoch
            && self.is_alive(req.broker_id)
        {
            return Ok(p.clone());
        }
        Err(ApiError::new(
            Code::NotLeader,
            format!(
                "broker {} with leader epoch {} does not lead {}-{} (leader {}, leader epoch {})",
                req.broker_id, req.leader_epoch, p.topic, p.partition, p.leader, p.leader_epoch
            ),
        )
        .with("leader", p.leader)
        .with("leader_epoch", p.leader_epoch))
    }

    fn set_liveness(&mut self, id: BrokerId, liveness: Liveness) {
        if let Some(b) = self.brokers.get_mut(&id) {
            b.liveness = liveness;
        }
    }

    /// Broker `id` died or restarted: it leaves every ISR (never emptying one), and the
    /// partitions it led elect a new leader.
    fn broker_failed(&mut self, id: BrokerId, why: &str, effects: &mut Effects) {
        let affected: Vec<TopicPartition> = self
            .partitions
            .iter()
            .filter(|(_, p)| p.replicas.contains(&id))
            .map(|(tp, _)| tp.clone())
            .collect();
        for tp in affected {
            let p = &self.partitions[&tp];
            let mut isr: Vec<BrokerId> = p.isr.iter().copied().filter(|&b| b != id).collect();
            if isr.is_empty() {
                // Kafka keeps the last ISR member: it holds every committed record, so
                // the partition stays offline until it comes back (or unclean election).
                isr = p.isr.clone();
            }
            let mut next = p.clone();
            let mut why = format!("broker {id} {why}");
            if p.leader == id {
                next.leader_epoch += 1;
                next.partition_epoch += 1;
                let unclean = self.unclean_allowed(&isr);
                match elect(&p.replicas, &isr, |b| self.is_alive(b), unclean) {
                    Election::Clean(b) => {
                        next.leader = b;
                        next.isr = isr;
                    }
                    Election::Unclean(b) => {
                        next.leader = b;
                        next.isr = vec![b];
                        why.push_str(UNCLEAN_WARNING);
                    }
                    Election::Offline => {
                        next.leader = NO_LEADER;
                        next.isr = isr;
                        why.push_str(", no live ISR member: offline");
                    }
                }
            } else if isr != p.isr {
                next.isr = isr;
                next.partition_epoch += 1;
            } else {
                continue;
            }
            self.update(tp, next, &why, effects);
        }
    }

    /// Unclean election is a last resort: not while an ISR member may still come back
    /// within the grace period of a restarted controller, since it loses data.
    fn unclean_allowed(&self, isr: &[BrokerId]) -> bool {
        self.config.unclean_election
            && !isr
                .iter()
                .any(|b| self.brokers.get(b).map(|b| b.liveness) == Some(Liveness::Pending))
    }

    /// Offline partitions elect a leader again if an eligible replica is alive: after
    /// a broker came alive, or (unclean election) once the grace period is over.
    fn elect_offline(&mut self, why: &str, effects: &mut Effects) {
        let offline: Vec<TopicPartition> = self
            .partitions
            .iter()
            .filter(|(_, p)| p.leader == NO_LEADER)
            .map(|(tp, _)| tp.clone())
            .collect();
        for tp in offline {
            let p = &self.partitions[&tp];
            let mut next = p.clone();
            let mut why = why.to_string();
            let unclean = self.unclean_allowed(&p.isr);
            match elect(&p.replicas, &p.isr, |b| self.is_alive(b), unclean) {
                Election::Clean(b) => {
                    // Drop members known dead (possible only for a partition created
                    // while all its replicas were down); the new leader stays.
                    next.leader = b;
                    next.isr
                        .retain(|&r| self.brokers[&r].liveness != Liveness::Dead);
                }
                Election::Unclean(b) => {
                    next.leader = b;
                    next.isr = vec![b];
                    why.push_str(UNCLEAN_WARNING);
                }
                Election::Offline => continue,
            }
            next.leader_epoch += 1;
            next.partition_epoch += 1;
            self.update(tp, next, &why, effects);
        }
    }

    /// Replace a partition's state: log the change, push it to every replica, mark dirty.
    fn update(
        &mut self,
        tp: TopicPartition,
        next: PartitionState,
        why: &str,
        effects: &mut Effects,
    ) {
        let old = self.partitions.get(&tp);
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

const UNCLEAN_WARNING: &str = ", no live ISR member: UNCLEAN election of an out-of-sync replica, \
     records the old ISR committed beyond its log are lost";

fn unknown_partition(topic: &str, partition: u32) -> ApiError {
    ApiError::new(
        Code::UnknownTopicOrPartition,
        format!("the controller knows no partition {topic}-{partition}"),
    )
}

/// Kafka's rule: 1 to 249 of `[a-zA-Z0-9._-]`, and not `.` or `..`.
fn validate_topic_name(name: &str) -> Result<(), ApiError> {
    if name.is_empty() || name.len() > MAX_TOPIC_NAME {
        return Err(ApiError::invalid(format!(
            "topic name must be 1 to {MAX_TOPIC_NAME} characters long, got {}",
            name.len()
        )));
    }
    if name == "." || name == ".." {
        return Err(ApiError::invalid(format!(
            "topic name `{name}` is reserved"
        )));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(ApiError::invalid(format!(
            "topic name `{name}` contains {c:?}; use only ASCII letters, digits, '.', '_' and '-'"
        )));
    }
    Ok(())
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
#[path = "state_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "state_props.rs"]
mod props;
