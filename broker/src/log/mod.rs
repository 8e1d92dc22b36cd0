//! A partition's log on disk: CRC-framed records (offset, leader epoch, key, value)
//! in segment files, recovery that cuts a torn or corrupt tail, a flush policy, and
//! the page-cache simulation that makes SIGKILL lose unflushed bytes like a power cut.
//!
//! The interface below is what the rest of the broker uses; this module owns how it
//! is stored.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::disk::DiskFaults;
pub use crate::value::RecordValue;

pub(crate) mod checkpoint;
mod frame;
mod recovery;
mod segment;

use segment::{Segment, context};

/// Segment size when the configuration leaves it at 0.
pub const DEFAULT_SEGMENT_BYTES: u64 = 1 << 20;

/// One record of a partition's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub offset: u64,
    pub leader_epoch: i32,
    pub key: Option<String>,
    pub value: RecordValue,
    /// The idempotent producer that wrote it, with the record's sequence number
    /// (None: a producer without idempotence). Stored in the frame's payload, so its
    /// CRC covers it; what the leader's producer state is rebuilt from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer: Option<ProducerStamp>,
}

/// Kafka's batch header fields of an idempotent producer's record (KIP-98).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerStamp {
    /// The producer id the controller allocated (InitProducerId).
    pub id: u64,
    /// The producer's epoch: a newer one fences the older.
    pub epoch: u32,
    /// This record's sequence number in its partition, from 0 per producer epoch.
    pub sequence: u32,
    /// How many records of the batch this one was written in follow it (0: the
    /// batch's last; Kafka's batch header holds the same as base sequence + last
    /// offset delta). A batch is replicated and recovered whole or not at all, and
    /// a retry is a duplicate only of a batch held whole: this is where a replica
    /// sees the batch's end. Left out of the JSON when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub records_after: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl ProducerStamp {
    /// The stamp of the first record of a batch of `records` records from producer
    /// `id` in `epoch`, starting at `sequence`; None when the batch is empty or its
    /// last sequence would pass `u32::MAX`.
    pub fn batch(id: u64, epoch: u32, sequence: u32, records: usize) -> Option<ProducerStamp> {
        let records_after = u32::try_from(records.checked_sub(1)?).ok()?;
        sequence.checked_add(records_after)?;
        Some(ProducerStamp {
            id,
            epoch,
            sequence,
            records_after,
        })
    }

    /// The sequence of its batch's last record.
    pub fn last_sequence(&self) -> u32 {
        self.sequence.saturating_add(self.records_after)
    }

    /// The stamp of the record `i` places after this one in its batch.
    pub fn nth(&self, i: u32) -> ProducerStamp {
        ProducerStamp {
            sequence: self.sequence + i,
            records_after: self.records_after - i,
            ..*self
        }
    }
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
    /// The disk's fault switch (healthy unless told otherwise).
    pub faults: DiskFaults,
    /// PLANTED BUG (`--bug append-undo-lost`): a failed append is not taken back, and
    /// recovery cuts at a repeated offset instead of refusing the log.
    pub append_undo_lost: bool,
    /// PLANTED BUG (`--bug flush-skips-fsync`): a flush writes the segments and
    /// counts them flushed, without fsyncing them.
    pub flush_skips_fsync: bool,
}

/// Where a log's files ended before an append ([`Log::undo`]).
struct Mark {
    /// How many segments there were.
    segments: usize,
    /// Frames in the last of them.
    frames: usize,
    /// Its size, pending bytes included.
    size: u64,
}

/// A partition's log in one directory.
///
/// Every record is also kept in memory (the files are the durability, memory serves
/// reads), so a log must fit in memory: fine for test clusters.
pub struct Log {
    dir: PathBuf,
    config: LogConfig,
    /// At least one; the last is the active segment appends go to.
    segments: Vec<Segment>,
    /// `records[i].offset == start + i`.
    records: Vec<Record>,
    start: u64,
    /// Every offset below this is fsynced.
    flushed: u64,
    /// When the oldest unflushed record was appended.
    unflushed_since: Option<Instant>,
    /// Segment files were created or deleted since the directory was last fsynced.
    dir_dirty: bool,
}

/// What recovery may cut when a log opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// Whatever does not read back: the replica re-fetches it from its leader.
    Cut,
    /// Nothing this replica may be the only one to hold (it is in the partition's
    /// ISR, so the controller may elect it): only a torn tail — no whole record past
    /// the cut — and only if the log still reaches the given offset (the lower of
    /// its checkpointed high watermark and recovery point, below which every record
    /// was committed and fsynced: gone, only damage took it).
    /// Anything else is refused (`InvalidData`), the files left as they are.
    KeepCommitted(u64),
}

impl Log {
    /// Open (or create) the log in `dir`, recovering from a crash: every segment is
    /// scanned, and the first torn or corrupt record cuts the log there; a repeated
    /// offset is refused (`InvalidData`, see `recovery`).
    pub fn open(dir: &Path, config: LogConfig) -> io::Result<Log> {
        Log::open_with(dir, config, Recovery::Cut)
    }

    /// [`Log::open`], recovery cutting only what `recovery` allows.
    pub fn open_with(dir: &Path, config: LogConfig, recovery: Recovery) -> io::Result<Log> {
        fs::create_dir_all(dir).map_err(|e| context(e, "cannot create log directory", dir))?;
        let plan = recovery::plan(dir, config.append_undo_lost)?;
        if let Recovery::KeepCommitted(committed) = recovery {
            recovery::keeps_committed(dir, &plan, committed)?;
        }
        let recovered = recovery::apply(dir, plan, &config.faults)?;
        if let Some(cut) = &recovered.cut {
            eprintln!("log {}: recovery: {cut}", dir.display());
        }
        let mut segments = recovered.segments;
        let mut dir_dirty = false;
        if segments.is_empty() {
            segments.push(Segment::create(dir, 0, &config.faults)?);
            dir_dirty = true;
        }
        let start = segments[0].base;
        let mut log = Log {
            dir: dir.to_path_buf(),
            config,
            segments,
            records: recovered.records,
            start,
            flushed: 0,
            unflushed_since: None,
            dir_dirty,
        };
        // What survived the crash may sit only in the page cache: make it durable
        // before reporting it flushed.
        log.flush()?;
        Ok(log)
    }

    /// The offset the next appended record gets (LEO).
    pub fn log_end_offset(&self) -> u64 {
        self.start + self.records.len() as u64
    }

    /// The first offset still in the log (0: no retention yet).
    pub fn log_start_offset(&self) -> u64 {
        self.start
    }

    /// Every offset below this is fsynced (and so survives a power cut, or a SIGKILL
    /// under page-cache simulation).
    pub fn flushed_offset(&self) -> u64 {
        self.flushed
    }

    /// Leader append: assign offsets from LEO; returns the base offset.
    pub fn append(
        &mut self,
        leader_epoch: i32,
        entries: Vec<(Option<String>, RecordValue)>,
    ) -> io::Result<u64> {
        let base = self.log_end_offset();
        let records = entries
            .into_iter()
            .zip(base..)
            .map(|((key, value), offset)| Record {
                offset,
                leader_epoch,
                producer: None,
                key,
                value,
            })
            .collect();
        self.append_records(records)?;
        Ok(base)
    }

    /// Follower append of records fetched from the leader; the first offset must be LEO
    /// and offsets contiguous (else `InvalidInput`).
    pub fn append_replicated(&mut self, records: Vec<Record>) -> io::Result<()> {
        let leo = self.log_end_offset();
        for (record, expected) in records.iter().zip(leo..) {
            if record.offset != expected {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "log {}: replicated record has offset {} where {expected} was expected",
                        self.dir.display(),
                        record.offset
                    ),
                ));
            }
        }
        self.append_records(records)
    }

    /// Records from `offset`, at most `max_records`, stopping before `limit`
    /// (e.g. the high watermark). `offset` past LEO gives an empty list.
    pub fn read(&self, offset: u64, max_records: usize, limit: u64) -> io::Result<Vec<Record>> {
        let end = limit.min(self.log_end_offset());
        let from = offset.max(self.start);
        if from >= end {
            return Ok(Vec::new());
        }
        let first = (from - self.start) as usize;
        let count = ((end - from) as usize).min(max_records);
        Ok(self.records[first..first + count].to_vec())
    }

    /// Remove every record at or above `offset` (no-op if `offset >= LEO`).
    pub fn truncate_to(&mut self, offset: u64) -> io::Result<()> {
        if offset >= self.log_end_offset() {
            return Ok(());
        }
        let offset = offset.max(self.start);
        while self.segments.len() > 1 && self.segments[self.segments.len() - 1].base >= offset {
            let segment = self.segments.pop().expect("more than one segment");
            self.dir_dirty = true;
            segment.delete()?;
        }
        let active = self.segments.last_mut().expect("a log has a segment");
        self.records.truncate((offset - self.start) as usize);
        self.flushed = self.flushed.min(offset);
        if self.flushed == offset {
            self.unflushed_since = None;
        }
        active.truncate_to(offset)
    }

    /// fsync everything appended so far.
    pub fn flush(&mut self) -> io::Result<()> {
        self.sync_files()?;
        self.flushed = self.log_end_offset();
        self.unflushed_since = None;
        Ok(())
    }

    /// Write every pending byte and fsync every segment (and the directory if files
    /// came or went).
    fn sync_files(&mut self) -> io::Result<()> {
        for segment in &mut self.segments {
            if self.config.flush_skips_fsync {
                segment.write_pending()?;
            } else {
                segment.sync()?;
            }
        }
        if self.dir_dirty {
            recovery::sync_dir(&self.dir)?;
            self.dir_dirty = false;
        }
        Ok(())
    }

    /// Apply the time-based flush policy; call it from a timer.
    pub fn flush_if_due(&mut self, now: Instant) -> io::Result<()> {
        if let (Some(ms), Some(since)) = (self.config.flush_ms, self.unflushed_since) {
            if now.saturating_duration_since(since) >= Duration::from_millis(ms) {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Append records whose offsets run on from LEO, then apply the flush policy. All
    /// or nothing: if writing or flushing them fails, the log is left as it was — in
    /// memory at once, in its files as far as the disk lets them be cut (see
    /// [`undo`](Self::undo)) — and the next append takes the same offsets.
    fn append_records(&mut self, records: Vec<Record>) -> io::Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let leo = self.log_end_offset();
        let end = leo.checked_add(records.len() as u64).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("log {}: offsets would overflow", self.dir.display()),
            )
        })?;
        let mut frames = Vec::new();
        let mut ends = Vec::with_capacity(records.len());
        for record in &records {
            frame::encode(record, &mut frames).map_err(|why| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("log {}: {why}", self.dir.display()),
                )
            })?;
            ends.push(frames.len());
        }
        let mark = self.mark();
        let due = self
            .config
            .flush_messages
            .is_some_and(|n| end - self.flushed >= n.max(1));
        let stored = self
            .write_frames(leo, &frames, &ends)
            .and_then(|()| if due { self.sync_files() } else { Ok(()) });
        if let Err(e) = stored {
            if self.config.append_undo_lost {
                // PLANTED BUG (append-undo-lost): the undo of old, by LEO, which has
                // not moved: a no-op, so the failed frames stay queued in the segment
                // and reach the file with the next append, at offsets it takes again.
                let _ = self.truncate_to(leo);
            } else {
                self.undo(mark);
            }
            return Err(e);
        }
        self.records.extend(records);
        if due {
            self.flushed = end;
            self.unflushed_since = None;
        } else {
            self.unflushed_since.get_or_insert_with(Instant::now);
        }
        Ok(())
    }

    /// Where the log's files end now, to [`undo`](Self::undo) an append back to.
    fn mark(&self) -> Mark {
        let active = self.segments.last().expect("a log has a segment");
        Mark {
            segments: self.segments.len(),
            frames: active.len(),
            size: active.size(),
        }
    }

    /// Take back everything added since `mark`: segments created since are deleted,
    /// the active segment is cut back in memory and on disk. A disk that refuses the
    /// cut leaves bytes past the log's end that the next write or fsync cuts first
    /// (and fails if it cannot), so they never precede a record; a crash before that
    /// leaves them to recovery (a segment that could not be deleted starts past the
    /// log's end and is deleted there), and they were never acknowledged. Nothing is
    /// logged: the caller reports the append's own error, and a disk that refused the
    /// write usually refuses the cut too.
    fn undo(&mut self, mark: Mark) {
        while self.segments.len() > mark.segments {
            let segment = self.segments.pop().expect("more segments than marked");
            self.dir_dirty = true;
            let _ = segment.delete();
        }
        let active = self.segments.last_mut().expect("a log has a segment");
        let _ = active.undo_to(mark.frames, mark.size);
    }

    /// Put the frames of offsets `leo..` into segments, rolling past the segment size,
    /// and write them to the files unless the page cache is simulated.
    fn write_frames(&mut self, leo: u64, frames: &[u8], ends: &[usize]) -> io::Result<()> {
        let limit = match self.config.segment_bytes {
            0 => DEFAULT_SEGMENT_BYTES,
            n => n,
        };
        let mut begin = 0;
        for (offset, &end) in (leo..).zip(ends) {
            let frame = &frames[begin..end];
            begin = end;
            let active = self.segments.last().expect("a log has a segment");
            if !active.is_empty() && active.size() + frame.len() as u64 > limit {
                self.segments
                    .push(Segment::create(&self.dir, offset, &self.config.faults)?);
                self.dir_dirty = true;
            }
            self.segments
                .last_mut()
                .expect("a log has a segment")
                .push(frame);
        }
        if !self.config.simulate_page_cache {
            for segment in &mut self.segments {
                segment.write_pending()?;
            }
        }
        Ok(())
    }

    /// Forget unflushed bytes held in process memory and close: a power cut.
    #[cfg(test)]
    fn crash(mut self) {
        for segment in &mut self.segments {
            segment.discard_pending();
        }
    }
}

impl Drop for Log {
    /// Closing the log is not a power cut: what the page cache would hold reaches the
    /// files (without fsync).
    fn drop(&mut self) {
        for segment in &mut self.segments {
            if let Err(e) = segment.write_pending() {
                eprintln!("log {}: on close: {e}", self.dir.display());
            }
        }
    }
}

#[cfg(test)]
mod corruption_tests;
#[cfg(test)]
mod fault_tests;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
