//! Decommissioning a broker (`POST /v1/brokers/{id}/decommission`): every replica
//! it holds moves to another live broker by an ordinary reassignment, and once it
//! holds none it is decommissioned — it leads nothing, hosts nothing and is left
//! out of placement (topic creation, new partitions, reassignment targets), so it
//! may be stopped. Kafka decommissions by reassigning a broker's partitions away
//! (kafka-reassign-partitions) and then unregistering it.
//!
//! Each partition's replica of the broker goes to the live active broker outside
//! its replicas that holds the fewest replicas (the lowest id on a tie), counting
//! the moves already planned; the plan is made whole or refused whole. While the
//! broker is decommissioning it still replicates and may lead what it has not
//! handed over yet (the last in AR order, it is elected only when no target
//! replica can be); a reassignment that completes checks whether it holds anything
//! still. Asking again re-plans what is left (e.g. after a cancel).

use std::collections::BTreeMap;

use super::{ControllerState, Effects, Liveness};
use crate::error::{ApiError, Code};
use crate::protocol::{BrokerId, BrokerInfo, BrokerStatus, TopicPartition};

impl ControllerState {
    /// Apply a decommission: plan every move, start them, and answer the broker as
    /// it now stands.
    pub(super) fn decommission(&mut self, id: BrokerId) -> Result<(BrokerInfo, Effects), ApiError> {
        let Some(b) = self.brokers.get(&id) else {
            return Err(ApiError::invalid(format!(
                "broker {id} is not a broker of this cluster {:?}",
                self.brokers.keys().collect::<Vec<_>>()
            )));
        };
        let mut effects = Effects::default();
        if b.status != BrokerStatus::Decommissioned {
            let plan = self.decommission_plan(id)?;
            if let Some(b) = self
                .brokers
                .get_mut(&id)
                .filter(|b| b.status == BrokerStatus::Active)
            {
                b.status = BrokerStatus::Decommissioning;
                effects.dirty = true;
                effects.events.push(format!(
                    "broker {id}: decommissioning, moving {} replicas away",
                    plan.len()
                ));
            }
            let why = format!("to decommission broker {id}");
            for (tp, target) in plan {
                self.start_reassignment(&tp, &target, &why, &mut effects)?;
            }
            self.finish_decommissions(&mut effects);
        }
        let info = self.brokers_info().into_iter().find(|b| b.id == id);
        Ok((info.expect("a broker of this cluster"), effects))
    }

    /// Where each replica broker `id` holds goes: (partition, target replicas), for
    /// the partitions not already moving it away.
    fn decommission_plan(
        &self,
        id: BrokerId,
    ) -> Result<Vec<(TopicPartition, Vec<BrokerId>)>, ApiError> {
        let mut load: BTreeMap<BrokerId, usize> = self
            .brokers
            .iter()
            .filter(|&(&b, s)| {
                b != id && s.status == BrokerStatus::Active && s.liveness == Liveness::Alive
            })
            .map(|(&b, _)| (b, 0))
            .collect();
        for p in self.partitions.values() {
            for b in &p.replicas {
                if let Some(n) = load.get_mut(b) {
                    *n += 1;
                }
            }
        }
        let mut plan = Vec::new();
        for (tp, p) in self
            .partitions
            .iter()
            .filter(|(_, p)| p.replicas.contains(&id))
        {
            let name = format!("{}-{}", p.topic, p.partition);
            if p.reassigning() {
                if p.removing.contains(&id) {
                    continue;
                }
                return Err(ApiError::new(
                    Code::ReassignmentInProgress,
                    format!(
                        "{name} is being reassigned to {:?}, which keeps broker {id}; cancel it or \
                         let it complete first",
                        p.target()
                    ),
                ));
            }
            let to = load
                .iter()
                .filter(|(b, _)| !p.replicas.contains(b))
                .min_by_key(|&(&b, &n)| (n, b))
                .map(|(&b, _)| b);
            let Some(to) = to else {
                return Err(ApiError::invalid(format!(
                    "cannot decommission broker {id}: no live broker outside {:?} to take its \
                     replica of {name}",
                    p.replicas
                )));
            };
            *load.get_mut(&to).expect("drawn from it") += 1;
            let target = p
                .replicas
                .iter()
                .map(|&b| if b == id { to } else { b })
                .collect();
            plan.push((tp.clone(), target));
        }
        Ok(plan)
    }

    /// Every decommissioning broker that no partition names any more is
    /// decommissioned.
    pub(super) fn finish_decommissions(&mut self, effects: &mut Effects) {
        let done: Vec<BrokerId> = self
            .brokers
            .iter()
            .filter(|(_, b)| b.status == BrokerStatus::Decommissioning)
            .map(|(&id, _)| id)
            .filter(|id| !self.partitions.values().any(|p| p.replicas.contains(id)))
            .collect();
        for id in done {
            if let Some(b) = self.brokers.get_mut(&id) {
                b.status = BrokerStatus::Decommissioned;
            }
            effects.dirty = true;
            effects.events.push(format!(
                "broker {id}: decommissioned, it hosts nothing and may be stopped"
            ));
        }
    }
}
