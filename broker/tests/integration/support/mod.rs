//! Test support: a real cluster (N `broker node` processes, every one a controller
//! voter unless told otherwise) on loopback with temp data dirs, and a guard that
//! kills every process when dropped, also on panic. Each process runs in its own process group and gets SIGKILL via
//! PR_SET_PDEATHSIG if the test process dies, so nothing survives a test.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Every wait in these tests ends by then, even on a loaded machine.
pub const DEADLINE: Duration = Duration::from_secs(45);

/// Cluster tests run one at a time: each starts four processes on a small machine.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A broker process, killed and reaped when dropped.
pub struct Proc {
    child: Option<Child>,
    pub addr: String,
    args: Vec<String>,
    stderr: PathBuf,
}

impl Proc {
    /// Start `broker ARGS…`, wait for its `listening on ADDR` line.
    pub fn start(args: Vec<String>, stderr: PathBuf) -> Proc {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&stderr)
            .expect("open a process log");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_broker"));
        cmd.args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .process_group(0);
        // SAFETY: prctl is async-signal-safe; the kernel kills the child when the
        // spawning thread dies, so a crashed test leaves nothing behind.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("spawn the broker binary");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let _ = tx.send(lines.next());
            for _ in lines {} // keep the pipe drained
        });
        let mut proc = Proc {
            child: Some(child),
            addr: String::new(),
            args,
            stderr,
        };
        match rx.recv_timeout(DEADLINE) {
            Ok(Some(Ok(line))) => {
                proc.addr = line
                    .strip_prefix("listening on ")
                    .unwrap_or_else(|| panic!("first line `{line}` is not `listening on ADDR`"))
                    .to_string();
            }
            other => panic!(
                "broker {:?} did not announce its address ({other:?}); log:\n{}",
                proc.args,
                proc.log()
            ),
        }
        proc
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("running").id() as i32
    }

    /// Send `sig` to the process's group; a SIGSTOP returns once every thread of
    /// the process has stopped (see [`Proc::await_stopped`]).
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's process group.
        unsafe {
            libc::kill(-self.pid(), sig);
        }
        if sig == libc::SIGSTOP {
            self.await_stopped();
        }
    }

    /// Wait (bounded) until every thread of the process is stopped. The kernel
    /// hands a SIGSTOP to one thread, which then stops the others: until it has
    /// run, they run on — on a loaded machine for milliseconds, long enough to
    /// answer a request the test sends right after the signal.
    fn await_stopped(&self) {
        let tasks = format!("/proc/{}/task", self.pid());
        let stopped = || {
            std::fs::read_dir(&tasks).is_ok_and(|threads| {
                threads.flatten().all(|t| {
                    let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
                    // The state follows the command's closing parenthesis: stopped,
                    // or dead (a process that died runs no more either).
                    let state = stat
                        .rsplit(')')
                        .next()
                        .and_then(|r| r.split_whitespace().next());
                    matches!(state, Some("T" | "Z" | "X"))
                })
            })
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !stopped() {
            assert!(
                Instant::now() < deadline,
                "process {} not stopped 5 s after SIGSTOP",
                self.pid()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// SIGTERM, and wait (bounded) for a clean exit; true if it exited with success.
    pub fn terminate(&mut self) -> bool {
        let Some(mut child) = self.child.take() else {
            return false;
        };
        // SAFETY: kill(2) on our own child's process group.
        unsafe {
            libc::kill(-(child.id() as i32), libc::SIGTERM);
        }
        let start = Instant::now();
        while start.elapsed() < DEADLINE {
            if let Ok(Some(status)) = child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child = Some(child);
        self.kill();
        false
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: as above.
            unsafe {
                libc::kill(-(child.id() as i32), libc::SIGKILL);
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Wait (bounded) for the process to end on its own, and reap it: how it ended.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut()?;
        let start = Instant::now();
        while start.elapsed() < within {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Start again with the same arguments, on the same address (peers know it).
    pub fn restart(&mut self) {
        self.restart_with(|_| {});
    }

    /// Start again on the same address, with the arguments `edit` makes of the last
    /// ones (they stay for later restarts).
    pub fn restart_with(&mut self, edit: impl FnOnce(&mut Vec<String>)) {
        self.kill();
        edit(&mut self.args);
        let mut args = self.args.clone();
        if let Some(i) = args.iter().position(|a| a == "--listen") {
            args[i + 1] = self.addr.clone();
        }
        let mut fresh = Proc::start(args, self.stderr.clone());
        self.child = fresh.child.take();
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Wait, at most `within`, for the process to exit on its own; its exit code
    /// (None: still running, or killed by a signal).
    pub fn wait_exit_code(&mut self, within: Duration) -> Option<i32> {
        self.wait_exit(within).and_then(|status| status.code())
    }
}

/// Run `broker ARGS…` to its end (bounded by [`DEADLINE`], killed past it): its exit
/// code and stderr.
pub fn run_to_exit(args: &[String]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_broker"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the broker binary");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let start = Instant::now();
    let code = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status.code();
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (code, reader.join().unwrap_or_default())
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Options of a test cluster.
#[derive(Clone)]
pub struct Opts {
    pub nodes: i32,
    pub session_timeout_ms: u64,
    pub lag_ms: u64,
    pub fetch_wait_ms: u64,
    pub election_timeout_ms: u64,
    /// `--controller-voters` (default: every node).
    pub controller_voters: Option<Vec<i32>>,
    /// A dedicated controller process (`broker controller`, id
    /// [`DEDICATED_CONTROLLER`]) as the quorum's only voter instead.
    pub dedicated_controller: bool,
    /// Extra arguments for every node.
    pub node_args: Vec<String>,
    /// A node's data dir, instead of one in the cluster's temp dir (e.g. a small
    /// filesystem of its own).
    pub data_dirs: BTreeMap<i32, PathBuf>,
    /// Extra arguments for the dedicated controller.
    pub controller_args: Vec<String>,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            nodes: 3,
            session_timeout_ms: 1000,
            lag_ms: 1500,
            fetch_wait_ms: 500,
            election_timeout_ms: 500,
            controller_voters: None,
            dedicated_controller: false,
            node_args: Vec::new(),
            data_dirs: BTreeMap::new(),
            controller_args: Vec::new(),
        }
    }
}

/// The id of the dedicated controller under [`Opts::dedicated_controller`].
pub const DEDICATED_CONTROLLER: i32 = 100;

impl Opts {
    /// The controller quorum is one dedicated controller process (no partitions), so
    /// pausing it pauses the controller and nothing else.
    pub fn dedicated_controller(self) -> Opts {
        Opts {
            dedicated_controller: true,
            ..self
        }
    }
}

/// The nodes (and controller voters); everything dies with it.
pub struct Cluster {
    pub nodes: BTreeMap<i32, Proc>,
    /// The dedicated controller, if any.
    pub controller: Option<Proc>,
    pub http: reqwest::Client,
    pub dir: tempfile::TempDir,
    /// What it was started with.
    opts: Opts,
    /// The controller voters, as `--controller-voters` names them.
    voters: String,
    _serial: MutexGuard<'static, ()>,
}

impl Cluster {
    pub fn start(opts: Opts) -> Cluster {
        let serial = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let dir = tempfile::tempdir().expect("temp dir");
        // Held together while they are drawn, so no two nodes get the same port.
        let listeners: Vec<TcpListener> = (1..=opts.nodes)
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a free port"))
            .collect();
        let addrs: BTreeMap<i32, String> = (1..=opts.nodes)
            .zip(&listeners)
            .map(|(id, l)| (id, l.local_addr().unwrap().to_string()))
            .collect();
        drop(listeners);
        let list = |skip: Option<i32>| {
            addrs
                .iter()
                .filter(|(id, _)| Some(**id) != skip)
                .map(|(id, a)| format!("{id}={a}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let controller = opts.dedicated_controller.then(|| {
            let args = [
                "controller".to_string(),
                "--id".into(),
                DEDICATED_CONTROLLER.to_string(),
                "--listen".into(),
                "127.0.0.1:0".into(),
                "--data-dir".into(),
                path(&dir.path().join("controller")),
                "--brokers".into(),
                list(None),
                "--controller-voters".into(),
                DEDICATED_CONTROLLER.to_string(),
                "--session-timeout-ms".into(),
                opts.session_timeout_ms.to_string(),
                "--election-timeout-ms".into(),
                opts.election_timeout_ms.to_string(),
            ];
            let mut args = args.to_vec();
            args.extend(opts.controller_args.iter().cloned());
            Proc::start(args, dir.path().join("controller.log"))
        });
        let voters = match (&opts.controller_voters, &controller) {
            (_, Some(c)) => Some(format!("{DEDICATED_CONTROLLER}={}", c.addr)),
            (Some(voters), None) => {
                let list: Vec<String> = voters.iter().map(|v| v.to_string()).collect();
                Some(list.join(","))
            }
            (None, None) => None,
        };
        let mut nodes = BTreeMap::new();
        for (&id, addr) in &addrs {
            let args = node_args(
                &opts,
                dir.path(),
                id,
                addr,
                &list(Some(id)),
                voters.as_deref(),
            );
            nodes.insert(
                id,
                Proc::start(args, dir.path().join(format!("node{id}.log"))),
            );
        }
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(15))
            .build()
            .unwrap();
        Cluster {
            nodes,
            controller,
            http,
            dir,
            voters: voters.unwrap_or_else(|| {
                let ids: Vec<String> = addrs.keys().map(|id| id.to_string()).collect();
                ids.join(",")
            }),
            opts,
            _serial: serial,
        }
    }

    /// Start broker `id`, which the running cluster was not started with: it is given
    /// the other brokers' addresses (`--peers`) and the controller voters, and joins
    /// by heartbeat (nobody else knows its address but from the metadata).
    pub fn join(&mut self, id: i32, extra: &[&str]) {
        assert!(!self.nodes.contains_key(&id), "broker {id} is already one");
        let addr = {
            let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
            l.local_addr().unwrap().to_string()
        };
        let peers: Vec<String> = self
            .nodes
            .iter()
            .map(|(id, p)| format!("{id}={}", p.addr))
            .collect();
        let voters = self.voters.clone();
        let mut args = node_args(
            &self.opts,
            self.dir.path(),
            id,
            &addr,
            &peers.join(","),
            Some(&voters),
        );
        args.extend(extra.iter().map(|a| a.to_string()));
        let log = self.dir.path().join(format!("node{id}.log"));
        self.nodes.insert(id, Proc::start(args, log));
    }

    pub fn node(&mut self, id: i32) -> &mut Proc {
        self.nodes.get_mut(&id).expect("a node of this cluster")
    }

    /// A node's address, or the dedicated controller's.
    pub fn addr(&self, id: i32) -> String {
        match (&self.controller, id) {
            (Some(c), DEDICATED_CONTROLLER) => c.addr.clone(),
            _ => self.nodes[&id].addr.clone(),
        }
    }

    /// Set node `id`'s disk fault switch (`POST /debug/disk`): `mode` for `for_ms`
    /// (None: until set again).
    pub async fn disk(&self, id: i32, mode: &str, for_ms: Option<u64>) {
        let (status, body) = self
            .post(
                &self.addr(id),
                "/debug/disk",
                &json!({"mode": mode, "for_ms": for_ms}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["mode"], mode);
    }

    /// The dedicated controller process.
    pub fn dedicated(&self) -> &Proc {
        self.controller.as_ref().expect("a dedicated controller")
    }

    /// Every process's log, for failure messages.
    pub fn logs(&self) -> String {
        let mut s = String::new();
        if let Some(c) = &self.controller {
            s += &format!("--- controller\n{}", c.log());
        }
        for (id, n) in &self.nodes {
            s += &format!("--- node {id}\n{}", n.log());
        }
        s
    }

    pub async fn get(&self, addr: &str, path: &str) -> (u16, Value) {
        let resp = self
            .http
            .get(format!("http://{addr}{path}"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {addr}{path}: {e}"));
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    pub async fn post(&self, addr: &str, path: &str, body: &Value) -> (u16, Value) {
        let resp = self
            .http
            .post(format!("http://{addr}{path}"))
            .json(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {addr}{path}: {e}"));
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// `GET /v1/metadata` on node `id` (None if it does not answer in time).
    pub async fn metadata_of(&self, id: i32) -> Option<Value> {
        let resp = self
            .http
            .get(format!("http://{}/v1/metadata", self.addr(id)))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .ok()?;
        resp.json().await.ok()
    }

    /// The active controller right now: a running node that names itself
    /// controller (None if none does).
    pub async fn find_controller(&self) -> Option<(i32, i64)> {
        let dedicated = self.controller.as_ref().map(|_| DEDICATED_CONTROLLER);
        for id in dedicated.into_iter().chain(self.nodes.keys().copied()) {
            if self.nodes.get(&id).is_some_and(|n| !n.is_running()) {
                continue;
            }
            let Some(md) = self.metadata_of(id).await else {
                continue;
            };
            if md["controller_id"] == id {
                return Some((id, md["controller_epoch"].as_i64()?));
            }
        }
        None
    }

    /// Wait for an active controller: (its id, the controller epoch).
    pub async fn controller(&self) -> (i32, i64) {
        self.wait_for("an active controller", || self.find_controller())
            .await
    }

    /// The active controller's address.
    pub async fn controller_addr(&self) -> String {
        let (id, _) = self.controller().await;
        self.addr(id)
    }

    /// POST a controller call: to the active controller, again as long as the answer
    /// is `NOT_CONTROLLER` (a takeover in progress), bounded.
    pub async fn post_controller(&self, path: &str, body: &Value) -> (u16, Value) {
        let start = Instant::now();
        loop {
            let addr = self.controller_addr().await;
            let (status, answer) = self.post(&addr, path, body).await;
            if answer["error"] != "NOT_CONTROLLER" || start.elapsed() > DEADLINE {
                return (status, answer);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Wait until the active controller shows every running node alive.
    pub async fn wait_registered(&self) {
        self.wait_for("every running broker to register", || async {
            let (id, _) = self.find_controller().await?;
            let md = self.metadata_of(id).await?;
            let brokers = md["brokers"].as_array()?;
            let alive = |n: &i32| brokers.iter().any(|b| b["id"] == *n && b["alive"] == true);
            let running = self.nodes.iter().filter(|(_, p)| p.is_running());
            running.map(|(id, _)| id).all(alive).then_some(())
        })
        .await;
    }

    /// Create a topic on the controller (once every running broker registered) and
    /// wait until every replica's node knows it.
    pub async fn create_topic(&self, name: &str, partitions: u32, rf: u32, min_isr: u32) {
        self.wait_registered().await;
        let (status, body) = self
            .post_controller(
                "/v1/topics",
                &json!({"name": name, "partitions": partitions,
                        "replication_factor": rf, "min_insync_replicas": min_isr}),
            )
            .await;
        assert_eq!(status, 201, "create topic: {body}");
        for p in 0..partitions {
            self.wait_for(
                &format!("{name}-{p} to have a leader known to all replicas"),
                || async move {
                    let s = self.controller_partition(name, p).await?;
                    let leader = s["leader"].as_i64()? as i32;
                    if leader < 0 {
                        return None;
                    }
                    for r in s["replicas"].as_array()? {
                        let id = r.as_i64()? as i32;
                        let d = self.debug_partition(id, name, p).await?;
                        if d["leader_epoch"] != s["leader_epoch"] || d["leader"] != s["leader"] {
                            return None;
                        }
                    }
                    Some(())
                },
            )
            .await;
        }
    }

    /// The active controller's metadata for one partition (None: no controller now).
    pub async fn controller_partition(&self, topic: &str, p: u32) -> Option<Value> {
        let (id, _) = self.find_controller().await?;
        partition_in(&self.metadata_of(id).await?, topic, p)
    }

    /// A node's /debug/partitions entry for one partition (None if unreachable).
    pub async fn debug_partition(&self, id: i32, topic: &str, p: u32) -> Option<Value> {
        let resp = self
            .http
            .get(format!("http://{}/debug/partitions", self.addr(id)))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .ok()?;
        let v: Value = resp.json().await.ok()?;
        v["partitions"]
            .as_array()?
            .iter()
            .find(|e| e["topic"] == topic && e["partition"] == p)
            .cloned()
    }

    /// Produce one record; (status, body).
    pub async fn produce(
        &self,
        id: i32,
        topic: &str,
        p: u32,
        acks: &str,
        value: Value,
    ) -> (u16, Value) {
        self.post(
            &self.addr(id),
            &format!("/v1/topics/{topic}/partitions/{p}/records?acks={acks}"),
            &json!({"records": [{"value": value}]}),
        )
        .await
    }

    /// Poll `check` until it gives a value, or panic after [`DEADLINE`] with the logs.
    pub async fn wait_for<T, F, Fut>(&self, what: &str, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let start = Instant::now();
        loop {
            if let Some(t) = check().await {
                return t;
            }
            if start.elapsed() > DEADLINE {
                panic!("timed out waiting for {what}\n{}", self.logs());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The arguments of node `id` listening on `addr`, given `peers` and (if not every
/// broker) the controller `voters`.
fn node_args(
    opts: &Opts,
    dir: &Path,
    id: i32,
    addr: &str,
    peers: &str,
    voters: Option<&str>,
) -> Vec<String> {
    let data_dir = opts
        .data_dirs
        .get(&id)
        .cloned()
        .unwrap_or_else(|| dir.join(format!("node{id}")));
    let mut args = vec![
        "node".to_string(),
        "--id".into(),
        id.to_string(),
        "--listen".into(),
        addr.to_string(),
        "--data-dir".into(),
        path(&data_dir),
        "--peers".into(),
        peers.to_string(),
        "--replica-lag-time-max-ms".into(),
        opts.lag_ms.to_string(),
        "--replica-fetch-wait-max-ms".into(),
        opts.fetch_wait_ms.to_string(),
        "--session-timeout-ms".into(),
        opts.session_timeout_ms.to_string(),
        "--election-timeout-ms".into(),
        opts.election_timeout_ms.to_string(),
    ];
    if let Some(v) = voters {
        args.extend(["--controller-voters".to_string(), v.to_string()]);
    }
    args.extend(opts.node_args.iter().cloned());
    args
}

/// One partition's entry in a `/v1/metadata` answer.
pub fn partition_in(md: &Value, topic: &str, p: u32) -> Option<Value> {
    md["topics"]
        .as_array()?
        .iter()
        .find(|t| t["name"] == topic)?["partitions"]
        .as_array()?
        .iter()
        .find(|e| e["partition"] == p)
        .cloned()
}

pub fn ids(v: &Value) -> Vec<i32> {
    let mut ids: Vec<i32> = v
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_i64())
                .map(|x| x as i32)
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

fn path(p: &Path) -> String {
    p.to_str().expect("temp paths are UTF-8").to_string()
}

/// Every `EVENT {json}` line of a process log, parsed (docs/broker.md, "Event
/// lines"); a line that is not JSON fails the test.
pub fn event_lines(log: &str) -> Vec<Value> {
    log.lines()
        .filter_map(|l| l.strip_prefix("EVENT "))
        .map(|json| {
            serde_json::from_str(json)
                .unwrap_or_else(|e| panic!("event line `{json}` is not JSON: {e}"))
        })
        .collect()
}
