//! `watermark selftest --tuned`: for each planted bug, seeded campaigns with the
//! workload and faults that can reveal that bug ([`profile`]) until one ends INVALID
//! or the bug's budget is spent; then the clean broker for the same budget, cycling
//! through the same profiles, which must find nothing. Each campaign runs in this
//! process, one after the other.
//!
//! The verdict is a table — bug, caught?, seed, time to detection, anomaly kinds — and
//! the exit code: 1 if a bug escaped or the clean broker raised an anomaly.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::{SelftestArgs, Setup, profile, run_args};
use crate::exit::Exit;
use crate::options::Bug;

/// One campaign's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Campaign {
    pub seed: u64,
    pub exit: i32,
    pub anomalies: Vec<String>,
    pub folder: Option<PathBuf>,
    pub seconds: f64,
}

/// One row of the table: a bug (or `clean`) and its campaigns.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub bug: String,
    pub campaigns: Vec<Campaign>,
    /// The campaign that found anomalies (for a bug: caught).
    pub detected: Option<usize>,
    /// Wall-clock seconds from the first campaign's start to the end of the detecting
    /// one (setup, faults, healing and checking included).
    pub time_to_detection: Option<f64>,
    /// Why no campaign could run, if none could.
    pub error: Option<String>,
}

impl Row {
    /// Whether a campaign of this row was interrupted (Ctrl-C).
    fn interrupted(&self) -> bool {
        self.campaigns
            .iter()
            .any(|c| c.exit == Exit::Interrupted as i32)
    }

    fn new(bug: &str) -> Row {
        Row {
            bug: bug.to_string(),
            campaigns: Vec::new(),
            detected: None,
            time_to_detection: None,
            error: None,
        }
    }

    fn is_clean(&self) -> bool {
        self.bug == "clean"
    }

    /// Whether this row passes: a bug caught; the clean broker without anomalies.
    pub fn passed(&self) -> bool {
        if self.is_clean() {
            self.detected.is_none() && self.error.is_none() && !self.campaigns.is_empty()
        } else {
            self.detected.is_some()
        }
    }
}

/// `--tuned`: each bug's profile until it is caught, then the clean broker.
pub(super) fn run(args: &SelftestArgs, setup: Setup) -> Exit {
    let Setup {
        bugs,
        seed,
        broker_bin,
        root,
    } = setup;
    eprintln!(
        "watermark selftest: seed {seed} (repeat with --seed {seed}), {} s per bug, folder {}",
        args.time_limit,
        root.display()
    );
    let budget = Duration::from_secs_f64(args.time_limit);
    let max_runs = args.runs.unwrap_or(u32::MAX) as usize;
    let mut rows = Vec::new();
    for &bug in &bugs {
        eprintln!("\nwatermark selftest: --bug {bug}");
        let row = campaigns(
            &bug.to_string(),
            &[(Some(bug), bug)],
            &root,
            &broker_bin,
            seed,
            budget,
            max_runs,
            true,
        );
        let interrupted = row.interrupted();
        rows.push(row);
        if interrupted {
            return Exit::Interrupted;
        }
    }
    eprintln!("\nwatermark selftest: the clean broker");
    let profiles: Vec<(Option<Bug>, Bug)> = bugs.iter().map(|&b| (None, b)).collect();
    let clean = campaigns(
        "clean",
        &profiles,
        &root,
        &broker_bin,
        seed,
        budget,
        max_runs,
        false,
    );
    let interrupted = clean.interrupted();
    rows.push(clean);
    print!("{}", table(&rows));
    if let Err(e) = crate::store::write_json(&root.join("selftest.json"), &rows) {
        eprintln!("watermark selftest: {e}");
    }
    println!("self-test folder: {}", root.display());
    if interrupted {
        Exit::Interrupted
    } else if rows.iter().all(Row::passed) {
        println!("selftest: PASSED (every planted bug caught, no false alarm)");
        Exit::Valid
    } else {
        println!("selftest: FAILED (see the table)");
        Exit::Invalid
    }
}

/// Run campaigns for one row, cycling through `profiles` (`(--bug, whose profile)`),
/// until one finds anomalies (when `stop_on_anomaly`), the budget is spent, or
/// `max_runs` campaigns ran. Seeds: `seed`, `seed + 1`, …
#[allow(clippy::too_many_arguments)]
fn campaigns(
    name: &str,
    profiles: &[(Option<Bug>, Bug)],
    root: &Path,
    broker_bin: &Path,
    seed: u64,
    budget: Duration,
    max_runs: usize,
    stop_on_anomaly: bool,
) -> Row {
    let mut row = Row::new(name);
    let results = root.join(name);
    let started = Instant::now();
    for n in 0..max_runs {
        if started.elapsed() >= budget {
            break;
        }
        let (bug, profile_of) = profiles[n % profiles.len()];
        let campaign_seed = seed.wrapping_add(n as u64);
        let mut argv: Vec<String> = profile(profile_of)
            .split_whitespace()
            .map(String::from)
            .collect();
        // A profile is one workload's campaign: the queue's unless it names another.
        if !argv.iter().any(|a| a == "--workload") {
            argv.splice(0..0, ["--workload".to_string(), "queue".to_string()]);
        }
        if let Some(bug) = bug {
            argv.extend(["--bug".to_string(), bug.to_string()]);
        }
        argv.extend([
            "--seed".to_string(),
            campaign_seed.to_string(),
            "--results".to_string(),
            results.display().to_string(),
            "--broker-bin".to_string(),
            broker_bin.display().to_string(),
        ]);
        let args = match run_args(&argv) {
            Ok(a) => a,
            Err(e) => {
                row.error = Some(format!("cannot run `{}`: {e}", argv.join(" ")));
                eprintln!(
                    "watermark selftest: {name}: {}",
                    row.error.as_deref().unwrap_or("")
                );
                break;
            }
        };
        eprintln!(
            "watermark selftest: {name}: watermark run {}",
            argv.join(" ")
        );
        let t = Instant::now();
        let mut command_line = vec!["watermark".to_string(), "run".to_string()];
        command_line.extend(argv.iter().cloned());
        let exit = crate::commands::run::execute(args, command_line, None);
        let folder = std::fs::canonicalize(results.join("latest")).ok();
        let anomalies = folder.as_deref().map(anomaly_kinds).unwrap_or_default();
        row.campaigns.push(Campaign {
            seed: campaign_seed,
            exit: exit as i32,
            anomalies,
            folder,
            seconds: t.elapsed().as_secs_f64(),
        });
        if exit == Exit::Interrupted {
            break;
        }
        if exit == Exit::Invalid && row.detected.is_none() {
            row.detected = Some(row.campaigns.len() - 1);
            row.time_to_detection = Some(started.elapsed().as_secs_f64());
            if stop_on_anomaly {
                break;
            }
        }
    }
    row
}

/// The distinct anomaly kinds in a run folder's results.json.
fn anomaly_kinds(folder: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(folder.join("results.json")) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    let mut kinds: Vec<String> = v["checkers"]
        .as_object()
        .into_iter()
        .flat_map(|c| c.values())
        .flat_map(|c| c["anomalies"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a["kind"].as_str().map(String::from))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// The verdict table.
pub fn table(rows: &[Row]) -> String {
    // The bug column fits the longest name (21 at least, as the others are fixed).
    let w = rows.iter().map(|r| r.bug.len()).max().unwrap_or(0).max(21);
    let mut out = format!(
        "\n{:<w$} {:<8} {:<11} {:<10} {:<10} {}\n",
        "bug", "caught?", "seed", "detection", "campaigns", "anomalies"
    );
    for r in rows {
        let found = r.detected.map(|i| &r.campaigns[i]);
        let caught = match (r.is_clean(), found, &r.error) {
            (_, _, Some(_)) if r.campaigns.is_empty() => "error",
            (true, None, _) => "clean",
            (true, Some(_), _) => "FALSE ALARM",
            (false, Some(_), _) => "yes",
            (false, None, _) => "ESCAPED",
        };
        let seed = found.map_or("-".to_string(), |c| c.seed.to_string());
        let ttd = r
            .time_to_detection
            .map_or("-".to_string(), |t| format!("{t:.1} s"));
        let kinds = match (found, &r.error) {
            (Some(c), _) => c.anomalies.join(", "),
            (None, Some(e)) => e.lines().next().unwrap_or("").to_string(),
            (None, None) => {
                let other: Vec<String> = r
                    .campaigns
                    .iter()
                    .filter(|c| c.exit != 0)
                    .map(|c| format!("seed {} exit {}", c.seed, c.exit))
                    .collect();
                if other.is_empty() {
                    "-".to_string()
                } else {
                    other.join("; ")
                }
            }
        };
        out.push_str(&format!(
            "{:<w$} {:<8} {:<11} {:<10} {:<10} {}\n",
            r.bug,
            caught,
            seed,
            ttd,
            r.campaigns.len(),
            kinds
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_says_what_escaped_and_what_raised_a_false_alarm() {
        let c = |exit, kinds: &[&str]| Campaign {
            seed: 7,
            exit,
            anomalies: kinds.iter().map(|s| s.to_string()).collect(),
            folder: None,
            seconds: 1.0,
        };
        let mut caught = Row::new("ack-before-replicate");
        caught.campaigns = vec![c(0, &[]), c(1, &["lost-write"])];
        caught.detected = Some(1);
        caught.time_to_detection = Some(12.5);
        let mut escaped = Row::new("isr-unchecked");
        escaped.campaigns = vec![c(0, &[])];
        let mut clean = Row::new("clean");
        clean.campaigns = vec![c(1, &["duplicate"])];
        clean.detected = Some(0);
        let t = table(&[caught.clone(), escaped.clone(), clean.clone()]);
        assert!(
            t.contains("yes") && t.contains("12.5 s") && t.contains("lost-write"),
            "{t}"
        );
        assert!(t.contains("ESCAPED") && t.contains("FALSE ALARM"), "{t}");
        assert!(caught.passed() && !escaped.passed() && !clean.passed());
    }
}
