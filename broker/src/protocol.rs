//! The messages between the controller and the nodes (all under `/internal/`), and
//! the metadata shapes both roles answer on `/v1/metadata` (docs/api.md).
//!
//! Controller ↔ node:
//! - `POST /internal/heartbeat` (node → controller): [`Heartbeat`] → [`HeartbeatResponse`].
//!   The first heartbeat registers the broker. A new `broker_epoch` (chosen fresh at
//!   each process start) means the broker restarted: the controller handles it as a
//!   failure followed by a startup, as Kafka does with broker epochs, since a restarted
//!   broker may have lost unflushed records and must not stay in any ISR on trust.
//!   The answer carries the controller's full view of this broker's partitions, so a
//!   lost `leader-and-isr` push is repaired at the next heartbeat, and of every
//!   other partition (UpdateMetadata), so every broker's metadata covers the cluster.
//! - `POST /internal/leader-and-isr` (controller → node): [`LeaderAndIsr`], pushed
//!   whenever a partition's leader or ISR changes. A node ignores requests with a
//!   controller epoch below the highest it has seen (`FENCED_LEADER_EPOCH`), and per
//!   partition any state whose leader epoch / partition epoch is not newer than its own.
//!   The push names the target's broker epoch; a node refuses one meant for an
//!   earlier process of itself (`FENCED_LEADER_EPOCH` with `broker_epoch`). A push
//!   naming a controller epoch newer than the node knows is confirmed with a
//!   heartbeat first: a node learns controller epochs only from its controller's
//!   answers, so a forged epoch is refused (`FENCED_LEADER_EPOCH`).
//!   A partition state that no longer names the receiving broker among its replicas
//!   (a reassignment removed it) is Kafka's StopReplica with deletion: the node stops
//!   its replica (fetching, pending requests) and deletes its directory, once the
//!   state is newer than the replica's own. The controller sends it to the removed
//!   replicas as well as to the remaining ones; a removed broker that missed the push
//!   finds the state among its heartbeat answer's `other_partitions`.
//!
//! Every internal request carries the cluster's credentials when it has them
//! (`crate::auth`).
//! - `POST /internal/alter-partition` (leader → controller): [`AlterPartition`] proposes
//!   a new ISR. The controller accepts it only from the current leader with the current
//!   leader epoch and partition epoch, and answers the new [`PartitionState`]
//!   (partition epoch bumped); a stale proposal gets `FENCED_LEADER_EPOCH`, one that
//!   adds a dead broker or names a follower's stale broker epoch (KIP-903)
//!   `INVALID_REQUEST`. The leader keeps waiting for its proposal (the HW waits for
//!   the members it adds) until a definite answer: it retries the same request when
//!   no answer came, and after `FENCED_LEADER_EPOCH` waits for the newer state.
//! - `POST /internal/confirm-leadership` (leader → controller): [`ConfirmLeadership`],
//!   used by linearizable reads: 200 with the current [`PartitionState`] if the caller
//!   still leads with that leader epoch, else `NOT_LEADER`.

use serde::{Deserialize, Serialize};

use crate::log::Record;

/// A broker id; `-1` stands for "no leader".
pub type BrokerId = i32;
/// A leader epoch: bumped by the controller at every leader election.
pub type LeaderEpoch = i32;
/// Bumped by the controller at every change of a partition's leader or ISR (Kafka's
/// partition epoch), so stale AlterPartition proposals are rejected.
pub type PartitionEpoch = i32;

pub const NO_LEADER: BrokerId = -1;

/// The longest topic name (Kafka's limit). Nodes keep a partition in a directory
/// named `<topic>-<partition>`, which stays within 255 bytes for any partition
/// number the controller allows (at most 4 digits).
pub const MAX_TOPIC_NAME_LEN: usize = 249;

/// The topic name rule, shared by the controller (creation) and the nodes (hosting):
/// 1 to [`MAX_TOPIC_NAME_LEN`] of `[a-zA-Z0-9._-]`, and not `.` or `..`.
pub fn check_topic_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_TOPIC_NAME_LEN {
        return Err(format!(
            "topic name must be 1 to {MAX_TOPIC_NAME_LEN} characters long, got {}",
            name.len()
        ));
    }
    if name == "." || name == ".." {
        return Err(format!("topic name `{name}` is reserved"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "topic name `{name}` contains {c:?}; use only ASCII letters, digits, '.', '_' and '-'"
        ));
    }
    Ok(())
}

/// A topic partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: u32,
}

/// The controller's record of one partition.
///
/// `replicas` is the assigned replicas (AR). While a reassignment is in progress
/// (KIP-455) AR is the target replicas followed by the replicas being removed;
/// `adding` are the target replicas the partition did not have before (they catch up
/// and join the ISR like any follower), `removing` the replicas that leave AR and the
/// ISR once every target replica is in the ISR. Both are empty otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionState {
    pub topic: String,
    pub partition: u32,
    pub leader: BrokerId,
    pub leader_epoch: LeaderEpoch,
    pub partition_epoch: PartitionEpoch,
    pub isr: Vec<BrokerId>,
    pub replicas: Vec<BrokerId>,
    pub min_insync_replicas: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adding: Vec<BrokerId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removing: Vec<BrokerId>,
}

impl PartitionState {
    /// Whether a reassignment is in progress.
    pub fn reassigning(&self) -> bool {
        !self.adding.is_empty() || !self.removing.is_empty()
    }

    /// The replicas a reassignment in progress leads to (AR without the removing
    /// ones); AR itself when none is.
    pub fn target(&self) -> Vec<BrokerId> {
        let removing = &self.removing;
        self.replicas
            .iter()
            .copied()
            .filter(|b| !removing.contains(b))
            .collect()
    }

    /// The replicas before a reassignment in progress (AR without the adding ones);
    /// AR itself when none is.
    pub fn original(&self) -> Vec<BrokerId> {
        let adding = &self.adding;
        self.replicas
            .iter()
            .copied()
            .filter(|b| !adding.contains(b))
            .collect()
    }

    /// The out-of-sync replicas (OSR = AR − ISR), in replica order.
    pub fn osr(&self) -> Vec<BrokerId> {
        let isr = &self.isr;
        self.replicas
            .iter()
            .copied()
            .filter(|b| !isr.contains(b))
            .collect()
    }

    /// Whether this state is newer than `other`: a higher leader epoch, or the same
    /// one with a higher partition epoch (how replicas and metadata caches judge the
    /// controller's messages).
    pub fn newer_than(&self, other: &PartitionState) -> bool {
        self.leader_epoch > other.leader_epoch
            || (self.leader_epoch == other.leader_epoch
                && self.partition_epoch > other.partition_epoch)
    }
}

/// `POST /v1/topics` on the controller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateTopic {
    pub name: String,
    pub partitions: u32,
    pub replication_factor: u32,
    pub min_insync_replicas: u32,
}

/// `POST /v1/topics/{topic}/partitions` on the controller (Kafka's
/// CreatePartitions): `count` is the topic's new total number of partitions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatePartitions {
    pub topic: String,
    pub count: u32,
}

/// `POST /v1/topics/{topic}/partitions/{p}/reassign` (`replicas`: the target) and
/// `DELETE` of the same path (`replicas` None: cancel), on the controller (KIP-455's
/// AlterPartitionReassignments).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlterReassignment {
    pub topic: String,
    pub partition: u32,
    pub replicas: Option<Vec<BrokerId>>,
}

/// Where a broker stands in the cluster's placement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BrokerStatus {
    /// Takes replicas.
    #[default]
    Active,
    /// Being emptied by reassignments (`POST /v1/brokers/{id}/decommission`): takes
    /// no new replica.
    Decommissioning,
    /// Hosts nothing and leads nothing; may be stopped.
    Decommissioned,
}

/// A broker as metadata shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerInfo {
    pub id: BrokerId,
    pub alive: bool,
    /// The address it registered with (`--advertised-address`; None: not known,
    /// e.g. never heard from).
    #[serde(default)]
    pub address: Option<String>,
    #[serde(default)]
    pub status: BrokerStatus,
}

/// One partition in `/v1/metadata`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionMetadata {
    pub partition: u32,
    pub leader: BrokerId,
    pub leader_epoch: LeaderEpoch,
    pub partition_epoch: PartitionEpoch,
    pub isr: Vec<BrokerId>,
    pub replicas: Vec<BrokerId>,
    /// Out-of-sync replicas: `replicas` − `isr`.
    #[serde(default)]
    pub osr: Vec<BrokerId>,
    /// A reassignment in progress: the replicas it adds and removes (empty: none).
    #[serde(default)]
    pub adding: Vec<BrokerId>,
    #[serde(default)]
    pub removing: Vec<BrokerId>,
}

/// One topic in `/v1/metadata`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicMetadata {
    pub name: String,
    pub min_insync_replicas: u32,
    pub partitions: Vec<PartitionMetadata>,
}

/// `GET /v1/metadata`, from the controller or a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// The active controller's broker id as the answering broker knows it (-1: none).
    #[serde(default = "no_controller")]
    pub controller_id: BrokerId,
    pub controller_epoch: i32,
    pub brokers: Vec<BrokerInfo>,
    pub topics: Vec<TopicMetadata>,
}

impl Metadata {
    /// Group partition states into the metadata shape (topics sorted by name).
    pub fn from_states<'a>(
        controller_epoch: i32,
        brokers: Vec<BrokerInfo>,
        states: impl IntoIterator<Item = &'a PartitionState>,
    ) -> Metadata {
        let mut topics: std::collections::BTreeMap<&str, TopicMetadata> = Default::default();
        for s in states {
            let t = topics.entry(&s.topic).or_insert_with(|| TopicMetadata {
                name: s.topic.clone(),
                min_insync_replicas: s.min_insync_replicas,
                partitions: Vec::new(),
            });
            t.partitions.push(PartitionMetadata {
                partition: s.partition,
                leader: s.leader,
                leader_epoch: s.leader_epoch,
                partition_epoch: s.partition_epoch,
                isr: s.isr.clone(),
                replicas: s.replicas.clone(),
                osr: s.osr(),
                adding: s.adding.clone(),
                removing: s.removing.clone(),
            });
        }
        let mut topics: Vec<TopicMetadata> = topics.into_values().collect();
        for t in &mut topics {
            t.partitions.sort_by_key(|p| p.partition);
        }
        Metadata {
            controller_id: NO_LEADER,
            controller_epoch,
            brokers,
            topics,
        }
    }
}

fn no_controller() -> BrokerId {
    NO_LEADER
}

/// `POST /internal/heartbeat`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heartbeat {
    pub broker_id: BrokerId,
    /// Chosen fresh at every process start (e.g. the start time in nanoseconds).
    pub broker_epoch: u64,
    /// Where other brokers reach this one (`--advertised-address`, by default the
    /// listen address). A broker the controller was not started with registers only
    /// with one; brokers given another address for it in `--peers` keep theirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
}

/// The answer to a heartbeat: the controller's view of this broker's partitions
/// (LeaderAndIsr) and of every other partition of the cluster (Kafka's
/// UpdateMetadata), including those this broker no longer replicates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatResponse {
    pub controller_epoch: i32,
    pub brokers: Vec<BrokerInfo>,
    pub partitions: Vec<PartitionState>,
    #[serde(default)]
    pub other_partitions: Vec<PartitionState>,
}

/// `POST /internal/leader-and-isr`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderAndIsr {
    pub controller_epoch: i32,
    /// The target's broker epoch as the controller knows it (None: not registered
    /// yet). A node refuses a push meant for another process of itself: one sent
    /// before it restarted and delivered late must not make it leader at an old epoch.
    #[serde(default)]
    pub broker_epoch: Option<u64>,
    pub brokers: Vec<BrokerInfo>,
    pub partitions: Vec<PartitionState>,
}

/// `POST /internal/alter-partition`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlterPartition {
    pub broker_id: BrokerId,
    pub broker_epoch: u64,
    pub topic: String,
    pub partition: u32,
    pub leader_epoch: LeaderEpoch,
    pub partition_epoch: PartitionEpoch,
    pub new_isr: Vec<BrokerId>,
    /// The broker epoch the leader saw each follower of `new_isr` fetch with
    /// (KIP-903); the controller refuses the proposal if one of them has restarted
    /// since. Followers the leader has no epoch for are left out.
    #[serde(default)]
    pub new_isr_epochs: Vec<IsrMemberEpoch>,
}

/// A proposed ISR member's broker epoch, as its leader saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IsrMemberEpoch {
    pub broker_id: BrokerId,
    pub broker_epoch: u64,
}

/// `POST /internal/confirm-leadership`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfirmLeadership {
    pub broker_id: BrokerId,
    pub topic: String,
    pub partition: u32,
    pub leader_epoch: LeaderEpoch,
}

// Node ↔ node (replication), under `/internal/` on the leader:
// - `POST /internal/fetch`: [`Fetch`] → [`FetchResponse`]. An empty answer
//   waits in the leader's purgatory up to `replica.fetch.wait.max.ms`. Errors:
//   `NOT_LEADER`, `FENCED_LEADER_EPOCH` (the request's epoch is not the leader's, either
//   way), `OFFSET_OUT_OF_RANGE` (with `log_end_offset`, the leader's LEO).
// - `POST /internal/offsets-for-leader-epoch`: [`OffsetsForLeaderEpoch`] →
//   [`EpochEndOffset`] (KIP-101 / KIP-279), fenced by `current_leader_epoch`.

/// `POST /internal/fetch`: a follower's FETCH.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fetch {
    pub topic: String,
    pub partition: u32,
    pub replica_id: BrokerId,
    /// The follower process's broker epoch (KIP-903): the leader forgets what an
    /// earlier process of this broker reported. 0 or absent: not given.
    #[serde(default)]
    pub broker_epoch: u64,
    pub fetch_offset: u64,
    /// The follower's current leader epoch (fences both ways).
    pub leader_epoch: LeaderEpoch,
    pub max_records: usize,
}

/// The leader's FETCH answer: records from the fetch offset (up to `max_records`,
/// never past its LEO), with its HW and LEO.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FetchResponse {
    pub leader_epoch: LeaderEpoch,
    pub high_watermark: u64,
    pub log_end_offset: u64,
    pub records: Vec<Record>,
}

/// `POST /internal/offsets-for-leader-epoch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffsetsForLeaderEpoch {
    pub topic: String,
    pub partition: u32,
    pub replica_id: BrokerId,
    /// The requester's view of the current leader epoch (fencing).
    pub current_leader_epoch: LeaderEpoch,
    /// The epoch whose end offset is asked for (the follower's latest).
    pub leader_epoch: LeaderEpoch,
}

/// The answer: the largest epoch ≤ the requested one that the leader knows, and where
/// it ends; both `-1` (Kafka's UNDEFINED) when the leader knows no such epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochEndOffset {
    pub leader_epoch: LeaderEpoch,
    pub end_offset: i64,
}

impl EpochEndOffset {
    pub fn from_answer(answer: Option<(LeaderEpoch, u64)>) -> Self {
        match answer {
            Some((e, o)) => EpochEndOffset {
                leader_epoch: e,
                end_offset: i64::try_from(o).unwrap_or(i64::MAX),
            },
            None => EpochEndOffset {
                leader_epoch: -1,
                end_offset: -1,
            },
        }
    }

    pub fn to_answer(self) -> Option<(LeaderEpoch, u64)> {
        if self.leader_epoch < 0 || self.end_offset < 0 {
            None
        } else {
            Some((self.leader_epoch, self.end_offset as u64))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(leader_epoch: LeaderEpoch, partition_epoch: PartitionEpoch) -> PartitionState {
        PartitionState {
            topic: "q".into(),
            partition: 0,
            leader: 1,
            leader_epoch,
            partition_epoch,
            isr: vec![3, 1],
            replicas: vec![1, 2, 3],
            min_insync_replicas: 1,
            adding: Vec::new(),
            removing: Vec::new(),
        }
    }

    #[test]
    fn a_state_is_newer_by_leader_epoch_then_partition_epoch() {
        assert!(state(2, 0).newer_than(&state(1, 5)));
        assert!(state(1, 6).newer_than(&state(1, 5)));
        assert!(!state(1, 5).newer_than(&state(1, 5)));
        assert!(!state(1, 9).newer_than(&state(2, 0)));
    }

    #[test]
    fn metadata_shows_the_out_of_sync_replicas_in_replica_order() {
        let md = Metadata::from_states(3, Vec::new(), [&state(1, 1)]);
        let p = &md.topics[0].partitions[0];
        assert_eq!(
            (p.isr.clone(), p.replicas.clone(), p.osr.clone()),
            (vec![3, 1], vec![1, 2, 3], vec![2])
        );
    }

    #[test]
    fn a_reassignment_in_progress_has_a_target_and_an_original_assignment() {
        let mut s = state(1, 1);
        assert!(!s.reassigning());
        assert_eq!(
            (s.target(), s.original()),
            (s.replicas.clone(), s.replicas.clone())
        );
        (s.replicas, s.adding, s.removing) = (vec![2, 4, 1, 3], vec![4], vec![1, 3]);
        assert!(s.reassigning());
        assert_eq!((s.target(), s.original()), (vec![2, 4], vec![2, 1, 3]));
        let md = Metadata::from_states(3, Vec::new(), [&s]);
        let p = &md.topics[0].partitions[0];
        assert_eq!(
            (p.adding.clone(), p.removing.clone()),
            (vec![4], vec![1, 3])
        );
    }
}
