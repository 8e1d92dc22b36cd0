//! The broker's command line (docs/api.md, "Command line"). Only clap's types live
//! here; the node and its controller convert them into their own at their edge.

use std::net::SocketAddr;
use std::path::PathBuf;

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
    /// A broker silent for longer than this is dead.
    #[arg(long, default_value_t = 3000)]
    pub session_timeout_ms: u64,
    /// Every this many ms, the active controller moves each partition's leadership
    /// back to its preferred replica (the first) if that one is alive and in the
    /// ISR (Kafka's auto leader rebalance); 0 turns it off.
    #[arg(long, default_value_t = 300_000, value_name = "MS")]
    pub leader_imbalance_check_interval_ms: u64,
    /// Allow electing a replica outside the ISR when no ISR member is alive (may lose
    /// data); every process must be given the same.
    #[arg(long)]
    pub unclean_election: bool,
    /// A voter that hears no leader for this long (up to 1.5×) starts an election.
    #[arg(long, default_value_t = 1000)]
    pub election_timeout_ms: u64,
    /// The cluster's id; with a secret, internal requests must carry both.
    #[arg(long, value_name = "ID")]
    pub cluster_id: Option<String>,
    /// A file holding the cluster's secret (else the BROKER_CLUSTER_SECRET variable).
    #[arg(long, value_name = "PATH")]
    pub secret_file: Option<PathBuf>,
    /// Plant a known bug (see `watermark selftest`): only the controller's
    /// (`elect-out-of-isr`, `no-epoch-bump`, `reassign-remove-early`,
    /// `reassign-forget-on-failover`) change what a dedicated voter does.
    #[arg(long, value_enum)]
    pub bug: Option<Bug>,
}

/// How a follower that becomes follower, or restarts, decides where to truncate its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Truncation {
    /// KIP-101 with the KIP-279 fix: ask the leader for the end offset of the largest epoch ≤ ours.
    Epoch,
    /// Pre-0.11 Kafka: truncate to the local high watermark (loses data, diverges logs).
    Hw,
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
    /// The controller declares a broker silent for longer than this dead.
    #[arg(long, default_value_t = 3000)]
    pub session_timeout_ms: u64,
    /// A controller voter: every this many ms, while active, move each partition's
    /// leadership back to its preferred replica (the first) if that one is alive
    /// and in the ISR (Kafka's auto leader rebalance); 0 turns it off.
    #[arg(long, default_value_t = 300_000, value_name = "MS")]
    pub leader_imbalance_check_interval_ms: u64,
    /// Allow electing a replica outside the ISR when no ISR member is alive (may lose
    /// data); every broker must be given the same.
    #[arg(long)]
    pub unclean_election: bool,
    /// A controller voter that hears no leader for this long (up to 1.5×) starts an
    /// election.
    #[arg(long, default_value_t = 1000)]
    pub election_timeout_ms: u64,
    /// How a follower settles its log with a new leader, or after a restart.
    #[arg(long, value_enum, default_value_t = Truncation::Epoch)]
    pub truncation: Truncation,
    /// fsync the log after this many messages (default: never, like Kafka).
    #[arg(long)]
    pub flush_messages: Option<u64>,
    /// fsync the log at least this often, in milliseconds (default: never).
    #[arg(long)]
    pub flush_ms: Option<u64>,
    /// Keep unflushed bytes in process memory, so SIGKILL loses them like a power cut.
    #[arg(long)]
    pub simulate_page_cache: bool,
    /// A follower behind the leader for longer than this leaves the ISR.
    #[arg(long, default_value_t = 10000)]
    pub replica_lag_time_max_ms: u64,
    /// How long an empty follower fetch waits in purgatory for data.
    #[arg(long, default_value_t = 500)]
    pub replica_fetch_wait_max_ms: u64,
    /// A partition whose storage keeps failing (ENOSPC, EIO) this long makes the node
    /// leave every ISR, as a broker whose log dir went offline.
    #[arg(long, default_value_t = 2000)]
    pub storage_failure_timeout_ms: u64,
    /// Plant a known bug (see `watermark selftest`).
    #[arg(long, value_enum)]
    pub bug: Option<Bug>,
    /// The cluster's id; with a secret, internal requests must carry both.
    #[arg(long, value_name = "ID")]
    pub cluster_id: Option<String>,
    /// A file holding the cluster's secret (else the BROKER_CLUSTER_SECRET variable).
    #[arg(long, value_name = "PATH")]
    pub secret_file: Option<PathBuf>,
}

/// The known bugs `--bug` can plant, so the harness can show it catches them
/// (docs/selftest.md; the flags are `crate::bugs::Bugs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Bug {
    /// Truncate to the local high watermark, as `--truncation hw`.
    HwTruncation,
    /// Answer acks=all right after the leader's append.
    AckBeforeReplicate,
    /// Shrink the ISR without asking the controller.
    IsrUnchecked,
    /// Serve reads without the leadership check.
    StaleRead,
    /// Accept a deposed leader's records: a new follower keeps its log past the new
    /// leader's epoch instead of truncating.
    NoEpochFence,
    /// Advance the HW once any one ISR follower has a record, not all of them.
    HwAnyFollower,
    /// Serve consumers and register reads up to the log end, past the HW.
    ReadPastHw,
    /// Answer acks=all once the HW reaches the record's offset, one record early.
    AckOffByOne,
    /// Judge acks=all by the HW alone, even after losing the leadership it was written in.
    AckIgnoresEpoch,
    /// Answer OffsetsForLeaderEpoch with the leader's LEO, not the asked epoch's end.
    EpochEndAtLeo,
    /// Test-only: abort the process (SIGABRT) at its 100th produce request, so the
    /// harness's crash detection can be seen at work.
    Abort,
    /// Keep a failed append's frames queued (ENOSPC, EIO): they reach the file with
    /// the next append, at offsets it takes again.
    AppendUndoLost,
    /// Truncate a follower one record past the end its leader gave for the epoch.
    TruncatePastEpochEnd,
    /// Elect the first live replica, in the ISR or not (the controller's voters).
    ElectOutOfIsr,
    /// Elect a dead leader's successor in the same leader epoch (the controller's voters).
    NoEpochBump,
    /// Let a follower rejoin the ISR before it has caught up to the HW.
    IsrExpandEarly,
    /// Complete a reassignment before its adding replicas are in the ISR (the
    /// controller's voters).
    ReassignRemoveEarly,
    /// Reload a reassignment in progress from its adding replicas alone at a
    /// controller failover (the controller's voters).
    ReassignForgetOnFailover,
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
