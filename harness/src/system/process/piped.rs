//! A child whose stdin and stdout belong to the harness: a node of a system tested
//! through Maelstrom's protocol, which reads its messages on stdin and writes its
//! own on stdout. It has the guarantees of every child of the harness (see
//! [`super::supervisor`]): its own process group, every signal sent to the group,
//! `PR_SET_PDEATHSIG(SIGKILL)`, the registry that a Ctrl-C or a panic empties, and
//! a kill when dropped. Unlike a broker it announces nothing: it runs as soon as it
//! is forked, and what it says on stdout is the caller's to read.
//!
//! The child is reaped once, under a lock, and signalled only while not yet reaped,
//! so a signal never reaches a recycled pid.

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::groups::{die_with_harness, signal_group, spawn, unregister};
use crate::error::{HarnessError, Result};

/// How long a SIGKILLed child may take to be reaped.
const KILL_TIMEOUT: Duration = Duration::from_secs(60);

/// One start of a piped child.
#[derive(Debug)]
pub struct PipedChild {
    pid: i32,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    child: Child,
    status: Option<ExitStatus>,
    /// The harness has sent SIGKILL.
    killing: bool,
}

impl PipedChild {
    /// Start `program` with `args` in `dir`, its stderr appended to `stderr`.
    pub async fn spawn(
        program: &Path,
        args: &[OsString],
        env: &[(OsString, OsString)],
        dir: &Path,
        stderr: File,
    ) -> Result<(PipedChild, ChildStdin, ChildStdout)> {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .process_group(0);
        die_with_harness(&mut cmd);
        let mut child = spawn(cmd)
            .await
            .map_err(|e| HarnessError::new(format!("cannot start {}: {e}", program.display())))?;
        let pid = child.id() as i32;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let me = PipedChild {
            pid,
            state: Mutex::new(State {
                child,
                status: None,
                killing: false,
            }),
        };
        match (stdin, stdout) {
            (Some(i), Some(o)) => Ok((me, i, o)),
            // Dropping `me` kills it.
            _ => Err(HarnessError::new(
                "the child's stdin or stdout is not piped",
            )),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Send `signal` to its process group unless it was reaped.
    pub fn signal(&self, signal: Signal) -> Result<()> {
        let state = self.lock();
        if state.status.is_none() {
            killpg(Pid::from_raw(self.pid), signal).map_err(|e| {
                HarnessError::new(format!("{} to pid {}: {e}", signal.as_str(), self.pid))
            })?;
        }
        Ok(())
    }

    /// Mark it killed by the harness and send SIGCONT and SIGKILL (unless reaped).
    pub fn signal_kill(&self) {
        let mut state = self.lock();
        state.killing = true;
        if state.status.is_none() {
            signal_group(self.pid, Signal::SIGCONT);
            signal_group(self.pid, Signal::SIGKILL);
        }
    }

    /// Did the harness kill it?
    pub fn killed(&self) -> bool {
        self.lock().killing
    }

    /// Reap it if it has ended; how it ended.
    pub fn reap(&self) -> Option<ExitStatus> {
        let mut state = self.lock();
        if state.status.is_none() {
            let ended = match state.child.try_wait() {
                Ok(status) => status,
                // Reaped already (ECHILD): it is gone, and no status is left to read;
                // it counts as killed, so it is never mistaken for a crash.
                Err(_) => Some(ExitStatus::from_raw(libc::SIGKILL)),
            };
            if let Some(status) = ended {
                state.status = Some(status);
                unregister(self.pid);
            }
        }
        state.status
    }

    /// SIGKILL it and reap it, without blocking the runtime.
    pub async fn kill(&self) -> Result<()> {
        self.signal_kill();
        let deadline = tokio::time::Instant::now() + KILL_TIMEOUT;
        while self.reap().is_none() {
            if tokio::time::Instant::now() >= deadline {
                return Err(HarnessError::new(format!(
                    "pid {} did not die within {}s of SIGKILL",
                    self.pid,
                    KILL_TIMEOUT.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }

    /// Did it end by the harness's SIGKILL (so it is no crash)?
    pub fn ended_by_harness(&self, status: ExitStatus) -> bool {
        self.killed() && status.signal() == Some(libc::SIGKILL)
    }
}

impl Drop for PipedChild {
    fn drop(&mut self) {
        let mut state = self.lock();
        if state.status.is_none() {
            state.killing = true;
            signal_group(self.pid, Signal::SIGCONT);
            signal_group(self.pid, Signal::SIGKILL);
            if let Ok(status) = state.child.wait() {
                state.status = Some(status);
            }
            unregister(self.pid);
        }
    }
}
