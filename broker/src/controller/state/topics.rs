//! Topic creation and new partitions (CreatePartitions): validation, round-robin
//! replica assignment over the brokers that take replicas, first leaders.

use super::{ControllerState, Effects, Liveness, ids_str};
use crate::controller::election::assign_replicas;
use crate::error::{ApiError, Code};
use crate::protocol::{
    BrokerId, BrokerStatus, CreatePartitions, CreateTopic, NO_LEADER, PartitionState,
    TopicMetadata, TopicPartition, check_topic_name,
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
        let ids = self.placement();
        let n = ids.len() as u32;
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
        // Each topic starts its round robin one broker further than the last
        // (Kafka starts at a random broker), so the preferred leaderships of topics
        // with fewer partitions than brokers spread over all the brokers.
        let earlier: std::collections::BTreeSet<&str> =
            self.partitions.keys().map(|tp| tp.topic.as_str()).collect();
        let start = earlier.len() as u32;
        let mut effects = Effects::default();
        let topic = NewPartitions {
            topic: &req.name,
            replication_factor: req.replication_factor,
            min_insync_replicas: req.min_insync_replicas,
            start,
        };
        for p in 0..req.partitions {
            self.new_partition(&ids, &topic, p, &mut effects);
        }
        effects.dirty = true;
        let meta = self
            .topic_metadata(&req.name)
            .expect("the topic was just created with at least one partition");
        Ok((meta, effects))
    }

    /// `POST /v1/topics/{topic}/partitions` (Kafka's CreatePartitions): grow the topic
    /// to `count` partitions, the new ones placed as topic creation places them —
    /// the round robin going on from where the topic's partition 0 starts (Kafka
    /// takes the same start) — with the replication factor of partition 0 (not
    /// counting a reassignment's adding replicas) and the topic's
    /// `min_insync_replicas`. A count that does not grow the topic is refused with
    /// `INVALID_PARTITIONS`.
    pub fn create_partitions(
        &mut self,
        req: &CreatePartitions,
    ) -> Result<(TopicMetadata, Effects), ApiError> {
        let existing: Vec<&PartitionState> = self
            .partitions
            .values()
            .filter(|p| p.topic == req.topic)
            .collect();
        let Some(first) = existing.first() else {
            return Err(ApiError::new(
                Code::UnknownTopicOrPartition,
                format!("the controller knows no topic `{}`", req.topic),
            ));
        };
        let have = existing.len() as u32;
        if req.count <= have || req.count > MAX_PARTITIONS {
            return Err(ApiError::new(
                Code::InvalidPartitions,
                format!(
                    "topic `{}` has {have} partitions; count {} must be more than that and at \
                     most {MAX_PARTITIONS} (partitions are never removed)",
                    req.topic, req.count
                ),
            ));
        }
        let ids = self.placement();
        let rf = first.original().len() as u32;
        if rf > ids.len() as u32 {
            return Err(ApiError::invalid(format!(
                "topic `{}` has replication factor {rf}, more than the brokers that take \
                 replicas ({ids:?})",
                req.topic
            )));
        }
        let preferred = first.replicas[0];
        let start = ids.iter().position(|&b| b >= preferred).unwrap_or(0) as u32;
        let topic = NewPartitions {
            topic: &req.topic,
            replication_factor: rf,
            min_insync_replicas: first.min_insync_replicas,
            start,
        };
        let mut effects = Effects::default();
        for p in have..req.count {
            self.new_partition(&ids, &topic, p, &mut effects);
        }
        effects.dirty = true;
        let meta = self.topic_metadata(&req.topic).expect("the topic exists");
        Ok((meta, effects))
    }

    /// Create partition `p` of `topic` on the brokers `ids` (round robin from the
    /// topic's start), led by its first replica not known to be dead.
    fn new_partition(
        &mut self,
        ids: &[BrokerId],
        topic: &NewPartitions,
        p: u32,
        effects: &mut Effects,
    ) {
        let replicas = assign_replicas(ids, topic.start + p, topic.replication_factor);
        let candidates: Vec<BrokerId> = replicas
            .iter()
            .copied()
            .filter(|b| self.brokers[b].liveness != Liveness::Dead)
            .collect();
        let (leader, isr) = match candidates.first() {
            Some(&first) => (first, candidates),
            None => (NO_LEADER, replicas.clone()),
        };
        let name = topic.topic.to_string();
        let state = PartitionState {
            topic: name.clone(),
            partition: p,
            leader,
            leader_epoch: 0,
            partition_epoch: 0,
            isr,
            replicas,
            min_insync_replicas: topic.min_insync_replicas,
            adding: Vec::new(),
            removing: Vec::new(),
        };
        effects.events.push(format!(
            "partition {name}-{p}: created, replicas {}, leader {leader}, isr {}",
            ids_str(&state.replicas),
            ids_str(&state.isr)
        ));
        effects.push(&state);
        self.partitions.insert(
            TopicPartition {
                topic: name,
                partition: p,
            },
            state,
        );
    }
}

impl ControllerState {
    /// The brokers new replicas may be placed on, sorted: every broker but the
    /// decommissioning and decommissioned ones.
    pub(super) fn placement(&self) -> Vec<BrokerId> {
        self.brokers
            .iter()
            .filter(|(_, b)| b.status == BrokerStatus::Active)
            .map(|(&id, _)| id)
            .collect()
    }
}

/// How a topic's new partitions are placed.
struct NewPartitions<'a> {
    topic: &'a str,
    replication_factor: u32,
    min_insync_replicas: u32,
    /// Partition `p` takes the brokers from index `start + p` on.
    start: u32,
}
