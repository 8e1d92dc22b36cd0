//! Supervision of the broker processes: start, SIGKILL, restart on the same data dir,
//! SIGSTOP / SIGCONT — and never leave a process behind.
//!
//! A chaos harness that leaks brokers poisons every later run (ports, data dirs, CPU),
//! so every child is covered three ways:
//! - each child leads its own process group, and every kill is sent to the group;
//! - `PR_SET_PDEATHSIG(SIGKILL)` (set in `pre_exec`) makes the kernel kill the child
//!   when the harness dies, even by SIGKILL. The kernel ties this to the *thread* that
//!   forked, so all children are forked by one spawner thread that lives as long as the
//!   process (a tokio blocking-pool thread would retire after 10 s idle and take its
//!   children with it);
//! - a process-wide registry of live child groups lets a Ctrl-C / SIGTERM handler or a
//!   panic hook kill them all (`super::groups`: [`kill_all`], [`install_panic_hook`]), and
//!   [`Supervised`] kills its process on drop.
//!
//! A paused (SIGSTOPped) process is always continued before it is killed for good, so
//! no stopped process lingers. `PR_SET_PDEATHSIG` covers the direct child only (it is
//! cleared on fork): a child that forks should `exec`, as the broker does not fork.
//!
//! stdout and stderr are appended to the process's log file (`broker.log`); stdout goes
//! through a pipe that a thread copies into the log, watching for the `listening on
//! ADDR` line a broker prints first (docs/api.md, the broker's command line).
//!
//! A process that dies without the harness killing it — a panic, an abort, an exit,
//! a SIGKILL the harness did not send — is a [`Death`] handed to the process's
//! [`DeathSink`] the moment it is reaped: when its stdout closes (the copying thread
//! reaps it then), or whenever the harness next touches it (a kill, a restart). A
//! process the harness SIGKILLed and that ended by that SIGKILL is not reported. Each
//! start's child is reaped once, under a lock, and signalled only while not yet
//! reaped, so a signal never reaches a recycled pid.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::sync::oneshot;

use super::groups::{die_with_harness, signal_group, spawn, unregister};
use crate::error::{HarnessError, Result};

/// What to run, and how to run it again after a kill.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// For messages: `node 2`, `controller`.
    pub name: String,
    pub program: PathBuf,
    /// The same arguments at every (re)start; a broker given `--listen 127.0.0.1:0`
    /// takes a fresh port each time and announces it.
    pub args: Vec<OsString>,
    /// stdout and stderr are appended here.
    pub log_path: PathBuf,
    /// How long to wait for the `listening on ADDR` line.
    pub start_timeout: Duration,
    /// Set in its environment besides what the harness has.
    pub env: Vec<(OsString, OsString)>,
}

/// A process that ended without the harness killing it.
#[derive(Debug, Clone)]
pub struct Death {
    /// As [`ProcessSpec::name`].
    pub name: String,
    pub pid: i32,
    pub status: ExitStatus,
    /// Its log ([`ProcessSpec::log_path`]), appended to across restarts ...
    pub log_path: PathBuf,
    /// ... and where this start's output begins in it.
    pub log_from: u64,
}

/// Where a supervised process reports a [`Death`]; called from whichever thread
/// reaps it.
#[derive(Clone)]
pub struct DeathSink(Arc<dyn Fn(Death) + Send + Sync>);

impl DeathSink {
    pub fn new(f: impl Fn(Death) + Send + Sync + 'static) -> DeathSink {
        DeathSink(Arc::new(f))
    }
}

impl std::fmt::Debug for DeathSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeathSink")
    }
}

/// A supervised process: running (maybe paused) or stopped, and restartable.
/// Dropping it kills the process group (continuing it first if paused) and reaps it.
#[derive(Debug)]
pub struct Supervised {
    spec: ProcessSpec,
    running: Option<Running>,
    on_death: Option<DeathSink>,
}

#[derive(Debug)]
struct Running {
    life: Arc<Life>,
    pid: i32,
    paused: bool,
    addr: SocketAddr,
}

/// One start of a process, shared by its [`Supervised`] and the thread copying its
/// stdout: whoever reaps the child first records how it ended and, unless the
/// harness killed it, reports the [`Death`].
#[derive(Debug)]
struct Life {
    pid: i32,
    name: String,
    log_path: PathBuf,
    log_from: u64,
    on_death: Option<DeathSink>,
    state: Mutex<LifeState>,
}

#[derive(Debug)]
struct LifeState {
    child: Child,
    /// How it ended, once reaped.
    status: Option<ExitStatus>,
    /// The harness has sent (or is sending) SIGKILL.
    killing: bool,
}

impl Life {
    fn lock(&self) -> MutexGuard<'_, LifeState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Send `signal` to the process group unless the child was reaped.
    fn signal(&self, signal: Signal) -> nix::Result<()> {
        let state = self.lock();
        match state.status {
            None => killpg(Pid::from_raw(self.pid), signal),
            Some(_) => Ok(()),
        }
    }

    /// Mark it killed by the harness and send SIGCONT and SIGKILL (unless reaped).
    fn kill(&self) {
        let mut state = self.lock();
        state.killing = true;
        if state.status.is_none() {
            signal_group(self.pid, Signal::SIGCONT);
            signal_group(self.pid, Signal::SIGKILL);
        }
    }

    fn killing(&self) -> bool {
        self.lock().killing
    }

    /// Reap the child if it has ended; how it ended.
    fn reap(&self) -> std::io::Result<Option<ExitStatus>> {
        let mut state = self.lock();
        if state.status.is_some() {
            return Ok(state.status);
        }
        match state.child.try_wait()? {
            None => Ok(None),
            Some(status) => Ok(Some(self.ended(state, status))),
        }
    }

    /// Block until the child is reaped (it has been sent SIGKILL).
    fn wait(&self) {
        let mut state = self.lock();
        if state.status.is_none()
            && let Ok(status) = state.child.wait()
        {
            self.ended(state, status);
        }
    }

    /// Record the end of the child just reaped; report it unless the harness's
    /// SIGKILL ended it.
    fn ended(&self, mut state: MutexGuard<'_, LifeState>, status: ExitStatus) -> ExitStatus {
        state.status = Some(status);
        unregister(self.pid);
        let asked = state.killing && status.signal() == Some(libc::SIGKILL);
        drop(state);
        if !asked && let Some(sink) = &self.on_death {
            (sink.0)(Death {
                name: self.name.clone(),
                pid: self.pid,
                status,
                log_path: self.log_path.clone(),
                log_from: self.log_from,
            });
        }
        status
    }
}

impl Supervised {
    /// Start the process and wait (bounded by `start_timeout`) for its
    /// `listening on ADDR` line.
    pub async fn start(spec: ProcessSpec) -> Result<Supervised> {
        Supervised::start_reporting(spec, None).await
    }

    /// [`Supervised::start`], reporting every start of the process that dies
    /// without the harness killing it to `on_death`.
    pub async fn start_reporting(
        spec: ProcessSpec,
        on_death: Option<DeathSink>,
    ) -> Result<Supervised> {
        let mut s = Supervised {
            spec,
            running: None,
            on_death,
        };
        s.launch().await?;
        Ok(s)
    }

    /// The address the process announced, while it runs.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.running.as_ref().map(|r| r.addr)
    }

    /// The process id (also its process group id), while it runs.
    pub fn pid(&self) -> Option<i32> {
        self.running.as_ref().map(|r| r.pid)
    }

    /// Started and not killed by us (it may have exited on its own: see [`Self::exited`]).
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    pub fn is_paused(&self) -> bool {
        self.running.as_ref().is_some_and(|r| r.paused)
    }

    /// If the process died on its own, reap it and say how it ended (its
    /// [`Death`] is reported, if it was not already).
    pub fn exited(&mut self) -> Result<Option<ExitStatus>> {
        let Some(r) = self.running.as_mut() else {
            return Ok(None);
        };
        match r.life.reap()? {
            None => Ok(None),
            Some(status) => {
                self.running = None;
                Ok(Some(status))
            }
        }
    }

    /// Send SIGCONT and SIGKILL to the process group without reaping it (see
    /// [`Self::kill`]): lets a caller kill several processes at the same instant.
    pub fn signal_kill(&self) {
        if let Some(r) = &self.running {
            r.life.kill();
        }
    }

    /// SIGKILL the process group and reap the process; a no-op if it is not running.
    /// A paused process is continued first. A process found dead of something else
    /// than this SIGKILL died on its own, and is reported so.
    pub async fn kill(&mut self) -> Result<()> {
        let Some(r) = self.running.take() else {
            return Ok(());
        };
        r.life.kill();
        // Reap without blocking the runtime: a process in uninterruptible sleep (an
        // fsync on a loaded disk) may take a moment to die.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            if r.life.reap()?.is_some() {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(HarnessError::new(format!(
                    "{} (pid {}) did not die within 60 s of SIGKILL",
                    self.spec.name, r.pid
                )));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Kill the process if it runs, then start it again with the same arguments.
    pub async fn restart(&mut self) -> Result<SocketAddr> {
        self.kill().await?;
        self.launch().await
    }

    /// SIGSTOP the process group (a no-op if not running or already paused).
    pub fn pause(&mut self) -> Result<()> {
        if let Some(r) = self.running.as_mut().filter(|r| !r.paused) {
            r.life.signal(Signal::SIGSTOP).map_err(|e| {
                HarnessError::new(format!("SIGSTOP {} (pid {}): {e}", self.spec.name, r.pid))
            })?;
            r.paused = true;
        }
        Ok(())
    }

    /// SIGCONT the process group (a no-op if not paused).
    pub fn resume(&mut self) -> Result<()> {
        if let Some(r) = self.running.as_mut().filter(|r| r.paused) {
            r.life.signal(Signal::SIGCONT).map_err(|e| {
                HarnessError::new(format!("SIGCONT {} (pid {}): {e}", self.spec.name, r.pid))
            })?;
            r.paused = false;
        }
        Ok(())
    }

    async fn launch(&mut self) -> Result<SocketAddr> {
        let spec = &self.spec;
        let log = open_log(&spec.log_path)?;
        let log_from = log.metadata().map_or(0, |m| m.len());
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log.try_clone()?))
            .process_group(0);
        die_with_harness(&mut cmd);
        let mut child = spawn(cmd).await.map_err(|e| {
            HarnessError::new(format!(
                "cannot start {} ({}): {e}",
                spec.name,
                spec.program.display()
            ))
        })?;
        let pid = child.id() as i32;
        let stdout = child.stdout.take().expect("stdout is piped");
        let life = Arc::new(Life {
            pid,
            name: spec.name.clone(),
            log_path: spec.log_path.clone(),
            log_from,
            on_death: self.on_death.clone(),
            state: Mutex::new(LifeState {
                child,
                status: None,
                killing: false,
            }),
        });
        // Owned by `self` before anything can fail or wait, so a failed or
        // cancelled start still kills it.
        self.running = Some(Running {
            life: life.clone(),
            pid,
            paused: false,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        });
        let (tx, rx) = oneshot::channel();
        std::thread::Builder::new()
            .name(format!("tee {}", spec.name))
            .spawn(move || tee(stdout, log, tx, &life))?;
        let why = match tokio::time::timeout(self.spec.start_timeout, rx).await {
            Ok(Ok(addr)) => {
                if let Some(r) = self.running.as_mut() {
                    r.addr = addr;
                }
                return Ok(addr);
            }
            Ok(Err(_)) => "exited before printing `listening on ADDR`".to_string(),
            Err(_) => format!(
                "did not print `listening on ADDR` within {:?}",
                self.spec.start_timeout
            ),
        };
        self.kill().await?;
        Err(HarnessError::new(format!(
            "{} ({}) {why}; its log {} ends with:\n{}",
            self.spec.name,
            self.spec.program.display(),
            self.spec.log_path.display(),
            log_tail(&self.spec.log_path, 10)
        )))
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            r.life.kill();
            r.life.wait();
        }
    }
}

fn open_log(path: &Path) -> Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            HarnessError::new(format!("cannot create log dir {}: {e}", dir.display()))
        })?;
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| HarnessError::new(format!("cannot open log {}: {e}", path.display())))
}

/// How long after its stdout closed a process not killed by the harness may take to
/// end before the copying thread stops waiting (whoever touches it next reaps it).
const EXIT_AFTER_EOF: Duration = Duration::from_secs(10);

/// Copy the child's stdout into its log line by line; hand over the first
/// `listening on ADDR`. When stdout closes, the process has ended (a broker neither
/// closes its stdout nor forks): unless the harness is killing it, reap it now, so
/// a death on its own is reported as it happens.
fn tee(
    stdout: std::process::ChildStdout,
    mut log: File,
    tx: oneshot::Sender<SocketAddr>,
    life: &Life,
) {
    let mut tx = Some(tx);
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let _ = log.write_all(&line);
        if tx.is_some()
            && let Some(addr) = parse_announce(&line)
        {
            let _ = tx.take().expect("checked").send(addr);
        }
    }
    drop(tx);
    let deadline = Instant::now() + EXIT_AFTER_EOF;
    while !life.killing() && Instant::now() < deadline {
        match life.reap() {
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Ok(Some(_)) | Err(_) => return,
        }
    }
}

/// `listening on 127.0.0.1:4321` → the address.
pub fn parse_announce(line: &[u8]) -> Option<SocketAddr> {
    let line = std::str::from_utf8(line).ok()?.trim();
    line.strip_prefix("listening on ")?.trim().parse().ok()
}

/// The last `n` lines of a log, for error messages.
pub fn log_tail(path: &Path, n: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            let start = lines.len().saturating_sub(n);
            let tail = lines[start..].join("\n");
            if tail.is_empty() {
                "(empty)".to_string()
            } else {
                tail
            }
        }
        Err(e) => format!("(cannot read it: {e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announce_lines_parse() {
        assert_eq!(
            parse_announce(b"listening on 127.0.0.1:4321\n"),
            Some("127.0.0.1:4321".parse().unwrap())
        );
        assert_eq!(parse_announce(b"listening on nowhere\n"), None);
        assert_eq!(parse_announce(b"hello\n"), None);
    }
}
