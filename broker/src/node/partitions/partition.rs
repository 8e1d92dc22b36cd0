//! A partition hosted on this node: its replica state machine over the on-disk log
//! (with the register view on top), the purgatory its delayed requests wait in, and
//! where its checkpoint files (high watermark, leader-epoch cache) live next to the
//! log.
//!
//! Layout: `DATA_DIR/<topic>-<partition>/log/` (segments), `…/high-watermark`,
//! `…/leader-epoch-checkpoint`.
//!
//! Anyone may read the replica ([`Partition::read`]); only the partitions' manager
//! changes it, so that every change's effects are carried out.

use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use crate::value::RecordValue;

use crate::bugs::Bugs;
use crate::kv::KeyedLog;
use crate::log::{Log, LogConfig, Record, Recovery, checkpoint};
use crate::node::purgatory::Purgatory;
use crate::protocol::{BrokerId, TopicPartition, check_topic_name};
use crate::replica::{Effects, Replica, ReplicaLog};

use super::log_dir::LogDirHealth;

/// The replica type a node runs: the real log, with the register view on top.
pub type NodeReplica = Replica<KeyedLog<Log>>;

/// The high-watermark checkpoint's file name, in the partition's directory.
pub(super) const HW_FILE: &str = "high-watermark";
/// The recovery-point checkpoint's file name, in the partition's directory.
pub(super) const RECOVERY_POINT_FILE: &str = "recovery-point";
/// The leader-epoch checkpoint's file name, in the partition's directory.
pub(super) const EPOCHS_FILE: &str = "leader-epoch-checkpoint";

/// One partition on this node.
pub struct Partition {
    /// Which partition.
    pub tp: TopicPartition,
    /// `DATA_DIR/<topic>-<partition>`.
    pub(super) dir: PathBuf,
    /// The replica state machine, over the log (locked: see [`Partition::read`]).
    replica: Mutex<NodeReplica>,
    /// Where its delayed FETCHes, acks=all produces and linearizable reads wait.
    pub purgatory: Purgatory,
    /// The HW last written to its checkpoint (`u64::MAX`: the file must be rewritten);
    /// held while writing, so two writers of the file cannot interleave.
    pub(super) checkpointed_hw: Mutex<u64>,
    /// The recovery point (flushed offset) last written to its checkpoint
    /// (`u64::MAX`: the file must be rewritten); held while writing.
    pub(super) checkpointed_recovery_point: Mutex<u64>,
    /// The last epoch checkpoint failed: write it again at the next HW checkpoint.
    pub(super) epochs_unsaved: AtomicBool,
    /// No new ISR proposal before this time (node clock, ms): set after a refusal, so a
    /// leader does not ask every tick for what the controller just declined.
    pub isr_retry_at_ms: AtomicU64,
    /// Whether its storage works (a streak of failures stops acknowledgements).
    pub log_dir: LogDirHealth,
    /// No longer a replica of this node (StopReplica): its directory is gone, and
    /// nothing is written for it any more.
    pub removed: AtomicBool,
}

/// The replica of a partition, locked for reading. Never held across an `.await`.
pub struct ReplicaRef<'a>(MutexGuard<'a, NodeReplica>);

impl Deref for ReplicaRef<'_> {
    type Target = NodeReplica;

    fn deref(&self) -> &NodeReplica {
        &self.0
    }
}

impl Partition {
    /// Open (recovering) the partition's log and checkpoints under `data_dir`, with
    /// `bugs` planted. The effects say whether the epoch checkpoint must be rewritten.
    ///
    /// `in_isr`: the controller's state names this broker in the partition's ISR.
    /// A restarted broker has left every ISR before it opens a partition (its new
    /// broker epoch, KIP-380) — except one where it was the last member, which the
    /// controller then elects, as the only replica it may. There recovery must not
    /// cut what another replica may hold and nobody would restore: the log is
    /// refused, untouched, if its cut would lose whole records (damage, not a crash)
    /// or leave it below both its checkpointed high watermark and its checkpointed
    /// recovery point ([`Recovery::KeepCommitted`]): records below both were
    /// committed and fsynced, and only damage removes them. Between the two a power
    /// cut may have taken records that were never fsynced — Kafka's own exposure
    /// without a flush policy — and the log opens cut. A refused log opens, cut, at
    /// a controller message that no longer names this broker in the ISR.
    pub(super) fn open(
        data_dir: &Path,
        tp: TopicPartition,
        id: BrokerId,
        config: LogConfig,
        lag_time_max_ms: u64,
        bugs: Bugs,
        in_isr: bool,
    ) -> io::Result<(Partition, Effects)> {
        // It becomes a directory name: the same rule as the controller's.
        check_topic_name(&tp.topic).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let dir = Partition::dir_in(data_dir, &tp);
        // The epoch cache is rebuilt from the log's records; its checkpoint only adds
        // an epoch begun at LEO without records, which a follower drops at its first
        // cut anyway: a damaged one is dropped, with one warning, and rewritten now.
        let (epochs, epochs_dropped) = match checkpoint::read_epochs(&dir.join(EPOCHS_FILE)) {
            Ok(epochs) => (epochs, false),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                eprintln!(
                    "node {id}: {}-{}: {e}; ignored: the leader-epoch cache is rebuilt from \
                     the log and the file rewritten",
                    tp.topic, tp.partition
                );
                (Vec::new(), true)
            }
            Err(e) => return Err(e),
        };
        // The HW checkpoint is advisory (a follower learns the HW from its leader, a
        // leader from its followers): a malformed one is ignored, with one warning,
        // and rewritten at the next checkpoint.
        let (hw, checkpointed_hw) = match checkpoint::read_high_watermark(&dir.join(HW_FILE)) {
            Ok(hw) => (hw, hw),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                eprintln!(
                    "node {id}: {}-{}: {e}; ignored: the high watermark starts at 0 and \
                     the file is rewritten at the next checkpoint",
                    tp.topic, tp.partition
                );
                (0, u64::MAX)
            }
            Err(e) => return Err(e),
        };
        // Advisory too: understated (0), it only lets recovery cut more.
        let (recovery_point, checkpointed_rp) =
            match checkpoint::read_recovery_point(&dir.join(RECOVERY_POINT_FILE)) {
                Ok(rp) => (rp, rp),
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                    eprintln!(
                        "node {id}: {}-{}: {e}; ignored: recovery takes none of the log as \
                         fsynced, and the file is rewritten at the next checkpoint",
                        tp.topic, tp.partition
                    );
                    (0, u64::MAX)
                }
                Err(e) => return Err(e),
            };
        let recovery = match in_isr {
            true => Recovery::KeepCommitted(hw.min(recovery_point)),
            false => Recovery::Cut,
        };
        let log = Log::open_with(&dir.join("log"), config, recovery)?;
        let (mut replica, mut effects) =
            Replica::open(id, KeyedLog::open(log)?, &epochs, hw, lag_time_max_ms)?;
        if epochs_dropped {
            effects.checkpoint_epochs = Some(replica.epochs().entries().to_vec());
        }
        replica.plant(bugs);
        let part = Partition {
            tp,
            dir,
            checkpointed_hw: Mutex::new(checkpointed_hw),
            checkpointed_recovery_point: Mutex::new(checkpointed_rp),
            replica: Mutex::new(replica),
            purgatory: Purgatory::new(),
            epochs_unsaved: AtomicBool::new(false),
            isr_retry_at_ms: AtomicU64::new(0),
            log_dir: LogDirHealth::default(),
            removed: AtomicBool::new(false),
        };
        Ok((part, effects))
    }

    /// Where partition `tp` lives under `data_dir`.
    pub(super) fn dir_in(data_dir: &Path, tp: &TopicPartition) -> PathBuf {
        data_dir.join(format!("{}-{}", tp.topic, tp.partition))
    }

    /// `topic-partition`, for messages.
    pub fn name(&self) -> String {
        format!("{}-{}", self.tp.topic, self.tp.partition)
    }

    /// The replica, locked for reading.
    pub fn read(&self) -> ReplicaRef<'_> {
        ReplicaRef(self.lock())
    }

    /// The replica, locked for a change (by the manager, which carries out its effects).
    pub(super) fn lock(&self) -> MutexGuard<'_, NodeReplica> {
        self.replica.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Apply the log's time-based flush policy (`--flush-ms`).
    pub fn flush_if_due(&self, now: Instant) -> io::Result<()> {
        self.lock().log_mut().inner_mut().flush_if_due(now)
    }

    /// fsync everything appended so far.
    pub fn flush(&self) -> io::Result<()> {
        self.lock().log_mut().inner_mut().flush()
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
        entries: Vec<(Option<String>, RecordValue)>,
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
