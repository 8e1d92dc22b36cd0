//! The seam between a campaign and the system under test: what the nemesis and the
//! end of a run need of a system ([`System`]) — its processes (kill, pause,
//! restart), the links between them (cut, heal, degrade), and what can be observed
//! of it — and nothing of how it works inside. Our broker's cluster is its first
//! implementation ([`broker::Cluster`]).
//!
//! What only some systems can provide is optional, each a method that answers
//! "none" by default: the roles of its processes ([`System::roles`]: who leads, the
//! active controller — what the replication package and the role-aimed faults aim
//! at), the state of one replica ([`System::replica`]: what a scenario's script
//! waits on), the transitions it reports ([`System::transitions`]: our brokers'
//! `EVENT` lines, the fault coverage), storage faults, reconfiguration (new
//! partitions, reassignment), a converged state to wait for, and its final logs
//! (replica divergence). A black-box system implements the
//! processes and the links and gets every fault that needs nothing more.
//!
//! - [`process`]: processes under the harness's control (process groups, kill on
//!   drop, `PR_SET_PDEATHSIG`) and the crashes of those that die on their own;
//! - [`view`]: the roles a system shows at one moment;
//! - [`broker`]: our broker's cluster: its processes behind a proxy on every link,
//!   its API, its event lines;
//! - [`maelstrom`]: any binary that speaks Maelstrom's protocol, the harness its
//!   network.

pub mod broker;
pub mod clock;
pub(crate) mod corrupt;
pub mod maelstrom;
pub mod process;
pub(crate) mod storage;
pub mod view;

use std::time::Duration;

use crate::error::{HarnessError, Result};
use crate::net::{Conditions, Grudge};
use crate::proc::Proc;
use broker::events::BrokerEvent;
use view::ClusterView;

/// How a storage fault makes a node's storage fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskMode {
    /// A full disk: writes stop short, fsyncs and file creations fail.
    Enospc,
    /// A failing disk: every change fails.
    Eio,
}

impl DiskMode {
    pub fn as_str(self) -> &'static str {
        match self {
            DiskMode::Enospc => "enospc",
            DiskMode::Eio => "eio",
        }
    }
}

/// A replica as its node reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaSeen {
    pub leo: u64,
    pub hw: u64,
    /// How far its log is flushed: durable past a power cut.
    pub flushed: u64,
    /// The leader it follows (itself when it leads; -1: none).
    pub leader: i32,
}

/// A change of the system's configuration, through its admin API: Kafka's
/// CreatePartitions and partition reassignment (KIP-455).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reconfiguration {
    /// Grow `topic` to `count` partitions.
    AddPartitions { topic: String, count: u32 },
    /// Move a partition to `replicas` (grows or shrinks it too); `from`: the
    /// replicas it had when asked, for the record (empty: not known).
    Reassign {
        topic: String,
        partition: u32,
        replicas: Vec<i32>,
        from: Vec<i32>,
    },
    /// Cancel the reassignment in progress of a partition.
    CancelReassignment { topic: String, partition: u32 },
}

/// The error of an optional capability a system does not have.
pub fn unsupported(what: &str) -> HarnessError {
    HarnessError::new(format!("this system under test offers no {what}"))
}

/// A system under test as a campaign drives it: see the module doc.
#[allow(async_fn_in_trait)]
pub trait System {
    /// Every process faults may hit.
    fn procs(&self) -> Vec<Proc>;

    /// The ids of its nodes, ascending.
    fn nodes(&self) -> Vec<i32>;

    fn is_running(&self, p: Proc) -> bool;

    /// SIGKILL these processes at the same instant (no-op for those not running).
    async fn kill(&mut self, procs: &[Proc]) -> Result<()>;

    /// Start a killed process again, on what it kept (no-op if it runs).
    async fn restart(&mut self, p: Proc) -> Result<()>;

    /// SIGSTOP.
    async fn pause(&mut self, p: Proc) -> Result<()>;

    /// SIGCONT.
    async fn resume(&mut self, p: Proc) -> Result<()>;

    /// Cut the directed links a grudge names (besides those already cut).
    fn cut(&mut self, grudge: &Grudge);

    /// Restore the links a grudge names, leaving other cut links cut.
    fn heal(&mut self, grudge: &Grudge);

    /// Change the conditions of every link to or from `procs` (clients' included) —
    /// or, `between`, only of the links among them — each link's draws seeded from
    /// `seed` and its place.
    fn degrade(
        &mut self,
        procs: &[Proc],
        between: bool,
        seed: u64,
        change: &dyn Fn(&mut Conditions),
    );

    /// Hold every answer `p` sends to the clients (their requests still reach it
    /// and take effect), or let them through again.
    fn hold_answers(&mut self, p: Proc, held: bool);

    /// SIGKILL node `node` and cut its power: it loses what it wrote and did not
    /// fsync (what its storage has not written back), whether or not the
    /// campaign's other kills cut power; `torn = Some(seed)`: a prefix of its last
    /// such write, its length drawn from `seed`, survives. A system without power
    /// cuts: a plain kill.
    async fn cut_power(&mut self, node: i32, torn: Option<u64>) -> Result<()> {
        let _ = torn;
        self.kill(&[Proc::Node(node)]).await
    }

    /// What the kills since the last call dropped from storage, one value per
    /// process whose power they cut (none: kills cut no power).
    fn take_losses(&mut self) -> Vec<serde_json::Value> {
        Vec::new()
    }

    /// Set process `p`'s wall clock as `fault` says (None: true time again).
    async fn set_clock(&mut self, p: Proc, fault: Option<clock::ClockFault>) -> Result<()> {
        let _ = (p, fault);
        Err(unsupported("clock faults"))
    }

    /// SIGKILL node `node` and damage one of its files as `seed` draws (it stays
    /// down: a restart brings it back on the damaged files).
    async fn corrupt(&mut self, node: i32, seed: u64) -> Result<()> {
        let _ = (node, seed);
        Err(unsupported("corruption of its files"))
    }

    /// What the `corrupt` faults since the last call did, one value each.
    fn take_damage(&mut self) -> Vec<serde_json::Value> {
        Vec::new()
    }

    /// Make node `node`'s storage fail in `mode` for `for_ms` at most.
    async fn fail_storage(&mut self, node: i32, mode: DiskMode, for_ms: u64) -> Result<()> {
        let _ = (node, mode, for_ms);
        Err(unsupported("storage faults"))
    }

    /// Make node `node`'s storage work again.
    async fn storage_ok(&mut self, node: i32) -> Result<()> {
        let _ = node;
        Ok(())
    }

    /// Change the system's configuration. Err: the system refused (it says why) —
    /// a refusal is part of what a campaign records, not a harness failure.
    async fn reconfigure(&mut self, change: &Reconfiguration) -> std::result::Result<(), String> {
        let _ = change;
        Err(unsupported("reconfiguration").to_string())
    }

    /// The roles of the partitions of `topics` as the system shows them now (None:
    /// it shows none, or does not answer now).
    async fn roles(&self, topics: &[&str]) -> Option<ClusterView> {
        let _ = topics;
        None
    }

    /// The active controller and its controller epoch.
    async fn active_controller(&self) -> Result<(Proc, i64)> {
        Err(unsupported("controller"))
    }

    /// Node `node`'s replica of a partition, as the node reports it.
    async fn replica(&self, node: i32, topic: &str, partition: u32) -> Option<ReplicaSeen> {
        let _ = (node, topic, partition);
        None
    }

    /// The transitions the system reported since the last call (none by default).
    fn transitions(&mut self) -> Vec<BrokerEvent> {
        Vec::new()
    }

    /// Heal every link, restore the degraded ones, resume and restart every process,
    /// make every storage work.
    async fn heal_all(&mut self) -> Result<()>;

    /// Wait, at most `timeout`, until the healed system has converged (for our
    /// broker: every partition led, its ISR full, HW = LEO everywhere).
    async fn wait_converged(&self, timeout: Duration) -> Result<()> {
        let _ = timeout;
        Ok(())
    }

    /// Hand every node's final log to `save`, node by node (false: the system keeps
    /// none to judge).
    async fn final_logs(&self, save: &mut dyn FnMut(i32, &str) -> Result<()>) -> Result<bool> {
        let _ = save;
        Ok(false)
    }

    /// Stop every process.
    async fn shutdown(self) -> Result<()>
    where
        Self: Sized;
}

/// Wait, at most `within`, until the partition's ISR as the system's roles show it
/// passes `test`, looking every `every` (each look bounded by what is left): true if
/// it did.
pub async fn wait_isr<S: System>(
    system: &S,
    topic: &str,
    partition: u32,
    within: Duration,
    every: Duration,
    test: impl Fn(&[i32]) -> bool,
) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        if let Ok(Some(view)) = tokio::time::timeout(left, system.roles(&[topic])).await
            && view
                .partitions
                .iter()
                .find(|p| p.topic == topic && p.partition == partition)
                .is_some_and(|p| test(&p.isr))
        {
            return true;
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        tokio::time::sleep(every.min(left)).await;
    }
}
