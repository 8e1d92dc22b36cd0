//! The filesystem's inode numbers and the real paths behind them. An inode number is
//! the real file's own (`st_ino`), swapped with 1 for the real root, so that a
//! number stays the file's across lookups, renames and remounts; the table only
//! remembers where each number was last seen.

use std::collections::HashMap;
use std::fs::Metadata;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use fuser::{FileAttr, FileType, INodeNo};

/// Inode numbers → real paths.
#[derive(Debug)]
pub(crate) struct Inodes {
    /// The real root's own inode number (shown as 1).
    root_ino: u64,
    paths: HashMap<u64, PathBuf>,
}

impl Inodes {
    pub fn new(root: &Path, root_ino: u64) -> Inodes {
        let mut paths = HashMap::new();
        paths.insert(1, root.to_path_buf());
        Inodes { root_ino, paths }
    }

    /// The number the filesystem shows for a real inode number.
    pub fn number(&self, real: u64) -> u64 {
        if real == self.root_ino {
            1
        } else if real == 1 {
            self.root_ino
        } else {
            real
        }
    }

    pub fn path(&self, ino: INodeNo) -> Option<&Path> {
        self.paths.get(&ino.0).map(PathBuf::as_path)
    }

    /// `name` in directory `parent`, if `parent` is known.
    pub fn child(&self, parent: INodeNo, name: &std::ffi::OsStr) -> Option<PathBuf> {
        self.path(parent).map(|p| p.join(name))
    }

    /// Remember that `path` has these attributes; their number is returned.
    pub fn seen(&mut self, path: PathBuf, meta: &Metadata) -> FileAttr {
        let attr = attr(self.number(meta.ino()), meta);
        self.paths.insert(attr.ino.0, path);
        attr
    }

    /// The attributes of what is at `path` (not remembered).
    pub fn attr(&self, meta: &Metadata) -> FileAttr {
        attr(self.number(meta.ino()), meta)
    }

    pub fn removed(&mut self, path: &Path) {
        self.paths.retain(|_, p| p != path);
    }

    /// `from` is now `to`, and so is everything under it.
    pub fn renamed(&mut self, from: &Path, to: &Path) {
        self.paths.retain(|_, p| p != to);
        for p in self.paths.values_mut() {
            if let Ok(rest) = p.strip_prefix(from) {
                *p = if rest.as_os_str().is_empty() {
                    to.to_path_buf()
                } else {
                    to.join(rest)
                };
            }
        }
    }
}

fn kind(meta: &Metadata) -> FileType {
    let t = meta.file_type();
    if t.is_dir() {
        FileType::Directory
    } else if t.is_symlink() {
        FileType::Symlink
    } else if t.is_fifo() {
        FileType::NamedPipe
    } else if t.is_socket() {
        FileType::Socket
    } else if t.is_char_device() {
        FileType::CharDevice
    } else if t.is_block_device() {
        FileType::BlockDevice
    } else {
        FileType::RegularFile
    }
}

pub(crate) fn kind_of(t: std::fs::FileType) -> FileType {
    if t.is_dir() {
        FileType::Directory
    } else if t.is_symlink() {
        FileType::Symlink
    } else {
        FileType::RegularFile
    }
}

fn attr(ino: u64, meta: &Metadata) -> FileAttr {
    let time = |s: i64, ns: i64| {
        UNIX_EPOCH + Duration::new(s.max(0) as u64, ns.clamp(0, 999_999_999) as u32)
    };
    FileAttr {
        ino: INodeNo(ino),
        size: meta.size(),
        blocks: meta.blocks(),
        atime: time(meta.atime(), meta.atime_nsec()),
        mtime: time(meta.mtime(), meta.mtime_nsec()),
        ctime: time(meta.ctime(), meta.ctime_nsec()),
        crtime: time(meta.ctime(), meta.ctime_nsec()),
        kind: kind(meta),
        perm: (meta.mode() & 0o7777) as u16,
        nlink: meta.nlink() as u32,
        uid: meta.uid(),
        gid: meta.gid(),
        rdev: meta.rdev() as u32,
        blksize: meta.blksize() as u32,
        flags: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_root_is_one_and_renames_carry_what_is_under_them() {
        let mut t = Inodes::new(Path::new("/r"), 42);
        assert_eq!(t.number(42), 1);
        assert_eq!(t.number(1), 42);
        assert_eq!(t.number(7), 7);
        t.paths.insert(7, "/r/d".into());
        t.paths.insert(8, "/r/d/f".into());
        t.paths.insert(9, "/r/e".into());
        t.renamed(Path::new("/r/d"), Path::new("/r/e"));
        assert_eq!(t.path(INodeNo(7)), Some(Path::new("/r/e")));
        assert_eq!(t.path(INodeNo(8)), Some(Path::new("/r/e/f")));
        assert_eq!(t.path(INodeNo(9)), None, "the replaced entry is forgotten");
    }
}
