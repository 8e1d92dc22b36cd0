//! The broker on a failing disk, over real processes: what a node says when it
//! cannot even announce itself.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a node may take to give up.
const DEADLINE: Duration = Duration::from_secs(30);

/// Run `broker ARGS…` to its exit: (exit code, stderr). Killed if it outlives the
/// deadline (or the test).
fn run_to_exit(args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_broker"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe; the child dies with the test thread.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawn the broker");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("broker {args:?} did not exit within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status.code(), stderr)
}

/// Finding: a node that could not write its address file said "cannot listen on …".
#[test]
fn a_node_that_cannot_write_its_address_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // A directory where the address file goes: renaming over it fails.
    std::fs::create_dir_all(dir.path().join("address").join("occupied")).unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let (code, stderr) = run_to_exit(&[
        "node",
        "--id",
        "1",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data_dir,
        "--controller",
        "127.0.0.1:9",
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot write the address file") && stderr.contains("address"),
        "{stderr}"
    );
    assert!(!stderr.contains("cannot listen"), "{stderr}");
}
