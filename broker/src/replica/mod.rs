//! The replica state machine of one partition on one broker: Kafka's replication rules
//! as a plain struct, with no sockets, clocks, tasks or files of its own.
//!
//! It owns the partition's log (anything implementing [`ReplicaLog`]: the node's
//! on-disk log, or an in-memory log in tests) and the leader-epoch cache, and decides
//! everything the replication protocol decides:
//! - the log end offset (LEO) and high watermark (HW): on the leader HW = min LEO over
//!   the ISR (plus replicas caught up within the lag time), and it only advances; on a
//!   follower HW = min(own LEO, the HW in the leader's FETCH answer) (`leader`,
//!   `follower`);
//! - the leader's view of each follower (LEO from its fetch offset, last caught-up
//!   time), and from it ISR shrink/expand proposals, which the caller sends to the
//!   controller (AlterPartition) and applies only once accepted (`isr`);
//! - the `acks=all` completion rule and the `min.insync.replicas` check before append;
//! - fencing by leader epoch, in both directions;
//! - where a follower truncates: [`Truncation::Hw`] (pre-0.11 Kafka: to the local HW)
//!   or [`Truncation::Epoch`] (KIP-101 with the KIP-279 fix, driven by
//!   OffsetsForLeaderEpoch answers the caller fetches from the leader) (`truncation`,
//!   over the leader-epoch cache of `epoch_cache`).
//!
//! Every event (a controller state, an append, a FETCH, an answer) is a method that
//! returns its answer plus [`Effects`]: what the node must do because of it (write the
//! epoch checkpoint, start or stop fetching, wake waiting requests). The node's shell
//! carries them out; the unit tests (`tests`) drive the rules step by step. Time is
//! passed in as milliseconds, so every rule is a deterministic unit test.

use std::collections::BTreeMap;
use std::io;

use crate::value::RecordValue;
use serde::Serialize;

use crate::bugs::Bugs;
use crate::log::Record;
use crate::protocol::{BrokerId, LeaderEpoch, NO_LEADER, PartitionState};

mod epoch_cache;
mod follower;
mod isr;
mod leader;
pub mod producers;
mod truncation;

#[cfg(test)]
pub(crate) mod mem;
#[cfg(test)]
mod reassignment_tests;
#[cfg(test)]
mod tests;

pub use epoch_cache::EpochCache;
pub use isr::{IsrChange, PendingIsr};
pub use leader::{AckStatus, Appended, FetchRequest, FollowerState};
pub use producers::{ProducerStates, SequenceError};
pub use truncation::Truncation;

/// What the replica needs from a partition's log.
pub trait ReplicaLog {
    /// The offset the next record gets (LEO).
    fn log_end_offset(&self) -> u64;
    /// The first offset still in the log.
    fn log_start_offset(&self) -> u64;
    /// Every offset below this is durable.
    fn flushed_offset(&self) -> u64;
    /// Leader append at LEO; returns the base offset.
    fn append(
        &mut self,
        leader_epoch: i32,
        entries: Vec<(Option<String>, RecordValue)>,
    ) -> io::Result<u64>;
    /// Follower append of fetched records (first offset = LEO, contiguous).
    fn append_replicated(&mut self, records: Vec<Record>) -> io::Result<()>;
    /// Up to `max_records` records from `offset`, stopping before `limit`.
    fn read(&self, offset: u64, max_records: usize, limit: u64) -> io::Result<Vec<Record>>;
    /// Remove every record at or above `offset`.
    fn truncate_to(&mut self, offset: u64) -> io::Result<()>;
}

/// This replica's role, as the controller last assigned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Leader,
    Follower,
    Offline,
}

/// What [`Replica::apply_state`] did with a controller's partition state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// Not newer than what we have (stale controller message).
    Ignored,
    BecameLeader,
    BecameFollower {
        leader: BrokerId,
    },
    BecameOffline,
    /// Same leader and leader epoch, new ISR (partition epoch bumped).
    IsrUpdated,
}

/// Why the replica refused a request.
#[derive(Debug)]
pub enum ReplicaError {
    /// This replica does not lead (the hint: who does, or -1).
    NotLeader {
        leader: BrokerId,
    },
    /// The request's leader epoch (`requested`) is not ours (`current`).
    FencedLeaderEpoch {
        requested: LeaderEpoch,
        current: LeaderEpoch,
    },
    /// acks=all with fewer than min.insync.replicas in the ISR; nothing was appended.
    NotEnoughReplicas {
        isr: Vec<BrokerId>,
        min_insync: u32,
    },
    /// The fetch offset is past the leader's LEO.
    OffsetOutOfRange {
        log_end_offset: u64,
    },
    /// The requester is not a replica of this partition.
    UnknownReplica {
        replica: BrokerId,
    },
    /// An idempotent producer's batch out of sequence, or from a fenced epoch;
    /// nothing was appended. `leader_epoch`: the epoch this replica led as it
    /// refused (a client tells a deposed leader's refusal from its successor's).
    Sequence {
        error: producers::SequenceError,
        leader_epoch: LeaderEpoch,
    },
    Io(io::Error),
}

impl From<io::Error> for ReplicaError {
    fn from(e: io::Error) -> Self {
        ReplicaError::Io(e)
    }
}

/// What the node must do after a replica event. The replica decides; the node's shell
/// carries it out. Effects hold also when the event's answer is an error: a storage
/// error can strike after part of the event took place (records that reached the log
/// and then failed to flush), and what did take place must still be acted on.
#[must_use = "the node must carry out a replica's effects"]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects {
    /// The leader-epoch cache changed: write these entries to its checkpoint now (as
    /// Kafka flushes its leader-epoch file at every change).
    pub checkpoint_epochs: Option<Vec<(LeaderEpoch, u64)>>,
    /// The high watermark moved.
    pub hw_moved: bool,
    /// Requests waiting on this partition (purgatory) must look again: the HW, the
    /// role, the leader epoch, the ISR or (by a cut) the log changed.
    pub wake: bool,
    /// The log grew (and nothing else a waiter looks at changed, unless `wake`
    /// says so): only the FETCHes waiting for records must look again, not the
    /// produces waiting for the HW.
    pub appended: bool,
    /// Start or stop this replica's follower fetch task.
    pub fetch_task: Option<FetchTask>,
    /// Storage errors the replica worked around (the work is retried later), for the
    /// node's log.
    pub warnings: Vec<String>,
    /// The cuts of this follower's log, for the node's event lines.
    pub truncations: Vec<Truncated>,
}

/// One cut of a follower's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncated {
    /// The new LEO: every record at or above it was removed.
    pub to: u64,
    /// How many records were removed (0: the cut only dropped epochs, or settled that
    /// nothing had to go).
    pub records: u64,
    /// The rule the follower runs.
    pub rule: Truncation,
}

/// A change to the follower fetch task of a replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchTask {
    /// Fetch from `leader` in `leader_epoch` (replacing any task running).
    Start {
        leader: BrokerId,
        leader_epoch: LeaderEpoch,
    },
    /// Stop fetching.
    Stop,
}

impl Effects {
    /// The epoch cache is now `cache`.
    fn epochs_changed(&mut self, cache: &EpochCache) {
        self.checkpoint_epochs = Some(cache.entries().to_vec());
    }
}

/// One partition's replica on one broker.
pub struct Replica<L> {
    id: BrokerId,
    log: L,
    epochs: EpochCache,
    high_watermark: u64,
    /// What the controller last told us (None: nothing yet since start).
    state: Option<PartitionState>,
    role: Role,
    followers: BTreeMap<BrokerId, FollowerState>,
    /// An ISR we proposed to the controller and have no definite answer for yet. It
    /// is kept until the controller's answer, or a newer partition state, replaces it:
    /// a lost answer may hide an accepted expansion (KIP-497/KIP-841's maximal ISR).
    pending_isr: Option<PendingIsr>,
    /// A follower that still has to settle its log with the leader, and by which rule
    /// (None: settled, or not a follower).
    truncating: Option<Truncation>,
    /// The truncation rule of the last time this replica became follower.
    rule: Truncation,
    /// The LEO when this replica became leader (its epoch's start offset).
    leader_epoch_start: u64,
    lag_time_max_ms: u64,
    /// The idempotent producers' state, a function of the log (`producers`).
    producers: ProducerStates,
    /// Planted bugs (`--bug`; none by default).
    bugs: Bugs,
}

impl<L: ReplicaLog> Replica<L> {
    /// Open a replica over a recovered log. The epoch cache is rebuilt from the log's
    /// records (the source of truth) plus a checkpointed epoch that started at LEO
    /// without records yet; the HW is the checkpointed one, capped at LEO. The effects
    /// checkpoint the rebuilt cache if it differs from the checkpointed one.
    ///
    /// A producer's batch the log holds only the start of (its append torn by a
    /// crash) is cut first, as Kafka's recovery drops a batch that does not read back
    /// whole: it was never acknowledged, and kept, its retry could be neither a
    /// duplicate nor the next batch.
    pub fn open(
        id: BrokerId,
        mut log: L,
        checkpointed_epochs: &[(LeaderEpoch, u64)],
        checkpointed_hw: u64,
        lag_time_max_ms: u64,
    ) -> io::Result<(Self, Effects)> {
        if let Some(start) = producers::torn_batch_start(&log)? {
            log.truncate_to(start)?;
        }
        let mut epochs = EpochCache::new();
        let mut producers = ProducerStates::default();
        let leo = log.log_end_offset();
        let mut offset = log.log_start_offset();
        while offset < leo {
            let batch = log.read(offset, 4096, leo)?;
            let Some(last) = batch.last() else { break };
            offset = last.offset + 1;
            for r in &batch {
                epochs.assign(r.leader_epoch, r.offset);
                producers.observe(r);
            }
        }
        let last_logged = epochs.latest_epoch().unwrap_or(-1);
        for &(e, s) in checkpointed_epochs {
            if e > last_logged && s == leo {
                epochs.assign(e, s);
            }
        }
        let mut effects = Effects::default();
        if epochs.entries() != checkpointed_epochs {
            effects.epochs_changed(&epochs);
        }
        let replica = Replica {
            id,
            high_watermark: checkpointed_hw.min(leo),
            log,
            epochs,
            state: None,
            role: Role::Offline,
            followers: BTreeMap::new(),
            pending_isr: None,
            truncating: None,
            rule: Truncation::Epoch,
            leader_epoch_start: 0,
            lag_time_max_ms,
            producers,
            bugs: Bugs::default(),
        };
        Ok((replica, effects))
    }

    /// Plant bugs (`broker node --bug`) in this replica's rules.
    pub fn plant(&mut self, bugs: Bugs) {
        self.bugs = bugs;
    }

    pub fn role(&self) -> Role {
        self.role
    }
    pub fn log(&self) -> &L {
        &self.log
    }
    /// The log, for what is not a replication event (flushing it).
    pub fn log_mut(&mut self) -> &mut L {
        &mut self.log
    }
    pub fn log_end_offset(&self) -> u64 {
        self.log.log_end_offset()
    }
    pub fn high_watermark(&self) -> u64 {
        self.high_watermark
    }
    pub fn epochs(&self) -> &EpochCache {
        &self.epochs
    }
    /// The controller's last word on this partition.
    pub fn state(&self) -> Option<&PartitionState> {
        self.state.as_ref()
    }
    pub fn leader_epoch(&self) -> LeaderEpoch {
        self.state.as_ref().map_or(-1, |s| s.leader_epoch)
    }
    pub fn leader(&self) -> BrokerId {
        self.state.as_ref().map_or(NO_LEADER, |s| s.leader)
    }
    pub fn isr(&self) -> &[BrokerId] {
        self.state.as_ref().map_or(&[], |s| &s.isr)
    }
    pub fn follower(&self, id: BrokerId) -> Option<&FollowerState> {
        self.followers.get(&id)
    }
    /// Rebuild the producers' state from the log (after a truncation).
    fn rebuild_producers(&mut self) -> io::Result<()> {
        let mut producers = ProducerStates::default();
        let leo = self.log.log_end_offset();
        let mut offset = self.log.log_start_offset();
        while offset < leo {
            let batch = self.log.read(offset, 4096, leo)?;
            let Some(last) = batch.last() else { break };
            offset = last.offset + 1;
            batch.iter().for_each(|r| producers.observe(r));
        }
        self.producers = producers;
        Ok(())
    }

    /// The LEO at which the current leader epoch started (meaningful on the leader).
    pub fn leader_epoch_start_offset(&self) -> u64 {
        self.leader_epoch_start
    }

    /// Apply a partition state from the controller (LeaderAndIsr push, heartbeat answer
    /// or AlterPartition answer). States not newer than ours — by leader epoch, then
    /// partition epoch — are ignored. A new leader epoch makes this replica leader,
    /// follower (truncating per `truncation`) or offline.
    ///
    /// Under [`Truncation::Hw`] the follower truncates at once; if its log refuses,
    /// the truncation stays pending (a warning says why) and the fetch task's first
    /// step retries it (see [`truncation_epoch`](Self::truncation_epoch)).
    pub fn apply_state(
        &mut self,
        state: PartitionState,
        truncation: Truncation,
        now_ms: u64,
    ) -> (Transition, Effects) {
        let mut fx = Effects::default();
        if let Some(cur) = &self.state {
            if !state.newer_than(cur) {
                return (Transition::Ignored, fx);
            }
            let same_leadership =
                state.leader_epoch == cur.leader_epoch && state.leader == cur.leader;
            if same_leadership && state.replicas.contains(&self.id) {
                // A member the controller dropped (it died, restarted or lagged) has to
                // show its progress again with a fetch before it is proposed back: a
                // restarted process may have lost records its predecessor reported.
                for r in cur.isr.iter().filter(|r| !state.isr.contains(r)) {
                    if let Some(f) = self.followers.get_mut(r) {
                        f.forget_progress();
                    }
                }
                self.state = Some(state);
                if self.role == Role::Leader {
                    self.pending_isr = None;
                    self.follow_replicas();
                    self.advance_hw(now_ms, &mut fx);
                }
                fx.wake = true;
                return (Transition::IsrUpdated, fx);
            }
        }
        let leader = state.leader;
        let epoch = state.leader_epoch;
        let is_replica = state.replicas.contains(&self.id);
        self.state = Some(state);
        self.pending_isr = None;
        self.followers.clear();
        fx.wake = true;
        let transition = if leader == self.id {
            self.become_leader(epoch, now_ms, &mut fx);
            fx.fetch_task = Some(FetchTask::Stop);
            Transition::BecameLeader
        } else if leader != NO_LEADER && is_replica {
            self.become_follower(truncation, &mut fx);
            fx.fetch_task = Some(FetchTask::Start {
                leader,
                leader_epoch: epoch,
            });
            Transition::BecameFollower { leader }
        } else {
            self.role = Role::Offline;
            self.truncating = None;
            fx.fetch_task = Some(FetchTask::Stop);
            Transition::BecameOffline
        };
        (transition, fx)
    }

    /// Set the HW, noting a move.
    fn set_high_watermark(&mut self, hw: u64, fx: &mut Effects) {
        if hw != self.high_watermark {
            self.high_watermark = hw;
            fx.hw_moved = true;
            fx.wake = true;
        }
    }

    /// Record in the epoch cache that `epoch` starts at `start_offset`.
    fn assign_epoch(&mut self, epoch: LeaderEpoch, start_offset: u64, fx: &mut Effects) {
        if self.epochs.assign(epoch, start_offset) {
            fx.epochs_changed(&self.epochs);
        }
    }
}
