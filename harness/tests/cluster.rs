//! Real processes, real signals: the supervisor leaves nothing behind (on drop, on
//! panic, when the harness itself is SIGKILLed), and the cluster of real brokers
//! starts, survives kill / restart, blackholes a cut link and converges.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use watermark::supervisor::{ProcessSpec, Supervised};

const LONG: Duration = Duration::from_secs(30);

/// `sh -c SCRIPT` as a supervised process logging to `dir/NAME.log`.
fn sh(dir: &Path, name: &str, script: &str) -> ProcessSpec {
    ProcessSpec {
        name: name.into(),
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        log_path: dir.join(format!("{name}.log")),
        start_timeout: LONG,
    }
}

/// Alive and not a zombie.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => {
            !matches!(stat.rsplit(')').next().map(str::trim_start), Some(s) if s.starts_with('Z') || s.starts_with('X'))
        }
        Err(_) => false,
    }
}

fn state(pid: i32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat.rsplit(')')
        .next()
        .unwrap()
        .trim_start()
        .chars()
        .next()
        .unwrap()
}

fn wait_state(pid: i32, want: impl Fn(char) -> bool, within: Duration) -> char {
    let deadline = Instant::now() + within;
    loop {
        let s = state(pid);
        if want(s) || Instant::now() >= deadline {
            return s;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_dead(pid: i32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !alive(pid)
}

const ANNOUNCE_THEN_SLEEP: &str =
    "echo to-stderr >&2; echo listening on 127.0.0.1:4242; exec sleep 1000";

#[tokio::test]
async fn supervised_process_announces_logs_pauses_restarts_and_dies_on_drop() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Supervised::start(sh(dir.path(), "p", ANNOUNCE_THEN_SLEEP))
        .await
        .unwrap();
    assert_eq!(p.addr(), Some("127.0.0.1:4242".parse().unwrap()));
    let first = p.pid().unwrap();
    assert!(alive(first));

    p.pause().unwrap();
    assert!(p.is_paused());
    assert_eq!(wait_state(first, |s| s == 'T', LONG), 'T');
    p.resume().unwrap();
    assert!(!p.is_paused());
    assert_ne!(wait_state(first, |s| s != 'T', LONG), 'T');

    p.restart().await.unwrap();
    let second = p.pid().unwrap();
    assert_ne!(first, second);
    assert!(
        wait_dead(first, LONG),
        "the first incarnation was killed and reaped"
    );
    assert!(alive(second));

    p.kill().await.unwrap();
    assert!(!p.is_running());
    assert!(!alive(second));
    p.kill().await.unwrap(); // a no-op once dead

    p.restart().await.unwrap();
    let third = p.pid().unwrap();
    p.pause().unwrap();
    drop(p); // paused: continued, then killed
    assert!(wait_dead(third, LONG));

    let log = std::fs::read_to_string(dir.path().join("p.log")).unwrap();
    assert_eq!(
        log.matches("listening on 127.0.0.1:4242").count(),
        3,
        "{log}"
    );
    assert_eq!(log.matches("to-stderr").count(), 3, "{log}");
}

#[tokio::test]
async fn a_process_that_never_announces_is_killed_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!(
        "echo $$ > {}; echo not yet; exec sleep 1000",
        pidfile.display()
    );
    let mut spec = sh(dir.path(), "silent", &script);
    spec.start_timeout = Duration::from_millis(1500);
    let err = Supervised::start(spec).await.unwrap_err().to_string();
    assert!(err.contains("did not print `listening on ADDR`"), "{err}");
    assert!(
        err.contains("not yet"),
        "the log's tail is in the message: {err}"
    );
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_dead(pid, LONG));

    let err = Supervised::start(sh(dir.path(), "dies", "echo cannot start >&2; exit 3"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("exited before"), "{err}");
    assert!(err.contains("cannot start"), "{err}");

    let mut spec = sh(dir.path(), "missing", "");
    spec.program = dir.path().join("no-such-broker");
    let err = Supervised::start(spec).await.unwrap_err().to_string();
    assert!(err.contains("no-such-broker"), "{err}");
}

#[test]
fn a_panicking_owner_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let spec = sh(dir.path(), "p", ANNOUNCE_THEN_SLEEP);
    let (tx, rx) = std::sync::mpsc::channel();
    let result = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let p = rt.block_on(Supervised::start(spec)).unwrap();
        tx.send(p.pid().unwrap()).unwrap();
        panic!("the owner panics while the process runs");
    })
    .join();
    assert!(result.is_err());
    let pid = rx.recv().unwrap();
    assert!(wait_dead(pid, LONG));
}

const CHILD_HARNESS_ENV: &str = "WATERMARK_TEST_CHILD_HARNESS";

/// Run by `children_die_with_a_sigkilled_harness` in a child process (re-executing this
/// test binary): start three supervised sleeps, print their pids, and wait to be killed.
#[tokio::test]
#[ignore = "helper: runs only inside children_die_with_a_sigkilled_harness"]
async fn child_harness_helper() {
    let Ok(dir) = std::env::var(CHILD_HARNESS_ENV) else {
        return;
    };
    let mut procs = Vec::new();
    for i in 0..3 {
        let spec = sh(Path::new(&dir), &format!("sleep{i}"), ANNOUNCE_THEN_SLEEP);
        procs.push(Supervised::start(spec).await.unwrap());
    }
    let pids: Vec<String> = procs.iter().map(|p| p.pid().unwrap().to_string()).collect();
    println!("PIDS {}", pids.join(" "));
    // Bounded: if nobody kills us, the test that started us has failed anyway.
    tokio::time::sleep(Duration::from_secs(120)).await;
}

#[test]
fn children_die_with_a_sigkilled_harness() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "child_harness_helper",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(CHILD_HARNESS_ENV, dir.path())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    // SAFETY: prctl only. If this test dies, the child harness dies with it.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            Ok(())
        });
    }
    let mut harness = cmd.spawn().unwrap();
    let harness_pid = harness.id() as i32;
    let stdout = harness.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // libtest prints `test NAME ... ` before the helper's own output.
            if let Some((_, pids)) = line.split_once("PIDS ") {
                let pids: Vec<i32> = pids.split(' ').map(|p| p.parse().unwrap()).collect();
                let _ = tx.send(pids);
            }
        }
    });
    let pids = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(pids) => pids,
        Err(e) => {
            let _ = harness.kill();
            let _ = harness.wait();
            panic!("the child harness did not report its children: {e}");
        }
    };
    assert_eq!(pids.len(), 3);
    assert!(pids.iter().all(|&p| alive(p)));

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(harness_pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    harness.wait().unwrap();
    for pid in pids {
        assert!(
            wait_dead(pid, LONG),
            "child {pid} outlived its SIGKILLed harness"
        );
    }
}
