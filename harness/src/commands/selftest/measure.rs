//! The self-test's default mode: how well the default campaign — a plain `watermark
//! run` with no option tuned to the bug — finds each planted bug. Every bug, and
//! then the clean broker, gets one campaign per seed (the same seeds for every row);
//! a row's detection rate, median time to detection and verdicts go into the table
//! ([`detection`](super::detection)).
//!
//! Each campaign is its own `watermark run` process, its output in a log file next
//! to its run folder, so campaigns can run side by side (`--jobs`): each has its own
//! cluster, every broker and proxy on a port the kernel picked, and its own signal
//! handling and clean-up. A campaign process dies with the self-test
//! (`PR_SET_PDEATHSIG`, set by the thread that waits for it), and its brokers with
//! it. Ctrl-C (or SIGTERM) stops the self-test: no new campaign starts, the running
//! ones are asked to stop (SIGTERM: they kill their brokers and exit), and the table
//! shows what ran.

use std::collections::VecDeque;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use checker::format::{self, Format};
use checker::verdict::Results;
use serde::Serialize;

use super::detection::{Campaign, Figures, Row, detection};
use crate::options::Bug;

/// How long a campaign may take beyond its time limit (start, healing, draining and
/// checking are bounded inside `watermark run` well within this) before it is killed.
const CAMPAIGN_GRACE: Duration = Duration::from_secs(600);
/// How long a campaign asked to stop may take before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// What to measure.
pub struct Plan {
    pub bugs: Vec<Bug>,
    pub seeds: Vec<u64>,
    /// `--time-limit` of each campaign.
    pub campaign_time_limit: f64,
    /// Campaigns at once.
    pub jobs: u32,
    /// Where each row's campaigns go (`<root>/<row>/seed-<S>/`).
    pub root: PathBuf,
    pub broker_bin: PathBuf,
    /// The `watermark` executable the campaigns run.
    pub watermark: PathBuf,
}

/// selftest.json in this mode: the plan, and each row with its figures.
#[derive(Debug, Serialize)]
pub struct Report<'a> {
    pub mode: &'static str,
    pub seeds: &'a [u64],
    pub campaign_time_limit: f64,
    pub min_rate: f64,
    pub jobs: u32,
    pub passed: bool,
    pub rows: Vec<ReportRow<'a>>,
}

/// A row of selftest.json: the bug (or `clean`), its figures, whether it passed,
/// and its campaigns.
#[derive(Debug, Serialize)]
pub struct ReportRow<'a> {
    pub bug: &'a str,
    #[serde(flatten)]
    pub figures: Figures,
    pub passed: bool,
    pub campaigns: &'a [Campaign],
}

impl<'a> ReportRow<'a> {
    pub fn new(row: &'a Row, min_rate: f64) -> ReportRow<'a> {
        ReportRow {
            bug: &row.bug,
            figures: row.figures(),
            passed: row.passed(min_rate),
            campaigns: &row.campaigns,
        }
    }
}

/// One campaign to run: the row it belongs to, the bug planted (none: clean), the seed.
struct Job {
    row: usize,
    bug: Option<Bug>,
    seed: usize,
}

/// Run every campaign of the plan, `jobs` at once; returns the rows (each campaign
/// in seed order) and whether the self-test was interrupted.
pub fn run(plan: &Plan, stop: &AtomicBool) -> Vec<Row> {
    let names: Vec<String> = plan
        .bugs
        .iter()
        .map(|b| b.to_string())
        .chain(["clean".to_string()])
        .collect();
    let mut queue = VecDeque::new();
    for (row, name) in names.iter().enumerate() {
        let bug = plan.bugs.get(row).copied();
        debug_assert!(bug.is_some() || name == "clean");
        for seed in 0..plan.seeds.len() {
            queue.push_back(Job { row, bug, seed });
        }
    }
    let total = queue.len();
    let queue = Mutex::new(queue);
    let done: Mutex<Vec<Vec<Option<Campaign>>>> =
        Mutex::new(vec![vec![None; plan.seeds.len()]; names.len()]);
    let started = Mutex::new(0usize);
    std::thread::scope(|s| {
        for _ in 0..plan.jobs.max(1) {
            s.spawn(|| {
                loop {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Some(job) = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front()
                    else {
                        return;
                    };
                    let n = {
                        let mut started = started.lock().unwrap_or_else(|e| e.into_inner());
                        *started += 1;
                        *started
                    };
                    let tag = format!(
                        "[{n}/{total}] {} seed {}",
                        names[job.row], plan.seeds[job.seed]
                    );
                    let c = campaign(
                        plan,
                        &names[job.row],
                        job.bug,
                        plan.seeds[job.seed],
                        &tag,
                        stop,
                    );
                    done.lock().unwrap_or_else(|e| e.into_inner())[job.row][job.seed] = Some(c);
                }
            });
        }
    });
    let done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    names
        .into_iter()
        .zip(done)
        .map(|(bug, campaigns)| Row {
            bug,
            campaigns: campaigns.into_iter().flatten().collect(),
        })
        .collect()
}

/// Run one campaign as a `watermark run` process and read how it ended.
fn campaign(
    plan: &Plan,
    row: &str,
    bug: Option<Bug>,
    seed: u64,
    tag: &str,
    stop: &AtomicBool,
) -> Campaign {
    let dir = plan.root.join(row).join(format!("seed-{seed}"));
    let mut args: Vec<String> = vec![
        "run".into(),
        "--seed".into(),
        seed.to_string(),
        "--time-limit".into(),
        plan.campaign_time_limit.to_string(),
        "--results".into(),
        dir.display().to_string(),
        "--broker-bin".into(),
        plan.broker_bin.display().to_string(),
    ];
    if let Some(bug) = bug {
        args.extend(["--bug".into(), bug.to_string()]);
    }
    let t = Instant::now();
    let exit = match spawn_and_wait(plan, &dir, &args, stop) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("watermark selftest: {tag}: {e}");
            crate::exit::Exit::HarnessFailed as i32
        }
    };
    let folder = std::fs::canonicalize(dir.join("latest")).ok();
    let (anomalies, detected) = match (&folder, exit) {
        (Some(f), 1) => read_outcome(f),
        _ => (Vec::new(), None),
    };
    let c = Campaign {
        seed,
        exit,
        anomalies,
        detection: detected,
        folder,
        seconds: t.elapsed().as_secs_f64(),
    };
    let found = match (&c.detection, c.anomalies.is_empty()) {
        (Some(d), false) => format!(
            " ({}), detected at {:.1} s{}",
            c.anomalies.join(", "),
            d.seconds,
            if d.at_end { " (end of run)" } else { "" }
        ),
        _ => String::new(),
    };
    eprintln!(
        "watermark selftest: {tag}: exit {}{found}, {:.0} s",
        c.exit, c.seconds
    );
    c
}

/// Start `watermark` with `args`, its output in `dir/watermark.log`, and wait for it
/// (bounded); its exit code (a campaign killed by a signal is a harness failure).
fn spawn_and_wait(
    plan: &Plan,
    dir: &Path,
    args: &[String],
    stop: &AtomicBool,
) -> Result<i32, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let log_path = dir.join("watermark.log");
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let err = log
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let mut cmd = Command::new(&plan.watermark);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(err));
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", plan.watermark.display()))?;
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let deadline =
        Instant::now() + Duration::from_secs_f64(plan.campaign_time_limit) + CAMPAIGN_GRACE;
    let mut asked_to_stop: Option<Instant> = None;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return Ok(status
                    .code()
                    .unwrap_or(crate::exit::Exit::HarnessFailed as i32));
            }
            Ok(None) => {}
            Err(e) => return Err(format!("waiting for the campaign: {e}")),
        }
        if stop.load(Ordering::SeqCst) && asked_to_stop.is_none() {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            asked_to_stop = Some(Instant::now());
        }
        let late = asked_to_stop.is_some_and(|t| t.elapsed() > STOP_GRACE);
        if late || Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the campaign did not end in time and was killed (see {})",
                log_path.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The anomaly kinds of a run folder's results.json and when they were detected
/// (its history.jsonl); what cannot be read is left out.
fn read_outcome(folder: &Path) -> (Vec<String>, Option<super::detection::Detection>) {
    let Some(results) = std::fs::read_to_string(folder.join("results.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Results>(&t).ok())
    else {
        return (Vec::new(), None);
    };
    let mut kinds: Vec<String> = results
        .checkers
        .values()
        .flat_map(|c| &c.anomalies)
        .map(|a| a.kind.to_string())
        .collect();
    kinds.sort();
    kinds.dedup();
    let detected = std::fs::read_to_string(folder.join("history.jsonl"))
        .ok()
        .and_then(|t| format::parse(&t, Format::Jsonl).ok())
        .and_then(|h| detection(&results, &h.events));
    (kinds, detected)
}

/// Set `stop` on the first Ctrl-C or SIGTERM (later ones are ignored: the self-test
/// is already stopping).
pub fn stop_on_signal(stop: &'static AtomicBool) -> Result<(), String> {
    use tokio::signal::unix::{SignalKind, signal};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let (mut int, mut term) = rt
        .block_on(async {
            Ok::<_, std::io::Error>((
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
            ))
        })
        .map_err(|e| format!("cannot handle signals: {e}"))?;
    std::thread::spawn(move || {
        rt.block_on(async {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        });
        stop.store(true, Ordering::SeqCst);
        eprintln!("\nwatermark selftest: stopping: the running campaigns are asked to stop");
    });
    Ok(())
}
