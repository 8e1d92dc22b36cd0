//! Every child process group the harness started, in one process-wide registry, and
//! the one long-lived thread that forks them all (`PR_SET_PDEATHSIG` is tied to the
//! forking thread): so that a Ctrl-C or SIGTERM handler, or a panic anywhere, can
//! kill every child ([`kill_all`], [`install_panic_hook`]).

use std::collections::BTreeSet;
use std::process::{Child, Command};
use std::sync::{Mutex, OnceLock, mpsc};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::sync::oneshot;

pub(super) fn signal_group(pid: i32, signal: Signal) {
    // ESRCH (already gone) is fine: the point is that it is gone.
    let _ = killpg(Pid::from_raw(pid), signal);
}

static LIVE: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

pub(super) fn unregister(pid: i32) {
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).remove(&pid);
}

/// Process group ids of every child started and not yet killed or reaped.
pub fn live_groups() -> Vec<i32> {
    let live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    live.iter().copied().collect()
}

/// Continue and SIGKILL every child group started by this process. Safe to call from
/// a panic hook or a signal handler task; does not reap (the process is about to exit).
pub fn kill_all() {
    for pid in live_groups() {
        signal_group(pid, Signal::SIGCONT);
        signal_group(pid, Signal::SIGKILL);
    }
}

/// Chain a panic hook that kills every child group after the default report: a panic
/// anywhere in the harness (even in a task that owns no [`Supervised`]) stops the brokers.
pub fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        kill_all();
    }));
}

/// Make the child killed by the kernel when the harness dies (`PR_SET_PDEATHSIG`),
/// and exit at once if the harness is already gone when it starts.
pub fn die_with_harness(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The harness died between fork and prctl: nobody will kill us.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

struct SpawnRequest {
    cmd: Command,
    reply: oneshot::Sender<std::io::Result<Child>>,
}

/// Fork on the one long-lived spawner thread (see the module doc) and register the
/// child's group before anyone can miss it.
pub(super) async fn spawn(cmd: Command) -> std::io::Result<Child> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("watermark-spawner".into())
            .spawn(move || {
                for mut req in rx {
                    let result = req.cmd.spawn();
                    if let Ok(child) = &result {
                        LIVE.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(child.id() as i32);
                    }
                    if let Err(Ok(mut child)) = req.reply.send(result) {
                        // The caller went away (cancelled): do not leak the child.
                        signal_group(child.id() as i32, Signal::SIGKILL);
                        unregister(child.id() as i32);
                        let _ = child.wait();
                    }
                }
            })
            .expect("spawn the process spawner thread");
        Mutex::new(tx)
    });
    let (tx, rx) = oneshot::channel();
    sender
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send(SpawnRequest { cmd, reply: tx })
        .map_err(|_| std::io::Error::other("the process spawner thread is gone"))?;
    rx.await
        .map_err(|_| std::io::Error::other("the process spawner thread is gone"))?
}
