//! One campaign against the user's own system (`watermark run --bin`), phase by
//! phase, as the broker's campaign runs (`super::campaign`) but for what differs:
//! start N nodes of the binary and initialise them (the router, the network, the
//! services: `crate::system::maelstrom`), run the clients `c1`…`cK` and the
//! schedule of faults until the time limit, heal everything, run the workload's
//! final phase on the healed cluster, stop the nodes, judge — the workload's
//! checker (lin-kv per key for linearizability, the others by their checks in
//! `checker::maelstrom`), the crashes and the protocol errors — and write
//! results.json with the message statistics (`network`).
//!
//! The faults come from the same interpreter as the broker's, through the same
//! seam ([`System`]): a fault list drawn without roles (a black box shows none),
//! or a schedule file.

mod clients;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use checker::format::Format;
use checker::history::{Event, EventType, Process};
use checker::verdict::{CheckerResult, Results, Validity};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::commands::check::checker_options;
use crate::console::progress::{self, Progress};
use crate::error::{HarnessError, Result};
use crate::exit::Exit;
use crate::nemesis::schedule_file::{ScheduleFile, ScheduleSource};
use crate::nemesis::{Coverage, FaultList, Interpreter, NemesisEvent, Planner, Source};
use crate::options::Resolved;
use crate::outln;
use crate::store::{self, History, HistoryFile, RunFolder, RunRecord, Tally};
use crate::system::System;
use crate::system::maelstrom::{MaelstromCluster, MaelstromConfig};
use clients::Clients;

/// How long a node may take to answer `init`.
const INIT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client waits for a reply before its operation is in doubt.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// The campaign: see the module doc.
pub(super) async fn campaign_inner(
    args: &Resolved,
    folder: &RunFolder,
    record: &mut RunRecord,
) -> Result<Exit> {
    let (Some(bin), Some(workload)) = (&args.bin, args.workload.maelstrom()) else {
        return Err(HarnessError::new(
            "a campaign of your own system needs --bin and a Maelstrom workload",
        ));
    };
    let tally = Arc::new(Tally::default());
    let origin = Instant::now();
    let history = Arc::new(History::new(
        HistoryFile::create(&folder.history(), origin)?,
        tally.clone(),
    ));
    let mut progress = Progress::start(args.time_limit());
    progress.phase("starting the nodes");
    let config = MaelstromConfig {
        program: bin.clone(),
        args: args.bin_args.iter().map(Into::into).collect(),
        nodes: args.nodes as usize,
        root: folder.nodes(),
        messages: folder.path.join("messages.jsonl"),
        origin,
        seed: args.seed,
        init_timeout: INIT_TIMEOUT,
        setup: workload.setup(&maelstrom::init::node_ids(args.nodes as usize)),
        clocks: args.clocks,
        fault_fs: args.fault_fs,
        power_cut_on_kill: args.power_cut_on_kill,
    };
    let mut cluster = MaelstromCluster::start(config, args.concurrency, history.clone())
        .await
        .map_err(|e| HarnessError::new(format!("the nodes did not start: {e}")))?;
    let clients = Clients {
        workload,
        seed: args.seed,
        node_ids: cluster.node_ids(),
        count: args.concurrency,
        rate: args.rate,
        timeout: REQUEST_TIMEOUT,
    };
    let mut notes = Vec::new();
    let schedule = clients_and_faults(
        args,
        &mut cluster,
        clients,
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
        args,
        &mut cluster,
        workload,
        &history,
        &mut progress,
        &mut notes,
    )
    .await;
    let operations = {
        let (ok, fail, info) = tally.counts();
        ok + fail + info
    };
    let stats = cluster.message_stats(operations);
    if let Err(e) = cluster.shutdown().await {
        notes.push(format!("stopping the nodes: {e}"));
    }
    // The last crash reports are written as the nodes' output closes.
    tokio::time::sleep(Duration::from_millis(100)).await;
    progress.phase("checking");
    record.complete = Some(complete);
    let events = history.events();
    let results = judge(args, &events);
    let network = network_json(&stats, &events)?;
    let mut results_json = serde_json::to_value(&results)
        .map_err(|e| HarnessError::new(format!("cannot serialize the results: {e}")))?;
    if let Some(m) = results_json.as_object_mut() {
        m.insert("network".into(), network);
    }
    store::write_json(&folder.results_json(), &results_json)?;
    if let Some(e) = history.write_failure() {
        notes.push(e);
    }
    record.notes = notes.clone();
    progress.finish();
    outln!(
        "{}",
        progress::summary(
            &results,
            &notes,
            tally.counts(),
            history.ok_rates(),
            &folder.path,
        )
        .trim_end()
    );
    outln!(
        "messages: {} sent, {} delivered, {} dropped ({} between nodes, {} per operation); {} node restarts, {} protocol errors",
        stats.total.sent,
        stats.total.delivered,
        stats.total.dropped,
        stats.between_nodes,
        stats.messages_per_operation,
        stats.restarts,
        stats.protocol_errors
    );
    Ok(match results.valid {
        Validity::Valid => Exit::Valid,
        Validity::Invalid => Exit::Invalid,
        Validity::Unknown => Exit::Unknown,
    })
}

/// The clients and the faults until the time limit; the schedule played.
async fn clients_and_faults(
    args: &Resolved,
    cluster: &mut MaelstromCluster,
    clients: Clients,
    history: &Arc<History>,
    progress: &mut Progress,
    notes: &mut Vec<String>,
) -> Result<ScheduleFile> {
    let limit = args.time_limit();
    let tally = history.tally();
    let since_ms = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut source = schedule(args, cluster);
    progress.begin_running();
    let (stop_tx, stop_rx) = watch::channel(false);
    let running = tokio::spawn(clients.run(cluster.requester(), history.clone(), stop_rx));
    let schedule = {
        let (history, fault_tally) = (history.clone(), tally.clone());
        let mut on_event = move |e: NemesisEvent| {
            if !e.is_decision() {
                fault_tally.nemesis(&e.f, &e.value);
            }
            history.nemesis(EventType::Info, &e.f, e.value);
        };
        let mut nemesis = Interpreter::new(cluster, &[], Coverage::new(since_ms), &mut on_event);
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
                        if started.elapsed() >= limit && !*stop_tx.borrow() {
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
        nemesis.schedule()
    };
    let _ = stop_tx.send(true);
    progress.phase("waiting for operations in flight");
    super::clients_stopped(running, "the clients").await?;
    Ok(schedule)
}

/// The faults: a schedule file, or the fault list drawn without roles.
fn schedule(args: &Resolved, cluster: &MaelstromCluster) -> Box<dyn Source> {
    let nodes = cluster.nodes();
    if let Some(file) = &args.schedule_file {
        return Box::new(ScheduleSource::new(file.clone(), &cluster.procs(), &nodes));
    }
    let planner =
        Planner::new(args.seed, &args.nemesis, &nodes, 1, args.nemesis_interval()).without_roles();
    Box::new(FaultList::new(planner, "maelstrom"))
}

/// Heal everything, let the cluster settle, run the workload's final phase:
/// whether it all went through (what did not is noted).
async fn end_of_run(
    args: &Resolved,
    cluster: &mut MaelstromCluster,
    workload: maelstrom::workload::Workload,
    history: &History,
    progress: &mut Progress,
    notes: &mut Vec<String>,
) -> bool {
    progress.phase("healing the cluster");
    if let Err(e) = cluster.heal_all().await {
        notes.push(format!("the cluster could not be healed: {e}"));
        return false;
    }
    let Some(phase) = workload.final_phase(&cluster.node_ids()) else {
        return true;
    };
    progress.phase("letting the healed cluster settle");
    tokio::time::sleep(args.settle()).await;
    progress.phase("the final phase");
    let client = format!("c{}", args.concurrency + 1);
    let deadline = Instant::now() + super::FINAL_STEP_TIMEOUT;
    let requester = cluster.requester();
    match clients::final_phase(
        phase,
        &requester,
        history,
        &client,
        REQUEST_TIMEOUT,
        deadline,
    )
    .await
    {
        Ok(()) => true,
        Err(e) => {
            notes.push(e);
            false
        }
    }
}

/// The workload's checker, as `watermark check` judges the run folder, with the
/// harness's own verdicts on crashes and protocol errors.
fn judge(args: &Resolved, events: &[Event]) -> Results {
    let options = checker_options(args.checker_time_limit());
    let mut results = crate::judge::judge(args.workload, Format::Jsonl, events, &[], &options)
        .unwrap_or_else(|e| {
            let why = format!("the history cannot be analysed: {e}");
            Results::new(BTreeMap::from([(
                args.workload.checker().to_string(),
                CheckerResult::unknown(why),
            )]))
        });
    crate::judge::add_harness_verdicts(&mut results, events, args.allow_crashes);
    results
}

/// results.json's `network`: the message statistics, and the faults applied by
/// name (what a black box lets one see of how a campaign went).
fn network_json(
    stats: &crate::system::maelstrom::messages::MessageStats,
    events: &[Event],
) -> Result<Value> {
    let mut faults: BTreeMap<&str, u64> = BTreeMap::new();
    for e in events.iter().filter(|e| e.process == Process::Nemesis) {
        *faults.entry(e.f.as_str()).or_default() += 1;
    }
    let mut v = serde_json::to_value(stats)
        .map_err(|e| HarnessError::new(format!("cannot serialize the message statistics: {e}")))?;
    if let Some(m) = v.as_object_mut() {
        m.insert("nemesis_events".into(), json!(faults));
    }
    Ok(v)
}
