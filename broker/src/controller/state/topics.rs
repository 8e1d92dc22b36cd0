//! Topic creation: validation, round-robin replica assignment, first leaders.

use super::{ControllerState, Effects, Liveness, ids_str};
use crate::controller::election::assign_replicas;
use crate::error::{ApiError, Code};
use crate::protocol::{
    BrokerId, CreateTopic, NO_LEADER, PartitionState, TopicMetadata, TopicPartition,
    check_topic_name,
};

/// A sanity bound on partitions per topic, so a typo cannot allocate millions.
const MAX_PARTITIONS: u32 = 10_000;

impl ControllerState {
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
        check_topic_name(&req.name).map_err(ApiError::invalid)?;
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
        // Each topic starts its round robin one broker further than the last
        // (Kafka starts at a random broker), so the preferred leaderships of topics
        // with fewer partitions than brokers spread over all the brokers.
        let earlier: std::collections::BTreeSet<&str> =
            self.partitions.keys().map(|tp| tp.topic.as_str()).collect();
        let start = earlier.len() as u32;
        let mut effects = Effects::default();
        for p in 0..req.partitions {
            let replicas = assign_replicas(&ids, start + p, req.replication_factor);
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
                adding: Vec::new(),
                removing: Vec::new(),
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
}
