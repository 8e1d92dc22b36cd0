//! The controller log and the vote on disk, in `DATA_DIR/raft`: `log` holds the
//! entries as frames (length, CRC-32C, JSON), appended and fsynced before openraft
//! counts them written; `vote.json` and `purged.json` are replaced atomically and
//! durably. A vote or an entry acknowledged to a peer therefore survives SIGKILL.
//!
//! Reading back: a torn last frame (a write the crash interrupted, never
//! acknowledged) is cut off; anything else that does not check — a bad CRC before the
//! last frame, an entry out of sequence, an unreadable vote — is corruption, and the
//! voter refuses to start rather than vote or lead with a log it cannot trust.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{
    Entry, EntryPayload, ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftLogReader, StorageError,
    Vote,
};
use serde::de::DeserializeOwned;

use super::TypeConfig;
use crate::fsutil::write_atomic;

type Id = u64;

/// The log file's name in the raft dir.
pub const LOG_FILE: &str = "log";
const VOTE_FILE: &str = "vote.json";
const PURGED_FILE: &str = "purged.json";
/// Length and CRC before each frame's JSON.
const HEADER: usize = 8;

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
}

impl LogStore {
    /// Read the log in `dir` (created empty if absent); Err says what is corrupt.
    pub fn open(dir: &Path) -> Result<LogStore, String> {
        let path = dir.join(LOG_FILE);
        let vote = read_json::<Vote<Id>>(&dir.join(VOTE_FILE))?;
        let purged = read_json::<LogId<Id>>(&dir.join(PURGED_FILE))?;
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let corrupt = |off: usize, why: String| {
            format!(
                "the controller's Raft log {} is corrupt at byte {off}: {why}; this voter \
                 cannot trust it (move {} away to rejoin the quorum afresh)",
                path.display(),
                dir.display()
            )
        };
        let (frames, valid) = scan(&bytes).map_err(|(off, why)| corrupt(off, why))?;
        let mut entries = BTreeMap::new();
        let mut next = purged.map(|p| p.index + 1);
        for (off, payload) in frames {
            let entry: Entry<TypeConfig> = serde_json::from_slice(payload)
                .map_err(|e| corrupt(off, format!("unreadable entry ({e})")))?;
            let index = entry.log_id.index;
            if purged.is_some_and(|p| index <= p.index) {
                continue; // purged; the file was not rewritten before a crash
            }
            if next.is_some_and(|n| n != index) {
                return Err(corrupt(
                    off,
                    format!("entry {index} where entry {} was due", next.unwrap_or(0)),
                ));
            }
            next = Some(index + 1);
            entries.insert(index, (entry, off as u64));
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        if valid < bytes.len() {
            eprintln!(
                "controller: cut a torn write of {} bytes off the end of {}",
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
            entries,
            end: valid as u64,
            purged,
            vote,
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

/// A frame's byte offset and its JSON.
type Frame<'a> = (usize, &'a [u8]);

/// The frames of a log file and the length of its valid prefix; Err(offset, why) for
/// corruption. Only the last frame may be torn.
fn scan(bytes: &[u8]) -> Result<(Vec<Frame<'_>>, usize), (usize, String)> {
    let mut frames = Vec::new();
    let mut off = 0;
    while off < bytes.len() {
        let rest = &bytes[off..];
        if rest.len() < HEADER {
            break; // torn header
        }
        let len = u32::from_le_bytes(rest[0..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(rest[4..8].try_into().expect("4 bytes"));
        if rest.len() - HEADER < len {
            break; // torn payload
        }
        let payload = &rest[HEADER..HEADER + len];
        if crc32c::crc32c(payload) != crc {
            if off + HEADER + len == bytes.len() {
                break; // the last frame, torn in place
            }
            return Err((off, "CRC mismatch".into()));
        }
        frames.push((off, payload));
        off += HEADER + len;
    }
    Ok((frames, off))
}

fn frame(entry: &Entry<TypeConfig>) -> io::Result<Vec<u8>> {
    let payload = serde_json::to_vec(entry).map_err(io::Error::other)?;
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, String> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            format!(
                "{} is corrupt ({e}); this voter cannot trust its Raft state",
                path.display()
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

fn json_bytes<T: serde::Serialize>(value: &T) -> io::Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(io::Error::other)
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
        self.file.write_all(&buf)?;
        self.file.sync_data()?;
        self.end += buf.len() as u64;
        for (off, e) in placed {
            self.entries.insert(e.log_id.index, (e, off));
        }
        Ok(())
    }

    /// Drop entries from `index` on.
    fn truncate(&mut self, index: u64) -> io::Result<()> {
        let Some((_, off)) = self.entries.range(index..).next().map(|(_, v)| v.clone()) else {
            return Ok(());
        };
        self.file.set_len(off)?;
        self.file.sync_all()?;
        self.end = off;
        self.entries.split_off(&index);
        Ok(())
    }

    /// Forget entries up to `log_id`: record it durably, then rewrite the file
    /// with the rest.
    fn purge(&mut self, log_id: LogId<Id>) -> io::Result<()> {
        write_atomic(&self.dir.join(PURGED_FILE), &json_bytes(&log_id)?)?;
        self.purged = Some(log_id);
        self.entries = self.entries.split_off(&(log_id.index + 1));
        let mut buf = Vec::new();
        for (e, off) in self.entries.values_mut() {
            *off = buf.len() as u64;
            buf.extend(frame(e)?);
        }
        let path = self.dir.join(LOG_FILE);
        write_atomic(&path, &buf)?;
        self.file = OpenOptions::new().append(true).open(&path)?;
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
            .and_then(|b| write_atomic(&path, &b))
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

#[cfg(test)]
mod tests;
