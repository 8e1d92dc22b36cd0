//! Reading a run folder back (docs/run-folder.md): everything a report
//! shows is rebuilt from these files, so a report can be re-rendered long after the
//! run, on another machine. `run.json` is read as loose JSON (older or newer runs
//! may carry other fields); the history and the verdict use the checker's types.

use std::fs;
use std::path::{Path, PathBuf};

use checker::history::{Event, Op};
use checker::queue::ReplicaLog;
use checker::verdict::Results;
use serde_json::Value;

use super::ReportError;
use crate::nemesis::Coverage;
use crate::store::FinalLogs;

/// The files of one run folder, parsed.
#[derive(Debug, Clone)]
pub struct RunData {
    pub dir: PathBuf,
    /// `run.json`: the configuration, as loose JSON (an object).
    pub config: Value,
    /// `history.jsonl`, in file order.
    pub events: Vec<Event>,
    /// The client operations, paired.
    pub ops: Vec<Op>,
    /// `results.json`.
    pub results: Results,
    /// results.json's `coverage`: the replication transitions the campaign went
    /// through (absent from older runs and from `watermark check`'s results.json).
    pub coverage: Option<Coverage>,
    /// Every `nodes/<id>/final-log.jsonl` found.
    pub replicas: Vec<ReplicaLog>,
    /// Things the report should mention but that do not stop it (a torn last line).
    pub warnings: Vec<String>,
}

impl RunData {
    /// The folder's name, e.g. `queue-20261129T233012Z-s42` (also when reached
    /// through the `latest` link).
    pub fn name(&self) -> String {
        let real = fs::canonicalize(&self.dir).unwrap_or_else(|_| self.dir.clone());
        folder_name(&real)
    }

    /// A string field of run.json, if present.
    pub fn config_str(&self, key: &str) -> Option<String> {
        match self.config.get(key)? {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            v => Some(v.to_string()),
        }
    }

    /// The time of the last event (nanoseconds since the run started).
    pub fn end_time(&self) -> u64 {
        self.events.iter().map(|e| e.time).max().unwrap_or(0)
    }
}

pub(crate) fn folder_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

/// Read and parse a run folder. Missing or malformed files are input errors that
/// name the file (and line) at fault.
pub fn load(dir: &Path) -> Result<RunData, ReportError> {
    let meta = fs::metadata(dir).map_err(|e| {
        ReportError::input(format!(
            "cannot open the run folder {}: {e} (give the folder `watermark run` printed, e.g. results/latest)",
            dir.display()
        ))
    })?;
    if !meta.is_dir() {
        return Err(ReportError::input(format!(
            "{} is not a directory: give a run folder (results/<workload>-<time>-s<seed>/)",
            dir.display()
        )));
    }
    let mut warnings = Vec::new();

    let run_json = dir.join("run.json");
    let config: Value = parse_json(&run_json, &read(&run_json)?)?;
    if !config.is_object() {
        return Err(ReportError::input(format!(
            "{}: expected a JSON object with the run's configuration",
            run_json.display()
        )));
    }

    let history = dir.join("history.jsonl");
    let events = parse_history(&history, &read(&history)?, &mut warnings)?;
    let ops = checker::history::pair(&events).map_err(|e| {
        let line = e.position + 1;
        ReportError::input(format!(
            "{}:{line}: {} (the history does not pair invocations with completions)",
            history.display(),
            e.message
        ))
    })?;

    let results_json = dir.join("results.json");
    if !results_json.exists() {
        return Err(ReportError::input(format!(
            "{} is missing: the run ended before its verdict was written; `watermark check {} --json > {}` writes it",
            results_json.display(),
            history.display(),
            results_json.display()
        )));
    }
    let results_text = read(&results_json)?;
    let results: Results = parse_json(&results_json, &results_text)?;
    let coverage = match parse_json::<Value>(&results_json, &results_text)?.get("coverage") {
        None | Some(Value::Null) => None,
        Some(c) => match serde_json::from_value::<Coverage>(c.clone()) {
            Ok(c) => Some(c),
            Err(e) => {
                warnings.push(format!(
                    "{}: the coverage is malformed ({e}); not shown",
                    results_json.display()
                ));
                None
            }
        },
    };

    // A run that died before the final dump has no final logs.
    let logs = FinalLogs::read(&dir.join("nodes"));
    if let Some(e) = logs.errors.into_iter().next() {
        return Err(ReportError::input(e));
    }
    let replicas = logs.replicas;
    Ok(RunData {
        dir: dir.to_path_buf(),
        config,
        events,
        ops,
        results,
        coverage,
        replicas,
        warnings,
    })
}

fn read(path: &Path) -> Result<String, ReportError> {
    fs::read_to_string(path).map_err(|e| {
        let hint = if e.kind() == std::io::ErrorKind::NotFound {
            " (is this a run folder? `watermark run` writes one under results/)"
        } else {
            ""
        };
        ReportError::input(format!("cannot read {}: {e}{hint}", path.display()))
    })
}

fn parse_json<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, ReportError> {
    serde_json::from_str(text).map_err(|e| {
        ReportError::input(format!(
            "{}:{}:{}: malformed: {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })
}

/// Parse `history.jsonl`. A last line without its newline that does not parse is
/// what a harness killed mid-write leaves: it is dropped with a warning.
fn parse_history(
    path: &Path,
    text: &str,
    warnings: &mut Vec<String>,
) -> Result<Vec<Event>, ReportError> {
    let mut events = Vec::new();
    let torn_tail = !text.is_empty() && !text.ends_with('\n');
    let count = text.lines().count();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match checker::format::event_line(line) {
            Ok(e) => events.push(e),
            Err(_) if torn_tail && i + 1 == count => warnings.push(format!(
                "{}:{}: incomplete last line ignored (the writer stopped mid-line)",
                path.display(),
                i + 1
            )),
            Err(e) => {
                return Err(ReportError::input(format!(
                    "{}:{}: {e}",
                    path.display(),
                    i + 1
                )));
            }
        }
    }
    Ok(events)
}
