//! `watermark run`: one campaign from start to verdict.
//!
//! make the run folder (`results/current` points at it) → run.json → start the
//! cluster (from here on, a broker that dies on its own is a `crash` event:
//! `crate::judge::crashes`) → create the workload's topics → clients and nemesis until the time
//! limit → end every fault → heal, resume and restart everything → wait (bounded)
//! until the cluster converged → the workload's final step (the queue's drain, the
//! register's final reads) → dump every replica's log → the checkers and
//! the crashes, as `watermark
//! check` judges the run folder → results.json → summary → report.html and
//! junit.xml → `results/latest` moved to it → exit code. A run that ends without
//! a verdict (the harness failed, or Ctrl-C) still writes run.json's outcome and a
//! junit.xml whose errored test case says why. The workload is a value
//! ([`Workload`]): nothing here depends on which, but for the checkers its kind
//! names ([`judge`](crate::judge)).
//!
//! With `--bin`, the system under test is the user's own, speaking Maelstrom's
//! protocol: the same run folder and end, its own campaign (`maelstrom`).
//!
//! Whatever happens, no broker process outlives the campaign: the cluster kills its
//! processes when dropped, and Ctrl-C / SIGTERM stop the campaign, kill every child
//! and exit 130, leaving the history streamed so far readable by `watermark check`.

mod campaign;
mod handover;
mod maelstrom;

/// How long the workload's final step (the queue's drain, the final reads) may take.
const FINAL_STEP_TIMEOUT: Duration = Duration::from_secs(60);
/// How long in-flight operations may take to finish after the time limit.
const CLIENTS_STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Wait, at most [`CLIENTS_STOP_TIMEOUT`], for the clients (told to stop) to finish
/// the operations in flight; `task` names them in an error.
async fn clients_stopped(
    clients: tokio::task::JoinHandle<()>,
    task: &str,
) -> crate::error::Result<()> {
    use crate::error::HarnessError;
    match tokio::time::timeout(CLIENTS_STOP_TIMEOUT, clients).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(HarnessError::new(format!("{task} failed: {e}"))),
        Err(_) => Err(HarnessError::new(format!(
            "client operations still running {}s after the time limit",
            CLIENTS_STOP_TIMEOUT.as_secs()
        ))),
    }
}

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::console::ConsoleLog;
use crate::exit::Exit;
use crate::options::{ResolveError, Resolved, RunArgs};
use crate::store::{RunFolder, RunRecord};
use crate::{errln, outln};

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
    crate::system::process::install_panic_hook();
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
                let who = if args.bin.is_some() { "node" } else { "broker" };
                errln!(
                    "\nwatermark: {signal}: stopping; every {who} process is killed; \
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
    crate::system::process::kill_all();
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
    let ran = match args.bin {
        None => campaign::campaign_inner(args, folder, record).await,
        Some(_) => maelstrom::campaign_inner(args, folder, record).await,
    };
    match ran {
        Ok(exit) => (exit, None),
        Err(e) => {
            errln!("watermark run: {e}");
            let logs = match args.bin {
                None => "the brokers' logs (nodes/*/broker.log)",
                Some(_) => "the nodes' stderr (nodes/*/stderr.log) and messages.jsonl",
            };
            errln!(
                "watermark run: the run folder {} holds {logs}",
                folder.path.display()
            );
            (Exit::HarnessFailed, Some(e.to_string()))
        }
    }
}
