//! Helpers shared by the end-to-end tests that run the real `watermark` binary:
//! a bounded run that SIGKILLs the harness past its limit, the output as text for
//! assertion messages, the run folder and its JSON files, a bounded check that no
//! process of a test is left behind, and the broker binary the tests start.
//!
//! Every wait here is bounded; the harness's brokers die with it (PR_SET_PDEATHSIG).
//! Each test module uses a part of it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const WATERMARK: &str = env!("CARGO_BIN_EXE_watermark");

/// Kills the child on drop (a failed assertion must not leave a harness running).
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Run watermark to completion within `limit`; SIGKILL it if it takes longer.
pub fn watermark(args: &[&str], limit: Duration) -> Output {
    let child = Command::new(WATERMARK)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start watermark");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("wait for watermark"),
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("watermark {args:?} did not finish within {limit:?}");
        }
    }
}

/// Exit code, stdout and stderr of a run, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The run folder `results/latest` points to.
pub fn run_folder(results: &Path) -> PathBuf {
    let latest = results.join("latest");
    std::fs::canonicalize(&latest)
        .unwrap_or_else(|e| panic!("{} does not point to a run folder: {e}", latest.display()))
}

/// The JSON file at `path`, or a panic naming it.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Processes whose command line mentions `needle` (e.g. a test's results folder,
/// which every broker of that test has in its --data-dir), as `pid: cmdline`.
pub fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push(format!("{pid}: {cmdline}"));
        }
    }
    found
}

/// Wait (bounded, 30 s) until no process mentions `needle`.
pub fn assert_no_process_left(needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = processes_mentioning(needle);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes left behind: {left:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The broker binary beside this test binary, built first if it is missing or older
/// than the broker's sources, so that the tests never run a stale broker. A
/// workspace test run has just built it (for the broker's own tests): nothing to do
/// then — `cargo build -p broker` would resolve the dependencies' features for the
/// broker alone and build half of them again.
pub fn broker_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().unwrap().parent().unwrap();
        let bin = profile_dir.join("broker");
        let workspace = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
        if !newer_than_sources(&bin, workspace) {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = Command::new(cargo)
                .args(["build", "-p", "broker", "--bin", "broker", "--target-dir"])
                .arg(profile_dir.parent().unwrap())
                .current_dir(workspace)
                .status()
                .expect("run cargo build -p broker");
            assert!(status.success(), "cargo build -p broker failed");
        }
        bin
    })
    .clone()
}

/// Whether `bin` exists and is newer than every source file of the broker and its
/// configuration crate, and than the lock file.
fn newer_than_sources(bin: &Path, workspace: &Path) -> bool {
    let Ok(built) = std::fs::metadata(bin).and_then(|m| m.modified()) else {
        return false;
    };
    let mut todo = vec![
        workspace.join("broker/src"),
        workspace.join("broker/Cargo.toml"),
        workspace.join("config"),
        workspace.join("Cargo.lock"),
    ];
    while let Some(path) = todo.pop() {
        let Ok(meta) = std::fs::metadata(&path) else {
            return false;
        };
        if meta.is_dir() {
            match std::fs::read_dir(&path) {
                Ok(entries) => todo.extend(entries.flatten().map(|e| e.path())),
                Err(_) => return false,
            }
        } else if meta.modified().map_or(true, |m| m > built) {
            return false;
        }
    }
    true
}
