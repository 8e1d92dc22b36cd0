//! The FUSE operations: each is done on the real file or directory behind it, after
//! the fault switch allows it and the journal has noted how to take it back.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirEntryExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use fuser::{
    Errno, FileHandle, Filesystem, FopenFlags, Generation, INodeNo, LockOwner, OpenFlags,
    RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use crate::faults::Op;
use crate::inodes::kind_of;
use crate::state::{Shared, State, lock};

/// How long the kernel may cache an entry or an inode's attributes. Uncached (zero),
/// every write and read of a process asked the server for the file's attributes
/// too: a third of the broker's produce throughput. Everything that changes a file
/// goes through the mount, so the kernel's copy stays true — except a power cut,
/// which rolls files back behind its back and then invalidates every inode it
/// touched (attributes and pages, `Control::power_cut`); names never change so.
const TTL: Duration = Duration::from_secs(1);

/// The filesystem the FUSE session serves.
pub(crate) struct FaultFs(pub Shared);

fn errno(e: io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

fn check(s: &mut State, op: Op) -> Result<(), Errno> {
    s.switch.check(op).map_err(Errno::from_i32)
}

/// Open a real file for reading and writing (the journal reads what a write
/// overwrites), or as asked if that is refused.
fn open_real(path: &Path, flags: i32) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .or_else(|_| {
            let mode = flags & libc::O_ACCMODE;
            OpenOptions::new()
                .read(mode != libc::O_WRONLY)
                .write(mode != libc::O_RDONLY)
                .open(path)
        })
}

fn opened(reply: ReplyOpen, r: Result<FileHandle, Errno>) {
    match r {
        Ok(fh) => reply.opened(fh, FopenFlags::empty()),
        Err(e) => reply.error(e),
    }
}

fn empty(reply: ReplyEmpty, r: Result<(), Errno>) {
    match r {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}

fn entry(reply: ReplyEntry, r: Result<fuser::FileAttr, Errno>) {
    match r {
        Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
        Err(e) => reply.error(e),
    }
}

impl FaultFs {
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.0)
    }

    /// Do `f` to the entry `name` of `parent` (its real path), if the disk
    /// allows `op` now.
    fn on_entry<T>(
        &self,
        op: Op,
        parent: INodeNo,
        name: &OsStr,
        f: impl FnOnce(&mut State, PathBuf) -> Result<T, Errno>,
    ) -> Result<T, Errno> {
        let mut s = self.state();
        check(&mut s, op)?;
        let path = s.child(parent, name)?;
        f(&mut s, path)
    }
}

impl Filesystem for FaultFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let mut s = self.state();
        entry(
            reply,
            s.child(parent, name).and_then(|path| {
                let meta = fs::symlink_metadata(&path).map_err(errno)?;
                Ok(s.inodes.seen(path, &meta))
            }),
        )
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let s = self.state();
        let meta = match fh.and_then(|fh| s.file(fh).ok()) {
            Some(f) => f.metadata(),
            None => match s.path(ino) {
                Ok(p) => fs::symlink_metadata(p),
                Err(e) => return reply.error(e),
            },
        };
        match meta {
            Ok(m) => reply.attr(&TTL, &s.inodes.attr(&m)),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<std::time::SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<std::time::SystemTime>,
        _chgtime: Option<std::time::SystemTime>,
        _bkuptime: Option<std::time::SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let mut guard = self.state();
        let s = &mut *guard;
        let r = (|| {
            let path = s.path(ino)?;
            let file = match fh.and_then(|fh| s.file(fh).ok()) {
                Some(f) => f.clone(),
                None => Arc::new(open_real(&path, libc::O_RDWR).map_err(errno)?),
            };
            if let Some(size) = size {
                let now = s.journal.len(ino.0, &file).map_err(errno)?;
                check(s, if size <= now { Op::Free } else { Op::Write })?;
                s.journal.set_len(ino.0, &file, size).map_err(errno)?;
            }
            if let Some(mode) = mode {
                fs::set_permissions(&path, fs::Permissions::from_mode(mode & 0o7777))
                    .map_err(errno)?;
            }
            if atime.is_some() || mtime.is_some() {
                let at = |t: Option<TimeOrNow>| match t {
                    Some(TimeOrNow::SpecificTime(t)) => Some(t),
                    Some(TimeOrNow::Now) => Some(std::time::SystemTime::now()),
                    None => None,
                };
                let mut times = fs::FileTimes::new();
                if let Some(t) = at(atime) {
                    times = times.set_accessed(t);
                }
                if let Some(t) = at(mtime) {
                    times = times.set_modified(t);
                }
                file.set_times(times).map_err(errno)?;
            }
            let meta = file.metadata().map_err(errno)?;
            Ok(s.inodes.attr(&meta))
        })();
        match r {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let r = self.on_entry(Op::Create, parent, name, |s, path| {
            fs::create_dir(&path).map_err(errno)?;
            fs::set_permissions(&path, fs::Permissions::from_mode(mode & !umask & 0o7777))
                .map_err(errno)?;
            let meta = fs::symlink_metadata(&path).map_err(errno)?;
            Ok(s.inodes.seen(path, &meta))
        });
        entry(reply, r)
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self.on_entry(Op::Free, parent, name, |s, path| {
            let meta = fs::symlink_metadata(&path).map_err(errno)?;
            fs::remove_file(&path).map_err(errno)?;
            if meta.nlink() <= 1 {
                let ino = s.inodes.number(meta.ino());
                s.journal.forget(ino);
            }
            s.inodes.removed(&path);
            Ok(())
        });
        empty(reply, r)
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self.on_entry(Op::Free, parent, name, |s, path| {
            fs::remove_dir(&path).map_err(errno)?;
            s.inodes.removed(&path);
            Ok(())
        });
        empty(reply, r)
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let mut s = self.state();
        let r = (|| {
            if !flags.is_empty() {
                return Err(Errno::EINVAL);
            }
            check(&mut s, Op::Free)?;
            let from = s.child(parent, name)?;
            let to = s.child(newparent, newname)?;
            if let Ok(old) = fs::symlink_metadata(&to)
                && old.is_file()
                && old.nlink() <= 1
            {
                let ino = s.inodes.number(old.ino());
                s.journal.forget(ino);
            }
            fs::rename(&from, &to).map_err(errno)?;
            s.inodes.renamed(&from, &to);
            Ok(())
        })();
        empty(reply, r)
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let mut s = self.state();
        let r = (|| {
            let path = s.path(ino)?;
            let file = open_real(&path, flags.0).map_err(errno)?;
            Ok(s.handle(file))
        })();
        opened(reply, r)
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        // Unlocked: a read that waits for the disk holds up no other operation.
        let file = self.state().file(fh).cloned();
        let r = file.and_then(|f| {
            let mut buf = vec![0; size as usize];
            let mut n = 0;
            while n < buf.len() {
                match f.read_at(&mut buf[n..], offset + n as u64) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(errno(e)),
                }
            }
            buf.truncate(n);
            Ok(buf)
        });
        match r {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let mut guard = self.state();
        let s = &mut *guard;
        let r = (|| {
            check(s, Op::Write)?;
            let file = s.handles.get(&fh.0).ok_or(Errno::EBADF)?;
            s.journal.write(ino.0, file, offset, data).map_err(errno)?;
            Ok(data.len() as u32)
        })();
        match r {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok()
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.state().handles.remove(&fh.0);
        reply.ok()
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = (|| {
            let (file, mark) = {
                let mut s = self.state();
                check(&mut s, Op::Fsync)?;
                (s.file(fh)?.clone(), s.journal.mark())
            };
            // Unlocked: an fsync can take the disk tens of milliseconds, which
            // would hold up every other file's writes behind it. What is written
            // while it runs stays in the journal (`mark`).
            file.sync_data().map_err(errno)?;
            self.state().journal.synced(ino.0, mark);
            Ok(())
        })();
        empty(reply, r)
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = (|| {
            let path = {
                let mut s = self.state();
                check(&mut s, Op::Fsync)?;
                s.path(ino)?
            };
            // Unlocked, as `fsync`.
            File::open(path).and_then(|d| d.sync_all()).map_err(errno)
        })();
        empty(reply, r)
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let s = self.state();
        let r = (|| {
            let path = s.path(ino)?;
            let mut entries = vec![
                (ino.0, fuser::FileType::Directory, ".".into()),
                (1, fuser::FileType::Directory, "..".into()),
            ];
            for e in fs::read_dir(&path).map_err(errno)? {
                let e = e.map_err(errno)?;
                let kind = e.file_type().map(kind_of).map_err(errno)?;
                entries.push((s.inodes.number(e.ino()), kind, e.file_name()));
            }
            Ok(entries)
        })();
        match r {
            Ok(entries) => {
                for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize)
                {
                    if reply.add(INodeNo(ino), i as u64 + 1, kind, &name) {
                        break;
                    }
                }
                reply.ok()
            }
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let root = self.state().path(INodeNo(1));
        let r = root.and_then(|root| {
            let c = std::ffi::CString::new(root.as_os_str().as_encoded_bytes())
                .map_err(|_| Errno::EINVAL)?;
            let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
            // SAFETY: `c` is a NUL-terminated path and `st` a valid out-pointer.
            if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
                return Err(errno(io::Error::last_os_error()));
            }
            Ok(st)
        });
        match r {
            Ok(st) => reply.statfs(
                st.f_blocks,
                st.f_bfree,
                st.f_bavail,
                st.f_files,
                st.f_ffree,
                st.f_bsize as u32,
                st.f_namemax as u32,
                st.f_frsize as u32,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let mut guard = self.state();
        let s = &mut *guard;
        let r = (|| {
            check(s, Op::Create)?;
            let path = s.child(parent, name)?;
            let existed = fs::symlink_metadata(&path).is_ok();
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .create_new(flags & libc::O_EXCL != 0)
                .mode(mode & !umask & 0o7777)
                .open(&path)
                .map_err(errno)?;
            let meta = file.metadata().map_err(errno)?;
            let attr = s.inodes.seen(path, &meta);
            if !existed {
                // A new file may have the inode number of one deleted while open
                // and written after: what the journal holds under it is not this
                // file's (its length least of all).
                s.journal.forget(attr.ino.0);
            }
            if flags & libc::O_TRUNC != 0 && meta.len() > 0 {
                s.journal.set_len(attr.ino.0, &file, 0).map_err(errno)?;
            }
            let attr = s.inodes.attr(&file.metadata().map_err(errno)?);
            Ok((attr, s.handle(file)))
        })();
        match r {
            Ok((attr, fh)) => reply.created(&TTL, &attr, Generation(0), fh, FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }
}
