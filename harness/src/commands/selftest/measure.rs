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
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::Serialize;

use super::detection::{Campaign, Figures, Row};
use crate::commands::campaign_process::{read_outcome, spawn_and_wait};
use crate::options::Bug;

/// One row of the table: a planted bug, a mutated broker, or the clean broker.
pub struct RowSpec {
    /// The bug's name, the mutant's, or `clean`.
    pub name: String,
    /// The bug planted (`--bug`).
    pub bug: Option<Bug>,
    /// The broker its campaigns run.
    pub broker_bin: PathBuf,
}

/// What to measure.
pub struct Plan {
    pub rows: Vec<RowSpec>,
    pub seeds: Vec<u64>,
    /// `--time-limit` of each campaign.
    pub campaign_time_limit: f64,
    /// Campaigns at once.
    pub jobs: u32,
    /// Where each row's campaigns go (`<root>/<row>/seed-<S>/`).
    pub root: PathBuf,
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

/// One campaign to run: the row it belongs to, and the seed.
struct Job {
    row: usize,
    seed: usize,
}

/// Run every campaign of the plan, `jobs` at once; returns the rows (each campaign
/// in seed order) and whether the self-test was interrupted.
pub fn run(plan: &Plan, stop: &AtomicBool) -> Vec<Row> {
    let names: Vec<String> = plan.rows.iter().map(|r| r.name.clone()).collect();
    let mut queue = VecDeque::new();
    for row in 0..plan.rows.len() {
        for seed in 0..plan.seeds.len() {
            queue.push_back(Job { row, seed });
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
                    let c = campaign(plan, &plan.rows[job.row], plan.seeds[job.seed], &tag, stop);
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
fn campaign(plan: &Plan, row: &RowSpec, seed: u64, tag: &str, stop: &AtomicBool) -> Campaign {
    let dir = plan.root.join(&row.name).join(format!("seed-{seed}"));
    let mut args: Vec<String> = vec![
        "run".into(),
        "--seed".into(),
        seed.to_string(),
        "--time-limit".into(),
        plan.campaign_time_limit.to_string(),
        "--results".into(),
        dir.display().to_string(),
        "--broker-bin".into(),
        row.broker_bin.display().to_string(),
    ];
    if let Some(bug) = row.bug {
        args.extend(["--bug".into(), bug.to_string()]);
    }
    let t = Instant::now();
    let exit = match spawn_and_wait(&plan.watermark, &dir, &args, plan.campaign_time_limit, stop) {
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
