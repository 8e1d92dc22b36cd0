//! The broker's command line (docs/api.md, "Command line"). Only clap's types live
//! here — the cluster's wiring (ids, addresses, data dir, credentials) and the
//! settings `broker-config` declares, which the harness shares; the node and its
//! controller convert them into their own at their edge.

use std::net::SocketAddr;
use std::path::PathBuf;

use broker_config::{Bug, ControllerSettings, Settings};
use clap::{Parser, Subcommand};

/// A Kafka-style replicated log (ISR, high watermark, leader epochs) whose brokers
/// elect their controller among themselves, speaking JSON over HTTP.
#[derive(Debug, Parser)]
#[command(name = "broker", version, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub role: Role,
}

#[derive(Debug, Subcommand)]
pub enum Role {
    /// Run a dedicated controller voter (no partitions): broker liveness, leader
    /// election, ISR changes.
    Controller(ControllerArgs),
    /// Run a broker: partitions' replicas, produce and fetch, and (if it is one of
    /// the controller voters) a voter of the controller quorum.
    Node(NodeArgs),
}

/// `broker controller`: a voter of the controller quorum that is not a broker
/// (Kafka's `process.roles=controller`).
#[derive(Debug, Clone, clap::Args)]
pub struct ControllerArgs {
    /// This voter's id (a positive integer that is no broker's id).
    #[arg(long)]
    pub id: i32,
    /// Address to listen on; port 0 takes a free port (printed as `listening on ADDR`).
    #[arg(long)]
    pub listen: SocketAddr,
    /// Where the voter keeps its Raft log and snapshots.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// Every broker's id and the address to reach it at: `1=ADDR,2=ADDR,3=ADDR`.
    #[arg(long, value_parser = parse_peers)]
    pub brokers: Peers,
    /// The quorum's voters: this one's id, other dedicated voters as `ID=ADDR`,
    /// brokers by id (e.g. `4` or `4,5=127.0.0.1:9005,6=127.0.0.1:9006`).
    #[arg(long, value_parser = parse_voters)]
    pub controller_voters: Voters,
    /// The controller's settings (the same on every voter).
    #[command(flatten)]
    pub settings: ControllerSettings,
    /// The cluster's id; with a secret, internal requests must carry both.
    #[arg(long, value_name = "ID")]
    pub cluster_id: Option<String>,
    /// A file holding the cluster's secret (else the BROKER_CLUSTER_SECRET variable).
    #[arg(long, value_name = "PATH")]
    pub secret_file: Option<PathBuf>,
    /// Plant a known bug (see `watermark selftest`): only the controller's
    /// (`elect-out-of-isr`, `no-epoch-bump`, `reassign-remove-early`,
    /// `reassign-forget-on-failover`) change what a dedicated voter does.
    #[arg(long, value_enum, value_name = "NAME")]
    pub bug: Option<Bug>,
}

/// `broker node`.
#[derive(Debug, Clone, clap::Args)]
pub struct NodeArgs {
    /// This broker's id (a positive integer).
    #[arg(long)]
    pub id: i32,
    /// Address to listen on; port 0 takes a free port (printed as `listening on ADDR`).
    #[arg(long)]
    pub listen: SocketAddr,
    /// Where the broker keeps its logs and checkpoints.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// The address this broker registers with the controller, for brokers that have
    /// no `--peers` entry for it (default: the address it listens on).
    #[arg(long, value_name = "ADDR")]
    pub advertised_address: Option<String>,
    /// The other brokers' ids and addresses: `2=ADDR,3=ADDR`.
    #[arg(long, value_parser = parse_peers, default_value = "")]
    pub peers: Peers,
    /// The controller quorum's voters (default: every broker): brokers by id,
    /// dedicated controllers (`broker controller`) as `ID=ADDR`.
    #[arg(long, value_parser = parse_voters)]
    pub controller_voters: Option<Voters>,
    /// The settings the harness varies (declared in `broker-config`).
    #[command(flatten)]
    pub settings: Settings,
    /// The cluster's id; with a secret, internal requests must carry both.
    #[arg(long, value_name = "ID")]
    pub cluster_id: Option<String>,
    /// A file holding the cluster's secret (else the BROKER_CLUSTER_SECRET variable).
    #[arg(long, value_name = "PATH")]
    pub secret_file: Option<PathBuf>,
}

/// Broker ids and their addresses, as given on the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Peers(pub Vec<(i32, String)>);

/// Controller voters as given: an id, and the address of a voter that is no broker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Voters(pub Vec<(i32, Option<String>)>);

/// Parse `1,2,3` or `4,5=127.0.0.1:9005`.
pub fn parse_voters(s: &str) -> Result<Voters, String> {
    let mut out: Vec<(i32, Option<String>)> = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, addr) = match part.split_once('=') {
            Some((id, addr)) => (id.trim(), Some(addr.trim().to_string())),
            None => (part, None),
        };
        let id: i32 =
            id.parse().ok().filter(|id| *id > 0).ok_or_else(|| {
                format!("`{id}` in `{part}` is not a voter id (a positive integer)")
            })?;
        if out.iter().any(|(other, _)| *other == id) {
            return Err(format!("voter {id} is given twice"));
        }
        out.push((id, addr));
    }
    if out.is_empty() {
        return Err("no voter given (e.g. 1,2,3)".into());
    }
    Ok(Voters(out))
}

/// Parse `1=127.0.0.1:9001,2=127.0.0.1:9002`.
pub fn parse_peers(s: &str) -> Result<Peers, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, addr) = part
            .split_once('=')
            .ok_or_else(|| format!("`{part}` is not ID=ADDR (e.g. 2=127.0.0.1:9002)"))?;
        let id: i32 = id
            .trim()
            .parse()
            .map_err(|_| format!("`{id}` in `{part}` is not a broker id (a positive integer)"))?;
        if id <= 0 {
            return Err(format!("broker id {id} in `{part}` must be positive"));
        }
        if out.iter().any(|(other, _)| *other == id) {
            return Err(format!("broker id {id} is given twice"));
        }
        out.push((id, addr.trim().to_string()));
    }
    Ok(Peers(out))
}
