//! Options of a run once resolved: no default left to apply, in the shape run.json
//! stores, and what the campaign derives from them — the workload, the brokers'
//! command lines.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use workloads::Workload;
use workloads::client::ClientConfig;
use workloads::queue::QueueConfig;
use workloads::register::RegisterConfig;

use super::{AcksArg, Bug, Truncation, WorkloadKind, fault_list};
use crate::nemesis::{FaultKind, Scenario};

/// The options of a run with every default resolved: what the campaign runs with,
/// and what run.json stores under `options` (in the shape `RunArgs` reads back for
/// `watermark replay`). The optional fields stay optional because "none" is what
/// they mean: no planted bug, no scenario, never fsync, the broker's own lag time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolved {
    pub nodes: u32,
    pub partitions: u32,
    pub replication_factor: u32,
    pub min_insync: u32,
    pub acks: AcksArg,
    pub truncation: Truncation,
    pub unclean_election: bool,
    pub workload: WorkloadKind,
    /// The faults to schedule (none: stored as `["none"]`).
    #[serde(with = "fault_list")]
    pub nemesis: Vec<FaultKind>,
    pub nemesis_interval: f64,
    pub time_limit: f64,
    /// The checker's time budget in seconds (absent from older run.json files).
    #[serde(default = "default_checker_time_limit")]
    pub checker_time_limit: f64,
    pub rate: f64,
    pub concurrency: u32,
    pub seed: u64,
    pub results: PathBuf,
    pub broker_bin: PathBuf,
    pub bug: Option<Bug>,
    pub flush_messages: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_lag_time_max_ms: Option<u64>,
    pub linearizable_reads: bool,
    pub scenario: Option<Scenario>,
    /// Crashes of broker processes are noted, not anomalies (false in older run.json
    /// files).
    #[serde(default)]
    pub allow_crashes: bool,
}

fn default_checker_time_limit() -> f64 {
    super::DEFAULT_CHECKER_TIME_LIMIT
}

impl Resolved {
    /// The checker's time budget.
    pub fn checker_time_limit(&self) -> Duration {
        Duration::from_secs_f64(self.checker_time_limit)
    }

    /// How long the workload and the faults run.
    pub fn time_limit(&self) -> Duration {
        Duration::from_secs_f64(self.time_limit)
    }

    /// The mean time between two steps of the nemesis.
    pub fn nemesis_interval(&self) -> Duration {
        Duration::from_secs_f64(self.nemesis_interval)
    }

    /// The workload to run, its clients reaching the cluster as `client` says.
    pub fn workload(&self, client: ClientConfig) -> Box<dyn Workload> {
        match self.workload {
            WorkloadKind::Queue => Box::new(QueueConfig {
                partitions: self.partitions,
                acks: self.acks.to_client(),
                concurrency: self.concurrency,
                rate: self.rate,
                seed: self.seed,
                client,
            }),
            WorkloadKind::Register => Box::new(RegisterConfig {
                partitions: self.partitions,
                concurrency: self.concurrency,
                rate: self.rate,
                seed: self.seed,
                linearizable_reads: self.linearizable_reads,
                client,
            }),
        }
    }

    /// Extra arguments of every `broker node`.
    pub fn node_args(&self) -> Vec<String> {
        let mut args = vec!["--truncation".to_string(), self.truncation.to_string()];
        if let Some(n) = self.flush_messages {
            args.extend(["--flush-messages".to_string(), n.to_string()]);
        }
        if let Some(ms) = self.replica_lag_time_max_ms {
            args.extend(["--replica-lag-time-max-ms".to_string(), ms.to_string()]);
        }
        if let Some(bug) = self.bug {
            args.extend(["--bug".to_string(), bug.to_string()]);
        }
        args.extend(crate::nemesis::node_args(&self.nemesis));
        if let Some(scenario) = self.scenario {
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
