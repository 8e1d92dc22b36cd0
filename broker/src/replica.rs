//! The replica state machine of one partition on one broker: Kafka's replication rules
//! as a plain struct, with no sockets, clocks or files of its own.
//!
//! It owns the partition's log (anything implementing [`ReplicaLog`]: the real
//! [`Log`](crate::log::Log), or an in-memory log in tests) and the leader-epoch cache,
//! and decides everything the replication protocol decides:
//! - the log end offset (LEO) and high watermark (HW): on the leader HW = min LEO over
//!   the ISR (plus replicas caught up within the lag time), and it only advances; on a
//!   follower HW = min(own LEO, the HW in the leader's FETCH answer);
//! - the leader's view of each follower (LEO from its fetch offset, last caught-up
//!   time), and from it ISR shrink/expand proposals, which the caller sends to the
//!   controller (AlterPartition) and applies only once accepted;
//! - the `acks=all` completion rule and the `min.insync.replicas` check before append;
//! - fencing by leader epoch, in both directions;
//! - where a follower truncates: `--truncation hw` (pre-0.11 Kafka: to the local HW) or
//!   `--truncation epoch` (KIP-101 with the KIP-279 fix, driven by OffsetsForLeaderEpoch
//!   answers the caller fetches from the leader).
//!
//! Time is passed in as milliseconds, so every rule is a deterministic unit test.

use std::collections::BTreeMap;
use std::io;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bugs::Bugs;
use crate::cli::Truncation;
use crate::log::{Log, Record};
use crate::protocol::{BrokerId, LeaderEpoch, NO_LEADER, PartitionEpoch, PartitionState};

mod epoch_cache;
pub use epoch_cache::EpochCache;

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
        entries: Vec<(Option<String>, Value)>,
    ) -> io::Result<u64>;
    /// Follower append of fetched records (first offset = LEO, contiguous).
    fn append_replicated(&mut self, records: Vec<Record>) -> io::Result<()>;
    /// Up to `max_records` records from `offset`, stopping before `limit`.
    fn read(&self, offset: u64, max_records: usize, limit: u64) -> io::Result<Vec<Record>>;
    /// Remove every record at or above `offset`.
    fn truncate_to(&mut self, offset: u64) -> io::Result<()>;
    /// Apply the time-based flush policy.
    fn flush_if_due(&mut self, _now: Instant) -> io::Result<()> {
        Ok(())
    }
}

impl ReplicaLog for Log {
    fn log_end_offset(&self) -> u64 {
        Log::log_end_offset(self)
    }
    fn log_start_offset(&self) -> u64 {
        Log::log_start_offset(self)
    }
    fn flushed_offset(&self) -> u64 {
        Log::flushed_offset(self)
    }
    fn append(
        &mut self,
        leader_epoch: i32,
        entries: Vec<(Option<String>, Value)>,
    ) -> io::Result<u64> {
        Log::append(self, leader_epoch, entries)
    }
    fn append_replicated(&mut self, records: Vec<Record>) -> io::Result<()> {
        Log::append_replicated(self, records)
    }
    fn read(&self, offset: u64, max_records: usize, limit: u64) -> io::Result<Vec<Record>> {
        Log::read(self, offset, max_records, limit)
    }
    fn truncate_to(&mut self, offset: u64) -> io::Result<()> {
        Log::truncate_to(self, offset)
    }
    fn flush_if_due(&mut self, now: Instant) -> io::Result<()> {
        Log::flush_if_due(self, now)
    }
}

/// This replica's role, as the controller last assigned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Leader,
    Follower,
    Offline,
}

/// What the leader knows about one follower.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FollowerState {
    /// The broker epoch of the process that fetched last (KIP-903; None: not known).
    /// A fetch from another process of the same broker starts the state afresh: its
    /// log may be shorter than what the previous process reported.
    pub broker_epoch: Option<u64>,
    /// The follower's LEO, learnt from its last fetch offset (None: not fetched yet
    /// under this leader epoch).
    pub log_end_offset: Option<u64>,
    /// The last time the follower was caught up to the leader's LEO.
    pub last_caught_up_ms: u64,
    /// Whether the HW waits for it even outside the ISR (it is catching up to join).
    /// False from the moment the controller drops it from the ISR (it died or
    /// restarted) until it is caught up again, as Kafka skips fenced brokers.
    isr_eligible: bool,
    last_fetch_ms: u64,
    last_fetch_leader_leo: u64,
}

impl FollowerState {
    /// Forget everything learnt from the follower's fetches: it must fetch again before
    /// the HW waits for it or the leader proposes it for the ISR.
    fn forget_progress(&mut self) {
        *self = FollowerState {
            broker_epoch: self.broker_epoch,
            ..FollowerState::default()
        };
    }
}

/// An ISR change this leader sent to the controller (AlterPartition) and has no
/// definite answer for, with the epochs it was proposed under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingIsr {
    pub leader_epoch: LeaderEpoch,
    pub partition_epoch: PartitionEpoch,
    pub isr: Vec<BrokerId>,
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

/// A leader append's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub base_offset: u64,
    /// One past the last appended record: acks=all completes once HW reaches it.
    pub end_offset: u64,
    pub leader_epoch: LeaderEpoch,
}

/// Why the replica refused a request.
#[derive(Debug)]
pub enum ReplicaError {
    /// This replica does not lead (the hint: who does, or -1).
    NotLeader {
        leader: BrokerId,
    },
    /// The request's leader epoch is not ours (`current` is ours).
    FencedLeaderEpoch {
        current: LeaderEpoch,
    },
    /// acks=all with fewer than min.insync.replicas in the ISR; nothing was appended.
    NotEnoughReplicas {
        isr: Vec<BrokerId>,
    },
    /// The fetch offset is past the leader's LEO.
    OffsetOutOfRange {
        log_end_offset: u64,
    },
    /// The requester is not a replica of this partition.
    UnknownReplica {
        replica: BrokerId,
    },
    Io(io::Error),
}

impl From<io::Error> for ReplicaError {
    fn from(e: io::Error) -> Self {
        ReplicaError::Io(e)
    }
}

/// A follower's FETCH, as the leader sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchRequest {
    pub replica_id: BrokerId,
    /// The fetching process's broker epoch (0: not given).
    pub broker_epoch: u64,
    pub fetch_offset: u64,
    pub leader_epoch: LeaderEpoch,
    pub max_records: usize,
}

/// The leader's FETCH answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FetchResponse {
    pub leader_epoch: LeaderEpoch,
    pub high_watermark: u64,
    pub log_end_offset: u64,
    pub records: Vec<Record>,
}

/// Where an acks=all write stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckStatus {
    /// HW is still below the record.
    Pending,
    /// HW covers it, with at least min.insync.replicas in the ISR.
    Committed,
    /// HW covers it but the ISR shrank below min.insync.replicas meanwhile.
    CommittedBelowMinIsr,
    /// This replica no longer leads in the epoch the record was written in: its fate
    /// is unknown here.
    LeadershipLost,
}

/// One partition's replica on one broker.
pub struct Replica<L> {
    id: BrokerId,
    log: L,
    epochs: EpochCache,
    epochs_dirty: bool,
    high_watermark: u64,
    /// What the controller last told us (None: nothing yet since start).
    state: Option<PartitionState>,
    role: Role,
    followers: BTreeMap<BrokerId, FollowerState>,
    /// An ISR we proposed to the controller and have no definite answer for yet. It
    /// is kept until the controller's answer, or a newer partition state, replaces it:
    /// a lost answer may hide an accepted expansion (KIP-497/KIP-841's maximal ISR).
    pending_isr: Option<PendingIsr>,
    /// A follower that still has to settle its log with the leader (epoch truncation).
    truncating: bool,
    /// The LEO when this replica became leader (its epoch's start offset).
    leader_epoch_start: u64,
    lag_time_max_ms: u64,
    /// Planted bugs (`--bug`; none by default).
    bugs: Bugs,
}

impl<L: ReplicaLog> Replica<L> {
    /// Open a replica over a recovered log. The epoch cache is rebuilt from the log's
    /// records (the source of truth) plus a checkpointed epoch that started at LEO
    /// without records yet; the HW is the checkpointed one, capped at LEO.
    pub fn open(
        id: BrokerId,
        log: L,
        checkpointed_epochs: &[(LeaderEpoch, u64)],
        checkpointed_hw: u64,
        lag_time_max_ms: u64,
    ) -> io::Result<Self> {
        let mut epochs = EpochCache::new();
        let leo = log.log_end_offset();
        let mut offset = log.log_start_offset();
        while offset < leo {
            let batch = log.read(offset, 4096, leo)?;
            let Some(last) = batch.last() else { break };
            offset = last.offset + 1;
            for r in &batch {
                epochs.assign(r.leader_epoch, r.offset);
            }
        }
        let last_logged = epochs.latest_epoch().unwrap_or(-1);
        for &(e, s) in checkpointed_epochs {
            if e > last_logged && s == leo {
                epochs.assign(e, s);
            }
        }
        let epochs_dirty = epochs.entries() != checkpointed_epochs;
        Ok(Replica {
            id,
            high_watermark: checkpointed_hw.min(leo),
            log,
            epochs,
            epochs_dirty,
            state: None,
            role: Role::Offline,
            followers: BTreeMap::new(),
            pending_isr: None,
            truncating: false,
            leader_epoch_start: 0,
            lag_time_max_ms,
            bugs: Bugs::default(),
        })
    }

    /// Plant bugs (`broker node --bug`) in this replica's rules.
    pub fn plant(&mut self, bugs: Bugs) {
        self.bugs = bugs;
    }

    pub fn id(&self) -> BrokerId {
        self.id
    }
    pub fn role(&self) -> Role {
        self.role
    }
    pub fn log(&self) -> &L {
        &self.log
    }
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
    pub fn pending_isr(&self) -> Option<&[BrokerId]> {
        self.pending_isr.as_ref().map(|p| p.isr.as_slice())
    }
    /// Whether this follower still has to settle its log with the leader before fetching.
    pub fn is_truncating(&self) -> bool {
        self.truncating
    }
    /// The LEO at which the current leader epoch started (meaningful on the leader).
    pub fn leader_epoch_start_offset(&self) -> u64 {
        self.leader_epoch_start
    }

    /// The epoch cache, if it changed since the last call (to be checkpointed).
    pub fn take_dirty_epochs(&mut self) -> Option<Vec<(LeaderEpoch, u64)>> {
        if self.epochs_dirty {
            self.epochs_dirty = false;
            Some(self.epochs.entries().to_vec())
        } else {
            None
        }
    }

    /// Apply a partition state from the controller (LeaderAndIsr push, heartbeat answer
    /// or AlterPartition answer). States not newer than ours — by leader epoch, then
    /// partition epoch — are ignored. A new leader epoch makes this replica leader,
    /// follower (truncating per `truncation`) or offline.
    pub fn apply_state(
        &mut self,
        state: PartitionState,
        truncation: Truncation,
        now_ms: u64,
    ) -> io::Result<Transition> {
        if let Some(cur) = &self.state {
            let newer = state.leader_epoch > cur.leader_epoch
                || (state.leader_epoch == cur.leader_epoch
                    && state.partition_epoch > cur.partition_epoch);
            if !newer {
                return Ok(Transition::Ignored);
            }
            if state.leader_epoch == cur.leader_epoch && state.leader == cur.leader {
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
                    self.maybe_advance_hw(now_ms);
                }
                return Ok(Transition::IsrUpdated);
            }
        }
        let leader = state.leader;
        let epoch = state.leader_epoch;
        let is_replica = state.replicas.contains(&self.id);
        self.state = Some(state);
        self.pending_isr = None;
        self.followers.clear();
        if leader == self.id {
            self.become_leader(epoch, now_ms);
            Ok(Transition::BecameLeader)
        } else if leader != NO_LEADER && is_replica {
            self.become_follower(truncation)?;
            Ok(Transition::BecameFollower { leader })
        } else {
            self.role = Role::Offline;
            self.truncating = false;
            Ok(Transition::BecameOffline)
        }
    }

    fn become_leader(&mut self, epoch: LeaderEpoch, now_ms: u64) {
        let leo = self.log.log_end_offset();
        self.role = Role::Leader;
        self.truncating = false;
        self.leader_epoch_start = leo;
        // Kafka assigns the new epoch at its start offset right away, so followers
        // asking OffsetsForLeaderEpoch learn where the previous epochs ended.
        if self.epochs.assign(epoch, leo) {
            self.epochs_dirty = true;
        }
        let state = self
            .state
            .as_ref()
            .expect("state set before becoming leader");
        for &r in &state.replicas {
            if r != self.id {
                let in_isr = state.isr.contains(&r);
                self.followers.insert(
                    r,
                    FollowerState {
                        broker_epoch: None,
                        log_end_offset: None,
                        last_caught_up_ms: if in_isr { now_ms } else { 0 },
                        isr_eligible: in_isr,
                        last_fetch_ms: 0,
                        last_fetch_leader_leo: 0,
                    },
                );
            }
        }
        self.maybe_advance_hw(now_ms);
    }

    fn become_follower(&mut self, truncation: Truncation) -> io::Result<()> {
        self.role = Role::Follower;
        if self.bugs.no_epoch_fence {
            // PLANTED BUG (no-epoch-fence): keep every record of the epochs before the
            // new leader's, as if they were the new leader's own.
            self.truncating = false;
            return Ok(());
        }
        match truncation {
            Truncation::Hw => {
                let hw = self.high_watermark;
                self.truncate(hw)?;
                self.truncating = false;
            }
            Truncation::Epoch => self.truncating = self.log.log_end_offset() > 0,
        }
        Ok(())
    }

    fn truncate(&mut self, offset: u64) -> io::Result<()> {
        if offset < self.log.log_end_offset() {
            self.log.truncate_to(offset)?;
            if self.epochs.truncate_from_end(offset) {
                self.epochs_dirty = true;
            }
        }
        self.high_watermark = self.high_watermark.min(self.log.log_end_offset());
        Ok(())
    }

    fn check_leader(&self) -> Result<&PartitionState, ReplicaError> {
        match (&self.state, self.role) {
            (Some(s), Role::Leader) => Ok(s),
            _ => Err(ReplicaError::NotLeader {
                leader: self.leader(),
            }),
        }
    }

    /// The ISR, plus an expansion we proposed (HW must wait for it too).
    fn maximal_isr(&self) -> Vec<BrokerId> {
        let mut isr = self.isr().to_vec();
        for r in self.pending_isr.iter().flat_map(|p| &p.isr) {
            if !isr.contains(r) {
                isr.push(*r);
            }
        }
        isr
    }

    /// Leader: HW = min LEO over the (maximal) ISR and the replicas caught up within
    /// the lag time; it only moves forward. Returns whether it moved.
    pub fn maybe_advance_hw(&mut self, now_ms: u64) -> bool {
        if self.role != Role::Leader {
            return false;
        }
        let isr = self.maximal_isr();
        let mut min = self.log.log_end_offset();
        for (&r, f) in &self.followers {
            let caught_up = f.isr_eligible
                && f.log_end_offset.is_some()
                && now_ms.saturating_sub(f.last_caught_up_ms) <= self.lag_time_max_ms;
            if isr.contains(&r) || caught_up {
                match f.log_end_offset {
                    Some(leo) => min = min.min(leo),
                    None => return false,
                }
            }
        }
        if min > self.high_watermark {
            self.high_watermark = min;
            true
        } else {
            false
        }
    }

    /// Leader append of a produce request. With `acks_all`, fails before appending when
    /// the ISR is smaller than min.insync.replicas.
    pub fn append_as_leader(
        &mut self,
        entries: Vec<(Option<String>, Value)>,
        acks_all: bool,
        now_ms: u64,
    ) -> Result<Appended, ReplicaError> {
        let state = self.check_leader()?;
        if acks_all && (state.isr.len() as u64) < u64::from(state.min_insync_replicas) {
            return Err(ReplicaError::NotEnoughReplicas {
                isr: state.isr.clone(),
            });
        }
        let epoch = state.leader_epoch;
        let n = entries.len() as u64;
        let base_offset = self.log.append(epoch, entries)?;
        if self.epochs.assign(epoch, base_offset) {
            self.epochs_dirty = true;
        }
        self.maybe_advance_hw(now_ms);
        Ok(Appended {
            base_offset,
            end_offset: base_offset + n,
            leader_epoch: epoch,
        })
    }

    /// Whether an acks=all write that ends at `end_offset`, appended in `epoch`, is done.
    pub fn ack_status(&self, end_offset: u64, epoch: LeaderEpoch) -> AckStatus {
        let Some(state) = &self.state else {
            return AckStatus::LeadershipLost;
        };
        if self.role != Role::Leader || state.leader_epoch != epoch {
            return AckStatus::LeadershipLost;
        }
        if self.bugs.ack_before_replicate {
            // PLANTED BUG (ack-before-replicate): the leader's own append is enough.
            return AckStatus::Committed;
        }
        if self.high_watermark < end_offset {
            AckStatus::Pending
        } else if (self.maximal_isr().len() as u64) < u64::from(state.min_insync_replicas) {
            AckStatus::CommittedBelowMinIsr
        } else {
            AckStatus::Committed
        }
    }

    /// Leader: a follower's FETCH. Fenced by leader epoch both ways; records the
    /// follower's LEO (its fetch offset) and caught-up time, advances HW, and answers
    /// records from the fetch offset up to LEO with the (new) HW.
    pub fn fetch_as_leader(
        &mut self,
        req: &FetchRequest,
        now_ms: u64,
    ) -> Result<FetchResponse, ReplicaError> {
        let state = self.check_leader()?;
        if req.leader_epoch != state.leader_epoch {
            return Err(ReplicaError::FencedLeaderEpoch {
                current: state.leader_epoch,
            });
        }
        let leo = self.log.log_end_offset();
        if req.fetch_offset > leo {
            return Err(ReplicaError::OffsetOutOfRange {
                log_end_offset: leo,
            });
        }
        let Some(f) = self.followers.get_mut(&req.replica_id) else {
            return Err(ReplicaError::UnknownReplica {
                replica: req.replica_id,
            });
        };
        // KIP-903: a fetch from a new process of this broker: what its predecessor
        // reported says nothing about this process's log.
        if req.broker_epoch != 0 && f.broker_epoch != Some(req.broker_epoch) {
            if f.broker_epoch.is_some() {
                f.forget_progress();
            }
            f.broker_epoch = Some(req.broker_epoch);
        }
        // Kafka's Replica.updateFetchState: caught up if it asked for everything we had
        // now, or everything we had at its previous fetch.
        if req.fetch_offset >= leo {
            f.last_caught_up_ms = f.last_caught_up_ms.max(now_ms);
            f.isr_eligible = true;
        } else if req.fetch_offset >= f.last_fetch_leader_leo {
            f.last_caught_up_ms = f.last_caught_up_ms.max(f.last_fetch_ms);
        }
        f.log_end_offset = Some(req.fetch_offset);
        f.last_fetch_leader_leo = leo;
        f.last_fetch_ms = now_ms;
        self.maybe_advance_hw(now_ms);
        self.read_for_follower(req)
    }

    /// Leader: the records and HW for a fetch already registered by
    /// [`fetch_as_leader`](Self::fetch_as_leader) (a delayed fetch completing).
    pub fn read_for_follower(&self, req: &FetchRequest) -> Result<FetchResponse, ReplicaError> {
        let state = self.check_leader()?;
        if req.leader_epoch != state.leader_epoch {
            return Err(ReplicaError::FencedLeaderEpoch {
                current: state.leader_epoch,
            });
        }
        let leo = self.log.log_end_offset();
        let records = self.log.read(req.fetch_offset, req.max_records, leo)?;
        Ok(FetchResponse {
            leader_epoch: state.leader_epoch,
            high_watermark: self.high_watermark,
            log_end_offset: leo,
            records,
        })
    }

    /// Follower: apply the leader's FETCH answer. Records must start at our LEO (an
    /// answer to an older fetch is dropped). HW = min(our LEO, the leader's HW).
    pub fn apply_fetch_response(&mut self, resp: FetchResponse) -> Result<(), ReplicaError> {
        if self.role != Role::Follower || self.truncating {
            return Err(ReplicaError::NotLeader {
                leader: self.leader(),
            });
        }
        if resp.leader_epoch != self.leader_epoch() {
            return Err(ReplicaError::FencedLeaderEpoch {
                current: self.leader_epoch(),
            });
        }
        let leo = self.log.log_end_offset();
        if let Some(first) = resp.records.first() {
            if first.offset != leo {
                return Ok(());
            }
            for r in &resp.records {
                if self.epochs.assign(r.leader_epoch, r.offset) {
                    self.epochs_dirty = true;
                }
            }
            self.log.append_replicated(resp.records)?;
        }
        self.high_watermark = self.log.log_end_offset().min(resp.high_watermark);
        Ok(())
    }

    /// Follower: the leader's LEO is below ours (pre-0.11 Kafka's out-of-range
    /// handling): cut our log to it.
    pub fn truncate_to_leader_end(&mut self, leader_leo: u64) -> io::Result<()> {
        self.truncate(leader_leo)
    }

    /// Follower in epoch truncation: the epoch to ask the leader's end offset for
    /// (our latest), or None when there is nothing left to settle.
    pub fn truncation_epoch(&mut self) -> io::Result<Option<LeaderEpoch>> {
        if !self.truncating {
            return Ok(None);
        }
        match self.epochs.latest_epoch() {
            Some(e) => Ok(Some(e)),
            None => {
                // No epoch information (an empty log, or one from before epochs): fall
                // back to the high watermark as Kafka does.
                let hw = self.high_watermark;
                self.truncate(hw)?;
                self.truncating = false;
                Ok(None)
            }
        }
    }

    /// Follower in epoch truncation: apply the leader's OffsetsForLeaderEpoch answer for
    /// the epoch [`truncation_epoch`](Self::truncation_epoch) gave (KIP-101 + KIP-279).
    /// If the leader answered an epoch we know, truncate to the smaller of both end
    /// offsets and we are done; if it answered an epoch we do not have, truncate to the
    /// end of our largest epoch below it and ask again. Returns whether it is done.
    pub fn apply_epoch_end_offset(
        &mut self,
        answer: Option<(LeaderEpoch, u64)>,
    ) -> io::Result<bool> {
        if !self.truncating {
            return Ok(true);
        }
        let leo = self.log.log_end_offset();
        let Some((leader_epoch, leader_end)) = answer else {
            // UNDEFINED: the leader knows no epoch ≤ ours; Kafka falls back to the HW.
            let hw = self.high_watermark;
            self.truncate(hw)?;
            self.truncating = false;
            return Ok(true);
        };
        match self.epochs.end_offset_for(leader_epoch, leo) {
            Some((ours, our_end)) if ours == leader_epoch => {
                self.truncate(our_end.min(leader_end).min(leo))?;
                self.truncating = false;
                Ok(true)
            }
            Some((_, our_end)) => {
                self.truncate(our_end.min(leo))?;
                if self.epochs.latest_epoch().is_none() {
                    self.truncating = false;
                }
                Ok(!self.truncating)
            }
            None => {
                // The leader answered an epoch above all of ours (it cannot, for the epoch
                // we asked): settle for the HW as Kafka does with UNDEFINED.
                let hw = self.high_watermark;
                self.truncate(hw)?;
                self.truncating = false;
                Ok(true)
            }
        }
    }

    /// Leader: an ISR change to propose to the controller, if any: first drop members
    /// not caught up for longer than the lag time, else add one replica that has caught
    /// up to the HW within this leader epoch. Nothing while a proposal is in flight.
    pub fn isr_proposal(&self, now_ms: u64) -> Option<Vec<BrokerId>> {
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
        let joining = self.followers.iter().find(|(r, f)| {
            !isr.contains(r)
                && f.log_end_offset
                    .is_some_and(|leo| leo >= self.high_watermark && leo >= self.leader_epoch_start)
        })?;
        let mut new_isr = isr.to_vec();
        new_isr.push(*joining.0);
        Some(new_isr)
    }

    /// PLANTED BUG (isr-unchecked): the leader shrinks its ISR to `isr` on its own,
    /// never asking the controller (the partition epoch stays the controller's, so the
    /// controller's next change still applies, and expansions still go through it).
    /// Returns whether the ISR shrank.
    pub fn shrink_isr_unchecked(&mut self, isr: &[BrokerId], now_ms: u64) -> bool {
        if self.role != Role::Leader || !self.bugs.isr_unchecked {
            return false;
        }
        let Some(state) = self.state.as_mut() else {
            return false;
        };
        if isr.len() >= state.isr.len() || !isr.iter().all(|r| state.isr.contains(r)) {
            return false;
        }
        for r in state.isr.iter().filter(|r| !isr.contains(r)) {
            if let Some(f) = self.followers.get_mut(r) {
                f.isr_eligible = false;
            }
        }
        state.isr = isr.to_vec();
        self.maybe_advance_hw(now_ms);
        true
    }

    /// Leader: we send `isr` to the controller under the current epochs; until a
    /// definite answer (or a newer partition state), HW also waits for the replicas it
    /// adds. Returns the proposal, to match the answer against.
    pub fn set_pending_isr(&mut self, isr: Vec<BrokerId>) -> PendingIsr {
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
    pub fn clear_pending_isr(&mut self, sent: &PendingIsr) -> bool {
        let clear = self.is_pending(sent);
        if clear {
            self.pending_isr = None;
        }
        clear
    }

    /// OffsetsForLeaderEpoch, answered from this replica's log (leader side).
    pub fn end_offset_for(&self, epoch: LeaderEpoch) -> Option<(LeaderEpoch, u64)> {
        self.epochs.end_offset_for(epoch, self.log.log_end_offset())
    }
}

#[cfg(test)]
pub(crate) mod mem;

#[cfg(test)]
mod tests;
