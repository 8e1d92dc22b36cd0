//! The node process (`broker node`): wires the replicas to the world. It serves the
//! public and internal routes ([`crate::api`]), heartbeats to the controller (following
//! `NOT_CONTROLLER` across the `--controller` list), proposes ISR changes through
//! AlterPartition, runs the follower fetch tasks ([`crate::fetcher`]), and the timers:
//! log flush policy and high-watermark checkpoints.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::bugs::Bugs;
use crate::cli::{self, Bug, NodeArgs};
use crate::error::Code;
use crate::log::LogConfig;
use crate::protocol::{
    AlterPartition, BrokerId, ConfirmLeadership, Heartbeat, HeartbeatResponse, IsrMemberEpoch,
    Metadata, PartitionState,
};
use crate::replica::{IsrChange, Truncation};
use crate::replica_manager::{self, ReplicaManager};
use crate::rpc::{self, CallError};
use crate::{alter_partition, api, server};

/// How often a node heartbeats (the controller's session timeout is a few of these).
const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(200);
/// How often leaders look for ISR changes to propose.
const ISR_CHECK_INTERVAL: Duration = Duration::from_millis(100);
/// How long a leader waits before proposing again an ISR change that was refused,
/// or before sending again one that got no answer.
pub const ISR_RETRY_BACKOFF: Duration = Duration::from_millis(500);
/// How often the high watermark is checkpointed (Kafka: 5 s).
const HW_CHECKPOINT_INTERVAL: Duration = Duration::from_millis(500);
/// Timeout of a call to the controller.
pub const CONTROLLER_TIMEOUT: Duration = Duration::from_secs(2);

/// Everything a node's tasks and handlers share.
pub struct Node {
    pub id: BrokerId,
    /// Fresh at every process start: tells the controller we restarted. Under
    /// `--truncation hw` it is kept in the data dir instead (see [`broker_epoch`]).
    pub broker_epoch: u64,
    pub args: NodeArgs,
    /// Planted bugs (`--bug`), none by default.
    pub bugs: Bugs,
    pub client: reqwest::Client,
    pub manager: ReplicaManager,
    start: Instant,
    peers: HashMap<BrokerId, String>,
    /// The controller address that answered last.
    active_controller: Mutex<String>,
    /// Partition counts of topics, learnt from the controller's metadata.
    topic_sizes: Mutex<HashMap<String, u32>>,
}

impl Node {
    /// A node over `args`; `--bug hw-truncation` becomes `--truncation hw`.
    pub fn new(mut args: NodeArgs) -> std::io::Result<Node> {
        if args.bug == Some(Bug::HwTruncation) {
            args.truncation = cli::Truncation::Hw;
        }
        let broker_epoch = broker_epoch(&args)?;
        Ok(Node {
            id: args.id,
            broker_epoch,
            bugs: planted_bugs(args.bug),
            peers: args.peers.0.iter().cloned().collect(),
            active_controller: Mutex::new(args.controller[0].clone()),
            args,
            client: rpc::client(),
            manager: ReplicaManager::default(),
            start: Instant::now(),
            topic_sizes: Mutex::new(HashMap::new()),
        })
    }

    /// Milliseconds since this process started (the replicas' clock).
    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// How a follower truncates (`--truncation`).
    pub fn truncation(&self) -> Truncation {
        match self.args.truncation {
            cli::Truncation::Epoch => Truncation::Epoch,
            cli::Truncation::Hw => Truncation::Hw,
        }
    }

    /// How to reach broker `id` (from `--peers`).
    pub fn peer_addr(&self, id: BrokerId) -> Option<String> {
        self.peers.get(&id).cloned()
    }

    pub fn log_config(&self) -> LogConfig {
        LogConfig {
            flush_messages: self.args.flush_messages,
            flush_ms: self.args.flush_ms,
            simulate_page_cache: self.args.simulate_page_cache,
            segment_bytes: 0,
        }
    }

    /// POST to the active controller, following `NOT_CONTROLLER` hints and trying the
    /// other `--controller` addresses when one does not answer.
    pub async fn controller_post<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        path: &str,
        body: &Req,
    ) -> Result<Resp, CallError> {
        let list = &self.args.controller;
        let mut addr = self
            .active_controller
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut last = None;
        for _ in 0..list.len() + 2 {
            match rpc::post(&self.client, &addr, path, body, CONTROLLER_TIMEOUT).await {
                Ok(resp) => {
                    *self
                        .active_controller
                        .lock()
                        .unwrap_or_else(|p| p.into_inner()) = addr;
                    return Ok(resp);
                }
                Err(CallError::Api(e)) if e.code == Code::NotController => {
                    let hint = e.extra.get("controller").and_then(|c| c.as_str());
                    addr = match hint {
                        Some(h) if h != addr => h.to_string(),
                        _ => next_in(list, &addr),
                    };
                    last = Some(CallError::Api(e));
                }
                Err(CallError::Transport(e)) => {
                    addr = next_in(list, &addr);
                    last = Some(CallError::Transport(e));
                }
                Err(other) => return Err(other),
            }
        }
        Err(last.unwrap_or_else(|| CallError::Transport("no controller address".into())))
    }

    /// The number of partitions of `topic`, asking the controller once if unknown.
    /// `Ok(None)`: the controller does not know the topic; `Err`: it did not answer.
    pub async fn topic_size(&self, topic: &str) -> Result<Option<u32>, CallError> {
        if let Some(n) = self
            .topic_sizes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(topic)
        {
            return Ok(Some(*n));
        }
        let addr = self
            .active_controller
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let md: Metadata =
            rpc::get(&self.client, &addr, "/v1/metadata", CONTROLLER_TIMEOUT).await?;
        let mut sizes = self.topic_sizes.lock().unwrap_or_else(|p| p.into_inner());
        for t in &md.topics {
            sizes.insert(t.name.clone(), t.partitions.len() as u32);
        }
        Ok(sizes.get(topic).copied())
    }

    /// Ask the controller whether we still lead `topic-partition` in `leader_epoch`.
    pub async fn confirm_leadership(
        &self,
        topic: &str,
        partition: u32,
        leader_epoch: i32,
    ) -> Result<PartitionState, CallError> {
        let req = ConfirmLeadership {
            broker_id: self.id,
            topic: topic.to_string(),
            partition,
            leader_epoch,
        };
        self.controller_post("/internal/confirm-leadership", &req)
            .await
    }
}

/// The broker epoch this process presents to the controller. Fresh at every start
/// (KIP-380: a restart is a failure followed by a start, so the restarted broker leaves
/// every ISR), except under `--truncation hw`, which emulates pre-0.11 Kafka fully:
/// it had no broker epochs, so a broker back within the session timeout kept its ISR
/// membership. There the first epoch is kept in `DATA_DIR/broker-epoch` and presented
/// again after every restart.
fn broker_epoch(args: &NodeArgs) -> std::io::Result<u64> {
    let fresh = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    if args.truncation != cli::Truncation::Hw {
        return Ok(fresh);
    }
    let path = args.data_dir.join("broker-epoch");
    match std::fs::read_to_string(&path) {
        Ok(text) => text.trim().parse().map_err(|_| {
            std::io::Error::other(format!(
                "{}: `{}` is not a broker epoch",
                path.display(),
                text.trim()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(&args.data_dir)?;
            let tmp = args.data_dir.join("broker-epoch.tmp");
            std::fs::write(&tmp, format!("{fresh}\n"))?;
            std::fs::File::open(&tmp)?.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            Ok(fresh)
        }
        Err(e) => Err(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", path.display()),
        )),
    }
}

/// The rule flags for `--bug` (none for `hw-truncation`, which is a truncation mode).
fn planted_bugs(bug: Option<Bug>) -> Bugs {
    let mut b = Bugs::default();
    match bug {
        None | Some(Bug::HwTruncation) => {}
        Some(Bug::AckBeforeReplicate) => b.ack_before_replicate = true,
        Some(Bug::IsrUnchecked) => b.isr_unchecked = true,
        Some(Bug::StaleRead) => b.stale_read = true,
        Some(Bug::NoEpochFence) => b.no_epoch_fence = true,
    }
    b
}

fn next_in(list: &[String], addr: &str) -> String {
    match list.iter().position(|a| a == addr) {
        Some(i) => list[(i + 1) % list.len()].clone(),
        None => list[0].clone(),
    }
}

/// Run the node process until it is killed.
pub fn run(args: NodeArgs) -> Result<(), Box<dyn std::error::Error>> {
    if args.id <= 0 {
        return Err(format!("--id {} must be a positive integer", args.id).into());
    }
    if args.peers.0.iter().any(|(id, _)| *id == args.id) {
        return Err(format!("--peers must not list this broker's own id {}", args.id).into());
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = server::bind_and_announce(args.listen, &args.data_dir)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
        let node = Arc::new(Node::new(args).map_err(|e| format!("broker epoch: {e}"))?);
        eprintln!(
            "node {}: broker epoch {}, truncation {:?}, controller {:?}",
            node.id, node.broker_epoch, node.args.truncation, node.args.controller
        );
        if let Some(bug) = node.args.bug {
            eprintln!("node {}: PLANTED BUG {bug:?} (--bug)", node.id);
        }
        tokio::spawn(heartbeat_loop(node.clone()));
        tokio::spawn(isr_loop(node.clone()));
        tokio::spawn(housekeeping_loop(node.clone()));
        let server = axum::serve(listener, api::router(node.clone()));
        tokio::select! {
            served = server => served?,
            () = stop_signal() => {
                shut_down(&node);
                eprintln!("node {}: stopped (logs flushed, checkpoints written)", node.id);
            }
        }
        Ok(())
    })
}

/// SIGTERM or SIGINT (a SIGKILL, of course, gives no such chance).
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// A clean stop, as Kafka's controlled shutdown leaves its logs: everything flushed
/// and the high watermarks checkpointed, so a restart loses nothing.
fn shut_down(node: &Node) {
    for part in node.manager.all() {
        let name = format!("node {}: {}-{}", node.id, part.tp.topic, part.tp.partition);
        {
            let mut r = part.lock();
            if let Err(e) = r.log_mut().inner_mut().flush() {
                eprintln!("{name}: flush: {e}");
            }
            if let Err(e) = part.checkpoint_epochs(r.epochs().entries()) {
                eprintln!("{name}: epoch checkpoint: {e}");
            }
        }
        if let Err(e) = part.checkpoint_hw() {
            eprintln!("{name}: HW checkpoint: {e}");
        }
    }
}

async fn heartbeat_loop(node: Arc<Node>) {
    let hb = Heartbeat {
        broker_id: node.id,
        broker_epoch: node.broker_epoch,
    };
    let mut failures = 0u32;
    loop {
        match node
            .controller_post::<_, HeartbeatResponse>("/internal/heartbeat", &hb)
            .await
        {
            Ok(resp) => {
                failures = 0;
                if let Err(e) = replica_manager::apply(
                    &node,
                    resp.controller_epoch,
                    resp.brokers,
                    resp.partitions,
                ) {
                    eprintln!("node {}: heartbeat answer ignored: {e}", node.id);
                }
            }
            Err(e) => {
                if failures % 25 == 0 {
                    eprintln!("node {}: heartbeat: {e}", node.id);
                }
                failures += 1;
            }
        }
        tokio::time::sleep(HEARTBEAT_INTERVAL).await;
    }
}

/// Leaders propose ISR shrinks (lagging followers) and expansions (caught-up ones) to
/// the controller; nothing changes locally until the controller accepts.
async fn isr_loop(node: Arc<Node>) {
    loop {
        tokio::time::sleep(ISR_CHECK_INTERVAL).await;
        for part in node.manager.all() {
            let now = node.now_ms();
            if now < part.isr_retry_at_ms.load(Ordering::Relaxed) {
                continue;
            }
            let change = replica_manager::update(&node, &part, |r| {
                let (change, fx) = r.propose_isr(now);
                ((change, r.state().cloned()), fx)
            });
            let (req, sent) = match change {
                (None, _) | (_, None) => continue,
                (Some(IsrChange::ShrunkUnchecked { from, to }), _) => {
                    eprintln!(
                        "node {}: {}-{}: ISR {from:?} -> {to:?} without the controller (--bug isr-unchecked)",
                        node.id, part.tp.topic, part.tp.partition
                    );
                    continue;
                }
                (
                    Some(IsrChange::Propose {
                        pending,
                        member_epochs,
                    }),
                    Some(state),
                ) => {
                    let req = AlterPartition {
                        broker_id: node.id,
                        broker_epoch: node.broker_epoch,
                        topic: state.topic.clone(),
                        partition: state.partition,
                        leader_epoch: pending.leader_epoch,
                        partition_epoch: pending.partition_epoch,
                        new_isr: pending.isr.clone(),
                        new_isr_epochs: member_epochs
                            .into_iter()
                            .map(|(broker_id, broker_epoch)| IsrMemberEpoch {
                                broker_id,
                                broker_epoch,
                            })
                            .collect(),
                    };
                    (req, pending)
                }
            };
            tokio::spawn(alter_partition::send(node.clone(), part, req, sent));
        }
    }
}

/// The log flush policy's timer and the high-watermark checkpoints.
async fn housekeeping_loop(node: Arc<Node>) {
    let tick = Duration::from_millis(node.args.flush_ms.unwrap_or(100).clamp(5, 100));
    let mut last_hw = Instant::now();
    loop {
        tokio::time::sleep(tick).await;
        let checkpoint = last_hw.elapsed() >= HW_CHECKPOINT_INTERVAL;
        if checkpoint {
            last_hw = Instant::now();
        }
        for part in node.manager.all() {
            if node.args.flush_ms.is_some() {
                let mut r = part.lock();
                if let Err(e) = r.log_mut().inner_mut().flush_if_due(Instant::now()) {
                    eprintln!(
                        "node {}: {}-{}: flush: {e}",
                        node.id, part.tp.topic, part.tp.partition
                    );
                }
            }
            if checkpoint {
                if let Err(e) = part.checkpoint_hw() {
                    eprintln!(
                        "node {}: {}-{}: HW checkpoint: {e}",
                        node.id, part.tp.topic, part.tp.partition
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bug_sets_exactly_its_flag() {
        assert_eq!(planted_bugs(None), Bugs::default());
        assert_eq!(planted_bugs(Some(Bug::HwTruncation)), Bugs::default());
        let all = [
            Bug::AckBeforeReplicate,
            Bug::IsrUnchecked,
            Bug::StaleRead,
            Bug::NoEpochFence,
        ];
        for bug in all {
            let b = planted_bugs(Some(bug));
            let set = [
                b.ack_before_replicate,
                b.isr_unchecked,
                b.stale_read,
                b.no_epoch_fence,
            ];
            assert_eq!(set.iter().filter(|x| **x).count(), 1, "{bug:?}: {b:?}");
        }
    }
}
