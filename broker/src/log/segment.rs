//! One segment file of a log: the frames of a contiguous run of offsets, named by
//! the first of them (`00000000000000000042.log`).
//!
//! Bytes appended to a segment first go to a pending buffer in process memory. The
//! log decides when they reach the file: at once (the OS page cache keeps them across
//! a SIGKILL), or only on flush when simulating the page cache (so a SIGKILL loses
//! them, as a power cut would).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use crate::disk::DiskFaults;

/// Digits of a segment file's base offset.
const NAME_DIGITS: usize = 20;
const SUFFIX: &str = ".log";

/// The file name of the segment starting at `base`.
pub fn file_name(base: u64) -> String {
    format!("{base:0width$}{SUFFIX}", width = NAME_DIGITS)
}

/// The base offset named by a segment file name, if it is one.
pub fn parse_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(SUFFIX)?;
    if digits.len() != NAME_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Attach the file and the action to an I/O error.
pub fn context(e: io::Error, action: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{action} {}: {e}", path.display()))
}

pub struct Segment {
    /// Offset of the first record.
    pub base: u64,
    pub path: PathBuf,
    file: File,
    /// Byte position of each record's frame: record `base + i` starts at `positions[i]`.
    positions: Vec<u64>,
    /// Bytes in the file.
    written: u64,
    /// Bytes appended after `written`, not yet in the file.
    pending: Vec<u8>,
    /// Written since the last fsync.
    dirty: bool,
    /// The file may hold bytes past `written` (a write that failed midway, not cut
    /// off yet): the next write or fsync cuts them first.
    torn: bool,
    /// How the disk behaves (the fault switch).
    faults: DiskFaults,
}

impl Segment {
    /// Create an empty segment file (replacing any file of that name).
    pub fn create(dir: &Path, base: u64, faults: &DiskFaults) -> io::Result<Segment> {
        let path = dir.join(file_name(base));
        faults
            .check_create()
            .map_err(|e| context(e, "cannot create segment", &path))?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| context(e, "cannot create segment", &path))?;
        Ok(Segment {
            base,
            path,
            file,
            positions: Vec::new(),
            written: 0,
            pending: Vec::new(),
            dirty: true,
            torn: false,
            faults: faults.clone(),
        })
    }

    /// Open an existing segment whose first `positions.len()` frames were found valid,
    /// cutting the file to `valid_bytes` if it is longer.
    pub fn open_recovered(
        path: PathBuf,
        base: u64,
        positions: Vec<u64>,
        valid_bytes: u64,
        faults: &DiskFaults,
    ) -> io::Result<Segment> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| context(e, "cannot open segment", &path))?;
        let len = file
            .metadata()
            .map_err(|e| context(e, "cannot stat segment", &path))?
            .len();
        if len != valid_bytes {
            faults
                .set_len(&file, valid_bytes)
                .map_err(|e| context(e, "cannot cut segment", &path))?;
            faults
                .sync_data(&file)
                .and_then(|()| file.sync_all())
                .map_err(|e| context(e, "cannot fsync segment", &path))?;
        }
        Ok(Segment {
            base,
            path,
            file,
            positions,
            written: valid_bytes,
            pending: Vec::new(),
            dirty: false,
            torn: false,
            faults: faults.clone(),
        })
    }

    /// Size including pending bytes.
    pub fn size(&self) -> u64 {
        self.written + self.pending.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// How many frames the segment holds (pending ones included).
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Add one encoded frame (the next offset) to the pending buffer.
    pub fn push(&mut self, frame: &[u8]) {
        self.positions.push(self.size());
        self.pending.extend_from_slice(frame);
    }

    /// Write the pending bytes to the file (no fsync). If the write fails midway the
    /// pending bytes stay pending, and the file is cut back before the next write.
    pub fn write_pending(&mut self) -> io::Result<()> {
        self.cut_torn_tail()?;
        if self.pending.is_empty() {
            return Ok(());
        }
        self.dirty = true;
        if let Err(e) = self
            .faults
            .write_all_at(&self.file, &self.pending, self.written)
        {
            self.torn = true;
            return Err(context(e, "cannot write segment", &self.path));
        }
        self.written += self.pending.len() as u64;
        self.pending.clear();
        Ok(())
    }

    /// Write the pending bytes and fsync the file if anything changed.
    pub fn sync(&mut self) -> io::Result<()> {
        self.write_pending()?;
        if self.dirty {
            self.faults
                .sync_data(&self.file)
                .and_then(|()| self.file.sync_data())
                .map_err(|e| context(e, "cannot fsync segment", &self.path))?;
            self.dirty = false;
        }
        Ok(())
    }

    /// Drop every record at or above `offset` (which must be within this segment).
    pub fn truncate_to(&mut self, offset: u64) -> io::Result<()> {
        let keep = (offset.max(self.base) - self.base) as usize;
        if keep >= self.positions.len() {
            return self.cut_torn_tail();
        }
        let size = self.positions[keep];
        self.undo_to(keep, size)
    }

    /// Go back to holding `frames` frames in `size` bytes, as before later pushes
    /// and writes: in memory at once, in the file by cutting it (if that fails, the
    /// next write or fsync cuts it first, and the error is returned).
    pub fn undo_to(&mut self, frames: usize, size: u64) -> io::Result<()> {
        self.positions.truncate(frames);
        if size >= self.written {
            self.pending.truncate((size - self.written) as usize);
            return self.cut_torn_tail();
        }
        self.pending.clear();
        self.written = size;
        self.torn = true;
        self.cut_torn_tail()
    }

    /// Cut off whatever the file may hold past `written`.
    fn cut_torn_tail(&mut self) -> io::Result<()> {
        if self.torn {
            self.faults
                .set_len(&self.file, self.written)
                .map_err(|e| context(e, "cannot truncate segment", &self.path))?;
            self.torn = false;
            self.dirty = true;
        }
        Ok(())
    }

    /// Forget the pending bytes, as a power cut would.
    #[cfg(test)]
    pub fn discard_pending(&mut self) {
        self.pending.clear();
    }

    /// Delete the file.
    pub fn delete(self) -> io::Result<()> {
        self.faults
            .check_delete()
            .map_err(|e| context(e, "cannot delete segment", &self.path))?;
        drop(self.file);
        fs::remove_file(&self.path).map_err(|e| context(e, "cannot delete segment", &self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strangers_are_ignored() {
        assert_eq!(file_name(42), "00000000000000000042.log");
        assert_eq!(parse_file_name(&file_name(42)), Some(42));
        assert_eq!(parse_file_name(&file_name(u64::MAX)), Some(u64::MAX));
        for other in [
            "42.log",
            "0000000000000000004a.log",
            "00000000000000000042.log.tmp",
            "leader-epoch-checkpoint",
            "99999999999999999999.log",
        ] {
            assert_eq!(parse_file_name(other), None, "{other}");
        }
    }
}
