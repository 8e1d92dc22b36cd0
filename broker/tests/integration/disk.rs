//! The broker on a failing disk, over real processes: the disk fault switch
//! (`POST /debug/disk`) on a leader and on a follower — no acknowledged record lost,
//! leadership moves, the node rejoins the ISR once its disk works — the same on a
//! real full filesystem (a small tmpfs, mounted when the tests run as root; skipped
//! with a message otherwise), and what a node says when it cannot even announce
//! itself.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Cluster, Opts, ids};
use broker::log::{Log, LogConfig};
use serde_json::{Value, json};

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
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot write the address file") && stderr.contains("address"),
        "{stderr}"
    );
    assert!(!stderr.contains("cannot listen"), "{stderr}");
}

/// A cluster whose nodes leave the ISRs after 1 s of storage failures.
fn cluster() -> Cluster {
    Cluster::start(Opts {
        node_args: vec!["--storage-failure-timeout-ms".into(), "1000".into()],
        ..Opts::default()
    })
}

/// The controller's (leader, ISR) of t-0.
async fn view(c: &Cluster) -> (i32, Vec<i32>) {
    let p = c
        .wait_for("t-0 in the active controller's metadata", || {
            c.controller_partition("t", 0)
        })
        .await;
    (p["leader"].as_i64().unwrap() as i32, ids(&p["isr"]))
}

/// A node's whole local log of t-0: offset → value.
async fn local_log(c: &Cluster, id: i32) -> Option<BTreeMap<u64, Value>> {
    let (status, body) = c.get(&c.addr(id), "/debug/log/t/0").await;
    if status != 200 {
        return None;
    }
    let mut log = BTreeMap::new();
    for r in body["records"].as_array()? {
        let offset = r["offset"].as_u64()?;
        assert!(
            log.insert(offset, r["value"].clone()).is_none(),
            "node {id}: offset {offset} twice"
        );
    }
    Some(log)
}

/// Produce `value` (acks=all) to whoever the controller names leader; the offset if
/// acknowledged, else the error code.
async fn produce(c: &Cluster, value: Value) -> Result<u64, String> {
    let (leader, _) = view(c).await;
    if leader < 0 {
        return Err("no leader".into());
    }
    let (status, body) = c.produce(leader, "t", 0, "all", value).await;
    match status {
        200 => Ok(body["base_offset"].as_u64().expect("an offset")),
        _ => Err(body["error"].as_str().unwrap_or("?").to_string()),
    }
}

/// Every acknowledged (offset, value) is in `id`'s log at its offset.
async fn assert_has_every_ack(c: &Cluster, id: i32, acked: &[(u64, Value)]) {
    let log = local_log(c, id).await.expect("a log");
    for (o, v) in acked {
        assert_eq!(
            log.get(o),
            Some(v),
            "node {id}: acknowledged record at offset {o} lost\n{}",
            c.logs()
        );
    }
}

/// Wait until `id` is back in the ISR with the leader's whole log (at least `min_leo`
/// records).
async fn wait_rejoined(c: &Cluster, id: i32, min_leo: u64) {
    c.wait_for(&format!("node {id} to rejoin the ISR"), || async {
        let (leader, isr) = view(c).await;
        if leader < 0 || !isr.contains(&id) {
            return None;
        }
        let mine = c.debug_partition(id, "t", 0).await?;
        let theirs = c.debug_partition(leader, "t", 0).await?;
        let leo = mine["log_end_offset"].as_u64()?;
        (leo >= min_leo && leo == theirs["log_end_offset"].as_u64()?).then_some(())
    })
    .await;
}

/// The leader's disk fills up (or fails): it acknowledges nothing more, leaves the
/// ISR after the timeout, another replica leads and takes the writes; once the disk
/// works again the old leader catches up and rejoins, and after a restart its
/// recovered log still matches — no acknowledged record lost, no offset twice. (With
/// `--bug append-undo-lost` the restart's recovery cuts the log at a duplicate.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_disk_fills_up_hands_over_and_rejoins() {
    for mode in ["enospc", "eio"] {
        let mut c = cluster();
        c.create_topic("t", 1, 3, 2).await;
        let (old, _) = view(&c).await;
        let mut acked = Vec::new();
        for v in 0..10 {
            let o = produce(&c, json!(v)).await.expect("a healthy cluster");
            acked.push((o, json!(v)));
        }
        c.disk(old, mode, Some(6000)).await;
        let started = Instant::now();
        let mut codes = BTreeMap::new();
        let mut v = 100;
        // Keep writing while the disk fails, until another leader takes writes.
        let new = loop {
            assert!(
                started.elapsed() < DEADLINE,
                "{mode}: no new leader\n{}",
                c.logs()
            );
            match produce(&c, json!(v)).await {
                Ok(o) => {
                    acked.push((o, json!(v)));
                    let (leader, _) = view(&c).await;
                    if leader != old {
                        break leader;
                    }
                }
                Err(code) => *codes.entry(code).or_insert(0) += 1,
            }
            v += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert!(
            codes.contains_key("KAFKA_STORAGE_ERROR"),
            "{mode}: the failing leader answered {codes:?}"
        );
        let (_, isr) = view(&c).await;
        assert!(!isr.contains(&old), "{mode}: ISR {isr:?}");
        for v in 1000..1010 {
            let o = produce(&c, json!(v))
                .await
                .expect("the new leader takes writes");
            acked.push((o, json!(v)));
        }
        assert_has_every_ack(&c, new, &acked).await;
        // The disk recovers by itself: the old leader catches up and rejoins.
        let leo = acked.iter().map(|(o, _)| o + 1).max().unwrap();
        wait_rejoined(&c, old, leo).await;
        assert_has_every_ack(&c, old, &acked).await;
        assert_eq!(local_log(&c, old).await, local_log(&c, new).await);
        // What it wrote while its disk failed and after is whole on disk.
        c.node(old).restart();
        wait_rejoined(&c, old, leo).await;
        assert_has_every_ack(&c, old, &acked).await;
        assert!(
            !c.nodes[&old].log().contains("recovery:"),
            "{mode}: recovery cut the log\n{}",
            c.nodes[&old].log()
        );
    }
}

/// A follower's disk fails: it appends nothing, leaves the ISR, the leader goes on
/// with the other follower; once the disk works it catches up without a duplicate
/// frame and rejoins. (The follower is not the active controller: a controller's
/// disk holds its Raft log too, and one whose disk fails hands the quorum over —
/// a failover this test is not about, during which produces may time out.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_whose_disk_fails_falls_behind_and_catches_up() {
    let mut c = cluster();
    c.create_topic("t", 1, 3, 2).await;
    let (leader, _) = view(&c).await;
    let (controller, _) = c.controller().await;
    let follower = (1..=3)
        .find(|&id| id != leader && id != controller)
        .unwrap();
    c.disk(follower, "enospc", None).await;
    let mut acked = Vec::new();
    for v in 0..30 {
        let o = produce(&c, json!(v))
            .await
            .expect("the other follower keeps up");
        acked.push((o, json!(v)));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.wait_for("the failing follower to leave the ISR", || async {
        (!view(&c).await.1.contains(&follower)).then_some(())
    })
    .await;
    let stuck = c.debug_partition(follower, "t", 0).await.unwrap();
    assert!(stuck["storage_error"].is_string(), "{stuck}");
    assert!(stuck["log_end_offset"].as_u64().unwrap() < 30, "{stuck}");
    c.disk(follower, "ok", None).await;
    wait_rejoined(&c, follower, 30).await;
    assert_has_every_ack(&c, follower, &acked).await;
    let d = c.debug_partition(follower, "t", 0).await.unwrap();
    assert!(d["storage_error"].is_null(), "{d}");
    c.node(follower).restart();
    wait_rejoined(&c, follower, 30).await;
    assert_has_every_ack(&c, follower, &acked).await;
    assert_eq!(local_log(&c, follower).await, local_log(&c, leader).await);
}

/// A small tmpfs mounted on a temp dir, unmounted when dropped.
struct Tmpfs {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mount a tmpfs of `bytes`, or say why not (not root, no mount namespace).
    fn mount(bytes: u64) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let target = CString::new(dir.path().as_os_str().as_bytes()).unwrap();
        let options = CString::new(format!("size={bytes},mode=0700")).unwrap();
        // SAFETY: valid NUL-terminated strings; mounting changes nothing of ours.
        let r = unsafe {
            libc::mount(
                c"tmpfs".as_ptr(),
                target.as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                options.as_ptr().cast(),
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        Ok(Tmpfs {
            path: dir.path().to_path_buf(),
            _dir: dir,
        })
    }

    /// Fill the filesystem to its last byte with a file of zeros (its path).
    fn fill(&self) -> PathBuf {
        let filler = self.path.join("filler");
        let mut f = std::fs::File::create(&filler).expect("create the filler");
        let mut chunk = 1 << 16;
        while chunk > 0 {
            if f.write_all(&vec![0; chunk]).is_err() {
                chunk /= 2;
            }
        }
        filler
    }

    /// Give the filler's space back: cut it to nothing, then remove it. Cutting frees
    /// its pages at once, even while a child another test is spawning (forked, not yet
    /// exec'd) still holds an inherited descriptor of it — an unlink alone would free
    /// them only when that descriptor closes.
    fn free(&self, filler: &std::path::Path) {
        std::fs::OpenOptions::new()
            .write(true)
            .open(filler)
            .and_then(|f| f.set_len(0))
            .expect("cut the filler");
        std::fs::remove_file(filler).expect("remove the filler");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let target = CString::new(self.path.as_os_str().as_bytes()).unwrap();
        // SAFETY: unmounting our own mount point (lazily, in case a file is open).
        unsafe {
            libc::umount2(target.as_ptr(), libc::MNT_DETACH);
        }
    }
}

/// A tmpfs, or None with a message saying the test is skipped.
fn tmpfs(bytes: u64, test: &str) -> Option<Tmpfs> {
    match Tmpfs::mount(bytes) {
        Ok(fs) => Some(fs),
        Err(e) => {
            eprintln!(
                "{test}: skipped: cannot mount a tmpfs ({e}); run as root to test a full disk"
            );
            None
        }
    }
}

/// Finding 1 on a real full disk: appends until the filesystem is full, then more
/// once space is freed; the reopened log holds every acknowledged record at its
/// offset, each offset once.
#[test]
fn a_log_on_a_full_filesystem_never_writes_an_offset_twice() {
    let Some(fs) = tmpfs(128 << 10, "a_log_on_a_full_filesystem") else {
        return;
    };
    let dir = fs.path.join("log");
    let config = LogConfig {
        segment_bytes: 24 << 10,
        ..LogConfig::default()
    };
    let mut log = Log::open(&dir, config.clone()).unwrap();
    let value = |i: u64| json!({"i": i, "pad": "p".repeat(900)});
    let mut acked = Vec::new();
    let filler = fs.fill();
    let mut failures = 0;
    let mut i = 0;
    while failures < 20 {
        assert!(i < 10_000, "the disk never filled up");
        match log.append(1, vec![(None, value(i).into())]) {
            Ok(offset) => acked.push((offset, value(i))),
            Err(e) => {
                assert!(e.to_string().contains("No space left"), "{e}");
                failures += 1;
            }
        }
        assert_eq!(log.log_end_offset(), acked.len() as u64);
        i += 1;
    }
    fs.free(&filler);
    for _ in 0..5 {
        let offset = log.append(2, vec![(None, value(i).into())]).unwrap();
        acked.push((offset, value(i)));
        i += 1;
    }
    drop(log);
    let log = Log::open(&dir, config).unwrap();
    let records = log.read(0, usize::MAX, u64::MAX).unwrap();
    let got: Vec<(u64, Value)> = records
        .into_iter()
        .map(|r| (r.offset, r.value.to_value()))
        .collect();
    assert_eq!(got, acked);
}

/// Finding 2: a node restarted on a full disk says it cannot write its address file.
#[test]
fn a_node_on_a_full_filesystem_says_it_cannot_write_its_address_file() {
    let Some(fs) = tmpfs(64 << 10, "a_node_on_a_full_filesystem") else {
        return;
    };
    fs.fill();
    let data_dir = fs.path.to_str().unwrap();
    let (code, stderr) = run_to_exit(&[
        "node",
        "--id",
        "1",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data_dir,
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot write the address file") && stderr.contains("No space left"),
        "{stderr}"
    );
}

/// The leader's data dir is a small filesystem that fills up: the leader stops
/// acknowledging, hands over, and once space is freed catches up and rejoins; every
/// acknowledged record survives, also on it after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_on_a_full_filesystem_hands_over_and_rejoins_once_space_is_freed() {
    let mounts: Vec<Tmpfs> = match (1..=3)
        .map(|_| Tmpfs::mount(2 << 20))
        .collect::<Result<_, _>>()
    {
        Ok(m) => m,
        Err(e) => {
            eprintln!("skipped: cannot mount a tmpfs ({e}); run as root to test a full disk");
            return;
        }
    };
    let data_dirs: BTreeMap<i32, PathBuf> = (1..=3)
        .map(|id| (id, mounts[id as usize - 1].path.join("data")))
        .collect();
    let mut c = Cluster::start(Opts {
        node_args: vec!["--storage-failure-timeout-ms".into(), "1000".into()],
        data_dirs,
        ..Opts::default()
    });
    c.create_topic("t", 1, 3, 2).await;
    let (old, _) = view(&c).await;
    let mut acked = Vec::new();
    for v in 0..10 {
        let o = produce(&c, json!(v)).await.expect("a healthy cluster");
        acked.push((o, json!(v)));
    }
    let filler = mounts[old as usize - 1].fill();
    let started = Instant::now();
    let mut codes = BTreeMap::new();
    let mut v = 100;
    let new = loop {
        assert!(started.elapsed() < DEADLINE, "no new leader\n{}", c.logs());
        match produce(&c, json!({"v": v, "pad": "p".repeat(500)})).await {
            Ok(o) => {
                acked.push((o, json!({"v": v, "pad": "p".repeat(500)})));
                let (leader, _) = view(&c).await;
                if leader != old {
                    break leader;
                }
            }
            Err(code) => *codes.entry(code).or_insert(0) += 1,
        }
        v += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        codes.contains_key("KAFKA_STORAGE_ERROR"),
        "the full leader answered {codes:?}\n{}",
        c.logs()
    );
    for v in 1000..1010 {
        let o = produce(&c, json!(v))
            .await
            .expect("the new leader takes writes");
        acked.push((o, json!(v)));
    }
    assert_has_every_ack(&c, new, &acked).await;
    mounts[old as usize - 1].free(&filler);
    let leo = acked.iter().map(|(o, _)| o + 1).max().unwrap();
    wait_rejoined(&c, old, leo).await;
    assert_has_every_ack(&c, old, &acked).await;
    c.node(old).restart();
    wait_rejoined(&c, old, leo).await;
    assert_has_every_ack(&c, old, &acked).await;
    assert_eq!(local_log(&c, old).await, local_log(&c, new).await);
    drop(c);
    drop(mounts);
}
