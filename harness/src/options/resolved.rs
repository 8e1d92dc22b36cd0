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
use workloads::producer::{Policy, Producers, Retries};
use workloads::queue::QueueConfig;
use workloads::register::RegisterConfig;

use super::{AcksArg, Settings, Truncation, WorkloadKind, fault_list};
use crate::nemesis::scenario_file::ScenarioFile;
use crate::nemesis::schedule_file::ScheduleFile;
use crate::nemesis::{FaultKind, PackageSettings, Scenario, Timeouts, Transition};

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
    /// Which producers the queue runs: Kafka's default producer beside plain ones
    /// (the default), or every one as `retries` and `idempotent` say (`given`:
    /// either option given, a scenario, acks other than all; older run.json files).
    #[serde(default)]
    pub producers: ProducerMix,
    /// Producers sending flat out during the queue's load bursts (absent from
    /// older run.json files: none, no bursts).
    #[serde(default)]
    pub burst_producers: u32,
    /// The controller quorum is one dedicated process, not every broker (absent
    /// from older run.json files: no).
    #[serde(default)]
    pub dedicated_controller: bool,
    /// Each broker's data dir is a fault filesystem (absent from older run.json
    /// files: no).
    #[serde(default)]
    pub fault_fs: bool,
    /// Every kill of a broker cuts its power: the fault filesystem drops what it
    /// did not fsync (`lose-unflushed`, the replication package with a flush policy).
    #[serde(default)]
    pub power_cut_on_kill: bool,
    /// Every process runs under a fake wall clock: the faults or the schedule file
    /// hold clock faults (absent from older run.json files: no).
    #[serde(default)]
    pub clocks: bool,
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
    pub linearizable_reads: bool,
    pub scenario: Option<Scenario>,
    /// The schedule file played instead of drawn faults (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<PathBuf>,
    /// That file, read.
    #[serde(skip)]
    pub schedule_file: Option<ScheduleFile>,
    /// The scenario `--scenario` names, or the one `--schedule` holds, read.
    #[serde(skip)]
    pub script: Option<ScenarioFile>,
    /// Crashes of broker processes are noted, not anomalies (false in older run.json
    /// files).
    #[serde(default)]
    pub allow_crashes: bool,
    /// The executable of the system under test, when it is the user's own
    /// (`--bin`: Maelstrom's protocol); absent: our broker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bin: Option<PathBuf>,
    /// Its arguments (`--bin-arg`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bin_args: Vec<String>,
    /// With `--bin`, seconds the healed cluster settles before the final phase
    /// (absent from older run.json files: the default, 10).
    #[serde(default = "default_settle")]
    pub settle: f64,
    /// The SHA-256 of its bytes when the run began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bin_sha256: Option<String>,
    /// What every broker is given: a setting left out is the broker's own default
    /// (a session timeout absent from an older run.json, or under a scenario, too).
    #[serde(flatten)]
    pub broker: Settings,
}

/// Which producers a run's queue workload has (run.json's `producers`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProducerMix {
    /// Every producer as `--acks`, `--retries`, `--idempotent` say.
    #[default]
    Given,
    /// Kafka's default producer (idempotent, acks=all, retrying within its delivery
    /// timeout) on every third worker, a plain one (retries 0) on the rest.
    KafkaDefault,
}

fn default_settle() -> f64 {
    super::DEFAULT_SETTLE
}

fn default_checker_time_limit() -> f64 {
    super::DEFAULT_CHECKER_TIME_LIMIT
}

impl Resolved {
    /// How long the healed cluster of a `--bin` system settles before its final
    /// phase.
    pub fn settle(&self) -> Duration {
        Duration::from_secs_f64(self.settle)
    }

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
    /// A Maelstrom workload has no such clients: None (it runs with --bin).
    pub fn workload(&self, client: ClientConfig) -> Option<Box<dyn Workload>> {
        let all = 0..self.concurrency;
        Some(match self.workload {
            WorkloadKind::Queue => Box::new(self.queue(all, client)),
            WorkloadKind::Register => Box::new(self.register(all, client)),
            WorkloadKind::Mixed => {
                let (queue, register) = split_workers(self.concurrency);
                Box::new(Mixed {
                    queue: self.queue(queue, client.clone()),
                    register: self.register(register, client),
                })
            }
            _ => return None,
        })
    }

    /// The queue's producers, from `producers`.
    pub fn producers(&self) -> Producers {
        match self.producers {
            ProducerMix::KafkaDefault => Producers::KafkaDefault,
            ProducerMix::Given => Producers::All(Policy {
                acks: self.acks.to_client(),
                retries: Retries::Count(self.retries),
                idempotent: self.idempotent,
                retry_refusals: false,
            }),
        }
    }

    fn queue(&self, workers: Range<u32>, client: ClientConfig) -> QueueConfig {
        QueueConfig {
            partitions: self.partitions,
            producers: self.producers(),
            burst_producers: self.burst_producers,
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
            written: Default::default(),
        }
    }

    /// Does the campaign play the replication package (rather than a fault list or
    /// a scenario)?
    pub fn replication_package(&self) -> bool {
        self.script.is_none() && self.nemesis == [FaultKind::Replication]
    }

    /// Does every kill of a node lose what it did not fsync (a power cut of its
    /// fault filesystem, or brokers holding their unflushed bytes in-process)?
    pub fn kills_cut_power(&self) -> bool {
        self.broker.replica.simulate_page_cache || self.power_cut_on_kill
    }

    /// What the replication package may do to a cluster of `nodes` so configured.
    pub fn package_settings(&self, nodes: &[i32]) -> PackageSettings {
        let kills_cut_power = self.kills_cut_power();
        PackageSettings {
            timeouts: Timeouts::of_cluster(&self.broker),
            nodes: nodes.to_vec(),
            // The fault filesystem writes back what stayed unsynced for half a
            // minute: a power cut of one node loses its recent writes, not its
            // whole log, even without a flush policy.
            power_cuts: kills_cut_power || self.fault_fs,
            crash_all_safe: !kills_cut_power || self.broker.replica.flush_messages == Some(1),
            dedicated_controller: self.dedicated_controller,
            lossless_topics: Vec::new(),
            linearizable_topics: Vec::new(),
            reconfigurable: true,
            min_insync: self.min_insync,
        }
    }

    /// The replication transitions brokers so configured can go through.
    pub fn reachable_transitions(&self) -> std::collections::BTreeSet<Transition> {
        let hw = self.broker.truncation() == Truncation::Hw;
        let mut reachable = Transition::reachable(hw, self.broker.controller.unclean_election);
        // The package reassigns (and a fault list that names `reassign`): started,
        // completed, resumed by a new controller; a cancel it does not ask for.
        if self.reassigns() {
            reachable.extend([
                Transition::ReassignStarted,
                Transition::ReassignCompleted,
                Transition::ReassignResumed,
            ]);
        }
        // A deposed leader's read is refused only if it asks the controller.
        if self.linearizable_reads {
            reachable.insert(Transition::DeposedRead);
        }
        reachable
    }

    /// Does the campaign move replicas (the package, or a fault list naming `reassign`)?
    pub fn reassigns(&self) -> bool {
        self.replication_package() || self.nemesis.contains(&FaultKind::Reassign)
    }
}
