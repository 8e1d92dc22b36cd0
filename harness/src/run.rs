//! `watermark run`: one campaign from start to verdict.
//!
//! make the run folder → run.json → start the cluster → create the workload's topic →
//! clients and nemesis until the time limit → end every fault → heal, resume and
//! restart everything → wait (bounded) until the cluster converged → the workload's
//! final step (the queue's drain; a register needs none) → dump every replica's log →
//! the checker, as `watermark check` judges the run folder → results.json → summary →
//! report.html and junit.xml → exit code. The workload is a value ([`Workload`]):
//! nothing here depends on which, but for the model its kind names
//! ([`WorkloadKind::model`](crate::options::WorkloadKind::model)).
//!
//! Whatever happens, no broker process outlives the campaign: the cluster kills its
//! processes when dropped, and Ctrl-C / SIGTERM stop the campaign, kill every child
//! and exit 130, leaving the history streamed so far readable by `watermark check`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use checker::format::Format;
use checker::history::EventType;
use checker::verdict::{CheckerResult, Results, Validity};
use tokio::sync::watch;
use workloads::Workload;
use workloads::client::ClientConfig;

use crate::check::checker_options;
use crate::cluster::{Cluster, ClusterConfig};
use crate::error::{HarnessError, Result};
use crate::exit::Exit;
use crate::nemesis::{
    Aimed, Coverage, Nemesis, NemesisEvent, Planner, ReplicationNemesis, view_of,
};
use crate::options::{ResolveError, Resolved, RunArgs};
use crate::progress::{self, Progress, Tally};
use crate::store::{self, FinalLogs, History, HistoryFile, RunFolder, RunRecord};

/// How long the cluster may take to start and elect leaders.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the healed cluster may take to converge (full ISR, HW = LEO).
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the workload's final step (the queue's drain) may take.
const FINAL_STEP_TIMEOUT: Duration = Duration::from_secs(60);
/// How long in-flight operations may take to finish after the time limit.
const WORKLOAD_STOP_TIMEOUT: Duration = Duration::from_secs(30);

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
    let tally = Arc::new(Tally::default());
    let history = Arc::new(History::new(
        HistoryFile::create(&folder.history(), Instant::now())?,
        tally.clone(),
    ));
    let mut progress = Progress::start(args.time_limit());
    progress.phase("starting the cluster");
    let mut cluster = Cluster::start(ClusterConfig {
        broker_bin: args.broker_bin.clone(),
        nodes: args.nodes,
        root: folder.nodes(),
        node_args: args.node_args(),
        controller_args: args.controller_args(),
        start_timeout: START_TIMEOUT,
    })
    .await
    .map_err(|e| HarnessError::new(format!("the cluster did not start: {e}")))?;
    let workload = args.workload(ClientConfig::new(
        cluster.client_addrs(),
        cluster.controller_addr(),
    ));

    progress.phase("creating the topic");
    cluster
        .create_topic(
            workload.topic(),
            args.partitions,
            args.replication_factor,
            args.min_insync,
        )
        .await?;

    let mut notes = Vec::new();
    let mut coverage = clients_and_faults(
        args,
        &mut cluster,
        &*workload,
        &history,
        &mut progress,
        &mut notes,
    )
    .await?;
    let complete = end_of_run(
        cluster,
        &*workload,
        &history,
        folder,
        &mut progress,
        &mut notes,
    )
    .await?;

    progress.phase("checking");
    let result = judge(
        args,
        &*workload,
        &history.events(),
        folder,
        complete,
        &mut notes,
    );
    let results = Results::new(BTreeMap::from([(workload.checker().to_string(), result)]));
    record.complete = Some(complete);
    record.notes = notes.clone();
    coverage.recount(&folder.nodes());
    coverage.finish(&args.reachable_transitions());
    let results_json = coverage
        .beside(&results)
        .map_err(|e| HarnessError::new(format!("cannot serialize the results: {e}")))?;
    store::write_json(&folder.results_json(), &results_json)?;
    progress.finish();
    print!(
        "{}",
        progress::summary(&results, &notes, tally.counts(), &folder.path)
    );
    print!("{}", coverage.summary());
    Ok(match results.valid {
        Validity::Valid => Exit::Valid,
        Validity::Invalid => Exit::Invalid,
        Validity::Unknown => Exit::Unknown,
    })
}

/// The campaign proper: the clients and the faults (the replication package, a
/// fault list's random schedule, or a scenario's script) until the time limit. The
/// nemesis ends its faults at the limit; the clients stop then too, letting
/// operations in flight complete. A nemesis that failed is noted; clients that do
/// not stop are a harness failure. Returns the coverage the nemesis observed.
async fn clients_and_faults(
    args: &Resolved,
    cluster: &mut Cluster,
    workload: &dyn Workload,
    history: &Arc<History>,
    progress: &mut Progress,
    notes: &mut Vec<String>,
) -> Result<Coverage> {
    let limit = args.time_limit();
    let tally = history.tally();
    let since_ms = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut package = args.replication_package().then(|| {
        let settings = args.package_settings(&cluster.node_ids());
        let planner = Aimed::new(args.seed, settings, args.reachable_transitions());
        ReplicationNemesis::new(
            planner,
            workload.topic(),
            cluster.root(),
            Coverage::new(since_ms),
        )
    });
    // Without the package, the coverage looks at the leader epochs before and after.
    let mut coverage = Coverage::new(since_ms);
    coverage.observe(&view_of(cluster, workload.topic()).await);
    progress.begin_running();
    let (stop_tx, stop_rx) = watch::channel(false);
    let clients = tokio::spawn(workload.run(history.clone(), stop_rx));
    let planner = Planner::new(
        args.seed,
        &args.nemesis,
        &cluster.node_ids(),
        args.partitions,
        args.nemesis_interval(),
    );
    let mut nemesis = Nemesis::new(planner, workload.topic());
    {
        let (history, fault_tally) = (history.clone(), tally.clone());
        let mut on_event = move |e: NemesisEvent| {
            if !e.is_decision() {
                fault_tally.nemesis(&e.f, &e.value);
            }
            history.nemesis(EventType::Info, &e.f, e.value);
        };
        let started = Instant::now();
        // A scenario's script runs to its end instead of the time limit.
        let scenario = args.scenario;
        let run = async {
            match (scenario, package.as_mut()) {
                (Some(s), _) => s.run(cluster, workload.topic(), &mut on_event).await,
                (None, Some(p)) => p.run(cluster, limit, &mut on_event).await,
                (None, None) => nemesis.run(cluster, limit, &mut on_event).await,
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
    match package {
        Some(p) => coverage = p.into_coverage(),
        None => coverage.observe(&view_of(cluster, workload.topic()).await),
    }
    let _ = stop_tx.send(true);
    progress.phase("waiting for operations in flight");
    match tokio::time::timeout(WORKLOAD_STOP_TIMEOUT, clients).await {
        Ok(Ok(())) => Ok(coverage),
        Ok(Err(e)) => Err(HarnessError::new(format!("the workload task failed: {e}"))),
        Err(_) => Err(HarnessError::new(format!(
            "client operations still running {}s after the time limit",
            WORKLOAD_STOP_TIMEOUT.as_secs()
        ))),
    }
}

/// The end of the run: heal everything, wait for the cluster to converge, the
/// workload's final step, dump every replica's log into the run folder, stop the
/// cluster. Whether it all went through is returned (see `RunRecord::complete`);
/// what did not is noted.
async fn end_of_run(
    mut cluster: Cluster,
    workload: &dyn Workload,
    history: &History,
    folder: &RunFolder,
    progress: &mut Progress,
    notes: &mut Vec<String>,
) -> Result<bool> {
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
    if let Some(step) = workload.final_step() {
        progress.phase(step);
        let deadline = Instant::now() + FINAL_STEP_TIMEOUT;
        if let Err(e) = workload
            .finish(history, history.first_free_process(), deadline)
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
    Ok(complete)
}

/// Judge the history as `watermark check` judges the run folder (the workload's
/// model, within `--checker-time-limit` and a memory budget that follows the
/// machine), with the replicas' final logs if the workload reads them. An
/// incomplete end of run (no convergence, no full final step, missing logs) does
/// not change the verdict — the checker says unknown where what was recorded
/// cannot decide — but it is noted, and the summary shows why.
fn judge(
    args: &Resolved,
    workload: &dyn Workload,
    events: &[checker::history::Event],
    folder: &RunFolder,
    complete: bool,
    notes: &mut Vec<String>,
) -> CheckerResult {
    let mut replicas = Vec::new();
    let mut logs_ok = true;
    if workload.judges_final_logs() {
        let logs = FinalLogs::read(&folder.nodes());
        logs_ok = logs.missing.is_empty() && logs.errors.is_empty();
        notes.extend(logs.errors);
        notes.extend(
            logs.missing
                .iter()
                .map(|f| format!("no final log {}", f.display())),
        );
        replicas = logs.replicas;
    }
    let options = checker_options(args.checker_time_limit());
    let model = args.workload.model();
    let checked = checker::check::check(Format::Jsonl, events, model, &replicas, &options)
        .map(|r| r.checkers.into_values().next());
    let mut result = match checked {
        Ok(Some(result)) => result,
        Ok(None) => CheckerResult::unknown("the checker returned no verdict"),
        Err(e) => CheckerResult::unknown(format!("the history cannot be analysed: {e}")),
    };
    if workload.judges_final_logs() && !(complete && logs_ok) {
        result.notes.push(
            "the end of the run was incomplete (see the run's notes): the verdict is on what the run recorded"
                .to_string(),
        );
    }
    result
}
