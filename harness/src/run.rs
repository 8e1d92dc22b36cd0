//! `watermark run`: one campaign from start to verdict.
//!
//! make the run folder → run.json → start the cluster → create the topic → workload
//! and nemesis until the time limit → end every fault → heal, resume and restart
//! everything → wait (bounded) until the cluster converged → final drain (queue
//! workload only: a register's history needs none) → dump every replica's log →
//! check (the queue analysis, or linearizability per key for registers) →
//! results.json → summary → report.html and junit.xml → exit code.
//!
//! Whatever happens, no broker process outlives the campaign: the cluster kills its
//! processes when dropped, and Ctrl-C / SIGTERM stop the campaign, kill every child
//! and exit 130, leaving the history streamed so far readable by `watermark check`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use checker::history::{EventType, Process};
use checker::queue;
use checker::verdict::{CheckerResult, Results, Validity};
use tokio::sync::watch;
use workloads::client::ClientConfig;
use workloads::queue::QueueConfig;
use workloads::register::RegisterConfig;

use crate::cluster::{Cluster, ClusterConfig};
use crate::error::{HarnessError, Result};
use crate::exit::Exit;
use crate::nemesis::{Nemesis, NemesisEvent, Planner};
use crate::options::{ResolveError, Resolved, WorkloadKind};
use crate::progress::{self, Progress, Tally};
use crate::store::{self, FinalLogs, History, HistoryFile, RunFolder, RunRecord};

pub use crate::options::RunArgs;

/// How long the cluster may take to start and elect leaders.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the healed cluster may take to converge (full ISR, HW = LEO).
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the final drain may take.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(60);
/// How long in-flight operations may take to finish after the time limit.
const WORKLOAD_STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// The linearizability checker's budget; past it the verdict is unknown.
const LINEARIZABILITY_TIME_LIMIT: Duration = Duration::from_secs(120);

/// Run `watermark run` from the command line.
pub fn run(args: RunArgs) -> Exit {
    match args.resolve() {
        Ok(args) => execute(args, std::env::args().collect(), None),
        Err(e) => refused("watermark run", e),
    }
}

/// Say why options were refused; the exit code says whose fault it is.
pub fn refused(command: &str, e: ResolveError) -> Exit {
    match e {
        ResolveError::Usage(msg) => {
            eprintln!("{command}: {msg}");
            Exit::Usage
        }
        ResolveError::Harness(e) => {
            eprintln!("{command}: {e}");
            Exit::HarnessFailed
        }
    }
}

/// Run a campaign with resolved options; `replay_of` names the run folder a replay
/// repeats.
pub fn execute(args: Resolved, command_line: Vec<String>, replay_of: Option<PathBuf>) -> Exit {
    crate::cluster::supervisor::install_panic_hook();
    let seed = args.seed;
    eprintln!("watermark: seed {seed} (repeat this run with --seed {seed})");
    let started = SystemTime::now();
    let folder = match RunFolder::create(&args.results, &args.workload.to_string(), seed, started) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("watermark run: {e}");
            return Exit::HarnessFailed;
        }
    };
    eprintln!("watermark: run folder {}", folder.path.display());
    let mut record = RunRecord::new(&args, command_line, started, replay_of);
    if let Err(e) = folder.write_json(&folder.run_json(), &record) {
        eprintln!("watermark run: {e}");
        return Exit::HarnessFailed;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("watermark run: cannot start the async runtime: {e}");
            return Exit::HarnessFailed;
        }
    };
    let exit = runtime.block_on(async {
        tokio::select! {
            exit = campaign(&args, &folder, &mut record) => exit,
            signal = interrupted() => {
                eprintln!(
                    "\nwatermark: {signal}: stopping; every broker process is killed; \
                     the history so far is in {}",
                    folder.history().display()
                );
                Exit::Interrupted
            }
        }
    });
    // Dropping the runtime drops every task, and with them the cluster, which kills
    // its processes.
    runtime.shutdown_timeout(Duration::from_secs(10));
    crate::cluster::supervisor::kill_all();
    record.finish(SystemTime::now(), exit);
    if let Err(e) = folder.write_json(&folder.run_json(), &record) {
        eprintln!("watermark run: {e}");
    }
    if matches!(exit, Exit::Valid | Exit::Invalid | Exit::Unknown) {
        // The verdict stands whatever happens to the report; a failure is only said.
        match crate::report::write_reports(&folder.path) {
            Ok(w) => println!("report: {}", w.html.display()),
            Err(e) => eprintln!("watermark run: no report: {e}"),
        }
    }
    exit
}

/// Wait for Ctrl-C or SIGTERM; says which.
async fn interrupted() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        // Without signal handlers, the default action (terminate) still applies and
        // the children die with us (PR_SET_PDEATHSIG).
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => "interrupted (Ctrl-C)",
        _ = term.recv() => "terminated (SIGTERM)",
    }
}

/// The campaign; a harness failure is reported and becomes exit 3. How the end
/// of the run went is noted in `record` (run.json).
async fn campaign(args: &Resolved, folder: &RunFolder, record: &mut RunRecord) -> Exit {
    match campaign_inner(args, folder, record).await {
        Ok(exit) => exit,
        Err(e) => {
            eprintln!("watermark run: {e}");
            eprintln!(
                "watermark run: the run folder {} holds the brokers' logs (nodes/*/broker.log)",
                folder.path.display()
            );
            Exit::HarnessFailed
        }
    }
}

async fn campaign_inner(
    args: &Resolved,
    folder: &RunFolder,
    record: &mut RunRecord,
) -> Result<Exit> {
    let origin = Instant::now();
    let tally = Arc::new(Tally::default());
    let history = Arc::new(History::new(
        HistoryFile::create(&folder.history(), origin)?,
        tally.clone(),
    ));
    let limit = args.time_limit();
    let mut progress = Progress::start(limit);
    progress.phase("starting the cluster");

    let cluster = Cluster::start(ClusterConfig {
        broker_bin: args.broker_bin.clone(),
        nodes: args.nodes,
        root: folder.nodes(),
        node_args: args.node_args(),
        controller_args: args.controller_args(),
        start_timeout: START_TIMEOUT,
    })
    .await
    .map_err(|e| HarnessError::new(format!("the cluster did not start: {e}")))?;
    let mut cluster = cluster;
    let client_config = ClientConfig::new(cluster.client_addrs(), cluster.controller_addr());

    progress.phase("creating the topic");
    let topic = match args.workload {
        WorkloadKind::Queue => workloads::queue::TOPIC,
        WorkloadKind::Register => workloads::register::TOPIC,
    };
    cluster
        .create_topic(
            topic,
            args.partitions,
            args.replication_factor,
            args.min_insync,
        )
        .await?;

    let seed = args.seed;
    let concurrency = args.concurrency;
    let queue_config = QueueConfig {
        partitions: args.partitions,
        acks: args.acks.to_client(),
        concurrency,
        rate: args.rate,
        seed,
        client: client_config.clone(),
    };
    let register_config = RegisterConfig {
        partitions: args.partitions,
        concurrency,
        rate: args.rate,
        seed,
        linearizable_reads: args.linearizable_reads,
        client: client_config,
    };

    // The campaign proper: clients and faults until the time limit. The nemesis
    // ends its faults at the limit; the clients stop then too, letting operations
    // in flight complete.
    progress.begin_running();
    let (stop_tx, stop_rx) = watch::channel(false);
    let workload = {
        let recorder: Arc<dyn workloads::recorder::Recorder> = history.clone();
        match args.workload {
            WorkloadKind::Queue => {
                let config = queue_config.clone();
                tokio::spawn(async move { workloads::queue::run(&config, recorder, stop_rx).await })
            }
            WorkloadKind::Register => {
                let config = register_config.clone();
                tokio::spawn(
                    async move { workloads::register::run(&config, recorder, stop_rx).await },
                )
            }
        }
    };
    let planner = Planner::new(
        seed,
        &args.nemesis,
        &cluster.node_ids(),
        args.partitions,
        args.nemesis_interval(),
    );
    let mut nemesis = Nemesis::new(planner, topic);
    let mut notes = Vec::new();
    {
        let (history, fault_tally) = (history.clone(), tally.clone());
        let mut on_event = move |e: NemesisEvent| {
            fault_tally.nemesis(&e.f, &e.value);
            history.nemesis(EventType::Info, &e.f, e.value);
        };
        let started = Instant::now();
        // A scenario's script runs to its end instead of the time limit.
        let scenario = args.scenario;
        let run = async {
            match scenario {
                Some(s) => s.run(&mut cluster, topic, &mut on_event).await,
                None => nemesis.run(&mut cluster, limit, &mut on_event).await,
            }
        };
        tokio::pin!(run);
        let mut ticker = tokio::time::interval(Duration::from_millis(250));
        let result = loop {
            tokio::select! {
                r = &mut run => break r,
                _ = ticker.tick() => {
                    progress.tick(&tally);
                    if scenario.is_none() && started.elapsed() >= limit && !*stop_tx.borrow() {
                        let _ = stop_tx.send(true);
                        progress.phase("ending faults");
                    }
                }
            }
        };
        if let Err(e) = result {
            notes.push(format!("the nemesis failed: {e}"));
        }
    }
    let _ = stop_tx.send(true);
    progress.phase("waiting for operations in flight");
    match tokio::time::timeout(WORKLOAD_STOP_TIMEOUT, workload).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(HarnessError::new(format!("the workload task failed: {e}"))),
        Err(_) => {
            return Err(HarnessError::new(format!(
                "client operations still running {}s after the time limit",
                WORKLOAD_STOP_TIMEOUT.as_secs()
            )));
        }
    };

    // The end of the run: heal, converge, drain, dump.
    progress.phase("healing the cluster");
    cluster.heal_all().await?;
    progress.phase("waiting for the cluster to converge");
    let mut complete = true;
    if let Err(e) = cluster.wait_converged(CONVERGE_TIMEOUT).await {
        complete = false;
        notes.push(format!(
            "the healed cluster did not converge within {}s: {e}",
            CONVERGE_TIMEOUT.as_secs()
        ));
    }
    if args.workload == WorkloadKind::Queue {
        progress.phase("draining every partition (final-poll)");
        let drain_deadline = Instant::now() + DRAIN_TIMEOUT;
        // The drain runs as a process number no client ever used.
        let first_free = history
            .events()
            .iter()
            .filter_map(|e| match e.process {
                Process::Client(p) => Some(p + 1),
                Process::Nemesis => None,
            })
            .max()
            .unwrap_or(0);
        if let Err(e) =
            workloads::queue::final_drain(&queue_config, &*history, first_free, drain_deadline)
                .await
        {
            complete = false;
            notes.push(e);
        }
    }
    progress.phase("dumping every replica's log");
    if let Err(e) = cluster
        .dump_logs(|id, text| folder.write_final_log(id, text))
        .await
    {
        complete = false;
        notes.push(format!(
            "the replicas' final logs could not all be dumped: {e}"
        ));
    }
    if let Err(e) = cluster.shutdown().await {
        notes.push(format!("stopping the cluster: {e}"));
    }
    if let Some(e) = history.write_failure() {
        notes.push(e);
    }

    progress.phase("checking");
    let events = history.events();
    let mut checkers = BTreeMap::new();
    match args.workload {
        WorkloadKind::Queue => {
            let result = check(&events, &folder.nodes(), complete, &mut notes);
            checkers.insert(workloads::queue::CHECKER.to_string(), result);
        }
        WorkloadKind::Register => {
            let result = check_registers(&events);
            checkers.insert(workloads::register::CHECKER.to_string(), result);
        }
    }
    let results = Results::new(checkers);
    record.complete = Some(complete);
    record.notes = notes.clone();
    store::write_json_atomic(&folder.results_json(), &results)?;
    progress.finish();
    print!(
        "{}",
        progress::summary(&results, &notes, tally.counts(), &folder.path)
    );
    Ok(match results.valid {
        Validity::Valid => Exit::Valid,
        Validity::Invalid => Exit::Invalid,
        Validity::Unknown => Exit::Unknown,
    })
}

/// Judge a register history: each key, on its own, against the cas-register model
/// (a cas that failed did not happen; one in doubt may have). The replicas' final
/// logs play no part, so an incomplete end of run does not weaken the verdict.
fn check_registers(events: &[checker::history::Event]) -> CheckerResult {
    let options = checker::linear::Options {
        time_limit: Some(LINEARIZABILITY_TIME_LIMIT),
        ..Default::default()
    };
    checker::linear::check(events, checker::linear::ModelKind::CasRegister, &options)
        .unwrap_or_else(|e| CheckerResult::unknown(format!("the history cannot be analysed: {e}")))
}

/// Judge the history against the replicas' final logs. An incomplete end of run
/// (no convergence, no full drain, missing logs) caps a clean verdict at unknown.
fn check(
    events: &[checker::history::Event],
    nodes: &Path,
    complete: bool,
    notes: &mut Vec<String>,
) -> CheckerResult {
    let logs = FinalLogs::read(nodes);
    let logs_ok = logs.missing.is_empty() && logs.errors.is_empty();
    notes.extend(logs.errors);
    notes.extend(
        logs.missing
            .iter()
            .map(|f| format!("no final log {}", f.display())),
    );
    let replicas = logs.replicas;
    let mut result = queue::check(events, &replicas)
        .unwrap_or_else(|e| CheckerResult::unknown(format!("the history cannot be analysed: {e}")));
    if !(complete && logs_ok) {
        result.cap_unknown(
            "the end of the run was incomplete (see the notes), so lost writes cannot be ruled out",
        );
    }
    result
}
