//! The options of `watermark run` (SPEC §2): how they read on the command line, how
//! they are checked, and how they are stored in run.json so that `watermark replay`
//! can repeat a run exactly.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::nemesis::FaultKind;

/// Bugs a broker can plant (SPEC §7).
pub const BUGS: &[&str] = &[
    "hw-truncation",
    "ack-before-replicate",
    "isr-unchecked",
    "stale-read",
    "no-epoch-fence",
];

/// Options of `watermark run`.
///
/// Stored as-is in run.json under `options`, with every default resolved (the seed,
/// the replication factor, the concurrency, the broker binary), so a replay needs
/// nothing else.
#[derive(Debug, Clone, clap::Args, Serialize, Deserialize, PartialEq)]
pub struct RunArgs {
    /// Number of broker nodes (ids 1..=N), each its own OS process.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=9))]
    pub nodes: u32,

    /// Partitions of the workload's topic.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub partitions: u32,

    /// Replicas per partition [default: --nodes].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=9))]
    pub replication_factor: Option<u32>,

    /// min.insync.replicas: acks=all writes need this many replicas in the ISR
    /// [default: 2, or the replication factor if that is smaller].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=9))]
    pub min_insync: Option<u32>,

    /// When the leader answers a produce: 0 before appending, 1 after its own append,
    /// all once the high watermark covers the record.
    #[arg(long, value_enum, default_value_t = AcksArg::All)]
    pub acks: AcksArg,

    /// How a follower truncates its log on becoming follower or restarting: `epoch`
    /// (KIP-101 with the KIP-279 fix) or `hw` (pre-0.11 Kafka: loses data, diverges logs).
    #[arg(long, value_enum, default_value_t = Truncation::Epoch)]
    pub truncation: Truncation,

    /// Let the controller elect a replica outside the ISR when no ISR member is alive.
    #[arg(long)]
    pub unclean_election: bool,

    /// What the clients do: `queue` (producers and consumers on a partitioned topic)
    /// or `register` (reads, writes and compare-and-set on keys, checked for
    /// linearizability).
    #[arg(long, value_enum, default_value_t = Workload::Queue)]
    pub workload: Workload,

    /// Faults to schedule, comma-separated: kill, pause, partition, crash-all,
    /// isolate-leader, isolate-controller, lose-unflushed, or none.
    #[arg(
        long,
        value_name = "LIST",
        default_value = "kill,pause,partition",
        value_delimiter = ',',
        value_parser = parse_fault
    )]
    pub nemesis: Vec<String>,

    /// Mean seconds between faults (each is drawn with jitter from the seed).
    #[arg(long, value_name = "SECS", default_value_t = 5.0, value_parser = parse_positive_secs)]
    pub nemesis_interval: f64,

    /// Seconds of workload and faults before the cluster is healed and checked.
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = parse_positive_secs)]
    pub time_limit: f64,

    /// Target client operations per second, over all clients.
    #[arg(long, value_name = "OPS_PER_SEC", default_value_t = 200.0, value_parser = parse_positive)]
    pub rate: f64,

    /// Concurrent clients [default: 2 × --nodes].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub concurrency: Option<u32>,

    /// Seed of every random choice (operations, fault schedule) [default: random,
    /// printed and stored in run.json].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Where run folders are created.
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub results: PathBuf,

    /// The broker executable [default: the `broker` built alongside watermark; built
    /// with cargo when run from the source tree and missing].
    #[arg(long, value_name = "PATH")]
    pub broker_bin: Option<PathBuf>,

    /// Plant a known bug in every broker: hw-truncation, ack-before-replicate,
    /// isr-unchecked, stale-read, no-epoch-fence.
    #[arg(long, value_name = "NAME", value_parser = parse_bug)]
    pub bug: Option<String>,

    /// Brokers fsync their log after this many messages (default: never, like Kafka).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub flush_messages: Option<u64>,

    /// A follower behind the leader for longer than this leaves the ISR (the brokers'
    /// replica.lag.time.max.ms) [default: the broker's, 10000].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_lag_time_max_ms: Option<u64>,

    /// Register workload: read with `?linearizable=true` (the leader confirms it
    /// still leads before answering).
    #[arg(long)]
    pub linearizable_reads: bool,

    /// A fixed fault script instead of the random schedule (--nemesis is then
    /// ignored): kip101-data-loss, kip101-divergence or kip279-divergence. Each loses or
    /// diverges data under --truncation hw and finds nothing under epoch. It runs to its
    /// end (its waits are bounded), then the run ends; --time-limit does not apply.
    #[arg(long, value_name = "NAME")]
    pub scenario: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
pub enum AcksArg {
    #[value(name = "0")]
    #[serde(rename = "0")]
    Zero,
    #[value(name = "1")]
    #[serde(rename = "1")]
    One,
    #[value(name = "all")]
    #[serde(rename = "all")]
    All,
}

impl AcksArg {
    pub fn to_client(self) -> workloads::client::Acks {
        match self {
            AcksArg::Zero => workloads::client::Acks::Zero,
            AcksArg::One => workloads::client::Acks::One,
            AcksArg::All => workloads::client::Acks::All,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Truncation {
    Epoch,
    Hw,
}

impl Truncation {
    pub fn as_str(self) -> &'static str {
        match self {
            Truncation::Epoch => "epoch",
            Truncation::Hw => "hw",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    Queue,
    Register,
}

impl Workload {
    pub fn as_str(self) -> &'static str {
        match self {
            Workload::Queue => "queue",
            Workload::Register => "register",
        }
    }
}

fn parse_fault(s: &str) -> Result<String, String> {
    let s = s.trim();
    crate::nemesis::parse_nemesis(s)?;
    Ok(s.to_string())
}

/// A planted bug's name (surrounding blanks ignored, as in a comma-separated list).
pub(crate) fn parse_bug(s: &str) -> Result<String, String> {
    let s = s.trim();
    if BUGS.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "unknown bug `{s}`; choose from {}",
            BUGS.join(", ")
        ))
    }
}

fn parse_positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a positive number")),
    }
}

/// Seconds in (0, 86400].
pub(crate) fn parse_positive_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds in (0, 86400]")),
    }
}

impl RunArgs {
    /// Check what clap cannot check alone and fill in the defaults that depend on
    /// other options. The error is a usage message (exit 64).
    pub fn resolve(mut self) -> Result<RunArgs, String> {
        if let Some(name) = &self.scenario {
            crate::nemesis::Scenario::parse(name).map_err(|e| format!("--scenario: {e}"))?;
            if self.nodes < 3 || self.replication_factor.is_some_and(|rf| rf < 3) {
                return Err(format!(
                    "--scenario {name} needs three replicas: --nodes 3 or more and \
                     --replication-factor 3 or more"
                ));
            }
            // The script replaces the random schedule.
            self.nemesis = vec!["none".to_string()];
        }
        if self.workload == Workload::Register && self.acks != AcksArg::All {
            return Err(
                "--workload register writes with acks=all (a register's writes must be \
                 committed to be judged); leave out --acks"
                    .to_string(),
            );
        }
        if self.linearizable_reads && self.workload != Workload::Register {
            return Err("--linearizable-reads applies to --workload register only".to_string());
        }
        let rf = self.replication_factor.unwrap_or(self.nodes);
        if rf > self.nodes {
            return Err(format!(
                "--replication-factor {rf} is more than --nodes {}; each replica needs its own node",
                self.nodes
            ));
        }
        let min_insync = self.min_insync.unwrap_or(rf.min(2));
        if min_insync > rf {
            return Err(format!(
                "--min-insync {min_insync} is more than the replication factor {rf}; no acks=all write could ever succeed"
            ));
        }
        self.min_insync = Some(min_insync);
        let faults = self.faults()?;
        self.nemesis = if faults.is_empty() {
            vec!["none".to_string()]
        } else {
            faults.iter().map(|k| k.name().to_string()).collect()
        };
        self.replication_factor = Some(rf);
        self.concurrency = Some(self.concurrency.unwrap_or(2 * self.nodes));
        self.seed = Some(
            self.seed
                .unwrap_or_else(|| u64::from(rand::random::<u32>())),
        );
        Ok(self)
    }

    /// The faults to schedule (empty for `none`).
    pub fn faults(&self) -> Result<Vec<FaultKind>, String> {
        crate::nemesis::parse_nemesis(&self.nemesis.join(","))
            .map_err(|e| format!("--nemesis: {e}"))
    }

    /// Extra arguments of every `broker node`.
    pub fn node_args(&self) -> Vec<String> {
        let mut args = vec!["--truncation".to_string(), self.truncation.as_str().into()];
        if let Some(n) = self.flush_messages {
            args.extend(["--flush-messages".to_string(), n.to_string()]);
        }
        if let Some(ms) = self.replica_lag_time_max_ms {
            args.extend(["--replica-lag-time-max-ms".to_string(), ms.to_string()]);
        }
        if let Some(bug) = &self.bug {
            args.extend(["--bug".to_string(), bug.clone()]);
        }
        args.extend(crate::nemesis::node_args(
            &self.faults().unwrap_or_default(),
        ));
        if let Some(Ok(scenario)) = self
            .scenario
            .as_deref()
            .map(crate::nemesis::Scenario::parse)
        {
            args.extend(scenario.node_args());
        }
        args
    }

    /// Extra arguments of `broker controller`.
    pub fn controller_args(&self) -> Vec<String> {
        if self.unclean_election {
            vec!["--unclean-election".to_string()]
        } else {
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        args: RunArgs,
    }

    fn parse(argv: &[&str]) -> Result<RunArgs, String> {
        let mut all = vec!["run"];
        all.extend_from_slice(argv);
        T::try_parse_from(all)
            .map_err(|e| e.to_string())
            .and_then(|t| t.args.resolve())
    }

    #[test]
    fn defaults_follow_the_spec() {
        let a = parse(&["--seed", "5"]).unwrap();
        assert_eq!(
            (a.nodes, a.partitions, a.replication_factor, a.min_insync),
            (3, 2, Some(3), Some(2))
        );
        assert_eq!(
            (a.acks, a.truncation, a.workload),
            (AcksArg::All, Truncation::Epoch, Workload::Queue)
        );
        assert_eq!(a.nemesis, ["kill", "pause", "partition"]);
        assert_eq!(
            (a.nemesis_interval, a.time_limit, a.rate),
            (5.0, 60.0, 200.0)
        );
        assert_eq!((a.concurrency, a.seed), (Some(6), Some(5)));
        assert_eq!(a.results, PathBuf::from("results"));
        assert_eq!(a.node_args(), ["--truncation", "epoch"]);
    }

    #[test]
    fn a_single_node_needs_no_min_insync_option() {
        let a = parse(&["--nodes", "1", "--seed", "1"]).unwrap();
        assert_eq!((a.replication_factor, a.min_insync), (Some(1), Some(1)));
        assert_eq!(a.concurrency, Some(2));
    }

    #[test]
    fn options_round_trip_through_run_json() {
        let a = parse(&[
            "--acks",
            "1",
            "--nemesis",
            "kill,lose-unflushed",
            "--bug",
            "stale-read",
        ])
        .unwrap();
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<RunArgs>(&json).unwrap(), a);
        assert!(a.node_args().contains(&"--simulate-page-cache".to_string()));
    }

    #[test]
    fn bad_combinations_are_usage_errors() {
        for argv in [
            &["--scenario", "kip999"][..],
            &["--scenario", "kip101-data-loss", "--nodes", "2"],
            &["--nodes", "3", "--replication-factor", "4"],
            &["--min-insync", "3", "--replication-factor", "2"],
            &["--nemesis", "kill,explode"],
            &["--nemesis", "none,kill"],
            &["--rate", "0"],
            &["--time-limit", "-1"],
            &["--bug", "nonsense"],
            &["--linearizable-reads"],
            &["--acks", "2"],
            &["--workload", "register", "--acks", "1"],
        ] {
            assert!(parse(argv).is_err(), "{argv:?} was accepted");
        }
    }
}
