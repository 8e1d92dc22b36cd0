//! `history.jsonl` as the run writes it: every client and nemesis event numbered,
//! timed and streamed to disk as it happens (docs/history.md), kept in memory for the
//! checker, and counted for the progress display.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use checker::history::{Event, EventType, Process};
use serde_json::Value;
use workloads::recorder::Recorder;

use super::Tally;
use crate::error::{HarnessError, Result};

/// Appends events to `history.jsonl` as they happen, one JSON object per line,
/// each line handed to the kernel in one write: whatever the harness managed to
/// record is on disk if it dies (at worst the last line is cut short). Indices count
/// from 0; times are nanoseconds since `origin`.
pub struct HistoryFile {
    out: File,
    origin: Instant,
    next_index: u64,
    path: PathBuf,
    /// The first write error, reported once; later events are still kept in memory.
    failed: Option<String>,
}

impl HistoryFile {
    pub fn create(path: &Path, origin: Instant) -> Result<HistoryFile> {
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(path)
            .map_err(|e| HarnessError::new(format!("cannot create {}: {e}", path.display())))?;
        Ok(HistoryFile {
            out: file,
            origin,
            next_index: 0,
            path: path.to_path_buf(),
            failed: None,
        })
    }

    /// The next event's index and the time now, since the run started.
    pub fn stamp(&mut self) -> (u64, u64) {
        let index = self.next_index;
        self.next_index += 1;
        let time = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        (index, time)
    }

    /// Write one line.
    pub fn append(&mut self, line: &str) {
        if self.failed.is_some() {
            return;
        }
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        let r = self.out.write_all(&buf);
        if let Err(e) = r {
            let msg = format!("cannot write {}: {e}", self.path.display());
            crate::errln!("watermark: {msg}; the history on disk is incomplete");
            self.failed = Some(msg);
        }
    }

    /// The write error, if writing failed at some point.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }
}

/// The run's history: every client and nemesis event, numbered and timed under one
/// lock (so indices follow the order events happened), streamed to `history.jsonl`,
/// kept in memory for the checker, and counted for the progress bar.
pub struct History {
    inner: Mutex<HistoryInner>,
    tally: Arc<Tally>,
}

struct HistoryInner {
    file: HistoryFile,
    events: Vec<Event>,
}

impl History {
    pub fn new(file: HistoryFile, tally: Arc<Tally>) -> History {
        History {
            inner: Mutex::new(HistoryInner {
                file,
                events: Vec::new(),
            }),
            tally,
        }
    }

    fn push(
        &self,
        process: Process,
        kind: EventType,
        f: &str,
        value: Value,
        error: Option<String>,
    ) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (index, time) = inner.file.stamp();
        let event = Event {
            index,
            time,
            process,
            kind,
            f: f.to_string(),
            value,
            error,
        };
        inner.file.append(&event.to_json_line());
        inner.events.push(event);
    }

    /// Record a nemesis event: `f` names the fault, `value` its targets.
    pub fn nemesis(&self, kind: EventType, f: &str, value: Value) {
        self.push(Process::Nemesis, kind, f, value, None);
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<Event> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.events.clone()
    }

    /// The counts the progress display shows.
    pub fn tally(&self) -> Arc<Tally> {
        self.tally.clone()
    }

    /// A client process number no event so far used (one past the highest), for
    /// operations that must not be mistaken for any client's.
    /// Acknowledged operations per second so far.
    pub fn ok_rates(&self) -> super::OkRates {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        super::OkRates::of(
            inner
                .events
                .iter()
                .filter(|e| matches!(e.process, Process::Client(_)) && e.kind == EventType::Ok)
                .map(|e| e.time),
        )
    }

    pub fn first_free_process(&self) -> u64 {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner
            .events
            .iter()
            .filter_map(|e| match e.process {
                Process::Client(p) => Some(p + 1),
                Process::Nemesis => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// Why the history on disk is incomplete, if it is.
    pub fn write_failure(&self) -> Option<String> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.file.failure().map(str::to_string)
    }
}

impl Recorder for History {
    fn record(&self, process: u64, kind: EventType, f: &str, value: Value, error: Option<String>) {
        self.push(Process::Client(process), kind, f, value, error);
        self.tally.count(kind);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_lines_are_on_disk_as_soon_as_appended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        let mut h = HistoryFile::create(&path, Instant::now()).unwrap();
        assert_eq!(h.stamp().0, 0);
        h.append(r#"{"index":0}"#);
        assert_eq!(h.stamp().0, 1);
        h.append(r#"{"index":1}"#);
        // Read while the writer is still open, as after a crash.
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "{\"index\":0}\n{\"index\":1}\n");
        assert!(h.failure().is_none());
    }
}
