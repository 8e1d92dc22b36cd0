//! Reading a voter's Raft state back at start, apart from writing it, because here
//! is where damage must be told from a crash: what a crash leaves is cut off, what
//! only damage leaves refuses the start (the module doc of `log_store` says why).
//!
//! The rule, with `log-end.json` naming the last entry this voter acknowledged:
//! every frame up to that entry must read back, in sequence; the first bad frame
//! after it is where an unacknowledged write stopped, and the log is cut there.
//! Without a log end (a voter that never finished an append) only a torn last frame
//! may be cut.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use openraft::{Entry, LogId};
use serde::de::DeserializeOwned;

use super::{Id, TypeConfig};
use crate::checksum;

/// Length and CRC before each frame's JSON.
pub(super) const HEADER: usize = 8;

/// The log as read back.
pub(super) struct Read {
    /// Entries by index, with the byte offset of each frame.
    pub entries: BTreeMap<u64, (Entry<TypeConfig>, u64)>,
    /// Where the good frames end: the file is cut there if it goes on.
    pub valid: usize,
    /// Why the rest is cut, if there is a rest.
    pub torn: Option<String>,
}

/// Where and why reading the frames stopped before the end of the file.
struct Stop {
    off: usize,
    why: String,
    /// The file ends inside this frame, or the frame is the last and bad in place:
    /// what a write interrupted by a crash leaves.
    torn: bool,
}

/// Read the log file `path` (its contents `bytes`), given the purge point and the
/// log end (`written`). Err says what is corrupt, naming the file and the byte.
pub(super) fn read_log(
    path: &Path,
    bytes: &[u8],
    purged: Option<LogId<Id>>,
    written: Option<LogId<Id>>,
    end_file: &Path,
) -> Result<Read, String> {
    let corrupt = |off: usize, why: String| {
        format!(
            "the controller's Raft log {} is corrupt at byte {off}: {why}; this voter \
             cannot trust it (its Raft state is lost: see \"Corruption on disk\" in \
             docs/broker.md before moving {} away)",
            path.display(),
            path.parent().unwrap_or(Path::new(".")).display()
        )
    };
    let (frames, mut stop) = scan(bytes);
    let mut entries = BTreeMap::new();
    let mut next = purged.map(|p| p.index + 1);
    for (off, payload) in frames {
        let entry: Entry<TypeConfig> = match serde_json::from_slice(payload) {
            Ok(e) => e,
            Err(e) => {
                stop = Some(Stop::bad(off, format!("unreadable entry ({e})")));
                break;
            }
        };
        let index = entry.log_id.index;
        if purged.is_some_and(|p| index <= p.index) {
            continue; // purged; the file was not rewritten before a crash
        }
        if let Some(due) = next.filter(|&n| n != index) {
            stop = Some(Stop::bad(
                off,
                format!("entry {index} where entry {due} was due"),
            ));
            break;
        }
        next = Some(index + 1);
        entries.insert(index, (entry, off as u64));
    }
    let valid = stop.as_ref().map_or(bytes.len(), |s| s.off);
    let acknowledged_all = match written {
        None => true,
        Some(w) if purged.is_some_and(|p| w.index <= p.index) => true,
        Some(w) => entries.get(&w.index).map(|(e, _)| e.log_id) == Some(w),
    };
    if let (Some(w), false) = (written, acknowledged_all) {
        let last = entries
            .values()
            .next_back()
            .map(|(e, _)| e.log_id)
            .or(purged);
        let found = match (&stop, last) {
            (Some(s), Some(l)) => format!("{} after entry {l}", s.why),
            (Some(s), None) => format!("{} before any entry", s.why),
            (None, Some(l)) if l.index >= w.index => format!("it holds {l} where {w} was written"),
            (None, Some(l)) => format!("it ends with entry {l}"),
            (None, None) => "it holds no entry".into(),
        };
        return Err(corrupt(
            valid,
            format!(
                "{found}, but {} says entries up to {w} were written and acknowledged \
                 (the log lost entries: cut short, or damaged)",
                end_file.display()
            ),
        ));
    }
    match stop {
        Some(s) if written.is_none() && !s.torn => Err(corrupt(s.off, s.why)),
        stop => Ok(Read {
            entries,
            valid,
            torn: stop.map(|s| s.why),
        }),
    }
}

impl Stop {
    fn bad(off: usize, why: String) -> Stop {
        Stop {
            off,
            why,
            torn: false,
        }
    }
}

/// A frame's byte offset and its JSON.
type Frame<'a> = (usize, &'a [u8]);

/// The frames of a log file whose CRC checks, up to the first that does not.
fn scan(bytes: &[u8]) -> (Vec<Frame<'_>>, Option<Stop>) {
    let mut frames = Vec::new();
    let mut off = 0;
    while off < bytes.len() {
        let rest = &bytes[off..];
        let torn = |why: String| Stop {
            off,
            why,
            torn: true,
        };
        if rest.len() < HEADER {
            return (
                frames,
                Some(torn(format!(
                    "a frame header cut short ({} bytes)",
                    rest.len()
                ))),
            );
        }
        let len = u32::from_le_bytes(rest[0..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(rest[4..8].try_into().expect("4 bytes"));
        if rest.len() - HEADER < len {
            let why = format!(
                "a frame of {len} bytes cut short ({} present)",
                rest.len() - HEADER
            );
            return (frames, Some(torn(why)));
        }
        let payload = &rest[HEADER..HEADER + len];
        if crc32c::crc32c(payload) != crc {
            let last = off + HEADER + len == bytes.len();
            let stop = Stop {
                off,
                why: "CRC mismatch".into(),
                // The last frame, torn in place.
                torn: last,
            };
            return (frames, Some(stop));
        }
        frames.push((off, payload));
        off += HEADER + len;
    }
    (frames, None)
}

/// A sealed JSON file (None: there is none); Err says what is corrupt, and where.
pub(super) fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, String> {
    let refuse = |what: String| {
        format!(
            "{} is {what}; this voter cannot trust its Raft state",
            path.display()
        )
    };
    match std::fs::read(path) {
        Ok(bytes) => {
            let body = checksum::unseal(&bytes).map_err(|c| refuse(c.to_string()))?;
            serde_json::from_slice(body)
                .map(Some)
                .map_err(|e| refuse(format!("corrupt at byte 0: unreadable ({e})")))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}
