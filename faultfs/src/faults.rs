//! The storage faults the filesystem can be told to inject, as a real disk shows
//! them: a full disk (`ENOSPC`) and a failing one (`EIO`), each for a while.
//!
//! - `enospc`: writes, fsyncs, and creating files or directories fail; reading,
//!   cutting a file short, renaming and deleting still work (they need no space).
//! - `eio`: every change fails — writes, fsyncs, cuts, creations, renames,
//!   deletions; reads still work.

use std::time::{Duration, Instant};

/// How the disk fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The disk is full.
    Enospc,
    /// The disk fails.
    Eio,
}

/// What an operation does to the disk, for judging whether a failure stops it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// Writing bytes, or growing a file.
    Write,
    Fsync,
    /// Creating a file or a directory.
    Create,
    /// Cutting a file short, renaming, deleting.
    Free,
}

impl Failure {
    fn errno(self) -> i32 {
        match self {
            Failure::Enospc => libc::ENOSPC,
            Failure::Eio => libc::EIO,
        }
    }

    fn stops(self, op: Op) -> bool {
        match self {
            Failure::Eio => true,
            Failure::Enospc => op != Op::Free,
        }
    }
}

/// The failure in force, if any, and when it ends by itself.
#[derive(Debug, Default)]
pub(crate) struct Switch {
    failing: Option<(Failure, Option<Instant>)>,
}

impl Switch {
    pub fn set(&mut self, failure: Failure, duration: Option<Duration>) {
        self.failing = Some((failure, duration.map(|d| Instant::now() + d)));
    }

    pub fn clear(&mut self) {
        self.failing = None;
    }

    /// The failure in force now (one whose time is up is cleared).
    pub fn current(&mut self) -> Option<Failure> {
        match self.failing {
            Some((_, Some(until))) if Instant::now() >= until => {
                self.failing = None;
                None
            }
            Some((f, _)) => Some(f),
            None => None,
        }
    }

    /// The errno `op` fails with now, if it does.
    pub fn check(&mut self, op: Op) -> Result<(), i32> {
        match self.current() {
            Some(f) if f.stops(op) => Err(f.errno()),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_still_frees_space_and_a_failing_one_does_nothing() {
        let mut s = Switch::default();
        assert_eq!(s.check(Op::Write), Ok(()));
        s.set(Failure::Enospc, None);
        assert_eq!(s.check(Op::Write), Err(libc::ENOSPC));
        assert_eq!(s.check(Op::Create), Err(libc::ENOSPC));
        assert_eq!(s.check(Op::Free), Ok(()));
        s.set(Failure::Eio, None);
        assert_eq!(s.check(Op::Free), Err(libc::EIO));
        s.set(Failure::Eio, Some(Duration::ZERO));
        assert_eq!(s.check(Op::Fsync), Ok(()));
        assert_eq!(s.current(), None);
    }
}
