//! A broker cluster under the harness's control: the controller and N nodes as OS
//! processes (see `supervisor`), a TCP proxy on every directed link (see `net`), and
//! the operations the nemesis and the end-of-run need.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::Result;

/// A process of the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Proc {
    Controller,
    Node(i32),
}

/// Who can no longer reach whom: a set of cut directed links between processes.
/// `Grudge::isolate(p, all)` etc. build the topologies of SPEC §6.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grudge {
    /// (from, to): traffic from `from` to `to` is blackholed (both directions of the
    /// TCP connection that `from` opened to `to`).
    pub cut: Vec<(Proc, Proc)>,
}

/// How to start a cluster.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The `broker` executable.
    pub broker_bin: PathBuf,
    /// Number of nodes (ids 1..=nodes).
    pub nodes: u32,
    /// Where each process gets `<id>/` (data dir + broker.log); the controller gets `controller/`.
    pub root: PathBuf,
    /// Extra arguments for every `broker node` (e.g. `--truncation hw`, `--flush-messages 1`).
    pub node_args: Vec<String>,
    /// Extra arguments for `broker controller` (e.g. `--unclean-election`).
    pub controller_args: Vec<String>,
    /// How long to wait for the cluster to come up.
    pub start_timeout: Duration,
}

/// A running cluster. Dropping it kills every process and stops every proxy.
pub struct Cluster {
    _private: (),
}

impl Cluster {
    /// Start the controller and every node behind proxies; wait until every node has
    /// registered with the controller.
    pub async fn start(config: ClusterConfig) -> Result<Cluster> {
        let _ = config;
        todo!()
    }

    /// Node ids, ascending.
    pub fn node_ids(&self) -> Vec<i32> {
        todo!()
    }

    /// Addresses clients use to reach each node (through the client→node proxies).
    pub fn client_addrs(&self) -> BTreeMap<i32, SocketAddr> {
        todo!()
    }

    /// Address clients use to reach the controller.
    pub fn controller_addr(&self) -> SocketAddr {
        todo!()
    }

    /// SIGKILL a process (no-op if it is not running).
    pub async fn kill(&mut self, p: Proc) -> Result<()> {
        let _ = p;
        todo!()
    }

    /// Start a killed process again on the same data dir.
    pub async fn restart(&mut self, p: Proc) -> Result<()> {
        let _ = p;
        todo!()
    }

    /// SIGSTOP a process.
    pub async fn pause(&mut self, p: Proc) -> Result<()> {
        let _ = p;
        todo!()
    }

    /// SIGCONT a paused process.
    pub async fn resume(&mut self, p: Proc) -> Result<()> {
        let _ = p;
        todo!()
    }

    /// Cut the links a grudge names (in addition to those already cut).
    pub fn partition(&mut self, grudge: &Grudge) {
        let _ = grudge;
        todo!()
    }

    /// Restore every link.
    pub fn heal(&mut self) {
        todo!()
    }

    /// Heal every link, resume every paused process and restart every killed one.
    pub async fn heal_all(&mut self) -> Result<()> {
        todo!()
    }

    /// Wait until every partition has a full ISR, a leader, and HW = LEO on every
    /// replica (read from the nodes' /debug/partitions); Err says what did not converge.
    pub async fn wait_converged(&self, timeout: Duration) -> Result<()> {
        let _ = timeout;
        todo!()
    }

    /// Write every node's log (GET /debug/log for each partition it holds) to
    /// `<root>/<id>/final-log.jsonl` (docs/run-folder.md).
    pub async fn dump_logs(&self) -> Result<()> {
        todo!()
    }

    /// Stop every process (continue paused ones first) and every proxy.
    pub async fn shutdown(self) -> Result<()> {
        todo!()
    }
}
