//! `watermark run`: one campaign from start to verdict.
//!
//! make the run folder (`results/current` points at it) → run.json → start the
//! cluster (from here on, a broker that dies on its own is a `crash` event:
//! `crate::judge::crashes`) → create the workload's topics → clients and nemesis until the time
//! limit → end every fault → heal, resume and restart everything → wait (bounded)
//! until the cluster converged → the workload's final step (the queue's drain; a
//! register needs none) → dump every replica's log → the checkers and
//! the crashes, as `watermark
//! check` judges the run folder → results.json → summary → report.html and
//! junit.xml → `results/latest` moved to it → exit code. A run that ends without
//! a verdict (the harness failed, or Ctrl-C) still writes run.json's outcome and a
//! junit.xml whose errored test case says why. The workload is a value
//! ([`Workload`]): nothing here depends on which, but for the checkers its kind
//! names ([`judge`](crate::judge)).
//!
//! Whatever happens, no broker process outlives the campaign: the cluster kills its
//! processes when dropped, and Ctrl-C / SIGTERM stop the campaign, kill every child
//! and exit 130, leaving the history streamed so far readable by `watermark check`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use checker::format::Format;
use checker::history::EventType;
use checker::verdict::{CheckerResult, Results, Validity};
use tokio::sync::watch;
use workloads::Workload;
use workloads::client::ClientConfig;

use crate::commands::check::checker_options;
use crate::console::ConsoleLog;
use crate::console::progress::{self, Progress};
use crate::error::{HarnessError, Result};
use crate::exit::Exit;
use crate::judge::crashes;
use crate::nemesis::{
    Aimed, Coverage, FaultList, Interpreter, NemesisEvent, Package, Planner, Source,
};
use crate::options::{ResolveError, Resolved, RunArgs};
use crate::store::{self, FinalLogs, History, HistoryFile, RunFolder, RunRecord, Tally};
use crate::system::System;
use crate::system::broker::{Cluster, ClusterConfig};
use crate::{errln, outln};

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
            errln!("{command}: {msg}");
            Exit::Usage
        }
        ResolveError::Harness(e) => {
            errln!("{command}: {e}");
            Exit::HarnessFailed
        }
    }
}

/// Run a campaign with resolved options; `replay_of` names the run folder a replay
/// repeats.
pub fn execute(args: Resolved, command_line: Vec<String>, replay_of: Option<PathBuf>) -> Exit {
    execute_linked(args, command_line, replay_of, None)
}

/// [`execute`], keeping `<link_from>/current` and `latest` on this run as well as
/// those of its own results directory (a campaign of a series, whose results
/// directory is the series' folder inside `link_from`).
pub fn execute_linked(
    args: Resolved,
    command_line: Vec<String>,
    replay_of: Option<PathBuf>,
    link_from: Option<&Path>,
) -> Exit {
    crate::system::process::supervisor::install_panic_hook();
    let seed = args.seed;
    let started = SystemTime::now();
    let created = RunFolder::create(&args.results, &args.workload.to_string(), seed, started)
        .and_then(|mut f| {
            if let Some(dir) = link_from {
                f.link_from(dir)?;
            }
            Ok(f)
        });
    let folder = match created {
        Ok(f) => f,
        Err(e) => {
            errln!("watermark: seed {seed} (repeat this run with --seed {seed})");
            errln!("watermark run: {e}");
            return Exit::HarnessFailed;
        }
    };
    // From here on, what the harness says is also in the run folder's watermark.log.
    let _log = ConsoleLog::open(&folder.watermark_log())
        .inspect_err(|e| eprintln!("watermark run: {e}; the console output is not kept"))
        .ok();
    errln!("watermark: seed {seed} (repeat this run with --seed {seed})");
    errln!("watermark: run folder {}", folder.path.display());
    let mut record = RunRecord::new(&args, command_line, started, replay_of);
    if let Err(e) = folder.write_json(&folder.run_json(), &record) {
        errln!("watermark run: {e}");
        return end(
            &folder,
            &mut record,
            Exit::HarnessFailed,
            Some(e.to_string()),
        );
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let reason = format!("cannot start the async runtime: {e}");
            errln!("watermark run: {reason}");
            return end(&folder, &mut record, Exit::HarnessFailed, Some(reason));
        }
    };
    let (exit, failure) = runtime.block_on(async {
        tokio::select! {
            ended = campaign(&args, &folder, &mut record) => ended,
            signal = interrupted() => {
                errln!(
                    "\nwatermark: {signal}: stopping; every broker process is killed; \
                     the history so far is in {}",
                    folder.history().display()
                );
                let reason = format!(
                    "{signal}: stopped before the verdict; the history recorded so far is in history.jsonl"
                );
                (Exit::Interrupted, Some(reason))
            }
        }
    });
    // Dropping the runtime drops every task, and with them the cluster, which kills
    // its processes.
    runtime.shutdown_timeout(Duration::from_secs(10));
    crate::system::process::supervisor::kill_all();
    end(&folder, &mut record, exit, failure)
}

/// The end of every run, whatever its outcome: run.json completed, then the
/// report and junit.xml for a verdict, or a junit.xml whose errored test case gives
/// `failure` (the harness failed, or the run was interrupted) — CI always finds a
/// junit.xml that says how the run went.
fn end(folder: &RunFolder, record: &mut RunRecord, exit: Exit, failure: Option<String>) -> Exit {
    record.finish(SystemTime::now(), exit);
    record.failure = failure.clone();
    if let Err(e) = folder.write_json(&folder.run_json(), &record) {
        errln!("watermark run: {e}");
    }
    if matches!(exit, Exit::Valid | Exit::Invalid | Exit::Unknown) {
        // The verdict stands whatever happens to the report; a failure is only said.
        match crate::report::write_reports(&folder.path) {
            Ok(w) => outln!("report: {}", w.html.display()),
            Err(e) => {
                errln!("watermark run: no report: {e}");
                let reason = format!(
                    "the verdict ({}) is in results.json, but no report could be rendered: {e}",
                    exit.outcome()
                );
                write_unjudged_junit(folder, "harness-failed", &reason);
            }
        }
    } else {
        let reason = failure.unwrap_or_else(|| format!("the run ended {}", exit.outcome()));
        write_unjudged_junit(folder, exit.outcome(), &reason);
    }
    // Only now is the run over: `latest` moves to it, `current` goes.
    if let Err(e) = folder.finish() {
        errln!("watermark run: {e}");
    }
    exit
}

fn write_unjudged_junit(folder: &RunFolder, outcome: &str, reason: &str) {
    if let Err(e) = crate::report::write_unjudged_junit(&folder.path, outcome, reason) {
        errln!("watermark run: no junit.xml: {e}");
    }
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

/// The campaign; a harness failure is reported and becomes exit 3, with its
/// message. How the end of the run went is noted in `record` (run.json).
async fn campaign(
    args: &Resolved,
    folder: &RunFolder,
    record: &mut RunRecord,
) -> (Exit, Option<String>) {
    match campaign_inner(args, folder, record).await {
        Ok(exit) => (exit, None),
        Err(e) => {
            errln!("watermark run: {e}");
            errln!(
                "watermark run: the run folder {} holds the brokers' logs (nodes/*/broker.log)",
                folder.path.display()
            );
            (Exit::HarnessFailed, Some(e.to_string()))
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
        settings: args.broker.clone(),
        dedicated_controller: args.dedicated_controller,
        start_timeout: START_TIMEOUT,
    })
    .await
    .map_err(|e| HarnessError::new(format!("the cluster did not start: {e}")))?;
    // A broker that dies on its own is a crash event, written as it is detected.
    let crash_recorder = cluster
        .take_crash_reports()
        .map(|reports| crashes::record(reports, history.clone()));
    let workload = args.workload(ClientConfig::new(
        cluster.client_addrs(),
        cluster.controller_addr(),
    ));

    progress.phase(match workload.topics() {
        [_] => "creating the topic",
        _ => "creating the topics",
    });
    for topic in workload.topics() {
        cluster
            .create_topic(
                topic,
                args.partitions,
                args.replication_factor,
                args.min_insync,
            )
            .await?;
    }

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
    if let Some(recorder) = crash_recorder {
        crashes::flush(recorder).await;
    }

    progress.phase("checking");
    let mut results = judge(
        args,
        &*workload,
        &history.events(),
        folder,
        complete,
        &mut notes,
    );
    crashes::add_verdict(&mut results, &history.events(), args.allow_crashes);
    record.complete = Some(complete);
    record.notes = notes.clone();
    coverage.recount(&folder.nodes());
    coverage.finish(&args.reachable_transitions());
    let results_json = coverage
        .beside(&results)
        .map_err(|e| HarnessError::new(format!("cannot serialize the results: {e}")))?;
    store::write_json(&folder.results_json(), &results_json)?;
    progress.finish();
    outln!(
        "{}",
        progress::summary(&results, &notes, tally.counts(), &folder.path).trim_end()
    );
    for line in coverage.summary().lines() {
        outln!("{line}");
    }
    Ok(match results.valid {
        Validity::Valid => Exit::Valid,
        Validity::Invalid => Exit::Invalid,
        Validity::Unknown => Exit::Unknown,
    })
}

/// The campaign proper: the clients and the faults (the schedule of
/// [`schedule`]) until the time limit. The nemesis ends its faults at the limit; the
/// clients stop then too, letting operations in flight complete (a scenario's
/// script runs to its end instead). A nemesis that failed is noted; clients that do
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
    let mut source = schedule(args, cluster, workload);
    let runs_to_end = source.to_the_end();
    progress.begin_running();
    let (stop_tx, stop_rx) = watch::channel(false);
    let clients = tokio::spawn(workload.run(history.clone(), stop_rx));
    let coverage = {
        let (history, fault_tally) = (history.clone(), tally.clone());
        let mut on_event = move |e: NemesisEvent| {
            if !e.is_decision() {
                fault_tally.nemesis(&e.f, &e.value);
            }
            history.nemesis(EventType::Info, &e.f, e.value);
        };
        let mut nemesis = Interpreter::new(
            cluster,
            workload.topics(),
            Coverage::new(since_ms),
            &mut on_event,
        );
        let started = Instant::now();
        let result = {
            let run = nemesis.play(&mut *source, limit);
            tokio::pin!(run);
            let mut ticker = tokio::time::interval(Duration::from_millis(250));
            loop {
                tokio::select! {
                    r = &mut run => break r,
                    _ = ticker.tick() => {
                        progress.tick(&tally);
                        if !runs_to_end && started.elapsed() >= limit && !*stop_tx.borrow() {
                            let _ = stop_tx.send(true);
                            progress.phase("ending faults");
                        }
                    }
                }
            }
        };
        if let Err(e) = result {
            notes.push(format!("the nemesis failed: {e}"));
        }
        nemesis.into_coverage()
    };
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

/// The campaign's schedule of faults: a scenario's script, the replication
/// package, or a fault list's random schedule.
fn schedule(args: &Resolved, cluster: &Cluster, workload: &dyn Workload) -> Box<dyn Source> {
    let topic = workload.topics()[0];
    let nodes = cluster.node_ids();
    if let Some(scenario) = args.scenario {
        return Box::new(scenario.script(topic, &nodes, args.dedicated_controller));
    }
    if args.replication_package() {
        let mut settings = args.package_settings(&nodes);
        settings.lossless_topics = workload
            .lossless_topics()
            .iter()
            .map(|t| t.to_string())
            .collect();
        let planner = Aimed::new(args.seed, settings, args.reachable_transitions());
        return Box::new(Package::new(planner));
    }
    let planner = Planner::new(
        args.seed,
        &args.nemesis,
        &nodes,
        args.partitions,
        args.nemesis_interval(),
    )
    .with_dedicated_controller(args.dedicated_controller);
    Box::new(FaultList::new(planner, topic))
}

/// The end of the run: heal everything, wait for the cluster to converge, the
/// workload's final step, dump every replica's log into the run folder, stop the
/// cluster. Whether it all went through is returned (see `RunRecord::complete`);
/// what did not is noted.
async fn end_of_run<S: System>(
    mut system: S,
    workload: &dyn Workload,
    history: &History,
    folder: &RunFolder,
    progress: &mut Progress,
    notes: &mut Vec<String>,
) -> Result<bool> {
    progress.phase("healing the cluster");
    system.heal_all().await?;
    progress.phase("waiting for the cluster to converge");
    let mut complete = true;
    if let Err(e) = system.wait_converged(CONVERGE_TIMEOUT).await {
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
    if let Err(e) = system
        .final_logs(&mut |id, text| folder.write_final_log(id, text))
        .await
    {
        complete = false;
        notes.push(format!(
            "the replicas' final logs could not all be dumped: {e}"
        ));
    }
    if let Err(e) = system.shutdown().await {
        notes.push(format!("stopping the cluster: {e}"));
    }
    if let Some(e) = history.write_failure() {
        notes.push(e);
    }
    Ok(complete)
}

/// Judge the history as `watermark check` judges the run folder (each workload's
/// checker on its operations, within `--checker-time-limit` and a memory budget
/// that follows the machine), with the replicas' final logs if the workload reads
/// them. An incomplete end of run (no convergence, no full final step, missing
/// logs) does not change the verdict — the checker says unknown where what was
/// recorded cannot decide — but it is noted, and the summary shows why.
fn judge(
    args: &Resolved,
    workload: &dyn Workload,
    events: &[checker::history::Event],
    folder: &RunFolder,
    complete: bool,
    notes: &mut Vec<String>,
) -> Results {
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
    let mut results =
        match crate::judge::judge(args.workload, Format::Jsonl, events, &replicas, &options) {
            Ok(results) => results,
            Err(e) => {
                let why = format!("the history cannot be analysed: {e}");
                let checkers = args
                    .workload
                    .parts()
                    .iter()
                    .map(|p| (p.checker().to_string(), CheckerResult::unknown(why.clone())))
                    .collect();
                Results::new(checkers)
            }
        };
    if workload.judges_final_logs() && !(complete && logs_ok) {
        // Only the queue's verdict needs a complete end (its lost writes).
        if let Some(r) = results.checkers.get_mut(workloads::queue::CHECKER) {
            r.notes.push(
                "the end of the run was incomplete (see the run's notes): the verdict is on what the run recorded"
                    .to_string(),
            );
        }
    }
    results
}
