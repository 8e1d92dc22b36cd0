//! A partition's log on disk: CRC-framed records (offset, leader epoch, key, value)
//! in segment files, recovery that cuts a torn or corrupt tail, a flush policy, and
//! the page-cache simulation that makes SIGKILL lose unflushed bytes like a power cut.
//!
//! The interface below is what the rest of the broker uses; this module owns how it
//! is stored.

use std::io;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod checkpoint;

/// One record of a partition's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub offset: u64,
    pub leader_epoch: i32,
    pub key: Option<String>,
    pub value: Value,
}

/// How the log flushes (fsyncs), as Kafka's `flush.messages` / `flush.ms`.
#[derive(Debug, Clone, Default)]
pub struct LogConfig {
    /// fsync once this many records are unflushed (None: never by count).
    pub flush_messages: Option<u64>,
    /// fsync when the oldest unflushed record is this old (None: never by time).
    pub flush_ms: Option<u64>,
    /// Hold unflushed bytes in process memory instead of the OS page cache.
    pub simulate_page_cache: bool,
    /// Roll to a new segment file past this many bytes (0: a default).
    pub segment_bytes: u64,
}

/// A partition's log in one directory.
pub struct Log {
    _private: (),
}

impl Log {
    /// Open (or create) the log in `dir`, recovering from a crash: every segment is
    /// scanned, and the first torn or corrupt record cuts the log there.
    pub fn open(dir: &Path, config: LogConfig) -> io::Result<Log> {
        let _ = (dir, config);
        todo!()
    }

    /// The offset the next appended record gets (LEO).
    pub fn log_end_offset(&self) -> u64 {
        todo!()
    }

    /// The first offset still in the log (0: no retention yet).
    pub fn log_start_offset(&self) -> u64 {
        todo!()
    }

    /// Every offset below this is fsynced (or, without page-cache simulation, at least written).
    pub fn flushed_offset(&self) -> u64 {
        todo!()
    }

    /// Leader append: assign offsets from LEO; returns the base offset.
    pub fn append(
        &mut self,
        leader_epoch: i32,
        entries: Vec<(Option<String>, Value)>,
    ) -> io::Result<u64> {
        let _ = (leader_epoch, entries);
        todo!()
    }

    /// Follower append of records fetched from the leader; the first offset must be LEO
    /// and offsets contiguous (else `InvalidInput`).
    pub fn append_replicated(&mut self, records: Vec<Record>) -> io::Result<()> {
        let _ = records;
        todo!()
    }

    /// Records from `offset`, at most `max_records`, stopping before `limit`
    /// (e.g. the high watermark). `offset` past LEO gives an empty list.
    pub fn read(&self, offset: u64, max_records: usize, limit: u64) -> io::Result<Vec<Record>> {
        let _ = (offset, max_records, limit);
        todo!()
    }

    /// Remove every record at or above `offset` (no-op if `offset >= LEO`).
    pub fn truncate_to(&mut self, offset: u64) -> io::Result<()> {
        let _ = offset;
        todo!()
    }

    /// fsync everything appended so far.
    pub fn flush(&mut self) -> io::Result<()> {
        todo!()
    }

    /// Apply the time-based flush policy; call it from a timer.
    pub fn flush_if_due(&mut self, now: Instant) -> io::Result<()> {
        let _ = now;
        todo!()
    }
}
