//! The log across a real SIGKILL. This test binary re-executes itself with
//! `STORAGE_CHILD_DIR` set: the child appends to a log, flushes part of it, announces
//! it is ready and waits to be killed; the parent SIGKILLs it and reopens the log.
//! With `--simulate-page-cache` exactly the flushed records survive (a power cut);
//! without it every appended record does (the OS page cache outlives the process).

use std::fs;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use broker::log::{Log, LogConfig};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;

const DIR_VAR: &str = "STORAGE_CHILD_DIR";
// The test binary names a test by its module path.
const CHILD_TEST: &str = "storage::child_routine_when_spawned";
const READY: &str = "ready";
/// How long any wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(60);

/// What the child does: append `flushed` records one at a time, flush, append
/// `unflushed` more, then wait to be killed.
#[derive(Clone, Copy)]
struct Plan {
    flushed: u64,
    unflushed: u64,
    simulate_page_cache: bool,
    flush_messages: Option<u64>,
}

impl Plan {
    fn config(&self) -> LogConfig {
        LogConfig {
            simulate_page_cache: self.simulate_page_cache,
            flush_messages: self.flush_messages,
            segment_bytes: 512,
            ..LogConfig::default()
        }
    }

    fn to_env(self) -> String {
        format!(
            "{} {} {} {}",
            self.flushed,
            self.unflushed,
            self.simulate_page_cache,
            self.flush_messages.unwrap_or(0)
        )
    }

    fn from_env(s: &str) -> Plan {
        let f: Vec<&str> = s.split(' ').collect();
        let flush_messages: u64 = f[3].parse().unwrap();
        Plan {
            flushed: f[0].parse().unwrap(),
            unflushed: f[1].parse().unwrap(),
            simulate_page_cache: f[2].parse().unwrap(),
            flush_messages: (flush_messages > 0).then_some(flush_messages),
        }
    }
}

fn value(offset: u64) -> serde_json::Value {
    json!({"offset": offset, "payload": "p".repeat(40)})
}

/// The child's side; a no-op when the test runs normally.
#[test]
fn child_routine_when_spawned() {
    let Ok(dir) = std::env::var(DIR_VAR) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let plan = Plan::from_env(&std::env::var("STORAGE_CHILD_PLAN").unwrap());
    let mut log = Log::open(&dir.join("log"), plan.config()).unwrap();
    for offset in 0..plan.flushed {
        log.append(1, vec![(Some(format!("k{offset}")), value(offset).into())])
            .unwrap();
    }
    log.flush().unwrap();
    for offset in plan.flushed..plan.flushed + plan.unflushed {
        log.append(1, vec![(Some(format!("k{offset}")), value(offset).into())])
            .unwrap();
    }
    let state = format!("{} {}", log.flushed_offset(), log.log_end_offset());
    fs::write(dir.join("ready.tmp"), state).unwrap();
    fs::rename(dir.join("ready.tmp"), dir.join(READY)).unwrap();
    // Wait to be killed; give up (and fail) if the parent never does.
    thread::sleep(DEADLINE * 2);
    panic!("child was not killed");
}

/// A child process killed (and reaped) when dropped, even if the test panics.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(dir: &Path, plan: Plan) -> Guard {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(DIR_VAR, dir)
        .env("STORAGE_CHILD_PLAN", plan.to_env())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(dir.join("child.stderr")).unwrap());
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // Die with the test thread that spawned us, whatever happens to it.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Guard(cmd.spawn().unwrap())
}

/// Run the child to readiness, SIGKILL it, and return its (flushed, LEO) report.
fn run_and_kill(dir: &Path, plan: Plan) -> (u64, u64) {
    let mut child = spawn(dir, plan);
    let start = Instant::now();
    let ready = dir.join(READY);
    while !ready.exists() {
        if let Some(status) = child.0.try_wait().unwrap() {
            let stderr = fs::read_to_string(dir.join("child.stderr")).unwrap_or_default();
            panic!("child exited early ({status}):\n{stderr}");
        }
        assert!(
            start.elapsed() < DEADLINE,
            "child not ready after {DEADLINE:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
    kill(Pid::from_raw(child.0.id() as i32), Signal::SIGKILL).unwrap();
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < DEADLINE, "killed child still running");
        thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
    let report = fs::read_to_string(&ready).unwrap();
    let (flushed, leo) = report.split_once(' ').unwrap();
    (flushed.parse().unwrap(), leo.parse().unwrap())
}

/// Kill a child following `plan`; the offsets that survive in the log.
fn survivors(plan: Plan) -> Vec<u64> {
    let dir = tempfile::tempdir().unwrap();
    let (flushed, leo) = run_and_kill(dir.path(), plan);
    assert_eq!(leo, plan.flushed + plan.unflushed);
    assert!(flushed >= plan.flushed, "child reported flushed {flushed}");
    let log = Log::open(&dir.path().join("log"), plan.config()).unwrap();
    let records = log.read(0, usize::MAX, u64::MAX).unwrap();
    for r in &records {
        assert_eq!(r.value, value(r.offset));
        assert_eq!(r.key, Some(format!("k{}", r.offset)));
    }
    records.iter().map(|r| r.offset).collect()
}

#[test]
fn sigkill_with_simulated_page_cache_loses_exactly_the_unflushed_records() {
    let plan = Plan {
        flushed: 25,
        unflushed: 17,
        simulate_page_cache: true,
        flush_messages: None,
    };
    assert_eq!(survivors(plan), (0..25).collect::<Vec<_>>());
}

#[test]
fn sigkill_without_simulation_keeps_every_written_record() {
    let plan = Plan {
        flushed: 25,
        unflushed: 17,
        simulate_page_cache: false,
        flush_messages: None,
    };
    assert_eq!(survivors(plan), (0..42).collect::<Vec<_>>());
}

#[test]
fn sigkill_with_simulated_page_cache_keeps_what_the_flush_policy_flushed() {
    // 25 flushed explicitly, then 17 appended with an fsync every 5 records:
    // 15 of them are flushed by the policy, the last 2 are not.
    let plan = Plan {
        flushed: 25,
        unflushed: 17,
        simulate_page_cache: true,
        flush_messages: Some(5),
    };
    assert_eq!(survivors(plan), (0..40).collect::<Vec<_>>());
}
