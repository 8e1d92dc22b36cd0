//! ISR changes proposed by leaders (AlterPartition) and leadership confirmation for
//! linearizable reads, both fenced by the epochs.

use std::collections::BTreeSet;

use super::{ChangedBy, ControllerState, Effects, unknown_partition};
use crate::error::{ApiError, Code};
use crate::events::{Api, Event, FenceReason};
use crate::protocol::{
    AlterPartition, BrokerId, ConfirmLeadership, PartitionState, TopicPartition,
};

impl ControllerState {
    /// `POST /internal/alter-partition`: a leader proposes a new ISR. A refusal for
    /// stale epochs (or from a broker that does not lead) is a fenced request among
    /// the effects' transitions.
    pub fn alter_partition(
        &mut self,
        req: &AlterPartition,
    ) -> (Result<PartitionState, ApiError>, Effects) {
        let mut effects = Effects::default();
        let result = self.judge_alter_partition(req, &mut effects);
        (result, effects)
    }

    /// [`alter_partition`](Self::alter_partition), noting its effects in `effects`.
    fn judge_alter_partition(
        &mut self,
        req: &AlterPartition,
        effects: &mut Effects,
    ) -> Result<PartitionState, ApiError> {
        let tp = TopicPartition {
            topic: req.topic.clone(),
            partition: req.partition,
        };
        let Some(p) = self.partitions.get(&tp) else {
            return Err(unknown_partition(&req.topic, req.partition));
        };
        self.fence_alter_partition(req, p, &tp, effects)?;
        let seen = self.proposed_isr(req, p, &tp, effects)?;
        // Keep the ISR in replica order, so equal sets compare equal.
        let new_isr: Vec<BrokerId> = p
            .replicas
            .iter()
            .copied()
            .filter(|b| seen.contains(b))
            .collect();
        if new_isr == p.isr {
            return Ok(p.clone());
        }
        let mut next = p.clone();
        next.isr = new_isr;
        next.partition_epoch += 1;
        let why = format!("proposed by leader {}", req.broker_id);
        self.update(tp.clone(), next, &why, ChangedBy::Leader, effects);
        // The last target replica of a reassignment joining the ISR completes it.
        self.advance_reassignment(&tp, effects);
        Ok(self.partitions[&tp].clone())
    }

    /// The epochs of an AlterPartition: the sender's broker epoch, its leadership and
    /// leader epoch, the partition epoch it proposes against. A stale one is fenced.
    fn fence_alter_partition(
        &self,
        req: &AlterPartition,
        p: &PartitionState,
        tp: &TopicPartition,
        effects: &mut Effects,
    ) -> Result<(), ApiError> {
        let name = format!("{}-{}", p.topic, p.partition);
        let mut fenced = |reason: FenceReason, why: String| {
            effects
                .transitions
                .push(Event::fenced(Api::AlterPartition, reason, tp));
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
            return Err(fenced(
                FenceReason::StaleBrokerEpoch,
                format!(
                    "broker {} sent broker epoch {}, the controller knows {:?}",
                    req.broker_id, req.broker_epoch, known_epoch
                ),
            ));
        }
        if req.broker_id != p.leader || req.leader_epoch != p.leader_epoch {
            let reason = if req.broker_id != p.leader {
                FenceReason::NotLeader
            } else {
                FenceReason::leader_epoch(req.leader_epoch, p.leader_epoch)
            };
            return Err(fenced(
                reason,
                format!(
                    "broker {} with leader epoch {} is not the leader (leader {}, leader epoch {})",
                    req.broker_id, req.leader_epoch, p.leader, p.leader_epoch
                ),
            ));
        }
        if req.partition_epoch != p.partition_epoch {
            return Err(fenced(
                FenceReason::StalePartitionEpoch,
                format!(
                    "partition epoch {} is stale (current {})",
                    req.partition_epoch, p.partition_epoch
                ),
            ));
        }
        Ok(())
    }

    /// The members of a proposed ISR, checked: replicas, each once, alive if new,
    /// eligible by KIP-903, the leader among them.
    fn proposed_isr(
        &self,
        req: &AlterPartition,
        p: &PartitionState,
        tp: &TopicPartition,
        effects: &mut Effects,
    ) -> Result<BTreeSet<BrokerId>, ApiError> {
        let name = format!("{}-{}", p.topic, p.partition);
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
        // KIP-903: a member whose process restarted since its leader saw it fetch may
        // have lost records; its leader must see the new process catch up first.
        for m in &req.new_isr_epochs {
            if !seen.contains(&m.broker_id) {
                return Err(ApiError::invalid(format!(
                    "new_isr_epochs of {name} names broker {}, which new_isr {:?} does not",
                    m.broker_id, req.new_isr
                )));
            }
            let known = self.brokers.get(&m.broker_id).and_then(|b| b.broker_epoch);
            if known != Some(m.broker_epoch) {
                effects.transitions.push(Event::fenced(
                    Api::AlterPartition,
                    FenceReason::StaleBrokerEpoch,
                    tp,
                ));
                return Err(ApiError::invalid(format!(
                    "new_isr {:?} of {name}: broker {} fetched with broker epoch {}, the \
                     controller knows {known:?} (it restarted: not eligible yet)",
                    req.new_isr, m.broker_id, m.broker_epoch
                )));
            }
        }
        if !seen.contains(&p.leader) {
            return Err(ApiError::invalid(format!(
                "new_isr {:?} of {name} does not contain the leader {}",
                req.new_isr, p.leader
            )));
        }
        Ok(seen)
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
}
