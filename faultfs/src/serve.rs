//! The threads that serve a mount's requests, and how the scheduler treats them.
//! Every write through the filesystem waits for one of them, so whatever keeps a
//! request waiting for a thread slows every process writing there.

use std::io;
use std::path::Path;

/// Threads serving each mount's requests, each on a `/dev/fuse` of its own. With
/// one, a request that waits (an fsync, tens of milliseconds on a busy disk; a
/// read from disk) holds up every other file's writes behind it, which a disk
/// does not: the broker's checkpoint fsyncs stalled its log appends.
const THREADS: usize = 4;

/// Mount `fs` at `mountpoint` and serve it in the background.
pub(crate) fn mount<FS: fuser::Filesystem + Send + 'static>(
    fs: FS,
    mountpoint: &Path,
    options: Vec<fuser::MountOption>,
) -> io::Result<fuser::BackgroundSession> {
    let mut config = fuser::Config::default();
    config.mount_options = options;
    config.n_threads = Some(THREADS);
    config.clone_fd = true;
    let session = fuser::Session::new(fs, mountpoint, &config)?;
    // The session's threads inherit the scheduling of the thread that starts
    // them: a thread of its own, so that the caller's stays as it was.
    std::thread::Builder::new()
        .name("faultfs-start".into())
        .spawn(move || {
            favoured();
            session.spawn()
        })?
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("starting the FUSE session panicked")))
}

/// Put the calling thread at the lowest real-time priority (`SCHED_FIFO` 1), if
/// allowed (root, `CAP_SYS_NICE` or `RLIMIT_RTPRIO`; else it stays as it is).
///
/// A disk works beside the CPUs; this filesystem's server runs on the same ones as
/// the processes writing through it, and on a machine they keep busy a server
/// thread woken behind them adds their time slices to every write (the broker on
/// two cores: a median write of 70 µs, a mean of 240 µs). Favoured, it runs as soon
/// as a request comes, for the microseconds the request takes, then sleeps again:
/// it cannot keep the CPU from the processes, whose requests are all it serves (and
/// the kernel's real-time throttling bounds it anyway).
fn favoured() {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
}
