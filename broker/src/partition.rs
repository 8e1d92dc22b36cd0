//! A partition hosted on this node: its replica state machine over the on-disk log,
//! the purgatory its delayed requests wait in, its follower fetch task, and its
//! checkpoint files (high watermark, leader-epoch cache) next to the log.
//!
//! Layout: `DATA_DIR/<topic>-<partition>/log/` (segments), `…/high-watermark`,
//! `…/leader-epoch-checkpoint`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use tokio::task::JoinHandle;

use crate::kv::KeyedLog;
use crate::log::Record;
use crate::log::{Log, LogConfig, checkpoint};
use crate::protocol::{BrokerId, TopicPartition, check_topic_name};
use crate::purgatory::Purgatory;
use crate::replica::{Effects, Replica, ReplicaLog};

/// The replica type a node runs: the real log, with the register view on top.
pub type NodeReplica = Replica<KeyedLog<Log>>;

/// One partition on this node.
pub struct Partition {
    pub tp: TopicPartition,
    dir: PathBuf,
    replica: Mutex<NodeReplica>,
    pub purgatory: Purgatory,
    fetcher: Mutex<Option<JoinHandle<()>>>,
    checkpointed_hw: AtomicU64,
    /// No new ISR proposal before this time (node clock, ms): set after a refusal, so a
    /// leader does not ask every tick for what the controller just declined.
    pub isr_retry_at_ms: AtomicU64,
}

impl Partition {
    /// Open (recovering) the partition's log and checkpoints under `data_dir`.
    pub fn open(
        data_dir: &Path,
        tp: TopicPartition,
        id: BrokerId,
        config: LogConfig,
        lag_time_max_ms: u64,
    ) -> io::Result<(Partition, Effects)> {
        // It becomes a directory name: the same rule as the controller's.
        check_topic_name(&tp.topic).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let dir = data_dir.join(format!("{}-{}", tp.topic, tp.partition));
        let log = Log::open(&dir.join("log"), config)?;
        let epochs = checkpoint::read_epochs(&dir.join("leader-epoch-checkpoint"))?;
        let hw = checkpoint::read_high_watermark(&dir.join("high-watermark"))?;
        let (replica, effects) =
            Replica::open(id, KeyedLog::open(log)?, &epochs, hw, lag_time_max_ms)?;
        let part = Partition {
            tp,
            dir,
            checkpointed_hw: AtomicU64::new(hw),
            replica: Mutex::new(replica),
            purgatory: Purgatory::new(),
            fetcher: Mutex::new(None),
            isr_retry_at_ms: AtomicU64::new(0),
        };
        Ok((part, effects))
    }

    /// The replica, locked. Never held across an `.await`.
    pub fn lock(&self) -> MutexGuard<'_, NodeReplica> {
        self.replica.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Write the epoch cache's checkpoint (call with the lock held, right after the
    /// change, as Kafka flushes its leader-epoch file on every assignment).
    pub fn checkpoint_epochs(&self, epochs: &[(i32, u64)]) -> io::Result<()> {
        checkpoint::write_epochs(&self.dir.join("leader-epoch-checkpoint"), epochs)
    }

    /// Write the high watermark if it moved since the last checkpoint.
    pub fn checkpoint_hw(&self) -> io::Result<()> {
        let hw = self.lock().high_watermark();
        if self.checkpointed_hw.load(Ordering::SeqCst) != hw {
            checkpoint::write_high_watermark(&self.dir.join("high-watermark"), hw)?;
            // Only once written: a failed write is retried at the next checkpoint.
            self.checkpointed_hw.store(hw, Ordering::SeqCst);
        }
        Ok(())
    }

    /// Replace the follower fetch task (None: stop fetching). Called with the replica
    /// lock held (lock order: replica, then fetcher).
    pub fn set_fetcher(&self, task: Option<JoinHandle<()>>) {
        let mut f = self.fetcher.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = f.take() {
            old.abort();
        }
        *f = task;
    }
}

impl ReplicaLog for Log {
    fn log_end_offset(&self) -> u64 {
        Log::log_end_offset(self)
    }
    fn log_start_offset(&self) -> u64 {
        Log::log_start_offset(self)
    }
    fn flushed_offset(&self) -> u64 {
        Log::flushed_offset(self)
    }
    fn append(
        &mut self,
        leader_epoch: i32,
        entries: Vec<(Option<String>, serde_json::Value)>,
    ) -> io::Result<u64> {
        Log::append(self, leader_epoch, entries)
    }
    fn append_replicated(&mut self, records: Vec<Record>) -> io::Result<()> {
        Log::append_replicated(self, records)
    }
    fn read(&self, offset: u64, max_records: usize, limit: u64) -> io::Result<Vec<Record>> {
        Log::read(self, offset, max_records, limit)
    }
    fn truncate_to(&mut self, offset: u64) -> io::Result<()> {
        Log::truncate_to(self, offset)
    }
}
