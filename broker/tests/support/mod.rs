//! Test support: a real cluster (one `broker controller`, N `broker node` processes)
//! on loopback with temp data dirs, and a guard that kills every process when dropped,
//! also on panic. Each process runs in its own process group and gets SIGKILL via
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

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("running").id() as i32
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's process group.
        unsafe {
            libc::kill(-self.pid(), sig);
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
        self.kill();
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
    /// Extra arguments for every node.
    pub node_args: Vec<String>,
    /// The nodes' `--controller` list, instead of the real controller's address.
    pub controller_list: Option<Vec<String>>,
    /// A node's data dir, instead of one in the cluster's temp dir (e.g. a small
    /// filesystem of its own).
    pub data_dirs: BTreeMap<i32, PathBuf>,
    /// Extra arguments for the controller.
    pub controller_args: Vec<String>,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            nodes: 3,
            session_timeout_ms: 1000,
            lag_ms: 1500,
            fetch_wait_ms: 500,
            node_args: Vec::new(),
            controller_list: None,
            data_dirs: BTreeMap::new(),
            controller_args: Vec::new(),
        }
    }
}

/// A controller and its nodes; everything dies with it.
pub struct Cluster {
    pub nodes: BTreeMap<i32, Proc>,
    pub controller: Proc,
    pub http: reqwest::Client,
    pub dir: tempfile::TempDir,
    _serial: MutexGuard<'static, ()>,
}

/// A free loopback port (bound and released: nodes must know each other's address
/// before they start).
fn free_addr() -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().unwrap().to_string()
}

impl Cluster {
    pub fn start(opts: Opts) -> Cluster {
        let serial = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let dir = tempfile::tempdir().expect("temp dir");
        let addrs: BTreeMap<i32, String> = (1..=opts.nodes).map(|id| (id, free_addr())).collect();
        let list = |skip: Option<i32>| {
            addrs
                .iter()
                .filter(|(id, _)| Some(**id) != skip)
                .map(|(id, a)| format!("{id}={a}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut controller_args = vec![
            "controller".into(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--data-dir".into(),
            path(&dir.path().join("controller")),
            "--brokers".into(),
            list(None),
            "--session-timeout-ms".into(),
            opts.session_timeout_ms.to_string(),
        ];
        controller_args.extend(opts.controller_args.iter().cloned());
        let controller = Proc::start(controller_args, dir.path().join("controller.log"));
        let mut nodes = BTreeMap::new();
        for (&id, addr) in &addrs {
            let mut args = vec![
                "node".to_string(),
                "--id".into(),
                id.to_string(),
                "--listen".into(),
                addr.clone(),
                "--data-dir".into(),
                path(
                    &opts
                        .data_dirs
                        .get(&id)
                        .cloned()
                        .unwrap_or_else(|| dir.path().join(format!("node{id}"))),
                ),
                "--controller".into(),
                opts.controller_list
                    .clone()
                    .map_or(controller.addr.clone(), |l| l.join(",")),
                "--peers".into(),
                list(Some(id)),
                "--replica-lag-time-max-ms".into(),
                opts.lag_ms.to_string(),
                "--replica-fetch-wait-max-ms".into(),
                opts.fetch_wait_ms.to_string(),
            ];
            args.extend(opts.node_args.iter().cloned());
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
            _serial: serial,
        }
    }

    pub fn node(&mut self, id: i32) -> &mut Proc {
        self.nodes.get_mut(&id).expect("a node of this cluster")
    }

    pub fn addr(&self, id: i32) -> String {
        self.nodes[&id].addr.clone()
    }

    /// Every process's log, for failure messages.
    pub fn logs(&self) -> String {
        let mut s = format!("--- controller\n{}", self.controller.log());
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

    /// Create a topic on the controller and wait until every replica's node knows it.
    pub async fn create_topic(&self, name: &str, partitions: u32, rf: u32, min_isr: u32) {
        let (status, body) = self
            .post(
                &self.controller.addr,
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

    /// The controller's metadata for one partition.
    pub async fn controller_partition(&self, topic: &str, p: u32) -> Option<Value> {
        let (_, md) = self.get(&self.controller.addr, "/v1/metadata").await;
        partition_in(&md, topic, p)
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
