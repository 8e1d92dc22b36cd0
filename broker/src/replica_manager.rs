//! The partitions a node hosts, and how controller decisions reach them: every
//! LeaderAndIsr push, heartbeat answer and AlterPartition answer goes through
//! [`apply`], which fences stale controllers (controller epoch), lets each replica
//! judge its own state (leader epoch, partition epoch), and starts or stops the
//! follower fetch task when a replica changes role.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

use crate::error::{ApiError, Code};
use crate::fetcher;
use crate::node::Node;
use crate::partition::Partition;
use crate::protocol::{BrokerInfo, Metadata, PartitionState, TopicPartition};
use crate::replica::Transition;

/// What this node last heard from the controller, beyond partitions.
#[derive(Debug, Clone, Default)]
pub struct ControllerView {
    /// The highest controller epoch seen; older controllers are fenced.
    pub epoch: i32,
    pub brokers: Vec<BrokerInfo>,
}

/// The node's partitions.
#[derive(Default)]
pub struct ReplicaManager {
    partitions: RwLock<BTreeMap<TopicPartition, Arc<Partition>>>,
    view: Mutex<ControllerView>,
}

impl ReplicaManager {
    pub fn get(&self, tp: &TopicPartition) -> Option<Arc<Partition>> {
        self.partitions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(tp)
            .cloned()
    }

    pub fn all(&self) -> Vec<Arc<Partition>> {
        self.partitions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// The hosted partition, or `UNKNOWN_TOPIC_OR_PARTITION`.
    pub fn require(&self, topic: &str, partition: u32) -> Result<Arc<Partition>, ApiError> {
        let tp = TopicPartition {
            topic: topic.to_string(),
            partition,
        };
        self.get(&tp).ok_or_else(|| {
            ApiError::new(
                Code::UnknownTopicOrPartition,
                format!("this broker hosts no partition {partition} of topic `{topic}`"),
            )
        })
    }

    pub fn view(&self) -> ControllerView {
        self.view.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Accept a message from a controller with `epoch`, unless a newer controller
    /// has spoken already.
    fn accept_controller(&self, epoch: i32, brokers: Vec<BrokerInfo>) -> bool {
        let mut v = self.view.lock().unwrap_or_else(|p| p.into_inner());
        if epoch < v.epoch {
            return false;
        }
        v.epoch = epoch;
        v.brokers = brokers;
        true
    }

    /// `/v1/metadata` from this node's view.
    pub fn metadata(&self) -> Metadata {
        let view = self.view();
        let states: Vec<PartitionState> = self
            .all()
            .iter()
            .filter_map(|p| p.lock().state().cloned())
            .collect();
        Metadata::from_states(view.epoch, view.brokers, &states)
    }

    fn get_or_open(&self, node: &Node, tp: &TopicPartition) -> std::io::Result<Arc<Partition>> {
        if let Some(p) = self.get(tp) {
            return Ok(p);
        }
        let mut map = self.partitions.write().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = map.get(tp) {
            return Ok(p.clone());
        }
        let part = Arc::new(Partition::open(
            &node.args.data_dir,
            tp.clone(),
            node.id,
            node.log_config(),
            node.args.replica_lag_time_max_ms,
        )?);
        part.lock().plant(node.bugs);
        map.insert(tp.clone(), part.clone());
        Ok(part)
    }
}

/// Apply a controller message (LeaderAndIsr push or heartbeat answer). A message from
/// an older controller epoch is refused with `FENCED_LEADER_EPOCH`.
pub fn apply(
    node: &Arc<Node>,
    controller_epoch: i32,
    brokers: Vec<BrokerInfo>,
    states: Vec<PartitionState>,
) -> Result<(), ApiError> {
    if !node.manager.accept_controller(controller_epoch, brokers) {
        let seen = node.manager.view().epoch;
        return Err(ApiError::new(
            Code::FencedLeaderEpoch,
            format!("controller epoch {controller_epoch} is older than {seen}, already seen"),
        )
        .with("controller_epoch", seen));
    }
    for state in states {
        apply_partition_state(node, state);
    }
    Ok(())
}

/// Apply one partition's state (also the answer to our AlterPartition).
pub fn apply_partition_state(node: &Arc<Node>, state: PartitionState) {
    if !state.replicas.contains(&node.id) {
        return;
    }
    let tp = TopicPartition {
        topic: state.topic.clone(),
        partition: state.partition,
    };
    let part = match node.manager.get_or_open(node, &tp) {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "node {}: cannot open {}-{}: {e}",
                node.id, tp.topic, tp.partition
            );
            return;
        }
    };
    // The fetch task is swapped under the replica lock, so two controller messages
    // applied concurrently cannot leave the older one's task running.
    let (transition, epoch) = {
        let mut r = part.lock();
        let t = match r.apply_state(state, node.args.truncation, node.now_ms()) {
            Ok(t) => t,
            Err(e) => {
                eprintln!(
                    "node {}: {}-{}: applying state: {e}",
                    node.id, tp.topic, tp.partition
                );
                return;
            }
        };
        if let Err(e) = part.checkpoint_epochs(&mut r) {
            eprintln!(
                "node {}: {}-{}: epoch checkpoint: {e}",
                node.id, tp.topic, tp.partition
            );
        }
        let epoch = r.leader_epoch();
        match t {
            Transition::Ignored => return,
            Transition::IsrUpdated => {}
            Transition::BecameLeader | Transition::BecameOffline => part.set_fetcher(None),
            Transition::BecameFollower { leader } => {
                part.set_fetcher(Some(fetcher::spawn(
                    node.clone(),
                    part.clone(),
                    leader,
                    epoch,
                )));
            }
        }
        (t, epoch)
    };
    if transition != Transition::IsrUpdated {
        eprintln!(
            "node {}: {}-{}: {transition:?} at leader epoch {epoch}",
            node.id, tp.topic, tp.partition
        );
    }
    part.purgatory.wake();
}
