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
use crate::partition::{NodeReplica, Partition};
use crate::protocol::{BrokerInfo, Metadata, PartitionState, TopicPartition};
use crate::replica::{Effects, FetchTask, Transition};

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
        let (part, effects) = Partition::open(
            &node.args.data_dir,
            tp.clone(),
            node.id,
            node.log_config(),
            node.args.replica_lag_time_max_ms,
        )?;
        if let Some(epochs) = &effects.checkpoint_epochs {
            part.checkpoint_epochs(epochs)?;
        }
        let part = Arc::new(part);
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
    let truncation = node.truncation();
    let now = node.now_ms();
    let (transition, epoch) = update(node, &part, |r| {
        let (t, fx) = r.apply_state(state, truncation, now);
        ((t, r.leader_epoch()), fx)
    });
    if transition != Transition::IsrUpdated && transition != Transition::Ignored {
        eprintln!(
            "node {}: {}-{}: {transition:?} at leader epoch {epoch}",
            node.id, tp.topic, tp.partition
        );
    }
}

/// Run one replica event under the partition lock and carry out its effects: the
/// epoch checkpoint and the fetch task change under the lock (so two events cannot
/// leave the older one's checkpoint or fetch task last), then wake the waiters.
pub fn update<T>(
    node: &Arc<Node>,
    part: &Arc<Partition>,
    event: impl FnOnce(&mut NodeReplica) -> (T, Effects),
) -> T {
    let name = format!("node {}: {}-{}", node.id, part.tp.topic, part.tp.partition);
    let (answer, fx) = {
        let mut r = part.lock();
        let (answer, fx) = event(&mut r);
        if let Some(epochs) = &fx.checkpoint_epochs {
            if let Err(e) = part.checkpoint_epochs(epochs) {
                eprintln!("{name}: epoch checkpoint: {e}");
            }
        }
        match fx.fetch_task {
            None => {}
            Some(FetchTask::Stop) => part.set_fetcher(None),
            Some(FetchTask::Start {
                leader,
                leader_epoch,
            }) => part.set_fetcher(Some(fetcher::spawn(
                node.clone(),
                part.clone(),
                leader,
                leader_epoch,
            ))),
        }
        (answer, fx)
    };
    for w in &fx.warnings {
        eprintln!("{name}: {w}");
    }
    if fx.wake {
        part.purgatory.wake();
    }
    answer
}
