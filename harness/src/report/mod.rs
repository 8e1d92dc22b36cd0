//! Reports: what people look at when a campaign fails (docs/run-folder.md).
//!
//! Everything is rebuilt from the run folder's files — `run.json`,
//! `history.jsonl`, `results.json`, `nodes/<id>/final-log.jsonl` — so
//! `watermark report RUN_DIR` can re-render a folder at any time, and `watermark
//! run` calls [`write_reports`] once its verdict is written.
//!
//! - [`folder`]: reading the run folder back, with errors naming file and line;
//! - `faults`: nemesis events folded into shaded fault periods;
//! - `coverage`: the replication transitions the campaign went through, and why
//!   the nemesis chose each of its patterns;
//! - `charts`: timeline, latency and throughput pictures in one plotting frame,
//!   downsampled for big runs;
//! - [`page`]: the self-contained `report.html`, with `anomalies` (each in words,
//!   with a close-up) and the `linearization` picture of a non-linearizable key;
//! - `text`: escaping, shortened values, links to operations;
//! - `junit`: `junit.xml` for CI.

mod anomalies;
mod charts;
mod coverage;
mod faults;
pub mod folder;
mod history;
pub(crate) mod junit;
mod linearization;
mod messages;
pub mod page;
pub(crate) mod text;

use std::fmt;
use std::path::{Path, PathBuf};

use crate::exit::Exit;

/// Why a report could not be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportError {
    /// The run folder is missing, incomplete or malformed (exit 64).
    Input(String),
    /// A report file could not be written (exit 3).
    Write(String),
}

impl ReportError {
    pub fn input(message: impl Into<String>) -> ReportError {
        ReportError::Input(message.into())
    }

    /// The exit code this failure ends `watermark report` with.
    pub fn exit(&self) -> Exit {
        match self {
            ReportError::Input(_) => Exit::Usage,
            ReportError::Write(_) => Exit::HarnessFailed,
        }
    }
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Input(m) | ReportError::Write(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ReportError {}

/// The files [`write_reports`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub html: PathBuf,
    pub junit: PathBuf,
}

/// Render `report.html` and `junit.xml` into `run_dir` from its files.
///
/// This is what `watermark run` calls at the end of a run, after `results.json`
/// is written, and what `watermark report` does.
pub fn write_reports(run_dir: &Path) -> Result<Written, ReportError> {
    let data = folder::load(run_dir)?;
    let page = page::render(&data);
    let xml = junit::render(&data)
        .map_err(|e| ReportError::Write(format!("cannot render junit.xml: {e}")))?;
    let written = Written {
        html: run_dir.join("report.html"),
        junit: run_dir.join("junit.xml"),
    };
    write_atomically(&written.html, page.as_bytes())?;
    write_atomically(&written.junit, xml.as_bytes())?;
    Ok(written)
}

/// Write `junit.xml` into `run_dir` for a run that ended without a verdict
/// (`outcome`: `harness-failed` or `interrupted`): one errored test case giving
/// `reason`. Its suite's properties come from run.json when it reads.
pub fn write_unjudged_junit(
    run_dir: &Path,
    outcome: &str,
    reason: &str,
) -> Result<PathBuf, ReportError> {
    let config = std::fs::read_to_string(run_dir.join("run.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    let xml = junit::render_unjudged(&folder::folder_name(run_dir), &config, outcome, reason)
        .map_err(|e| ReportError::Write(format!("cannot render junit.xml: {e}")))?;
    let path = run_dir.join("junit.xml");
    write_atomically(&path, xml.as_bytes())?;
    Ok(path)
}

/// Write a report file through [`crate::store::write_atomic`], so a reader (or
/// `watermark serve`) never sees half a report.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    crate::store::write_atomic(path, bytes).map_err(|e| {
        ReportError::Write(format!(
            "cannot write {}: {e} (is the run folder writable?)",
            path.display()
        ))
    })
}

/// Options of `watermark report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// A run folder (e.g. results/latest), or any history `watermark check` reads:
    /// a history file (history.jsonl, Jepsen history.edn, a Jepsen or Porcupine
    /// log) or a Jepsen store folder.
    #[arg(value_name = "RUN_DIR|HISTORY")]
    pub path: PathBuf,
    /// Where report.html and junit.xml go [default: the run folder; for a history,
    /// the folder given or the one holding the file].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// For a history outside a run folder: how it is read and judged, as by
    /// `watermark check`.
    #[command(flatten)]
    pub judging: crate::commands::check::Judging,
}

/// Run `watermark report`.
pub fn run(args: ReportArgs) -> Exit {
    let written = match history::run_folder_of(&args.path) {
        Some(dir) if args.out.is_none() => write_reports(&dir),
        // Nothing there: say so as for a run folder.
        None if !args.path.exists() => write_reports(&args.path),
        _ => {
            let out = args
                .out
                .clone()
                .unwrap_or_else(|| history::default_out(&args.path));
            history::write(&args.path, &args.judging, &out)
        }
    };
    match written {
        Ok(w) => {
            println!("{}", w.html.display());
            println!("{}", w.junit.display());
            Exit::Valid
        }
        Err(e) => {
            eprintln!("watermark report: {e}");
            e.exit()
        }
    }
}
