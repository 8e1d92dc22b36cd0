//! `watermark run --corpus DIR`: a regression corpus — a folder of schedule files
//! (a shrink's `minimal-schedule.json`, or one written by hand), each played as
//! one campaign of a series (its own seed and length when the file states them,
//! else `--seed` and `--time-limit`),
//! with one summary and one JUnit suite, a test case per file. This is the stable
//! half of a CI gate: the same schedules on every change, so a bug found once is
//! checked again on the next.
//!
//! A case that shows anomalies fails at once (the checker raises no false alarm: an
//! anomaly is the system's doing). One that ends unknown or with a harness failure
//! — a loaded machine, a cluster that did not converge — is tried again, up to
//! `--corpus-tries` times, and counts as failed only when every try ended so; the
//! summary says how many tries each case took and how many of them failed.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use crate::commands::series::{self, CampaignRow};
use crate::exit::Exit;
use crate::nemesis::schedule_file::ScheduleFile;
use crate::options::RunArgs;
use crate::store::{compact_timestamp, rfc3339_millis, write_json};
use crate::{errln, outln};

/// The corpus's cases: every `*.json` file of `dir`, by name, each read.
fn cases(dir: &Path) -> Result<Vec<(String, PathBuf, ScheduleFile)>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("--corpus {}: cannot read it: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!(
            "--corpus {}: no schedule file (*.json) in it",
            dir.display()
        ));
    }
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("--corpus: {}: {e}", path.display()))?;
        let file =
            ScheduleFile::parse(&text).map_err(|e| format!("--corpus: {}: {e}", path.display()))?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push((name, path, file));
    }
    Ok(out)
}

/// Run the corpus in `dir` with `args` (the options every case shares).
pub fn run(dir: &Path, args: RunArgs, tries: u32) -> Exit {
    let cases = match cases(dir) {
        Ok(c) => c,
        Err(e) => {
            errln!("watermark run: {e}");
            return Exit::Usage;
        }
    };
    let mut resolved = Vec::new();
    for (name, path, file) in &cases {
        let mut a = args.clone();
        a.schedule = Some(path.clone());
        // A case's own seed and length beat the options every case shares.
        if file.seed.is_some() {
            a.seed = None;
        }
        if file.time_limit.is_some() {
            a.time_limit = None;
        }
        match a.resolve() {
            Ok(r) => resolved.push((name.clone(), r)),
            Err(e) => return crate::commands::run::refused("watermark run", e),
        }
    }
    let started = SystemTime::now();
    let label = dir
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "corpus".into());
    let results = resolved[0].1.results.clone();
    let root = results.join(format!("corpus-{label}-{}", compact_timestamp(started)));
    if let Err(e) = std::fs::create_dir_all(&root) {
        errln!("watermark run: cannot create {}: {e}", root.display());
        return Exit::HarnessFailed;
    }
    errln!(
        "watermark: corpus {}: {} cases, up to {tries} tries each (unknown or harness failure only), folder {}",
        dir.display(),
        cases.len(),
        root.display()
    );
    let command_line: Vec<String> = std::env::args().collect();
    let mut rows: Vec<CampaignRow> = Vec::new();
    let mut worst = Exit::Valid;
    for (i, (name, case)) in resolved.into_iter().enumerate() {
        let t = Instant::now();
        let (mut exit, mut taken, mut failed) = (Exit::Valid, 0, 0);
        while taken < tries {
            taken += 1;
            errln!(
                "\nwatermark: case {} of {} ({name}), seed {}, try {taken}",
                i + 1,
                cases.len(),
                case.seed
            );
            let mut campaign = case.clone();
            campaign.results = root.clone();
            exit = crate::commands::run::execute_linked(
                campaign,
                command_line.clone(),
                None,
                Some(&results),
            );
            if exit != Exit::Valid {
                failed += 1;
            }
            if matches!(
                exit,
                Exit::Valid | Exit::Invalid | Exit::Interrupted | Exit::Usage
            ) {
                break;
            }
        }
        let mut row = series::row(&root, case.seed, exit, t.elapsed().as_secs_f64());
        row.case = Some(name);
        row.tries = Some(taken);
        row.failed_tries = Some(failed);
        rows.push(row);
        worst = series::worse(worst, exit);
        let summary = serde_json::json!({
            "corpus": dir,
            "tries": tries,
            "started_at": rfc3339_millis(started),
            "outcome": worst.outcome(),
            "exit_code": worst as i32,
            "cases": rows,
        });
        if let Err(e) = write_json(&root.join("summary.json"), &summary) {
            errln!("watermark run: {e}");
        }
        if exit == Exit::Interrupted {
            break;
        }
    }
    outln!("{}", series::table(&rows).trim_end());
    if let Err(e) = series::write_junit(&root, &args.workload.to_string(), &rows) {
        errln!("watermark run: no junit.xml for the corpus: {e}");
    }
    let failed = rows.iter().filter(|r| r.exit_code != 0).count();
    outln!(
        "corpus: {} of {} cases run, {failed} failed; outcome {} (exit {})",
        rows.len(),
        cases.len(),
        worst.outcome(),
        worst as i32
    );
    outln!("corpus folder: {}", root.display());
    worst
}
