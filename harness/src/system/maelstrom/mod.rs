//! A system that speaks Maelstrom's protocol (docs/maelstrom.md), as the second
//! implementation of [`System`]: N copies of the user's binary, nodes `n1`…`nN`,
//! each its own process and process group in its own working directory, their
//! stdin and stdout joined by the harness's [`router`], which is the whole network
//! between them, and the services they may call. The nemesis acts on it through the
//! seam like on any system: kill (SIGKILL; restarted as a fresh process in the same
//! directory and initialised again: a node keeps only what it wrote to disk), pause
//! (SIGSTOP / SIGCONT), partitions and degraded links (message by message, in the
//! [`network`]). A black box shows no roles: faults aimed at a leader or a
//! controller cannot be played on it.
//!
//! - [`node`]: one node's process, its stdin and stdout threads;
//! - [`router`]: the task that carries every message, and what it is told
//!   (`inbound`);
//! - [`network`]: the fate of each message (cut, delayed, lost);
//! - [`messages`]: `messages.jsonl` and the message statistics.

mod disks;
mod inbound;
pub mod messages;
pub mod network;
pub mod node;
pub mod router;

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use maelstrom::init::{check_init_ok, init_message, node_ids};
use maelstrom::message::{Body, Message};
use nix::sys::signal::Signal;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::{HarnessError, Result};
use crate::net::{Conditions, Grudge};
use crate::proc::Proc;
use crate::store::History;
use crate::system::clock::{ClockFault, Clocks};
use crate::system::{DiskMode, System};
use disks::Disks;
use inbound::Inbound;
use messages::{MessageLog, MessageStats};
use network::Network;
use node::NodeSpec;
use router::{Router, Shared, Slot, lock};

/// The client id the harness initialises nodes from (its clients are c1…cK).
pub const INIT_CLIENT: &str = "c0";

/// How to run the cluster.
#[derive(Debug, Clone)]
pub struct MaelstromConfig {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub nodes: usize,
    /// The run folder's `nodes/`: each node's working directory is `nodes/<id>/`.
    pub root: PathBuf,
    /// `messages.jsonl`.
    pub messages: PathBuf,
    /// The history's time origin.
    pub origin: Instant,
    pub seed: u64,
    /// How long a node may take to answer `init`.
    pub init_timeout: Duration,
    /// What each node is sent after `init` (broadcast's `topology`), and must answer
    /// with its `_ok`.
    pub setup: Option<Body>,
    /// Every node runs under a fake wall clock (the faults hold clock faults).
    pub clocks: bool,
    /// Every node's working directory is a fault filesystem (the faults work on
    /// storage): `nodes/<id>/data`, its files kept in `nodes/<id>/disk`.
    pub fault_fs: bool,
    /// Every kill cuts the node's power too (the faults must lose what was not
    /// fsynced).
    pub power_cut_on_kill: bool,
}

/// The running cluster; dropping it kills every node.
pub struct MaelstromCluster {
    specs: Vec<NodeSpec>,
    shared: Arc<Shared>,
    /// Every id of the network (nodes, clients, services), for degraded links.
    ends: Vec<String>,
    tx: UnboundedSender<Inbound>,
    router: Option<JoinHandle<()>>,
    next_id: Arc<AtomicI64>,
    init_timeout: Duration,
    setup: Option<Body>,
    /// The nodes' fake clocks, each control file in the node's directory.
    clocks: Option<Clocks>,
    /// The nodes' storage, seen from outside.
    disks: Disks,
}

/// What a client (or the init) of the harness holds to send requests.
#[derive(Clone)]
pub struct Requester {
    tx: UnboundedSender<Inbound>,
    next_id: Arc<AtomicI64>,
}

impl Requester {
    /// Send `body` from `client` to `dest` with a fresh `msg_id`; its reply, or None
    /// if none came within `timeout` (the request is then abandoned: a later reply
    /// is dropped as late).
    pub async fn call(
        &self,
        client: &str,
        dest: &str,
        mut body: Body,
        timeout: Duration,
        init: bool,
    ) -> Option<Body> {
        let msg_id = self.next_id.fetch_add(1, Ordering::Relaxed);
        body.msg_id = Some(msg_id);
        let (reply, rx) = oneshot::channel();
        let msg = Message::new(client, dest, body);
        self.tx.send(Inbound::Request { msg, reply, init }).ok()?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(body)) => Some(body),
            _ => {
                let _ = self.tx.send(Inbound::Cancel {
                    client: client.to_string(),
                    msg_id,
                });
                None
            }
        }
    }
}

impl MaelstromCluster {
    /// Start every node and initialise it (bounded by `init_timeout`); `clients`:
    /// how many clients the harness will run (c1…cK).
    pub async fn start(
        config: MaelstromConfig,
        clients: u32,
        history: Arc<History>,
    ) -> Result<MaelstromCluster> {
        let ids = node_ids(config.nodes);
        let procs = (1..=config.nodes as i32).map(Proc::Node);
        let clocks = match config.clocks {
            true => Some(Clocks::in_dirs(
                procs.zip(&ids).map(|(p, id)| (p, config.root.join(id))),
            )?),
            false => None,
        };
        let disks = Disks::mount(
            &config.root,
            &ids,
            config.fault_fs,
            config.power_cut_on_kill,
        )?;
        let specs: Vec<NodeSpec> = ids
            .iter()
            .enumerate()
            .map(|(index, id)| NodeSpec {
                id: id.clone(),
                index,
                program: config.program.clone(),
                args: config.args.clone(),
                env: clocks
                    .as_ref()
                    .map_or_else(Vec::new, |c| c.env(Proc::Node(index as i32 + 1))),
                dir: disks.work_dir(&config.root, id),
                stderr: config.root.join(id).join("stderr.log"),
            })
            .collect();
        let mut ends = ids.clone();
        ends.extend((0..=clients).map(|c| format!("c{c}")));
        ends.extend(maelstrom::service::ServiceKind::ALL.map(|k| k.name().to_string()));
        let shared = Arc::new(Shared {
            slots: Mutex::new((0..config.nodes).map(|_| Slot::default()).collect()),
            net: Mutex::new(Network::new(config.nodes)),
            log: Mutex::new(MessageLog::create(Some(&config.messages), config.origin)?),
            held: Mutex::new(HashSet::new()),
        });
        let (tx, rx) = unbounded_channel();
        let stderr = ids
            .iter()
            .map(|id| {
                let shown = format!("nodes/{id}/stderr.log");
                (shown, config.root.join(id).join("stderr.log"))
            })
            .collect();
        let router = Router::new(
            shared.clone(),
            tx.clone(),
            ids,
            stderr,
            history,
            config.seed,
        );
        let router = tokio::spawn(router.run(rx));
        let mut cluster = MaelstromCluster {
            specs,
            shared,
            ends,
            tx,
            router: Some(router),
            next_id: Arc::new(AtomicI64::new(1)),
            init_timeout: config.init_timeout,
            setup: config.setup,
            clocks,
            disks,
        };
        for i in 0..config.nodes {
            cluster.launch(i).await?;
        }
        Ok(cluster)
    }

    /// What the clients send their requests with.
    pub fn requester(&self) -> Requester {
        Requester {
            tx: self.tx.clone(),
            next_id: self.next_id.clone(),
        }
    }

    /// The node ids, `n1`…`nN`.
    pub fn node_ids(&self) -> Vec<String> {
        self.specs.iter().map(|s| s.id.clone()).collect()
    }

    /// The message statistics so far, `operations` client operations completed.
    pub fn message_stats(&self, operations: u64) -> MessageStats {
        lock(&self.shared.log).stats(operations)
    }

    fn index(&self, p: Proc) -> Option<usize> {
        match p {
            Proc::Node(k) if k >= 1 && (k as usize) <= self.specs.len() => Some(k as usize - 1),
            _ => None,
        }
    }

    /// Start node `i` (a new life) and initialise it.
    /// Send node `id` the workload's setup, if any (Err: why it was not taken).
    async fn set_up(&self, id: &str) -> std::result::Result<(), String> {
        let Some(body) = self.setup.clone() else {
            return Ok(());
        };
        let kind = body.kind.clone();
        let timeout = self.init_timeout;
        let reply = self
            .requester()
            .call(INIT_CLIENT, id, body, timeout, true)
            .await
            .ok_or_else(|| format!("did not answer {kind} within {timeout:?}"))?;
        if let Some(e) = maelstrom::error::ErrorReply::from_body(&reply) {
            return Err(format!("refused {kind}: {}", e.describe()));
        }
        if reply.kind != format!("{kind}_ok") {
            return Err(format!(
                "answered {kind} with {}, not {kind}_ok",
                reply.kind
            ));
        }
        Ok(())
    }

    async fn launch(&mut self, i: usize) -> Result<()> {
        let spec = self.specs[i].clone();
        let life = {
            let mut slots = lock(&self.shared.slots);
            slots[i].lives += 1;
            slots[i].lives
        };
        let proc = node::start(&spec, life, self.tx.clone()).await?;
        let child = proc.child.clone();
        {
            let mut slots = lock(&self.shared.slots);
            slots[i].proc = Some(proc);
            slots[i].ready = false;
            slots[i].paused = false;
        }
        if life > 1 {
            lock(&self.shared.log).restarted();
        }
        let ids = self.node_ids();
        let init = init_message(INIT_CLIENT, &spec.id, &ids, 0);
        let requester = self.requester();
        let timeout = self.init_timeout;
        let call = requester.call(INIT_CLIENT, &spec.id, init.body.clone(), timeout, true);
        // A node that exits before it answers fails at once, not at the timeout.
        let exited = async {
            loop {
                if let Some(status) = child.reap() {
                    return status;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        let reply = tokio::select! {
            r = call => r.ok_or_else(|| format!("did not answer init within {timeout:?}")),
            status = exited => Err(format!("exited ({status}) before answering init")),
        };
        let why = match reply {
            Err(why) => why,
            Ok(body) => {
                let mut sent = init.clone();
                sent.body.msg_id = body.in_reply_to;
                let answer = Message::new(&spec.id, INIT_CLIENT, body);
                match check_init_ok(&sent, &answer) {
                    Ok(()) => match self.set_up(&spec.id).await {
                        Ok(()) => {
                            lock(&self.shared.slots)[i].ready = true;
                            return Ok(());
                        }
                        Err(why) => why,
                    },
                    Err(e) => e.to_string(),
                }
            }
        };
        self.stop_node(i).await?;
        Err(HarnessError::new(format!(
            "node {} ({}) {why}; its stderr ({}) ends with:\n{}",
            spec.id,
            spec.program.display(),
            spec.stderr.display(),
            crate::system::process::supervisor::log_tail(&spec.stderr, 10)
        )))
    }

    /// Kill node `i`'s life, if any, and reap it.
    async fn stop_node(&mut self, i: usize) -> Result<()> {
        let proc = {
            let mut slots = lock(&self.shared.slots);
            slots[i].ready = false;
            slots[i].paused = false;
            slots[i].proc.take()
        };
        match proc {
            Some(p) => p.child.kill().await,
            None => Ok(()),
        }
    }

    /// SIGKILL these nodes at the same instant (every one signalled first, then each
    /// reaped); the indexes of those that were running.
    async fn kill_nodes(&mut self, procs: &[Proc]) -> Result<Vec<usize>> {
        let taken: Vec<_> = {
            let mut slots = lock(&self.shared.slots);
            procs
                .iter()
                .filter_map(|&p| self.index(p))
                .filter_map(|i| {
                    slots[i].ready = false;
                    slots[i].paused = false;
                    slots[i].proc.take().map(|proc| (i, proc))
                })
                .collect()
        };
        for (_, p) in &taken {
            p.child.signal_kill();
        }
        for (_, p) in &taken {
            p.child.kill().await?;
        }
        Ok(taken.into_iter().map(|(i, _)| i).collect())
    }

    /// Node `p`'s index, or an error naming it.
    fn node(&self, p: Proc) -> Result<usize> {
        self.index(p)
            .ok_or_else(|| HarnessError::new(format!("{p} is not a node of this cluster")))
    }

    fn signal(&mut self, p: Proc, signal: Signal, paused: bool) -> Result<()> {
        let Some(i) = self.index(p) else {
            return Ok(());
        };
        let mut slots = lock(&self.shared.slots);
        let slot = &mut slots[i];
        if let Some(proc) = &slot.proc
            && slot.paused != paused
        {
            proc.child.signal(signal)?;
            slot.paused = paused;
        }
        Ok(())
    }
}

impl System for MaelstromCluster {
    fn procs(&self) -> Vec<Proc> {
        self.nodes().into_iter().map(Proc::Node).collect()
    }

    fn nodes(&self) -> Vec<i32> {
        (1..=self.specs.len() as i32).collect()
    }

    fn is_running(&self, p: Proc) -> bool {
        self.index(p)
            .is_some_and(|i| lock(&self.shared.slots)[i].proc.is_some())
    }

    /// Their power cut too when the campaign's kills must lose what was not fsynced.
    async fn kill(&mut self, procs: &[Proc]) -> Result<()> {
        self.kill_nodes(procs).await?;
        for &p in procs {
            if let Some(i) = self.index(p) {
                self.disks.killed(i, p)?;
            }
        }
        Ok(())
    }

    async fn cut_power(&mut self, node: i32, torn: Option<u64>) -> Result<()> {
        let p = Proc::Node(node);
        let i = self.node(p)?;
        self.kill_nodes(&[p]).await?;
        self.disks.cut_power(i, p, torn)
    }

    fn take_losses(&mut self) -> Vec<serde_json::Value> {
        self.disks.take_losses()
    }

    /// Through its fault filesystem, so the kernel's cache sees it.
    async fn corrupt(&mut self, node: i32, seed: u64) -> Result<()> {
        let p = Proc::Node(node);
        let i = self.node(p)?;
        self.kill(&[p]).await?;
        self.disks.damage(p, &self.specs[i].dir, seed)
    }

    fn take_damage(&mut self) -> Vec<serde_json::Value> {
        self.disks.take_damage()
    }

    async fn fail_storage(&mut self, node: i32, mode: DiskMode, for_ms: u64) -> Result<()> {
        let p = Proc::Node(node);
        self.disks.fail(self.node(p)?, p, mode, for_ms)
    }

    async fn storage_ok(&mut self, node: i32) -> Result<()> {
        self.disks.heal(self.node(Proc::Node(node))?);
        Ok(())
    }

    /// A restarted node gets a working disk.
    async fn restart(&mut self, p: Proc) -> Result<()> {
        match self.index(p) {
            Some(i) if !self.is_running(p) => {
                self.disks.heal(i);
                self.launch(i).await
            }
            _ => Ok(()),
        }
    }

    async fn pause(&mut self, p: Proc) -> Result<()> {
        self.signal(p, Signal::SIGSTOP, true)
    }

    async fn resume(&mut self, p: Proc) -> Result<()> {
        self.signal(p, Signal::SIGCONT, false)
    }

    fn cut(&mut self, grudge: &Grudge) {
        lock(&self.shared.net).cut(grudge);
    }

    fn heal(&mut self, grudge: &Grudge) {
        lock(&self.shared.net).heal(grudge);
    }

    fn degrade(
        &mut self,
        procs: &[Proc],
        between: bool,
        seed: u64,
        change: &dyn Fn(&mut Conditions),
    ) {
        lock(&self.shared.net).degrade(&self.ends, procs, between, seed, change);
    }

    fn hold_answers(&mut self, p: Proc, held: bool) {
        if let Some(i) = self.index(p) {
            let mut h = lock(&self.shared.held);
            if held {
                h.insert(i);
            } else {
                h.remove(&i);
            }
        }
    }

    async fn set_clock(&mut self, p: Proc, fault: Option<ClockFault>) -> Result<()> {
        match &mut self.clocks {
            Some(clocks) => clocks.set(p, fault),
            None => Err(crate::system::unsupported(
                "clock faults in this campaign (its nodes run on the machine's clock)",
            )),
        }
    }

    async fn heal_all(&mut self) -> Result<()> {
        lock(&self.shared.net).heal_all();
        lock(&self.shared.held).clear();
        if let Some(clocks) = &mut self.clocks {
            clocks.reset_all()?;
        }
        self.disks.heal_all();
        for p in self.procs() {
            self.resume(p).await?;
            self.restart(p).await?;
        }
        Ok(())
    }

    async fn shutdown(mut self) -> Result<()> {
        for i in 0..self.specs.len() {
            self.stop_node(i).await?;
        }
        let (done, wait) = oneshot::channel();
        if self.tx.send(Inbound::Stop(done)).is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(10), wait).await;
        }
        if let Some(r) = self.router.take() {
            r.abort();
        }
        if let Some(e) = lock(&self.shared.log).flush() {
            return Err(HarnessError::new(e));
        }
        Ok(())
    }
}

impl Drop for MaelstromCluster {
    fn drop(&mut self) {
        // Each node's child kills its process group when dropped.
        lock(&self.shared.slots).clear();
        if let Some(r) = self.router.take() {
            r.abort();
        }
    }
}
