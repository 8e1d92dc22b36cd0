//! The options of `watermark run` (docs/running.md#options): how they read on the
//! command line ([`RunArgs`]), how they are checked and resolved — once, defaults
//! included — into [`Resolved`], and how they are stored in run.json so that
//! `watermark replay` can repeat a run exactly.
//!
//! - [`Resolved`] ([`resolved`]): the options with every default applied;
//! - `fault_list`: `--nemesis` between the typed list and the scheduled faults.

use std::path::PathBuf;

mod bin;
mod fault_list;
mod parse;
mod resolved;

use clap::ValueEnum;

pub use parse::Concurrency;
pub(crate) use parse::parse_positive_secs;
use parse::{MAX_CONCURRENCY, parse_concurrency, parse_positive, parse_settle_secs};
pub use resolved::{ProducerMix, Resolved};

use crate::error::HarnessError;
use crate::names::{Names, by_name};
pub use broker_config::{Bug, Settings, Truncation};

use crate::nemesis::scenario_file::{Acks, ScenarioFile, ScenarioOptions};
use crate::nemesis::schedule_file::ScheduleFile;
use crate::nemesis::{FaultKind, Scenario};

/// Options of `watermark run`, as typed. [`RunArgs::resolve`] checks them and fills
/// in every default. The brokers' settings are the broker's own options
/// ([`Settings`]); where a campaign's default differs from the broker's, its help says so.
#[derive(Debug, Clone, clap::Args, PartialEq)]
#[command(
    mut_arg("session_timeout_ms", |a| a.help(SESSION_TIMEOUT_HELP)),
    mut_arg("replica_lag_time_max_ms", |a| a.help(REPLICA_LAG_HELP)),
    mut_arg("leader_imbalance_check_interval_ms", |a| a.help(REBALANCE_HELP)),
)]
pub struct RunArgs {
    /// Number of broker nodes (ids 1..=N), each its own OS process; with --bin, of
    /// the binary's nodes (n1..nN).
    #[arg(allow_negative_numbers = true, short = 'n', long, visible_alias = "node-count", value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=9))]
    pub nodes: u32,

    /// Partitions of the workload's topic.
    #[arg(allow_negative_numbers = true, long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub partitions: u32,

    /// Replicas per partition [default: --nodes].
    #[arg(allow_negative_numbers = true, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=9))]
    pub replication_factor: Option<u32>,

    /// min.insync.replicas: acks=all writes need this many replicas in the ISR
    /// [default: 2, or the replication factor if that is smaller].
    #[arg(allow_negative_numbers = true, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=9))]
    pub min_insync: Option<u32>,

    /// When the leader answers a produce: 0 before appending, 1 after its own append,
    /// all once the high watermark covers the record [default: all; 1 under
    /// --scenario acks1-leader-crash].
    #[arg(long, value_enum)]
    pub acks: Option<AcksArg>,

    /// Queue producers resend a send whose outcome is unknown (timed out, connection
    /// lost, REQUEST_TIMED_OUT) up to N more times, as Kafka's producer `retries`.
    /// 0 ends such a send `info` at once: every value is then sent exactly once, so
    /// a duplicate is always the broker's doing [default: 0; 5 under --scenario
    /// duplicate-on-retry, 10 under duplicate-on-leader-crash]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100))]
    pub retries: Option<u32>,

    /// Queue producers are idempotent (Kafka's enable.idempotence): a producer id
    /// from the controller, a sequence number per partition, so a leader answers a
    /// retried send with its first offset instead of appending it again. Needs
    /// --acks all.
    #[arg(long)]
    pub idempotent: bool,

    /// Run the controller quorum as one dedicated process (`broker controller`, a
    /// quorum of one) beside the brokers, instead of on every broker (the default:
    /// the brokers elect the controller among themselves). Faults aimed at the
    /// controller then hit that process only. `--scenario kip279-divergence` always
    /// runs so.
    #[arg(long)]
    pub dedicated_controller: bool,

    /// Give each broker a plain data dir instead of the fault filesystem (a FUSE
    /// filesystem the harness mounts over it, which needs /dev/fuse and root or
    /// fusermount3). The `disk` fault then goes through the broker's own switch,
    /// and the brokers simulate their page cache where a fault must lose what was
    /// not fsynced (docs/faults.md). A --bin system's nodes get the fault
    /// filesystem only when a fault works on their storage.
    #[arg(long)]
    pub no_fault_fs: bool,

    /// What the clients do. On our broker: `mixed` (both of the next two at once,
    /// the clients split between them, the register's reads linearizable), `queue`
    /// (producers and consumers on a partitioned topic) or `register` (reads,
    /// writes and compare-and-set on keys, checked for linearizability). With
    /// --bin, one of Maelstrom's workloads: `echo`, `unique-ids`, `broadcast`,
    /// `g-counter`, `lin-kv`, `kafka` (docs/maelstrom.md).
    #[arg(short = 'w', long, value_enum, default_value_t = WorkloadKind::Mixed)]
    pub workload: WorkloadKind,

    /// Test your own system instead of our broker: run N copies of this executable
    /// (any language; a script with a shebang too) as Maelstrom nodes, speaking
    /// Maelstrom's protocol on stdin and stdout, with watermark as their network
    /// (docs/maelstrom.md). Needs a Maelstrom workload (-w).
    #[arg(long, value_name = "PATH")]
    pub bin: Option<PathBuf>,

    /// An argument for the --bin executable (repeat it for more, in order).
    #[arg(
        long = "bin-arg",
        value_name = "ARG",
        allow_hyphen_values = true,
        requires = "bin"
    )]
    pub bin_args: Vec<String>,

    /// With --bin: seconds the healed cluster is left to settle before the
    /// workload's final phase (broadcast, g-counter, kafka), as Maelstrom waits for
    /// recovery — nodes that share their state only every few seconds need it; 0
    /// reads at once [default: 10].
    #[arg(long, value_name = "SECS", requires = "bin", value_parser = parse_settle_secs)]
    pub settle: Option<f64>,

    /// Faults to schedule: `replication` (fault patterns aimed at the replication
    /// protocol, favouring what the campaign has not exercised yet), or a
    /// comma-separated list of faults drawn uniformly, or none [default:
    /// replication; with --bin, partition,kill,pause: a black box shows no roles
    /// to aim at, so --bin takes kill, pause, partition, crash-all, slow, flaky and
    /// the clock faults].
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        value_parser = Names::<FaultKind>::new("fault").or("none", "no faults at all (on its own)")
    )]
    pub nemesis: Option<Vec<Option<FaultKind>>>,

    /// Mean seconds between faults of a fault list (each is drawn with jitter from
    /// the seed); the replication package times its faults by the cluster's timeouts.
    #[arg(allow_negative_numbers = true, long, value_name = "SECS", default_value_t = 5.0, value_parser = parse_positive_secs)]
    pub nemesis_interval: f64,

    /// Seconds of workload and faults before the cluster is healed and checked
    /// [default: 60, or the `time_limit` of the --schedule file].
    #[arg(allow_negative_numbers = true, short = 't', long, value_name = "SECS", value_parser = parse_positive_secs)]
    pub time_limit: Option<f64>,

    /// The checker's budget in seconds at the end of the run; past it the verdict
    /// is unknown (exit 2). Its memory budget is a quarter of the machine's memory.
    #[arg(allow_negative_numbers = true, long, value_name = "SECS", default_value_t = DEFAULT_CHECKER_TIME_LIMIT, value_parser = parse_positive_secs)]
    pub checker_time_limit: f64,

    /// Target client operations per second, over all clients.
    #[arg(allow_negative_numbers = true, long, value_name = "OPS_PER_SEC", default_value_t = 200.0, value_parser = parse_positive)]
    pub rate: f64,

    /// Producers that join the queue's clients in its load bursts (every 8–20 s,
    /// 2–5 s long, drawn from the seed), each sending as fast as the cluster
    /// answers; 0: a steady rate only [default: 16; 0 under --scenario].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=256))]
    pub burst_producers: Option<u32>,

    /// Concurrent clients: a number, or `Kn` for K per node (`2n` with 3 nodes is
    /// 6, as in Jepsen) [default: 2n].
    #[arg(allow_negative_numbers = true, long, value_name = "N|Kn", value_parser = parse_concurrency)]
    pub concurrency: Option<Concurrency>,

    /// Seed of every random choice (operations, fault schedule) [default: random,
    /// printed and stored in run.json].
    #[arg(allow_negative_numbers = true, long, value_name = "N")]
    pub seed: Option<u64>,

    /// Where run folders are created.
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub results: PathBuf,

    /// The broker executable [default: the `broker` built alongside watermark; built
    /// with cargo when run from the source tree and missing].
    #[arg(long, value_name = "PATH")]
    pub broker_bin: Option<PathBuf>,

    /// Register workload: read with `?linearizable=true` (the leader confirms it
    /// still leads before answering). The mixed workload always does.
    #[arg(long)]
    pub linearizable_reads: bool,

    /// A fixed fault script instead of the random schedule (--nemesis is then
    /// ignored): the scenario file scenarios/NAME.json, built in (--schedule of the
    /// file plays the same). The KIP scripts lose or diverge data under --truncation
    /// hw and find nothing under epoch; duplicate-on-retry writes a value twice
    /// through the producer's retries (valid with --retries 0). It runs to its end
    /// (its waits are bounded), then the run ends; --time-limit does not apply.
    #[arg(long, value_name = "NAME", value_parser = Names::<Scenario>::new("scenario"))]
    pub scenario: Option<Scenario>,

    /// Play the faults of a schedule file instead of drawing them: a run folder's
    /// schedule.json (every run writes one), or one written by hand
    /// (docs/faults.md#schedule-files). Each fault's target is a role (`leader of
    /// queue/0`, `active-controller`) resolved against the live cluster when its
    /// time comes; --nemesis then only sets the campaign's defaults. A scenario file
    /// (docs/faults.md#scenario-files: a script and its options) is played as
    /// --scenario plays its own.
    #[arg(long, value_name = "FILE", conflicts_with = "scenario")]
    pub schedule: Option<PathBuf>,

    /// A broker process that dies on its own (a panic, an abort, an exit) is noted,
    /// not a `crash` anomaly: the run is judged on its history alone.
    #[arg(long)]
    pub allow_crashes: bool,

    /// What every broker is given (declared once, in `broker-config`: the broker's
    /// own command line takes the same options).
    #[command(flatten)]
    pub broker: Settings,
}

/// `--acks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AcksArg {
    #[value(name = "0")]
    Zero,
    #[value(name = "1")]
    One,
    #[value(name = "all")]
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

/// `--workload`: what the clients do — on our broker, or (`--bin`) one of
/// Maelstrom's workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WorkloadKind {
    /// The queue and the register at once, each judged by its own checker.
    Mixed,
    Queue,
    Register,
    /// Maelstrom's echo (--bin).
    Echo,
    /// Maelstrom's unique-ids (--bin).
    UniqueIds,
    /// Maelstrom's broadcast (--bin).
    Broadcast,
    /// Maelstrom's g-counter (--bin).
    GCounter,
    /// Maelstrom's lin-kv (--bin).
    LinKv,
    /// Maelstrom's kafka (--bin).
    Kafka,
}

impl WorkloadKind {
    /// The single workloads a campaign of this kind runs, each judged by its own
    /// checker: itself, or for `mixed` the queue and the register.
    pub fn parts(self) -> &'static [WorkloadKind] {
        match self {
            WorkloadKind::Mixed => &[WorkloadKind::Queue, WorkloadKind::Register],
            WorkloadKind::Queue => &[WorkloadKind::Queue],
            WorkloadKind::Register => &[WorkloadKind::Register],
            WorkloadKind::Echo => &[WorkloadKind::Echo],
            WorkloadKind::UniqueIds => &[WorkloadKind::UniqueIds],
            WorkloadKind::Broadcast => &[WorkloadKind::Broadcast],
            WorkloadKind::GCounter => &[WorkloadKind::GCounter],
            WorkloadKind::LinKv => &[WorkloadKind::LinKv],
            WorkloadKind::Kafka => &[WorkloadKind::Kafka],
        }
    }

    /// The Maelstrom workload this names, if it names one (it runs with --bin).
    pub fn maelstrom(self) -> Option<maelstrom::workload::Workload> {
        use maelstrom::workload::Workload as M;
        match self {
            WorkloadKind::Mixed | WorkloadKind::Queue | WorkloadKind::Register => None,
            WorkloadKind::Echo => Some(M::Echo),
            WorkloadKind::UniqueIds => Some(M::UniqueIds),
            WorkloadKind::Broadcast => Some(M::Broadcast),
            WorkloadKind::GCounter => Some(M::GCounter),
            WorkloadKind::LinKv => Some(M::LinKv),
            WorkloadKind::Kafka => Some(M::Kafka),
        }
    }
}

/// The faults a black box (--bin) can be given: none needs a role, nor help from
/// the system (storage faults come from its fault filesystem, clocks from
/// libfaketime).
pub const BLACK_BOX_FAULTS: [FaultKind; 13] = [
    FaultKind::Kill,
    FaultKind::Pause,
    FaultKind::Partition,
    FaultKind::CrashAll,
    FaultKind::Slow,
    FaultKind::Flaky,
    FaultKind::LoseUnflushed,
    FaultKind::TornWrite,
    FaultKind::Corrupt,
    FaultKind::Disk,
    FaultKind::ClockOffset,
    FaultKind::ClockStep,
    FaultKind::ClockStrobe,
];

/// `--nemesis` with --bin when not given.
pub const BLACK_BOX_DEFAULT_FAULTS: [FaultKind; 3] =
    [FaultKind::Partition, FaultKind::Kill, FaultKind::Pause];

/// `--checker-time-limit` when not given (and in a run.json written before it
/// existed).
pub const DEFAULT_CHECKER_TIME_LIMIT: f64 = 120.0;
/// How long the healed cluster of a `--bin` system is left alone before the final
/// phase (`--settle`): time for a gossip to spread, a leader to be elected, a
/// restarted node to catch up — Maelstrom's own wait for recovery, which nodes
/// written for it are tuned to (some share their state every few seconds).
pub const DEFAULT_SETTLE: f64 = 10.0;
/// A campaign's seconds of workload and faults when neither `--time-limit` nor the
/// schedule file says.
pub const DEFAULT_TIME_LIMIT: f64 = 60.0;

/// `--burst-producers` unless given: enough in flight to take what this
/// machine's cluster of three answers (docs/running.md#load).
pub const DEFAULT_BURST_PRODUCERS: u32 = 16;

by_name!(
    AcksArg => "acks",
    WorkloadKind => "workload",
);

/// `--session-timeout-ms` in `watermark run --help`.
const SESSION_TIMEOUT_HELP: &str = "The controller declares a broker silent for longer than \
    this dead (the brokers' session timeout; a new controller's grace period too) [default: 2000 \
    in a campaign, two thirds of the broker's own default, so that a minute holds more of the \
    faults timed by it; with --scenario, the broker's own (3000): a scenario's script is timed \
    by it]";

/// `--replica-lag-time-max-ms` in `watermark run --help`.
const REPLICA_LAG_HELP: &str = "A follower behind the leader for longer than this leaves the \
    ISR (the brokers' replica.lag.time.max.ms) [default: 3000, under a third of the broker's own \
    default, so a campaign's faults outlast it and the ISR moves within a minute]";

/// `--leader-imbalance-check-interval-ms` in `watermark run --help`.
const REBALANCE_HELP: &str = "Every this many ms the active controller hands each partition \
    back to its preferred replica when that one is alive and in the ISR (Kafka's auto leader \
    rebalance, leader.imbalance.check.interval) [default: 5000, so that within a minute the \
    leaderships a fault moved spread over the brokers again; with --scenario, the broker's own \
    (300000): a scenario moves leaders itself]; 0 turns it off";

/// The brokers' `replica.lag.time.max.ms` in a campaign when not given: shorter
/// than the broker's own default (10 s), so that in a 60 s campaign the faults that
/// lag a follower past it (and the ISR changes they cause) fit several times over.
pub const DEFAULT_REPLICA_LAG_TIME_MAX_MS: u64 = 3000;

/// The brokers' session timeout in a campaign when not given (the broker's own is
/// 3 s): the faults the replication package times by it — a leader isolated or
/// killed past it, a restart within it — and the controller's grace after a
/// failover all shorten with it, so that a minute holds more of them. Brokers
/// heartbeat every 200 ms: ten heartbeats lost make a broker dead.
pub const DEFAULT_SESSION_TIMEOUT_MS: u64 = 2000;

/// The brokers' leader imbalance check interval in a campaign when not given:
/// Kafka's 300 s scaled down like the other timeouts, so that a fault's moved
/// leaderships go back to their preferred replicas within a campaign, and the next
/// fault finds the partitions led by different brokers.
pub const DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_MS: u64 = 5_000;

/// Why options cannot be resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum ResolveError {
    /// A bad option or combination (exit 64).
    Usage(String),
    /// The broker executable is missing and cannot be built (exit 3).
    Harness(HarnessError),
}

impl RunArgs {
    /// Check what clap cannot check alone and fill in every default; the broker
    /// executable is found (or built) by `cluster::broker_bin::locate`.
    pub fn resolve(self) -> Result<Resolved, ResolveError> {
        self.resolve_with(crate::system::broker::broker_bin::locate)
    }

    /// [`RunArgs::resolve`], finding the broker executable with `locate`.
    pub fn resolve_with(
        self,
        locate: impl FnOnce(Option<&std::path::Path>) -> crate::error::Result<PathBuf>,
    ) -> Result<Resolved, ResolveError> {
        let (schedule_file, script) = self.schedule_input().map_err(ResolveError::Usage)?;
        let needs = script.as_ref().map(|s| &s.options);
        self.refuse_bad_combinations(script.as_ref())
            .map_err(ResolveError::Usage)?;
        let (replication_factor, min_insync) =
            self.replication(needs).map_err(ResolveError::Usage)?;
        let nemesis = match script {
            // The script replaces the random schedule.
            Some(_) => Vec::new(),
            None => fault_list::resolve(&self.nemesis_entries()).map_err(ResolveError::Usage)?,
        };
        let concurrency = self.clients().map_err(ResolveError::Usage)?;
        // A system of the user's own needs no broker.
        let (broker_bin, bin) = match &self.bin {
            Some(path) => (
                PathBuf::new(),
                Some(bin::resolve(path).map_err(ResolveError::Usage)?),
            ),
            None => (
                locate(self.broker_bin.as_deref()).map_err(ResolveError::Harness)?,
                None,
            ),
        };
        let mut faults = nemesis.clone();
        // A schedule's `lose-unflushed` and `torn-write` cut their node's power
        // themselves; its kills do too where it says so, as in the run it was
        // recorded from (or, written by hand, as soon as it cuts a power itself).
        let schedule_cuts_power = schedule_file
            .as_ref()
            .is_some_and(ScheduleFile::loses_unflushed);
        if schedule_file
            .as_ref()
            .is_some_and(|f| f.kills_cut_power.unwrap_or(schedule_cuts_power))
        {
            faults.push(FaultKind::LoseUnflushed);
        }
        if schedule_file
            .as_ref()
            .is_some_and(ScheduleFile::sets_clocks)
        {
            faults.push(FaultKind::ClockOffset);
        }
        // Our brokers always run on it; a system of the user's own when a fault
        // works on its storage (nothing else of it needs FUSE).
        let fault_fs = !self.no_fault_fs
            && (bin.is_none()
                || faults.iter().any(|k| k.is_storage())
                || schedule_file
                    .as_ref()
                    .is_some_and(ScheduleFile::touches_storage));
        let (broker, power_cut_on_kill) = self.campaign_settings(
            &faults,
            script.as_ref().map(|s| &s.options),
            fault_fs,
            schedule_cuts_power,
        );
        let script_needs = script.as_ref().map(|s| &s.options);
        let acks = self.acks(script_needs);
        let retries = self.retries.or(script_needs.and_then(|s| s.retries));
        // Kafka's default producers unless the producers were set: by an option,
        // by a scenario (its assertions assume the producers it names), or by acks
        // other than all (Kafka's default idempotence needs all).
        let producers =
            if retries.is_none() && !self.idempotent && script.is_none() && acks == AcksArg::All {
                ProducerMix::KafkaDefault
            } else {
                ProducerMix::Given
            };
        Ok(Resolved {
            nodes: self.nodes,
            partitions: self.partitions,
            replication_factor,
            min_insync,
            acks,
            retries: retries.unwrap_or(0),
            idempotent: self.idempotent,
            producers,
            burst_producers: self.burst_producers.unwrap_or(if script.is_some() {
                0
            } else {
                DEFAULT_BURST_PRODUCERS
            }),
            dedicated_controller: self.dedicated_controller
                || script_needs.is_some_and(|s| s.dedicated_controller),
            fault_fs,
            power_cut_on_kill,
            clocks: faults.iter().any(|k| k.is_clock()),
            workload: self.workload,
            nemesis,
            nemesis_interval: self.nemesis_interval,
            time_limit: self
                .time_limit
                .or(schedule_file.as_ref().and_then(|f| f.time_limit))
                .unwrap_or(DEFAULT_TIME_LIMIT),
            checker_time_limit: self.checker_time_limit,
            rate: self.rate,
            concurrency,
            seed: self
                .seed
                .or(schedule_file.as_ref().and_then(|f| f.seed))
                .unwrap_or_else(|| u64::from(rand::random::<u32>())),
            results: self.results,
            broker_bin,
            // The mixed workload's register reads linearizably: its checker would
            // otherwise judge the stale reads plain reads are allowed.
            linearizable_reads: self.linearizable_reads || self.workload == WorkloadKind::Mixed,
            scenario: self.scenario,
            schedule: self
                .schedule
                .map(|p| std::fs::canonicalize(&p).unwrap_or(p)),
            schedule_file,
            script,
            allow_crashes: self.allow_crashes,
            bin_sha256: bin.as_ref().map(|b| b.sha256.clone()),
            bin: bin.map(|b| b.path),
            bin_args: self.bin_args,
            settle: self.settle.unwrap_or(DEFAULT_SETTLE),
            broker,
        })
    }

    /// `--nemesis` as typed, or its default: the replication package for our
    /// broker, a mix of partitions, kills and pauses for a black box (--bin).
    fn nemesis_entries(&self) -> Vec<Option<FaultKind>> {
        match (&self.nemesis, &self.bin) {
            (Some(typed), _) => typed.clone(),
            (None, Some(_)) => BLACK_BOX_DEFAULT_FAULTS.map(Some).to_vec(),
            (None, None) => vec![Some(FaultKind::Replication)],
        }
    }

    /// What --bin needs and refuses: a Maelstrom workload goes with --bin and only
    /// with it; a black box shows no roles (no leader, no controller), and has no
    /// storage or configuration of ours to fault.
    fn refuse_bad_black_box(&self, script: Option<&ScenarioFile>) -> Result<(), String> {
        const MAELSTROM: &str = "echo|unique-ids|broadcast|g-counter|lin-kv|kafka";
        match (&self.bin, self.workload.maelstrom()) {
            (Some(bin), None) => {
                return Err(format!(
                    "--bin {} runs one of Maelstrom's workloads: -w {MAELSTROM} \
                     (`{}` is a workload of our broker)",
                    bin.display(),
                    self.workload
                ));
            }
            (None, Some(_)) => {
                return Err(format!(
                    "-w {} is a Maelstrom workload: it tests nodes of your own, named \
                     with --bin PATH",
                    self.workload
                ));
            }
            (None, None) => return Ok(()),
            (Some(_), Some(_)) => {}
        }
        if let Some(script) = script {
            return Err(format!(
                "scenario {} is a script aimed at our broker's leaders and controller; \
                 a --bin system shows no roles",
                script.name
            ));
        }
        let allowed: Vec<String> = BLACK_BOX_FAULTS.iter().map(|k| k.to_string()).collect();
        for kind in self.nemesis_entries().into_iter().flatten() {
            if !BLACK_BOX_FAULTS.contains(&kind) {
                return Err(format!(
                    "--nemesis {kind} needs what a --bin system does not show (a leader, a \
                     controller, our broker's storage or configuration); with --bin: {}, \
                     or none",
                    allowed.join(", ")
                ));
            }
            if kind.is_storage() && self.no_fault_fs {
                return Err(format!(
                    "--nemesis {kind} with --bin works on the nodes' fault filesystem: a \
                     system of your own has no switch of ours to fail its storage from \
                     inside (drop --no-fault-fs)"
                ));
            }
        }
        Ok(())
    }

    /// What `--scenario` or `--schedule` names, read: a schedule of faults, or a
    /// scenario's script (Err: why not, and where).
    fn schedule_input(&self) -> Result<(Option<ScheduleFile>, Option<ScenarioFile>), String> {
        if let Some(scenario) = self.scenario {
            return Ok((None, Some(scenario.file()?)));
        }
        let Some(path) = &self.schedule else {
            return Ok((None, None));
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--schedule {}: cannot read it: {e}", path.display()))?;
        let at = |e: String| format!("--schedule {}: {e}", path.display());
        if ScenarioFile::is_one(&text) {
            return Ok((None, Some(ScenarioFile::parse(&text).map_err(at)?)));
        }
        let file = ScheduleFile::parse(&text).map_err(|e| at(e.to_string()))?;
        Ok((Some(file), None))
    }

    /// Options that cannot go together.
    fn refuse_bad_combinations(&self, script: Option<&ScenarioFile>) -> Result<(), String> {
        self.refuse_bad_black_box(script)?;
        if let Some(script) = script {
            let n = script.options.replicas();
            if self.nodes < 3 || self.replication_factor.is_some_and(|rf| rf < n) {
                return Err(format!(
                    "scenario {} needs {n} replicas and three brokers: --nodes 3 \
                     or more and --replication-factor {n} or more",
                    script.name
                ));
            }
        }
        let needs = script.map(|s| &s.options);
        if self.workload == WorkloadKind::Register && self.acks(needs) != AcksArg::All {
            return Err(
                "--workload register writes with acks=all (a register's writes must be \
                 committed to be judged); leave out --acks"
                    .to_string(),
            );
        }
        if self.idempotent && self.acks(needs) != AcksArg::All {
            return Err(
                "--idempotent needs --acks all (as Kafka's enable.idempotence does)".to_string(),
            );
        }
        if self.workload == WorkloadKind::Register
            && self
                .nemesis_entries()
                .contains(&Some(FaultKind::AddPartitions))
        {
            return Err(
                "--nemesis add-partitions grows the queue's topic: --workload queue or \
                 mixed (a register's keys are placed by the partition count, which new \
                 partitions would change)"
                    .to_string(),
            );
        }
        if self.linearizable_reads && self.workload == WorkloadKind::Queue {
            return Err(
                "--linearizable-reads applies to the register's reads: --workload register \
                 or mixed (which always reads linearizably)"
                    .to_string(),
            );
        }
        Ok(())
    }

    /// The producers' acks: as given, else the scenario's (1 in one that shows what
    /// acks=1 loses), else all.
    fn acks(&self, script: Option<&ScenarioOptions>) -> AcksArg {
        let scenario = script.and_then(|s| s.acks).map(|a| match a {
            Acks::Zero => AcksArg::Zero,
            Acks::One => AcksArg::One,
            Acks::All => AcksArg::All,
        });
        self.acks.or(scenario).unwrap_or(AcksArg::All)
    }

    /// The replication factor and min.insync.replicas, defaults applied (a seed
    /// scenario's two replicas, of which one suffices).
    fn replication(&self, script: Option<&ScenarioOptions>) -> Result<(u32, u32), String> {
        let rf = self
            .replication_factor
            .or(script.and_then(|s| s.replication_factor))
            .unwrap_or(self.nodes);
        if rf > self.nodes {
            return Err(format!(
                "--replication-factor {rf} is more than --nodes {}; each replica needs its own node",
                self.nodes
            ));
        }
        let min_insync = self
            .min_insync
            .or(script.and_then(|s| s.min_insync))
            .unwrap_or(rf.min(2));
        if min_insync > rf {
            return Err(format!(
                "--min-insync {min_insync} is more than the replication factor {rf}; no acks=all write could ever succeed"
            ));
        }
        Ok((rf, min_insync))
    }

    /// How many clients, in all.
    fn clients(&self) -> Result<u32, String> {
        let concurrency = self
            .concurrency
            .unwrap_or(Concurrency::PerNode(2))
            .clients(self.nodes);
        if concurrency > MAX_CONCURRENCY {
            return Err(format!(
                "--concurrency {concurrency} clients ({} nodes) is more than {MAX_CONCURRENCY}",
                self.nodes
            ));
        }
        if self.workload == WorkloadKind::Mixed && concurrency < 2 {
            return Err(format!(
                "--workload mixed splits the clients between the queue and the register: \
                 it needs --concurrency 2 or more, not {concurrency} (or name one workload)"
            ));
        }
        Ok(concurrency)
    }

    /// The brokers' settings as given, with a campaign's defaults where they differ
    /// from the broker's own (shorter timeouts, so that a minute holds more faults;
    /// the broker's own under a scenario, whose scripts are timed by them) and what
    /// the faults need: kills that lose what was not fsynced for `lose-unflushed`
    /// (and for the replication package's, with a flush policy), a scenario's own —
    /// power cuts of the fault filesystem (true beside the settings), or with
    /// `--no-fault-fs` the page cache the brokers simulate, which a schedule's own
    /// power cuts (`schedule_cuts_power`) need too (its kills cut power when it says
    /// so: `nemesis` then holds `lose-unflushed`).
    fn campaign_settings(
        &self,
        nemesis: &[FaultKind],
        script: Option<&ScenarioOptions>,
        fault_fs: bool,
        schedule_cuts_power: bool,
    ) -> (Settings, bool) {
        let mut s = self.broker.clone();
        let campaign = script.is_none();
        s.replica.truncation = Some(s.replica.truncation());
        s.replica.replica_lag_time_max_ms = Some(
            s.replica
                .replica_lag_time_max_ms
                .unwrap_or(DEFAULT_REPLICA_LAG_TIME_MAX_MS),
        );
        let c = &mut s.controller;
        if campaign {
            c.session_timeout_ms = c.session_timeout_ms.or(Some(DEFAULT_SESSION_TIMEOUT_MS));
            c.leader_imbalance_check_interval_ms = c
                .leader_imbalance_check_interval_ms
                .or(Some(DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_MS));
        }
        // A bug in the flush path needs brokers that flush.
        if let Some(n) = s.bug.and_then(broker_config::Bug::flush_messages)
            && s.replica.flush_messages.is_none()
            && s.replica.flush_ms.is_none()
        {
            s.replica.flush_messages = Some(n);
        }
        let mut lose_unflushed =
            crate::nemesis::needs_page_cache(nemesis, s.replica.flush_messages);
        if let Some(script) = script {
            lose_unflushed |= script.simulate_page_cache;
            if script.flush_ms.is_some() {
                s.replica.flush_ms = script.flush_ms;
            }
        }
        // Without the fault filesystem only brokers holding their unflushed bytes
        // in their process can lose them (and then every kill does).
        if (lose_unflushed || schedule_cuts_power) && !fault_fs {
            s.replica.simulate_page_cache = true;
        }
        (s, lose_unflushed && fault_fs)
    }
}

impl From<Resolved> for RunArgs {
    /// The options as if typed, to be resolved again (`watermark replay`).
    fn from(r: Resolved) -> RunArgs {
        RunArgs {
            nodes: r.nodes,
            partitions: r.partitions,
            replication_factor: Some(r.replication_factor),
            min_insync: Some(r.min_insync),
            acks: Some(r.acks),
            // Kafka's default producers are what no producer option resolves to.
            retries: (r.producers == ProducerMix::Given).then_some(r.retries),
            idempotent: r.idempotent,
            dedicated_controller: r.dedicated_controller,
            no_fault_fs: !r.fault_fs,
            workload: r.workload,
            nemesis: Some(fault_list::entries(&r.nemesis)),
            nemesis_interval: r.nemesis_interval,
            time_limit: Some(r.time_limit),
            checker_time_limit: r.checker_time_limit,
            rate: r.rate,
            burst_producers: Some(r.burst_producers),
            concurrency: Some(Concurrency::Total(r.concurrency)),
            seed: Some(r.seed),
            results: r.results,
            broker_bin: r.bin.is_none().then_some(r.broker_bin),
            settle: r.bin.is_some().then_some(r.settle),
            bin: r.bin,
            bin_args: r.bin_args,
            linearizable_reads: r.linearizable_reads,
            scenario: r.scenario,
            schedule: r.schedule,
            allow_crashes: r.allow_crashes,
            broker: r.broker,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::time::Duration;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        args: RunArgs,
    }

    fn parse(argv: &[&str]) -> Result<Resolved, String> {
        let mut all = vec!["run"];
        all.extend_from_slice(argv);
        let args = T::try_parse_from(all).map_err(|e| e.to_string())?.args;
        args.resolve_with(|bin| Ok(bin.map_or_else(|| PathBuf::from("/bin/broker"), Into::into)))
            .map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn defaults_follow_the_docs() {
        let a = parse(&["--seed", "5"]).unwrap();
        assert_eq!(
            (a.nodes, a.partitions, a.replication_factor, a.min_insync),
            (3, 2, 3, 2)
        );
        assert_eq!(
            (a.acks, a.broker.truncation(), a.workload),
            (AcksArg::All, Truncation::Epoch, WorkloadKind::Mixed)
        );
        assert!(
            a.linearizable_reads,
            "the mixed workload reads linearizably"
        );
        assert_eq!(a.nemesis, [FaultKind::Replication]);
        assert_eq!(
            (a.nemesis_interval, a.time_limit, a.rate),
            (5.0, 60.0, 200.0)
        );
        assert_eq!(a.checker_time_limit, 120.0);
        assert_eq!((a.concurrency, a.seed), (6, 5));
        assert_eq!(a.results, PathBuf::from("results"));
        assert_eq!(a.broker_bin, PathBuf::from("/bin/broker"));
        let c = &a.broker.controller;
        assert_eq!(c.session_timeout_ms, Some(2000));
        assert_eq!(a.broker.replica.replica_lag_time_max_ms, Some(3000));
        assert_eq!(c.leader_imbalance_check_interval_ms, Some(5_000));
        assert_eq!(
            a.broker.to_args(),
            [
                "--truncation",
                "epoch",
                "--replica-lag-time-max-ms",
                "3000",
                "--session-timeout-ms",
                "2000",
                "--leader-imbalance-check-interval-ms",
                "5000"
            ]
        );
        assert!(!a.dedicated_controller);
        // The package times its faults by the brokers' timeouts.
        let t = a.package_settings(&[1, 2, 3]).timeouts;
        assert_eq!(
            (t.session, t.lag),
            (Duration::from_secs(2), Duration::from_secs(3))
        );
    }

    #[test]
    fn the_session_timeout_is_the_brokers_own_under_a_scenario_and_in_older_run_json() {
        let a = parse(&["--session-timeout-ms", "2500", "--seed", "1"]).unwrap();
        assert_eq!(a.broker.controller.session_timeout_ms, Some(2500));
        assert!(
            a.broker
                .to_args()
                .windows(2)
                .any(|w| w == ["--session-timeout-ms", "2500"])
        );
        assert!(
            a.broker
                .controller_args()
                .windows(2)
                .any(|w| w == ["--session-timeout-ms", "2500"])
        );
        let s = parse(&["--scenario", "kip101-data-loss", "--seed", "1"]).unwrap();
        assert_eq!(s.broker.controller.session_timeout_ms, None);
        assert!(
            !s.broker
                .to_args()
                .iter()
                .any(|a| a == "--session-timeout-ms")
        );
        assert_eq!(
            s.package_settings(&[1]).timeouts.session,
            Duration::from_secs(3)
        );
        let mut json = serde_json::to_value(&a).unwrap();
        json.as_object_mut().unwrap().remove("session_timeout_ms");
        let older = serde_json::from_value::<Resolved>(json).unwrap();
        assert_eq!(older.broker.controller.session_timeout_ms, None);
        for bad in ["0", "199", "-5", "abc"] {
            let e = parse(&[&format!("--session-timeout-ms={bad}")]).unwrap_err();
            assert!(e.contains("session-timeout-ms"), "{e}");
        }
    }

    #[test]
    fn the_checker_time_limit_is_stored_and_defaults_for_older_run_json() {
        let a = parse(&["--checker-time-limit", "7.5", "--seed", "1"]).unwrap();
        assert_eq!(a.checker_time_limit, 7.5);
        let mut json = serde_json::to_value(&a).unwrap();
        assert_eq!(json["checker_time_limit"], 7.5);
        assert_eq!(serde_json::from_value::<Resolved>(json.clone()).unwrap(), a);
        json.as_object_mut().unwrap().remove("checker_time_limit");
        let older = serde_json::from_value::<Resolved>(json).unwrap();
        assert_eq!(older.checker_time_limit, DEFAULT_CHECKER_TIME_LIMIT);
        for bad in ["0", "-1", "abc", "1e9"] {
            let e = parse(&[&format!("--checker-time-limit={bad}")]).unwrap_err();
            assert!(e.contains("checker-time-limit"), "{e}");
        }
    }

    #[test]
    fn concurrency_is_a_number_or_per_node() {
        let c = |argv: &[&str]| parse(argv).map(|a| a.concurrency);
        assert_eq!(c(&["--concurrency", "2n"]), Ok(6));
        assert_eq!(c(&["--concurrency", "3n", "-n", "5"]), Ok(15));
        assert_eq!(c(&["--concurrency", "7"]), Ok(7));
        assert_eq!(c(&["-n", "4"]), Ok(8), "the default is 2n");
        for bad in ["0", "0n", "n", "2x", "-1", "1001", "2.5n"] {
            let e = c(&[&format!("--concurrency={bad}")]).unwrap_err();
            assert!(e.contains("clients per node"), "{bad}: {e}");
        }
        let e = c(&["--concurrency", "200n", "-n", "9"]).unwrap_err();
        assert!(e.contains("1800 clients"), "{e}");
    }

    #[test]
    fn short_flags_for_workload_nodes_and_time_limit() {
        let a = parse(&["-w", "register", "-n", "5", "-t", "7.5"]).unwrap();
        assert_eq!(
            (a.workload, a.nodes, a.time_limit),
            (WorkloadKind::Register, 5, 7.5)
        );
    }

    #[test]
    fn the_mixed_workload_takes_any_acks_and_needs_two_clients() {
        let a = parse(&["--acks", "1", "--seed", "1"]).unwrap();
        assert_eq!((a.workload, a.acks), (WorkloadKind::Mixed, AcksArg::One));
        let q = parse(&["--workload", "queue", "--concurrency", "1"]).unwrap();
        assert!(!q.linearizable_reads);
        let e = parse(&["--concurrency", "1"]).unwrap_err();
        assert!(e.contains("--concurrency 2 or more"), "{e}");
        let r = parse(&["--workload", "register"]).unwrap();
        assert!(!r.linearizable_reads, "plain reads unless asked");
        assert_eq!(
            WorkloadKind::Mixed.parts(),
            [WorkloadKind::Queue, WorkloadKind::Register]
        );
    }

    #[test]
    fn a_single_node_needs_no_min_insync_option() {
        let a = parse(&["--nodes", "1", "--seed", "1"]).unwrap();
        assert_eq!((a.replication_factor, a.min_insync), (1, 1));
        assert_eq!(a.concurrency, 2);
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
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(
            json["nemesis"],
            serde_json::json!(["kill", "lose-unflushed"])
        );
        assert_eq!(
            (&json["acks"], &json["bug"]),
            (&"1".into(), &"stale-read".into())
        );
        assert_eq!(serde_json::from_value::<Resolved>(json).unwrap(), a);
        // Power cuts of the fault filesystem: the brokers simulate nothing.
        assert!(a.fault_fs && a.power_cut_on_kill);
        assert!(
            !a.broker
                .to_args()
                .contains(&"--simulate-page-cache".to_string())
        );
        let again = RunArgs::from(a.clone())
            .resolve_with(|bin| Ok(bin.unwrap().to_path_buf()))
            .unwrap();
        assert_eq!(again, a);
    }

    #[test]
    fn no_faults_are_stored_as_none_and_read_back() {
        let a = parse(&["--nemesis", "none", "--seed", "1"]).unwrap();
        assert!(a.nemesis.is_empty());
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(json["nemesis"], serde_json::json!(["none"]));
        assert_eq!(serde_json::from_value::<Resolved>(json).unwrap(), a);
        let s = parse(&["--scenario", "kip101-divergence", "--seed", "1"]).unwrap();
        assert!(s.nemesis.is_empty());
        assert_eq!(
            serde_json::to_value(&s).unwrap()["scenario"],
            "kip101-divergence"
        );
        assert!(s.broker.to_args().contains(&"--flush-ms".to_string()));
    }

    #[test]
    fn fault_names_are_trimmed_kept_once_and_none_stands_alone() {
        use FaultKind::*;
        let a = parse(&["--nemesis", " crash-all , kill,kill"]).unwrap();
        assert_eq!(a.nemesis, [CrashAll, Kill]);
        let e = parse(&["--nemesis", "kill,explode"]).unwrap_err();
        assert!(
            e.contains("unknown fault `explode`")
                && e.contains("throttle, disk, reassign, add-partitions, clock-offset, clock-step, clock-strobe, or none"),
            "{e}"
        );
        let e = parse(&["--nemesis", "none,kill"]).unwrap_err();
        assert!(e.contains("`none` cannot be combined"), "{e}");
        let e = parse(&["--nemesis", "replication,kill"]).unwrap_err();
        assert!(e.contains("`replication` is a whole package"), "{e}");
        let a = parse(&["--nemesis", "replication,replication"]).unwrap();
        assert_eq!(a.nemesis, [Replication]);
    }

    /// Without a flush policy a kill is a kill (crashing every node at once loses
    /// nothing acknowledged), but `lose-unflushed` still cuts one node's power: the
    /// fault filesystem writes back what stayed unsynced for half a minute, so the
    /// node loses its recent writes, not its whole log. Without the fault
    /// filesystem it would, and there is no power cut.
    #[test]
    fn the_default_package_cuts_one_nodes_power_at_a_time_on_the_fault_filesystem() {
        let nodes = [1, 2, 3];
        let plain = parse(&["--seed", "1"]).unwrap().package_settings(&nodes);
        assert!(plain.power_cuts && plain.crash_all_safe);
        let plain = parse(&["--seed", "1", "--no-fault-fs"])
            .unwrap()
            .package_settings(&nodes);
        assert!(!plain.power_cuts && plain.crash_all_safe);
        let flushing = parse(&["--seed", "1", "--flush-messages", "10"])
            .unwrap()
            .package_settings(&nodes);
        assert!(flushing.power_cuts && !flushing.crash_all_safe);
    }

    /// A recorded schedule replays its kills as the run it came from did: a
    /// default campaign cut power only in its `lose-unflushed` steps, and a
    /// `crash-all` replayed as a power cut of every node would lose what that run
    /// acknowledged. Written by hand without saying, a schedule that cuts a power
    /// makes every kill cut it too, as a fault list naming `lose-unflushed` does.
    #[test]
    fn a_schedule_says_whether_its_kills_cut_power() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, header: &str| {
            let file = dir.path().join(name);
            std::fs::write(
                &file,
                format!(
                    "{{\"schedule\": 1, {header}\"faults\": [\n\
                     {{\"at\": 2, \"fault\": \"lose-unflushed\", \"target\": \"node 2\", \"for\": 1}},\n\
                     {{\"at\": 5, \"fault\": \"crash-all\", \"for\": 0.5}}\n]}}"
                ),
            )
            .unwrap();
            file.to_str().unwrap().to_string()
        };
        let by_hand = write("hand.json", "");
        let a = parse(&["--seed", "1", "--schedule", &by_hand]).unwrap();
        assert!(a.fault_fs && a.power_cut_on_kill);
        let recorded = write("recorded.json", "\"kills_cut_power\": false, ");
        let path = recorded.as_str();
        let a = parse(&["--seed", "1", "--schedule", path]).unwrap();
        assert!(a.fault_fs && !a.power_cut_on_kill);
        // Without the fault filesystem the brokers must hold their unflushed bytes.
        let a = parse(&["--seed", "1", "--schedule", path, "--no-fault-fs"]).unwrap();
        assert!(
            a.broker
                .to_args()
                .contains(&"--simulate-page-cache".to_string())
        );
        let a = parse(&["--seed", "1", "--schedule", path, "--flush-messages", "1"]).unwrap();
        assert!(a.power_cut_on_kill, "a flush policy: every kill cuts power");
    }

    #[test]
    fn the_replication_package_cuts_power_only_with_a_flush_policy() {
        let plain = parse(&["--seed", "1"]).unwrap();
        assert!(plain.fault_fs && !plain.power_cut_on_kill);
        let flushing = parse(&["--seed", "1", "--flush-messages", "10"]).unwrap();
        assert!(flushing.power_cut_on_kill);
        // A bug in the flush path gets a flush policy of its own.
        let bug = parse(&["--seed", "1", "--bug", "flush-skips-fsync"]).unwrap();
        assert_eq!(bug.broker.replica.flush_messages, Some(1));
        assert!(bug.power_cut_on_kill);
        let plain = parse(&["--seed", "1", "--no-fault-fs"]).unwrap();
        assert!(
            !plain
                .broker
                .to_args()
                .contains(&"--simulate-page-cache".to_string())
        );
        let flushing = parse(&["--seed", "1", "--flush-messages", "10", "--no-fault-fs"]).unwrap();
        assert!(!flushing.fault_fs && !flushing.power_cut_on_kill);
        let args = flushing.broker.to_args();
        assert_eq!(
            args.iter()
                .filter(|a| *a == "--simulate-page-cache")
                .count(),
            1,
            "{args:?}"
        );
    }

    #[test]
    fn serde_and_the_command_line_spell_every_name_alike() {
        fn same<T: ValueEnum + serde::Serialize>() {
            for v in T::value_variants() {
                let name = crate::names::name(v);
                assert_eq!(serde_json::to_value(v).unwrap(), name);
            }
        }
        same::<AcksArg>();
        same::<Truncation>();
        same::<WorkloadKind>();
        same::<Bug>();
        same::<FaultKind>();
        same::<Scenario>();
        // The bugs are declared in broker-config alone; their names list in order.
        let bugs = crate::names::list::<Bug>();
        assert!(
            bugs.starts_with("hw-truncation, ack-before-replicate, ") && bugs.contains(", abort"),
            "{bugs}"
        );
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
            &["--nemesis", "kill,replication"],
            &["--rate", "0"],
            &["--time-limit", "-1"],
            &["--bug", "nonsense"],
            &["--workload", "queue", "--linearizable-reads"],
            &["--concurrency", "1"],
            &["--acks", "2"],
            &["--workload", "register", "--acks", "1"],
            &["--idempotent", "--acks", "1"],
            &["--retries", "-1"],
            &["--retries", "101"],
        ] {
            assert!(parse(argv).is_err(), "{argv:?} was accepted");
        }
    }

    /// A negative number is a bad value of its option, not an unknown flag: clap took
    /// `--rate -5` for the option `-5` and said "unexpected argument '-5'".
    #[test]
    fn negative_numbers_are_bad_values_of_their_option() {
        for (argv, option) in [
            (&["--rate", "-5"][..], "--rate"),
            (&["--time-limit", "-1"], "--time-limit"),
            (&["--nemesis-interval", "-2"], "--nemesis-interval"),
            (&["--checker-time-limit", "-3"], "--checker-time-limit"),
            (&["--nodes", "-3"], "--nodes"),
            (&["--partitions", "-1"], "--partitions"),
            (&["--replication-factor", "-1"], "--replication-factor"),
            (&["--min-insync", "-1"], "--min-insync"),
            (&["--concurrency", "-4"], "--concurrency"),
            (&["--seed", "-7"], "--seed"),
            (&["--flush-messages", "-1"], "--flush-messages"),
            (
                &["--replica-lag-time-max-ms", "-1"],
                "--replica-lag-time-max-ms",
            ),
        ] {
            let e = parse(argv).unwrap_err();
            assert!(e.contains(option), "{argv:?}: {e}");
            assert!(!e.contains("unexpected argument"), "{argv:?}: {e}");
        }
    }

    #[test]
    fn retries_default_to_none_but_five_under_the_duplicate_scenario() {
        let plain = parse(&["--seed", "1"]).unwrap();
        assert_eq!((plain.retries, plain.idempotent), (0, false));
        let dup = parse(&["--scenario", "duplicate-on-retry", "--seed", "1"]).unwrap();
        assert_eq!(dup.retries, 5);
        let given = [
            "--scenario",
            "duplicate-on-retry",
            "--retries",
            "0",
            "--idempotent",
        ];
        let r = parse(&given).unwrap();
        assert_eq!((r.retries, r.idempotent), (0, true));
        // A run.json written before the options existed reads them as off.
        let mut json = serde_json::to_value(&plain).unwrap();
        let obj = json.as_object_mut().unwrap();
        obj.remove("retries");
        obj.remove("idempotent");
        obj.remove("producers");
        let old: Resolved = serde_json::from_value(json).unwrap();
        assert_eq!((old.retries, old.idempotent), (0, false));
        assert_eq!(old.producers, ProducerMix::Given);
    }

    #[test]
    fn producers_are_kafkas_default_unless_an_option_or_a_scenario_sets_them() {
        let default = parse(&["--seed", "1"]).unwrap();
        assert_eq!(default.producers, ProducerMix::KafkaDefault);
        for given in [
            &["--retries", "0"][..],
            &["--retries", "3"],
            &["--idempotent"],
            &["--acks", "1"],
            &["--scenario", "kip101-data-loss"],
        ] {
            let r = parse(given).unwrap();
            assert_eq!(r.producers, ProducerMix::Given, "{given:?}");
        }
        // Replayed, a run keeps its producers.
        for argv in [&["--seed", "1"][..], &["--retries", "0"]] {
            let r = parse(argv).unwrap();
            let again = RunArgs::from(r.clone()).resolve_with(|_| Ok("broker".into()));
            assert_eq!(again.unwrap().producers, r.producers, "{argv:?}");
        }
    }

    #[test]
    fn bin_takes_a_maelstrom_workload_and_faults_that_need_no_roles() {
        let node = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/maelstrom/echo.py");
        let a = parse(&[
            "--bin",
            node,
            "-w",
            "lin-kv",
            "--node-count",
            "5",
            "--seed",
            "1",
        ])
        .unwrap();
        assert_eq!((a.workload, a.nodes), (WorkloadKind::LinKv, 5));
        assert_eq!(a.nemesis, BLACK_BOX_DEFAULT_FAULTS);
        assert!(a.bin.as_ref().unwrap().is_absolute());
        assert_eq!(a.bin_sha256.as_ref().map(String::len), Some(64));
        assert_eq!(a.broker_bin, PathBuf::new(), "no broker is looked for");
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(json["workload"], "lin-kv");
        assert_eq!(serde_json::from_value::<Resolved>(json).unwrap(), a);
        let again = RunArgs::from(a.clone())
            .resolve_with(|_| panic!("no broker is looked for"))
            .unwrap();
        assert_eq!(again, a);
        let args = parse(&[
            "--bin",
            node,
            "-w",
            "echo",
            "--bin-arg",
            "-x",
            "--bin-arg",
            "y",
        ]);
        assert_eq!(args.unwrap().bin_args, ["-x", "y"]);
        // The settle time before the final phase: Maelstrom's 10 s unless given,
        // kept for a replay; a negative one refused.
        assert_eq!(a.settle, DEFAULT_SETTLE);
        let quick = parse(&["--bin", node, "-w", "broadcast", "--settle", "0.5"]).unwrap();
        assert_eq!(quick.settle(), std::time::Duration::from_millis(500));
        let again = RunArgs::from(quick.clone()).resolve_with(|_| panic!("no broker"));
        assert_eq!(again.unwrap().settle, 0.5);
        assert!(parse(&["--bin", node, "-w", "broadcast", "--settle", "-1"]).is_err());
        assert!(parse(&["--settle", "1"]).is_err(), "--settle needs --bin");
        // Storage faults put the nodes on the fault filesystem, and only them; a
        // power cut's kills cut power; without the filesystem they are refused.
        assert!(!a.fault_fs && !a.power_cut_on_kill && !a.clocks);
        let cuts = parse(&[
            "--bin",
            node,
            "-w",
            "echo",
            "--nemesis",
            "lose-unflushed,kill",
        ]);
        let cuts = cuts.unwrap();
        assert!(cuts.fault_fs && cuts.power_cut_on_kill);
        let clocks = parse(&["--bin", node, "-w", "echo", "--nemesis", "clock-step"]);
        assert!(clocks.unwrap().clocks);
        let e = parse(&[
            "--bin",
            node,
            "-w",
            "echo",
            "--nemesis",
            "disk",
            "--no-fault-fs",
        ]);
        assert!(format!("{:?}", e.unwrap_err()).contains("drop --no-fault-fs"));
        for (argv, says) in [
            (
                &["--bin", node, "-w", "queue"][..],
                "runs one of Maelstrom's workloads",
            ),
            (&["--bin", node], "runs one of Maelstrom's workloads"),
            (&["-w", "lin-kv"], "is a Maelstrom workload"),
            (
                &["--bin", node, "-w", "echo", "--nemesis", "isolate-leader"],
                "with --bin: kill",
            ),
            (
                &["--bin", node, "-w", "echo", "--nemesis", "replication"],
                "a leader",
            ),
            (
                &[
                    "--bin",
                    node,
                    "-w",
                    "echo",
                    "--scenario",
                    "kip101-data-loss",
                ],
                "no roles",
            ),
            (&["--bin", "/no/such/node", "-w", "echo"], "no such file"),
        ] {
            let e = parse(argv).unwrap_err();
            assert!(e.contains(says), "{argv:?}: {e}");
        }
        let plain = parse(&["--seed", "1"]).unwrap();
        assert_eq!(
            (plain.bin.as_ref(), plain.nemesis.as_slice()),
            (None, &[FaultKind::Replication][..])
        );
    }

    #[test]
    fn a_missing_broker_is_a_harness_failure_not_bad_usage() {
        let mut all = vec!["run"];
        all.extend_from_slice(&["--seed", "1"]);
        let args = T::try_parse_from(all).unwrap().args;
        let e = args
            .resolve_with(|_| Err(HarnessError::new("no broker")))
            .unwrap_err();
        assert_eq!(e, ResolveError::Harness(HarnessError::new("no broker")));
    }
}
