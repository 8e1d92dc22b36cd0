//! The controller log and the vote on disk, in `DATA_DIR/raft`: `log` holds the
//! entries as frames (length, CRC-32C, JSON), appended and fsynced before openraft
//! counts them written; `vote.json`, `purged.json` and `log-end.json` are replaced
//! atomically and durably, each ending with a checksum line ([`crate::checksum`]).
//! A vote or an entry acknowledged to a peer therefore survives SIGKILL.
//!
//! `log-end.json` is why a damaged log cannot pass for a torn write. It names the
//! last entry of the log, written after the entry's fsync and before openraft hears
//! the append is done (and lowered before a conflicting suffix is cut): every entry
//! this voter ever acknowledged is at or below it. The log file alone cannot say
//! that — a file cut short, or whose last frame was damaged, looks just like a
//! write a crash interrupted.
//!
//! Reading back: a torn end past `log-end.json` (a write the crash interrupted,
//! never acknowledged) is cut off; anything else that does not check — a bad CRC
//! before the last frame, an entry out of sequence, a log ending before the entry
//! `log-end.json` names, a vote, purge point or log end whose checksum fails — is
//! corruption, and the voter refuses to start rather than vote or lead having
//! forgotten what it acknowledged (Raft's safety rests on it). The error names the
//! file and the byte.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{
    Entry, EntryPayload, ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftLogReader, StorageError,
    Vote,
};

use super::TypeConfig;
use crate::checksum;
use crate::disk::DiskFaults;
use crate::fsutil::write_atomic_with;
use read::{HEADER, read_json, read_log};

type Id = u64;

/// The log file's name in the raft dir.
pub const LOG_FILE: &str = "log";
const VOTE_FILE: &str = "vote.json";
const PURGED_FILE: &str = "purged.json";
/// The last entry written to the log (see the module doc).
const END_FILE: &str = "log-end.json";

/// The durable log; clones share it (openraft reads through one while writing).
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    dir: PathBuf,
    file: File,
    /// Entries by index, with the byte offset of each frame.
    entries: BTreeMap<u64, (Entry<TypeConfig>, u64)>,
    /// The log file's length.
    end: u64,
    purged: Option<LogId<Id>>,
    vote: Option<Vote<Id>>,
    /// The node's disk: every write, fsync and cut goes through it.
    faults: DiskFaults,
}

impl LogStore {
    /// Read the log in `dir` (created empty if absent), on the node's disk `faults`;
    /// Err says what is corrupt.
    pub fn open(dir: &Path, faults: &DiskFaults) -> Result<LogStore, String> {
        let path = dir.join(LOG_FILE);
        let vote = read_json::<Vote<Id>>(&dir.join(VOTE_FILE))?;
        let purged = read_json::<LogId<Id>>(&dir.join(PURGED_FILE))?;
        let written = read_json::<Option<LogId<Id>>>(&dir.join(END_FILE))?.flatten();
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let read = read_log(&path, &bytes, purged, written, &dir.join(END_FILE))?;
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let valid = read.valid;
        if let Some(why) = &read.torn {
            eprintln!(
                "controller: cut a torn write of {} bytes off the end of {} at byte {valid} \
                 ({why}; past every acknowledged entry)",
                bytes.len() - valid,
                path.display()
            );
            file.set_len(valid as u64)
                .and_then(|()| file.sync_all())
                .map_err(|e| format!("cannot cut the torn end of {}: {e}", path.display()))?;
        }
        let inner = Inner {
            dir: dir.to_path_buf(),
            file,
            entries: read.entries,
            end: valid as u64,
            purged,
            vote,
            faults: faults.clone(),
        };
        Ok(LogStore {
            inner: Arc::new(Mutex::new(inner)),
        })
    }

    /// The voters of the latest membership entry in the log, if any.
    pub fn last_voters(&self) -> Option<BTreeSet<u64>> {
        let inner = self.lock();
        inner
            .entries
            .values()
            .rev()
            .find_map(|(e, _)| match &e.payload {
                EntryPayload::Membership(m) => Some(m.voter_ids().collect()),
                _ => None,
            })
    }

    /// Nothing was ever written: no entry, no vote.
    pub fn is_pristine(&self) -> bool {
        let inner = self.lock();
        inner.entries.is_empty() && inner.purged.is_none() && inner.vote.is_none()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn frame(entry: &Entry<TypeConfig>) -> io::Result<Vec<u8>> {
    let payload = serde_json::to_vec(entry).map_err(io::Error::other)?;
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// `value` as the contents of a sealed JSON file.
fn json_bytes<T: serde::Serialize>(value: &T) -> io::Result<Vec<u8>> {
    let json = serde_json::to_vec(value).map_err(io::Error::other)?;
    Ok(checksum::seal(&json))
}

fn io_err(subject: ErrorSubject<Id>, verb: ErrorVerb, e: io::Error) -> StorageError<Id> {
    StorageError::from_io_error(subject, verb, e)
}

impl Inner {
    fn append(&mut self, entries: Vec<Entry<TypeConfig>>) -> io::Result<()> {
        let mut buf = Vec::new();
        let mut placed = Vec::with_capacity(entries.len());
        for e in entries {
            placed.push((self.end + buf.len() as u64, e.clone()));
            buf.extend(frame(&e)?);
        }
        let Some(last) = placed.last().map(|(_, e)| e.log_id) else {
            return Ok(());
        };
        // At the log's end, not the file's: a write that failed midway left bytes
        // past it, which this one replaces.
        self.faults.write_all_at(&self.file, &buf, self.end)?;
        self.faults.sync_data(&self.file)?;
        self.end += buf.len() as u64;
        for (off, e) in placed {
            self.entries.insert(e.log_id.index, (e, off));
        }
        // Only now may openraft hear the entries are written (and acknowledge them).
        self.write_end(Some(last))
    }

    /// Record durably that the log ends with entry `last` (see the module doc).
    fn write_end(&self, last: Option<LogId<Id>>) -> io::Result<()> {
        write_atomic_with(&self.dir.join(END_FILE), &json_bytes(&last)?, &self.faults)
    }

    /// Drop entries from `index` on: the log end is lowered first, so that a crash
    /// in between leaves a log longer than its end says, not shorter.
    fn truncate(&mut self, index: u64) -> io::Result<()> {
        let Some((_, off)) = self.entries.range(index..).next().map(|(_, v)| v.clone()) else {
            return Ok(());
        };
        let before = self.entries.range(..index).next_back();
        self.write_end(before.map(|(_, (e, _))| e.log_id).or(self.purged))?;
        self.faults.set_len(&self.file, off)?;
        self.faults.sync_data(&self.file)?;
        self.end = off;
        self.entries.split_off(&index);
        Ok(())
    }

    /// Forget entries up to `log_id`: record it durably, then rewrite the file
    /// with the rest.
    fn purge(&mut self, log_id: LogId<Id>) -> io::Result<()> {
        write_atomic_with(
            &self.dir.join(PURGED_FILE),
            &json_bytes(&log_id)?,
            &self.faults,
        )?;
        self.purged = Some(log_id);
        self.entries = self.entries.split_off(&(log_id.index + 1));
        let mut buf = Vec::new();
        for (e, off) in self.entries.values_mut() {
            *off = buf.len() as u64;
            buf.extend(frame(e)?);
        }
        let path = self.dir.join(LOG_FILE);
        write_atomic_with(&path, &buf, &self.faults)?;
        self.file = OpenOptions::new().write(true).open(&path)?;
        self.end = buf.len() as u64;
        Ok(())
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + std::fmt::Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<Id>> {
        let inner = self.lock();
        Ok(inner
            .entries
            .range(range)
            .map(|(_, (e, _))| e.clone())
            .collect())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<Id>> {
        let inner = self.lock();
        let last = inner.entries.values().next_back().map(|(e, _)| e.log_id);
        Ok(LogState {
            last_purged_log_id: inner.purged,
            last_log_id: last.or(inner.purged),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<Id>) -> Result<(), StorageError<Id>> {
        let mut inner = self.lock();
        let path = inner.dir.join(VOTE_FILE);
        json_bytes(vote)
            .and_then(|b| write_atomic_with(&path, &b, &inner.faults))
            .map_err(|e| io_err(ErrorSubject::Vote, ErrorVerb::Write, e))?;
        inner.vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<Id>>, StorageError<Id>> {
        Ok(self.lock().vote)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<Id>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let written = self.lock().append(entries.into_iter().collect());
        match written {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                let copy = io::Error::new(e.kind(), e.to_string());
                callback.log_io_completed(Err(copy));
                Err(io_err(ErrorSubject::Logs, ErrorVerb::Write, e))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId<Id>) -> Result<(), StorageError<Id>> {
        self.lock()
            .truncate(log_id.index)
            .map_err(|e| io_err(ErrorSubject::Logs, ErrorVerb::Delete, e))
    }

    async fn purge(&mut self, log_id: LogId<Id>) -> Result<(), StorageError<Id>> {
        self.lock()
            .purge(log_id)
            .map_err(|e| io_err(ErrorSubject::Logs, ErrorVerb::Delete, e))
    }
}

mod read;
#[cfg(test)]
mod tests;
