//! The partitions a node hosts (Kafka's ReplicaManager): their data, and the one way
//! their replicas change. Every replica event runs through [`ReplicaManager::update`],
//! which carries out the [`Effects`] the replica returns — writing the epoch
//! checkpoint (the only place a node writes checkpoints, with the HW's), ordering the
//! fetcher to start or stop, waking the partition's waiters — and logs what fails.
//!
//! Controller decisions arrive here too: every LeaderAndIsr push, heartbeat answer
//! and AlterPartition answer goes through [`ReplicaManager::apply_controller`] or
//! [`ReplicaManager::apply_partition_state`], which fence stale controllers
//! (controller epoch) and let each replica judge its own state (leader epoch,
//! partition epoch). They also keep the node's view of every partition of the
//! cluster (its `/v1/metadata`), which never goes back either, and a state that no
//! longer names this node stops and deletes its replica (`removal`).

mod log_dir;
#[cfg(test)]
mod open_tests;
mod partition;
mod removal;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::mpsc;

use super::context::Context;
use crate::error::{ApiError, Code};
use crate::events::{self, Api, Event, FenceReason, TruncationRule};
use crate::log::checkpoint;
use crate::protocol::{BrokerInfo, Metadata, PartitionState, TopicPartition};
use crate::replica::{Effects, FetchTask, ReplicaLog, Transition, Truncation};
use partition::{EPOCHS_FILE, HW_FILE, RECOVERY_POINT_FILE};
pub use partition::{NodeReplica, Partition};

/// What this node last heard from the controller, beyond its replicas.
#[derive(Debug, Clone, Default)]
struct ControllerView {
    /// The highest controller epoch seen; older controllers are fenced.
    epoch: i32,
    /// The brokers and their liveness, as the controller last said.
    brokers: Vec<BrokerInfo>,
    /// Every partition of the cluster as the controller told it (UpdateMetadata: the
    /// heartbeat answers carry them all): a state replaces only an older one (leader
    /// epoch, then partition epoch), so this node's metadata may lag but never goes
    /// back.
    partitions: BTreeMap<TopicPartition, PartitionState>,
}

/// An order for the fetcher: start or stop fetching one partition.
pub struct FetchOrder {
    /// The partition to fetch, or to stop fetching.
    pub part: Arc<Partition>,
    /// What to do.
    pub task: FetchTask,
}

/// Where the fetcher receives its orders, in the order the replicas gave them.
pub type FetchOrders = mpsc::UnboundedReceiver<FetchOrder>;

/// The node's partitions.
pub struct ReplicaManager {
    /// The node's id, settings, clock and links.
    ctx: Arc<Context>,
    /// The hosted partitions; one is added when the controller first names this node
    /// among its replicas, and removed (its directory deleted) when a newer state no
    /// longer names it (a reassignment moved it away).
    partitions: RwLock<BTreeMap<TopicPartition, Arc<Partition>>>,
    /// The controller epoch and brokers the controller last told.
    view: Mutex<ControllerView>,
    /// Where the fetcher's orders go.
    fetch_orders: mpsc::UnboundedSender<FetchOrder>,
    /// Partitions that could not be opened, with why: each reason is logged once,
    /// not at every controller message.
    open_errors: Mutex<BTreeMap<TopicPartition, String>>,
}

impl ReplicaManager {
    /// No partitions yet; the fetcher must take its orders from the receiver.
    pub fn new(ctx: Arc<Context>) -> (ReplicaManager, FetchOrders) {
        let (tx, rx) = mpsc::unbounded_channel();
        let manager = ReplicaManager {
            ctx,
            partitions: RwLock::new(BTreeMap::new()),
            view: Mutex::new(ControllerView::default()),
            fetch_orders: tx,
            open_errors: Mutex::new(BTreeMap::new()),
        };
        (manager, rx)
    }

    /// The node's id, settings, clock and links.
    pub fn ctx(&self) -> &Context {
        &self.ctx
    }

    /// Write `event`'s line (`crate::events`) as this node's.
    pub fn emit(&self, event: &Event) {
        events::emit(self.ctx.id, event);
    }

    /// The hosted partition `tp`, if any.
    pub fn get(&self, tp: &TopicPartition) -> Option<Arc<Partition>> {
        self.partitions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(tp)
            .cloned()
    }

    /// Every hosted partition, by topic and partition.
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

    /// The highest controller epoch this node has learnt (from its controller's
    /// heartbeat answers, or pushes that carried no newer one).
    pub fn controller_epoch(&self) -> i32 {
        self.view.lock().unwrap_or_else(|p| p.into_inner()).epoch
    }

    /// `/v1/metadata` from this node's view: every partition of the cluster.
    pub fn metadata(&self) -> Metadata {
        let view = self.view.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut md = Metadata::from_states(view.epoch, view.brokers, view.partitions.values());
        md.controller_id = self.ctx.active_controller();
        md
    }

    /// Keep `state` in the metadata view if it is newer than the one there (and a
    /// topic's partition count, for the register view, if the topic grew); whether
    /// it was.
    fn remember(&self, state: &PartitionState) -> bool {
        self.ctx.learn_partition(&state.topic, state.partition);
        let tp = TopicPartition {
            topic: state.topic.clone(),
            partition: state.partition,
        };
        let mut v = self.view.lock().unwrap_or_else(|p| p.into_inner());
        match v.partitions.get(&tp) {
            Some(known) if !state.newer_than(known) => false,
            _ => {
                v.partitions.insert(tp, state.clone());
                true
            }
        }
    }

    /// Apply a controller message (LeaderAndIsr push or heartbeat answer, as `api`
    /// says). A message from an older controller epoch is refused with
    /// `FENCED_LEADER_EPOCH`.
    pub fn apply_controller(
        &self,
        api: Api,
        controller_epoch: i32,
        brokers: Vec<BrokerInfo>,
        states: Vec<PartitionState>,
    ) -> Result<(), ApiError> {
        {
            let mut v = self.view.lock().unwrap_or_else(|p| p.into_inner());
            if controller_epoch < v.epoch {
                self.emit(&Event::Fenced {
                    api,
                    reason: FenceReason::StaleControllerEpoch,
                    topic: None,
                    partition: None,
                });
                return Err(ApiError::new(
                    Code::FencedLeaderEpoch,
                    format!(
                        "controller epoch {controller_epoch} is older than {}, already seen",
                        v.epoch
                    ),
                )
                .with("controller_epoch", v.epoch));
            }
            v.epoch = controller_epoch;
            self.ctx.learn_addresses(&brokers);
            v.brokers = brokers;
        }
        for state in states {
            self.apply_partition_state(state);
        }
        Ok(())
    }

    /// Apply one partition's state (also the answer to our AlterPartition), opening
    /// the partition if this node replicates it and has not opened it yet, and
    /// stopping and deleting it if the state no longer names this node.
    pub fn apply_partition_state(&self, state: PartitionState) {
        let fresh = self.remember(&state);
        if !state.replicas.contains(&self.ctx.id) {
            self.stop_replica(state, fresh);
            return;
        }
        let tp = TopicPartition {
            topic: state.topic.clone(),
            partition: state.partition,
        };
        // A replica removed meanwhile (by an older state, applied concurrently) is
        // opened afresh. Under `--truncation hw` (pre-0.11 Kafka, emulated fully)
        // recovery always cuts, as that Kafka's did: its restarted broker stays in
        // the ISR, and refusing there would hide the very losses the mode shows.
        let in_isr =
            state.isr.contains(&self.ctx.id) && self.ctx.config.truncation == Truncation::Epoch;
        for _ in 0..2 {
            let Some(part) = self.open_logged(&tp, in_isr) else {
                return;
            };
            if self.apply_to_replica(&part, state.clone()) {
                return;
            }
        }
    }

    /// The hosted partition `tp`, opened on first use (`in_isr`: the controller's
    /// state names this broker in its ISR, see [`Partition::open`]); None (logged
    /// once per reason) if it cannot be.
    fn open_logged(&self, tp: &TopicPartition, in_isr: bool) -> Option<Arc<Partition>> {
        let ctx = &self.ctx;
        let opened = self.get_or_open(tp, in_isr);
        let mut errors = self.open_errors.lock().unwrap_or_else(|p| p.into_inner());
        match opened {
            Ok(p) => {
                if errors.remove(tp).is_some() {
                    eprintln!("node {}: opened {}-{}", ctx.id, tp.topic, tp.partition);
                }
                Some(p)
            }
            Err(e) => {
                let why = e.to_string();
                if errors.get(tp) != Some(&why) {
                    eprintln!(
                        "node {}: cannot open {}-{}: {why} (not hosting it; retried at every \
                         controller message, logged again only if the reason changes)",
                        ctx.id, tp.topic, tp.partition
                    );
                    errors.insert(tp.clone(), why);
                }
                None
            }
        }
    }

    /// Apply `state` to `part`'s replica and print its transition; false if the
    /// replica was removed meanwhile (nothing applied).
    fn apply_to_replica(&self, part: &Arc<Partition>, state: PartitionState) -> bool {
        let ctx = &self.ctx;
        let (truncation, now) = (ctx.config.truncation, ctx.now_ms());
        let applied = self.update(part, |r| {
            if part.removed.load(Ordering::SeqCst) {
                return (None, crate::replica::Effects::default());
            }
            let (t, fx) = r.apply_state(state, truncation, now);
            (Some((t, r.leader_epoch())), fx)
        });
        let Some((transition, epoch)) = applied else {
            return false;
        };
        if !matches!(transition, Transition::IsrUpdated | Transition::Ignored) {
            eprintln!(
                "node {}: {}: {transition:?} at leader epoch {epoch}",
                ctx.id,
                part.name()
            );
        }
        let (topic, partition, leader_epoch) = (part.tp.topic.clone(), part.tp.partition, epoch);
        match transition {
            Transition::BecameLeader => self.emit(&Event::BecomeLeader {
                topic,
                partition,
                leader_epoch,
            }),
            Transition::BecameFollower { .. } => self.emit(&Event::BecomeFollower {
                topic,
                partition,
                leader_epoch,
            }),
            Transition::BecameOffline | Transition::IsrUpdated | Transition::Ignored => {}
        }
        true
    }

    /// Run one replica event under the partition's lock and carry out its effects:
    /// the epoch checkpoint and the fetch order under the lock (so of two events, the
    /// later one's checkpoint and order come last), then log its warnings and wake
    /// the partition's waiters.
    pub fn update<T>(
        &self,
        part: &Arc<Partition>,
        event: impl FnOnce(&mut NodeReplica) -> (T, Effects),
    ) -> T {
        let (answer, fx) = {
            let mut r = part.lock();
            let (answer, fx) = event(&mut r);
            if let Some(epochs) = &fx.checkpoint_epochs {
                self.checkpoint_epochs(part, epochs);
            }
            if let Some(task) = fx.fetch_task {
                let order = FetchOrder {
                    part: part.clone(),
                    task,
                };
                // Only fails once the fetcher is gone: the node is stopping.
                let _ = self.fetch_orders.send(order);
            }
            (answer, fx)
        };
        for w in &fx.warnings {
            eprintln!("node {}: {}: {w}", self.ctx.id, part.name());
        }
        for t in &fx.truncations {
            self.emit(&Event::Truncate {
                topic: part.tp.topic.clone(),
                partition: part.tp.partition,
                to: t.to,
                records: t.records,
                rule: match t.rule {
                    Truncation::Epoch => TruncationRule::Epoch,
                    Truncation::Hw => TruncationRule::Hw,
                },
            });
        }
        if fx.wake {
            part.purgatory.wake();
        } else if fx.appended {
            part.purgatory.wake_fetches();
        }
        answer
    }

    /// Write the high-watermark checkpoint if the HW moved since the last one (Kafka
    /// does this on a timer), and retry a failed epoch checkpoint. While the
    /// partition's storage fails it is written anyway: a write that works again ends
    /// the streak. Errors are reported to the partition's health; the next call tries
    /// again.
    pub fn checkpoint(&self, part: &Partition) {
        if part.removed.load(Ordering::SeqCst) {
            return;
        }
        if part.epochs_unsaved.load(Ordering::SeqCst) {
            let r = part.lock();
            let epochs = r.epochs().entries().to_vec();
            self.checkpoint_epochs(part, &epochs);
        }
        self.checkpoint_recovery_point(part);
        let hw = part.read().high_watermark();
        let mut written = part
            .checkpointed_hw
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if *written == hw && part.log_dir.failing().is_none() {
            return;
        }
        let faults = &self.ctx.config.log.faults;
        match checkpoint::write_high_watermark(&part.dir.join(HW_FILE), hw, faults) {
            // Only once written: a failed write is retried at the next checkpoint.
            Ok(()) => {
                *written = hw;
                self.storage_ok(part);
            }
            Err(e) => self.storage_error(part, "HW checkpoint", &e),
        }
    }

    /// Write the recovery-point checkpoint if the log's flushed offset moved since the
    /// last one: what recovery may take as fsynced (see [`Partition::open`]). Read
    /// after the fsync it counts, so it never claims more than is on disk.
    fn checkpoint_recovery_point(&self, part: &Partition) {
        let flushed = part.read().log().flushed_offset();
        let mut written = part
            .checkpointed_recovery_point
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if *written == flushed {
            return;
        }
        let faults = &self.ctx.config.log.faults;
        let path = part.dir.join(RECOVERY_POINT_FILE);
        match checkpoint::write_recovery_point(&path, flushed, faults) {
            Ok(()) => {
                *written = flushed;
                self.storage_ok(part);
            }
            Err(e) => self.storage_error(part, "recovery-point checkpoint", &e),
        }
    }

    /// Write the epoch cache's checkpoint, with the replica locked (as Kafka flushes
    /// its leader-epoch file at every change).
    fn checkpoint_epochs(&self, part: &Partition, epochs: &[(i32, u64)]) {
        let faults = &self.ctx.config.log.faults;
        let result = checkpoint::write_epochs(&part.dir.join(EPOCHS_FILE), epochs, faults);
        part.epochs_unsaved.store(result.is_err(), Ordering::SeqCst);
        match result {
            Ok(()) => self.storage_ok(part),
            Err(e) => self.storage_error(
                part,
                "epoch checkpoint (retried at the next HW checkpoint)",
                &e,
            ),
        }
    }

    /// A write for `part` failed (`what`: which one): the first failure of a streak is
    /// logged and wakes the partition's waiters, which acknowledge nothing while it
    /// lasts.
    pub fn storage_error(&self, part: &Partition, what: &str, e: &std::io::Error) {
        // A replica being deleted has no storage left to fail.
        if part.removed.load(Ordering::SeqCst) {
            return;
        }
        if part
            .log_dir
            .failed(self.ctx.now_ms(), format!("{what}: {e}"))
        {
            eprintln!(
                "node {}: {}: storage failing: {what}: {e}; acknowledging nothing until a \
                 write works, leaving every ISR if it fails for {} ms",
                self.ctx.id,
                part.name(),
                self.ctx.config.storage_failure_timeout_ms
            );
            self.emit(&Event::StorageFailure {
                topic: part.tp.topic.clone(),
                partition: part.tp.partition,
                what: format!("{what}: {e}"),
            });
            part.purgatory.wake();
        }
    }

    /// A write for `part` worked: a streak of failures, if any, is over.
    pub fn storage_ok(&self, part: &Partition) {
        if let Some(f) = part.log_dir.recovered() {
            eprintln!(
                "node {}: {}: storage works again after {} ms of failures (last: {})",
                self.ctx.id,
                part.name(),
                self.ctx.now_ms().saturating_sub(f.since_ms),
                f.error
            );
        }
    }

    /// The hosted partition `tp`, opened (recovering its log) on first use.
    fn get_or_open(&self, tp: &TopicPartition, in_isr: bool) -> std::io::Result<Arc<Partition>> {
        if let Some(p) = self.get(tp) {
            return Ok(p);
        }
        let mut map = self.partitions.write().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = map.get(tp) {
            return Ok(p.clone());
        }
        let config = &self.ctx.config;
        let reopened = Partition::dir_in(&config.data_dir, tp).exists();
        let (part, effects) = Partition::open(
            &config.data_dir,
            tp.clone(),
            self.ctx.id,
            config.log.clone(),
            config.replica_lag_time_max_ms,
            config.bugs,
            in_isr,
        )?;
        // Opening does not count as done before the rebuilt cache is on disk.
        if let Some(epochs) = &effects.checkpoint_epochs {
            checkpoint::write_epochs(&part.dir.join(EPOCHS_FILE), epochs, &config.log.faults)?;
        }
        if reopened {
            let r = part.read();
            self.emit(&Event::LogReopened {
                topic: tp.topic.clone(),
                partition: tp.partition,
                leo: r.log_end_offset(),
                hw: r.high_watermark(),
            });
        }
        let part = Arc::new(part);
        map.insert(tp.clone(), part.clone());
        Ok(part)
    }
}
