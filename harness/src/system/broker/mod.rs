//! A broker cluster under the harness's control: N broker processes ([`supervisor`],
//! running the `broker_bin`), a TCP proxy on every directed link (see `net`), and
//! the operations the nemesis and the end of a run need: kill, pause, restart, cut
//! links, find the active controller and read its metadata ([`api`]), wait until the
//! cluster has converged (`convergence`), dump every replica's log.
//!
//! The controller: by default every broker is a voter of the controller quorum
//! (KRaft's combined mode), so the controller is whichever broker the quorum elected,
//! found at each look by asking the brokers ([`Cluster::active_controller`]). With
//! [`ClusterConfig::dedicated_controller`] it is one more process instead
//! (`broker controller`, id nodes + 1, the only voter of its quorum; KRaft's isolated
//! mode), which some fault scripts need: a broker cut from its peers that still
//! reaches the controller.
//!
//! Layout under `root`: `<id>/data` and `<id>/broker.log` for broker `id`,
//! `controller/data`, `controller/broker.log` for a dedicated controller, and
//! `cluster-secret`, the secret every process is given with the cluster id
//! ([`Credentials`]). Where the final logs go is the caller's business
//! ([`Cluster::dump_logs`] hands them over).
//!
//! Links: every directed pair of processes has its own proxy ([`Link`]), and each
//! process is given the proxies' addresses in `--peers` (and `--controller-voters` /
//! `--brokers` with a dedicated controller): replication, controller and Raft
//! traffic between two brokers all cross that pair's proxies. Clients reach each
//! process through one more proxy per process (`client_addrs`);
//! partitions never cut those (see `crate::net::topology`). A restarted process listens on a
//! fresh port (`--listen 127.0.0.1:0` again): the proxies are pointed at it, so every
//! peer and client keeps using the addresses it was given at the start.
//!
//! The harness's own calls (metadata, debug endpoints, topic creation) go straight to
//! the processes' real addresses, outside the faults. The replication transitions
//! the brokers report on stderr (`EVENT` lines in their `broker.log`) are read by
//! [`events`].
//!
//! A process that dies without the harness killing it is a [`crash::Crash`], reported
//! as it is reaped to the receiver [`Cluster::take_crash_reports`] hands out.

pub mod api;
pub(crate) mod broker_bin;
mod convergence;
mod credentials;
mod degrade;
mod disk;
mod dump;
pub mod events;
mod seam;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::system::process::crash;
use crate::system::process::supervisor::{ProcessSpec, Supervised};
use api::{Admin, CreateTopic, Metadata};
use broker_config::Settings;
pub use credentials::Credentials;

use crate::error::{HarnessError, Result};
use crate::net::proxy::Link;
use crate::proc::Proc;

/// How to start a cluster.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The `broker` executable.
    pub broker_bin: PathBuf,
    /// Number of nodes (ids 1..=nodes).
    pub nodes: u32,
    /// Where each process gets `<id>/` (data dir + broker.log); a dedicated
    /// controller gets `controller/`.
    pub root: PathBuf,
    /// What every broker is given (`--truncation hw`, `--flush-messages 1`, …; a
    /// dedicated controller takes the controller's settings and the bug).
    pub settings: Settings,
    /// Run the controller quorum as one dedicated process (`broker controller`)
    /// rather than on every broker.
    pub dedicated_controller: bool,
    /// How long to wait for the cluster to come up.
    pub start_timeout: Duration,
    /// Put every process's data dir on a fault filesystem ([`disk`]).
    pub fault_fs: bool,
    /// Every kill of a process cuts its power too: its storage loses what it did
    /// not fsync (needs `fault_fs`).
    pub power_cut_on_kill: bool,
    /// Every process runs under a fake wall clock the clock faults set.
    pub clocks: bool,
}

/// A running cluster. Dropping it kills every process and stops every proxy.
pub struct Cluster {
    config: ClusterConfig,
    credentials: Credentials,
    members: BTreeMap<Proc, Supervised>,
    /// Each process's fault filesystem (none with `fault_fs` off); after `members`,
    /// so that the processes are dead before their data dirs are unmounted.
    disks: BTreeMap<Proc, faultfs::Mount>,
    /// What the `corrupt` faults did, until taken.
    damage: Vec<serde_json::Value>,
    /// Each process's fake wall clock, with clock faults in the campaign.
    clocks: Option<crate::system::clock::Clocks>,
    /// What the power cuts of kills since the last look dropped, for the history.
    losses: Vec<serde_json::Value>,
    /// (from, to) → the proxy `from` uses to reach `to`.
    links: BTreeMap<(Proc, Proc), Link>,
    /// to → the proxy clients use to reach `to`.
    client_links: BTreeMap<Proc, Link>,
    admin: Admin,
    crashes: crash::CrashReports,
    /// The brokers' `EVENT` lines read so far.
    events: events::EventTail,
}

/// The harness's own HTTP calls: short, so a paused process cannot stall it.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(3);
pub(super) const POLL: Duration = Duration::from_millis(200);

impl Cluster {
    /// Start every broker (and a dedicated controller) behind proxies; wait until
    /// every broker has registered with the active controller.
    pub async fn start(config: ClusterConfig) -> Result<Cluster> {
        if config.nodes == 0 {
            return Err(HarnessError::new("a cluster needs at least one node"));
        }
        if !config.broker_bin.is_file() {
            return Err(HarnessError::new(format!(
                "broker binary {} not found: build it with `cargo build -p broker` or pass --broker-bin",
                config.broker_bin.display()
            )));
        }
        let nodes: Vec<i32> = (1..=config.nodes as i32).collect();
        let procs = Proc::universe(&nodes, config.dedicated_controller);
        let mut links = BTreeMap::new();
        let mut client_links = BTreeMap::new();
        for &to in &procs {
            for &from in &procs {
                if from != to {
                    let link = Link::start(None).await?;
                    links.insert((from, to), link);
                }
            }
            let link = Link::start(None).await?;
            client_links.insert(to, link);
        }
        let disks = if config.fault_fs {
            disk::mount_all(&config.root, &procs)?
        } else {
            BTreeMap::new()
        };
        let clocks = if config.clocks {
            Some(crate::system::clock::Clocks::new(&config.root, &procs)?)
        } else {
            None
        };
        let mut cluster = Cluster {
            clocks,
            damage: Vec::new(),
            disks,
            losses: Vec::new(),
            admin: Admin::new(ADMIN_TIMEOUT)?,
            credentials: Credentials::generate(&config.root)?,
            events: events::EventTail::new(&config.root),
            config,
            members: BTreeMap::new(),
            links,
            client_links,
            crashes: crash::CrashReports::new(),
        };
        for &p in &procs {
            let spec = cluster.spec(p);
            let process = Supervised::start_reporting(spec, Some(cluster.crashes.sink(p))).await?;
            let addr = process.addr();
            cluster.members.insert(p, process);
            cluster.point_links_at(p, addr);
        }
        cluster.wait_registered().await?;
        Ok(cluster)
    }

    /// The command line of a process: its listen address, data dir, and the proxies it
    /// reaches its peers through.
    fn spec(&self, p: Proc) -> ProcessSpec {
        let dir = self.config.root.join(p.key());
        // `2=ADDR,3=ADDR`: the proxies from `p` to every node.
        let node_peers = self
            .links
            .iter()
            .filter(|((from, to), _)| *from == p && matches!(to, Proc::Node(_)))
            .map(|((_, to), link)| format!("{}={}", to.key(), link.addr()))
            .collect::<Vec<_>>()
            .join(",");
        // A dedicated controller is its quorum's only voter, id nodes + 1; else every
        // broker is a voter (the brokers' default).
        let controller_id = self.config.nodes as i32 + 1;
        let mut args: Vec<String> = match p {
            Proc::Node(id) if !self.config.dedicated_controller => vec![
                "node".into(),
                "--id".into(),
                id.to_string(),
                "--peers".into(),
                node_peers,
            ],
            Proc::Controller => vec![
                "controller".into(),
                "--id".into(),
                controller_id.to_string(),
                "--brokers".into(),
                node_peers,
                "--controller-voters".into(),
                controller_id.to_string(),
            ],
            Proc::Node(id) => vec![
                "node".into(),
                "--id".into(),
                id.to_string(),
                "--controller-voters".into(),
                format!(
                    "{controller_id}={}",
                    self.links[&(p, Proc::Controller)].addr()
                ),
                "--peers".into(),
                node_peers,
            ],
        };
        args.extend(["--listen".into(), "127.0.0.1:0".into()]);
        args.extend(["--cluster-id".into(), self.credentials.cluster_id.clone()]);
        args.extend(match p {
            Proc::Controller => self.config.settings.controller_args(),
            Proc::Node(_) => self.config.settings.to_args(),
        });
        let mut args: Vec<OsString> = args.into_iter().map(OsString::from).collect();
        args.extend(["--data-dir".into(), dir.join("data").into_os_string()]);
        args.extend([
            "--secret-file".into(),
            self.credentials.secret_file.clone().into_os_string(),
        ]);
        ProcessSpec {
            name: p.to_string(),
            program: self.config.broker_bin.clone(),
            args,
            log_path: dir.join("broker.log"),
            start_timeout: self.config.start_timeout,
            env: self.clocks.as_ref().map_or_else(Vec::new, |c| c.env(p)),
        }
    }

    /// The credentials the cluster's internal requests (and `POST /debug/disk`) need.
    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// Point every proxy leading to `p` at its current address (None while it is down).
    pub(super) fn point_links_at(&self, p: Proc, addr: Option<SocketAddr>) {
        for ((_, to), link) in &self.links {
            if *to == p {
                link.set_target(addr);
            }
        }
        self.client_links[&p].set_target(addr);
    }

    /// Wait until the active controller's metadata shows every node alive.
    async fn wait_registered(&self) -> Result<()> {
        let deadline = tokio::time::Instant::now() + self.config.start_timeout;
        loop {
            let why = match self.metadata().await {
                Ok(meta) => {
                    let missing: Vec<i32> = self
                        .node_ids()
                        .into_iter()
                        .filter(|id| !meta.brokers.iter().any(|b| b.id == *id && b.alive))
                        .collect();
                    if missing.is_empty() {
                        return Ok(());
                    }
                    format!("nodes {missing:?} are not alive in the controller's metadata")
                }
                Err(e) => e.to_string(),
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(HarnessError::new(format!(
                    "the cluster did not come up within {:?}: {why} (see the broker.log files under {})",
                    self.config.start_timeout,
                    self.config.root.display()
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Where each process's folder (data dir and `broker.log`) is.
    pub fn root(&self) -> &std::path::Path {
        &self.config.root
    }

    /// The processes that die on their own, as they are reaped (those before this
    /// call included); taken once.
    pub fn take_crash_reports(
        &mut self,
    ) -> Option<tokio::sync::mpsc::UnboundedReceiver<crash::Crash>> {
        self.crashes.take()
    }

    /// Node ids, ascending.
    pub fn node_ids(&self) -> Vec<i32> {
        (1..=self.config.nodes as i32).collect()
    }

    /// Every process: the brokers (and a dedicated controller).
    pub fn procs(&self) -> Vec<Proc> {
        self.members.keys().copied().collect()
    }

    /// Addresses clients use to reach each node (through the client→node proxies).
    pub fn client_addrs(&self) -> BTreeMap<i32, SocketAddr> {
        self.client_links
            .iter()
            .filter_map(|(p, link)| match p {
                Proc::Node(id) => Some((*id, link.addr())),
                Proc::Controller => None,
            })
            .collect()
    }

    /// Address clients use to reach a dedicated controller (None: the controller
    /// runs in the brokers, which answer controller requests or name the active one).
    pub fn controller_addr(&self) -> Option<SocketAddr> {
        self.client_links.get(&Proc::Controller).map(Link::addr)
    }

    /// Is the controller a process of its own?
    pub fn dedicated_controller(&self) -> bool {
        self.config.dedicated_controller
    }

    /// A process's own address (not proxied), while it runs.
    pub fn real_addr(&self, p: Proc) -> Option<SocketAddr> {
        self.members.get(&p).and_then(Supervised::addr)
    }

    /// The proxy `from` uses to reach `to`.
    pub fn link(&self, from: Proc, to: Proc) -> Option<&Link> {
        self.links.get(&(from, to))
    }

    pub fn is_running(&self, p: Proc) -> bool {
        self.members.get(&p).is_some_and(Supervised::is_running)
    }

    pub fn is_paused(&self, p: Proc) -> bool {
        self.members.get(&p).is_some_and(Supervised::is_paused)
    }

    pub(super) fn member(&mut self, p: Proc) -> Result<&mut Supervised> {
        self.members
            .get_mut(&p)
            .ok_or_else(|| HarnessError::new(format!("the cluster has no {p}")))
    }

    /// The directed links currently cut.
    pub fn cut_links(&self) -> Vec<(Proc, Proc)> {
        self.links
            .iter()
            .filter(|(_, link)| link.is_cut())
            .map(|(pair, _)| *pair)
            .collect()
    }

    /// The active controller's metadata.
    pub async fn metadata(&self) -> Result<Metadata> {
        Ok(self.active_controller().await?.1)
    }

    /// The active controller and its metadata. With a dedicated controller, that
    /// process; else the broker that answers as the active controller (one that holds
    /// the quorum's leadership, so never a deposed one), the highest controller epoch
    /// if two do. Paused brokers are not asked: they would only stall the look.
    pub async fn active_controller(&self) -> Result<(Proc, Metadata)> {
        if self.config.dedicated_controller {
            let addr = self
                .real_addr(Proc::Controller)
                .ok_or_else(|| HarnessError::new("the controller is not running"))?;
            return Ok((Proc::Controller, self.admin.metadata(addr).await?));
        }
        let mut asks = tokio::task::JoinSet::new();
        let mut why = Vec::new();
        for id in self.node_ids() {
            let p = Proc::Node(id);
            match self.real_addr(p) {
                Some(addr) if !self.is_paused(p) => {
                    let admin = self.admin.clone();
                    asks.spawn(async move { (id, admin.metadata(addr).await) });
                }
                Some(_) => why.push(format!("broker {id} is paused")),
                None => why.push(format!("broker {id} is not running")),
            }
        }
        let mut best: Option<(i32, Metadata)> = None;
        while let Some(joined) = asks.join_next().await {
            let Ok((id, answer)) = joined else { continue };
            match answer {
                Ok(meta) if meta.controller_id == Some(id) => {
                    if best
                        .as_ref()
                        .is_none_or(|(_, b)| meta.controller_epoch > b.controller_epoch)
                    {
                        best = Some((id, meta));
                    }
                }
                Ok(meta) => why.push(match meta.controller_id.filter(|&c| c > 0) {
                    Some(c) => format!("broker {id} names broker {c}"),
                    None => format!("broker {id} knows no active controller"),
                }),
                Err(e) => why.push(format!("broker {id}: {e}")),
            }
        }
        match best {
            Some((id, meta)) => Ok((Proc::Node(id), meta)),
            None => {
                why.sort();
                Err(HarnessError::new(format!(
                    "no broker answers as the active controller ({})",
                    why.join("; ")
                )))
            }
        }
    }

    /// Create a topic through the controller, then wait (bounded by the start timeout)
    /// until every partition has a leader and a full ISR on every replica. A quorum
    /// between leaders (a fresh one re-electing on a loaded machine) is waited for,
    /// within the same bound: no active controller found, or the one found deposed
    /// before it took the request (`NOT_CONTROLLER`: nothing was created), the
    /// controller is looked for again.
    pub async fn create_topic(
        &self,
        name: &str,
        partitions: u32,
        replication_factor: u32,
        min_insync_replicas: u32,
    ) -> Result<()> {
        let deadline = tokio::time::Instant::now() + self.config.start_timeout;
        let topic = CreateTopic {
            name,
            partitions,
            replication_factor,
            min_insync_replicas,
        };
        loop {
            let created = match self.active_controller().await {
                Ok((controller, _)) => {
                    let addr = self.real_addr(controller).ok_or_else(|| {
                        HarnessError::new(format!("the controller ({controller}) is not running"))
                    })?;
                    self.admin.create_topic(addr, &topic).await.map_err(|e| {
                        HarnessError::new(format!("cannot create topic `{name}`: {e}"))
                    })
                }
                Err(e) => Err(e),
            };
            match created {
                Ok(()) => break,
                Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
                Err(e) if e.to_string().contains("NOT_CONTROLLER") => {}
                Err(e) if e.to_string().starts_with("no broker answers") => {}
                Err(e) => return Err(e),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.await_convergence(self.config.start_timeout).await
    }
}
