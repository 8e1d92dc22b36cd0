//! Options of a run once resolved: no default left to apply, in the shape run.json
//! stores, and what the campaign derives from them — the workload, the brokers'
//! command lines.

use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use workloads::Workload;
use workloads::client::ClientConfig;
use workloads::mixed::{Mixed, split_workers};
use workloads::queue::QueueConfig;
use workloads::register::RegisterConfig;

use super::{AcksArg, Bug, Truncation, WorkloadKind, fault_list};
use crate::nemesis::{FaultKind, Scenario, Settings, Timeouts, Transition};

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
    /// The producer's retries of a send whose outcome is unknown (absent from
    /// older run.json files: none).
    #[serde(default)]
    pub retries: u32,
    /// Queue producers are idempotent (absent from older run.json files: no).
    #[serde(default)]
    pub idempotent: bool,
    pub truncation: Truncation,
    pub unclean_election: bool,
    /// The controller quorum is one dedicated process, not every broker (absent
    /// from older run.json files: no).
    #[serde(default)]
    pub dedicated_controller: bool,
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
    /// The brokers' session timeout (absent from older run.json files, and under a
    /// scenario: the broker's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_lag_time_max_ms: Option<u64>,
    /// The brokers' leader imbalance check interval (absent from older run.json
    /// files, and under a scenario: the broker's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_imbalance_check_interval_ms: Option<u64>,
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

    /// The workload to run, its clients reaching the cluster as `client` says. A
    /// mixed campaign splits its workers between the queue and the register
    /// ([`split_workers`]); `rate` and `concurrency` stay the campaign's totals.
    pub fn workload(&self, client: ClientConfig) -> Box<dyn Workload> {
        let all = 0..self.concurrency;
        match self.workload {
            WorkloadKind::Queue => Box::new(self.queue(all, client)),
            WorkloadKind::Register => Box::new(self.register(all, client)),
            WorkloadKind::Mixed => {
                let (queue, register) = split_workers(self.concurrency);
                Box::new(Mixed {
                    queue: self.queue(queue, client.clone()),
                    register: self.register(register, client),
                })
            }
        }
    }

    fn queue(&self, workers: Range<u32>, client: ClientConfig) -> QueueConfig {
        QueueConfig {
            partitions: self.partitions,
            acks: self.acks.to_client(),
            retries: self.retries,
            idempotent: self.idempotent,
            concurrency: self.concurrency,
            workers,
            rate: self.rate,
            seed: self.seed,
            client,
        }
    }

    fn register(&self, workers: Range<u32>, client: ClientConfig) -> RegisterConfig {
        RegisterConfig {
            partitions: self.partitions,
            concurrency: self.concurrency,
            workers,
            rate: self.rate,
            seed: self.seed,
            linearizable_reads: self.linearizable_reads,
            client,
        }
    }

    /// Extra arguments of every `broker node`.
    pub fn node_args(&self) -> Vec<String> {
        let mut args = vec!["--truncation".to_string(), self.truncation.to_string()];
        if let Some(n) = self.flush_messages {
            args.extend(["--flush-messages".to_string(), n.to_string()]);
        }
        args.extend(self.session_args());
        if let Some(ms) = self.replica_lag_time_max_ms {
            args.extend(["--replica-lag-time-max-ms".to_string(), ms.to_string()]);
        }
        if let Some(bug) = self.bug {
            args.extend(["--bug".to_string(), bug.to_string()]);
        }
        args.extend(self.rebalance_args());
        // Every voter must be given the same (the brokers are the voters, unless
        // the controller is dedicated).
        if self.unclean_election {
            args.push("--unclean-election".to_string());
        }
        args.extend(crate::nemesis::node_args(&self.nemesis));
        if crate::nemesis::page_cache_for(&self.nemesis, self.flush_messages) {
            args.push("--simulate-page-cache".to_string());
        }
        if let Some(scenario) = self.scenario {
            args.extend(scenario.node_args());
        }
        args
    }

    /// Does the campaign play the replication package (rather than a fault list or
    /// a scenario)?
    pub fn replication_package(&self) -> bool {
        self.scenario.is_none() && self.nemesis == [FaultKind::Replication]
    }

    /// What the replication package may do to a cluster of `nodes` so configured.
    pub fn package_settings(&self, nodes: &[i32]) -> Settings {
        let page_cache = crate::nemesis::page_cache_for(&self.nemesis, self.flush_messages);
        Settings {
            timeouts: Timeouts::of_cluster(self.session_timeout_ms, self.replica_lag_time_max_ms),
            nodes: nodes.to_vec(),
            page_cache,
            crash_all_safe: !page_cache || self.flush_messages == Some(1),
            dedicated_controller: self.dedicated_controller,
        }
    }

    /// The replication transitions brokers so configured can go through.
    pub fn reachable_transitions(&self) -> std::collections::BTreeSet<Transition> {
        let hw = self.truncation == Truncation::Hw || self.bug == Some(Bug::HwTruncation);
        Transition::reachable(hw, self.unclean_election)
    }

    /// Extra arguments of a dedicated `broker controller` (a planted bug too: the
    /// controller's own, `elect-out-of-isr` and `no-epoch-bump`, are its voters').
    pub fn controller_args(&self) -> Vec<String> {
        let mut args = self.rebalance_args();
        args.extend(self.session_args());
        if let Some(bug) = self.bug {
            args.extend(["--bug".to_string(), bug.to_string()]);
        }
        if self.unclean_election {
            args.push("--unclean-election".to_string());
        }
        args
    }

    /// Every controller voter's session timeout, if given.
    fn session_args(&self) -> Vec<String> {
        match self.session_timeout_ms {
            Some(ms) => vec!["--session-timeout-ms".to_string(), ms.to_string()],
            None => Vec::new(),
        }
    }

    /// Every controller voter's leader imbalance check interval, if given.
    fn rebalance_args(&self) -> Vec<String> {
        match self.leader_imbalance_check_interval_ms {
            Some(ms) => vec![
                "--leader-imbalance-check-interval-ms".to_string(),
                ms.to_string(),
            ],
            None => Vec::new(),
        }
    }
}
