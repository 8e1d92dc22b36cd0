//! One campaign, phase by phase: start the cluster and create the workload's topics,
//! run the clients and the schedule of faults until the time limit, end every fault
//! and heal, wait for the cluster to converge, the workload's final step, dump every
//! replica's log, judge — each phase a function, in the order it runs.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use checker::format::Format;
use checker::history::EventType;
use checker::verdict::{CheckerResult, Results, Validity};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use workloads::Workload;
use workloads::client::ClientConfig;

use crate::commands::check::checker_options;
use crate::console::progress::{self, Progress};
use crate::error::{HarnessError, Result};
use crate::exit::Exit;
use crate::judge::crashes;
use crate::nemesis::schedule_file::{ScheduleFile, ScheduleSource};
use crate::nemesis::{
    Aimed, Coverage, FaultList, Interpreter, NemesisEvent, Package, Planner, Source,
};
use crate::options::Resolved;
use crate::outln;
use crate::store::{self, FinalLogs, History, HistoryFile, RunFolder, RunRecord, Tally};
use crate::system::System;
use crate::system::broker::{Cluster, ClusterConfig};

use super::handover::{self, Handover};

/// How long the cluster may take to start and elect leaders.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the healed cluster may take to converge (full ISR, HW = LEO); the
/// broker's seam gives up sooner on a cluster in which nothing moves.
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(60);

/// The campaign: the system started with the workload's topics ([`start`]), the
/// clients and the faults until the time limit ([`clients_and_faults`]), the end of
/// the run ([`end_of_run`]), the verdict ([`verdict`]).
pub(super) async fn campaign_inner(
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
    let (mut cluster, crash_recorder, workload) =
        start(args, folder, &history, &mut progress).await?;
    let mut notes = Vec::new();
    let (coverage, schedule) = clients_and_faults(
        args,
        &mut cluster,
        &*workload,
        &history,
        &mut progress,
        &mut notes,
    )
    .await?;
    let schedule = ScheduleFile {
        kills_cut_power: Some(args.kills_cut_power()),
        ..schedule
    };
    folder.write_schedule(&schedule.to_text())?;
    let complete = end_of_run(
        cluster,
        &*workload,
        Handover::of(args),
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
    record.complete = Some(complete);
    let results = verdict(
        args, &*workload, &history, folder, complete, coverage, &mut notes,
    )?;
    record.notes = notes.clone();
    progress.finish();
    outln!(
        "{}",
        progress::summary(
            &results.0,
            &notes,
            tally.counts(),
            history.ok_rates(),
            &folder.path,
        )
        .trim_end()
    );
    for line in results.1.summary().lines() {
        outln!("{line}");
    }
    Ok(match results.0.valid {
        Validity::Valid => Exit::Valid,
        Validity::Invalid => Exit::Invalid,
        Validity::Unknown => Exit::Unknown,
    })
}

/// Start the cluster (from here on, a broker that dies on its own is a crash event,
/// written as it is detected) and create the workload's topics: the cluster, the
/// crash recorder, the workload.
async fn start(
    args: &Resolved,
    folder: &RunFolder,
    history: &Arc<History>,
    progress: &mut Progress,
) -> Result<(Cluster, Option<JoinHandle<()>>, Box<dyn Workload>)> {
    progress.phase("starting the cluster");
    let mut cluster = Cluster::start(ClusterConfig {
        broker_bin: args.broker_bin.clone(),
        nodes: args.nodes,
        root: folder.nodes(),
        settings: args.broker.clone(),
        dedicated_controller: args.dedicated_controller,
        start_timeout: START_TIMEOUT,
        fault_fs: args.fault_fs,
        power_cut_on_kill: args.power_cut_on_kill,
        clocks: args.clocks,
    })
    .await
    .map_err(|e| HarnessError::new(format!("the cluster did not start: {e}")))?;
    let crash_recorder = cluster
        .take_crash_reports()
        .map(|reports| crashes::record(reports, history.clone()));
    let workload = args
        .workload(ClientConfig::new(
            cluster.client_addrs(),
            cluster.controller_addr(),
        ))
        .ok_or_else(|| {
            HarnessError::new(format!(
                "-w {} is a Maelstrom workload: it runs with --bin",
                args.workload
            ))
        })?;
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
    Ok((cluster, crash_recorder, workload))
}

/// The verdict: the checkers and the crashes, with the fault coverage recounted
/// from the brokers' logs, written to results.json.
fn verdict(
    args: &Resolved,
    workload: &dyn Workload,
    history: &History,
    folder: &RunFolder,
    complete: bool,
    mut coverage: Coverage,
    notes: &mut Vec<String>,
) -> Result<(Results, Coverage)> {
    let events = history.events();
    let mut results = judge(args, workload, &events, folder, complete, notes);
    crate::judge::add_harness_verdicts(&mut results, &events, args.allow_crashes);
    coverage.recount(&folder.nodes());
    coverage.finish(&args.reachable_transitions());
    let results_json = coverage
        .beside(&results)
        .map_err(|e| HarnessError::new(format!("cannot serialize the results: {e}")))?;
    store::write_json(&folder.results_json(), &results_json)?;
    Ok((results, coverage))
}

/// The campaign proper: the clients and the faults (the schedule of
/// [`schedule`]) until the time limit. The nemesis ends its faults at the limit; the
/// clients stop then too, letting operations in flight complete (a scenario's
/// script runs to its end instead). A nemesis that failed is noted; clients that do
/// not stop are a harness failure. Returns the coverage the nemesis observed and
/// the schedule it played.
async fn clients_and_faults(
    args: &Resolved,
    cluster: &mut Cluster,
    workload: &dyn Workload,
    history: &Arc<History>,
    progress: &mut Progress,
    notes: &mut Vec<String>,
) -> Result<(Coverage, ScheduleFile)> {
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
    let (coverage, schedule) = {
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
        let schedule = nemesis.schedule();
        (nemesis.into_coverage(), schedule)
    };
    let _ = stop_tx.send(true);
    progress.phase("waiting for operations in flight");
    super::clients_stopped(clients, "the workload task").await?;
    Ok((coverage, schedule))
}

/// The campaign's schedule of faults: a schedule file, a scenario's script, the
/// replication package, or a fault list's random schedule.
fn schedule(args: &Resolved, cluster: &Cluster, workload: &dyn Workload) -> Box<dyn Source> {
    let topic = workload.topics()[0];
    let nodes = cluster.node_ids();
    if let Some(file) = &args.schedule_file {
        return Box::new(ScheduleSource::new(file.clone(), &cluster.procs(), &nodes));
    }
    if let Some(script) = &args.script {
        return Box::new(script.source(topic, &nodes, args.dedicated_controller));
    }
    if args.replication_package() {
        let owned = |topics: &[&str]| topics.iter().map(|t| t.to_string()).collect();
        let mut settings = args.package_settings(&nodes);
        settings.lossless_topics = owned(workload.lossless_topics());
        settings.linearizable_topics = owned(workload.linearizable_topics());
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
    let grown = workload.lossless_topics().first().copied().unwrap_or(topic);
    Box::new(FaultList::new(planner, topic).growing(grown))
}

/// The end of the run: heal everything, wait for the cluster to converge, with
/// `handover` the workload's first look and the partitions' leadership handed over
/// and wait again, the workload's final step, dump every replica's log into the run folder, stop the cluster.
/// Whether it all went through is returned (see `RunRecord::complete`); what did
/// not is noted.
async fn end_of_run<S: System>(
    mut system: S,
    workload: &dyn Workload,
    handover: Option<Handover>,
    history: &History,
    folder: &RunFolder,
    progress: &mut Progress,
    notes: &mut Vec<String>,
) -> Result<bool> {
    progress.phase("healing the cluster");
    system.heal_all().await?;
    progress.phase("waiting for the cluster to converge");
    let mut complete = converged(&mut system, "the healed cluster did not converge", notes).await;
    if let (true, Some(handover)) = (complete, handover) {
        if let Some(step) = workload.first_look_step() {
            progress.phase(step);
            let from = history.first_free_process();
            complete &= done(workload.first_look(history, from, final_deadline()), notes).await;
        }
        progress.phase("handing the partitions' leadership over");
        if let Err(e) = handover::hand_over(&mut system, workload.topics(), handover, history).await
        {
            notes.push(e);
        }
        let what = "the cluster did not converge after the handover";
        complete &= converged(&mut system, what, notes).await;
    }
    if let Some(step) = workload.final_step() {
        progress.phase(step);
        let finish = workload.finish(history, history.first_free_process(), final_deadline());
        complete &= done(finish, notes).await;
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

/// Whether `system` converged within [`CONVERGE_TIMEOUT`]; if not, `what: why` is
/// noted.
async fn converged<S: System>(system: &mut S, what: &str, notes: &mut Vec<String>) -> bool {
    match system.wait_converged(CONVERGE_TIMEOUT).await {
        Ok(()) => true,
        Err(e) => {
            notes.push(format!("{what}: {e}"));
            false
        }
    }
}

/// The deadline of a step of the workload's at the end of the run.
fn final_deadline() -> Instant {
    Instant::now() + super::FINAL_STEP_TIMEOUT
}

/// Whether a step of the workload's at the end of the run went through; if not,
/// what did not is noted.
async fn done(
    step: impl Future<Output = std::result::Result<(), String>>,
    notes: &mut Vec<String>,
) -> bool {
    match step.await {
        Ok(()) => true,
        Err(e) => {
            notes.push(e);
            false
        }
    }
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
