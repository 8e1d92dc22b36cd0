//! The storage layer's fault switch: every write, fsync, cut and file creation of a
//! node's logs and checkpoints goes through a [`DiskFaults`], which can be told to
//! fail them with `ENOSPC` (a full disk) or `EIO` (a failing one) for a while, then
//! recover. It exists so that tests and the harness's `disk` fault can show what the
//! broker does when its disk fails, without a small filesystem or root — as LazyFS
//! does for Jepsen, in-process.
//!
//! What each mode does, as a real disk would:
//! - `enospc`: a write stores the first half of its bytes, then fails (a short write
//!   on a disk that fills up midway); fsync, creating a file and replacing one fail;
//!   cutting a file short and deleting one still work (they free space).
//! - `eio`: every write, fsync, cut, creation and deletion fails, having done nothing.
//!
//! The switch is shared by clones (one per node process); the default is healthy.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the disk behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskMode {
    /// Every operation works.
    Ok,
    /// The disk is full: writes stop short, fsyncs and creations fail.
    Enospc,
    /// The disk fails: every change fails.
    Eio,
}

impl DiskMode {
    /// The mode's name, as `/debug/disk` takes and answers it.
    pub fn as_str(self) -> &'static str {
        match self {
            DiskMode::Ok => "ok",
            DiskMode::Enospc => "enospc",
            DiskMode::Eio => "eio",
        }
    }

    /// The mode named `s` (`ok`, `enospc`, `eio`).
    pub fn parse(s: &str) -> Option<DiskMode> {
        [DiskMode::Ok, DiskMode::Enospc, DiskMode::Eio]
            .into_iter()
            .find(|m| m.as_str() == s)
    }
}

/// A mode and when it ends by itself (None: until told otherwise).
#[derive(Debug, Clone, Copy)]
struct Setting {
    mode: DiskMode,
    until: Option<Instant>,
}

/// The fault switch of one node's storage (see the module doc). Clones share it.
#[derive(Debug, Clone)]
pub struct DiskFaults(Arc<Mutex<Setting>>);

impl Default for DiskFaults {
    fn default() -> Self {
        DiskFaults(Arc::new(Mutex::new(Setting {
            mode: DiskMode::Ok,
            until: None,
        })))
    }
}

impl DiskFaults {
    /// Behave as `mode` from now on, for `duration` (None: until set again).
    pub fn set(&self, mode: DiskMode, duration: Option<Duration>) {
        let until = duration.map(|d| Instant::now() + d);
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Setting { mode, until };
    }

    /// The mode in force and how long it still lasts (None: until set again).
    pub fn current(&self) -> (DiskMode, Option<Duration>) {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        match s.until {
            Some(until) if until <= now => {
                *s = Setting {
                    mode: DiskMode::Ok,
                    until: None,
                };
                (DiskMode::Ok, None)
            }
            until => (s.mode, until.map(|u| u - now)),
        }
    }

    fn mode(&self) -> DiskMode {
        self.current().0
    }

    /// The error an operation fails with in `mode` (the caller adds what and where).
    fn error(mode: DiskMode) -> io::Error {
        let errno = match mode {
            DiskMode::Enospc => libc_errno::ENOSPC,
            _ => libc_errno::EIO,
        };
        let os = io::Error::from_raw_os_error(errno);
        io::Error::new(os.kind(), format!("{os} (disk fault)"))
    }

    /// Write all of `buf` at `pos` of `file`.
    pub fn write_all_at(&self, file: &File, buf: &[u8], pos: u64) -> io::Result<()> {
        match self.mode() {
            DiskMode::Ok => file.write_all_at(buf, pos),
            DiskMode::Enospc => {
                // A disk that fills up midway stores part of the write.
                let _ = file.write_all_at(&buf[..buf.len() / 2], pos);
                Err(Self::error(DiskMode::Enospc))
            }
            DiskMode::Eio => Err(Self::error(DiskMode::Eio)),
        }
    }

    /// fsync `file`'s data.
    pub fn sync_data(&self, file: &File) -> io::Result<()> {
        match self.mode() {
            DiskMode::Ok => file.sync_data(),
            mode => Err(Self::error(mode)),
        }
    }

    /// Cut (or extend) `file` to `len` bytes: works on a full disk, not a failing one.
    pub fn set_len(&self, file: &File, len: u64) -> io::Result<()> {
        match self.mode() {
            DiskMode::Eio => Err(Self::error(DiskMode::Eio)),
            _ => file.set_len(len),
        }
    }

    /// May a file be created, or replaced with new contents?
    pub fn check_create(&self) -> io::Result<()> {
        match self.mode() {
            DiskMode::Ok => Ok(()),
            mode => Err(Self::error(mode)),
        }
    }

    /// May a file be deleted or renamed over? (Yes on a full disk, not a failing one.)
    pub fn check_delete(&self) -> io::Result<()> {
        match self.mode() {
            DiskMode::Eio => Err(Self::error(DiskMode::Eio)),
            _ => Ok(()),
        }
    }
}

/// The two errno values the switch produces (Linux's numbers).
mod libc_errno {
    pub const EIO: i32 = 5;
    pub const ENOSPC: i32 = 28;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_fail_as_a_full_or_failing_disk_does() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let faults = DiskFaults::default();
        faults.write_all_at(&file, b"abcd", 0).unwrap();
        faults.set(DiskMode::Enospc, None);
        let e = faults.write_all_at(&file, b"wxyz", 4).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert!(e.to_string().contains("No space left"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), b"abcdwx", "a short write");
        assert!(faults.sync_data(&file).is_err());
        faults.set_len(&file, 4).unwrap();
        assert!(faults.check_create().is_err());
        faults.check_delete().unwrap();
        faults.set(DiskMode::Eio, None);
        let e = faults.write_all_at(&file, b"wxyz", 4).unwrap_err();
        assert!(e.to_string().contains("Input/output error"), "{e}");
        assert!(faults.set_len(&file, 0).is_err());
        assert!(faults.check_delete().is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"abcd");
        faults.set(DiskMode::Ok, None);
        faults.sync_data(&file).unwrap();
    }

    #[test]
    fn a_timed_fault_ends_by_itself_and_clones_share_the_switch() {
        let faults = DiskFaults::default();
        let clone = faults.clone();
        faults.set(DiskMode::Eio, Some(Duration::from_millis(30)));
        let (mode, left) = clone.current();
        assert_eq!(mode, DiskMode::Eio);
        assert!(left.unwrap() <= Duration::from_millis(30));
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(clone.current(), (DiskMode::Ok, None));
        assert_eq!(DiskMode::parse("enospc"), Some(DiskMode::Enospc));
        assert_eq!(DiskMode::parse("full"), None);
    }
}
