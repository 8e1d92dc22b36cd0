//! A fault filesystem: a FUSE passthrough over a real directory that remembers, per
//! file, what has been written since the file was last fsynced, so that a simulated
//! power cut can drop exactly that — as LazyFS does for Jepsen, from outside the
//! process under test. The process sees an ordinary filesystem; the faults are
//! worked from the other side, through a [`Control`]:
//!
//! - [`Control::power_cut`]: every file goes back to what its last fsync left (call
//!   it once the processes writing there are dead: it is the power going out);
//!   torn, the last write of all keeps a prefix;
//! - [`Control::fail`]: a full disk (`ENOSPC`) or a failing one (`EIO`) for a while;
//! - [`Control::write_back_after`]: the kernel's writeback — what stayed unsynced
//!   that long is on disk, as Linux writes back pages dirty for 30 s.
//!
//! Metadata (creating, renaming, deleting files and directories) is durable at once:
//! only file contents are lost. Mounting needs `/dev/fuse` and either root or
//! `fusermount3`; [`Mount`] unmounts when dropped, and a small watcher process
//! unmounts it should this process die without dropping it (SIGKILL included). A
//! mount left anyway (its files answer ENOTCONN) is unmounted by the next mount at
//! the same place.

mod faults;
mod fs;
mod inodes;
mod journal;
mod serve;
mod state;
mod writeback;

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use faults::Failure;
pub use journal::Restored;

use state::{Shared, State, lock};

/// What a power cut did to one file, named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLoss {
    /// The file, relative to the filesystem's root.
    pub path: PathBuf,
    pub restored: Restored,
}

/// The harness's side of a mounted fault filesystem. Clones share it.
#[derive(Clone)]
pub struct Control {
    shared: Shared,
    notifier: fuser::Notifier,
    root: PathBuf,
}

impl Control {
    /// Fail writes, fsyncs and creations (and, `Eio`, every other change) for
    /// `duration` (None: until [`Control::heal`]).
    pub fn fail(&self, failure: Failure, duration: Option<Duration>) {
        lock(&self.shared).switch.set(failure, duration);
    }

    /// Make the disk work again.
    pub fn heal(&self) {
        lock(&self.shared).switch.clear();
    }

    /// The failure in force, if any.
    pub fn failing(&self) -> Option<Failure> {
        lock(&self.shared).switch.current()
    }

    /// Write back what has been written and not fsynced for `after` (None: never;
    /// only an fsync makes a change durable, the default). Linux's defaults are 30 s,
    /// checked every 5 s; a power cut then loses about the last half minute, not
    /// everything a process that never fsyncs wrote.
    pub fn write_back_after(&self, after: Option<Duration>) {
        lock(&self.shared).writeback = after.map(writeback::Writeback::new);
    }

    /// Bytes written and not yet fsynced, over every file.
    pub fn unsynced_bytes(&self) -> u64 {
        lock(&self.shared).journal.unsynced_bytes()
    }

    /// The power goes out: every file loses what was written since its last fsync.
    /// With `torn = Some(n)`, the last write of all keeps its first `n % (len + 1)`
    /// bytes (a write the disk had half done). Every process writing here must be
    /// dead already: a write that comes after is not lost.
    pub fn power_cut(&self, torn: Option<u64>) -> io::Result<Vec<FileLoss>> {
        let (restored, paths) = {
            let mut guard = lock(&self.shared);
            let s = &mut *guard;
            let inodes = &s.inodes;
            let restored = s.journal.power_cut(torn, |key| {
                let path = inodes.path(fuser::INodeNo(key))?;
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(path)
                    .ok()
            })?;
            let paths: Vec<PathBuf> = restored
                .iter()
                .map(|r| {
                    s.inodes
                        .path(fuser::INodeNo(r.file))
                        .and_then(|p| p.strip_prefix(&self.root).ok())
                        .map(Path::to_path_buf)
                        .unwrap_or_default()
                })
                .collect();
            (restored, paths)
        };
        for r in &restored {
            // The kernel's cached pages and sizes are stale now. An inode it does
            // not cache answers ENOENT: nothing to drop.
            let _ = self.notifier.inval_inode(fuser::INodeNo(r.file), 0, 0);
        }
        Ok(paths
            .into_iter()
            .zip(restored)
            .map(|(path, restored)| FileLoss { path, restored })
            .collect())
    }
}

/// Unmount a fault filesystem left at `mountpoint` by a process that died without
/// unmounting it (its files then answer ENOTCONN). Anything else there is left.
fn unmount_stale(mountpoint: &Path) {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
        return;
    };
    let want = mountpoint
        .canonicalize()
        .unwrap_or_else(|_| mountpoint.to_path_buf());
    for line in mounts.lines() {
        let mut fields = line.split(' ');
        let (Some(source), Some(at)) = (fields.next(), fields.next()) else {
            continue;
        };
        if source == FS_NAME && Path::new(at) == want {
            lazy_unmount(&want);
        }
    }
}

/// Detach the mount at `path` (it goes once nothing uses it).
fn lazy_unmount(path: &Path) {
    if let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) {
        // SAFETY: `c` is a NUL-terminated path.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
}

const FS_NAME: &str = "watermark-faultfs";

/// A fault filesystem mounted at `mountpoint` over the real directory `backing`.
/// Dropping it unmounts it.
pub struct Mount {
    session: Option<fuser::BackgroundSession>,
    control: Control,
    mountpoint: PathBuf,
    /// Unmounts the mount should this process die without dropping it.
    watcher: Option<std::process::Child>,
    /// The flusher thread ([`flusher`]): it ends when this is dropped.
    flusher: Option<(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>)>,
}

/// How often the flusher looks while no writeback is asked for.
const IDLE_FLUSHER: Duration = Duration::from_secs(1);

/// The kernel's flusher: wakes as the writeback in force says, and marks written
/// back what has been dirty long enough; ends when `stop` is dropped.
fn flusher(
    shared: Shared,
) -> io::Result<(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>)> {
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("faultfs-flusher".into())
        .spawn(move || {
            let mut interval = IDLE_FLUSHER;
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(interval)
            {
                let mut guard = lock(&shared);
                let s = &mut *guard;
                let Some(w) = s.writeback.as_mut() else {
                    interval = IDLE_FLUSHER;
                    continue;
                };
                interval = w.interval();
                if let Some(mark) = w.wake(std::time::Instant::now(), s.journal.mark()) {
                    s.journal.written_back(mark);
                }
            }
        })?;
    Ok((stop, thread))
}

/// A process that unmounts `mountpoint` (lazily) once its stdin closes: when the
/// [`Mount`] is dropped, or when this process dies, even of SIGKILL — the kernel
/// closes the pipe either way, and the filesystem's server (a thread of this
/// process) is gone with it. None if it cannot be started (then a mount left by a
/// killed process is unmounted by the next mount at the same place).
fn watcher(mountpoint: &Path) -> Option<std::process::Child> {
    std::process::Command::new("/bin/sh")
        .args(["-c", "read -r _; exec umount -l \"$0\" 2>/dev/null"])
        .arg(mountpoint)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()
}

/// Can this machine mount a fault filesystem? An error says what is missing.
pub fn available() -> Result<(), String> {
    if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
    {
        return Err(format!(
            "the fault filesystem needs FUSE: cannot open /dev/fuse ({e}); load the `fuse` kernel module, or give a container `--device /dev/fuse --cap-add SYS_ADMIN`"
        ));
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 && fusermount3().is_none() {
        return Err(
            "the fault filesystem needs root or fusermount3 (Debian: `apt-get install fuse3`)"
                .into(),
        );
    }
    Ok(())
}

fn fusermount3() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("fusermount3"))
            .find(|p| p.is_file())
    })
}

impl Mount {
    /// Mount over `backing` (created if missing) at `mountpoint` (created too).
    pub fn new(backing: &Path, mountpoint: &Path) -> io::Result<Mount> {
        available().map_err(io::Error::other)?;
        std::fs::create_dir_all(backing)?;
        std::fs::create_dir_all(mountpoint)?;
        let backing = backing.canonicalize()?;
        let root_ino = std::fs::metadata(&backing)?.ino();
        let shared: Shared =
            std::sync::Arc::new(std::sync::Mutex::new(State::new(&backing, root_ino)));
        unmount_stale(mountpoint);
        let options = vec![
            fuser::MountOption::FSName(FS_NAME.into()),
            fuser::MountOption::Subtype("faultfs".into()),
        ];
        let session =
            serve::mount(fs::FaultFs(shared.clone()), mountpoint, options).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "cannot mount the fault filesystem at {}: {e}",
                        mountpoint.display()
                    ),
                )
            })?;
        let flusher = flusher(shared.clone())?;
        let control = Control {
            notifier: session.notifier(),
            shared,
            root: backing,
        };
        Ok(Mount {
            session: Some(session),
            control,
            watcher: watcher(mountpoint),
            mountpoint: mountpoint.to_path_buf(),
            flusher: Some(flusher),
        })
    }

    pub fn control(&self) -> Control {
        self.control.clone()
    }

    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// Unmount now (dropping does it too, reporting nothing).
    pub fn unmount(mut self) -> io::Result<()> {
        self.unmount_inner()
    }

    fn unmount_inner(&mut self) -> io::Result<()> {
        let r = match self.session.take() {
            Some(s) => s
                .umount_and_join()
                .inspect_err(|_| lazy_unmount(&self.mountpoint)),
            None => Ok(()),
        };
        if let Some((stop, thread)) = self.flusher.take() {
            drop(stop);
            let _ = thread.join();
        }
        if let Some(mut w) = self.watcher.take() {
            drop(w.stdin.take());
            let _ = w.wait();
        }
        r
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Err(e) = self.unmount_inner() {
            eprintln!(
                "cannot unmount the fault filesystem at {}: {e}",
                self.mountpoint.display()
            );
        }
    }
}
