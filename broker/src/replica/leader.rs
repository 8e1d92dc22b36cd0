//! The leader's side: becoming leader, appending, the followers' FETCH (what the
//! leader learns from it about each follower), the high-watermark rule and the
//! `acks=all` completion rule, and OffsetsForLeaderEpoch answers.

use crate::bugs::Bug;
use crate::value::RecordValue;

use super::producers::SequenceCheck;
use super::{Effects, Replica, ReplicaError, ReplicaLog, Role};
use crate::log::{ProducerStamp, Record};
use crate::protocol::{BrokerId, FetchResponse, LeaderEpoch, PartitionState};

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
    pub(super) isr_eligible: bool,
    /// When it fetched last.
    pub(super) last_fetch_ms: u64,
    /// The leader's LEO at its last fetch.
    pub(super) last_fetch_leader_leo: u64,
}

impl FollowerState {
    /// Forget everything learnt from the follower's fetches: it must fetch again before
    /// the HW waits for it or the leader proposes it for the ISR.
    pub(super) fn forget_progress(&mut self) {
        *self = FollowerState {
            broker_epoch: self.broker_epoch,
            ..FollowerState::default()
        };
    }
}

/// A leader append's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub base_offset: u64,
    /// One past the last appended record: acks=all completes once HW reaches it.
    pub end_offset: u64,
    pub leader_epoch: LeaderEpoch,
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
    /// The partition's storage fails on this node, which acknowledges nothing
    /// meanwhile (decided by the node, not the replica).
    StorageFailing,
}

/// A follower's FETCH, as the leader sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchRequest {
    pub replica_id: BrokerId,
    /// The fetching process's broker epoch (0: not given).
    pub broker_epoch: u64,
    pub fetch_offset: u64,
    pub leader_epoch: LeaderEpoch,
    pub max_records: usize,
}

impl<L: ReplicaLog> Replica<L> {
    /// Lead `epoch` (the state is set): enter the epoch at LEO, and start every
    /// follower's state afresh (ISR members counted as caught up now).
    pub(super) fn become_leader(&mut self, epoch: LeaderEpoch, now_ms: u64, fx: &mut Effects) {
        let leo = self.log.log_end_offset();
        self.role = Role::Leader;
        self.truncating = None;
        self.leader_epoch_start = leo;
        // Kafka assigns the new epoch at its start offset right away, so followers
        // asking OffsetsForLeaderEpoch learn where the previous epochs ended.
        self.assign_epoch(epoch, leo, fx);
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
        self.advance_hw(now_ms, fx);
    }

    /// The replicas changed under this leadership (a reassignment added or removed
    /// some; the partition epoch moved, the leader epoch did not): a new replica
    /// starts with nothing known of it (it must fetch and catch up before the HW
    /// waits for it or it is proposed for the ISR), a removed one is forgotten.
    pub(super) fn follow_replicas(&mut self) {
        let Some(state) = self.state.as_ref() else {
            return;
        };
        self.followers.retain(|r, _| state.replicas.contains(r));
        for &r in &state.replicas {
            if r != self.id {
                self.followers.entry(r).or_default();
            }
        }
    }

    /// Our partition state, if we lead; else `NOT_LEADER` with the leader we know.
    pub(super) fn check_leader(&self) -> Result<&PartitionState, ReplicaError> {
        match (&self.state, self.role) {
            (Some(s), Role::Leader) => Ok(s),
            _ => Err(ReplicaError::NotLeader {
                leader: self.leader(),
            }),
        }
    }

    /// Leader: HW = min LEO over the (maximal) ISR and the replicas caught up within
    /// the lag time; it only moves forward. Nothing moves while one of them has not
    /// fetched in this leader epoch.
    pub(super) fn advance_hw(&mut self, now_ms: u64, fx: &mut Effects) {
        if self.role != Role::Leader {
            return;
        }
        let isr = self.maximal_isr();
        let leo = self.log.log_end_offset();
        let counted: Vec<Option<u64>> = self
            .followers
            .iter()
            .filter(|(r, f)| {
                let caught_up = f.isr_eligible
                    && f.log_end_offset.is_some()
                    && now_ms.saturating_sub(f.last_caught_up_ms) <= self.lag_time_max_ms;
                isr.contains(r) || caught_up
            })
            .map(|(_, f)| f.log_end_offset)
            .collect();
        let hw = if self.bugs.has(Bug::HwAnyFollower) && !counted.is_empty() {
            // PLANTED BUG (hw-any-follower): the most advanced follower decides, as if
            // one copy besides the leader's were enough.
            match counted.iter().flatten().max() {
                Some(&most) => most.min(leo),
                None => return,
            }
        } else {
            match counted.iter().try_fold(leo, |min, f| f.map(|l| min.min(l))) {
                Some(min) => min,
                None => return,
            }
        };
        if hw > self.high_watermark {
            self.set_high_watermark(hw, fx);
        }
    }

    /// How far clients may read (consume, the register view): up to the HW, never
    /// records the ISR may not all have.
    pub fn read_limit(&self) -> u64 {
        if self.bugs.has(Bug::ReadPastHw) {
            // PLANTED BUG (read-past-hw): the whole log is served, committed or not.
            return self.log.log_end_offset();
        }
        self.high_watermark
    }

    /// [`advance_hw`](Self::advance_hw) on its own: whether the HW moved.
    #[cfg(test)]
    pub fn maybe_advance_hw(&mut self, now_ms: u64) -> bool {
        let mut fx = Effects::default();
        self.advance_hw(now_ms, &mut fx);
        fx.hw_moved
    }

    /// Leader append of a produce request. With `acks_all`, fails before appending when
    /// the ISR is smaller than min.insync.replicas.
    pub fn append_as_leader(
        &mut self,
        entries: Vec<(Option<String>, RecordValue)>,
        acks_all: bool,
        now_ms: u64,
    ) -> (Result<Appended, ReplicaError>, Effects) {
        self.append_leader(entries, None, acks_all, now_ms)
    }

    /// The leader's append of `entries`, each stamped with its producer's sequence
    /// when `stamps` says (as many as the entries).
    fn append_leader(
        &mut self,
        entries: Vec<(Option<String>, RecordValue)>,
        stamps: Option<&[ProducerStamp]>,
        acks_all: bool,
        now_ms: u64,
    ) -> (Result<Appended, ReplicaError>, Effects) {
        let mut fx = Effects::default();
        let state = match self.check_leader() {
            Ok(s) => s,
            Err(e) => return (Err(e), fx),
        };
        if acks_all && (state.isr.len() as u64) < u64::from(state.min_insync_replicas) {
            let isr = state.isr.clone();
            let min_insync = state.min_insync_replicas;
            return (Err(ReplicaError::NotEnoughReplicas { isr, min_insync }), fx);
        }
        let epoch = state.leader_epoch;
        let n = entries.len() as u64;
        let leo = self.log.log_end_offset();
        let appended = match stamps {
            None => self.log.append(epoch, entries),
            // Stamped records are whole records: appended as a follower appends.
            Some(stamps) => {
                let records = entries
                    .into_iter()
                    .zip(stamps)
                    .zip(leo..)
                    .map(|(((key, value), stamp), offset)| Record {
                        offset,
                        leader_epoch: epoch,
                        producer: Some(*stamp),
                        key,
                        value,
                    })
                    .collect();
                self.log.append_replicated(records).map(|()| leo)
            }
        };
        if self.log.log_end_offset() != leo {
            // In the log, even if the append then failed (to flush): the epoch must
            // cover these records and the followers may fetch them.
            self.assign_epoch(epoch, leo, &mut fx);
            fx.appended = true;
        }
        let base_offset = match appended {
            Ok(base) => base,
            Err(e) => return (Err(e.into()), fx),
        };
        self.advance_hw(now_ms, &mut fx);
        let appended = Appended {
            base_offset,
            end_offset: base_offset + n,
            leader_epoch: epoch,
        };
        (Ok(appended), fx)
    }

    /// Leader append of an idempotent producer's batch (KIP-98): `producer` is its
    /// id, epoch and the first record's sequence, with how many records follow it
    /// (one fewer than `entries`). The next batch of that producer is
    /// appended, each record stamped with its sequence; a batch the producer state
    /// already holds (a retry) is not appended again, its answer the offset it was
    /// first written at; anything else is refused with [`ReplicaError::Sequence`].
    pub fn append_idempotent(
        &mut self,
        entries: Vec<(Option<String>, RecordValue)>,
        producer: ProducerStamp,
        acks_all: bool,
        now_ms: u64,
    ) -> (Result<Appended, ReplicaError>, Effects) {
        let fx = Effects::default();
        let state = match self.check_leader() {
            Ok(s) => s,
            Err(e) => return (Err(e), fx),
        };
        let epoch = state.leader_epoch;
        let n = entries.len() as u64;
        debug_assert_eq!(
            u64::from(producer.records_after) + 1,
            n,
            "a batch's stamp counts its records"
        );
        let check = self.producers.check(
            producer.id,
            producer.epoch,
            producer.sequence,
            producer.last_sequence(),
        );
        match check {
            Err(error) => {
                let refused = ReplicaError::Sequence {
                    error,
                    leader_epoch: epoch,
                };
                (Err(refused), fx)
            }
            Ok(SequenceCheck::Duplicate { base_offset }) => {
                let appended = Appended {
                    base_offset,
                    end_offset: base_offset + n,
                    leader_epoch: epoch,
                };
                (Ok(appended), fx)
            }
            Ok(SequenceCheck::Append) => {
                let leo = self.log.log_end_offset();
                let stamps: Vec<ProducerStamp> = (0..n as u32).map(|i| producer.nth(i)).collect();
                let (result, fx) = self.append_leader(entries, Some(&stamps), acks_all, now_ms);
                let new_leo = self.log.log_end_offset();
                for (offset, stamp) in (leo..new_leo).zip(&stamps) {
                    self.producers.observe_stamp(offset, *stamp);
                }
                (result, fx)
            }
        }
    }

    /// Whether an acks=all write that ends at `end_offset`, appended in `epoch`, is done.
    pub fn ack_status(&self, end_offset: u64, epoch: LeaderEpoch) -> AckStatus {
        let Some(state) = &self.state else {
            return AckStatus::LeadershipLost;
        };
        // PLANTED BUG (ack-ignores-epoch): without this check a deposed leader judges
        // its pending writes by the HW of the log it now follows.
        let still_leads = self.role == Role::Leader && state.leader_epoch == epoch;
        if !still_leads && !self.bugs.has(Bug::AckIgnoresEpoch) {
            return AckStatus::LeadershipLost;
        }
        if self.bugs.has(Bug::AckBeforeReplicate) {
            // PLANTED BUG (ack-before-replicate): the leader's own append is enough.
            return AckStatus::Committed;
        }
        // The HW must pass the write's last record: reach `end_offset`, one past it.
        let needed = if self.bugs.has(Bug::AckOffByOne) {
            // PLANTED BUG (ack-off-by-one): HW at the last record's offset is taken
            // as covering it.
            end_offset.saturating_sub(1)
        } else {
            end_offset
        };
        if self.high_watermark < needed {
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
    ) -> (Result<FetchResponse, ReplicaError>, Effects) {
        let mut fx = Effects::default();
        let answer = self.register_fetch(req, now_ms, &mut fx);
        (answer.and_then(|()| self.read_for_follower(req)), fx)
    }

    /// What a FETCH tells the leader about its follower (its LEO, whether it is caught
    /// up), after the fencing checks; then the HW may move.
    fn register_fetch(
        &mut self,
        req: &FetchRequest,
        now_ms: u64,
        fx: &mut Effects,
    ) -> Result<(), ReplicaError> {
        let state = self.check_leader()?;
        if req.leader_epoch != state.leader_epoch {
            return Err(ReplicaError::FencedLeaderEpoch {
                requested: req.leader_epoch,
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
        self.advance_hw(now_ms, fx);
        Ok(())
    }

    /// Leader: the records and HW for a fetch already registered by
    /// [`fetch_as_leader`](Self::fetch_as_leader) (a delayed fetch completing).
    pub fn read_for_follower(&self, req: &FetchRequest) -> Result<FetchResponse, ReplicaError> {
        let state = self.check_leader()?;
        if req.leader_epoch != state.leader_epoch {
            return Err(ReplicaError::FencedLeaderEpoch {
                requested: req.leader_epoch,
                current: state.leader_epoch,
            });
        }
        let leo = self.log.log_end_offset();
        let mut records = self.log.read(req.fetch_offset, req.max_records, leo)?;
        // An idempotent producer's batch goes whole, past the fetch's limit if need be
        // (as Kafka returns whole record batches): a follower holding only its start,
        // once elected, could not answer the batch's retry — neither a duplicate nor
        // the next batch.
        if let Some(last) = records.last() {
            let rest = last.producer.map_or(0, |s| s.records_after);
            if rest > 0 {
                let next = last.offset + 1;
                records.extend(self.log.read(next, rest as usize, leo)?);
            }
        }
        Ok(FetchResponse {
            leader_epoch: state.leader_epoch,
            high_watermark: self.high_watermark,
            log_end_offset: leo,
            records,
        })
    }

    /// OffsetsForLeaderEpoch, answered from this replica's log (leader side).
    pub fn end_offset_for(&self, epoch: LeaderEpoch) -> Option<(LeaderEpoch, u64)> {
        let leo = self.log.log_end_offset();
        let answer = self.epochs.end_offset_for(epoch, leo);
        if self.bugs.has(Bug::EpochEndAtLeo) {
            // PLANTED BUG (epoch-end-at-leo): the epoch is right, its end is our LEO,
            // so a follower keeps whatever it wrote past the epoch's real end.
            return answer.map(|(e, _)| (e, leo));
        }
        answer
    }
}
