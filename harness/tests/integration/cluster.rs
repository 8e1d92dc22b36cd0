//! Real processes, real signals: the supervisor leaves nothing behind (on drop, on
//! panic, when the harness itself is SIGKILLed), reports the processes that die on
//! their own and only those, and the cluster of real brokers starts, survives kill /
//! restart, blackholes a cut link and converges.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use std::os::unix::process::ExitStatusExt;

use watermark::system::process::supervisor::{Death, DeathSink, ProcessSpec, Supervised};

const LONG: Duration = Duration::from_secs(30);

/// `sh -c SCRIPT` as a supervised process logging to `dir/NAME.log`.
fn sh(dir: &Path, name: &str, script: &str) -> ProcessSpec {
    ProcessSpec {
        name: name.into(),
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        log_path: dir.join(format!("{name}.log")),
        start_timeout: LONG,
        env: Vec::new(),
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

/// A sink collecting the deaths reported, and a way to wait for the next.
fn death_sink() -> (DeathSink, std::sync::mpsc::Receiver<Death>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let sink = DeathSink::new(move |d| {
        let _ = tx.lock().unwrap().send(d);
    });
    (sink, rx)
}

#[tokio::test]
async fn deaths_on_their_own_are_reported_as_they_happen_and_kills_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let (sink, deaths) = death_sink();
    // Announces, lives 0.4 s, says why and exits 7 — every start.
    let script = "echo listening on 127.0.0.1:4343; sleep 0.4; echo giving up >&2; exit 7";
    let mut p = Supervised::start_reporting(sh(dir.path(), "p", script), Some(sink))
        .await
        .unwrap();
    let first = p.pid().unwrap();
    // Reported by the supervisor when its output closes, without anyone asking.
    let d = deaths.recv_timeout(LONG).expect("the exit is reported");
    assert_eq!((d.name.as_str(), d.pid), ("p", first));
    assert_eq!(d.status.code(), Some(7));
    assert_eq!(d.log_path, dir.path().join("p.log"));
    assert_eq!(d.log_from, 0);
    assert!(!alive(first));
    // Restarting it reaps nothing twice: no second report of the same death.
    assert!(p.exited().unwrap().is_some_and(|s| s.code() == Some(7)));
    p.restart().await.unwrap();
    let log_len = |p: &Path| std::fs::metadata(p).unwrap().len();
    let d = deaths.recv_timeout(LONG).expect("the second start's exit");
    assert_ne!(d.pid, first);
    assert!(
        d.log_from > 0 && d.log_from < log_len(&d.log_path),
        "the second start's output begins after the first's: {d:?}"
    );

    // Killed by the harness: not reported, however often.
    let (sink, deaths) = death_sink();
    let mut q = Supervised::start_reporting(sh(dir.path(), "q", ANNOUNCE_THEN_SLEEP), Some(sink))
        .await
        .unwrap();
    q.kill().await.unwrap();
    q.restart().await.unwrap();
    q.signal_kill();
    q.kill().await.unwrap();
    q.restart().await.unwrap();
    drop(q);
    // A process that died of a SIGKILL the harness did not send is reported.
    let (sink, deaths_r) = death_sink();
    let mut r = Supervised::start_reporting(sh(dir.path(), "r", ANNOUNCE_THEN_SLEEP), Some(sink))
        .await
        .unwrap();
    let pid = r.pid().unwrap();
    // SAFETY: kill(2) on the group of the child we started.
    unsafe {
        libc::killpg(pid, libc::SIGKILL);
    }
    let d = deaths_r
        .recv_timeout(LONG)
        .expect("an outside SIGKILL is reported");
    assert_eq!(d.status.signal(), Some(libc::SIGKILL));
    // Killing a process that already died on its own still reports how it died.
    let (sink, deaths_s) = death_sink();
    let mut s = Supervised::start_reporting(
        sh(
            dir.path(),
            "s",
            "echo listening on 127.0.0.1:1; exec sleep 1000",
        ),
        Some(sink),
    )
    .await
    .unwrap();
    // SAFETY: as above. Dead (a zombie, maybe already reaped) before the kill.
    let spid = s.pid().unwrap();
    unsafe {
        libc::kill(spid, libc::SIGTERM);
    }
    assert!(wait_dead(spid, LONG));
    s.kill().await.unwrap();
    let d = deaths_s
        .recv_timeout(LONG)
        .expect("the SIGTERM death is reported");
    assert_eq!(d.status.signal(), Some(libc::SIGTERM));
    r.kill().await.unwrap();
    assert!(
        deaths.try_recv().is_err(),
        "a kill by the harness was reported"
    );
    assert!(deaths_r.try_recv().is_err());
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
const CHILD_MODE_ENV: &str = "WATERMARK_TEST_CHILD_MODE";

/// Run inside a child process (re-executing this test binary) by the tests below:
/// start three supervised sleeps, print their pids, then either wait to be killed
/// (`sigkill`) or leak the supervisors and panic with the panic hook installed
/// (`panic-hook`), staying alive so only the hook can have killed the sleeps.
#[tokio::test]
#[ignore = "helper: runs only inside the tests that start a child harness"]
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
    if std::env::var(CHILD_MODE_ENV).as_deref() == Ok("panic-hook") {
        watermark::system::process::install_panic_hook();
        std::mem::forget(procs); // no Drop may clean up: only the hook
        let _ = std::thread::spawn(|| panic!("a harness thread panics")).join();
        println!("PANICKED");
    }
    // Bounded: if nobody kills us, the test that started us has failed anyway.
    tokio::time::sleep(Duration::from_secs(120)).await;
}

/// A child harness in `mode`, and the pids of its three children once it printed them.
fn child_harness(dir: &Path, mode: &str) -> (std::process::Child, Vec<i32>) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "cluster::child_harness_helper",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(CHILD_HARNESS_ENV, dir)
    .env(CHILD_MODE_ENV, mode)
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
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(pids) => (harness, pids),
        Err(e) => {
            let _ = harness.kill();
            let _ = harness.wait();
            panic!("the child harness did not report its children: {e}");
        }
    }
}

#[test]
fn children_die_with_a_sigkilled_harness() {
    let dir = tempfile::tempdir().unwrap();
    let (mut harness, pids) = child_harness(dir.path(), "sigkill");
    assert_eq!(pids.len(), 3);
    assert!(pids.iter().all(|&p| alive(p)));
    harness.kill().unwrap(); // SIGKILL
    harness.wait().unwrap();
    for pid in pids {
        assert!(
            wait_dead(pid, LONG),
            "child {pid} outlived its SIGKILLed harness"
        );
    }
}

#[test]
fn the_panic_hook_kills_every_child_of_a_living_harness() {
    let dir = tempfile::tempdir().unwrap();
    let (mut harness, pids) = child_harness(dir.path(), "panic-hook");
    assert_eq!(pids.len(), 3);
    let all_dead = pids.iter().all(|&pid| wait_dead(pid, LONG));
    let harness_alive = harness.try_wait().unwrap().is_none();
    harness.kill().unwrap();
    harness.wait().unwrap();
    assert!(
        harness_alive,
        "the harness itself must still live, or PDEATHSIG did the work"
    );
    assert!(all_dead, "children outlived the panic: {pids:?}");
}

// ---- the cluster of real brokers ----

mod real {
    use std::path::Path;
    use std::time::{Duration, Instant};

    use broker_config::Settings;
    use serde_json::{Value, json};
    use watermark::net::Grudge;
    use watermark::proc::Proc;
    use watermark::system::System;
    use watermark::system::broker::{Cluster, ClusterConfig};
    use workloads::client::{Acks, Client, ClientConfig, Outcome, ProducerStamp};
    use workloads::producer::{Policy, Producer};

    pub use crate::support::broker_bin;

    pub fn config(root: &Path, nodes: u32) -> ClusterConfig {
        ClusterConfig {
            broker_bin: broker_bin(),
            nodes,
            root: root.to_path_buf(),
            settings: Settings::default(),
            dedicated_controller: false,
            start_timeout: Duration::from_secs(60),
            fault_fs: false,
            power_cut_on_kill: false,
            clocks: false,
        }
    }

    /// Wait (bounded) until no process of the cluster under `dir` is left.
    pub fn assert_nothing_left(dir: &Path) {
        crate::support::assert_no_process_left(dir.to_str().expect("a UTF-8 temp dir"));
    }

    pub fn client(timeout: Duration) -> reqwest::Client {
        reqwest::Client::builder()
            .no_proxy()
            .timeout(timeout)
            .build()
            .unwrap()
    }

    /// Send values to a partition's leader through the client proxies (acks=all),
    /// one at a time, as an idempotent producer of its own (the workload's client):
    /// a send retried after an answer that never came (a timeout while the cluster
    /// recovers) is not appended twice.
    pub async fn produce(cluster: &Cluster, topic: &str, partition: u32, values: &[i64]) {
        let config = ClientConfig::new(cluster.client_addrs(), cluster.controller_addr());
        let mut client = Client::new(config, 1).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let (id, epoch) = loop {
            match client.init_producer_id().await {
                Ok(producer) => break producer,
                Err(e) => assert!(Instant::now() < deadline, "no producer id: {e}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        for (sequence, &v) in (0..).zip(values) {
            let stamp = ProducerStamp {
                id,
                epoch,
                sequence,
            };
            loop {
                assert!(Instant::now() < deadline, "could not produce {v}");
                let sent = client
                    .produce_as(topic, partition, json!(v), Acks::All, Some(stamp))
                    .await;
                if matches!(sent, Outcome::Ok(_)) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    /// Send `batches` to a partition all at once, as a load burst's Kafka default
    /// producer does (one connection each, numbered one after the other), until
    /// all land (a group that failed as a whole, for want of a producer id or a
    /// leader, is sent again).
    async fn produce_in_flight(
        cluster: &Cluster,
        topic: &str,
        partition: u32,
        batches: &[Vec<u64>],
    ) {
        let config = ClientConfig::new(cluster.client_addrs(), cluster.controller_addr());
        let mut clients: Vec<Client> = (0..batches.len() as u64)
            .map(|seed| Client::new(config.clone(), seed).unwrap())
            .collect();
        let mut producer = Producer::new(Policy::kafka_default());
        let (_stop, stop) = tokio::sync::watch::channel(false);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let sent = producer
                .send_group(&mut clients, topic, partition, batches, &stop, 1, |_, _| {})
                .await;
            if sent.iter().all(|s| matches!(s.outcome, Outcome::Ok(_))) {
                return;
            }
            let none = sent
                .iter()
                .all(|s| matches!(s.outcome, Outcome::Fail(_)) && s.attempts == 1);
            assert!(none && Instant::now() < deadline, "{sent:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn wait_alive(cluster: &Cluster, id: i32, alive: bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(meta) = cluster.metadata().await
                && meta.brokers.iter().any(|b| b.id == id && b.alive == alive)
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "node {id} never became alive={alive}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cluster_starts_survives_kill_restart_and_pause_converges_and_dumps_logs() {
        let dir = tempfile::tempdir().unwrap();
        let mut cluster = Cluster::start(config(dir.path(), 3)).await.unwrap();
        assert_eq!(cluster.node_ids(), vec![1, 2, 3]);
        assert_eq!(cluster.client_addrs().len(), 3);
        cluster.create_topic("queue", 2, 3, 2).await.unwrap();
        produce(&cluster, "queue", 0, &[1, 2, 3]).await;
        produce_in_flight(
            &cluster,
            "queue",
            1,
            &[vec![4, 5], vec![7], vec![8, 9, 10], vec![11]],
        )
        .await;

        cluster.kill(&[Proc::Node(2)]).await.unwrap();
        assert!(!cluster.is_running(Proc::Node(2)));
        wait_alive(&cluster, 2, false).await;
        cluster.restart(Proc::Node(2)).await.unwrap();
        assert!(cluster.is_running(Proc::Node(2)));
        wait_alive(&cluster, 2, true).await;

        cluster.pause(Proc::Node(3)).await.unwrap();
        assert!(cluster.is_paused(Proc::Node(3)));
        wait_alive(&cluster, 3, false).await;
        // The controller runs in a broker: killing it (with node 3 paused, no
        // majority of voters is left) stops elections until heal_all.
        let (controller, _) = cluster.active_controller().await.unwrap();
        assert!(matches!(controller, Proc::Node(1 | 2)), "{controller}");
        cluster.kill(&[controller]).await.unwrap();
        assert!(cluster.active_controller().await.is_err());
        cluster.heal_all().await.unwrap(); // resumes node 3, restarts the controller's broker
        assert!(!cluster.is_paused(Proc::Node(3)) && cluster.is_running(controller));
        produce(&cluster, "queue", 0, &[6]).await;
        cluster
            .wait_converged(Duration::from_secs(90))
            .await
            .unwrap();

        cluster
            .final_logs(&mut |id, text| {
                let path = dir.path().join(id.to_string()).join("final-log.jsonl");
                Ok(std::fs::write(path, text)?)
            })
            .await
            .unwrap();
        for id in 1..=3 {
            let text =
                std::fs::read_to_string(dir.path().join(id.to_string()).join("final-log.jsonl"))
                    .unwrap();
            let logs: Vec<Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            assert_eq!(logs.len(), 2, "node {id}: one line per partition: {text}");
            let values = |p: u64| -> Vec<i64> {
                let log = logs.iter().find(|l| l["partition"] == p).unwrap();
                assert_eq!(log["topic"], "queue");
                log["records"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["value"].as_i64().unwrap())
                    .collect()
            };
            assert_eq!(values(0), vec![1, 2, 3, 6], "node {id}");
            // The batches sent at once over four connections landed in the order of
            // their sequence numbers, each once.
            assert_eq!(values(1), vec![4, 5, 7, 8, 9, 10, 11], "node {id}");
            assert!(dir.path().join(id.to_string()).join("broker.log").is_file());
        }
        // No controller process of its own: every broker is a voter.
        assert!(!dir.path().join("controller").exists());
        assert_eq!(cluster.procs().len(), 3);
        // The processes share the cluster's credentials and refuse internal requests
        // without them.
        let creds = cluster.credentials().clone();
        let secret = std::fs::read_to_string(&creds.secret_file).unwrap();
        assert_eq!(secret.trim(), creds.secret);
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let url = format!("http://{}/internal/heartbeat", cluster.client_addrs()[&1]);
        let body = serde_json::json!({"broker_id": 1, "broker_epoch": 1});
        let refused = http.post(&url).json(&body).send().await.unwrap();
        assert_eq!(refused.status().as_u16(), 401);
        let wrong = http
            .post(&url)
            .header("x-cluster-id", &creds.cluster_id)
            .header("authorization", "Bearer not-the-secret")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(wrong.status().as_u16(), 403);
        cluster.shutdown().await.unwrap();
        assert_nothing_left(dir.path());
    }

    /// Data dirs on the fault filesystem, every kill a power cut: brokers that never
    /// fsync (no flush policy) lose a killed node's whole log, recorded file by
    /// file; the node refetches it, and no mount is left after the shutdown.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_kill_on_the_fault_filesystem_cuts_the_power_and_the_node_refetches() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path(), 3);
        cfg.fault_fs = true;
        cfg.power_cut_on_kill = true;
        let mut cluster = Cluster::start(cfg).await.unwrap();
        cluster.create_topic("t", 1, 3, 2).await.unwrap();
        produce(&cluster, "t", 0, &[1, 2, 3, 4, 5]).await;
        assert!(cluster.take_losses().is_empty(), "nothing killed yet");
        cluster.kill(&[Proc::Node(3)]).await.unwrap();
        let cuts = cluster.take_losses();
        assert_eq!(cuts.len(), 1, "the kill cut the power");
        let lost = cuts[0]["lost"].as_array().unwrap();
        let log = lost
            .iter()
            .find(|l| l["file"].as_str().unwrap().starts_with("t-0/"))
            .unwrap_or_else(|| panic!("t-0's log lost its bytes: {cuts:?}"));
        assert_eq!(cuts[0]["process"], 3);
        assert!(log["len_before"].as_u64().unwrap() > 0, "{log}");
        assert_eq!(log["len_after"], 0, "never fsynced: {log}");
        cluster.restart(Proc::Node(3)).await.unwrap();
        cluster
            .wait_converged(Duration::from_secs(90))
            .await
            .unwrap();
        let replica = cluster.replica(3, "t", 0).await.unwrap();
        assert_eq!(replica.leo, 5, "refetched from the leader");
        // A torn write: the last write survives in part; the restarted node's
        // recovery drops the half record and fetches the rest again.
        produce(&cluster, "t", 0, &[6, 7, 8]).await;
        cluster.cut_power(3, Some(42)).await.unwrap();
        let cuts = cluster.take_losses();
        let torn: Vec<_> = cuts[0]["lost"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l.get("torn").is_some())
            .collect();
        assert!(!torn.is_empty(), "a write was torn: {cuts:?}");
        cluster.restart(Proc::Node(3)).await.unwrap();
        cluster
            .wait_converged(Duration::from_secs(90))
            .await
            .unwrap();
        let replica = cluster.replica(3, "t", 0).await.unwrap();
        assert_eq!(replica.leo, 8, "refetched past the torn write");
        cluster.shutdown().await.unwrap();
        assert_nothing_left(dir.path());
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        let root = dir.path().canonicalize().unwrap();
        assert!(
            !mounts.contains(root.to_str().unwrap()),
            "a fault filesystem left mounted: {mounts}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cut_link_blackholes_open_and_new_connections_and_heal_restores_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut cluster = Cluster::start(config(dir.path(), 3)).await.unwrap();
        cluster.create_topic("queue", 1, 3, 2).await.unwrap();
        // Talk to node 2 through the proxy node 1 uses to reach it.
        let through = cluster.link(Proc::Node(1), Proc::Node(2)).unwrap().addr();
        let url = format!("http://{through}/debug/partitions");
        let pooled = client(Duration::from_secs(2));
        assert!(pooled.get(&url).send().await.unwrap().status().is_success());

        let all = cluster.procs();
        cluster.cut(&Grudge::isolate(Proc::Node(2), &all));
        // Both ways between node 2 and each of the two other brokers.
        assert_eq!(cluster.cut_links().len(), 4);
        let err = pooled.get(&url).send().await.unwrap_err();
        assert!(
            err.is_timeout(),
            "the pooled connection is blackholed: {err}"
        );
        let err = client(Duration::from_secs(2))
            .get(&url)
            .send()
            .await
            .unwrap_err();
        assert!(err.is_timeout(), "a new connection is blackholed: {err}");
        // Clients still reach node 2, and the controller (node 2's, if it was
        // the active one, is replaced by the other two) loses it.
        let direct = format!("http://{}/debug/partitions", cluster.client_addrs()[&2]);
        assert!(
            client(Duration::from_secs(10))
                .get(&direct)
                .send()
                .await
                .unwrap()
                .status()
                .is_success()
        );
        wait_alive(&cluster, 2, false).await;

        cluster.heal_all().await.unwrap();
        assert!(cluster.cut_links().is_empty());
        let ok = client(Duration::from_secs(10))
            .get(&url)
            .send()
            .await
            .unwrap();
        assert!(ok.status().is_success());
        wait_alive(&cluster, 2, true).await;
        cluster
            .wait_converged(Duration::from_secs(90))
            .await
            .unwrap();
        drop(cluster); // dropping, not shutting down, also leaves nothing behind
        assert_nothing_left(dir.path());
    }

    #[tokio::test]
    async fn the_controller_answers_the_harness_calls() {
        use watermark::system::broker::api::{Admin, CreateTopic};
        use watermark::system::process::supervisor::{ProcessSpec, Supervised};
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let spec = ProcessSpec {
            name: "controller".into(),
            program: broker_bin(),
            args: [
                "controller",
                "--id",
                "3",
                "--controller-voters",
                "3",
                "--listen",
                "127.0.0.1:0",
                "--brokers",
                "1=127.0.0.1:9,2=127.0.0.1:9",
            ]
            .map(Into::into)
            .into_iter()
            .chain(["--data-dir".into(), data.clone().into_os_string()])
            .collect(),
            log_path: dir.path().join("broker.log"),
            start_timeout: Duration::from_secs(60),
            env: Vec::new(),
        };
        let controller = Supervised::start(spec).await.unwrap();
        let addr = controller.addr().unwrap();
        let written = std::fs::read_to_string(data.join("address")).unwrap();
        assert_eq!(
            written.trim(),
            addr.to_string(),
            "the announced address is the one in DATA_DIR/address"
        );

        let admin = Admin::new(Duration::from_secs(10)).unwrap();
        // Its quorum of one elects it within moments.
        let start = std::time::Instant::now();
        let meta = loop {
            let meta = admin.metadata(addr).await.unwrap();
            if meta.controller_id == Some(3) || start.elapsed() > Duration::from_secs(60) {
                break meta;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(
            meta.brokers.iter().map(|b| b.id).collect::<Vec<_>>(),
            vec![1, 2]
        );
        let topic = CreateTopic {
            name: "queue",
            partitions: 2,
            replication_factor: 2,
            min_insync_replicas: 1,
        };
        admin.create_topic(addr, &topic).await.unwrap();
        let meta = admin.metadata(addr).await.unwrap();
        let p1 = meta.partition("queue", 1).unwrap();
        assert_eq!(p1.replicas.len(), 2);
        assert_eq!(meta.partitions().count(), 2);
        let err = admin
            .create_topic(addr, &topic)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("409") && err.contains("TOPIC_ALREADY_EXISTS"),
            "{err}"
        );
        drop(controller);
        assert_nothing_left(dir.path());
    }

    #[tokio::test]
    async fn a_node_that_cannot_start_fails_the_cluster_with_its_log_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), 3);
        // Below the heartbeat interval: every broker refuses it at start.
        config.settings.controller.session_timeout_ms = Some(100);
        let err = Cluster::start(config).await.err().unwrap().to_string();
        assert!(
            err.contains("node 1") && err.contains("exited before"),
            "{err}"
        );
        assert!(
            err.contains("session-timeout-ms"),
            "the log's tail says why: {err}"
        );
        assert_nothing_left(dir.path());
    }

    #[tokio::test]
    async fn a_missing_broker_binary_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), 3);
        config.broker_bin = dir.path().join("no-broker");
        let err = Cluster::start(config).await.err().unwrap().to_string();
        assert!(
            err.contains("no-broker") && err.contains("cargo build -p broker"),
            "{err}"
        );
    }
}
