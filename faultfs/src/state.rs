//! What the FUSE operations and the harness's controls share, under one lock: the
//! inode table, the open files, the journal, the fault switch and the writeback. It
//! is held only for what takes microseconds (an fsync, or a read that may wait for the disk,
//! runs with it released), so that the server's threads do not queue behind one
//! another.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use fuser::{Errno, FileHandle, INodeNo};

use crate::faults::Switch;
use crate::inodes::Inodes;
use crate::journal::Journal;
use crate::writeback::Writeback;

/// Everything the operations and the harness's controls share.
pub(crate) struct State {
    pub inodes: Inodes,
    /// Open files: handle → the real file, shared with the operations that use it
    /// unlocked (reads and fsyncs).
    pub handles: HashMap<u64, Arc<File>>,
    next_handle: u64,
    pub journal: Journal,
    pub switch: Switch,
    /// The kernel's writeback, when the harness asked for one: without it nothing
    /// is on disk but what was fsynced.
    pub writeback: Option<Writeback>,
}

impl State {
    pub fn new(root: &Path, root_ino: u64) -> State {
        State {
            inodes: Inodes::new(root, root_ino),
            handles: HashMap::new(),
            next_handle: 1,
            journal: Journal::default(),
            switch: Switch::default(),
            writeback: None,
        }
    }

    pub fn handle(&mut self, file: File) -> FileHandle {
        let fh = self.next_handle;
        self.next_handle += 1;
        self.handles.insert(fh, Arc::new(file));
        FileHandle(fh)
    }

    pub fn file(&self, fh: FileHandle) -> Result<&Arc<File>, Errno> {
        self.handles.get(&fh.0).ok_or(Errno::EBADF)
    }

    pub fn path(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
        self.inodes
            .path(ino)
            .map(Path::to_path_buf)
            .ok_or(Errno::ENOENT)
    }

    pub fn child(&self, parent: INodeNo, name: &OsStr) -> Result<PathBuf, Errno> {
        self.inodes.child(parent, name).ok_or(Errno::ENOENT)
    }
}

pub(crate) type Shared = Arc<Mutex<State>>;

pub(crate) fn lock(s: &Shared) -> MutexGuard<'_, State> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}
