//! `watermark run --test-count N`: a series of campaigns, as Jepsen's
//! `--test-count` runs a test again and again. Campaign `i` (from 0) runs the same
//! options with seed `seed + i`, so each is a distinct schedule and any one can be
//! repeated alone (`watermark replay`, or `run --seed`). Their run folders land in
//! one series folder, `results/tests-<workload>-<UTC timestamp>-s<seed>/`, beside
//! a summary (`summary.json`, and the table on the console) and one `junit.xml`
//! suite holding every campaign's test cases, named after their seeds.
//!
//! The exit code is the worst outcome of the series: interrupted (130, which also
//! stops it), then a harness failure (3), anomalies (1), unknown (2), valid (0).
//! `--until-invalid` stops the series at the first campaign that finds anomalies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use serde::Serialize;
use serde_json::Value;

use crate::exit::Exit;
use crate::options::{Resolved, RunArgs};
use crate::report::junit;
use crate::store::{compact_timestamp, rfc3339_millis, write_atomic, write_json};
use crate::{errln, outln};

/// `watermark run`: one campaign, or a series of them.
#[derive(Debug, Clone, clap::Args)]
pub struct RunCommand {
    #[command(flatten)]
    pub args: RunArgs,

    /// Run N campaigns, with seeds --seed, --seed + 1, …, into one series folder
    /// with a summary table (summary.json) and one JUnit suite; the exit code is
    /// the worst outcome.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub test_count: Option<u32>,

    /// With --test-count: stop at the first campaign that finds anomalies.
    #[arg(long, requires = "test_count")]
    pub until_invalid: bool,

    /// Run a regression corpus: every schedule file (*.json) of DIR as one
    /// campaign of a series, with one summary and one JUnit suite (a test case per
    /// file). A case with anomalies fails at once; one that ends unknown or with a
    /// harness failure is tried again (--corpus-tries).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["test_count", "schedule", "scenario"])]
    pub corpus: Option<PathBuf>,

    /// With --corpus: tries of a case that ends unknown or with a harness failure.
    #[arg(long, value_name = "K", default_value_t = 3, requires = "corpus", value_parser = clap::value_parser!(u32).range(1..=20))]
    pub corpus_tries: u32,
}

/// Run `watermark run`, one campaign or a series.
pub fn run(command: RunCommand) -> Exit {
    if let Some(dir) = &command.corpus {
        return crate::commands::corpus::run(dir, command.args, command.corpus_tries);
    }
    let Some(count) = command.test_count else {
        return crate::commands::run::run(command.args);
    };
    let args = match command.args.resolve() {
        Ok(a) => a,
        Err(e) => return crate::commands::run::refused("watermark run", e),
    };
    let series = Series {
        count,
        until_invalid: command.until_invalid,
        command_line: std::env::args().collect(),
    };
    series.run(args)
}

/// One series: how many campaigns, whether to stop at the first anomaly.
struct Series {
    count: u32,
    until_invalid: bool,
    command_line: Vec<String>,
}

/// One campaign of a series, as summary.json lists it.
#[derive(Debug, Clone, Serialize)]
pub struct CampaignRow {
    pub seed: u64,
    /// valid, invalid, unknown, harness-failed, interrupted.
    pub outcome: String,
    pub exit_code: i32,
    /// The run folder, relative to the series folder (absent if none was made).
    pub folder: Option<String>,
    /// Completed client operations: ok, fail, info.
    pub operations: BTreeMap<String, u64>,
    /// Anomalies found, by kind.
    pub anomalies: BTreeMap<String, u64>,
    pub seconds: f64,
    /// A corpus's case: the schedule file's name, the tries it took, and how many
    /// of them did not end valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tries: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_tries: Option<u32>,
}

/// summary.json.
#[derive(Debug, Clone, Serialize)]
struct Summary<'a> {
    workload: String,
    /// The first campaign's seed; campaign `i` ran `seed + i`.
    seed: u64,
    test_count: u32,
    until_invalid: bool,
    command_line: &'a [String],
    started_at: String,
    /// `null` while the series goes.
    ended_at: Option<String>,
    /// The worst outcome so far, and its exit code.
    outcome: &'static str,
    exit_code: i32,
    campaigns: &'a [CampaignRow],
}

impl Series {
    fn run(&self, args: Resolved) -> Exit {
        let started = SystemTime::now();
        let root = match create_folder(&args, started) {
            Ok(r) => r,
            Err(e) => {
                errln!("watermark run: {e}");
                return Exit::HarnessFailed;
            }
        };
        errln!(
            "watermark: a series of {} campaigns, seeds {} to {} (repeat one with --seed), folder {}",
            self.count,
            args.seed,
            args.seed.wrapping_add(u64::from(self.count) - 1),
            root.display()
        );
        let mut rows: Vec<CampaignRow> = Vec::new();
        let mut worst = Exit::Valid;
        for i in 0..self.count {
            let mut campaign = args.clone();
            campaign.seed = args.seed.wrapping_add(u64::from(i));
            campaign.results = root.clone();
            errln!(
                "\nwatermark: campaign {} of {}, seed {}",
                i + 1,
                self.count,
                campaign.seed
            );
            let t = Instant::now();
            let seed = campaign.seed;
            let exit = crate::commands::run::execute_linked(
                campaign,
                self.command_line.clone(),
                None,
                Some(&args.results),
            );
            rows.push(row(&root, seed, exit, t.elapsed().as_secs_f64()));
            worst = worse(worst, exit);
            self.write_summary(&args, &root, started, &rows, worst, false);
            if exit == Exit::Interrupted || (self.until_invalid && exit == Exit::Invalid) {
                break;
            }
        }
        if worst != Exit::Interrupted && self.until_invalid && worst != Exit::Invalid {
            errln!(
                "\nwatermark: no campaign of {} found anomalies (--until-invalid)",
                self.count
            );
        }
        outln!("{}", table(&rows).trim_end());
        self.write_summary(&args, &root, started, &rows, worst, true);
        if let Err(e) = write_junit(&root, &args.workload.to_string(), &rows) {
            errln!("watermark run: no junit.xml for the series: {e}");
        }
        let tally: Vec<String> = [
            "valid",
            "invalid",
            "unknown",
            "harness-failed",
            "interrupted",
        ]
        .iter()
        .filter_map(|o| {
            let n = rows.iter().filter(|r| r.outcome == *o).count();
            (n > 0).then(|| format!("{n} {o}"))
        })
        .collect();
        outln!(
            "series: {} of {} campaigns run: {}; outcome {} (exit {})",
            rows.len(),
            self.count,
            tally.join(", "),
            worst.outcome(),
            worst as i32
        );
        outln!("series folder: {}", root.display());
        worst
    }

    #[allow(clippy::too_many_arguments)]
    fn write_summary(
        &self,
        args: &Resolved,
        root: &Path,
        started: SystemTime,
        rows: &[CampaignRow],
        worst: Exit,
        ended: bool,
    ) {
        let summary = Summary {
            workload: args.workload.to_string(),
            seed: args.seed,
            test_count: self.count,
            until_invalid: self.until_invalid,
            command_line: &self.command_line,
            started_at: rfc3339_millis(started),
            ended_at: ended.then(|| rfc3339_millis(SystemTime::now())),
            outcome: worst.outcome(),
            exit_code: worst as i32,
            campaigns: rows,
        };
        if let Err(e) = write_json(&root.join("summary.json"), &summary) {
            errln!("watermark run: {e}");
        }
    }
}

/// `<results>/tests-<workload>-<timestamp>-s<seed>/` (`-2`, `-3`, … if taken).
fn create_folder(args: &Resolved, now: SystemTime) -> Result<PathBuf, String> {
    std::fs::create_dir_all(&args.results).map_err(|e| {
        format!(
            "cannot create the results directory {}: {e} (choose another with --results)",
            args.results.display()
        )
    })?;
    let base = format!(
        "tests-{}-{}-s{}",
        args.workload,
        compact_timestamp(now),
        args.seed
    );
    for n in 1.. {
        let name = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        let path = args.results.join(name);
        match std::fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create {}: {e}", path.display())),
        }
    }
    unreachable!("an unbounded range ends only by returning")
}

/// How bad an outcome is for the series' exit code: interrupted, then a harness
/// failure, anomalies, unknown, valid.
fn severity(e: Exit) -> u8 {
    match e {
        Exit::Valid => 0,
        Exit::Unknown => 1,
        Exit::Invalid => 2,
        Exit::HarnessFailed => 3,
        Exit::Usage => 4,
        Exit::Interrupted => 5,
    }
}

pub fn worse(a: Exit, b: Exit) -> Exit {
    if severity(b) > severity(a) { b } else { a }
}

/// The row of the campaign that just ended: its run folder is the series
/// folder's `latest`.
pub fn row(root: &Path, seed: u64, exit: Exit, seconds: f64) -> CampaignRow {
    let folder = std::fs::read_link(root.join("latest"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|name| {
            // The link is this campaign's only if its run.json says this seed.
            read_json(&root.join(name).join("run.json"))
                .is_some_and(|r| r.get("seed").and_then(Value::as_u64) == Some(seed))
        });
    let dir = folder.as_ref().map(|f| root.join(f));
    CampaignRow {
        seed,
        outcome: exit.outcome().to_string(),
        exit_code: exit as i32,
        operations: dir.as_deref().map(operations).unwrap_or_default(),
        anomalies: dir.as_deref().map(anomalies).unwrap_or_default(),
        folder,
        seconds,
        case: None,
        tries: None,
        failed_tries: None,
    }
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Completed client operations of a run folder's history, by type.
fn operations(dir: &Path) -> BTreeMap<String, u64> {
    let mut counts: BTreeMap<String, u64> = ["ok", "fail", "info"]
        .into_iter()
        .map(|k| (k.to_string(), 0))
        .collect();
    let Ok(text) = std::fs::read_to_string(dir.join("history.jsonl")) else {
        return counts;
    };
    for line in text.lines() {
        let Ok(e) = checker::format::event_line(line) else {
            continue;
        };
        if e.process != checker::history::Process::Nemesis
            && let Some(n) = counts.get_mut(&e.kind.to_string())
        {
            *n += 1;
        }
    }
    counts
}

/// Anomalies of a run folder's results.json, by kind.
fn anomalies(dir: &Path) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    let Some(results) = read_json(&dir.join("results.json")) else {
        return counts;
    };
    let checkers = results.get("checkers").and_then(Value::as_object);
    for c in checkers.into_iter().flat_map(|c| c.values()) {
        let list = c.get("anomalies").and_then(Value::as_array);
        for a in list.into_iter().flatten() {
            if let Some(kind) = a.get("kind").and_then(Value::as_str) {
                *counts.entry(kind.to_string()).or_default() += 1;
            }
        }
    }
    counts
}

/// The summary table.
pub fn table(rows: &[CampaignRow]) -> String {
    let mut out = String::from(
        "\ncampaign  seed                  verdict         ok/fail/info      time      anomalies\n",
    );
    for (i, r) in rows.iter().enumerate() {
        let verdict = match r.outcome.as_str() {
            "invalid" => "INVALID",
            other => other,
        };
        let n = |k: &str| r.operations.get(k).copied().unwrap_or(0);
        let ops = format!("{}/{}/{}", n("ok"), n("fail"), n("info"));
        let kinds: Vec<String> = r
            .anomalies
            .iter()
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect();
        let kinds = if kinds.is_empty() {
            "-".to_string()
        } else {
            kinds.join(", ")
        };
        let number = match (&r.case, r.tries) {
            (Some(case), Some(t)) => format!(
                "{} {case} ({}/{t} failed)",
                i + 1,
                r.failed_tries.unwrap_or(0)
            ),
            _ => (i + 1).to_string(),
        };
        out.push_str(&format!(
            "{:<9} {:<21} {:<15} {:<17} {:<9} {kinds}\n",
            number,
            r.seed,
            verdict,
            ops,
            format!("{:.1} s", r.seconds),
        ));
    }
    out
}

/// One JUnit suite for the whole series: each campaign's test cases, named after
/// its seed (`seed 43: queue lost-write`) or its corpus case (`kip101: …`); a
/// campaign without a verdict is one errored case giving the reason.
pub fn write_junit(root: &Path, workload: &str, rows: &[CampaignRow]) -> Result<(), String> {
    let mut cases = Vec::new();
    for r in rows {
        let prefix = match &r.case {
            Some(case) => format!("{case}: "),
            None => format!("seed {}: ", r.seed),
        };
        let dir = r.folder.as_ref().map(|f| root.join(f));
        let results = dir
            .as_ref()
            .and_then(|d| read_json(&d.join("results.json")))
            .and_then(|v| serde_json::from_value::<checker::verdict::Results>(v).ok());
        match results {
            Some(results) if r.exit_code <= 2 => {
                cases.extend(junit::verdict_cases(&results, &prefix));
            }
            _ => {
                let failure = dir
                    .as_ref()
                    .and_then(|d| read_json(&d.join("run.json")))
                    .and_then(|v| v.get("failure").and_then(Value::as_str).map(String::from))
                    .unwrap_or_else(|| format!("the campaign ended {}", r.outcome));
                cases.push(junit::unjudged_case(&prefix, &r.outcome, &failure));
            }
        }
    }
    let config = serde_json::json!({
        "workload": workload,
        "seed": rows.first().map(|r| r.seed),
    });
    let name = crate::report::folder::folder_name(root);
    let xml = junit::render_series(&name, &config, cases)?;
    write_atomic(&root.join("junit.xml"), xml.as_bytes()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_outcome_wins() {
        use Exit::*;
        let all = |exits: &[Exit]| exits.iter().fold(Valid, |w, &e| worse(w, e));
        assert_eq!(all(&[Valid, Valid]), Valid);
        assert_eq!(all(&[Valid, Unknown, Valid]), Unknown);
        assert_eq!(all(&[Unknown, Invalid, Valid]), Invalid);
        assert_eq!(all(&[Invalid, HarnessFailed, Unknown]), HarnessFailed);
        assert_eq!(all(&[HarnessFailed, Interrupted]), Interrupted);
    }

    #[test]
    fn the_table_has_a_row_per_campaign() {
        let r = |seed, outcome: &str, kinds: &[(&str, u64)]| CampaignRow {
            seed,
            outcome: outcome.to_string(),
            exit_code: 0,
            folder: None,
            operations: [("ok".to_string(), 10), ("info".to_string(), 2)].into(),
            anomalies: kinds.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            seconds: 12.34,
            case: None,
            tries: None,
            failed_tries: None,
        };
        let t = table(&[r(42, "valid", &[]), r(43, "invalid", &[("lost-write", 3)])]);
        let lines: Vec<&str> = t.trim().lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(lines[1].starts_with("1 ") && lines[1].contains("42"), "{t}");
        assert!(
            lines[1].contains("valid") && lines[1].contains("10/0/2"),
            "{t}"
        );
        assert!(
            lines[2].contains("INVALID") && lines[2].contains("lost-write ×3"),
            "{t}"
        );
        assert!(lines[2].contains("12.3 s"), "{t}");
    }
}
