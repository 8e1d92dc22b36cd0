//! Partition reassignment (Kafka's KIP-455): changing a partition's replicas, which
//! also raises or lowers its replication factor, without losing a committed record.
//!
//! The steps, each a change of the replicated partition state (so a new active
//! controller carries on from whichever step the log holds — nothing is reloaded or
//! guessed, the KAFKA-6193 / apache/kafka#7334 failure area):
//! 1. **Start** ([`Command::AlterReassignment`]): the target replicas not yet in AR
//!    are added to it (AR = target followed by the replicas to remove; `adding` and
//!    `removing` say which are which), partition epoch bumped, pushed to every
//!    replica of the new AR: the adding replicas open the partition and follow.
//! 2. **Catch up**: the adding replicas fetch and join the ISR through the leader's
//!    ordinary AlterPartition expansion (caught up to the HW within its epoch).
//! 3. **Complete**, decided by the controller as it applies the change that makes
//!    the last target replica an ISR member (or a later check): if the leader is not
//!    a target replica, leadership moves to the first live target replica, all of
//!    them being in the ISR (leader epoch bumped, a clean election); then the
//!    removed replicas leave AR and the ISR (partition epoch bumped) and are told so
//!    (the LeaderAndIsr that no longer names them: they stop and delete theirs).
//!    The ISR after is the whole target, never fewer than `min_insync_replicas`.
//!
//! A cancel before completion reverts to the original replicas (AR without the
//! adding ones), provided a live original replica is in the ISR to lead and the ISR
//! keeps `min_insync_replicas` (else it is refused: it would lose records or
//! availability). One reassignment at a time per partition.

use super::{ChangedBy, Command, ControllerState, Effects, Liveness, ids_str, unknown_partition};
use crate::bugs::Bug;
use crate::error::{ApiError, Code};
use crate::events::{Event, ReassignmentStep};
use crate::protocol::{
    AlterReassignment, BrokerId, BrokerStatus, NO_LEADER, PartitionState, TopicPartition,
};

impl ControllerState {
    /// `POST` (start) or `DELETE` (cancel) `/v1/topics/{t}/partitions/{p}/reassign`,
    /// validated against the state as of the command's place in the log.
    pub(super) fn alter_reassignment(
        &mut self,
        req: &AlterReassignment,
    ) -> Result<(PartitionState, Effects), ApiError> {
        let tp = TopicPartition {
            topic: req.topic.clone(),
            partition: req.partition,
        };
        if !self.partitions.contains_key(&tp) {
            return Err(unknown_partition(&req.topic, req.partition));
        }
        let mut effects = Effects::default();
        match &req.replicas {
            Some(target) => self.start_reassignment(&tp, target, "requested", &mut effects)?,
            None => self.cancel_reassignment(&tp, &mut effects)?,
        }
        Ok((self.partitions[&tp].clone(), effects))
    }

    /// Check a target assignment for `p`: distinct known brokers, the ones it adds
    /// alive and taking replicas, at least `min_insync_replicas` of them.
    pub(super) fn check_target(
        &self,
        p: &PartitionState,
        target: &[BrokerId],
    ) -> Result<(), ApiError> {
        let name = format!("{}-{}", p.topic, p.partition);
        let bad = |why: String| ApiError::invalid(format!("replicas {target:?} for {name}: {why}"));
        if target.is_empty() {
            return Err(bad("a partition needs at least one replica".into()));
        }
        if (target.len() as u32) < p.min_insync_replicas {
            return Err(bad(format!(
                "fewer than the topic's min_insync_replicas ({})",
                p.min_insync_replicas
            )));
        }
        for (i, b) in target.iter().enumerate() {
            if target[..i].contains(b) {
                return Err(bad(format!("broker {b} is named twice")));
            }
            let Some(broker) = self.brokers.get(b) else {
                return Err(bad(format!("broker {b} is not a broker of this cluster")));
            };
            if p.replicas.contains(b) {
                continue;
            }
            if broker.status != BrokerStatus::Active {
                return Err(bad(format!("broker {b} is decommissioned")));
            }
            if broker.liveness != Liveness::Alive {
                return Err(bad(format!("broker {b} is not alive")));
            }
        }
        Ok(())
    }

    /// Start moving `tp` to `target` (step 1), completing at once if nothing has to
    /// catch up. Refused while another reassignment of it is in progress.
    pub(super) fn start_reassignment(
        &mut self,
        tp: &TopicPartition,
        target: &[BrokerId],
        why: &str,
        effects: &mut Effects,
    ) -> Result<(), ApiError> {
        let p = &self.partitions[tp];
        if p.reassigning() {
            return Err(ApiError::new(
                Code::ReassignmentInProgress,
                format!(
                    "{}-{} is being reassigned to {} (adding {}, removing {}); cancel it first",
                    p.topic,
                    p.partition,
                    ids_str(&p.target()),
                    ids_str(&p.adding),
                    ids_str(&p.removing)
                ),
            ));
        }
        self.check_target(p, target)?;
        let adding: Vec<BrokerId> = target
            .iter()
            .copied()
            .filter(|b| !p.replicas.contains(b))
            .collect();
        let removing: Vec<BrokerId> = p
            .replicas
            .iter()
            .copied()
            .filter(|b| !target.contains(b))
            .collect();
        let mut next = p.clone();
        if adding.is_empty() && removing.is_empty() {
            // The same replicas in another order: only the preferred leader changes.
            if p.replicas != target {
                next.replicas = target.to_vec();
                next.isr = target
                    .iter()
                    .copied()
                    .filter(|b| p.isr.contains(b))
                    .collect();
                next.partition_epoch += 1;
                let event = reassignment_event(&next, ReassignmentStep::Completed, &[], &[]);
                let line = format!("replicas reordered to {} ({why})", ids_str(target));
                self.update(tp.clone(), next, &line, ChangedBy::Controller, effects);
                effects.transitions.push(event);
            }
            return Ok(());
        }
        next.replicas = target.iter().chain(&removing).copied().collect();
        let step = ReassignmentStep::Started;
        effects
            .transitions
            .push(reassignment_event(&next, step, &adding, &removing));
        next.adding = adding;
        next.removing = removing;
        next.partition_epoch += 1;
        let line = format!("reassignment to {} {why}", ids_str(target));
        self.update(tp.clone(), next, &line, ChangedBy::Controller, effects);
        self.advance_reassignment(tp, effects);
        Ok(())
    }

    /// The ISR `p` has once its reassignment completes (the target, in its order),
    /// and its leader then, if the reassignment may complete now (step 3): every
    /// target replica is in the ISR, and the leader is one of them or a live one can
    /// take over.
    fn completion(&self, p: &PartitionState) -> Option<(Vec<BrokerId>, BrokerId)> {
        if !p.reassigning() {
            return None;
        }
        let target = p.target();
        // PLANTED BUG (reassign-remove-early): the target replicas count as in sync
        // the moment they enter AR, so the removed ones leave before the adding ones
        // have caught up.
        let early = self.config.bugs.has(Bug::ReassignRemoveEarly);
        if !early && !target.iter().all(|b| p.isr.contains(b)) {
            return None;
        }
        let leader = match p.leader {
            l if l != NO_LEADER && target.contains(&l) => l,
            _ => target.iter().copied().find(|&b| self.is_alive(b))?,
        };
        Some((target, leader))
    }

    /// Take `tp`'s reassignment as far as it can go now: complete it if every target
    /// replica is in the ISR (step 3).
    pub(super) fn advance_reassignment(&mut self, tp: &TopicPartition, effects: &mut Effects) {
        let Some(p) = self.partitions.get(tp) else {
            return;
        };
        let Some((isr, leader)) = self.completion(p) else {
            return;
        };
        let (added, removed) = (p.adding.clone(), p.removing.clone());
        if leader != p.leader {
            let previous = p.leader;
            let mut next = p.clone();
            next.leader = leader;
            next.leader_epoch += 1;
            next.partition_epoch += 1;
            effects
                .transitions
                .push(self.elected(&next, true, previous));
            let why = format!(
                "reassignment: leader {previous} is not a target replica, target replica \
                 {leader} (in the ISR) takes over"
            );
            self.update(tp.clone(), next, &why, ChangedBy::Controller, effects);
        }
        let mut next = self.partitions[tp].clone();
        next.replicas = next.target();
        next.isr = isr;
        next.adding.clear();
        next.removing.clear();
        next.partition_epoch += 1;
        let event = reassignment_event(&next, ReassignmentStep::Completed, &added, &removed);
        let why = format!(
            "reassignment complete, every target replica in the ISR; {} removed",
            ids_str(&removed)
        );
        self.update(tp.clone(), next, &why, ChangedBy::Controller, effects);
        effects.transitions.push(event);
        self.finish_decommissions(effects);
    }

    /// [`advance_reassignment`](Self::advance_reassignment) for every partition.
    pub(super) fn advance_reassignments(&mut self, effects: &mut Effects) {
        let moving: Vec<TopicPartition> = self
            .partitions
            .iter()
            .filter(|(_, p)| p.reassigning())
            .map(|(tp, _)| tp.clone())
            .collect();
        for tp in moving {
            self.advance_reassignment(&tp, effects);
        }
    }

    /// Cancel `tp`'s reassignment: back to the original replicas, the adding ones
    /// removed (and told so), leadership back on an original replica in the ISR.
    fn cancel_reassignment(
        &mut self,
        tp: &TopicPartition,
        effects: &mut Effects,
    ) -> Result<(), ApiError> {
        let p = &self.partitions[tp];
        let name = format!("{}-{}", p.topic, p.partition);
        if !p.reassigning() {
            return Err(ApiError::new(
                Code::NoReassignmentInProgress,
                format!("{name} is not being reassigned"),
            ));
        }
        let original = p.original();
        let isr: Vec<BrokerId> = original
            .iter()
            .copied()
            .filter(|b| p.isr.contains(b))
            .collect();
        let refuse = |why: String| {
            ApiError::invalid(format!(
                "cannot cancel the reassignment of {name} back to {}: {why}; it stays in progress",
                ids_str(&original)
            ))
        };
        if isr.is_empty() {
            return Err(refuse(format!(
                "no original replica is in the ISR {}",
                ids_str(&p.isr)
            )));
        }
        if isr.len() < p.isr.len() && (isr.len() as u32) < p.min_insync_replicas {
            return Err(refuse(format!(
                "the ISR would shrink to {}, below min_insync_replicas {}",
                ids_str(&isr),
                p.min_insync_replicas
            )));
        }
        let leader = match p.leader {
            l if l == NO_LEADER || original.contains(&l) => l,
            l => match isr.iter().copied().find(|&b| self.is_alive(b)) {
                Some(b) => b,
                None => {
                    return Err(refuse(format!(
                        "its leader {l} is an adding replica and no original replica in the ISR is alive"
                    )));
                }
            },
        };
        let (added, removing) = (p.adding.clone(), p.removing.clone());
        if leader != p.leader {
            let previous = p.leader;
            let mut next = p.clone();
            next.leader = leader;
            next.leader_epoch += 1;
            next.partition_epoch += 1;
            effects
                .transitions
                .push(self.elected(&next, true, previous));
            let why = format!("reassignment cancelled: original replica {leader} takes over");
            self.update(tp.clone(), next, &why, ChangedBy::Controller, effects);
        }
        let mut next = self.partitions[tp].clone();
        next.replicas = original;
        next.isr = isr;
        next.adding.clear();
        next.removing.clear();
        next.partition_epoch += 1;
        let event = reassignment_event(&next, ReassignmentStep::Cancelled, &added, &removing);
        let why = format!("reassignment cancelled; {} removed", ids_str(&added));
        self.update(tp.clone(), next, &why, ChangedBy::Controller, effects);
        effects.transitions.push(event);
        Ok(())
    }
}

/// The event line of a reassignment's `step`: `next` is the state after it, `adding`
/// and `removing` the reassignment's.
fn reassignment_event(
    next: &PartitionState,
    step: ReassignmentStep,
    adding: &[BrokerId],
    removing: &[BrokerId],
) -> Event {
    Event::Reassignment {
        topic: next.topic.clone(),
        partition: next.partition,
        step,
        replicas: next.replicas.clone(),
        adding: adding.to_vec(),
        removing: removing.to_vec(),
    }
}

impl ControllerState {
    /// The reassignments to resume, as a command (None: none). A new active
    /// controller (`takeover`) names every one in progress; the periodic check names
    /// those that may complete now but have not (a target replica was not alive to
    /// lead when the last one joined the ISR).
    pub fn resume_decision(&self, takeover: bool) -> Option<Command> {
        let partitions: Vec<TopicPartition> = self
            .partitions
            .iter()
            .filter(|(_, p)| p.reassigning() && (takeover || self.completion(p).is_some()))
            .map(|(tp, _)| tp.clone())
            .collect();
        (!partitions.is_empty()).then_some(Command::ResumeReassignments {
            partitions,
            takeover,
        })
    }

    /// Apply a resume: each partition's reassignment goes on from the step the
    /// replicated state holds (completing if it may).
    pub(super) fn apply_resume(
        &mut self,
        partitions: &[TopicPartition],
        takeover: bool,
    ) -> Effects {
        let mut effects = Effects::default();
        for tp in partitions {
            if takeover && self.config.bugs.has(Bug::ReassignForgetOnFailover) {
                self.reload_from_adding(tp, &mut effects);
            } else {
                self.advance_reassignment(tp, &mut effects);
            }
        }
        effects
    }

    /// PLANTED BUG (reassign-forget-on-failover): the new active controller loses
    /// track of the reassignment in progress and reloads it from its adding replicas
    /// alone, as the full AR (apache/kafka#7334 loaded one list as the other): the
    /// other replicas are dropped (told to delete theirs), the ISR is what is left
    /// of it — or, if nothing is, the adding replicas, caught up or not — and the
    /// leader, if dropped, is the first live one of them.
    fn reload_from_adding(&mut self, tp: &TopicPartition, effects: &mut Effects) {
        let Some(p) = self.partitions.get(tp).filter(|p| !p.adding.is_empty()) else {
            return self.advance_reassignment(tp, effects);
        };
        let mut next = p.clone();
        next.replicas = p.adding.clone();
        let kept: Vec<BrokerId> = p
            .isr
            .iter()
            .copied()
            .filter(|b| p.adding.contains(b))
            .collect();
        next.isr = if kept.is_empty() {
            p.adding.clone()
        } else {
            kept
        };
        if !next.replicas.contains(&p.leader) {
            let alive = next.isr.iter().copied().find(|&b| self.is_alive(b));
            next.leader = alive.unwrap_or(NO_LEADER);
            next.leader_epoch += 1;
            if next.leader != NO_LEADER {
                effects
                    .transitions
                    .push(self.elected(&next, true, p.leader));
            }
        }
        next.adding.clear();
        next.removing.clear();
        next.partition_epoch += 1;
        let why = "reassignment resumed after a failover, from its adding replicas";
        self.update(tp.clone(), next, why, ChangedBy::Controller, effects);
    }
}
