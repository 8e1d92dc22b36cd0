//! `watermark check`: judge a history file offline — ours (`history.jsonl`, alone
//! or inside a run folder), a Jepsen `history.edn`, or a Porcupine test log.
//!
//! This is the file-reading shell around the pure `checker` crate: it reads the
//! history (and, inside a run folder, `run.json` for the workload and every
//! `nodes/<id>/final-log.jsonl` for replica divergence), picks the format and the
//! model, runs the checker and prints the verdict. Unreadable or malformed input is
//! bad usage (exit 64) with the file, the line and what was expected.

use std::path::{Path, PathBuf};
use std::time::Duration;

use checker::check::{Model, check};
use checker::format::{self, Format};
use checker::linear::Options;
use checker::queue::ReplicaLog;
use checker::verdict::{Results, Validity};
use clap::ValueEnum;

use crate::exit::Exit;
use crate::options::WorkloadKind;
use crate::store::FinalLogs;

/// A history file's format (`auto`: detected from the content).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    Auto,
    Jsonl,
    Edn,
    JepsenLog,
    PorcupineKv,
}

/// The model to check against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModelArg {
    Register,
    CasRegister,
    Kv,
    Queue,
}

/// Options of `watermark check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The history file (history.jsonl, history.edn, a Jepsen or Porcupine log), or
    /// a run folder (its history.jsonl is checked).
    pub history: PathBuf,
    /// The file's format.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,
    /// The model [default: the run folder's workload from run.json, else what the
    /// format and the operations imply].
    #[arg(long, value_enum)]
    pub model: Option<ModelArg>,
    /// The checker's budget in seconds; past it the verdict is unknown (exit 2).
    #[arg(long, value_name = "SECS", default_value_t = 300.0)]
    pub time_limit: f64,
    /// Print results.json to stdout instead of the text verdict.
    #[arg(long)]
    pub json: bool,
}

/// Bad input: what was wrong, where, and what to do. Exit 64.
fn usage(message: String) -> Exit {
    eprintln!("watermark check: {message}");
    Exit::Usage
}

/// Run `watermark check`.
pub fn run(args: CheckArgs) -> Exit {
    match check_file(&args) {
        Ok(exit) => exit,
        Err(message) => usage(message),
    }
}

fn check_file(args: &CheckArgs) -> Result<Exit, String> {
    if !(args.time_limit.is_finite() && args.time_limit > 0.0) {
        return Err(format!(
            "--time-limit must be a positive number of seconds, not {}",
            args.time_limit
        ));
    }
    let path = if args.history.is_dir() {
        args.history.join("history.jsonl")
    } else {
        args.history.clone()
    };
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {shown}: {e} (give a history file or a run folder)"))?;
    let fmt = match args.format {
        FormatArg::Auto => format::detect(&text).map_err(|e| at(&shown, &e))?,
        FormatArg::Jsonl => Format::Jsonl,
        FormatArg::Edn => Format::Edn,
        FormatArg::JepsenLog => Format::JepsenLog,
        FormatArg::PorcupineKv => Format::PorcupineKv,
    };
    let parsed = format::parse(&text, fmt).map_err(|e| at(&shown, &e))?;

    // A history.jsonl inside a run folder: the workload and the replicas' logs.
    let folder = path
        .parent()
        .filter(|d| fmt == Format::Jsonl && d.join("run.json").is_file());
    let run_json = folder.and_then(read_run_json);
    let workload = run_json
        .as_ref()
        .and_then(|v| v.get("workload"))
        .and_then(|w| w.as_str())
        .and_then(|w| WorkloadKind::from_str(w, false).ok());
    let replicas = match folder {
        Some(d) => final_logs(d)?,
        None => Vec::new(),
    };

    let model = match args.model {
        Some(ModelArg::Register) => Model::Register,
        Some(ModelArg::CasRegister) => Model::CasRegister,
        Some(ModelArg::Kv) => Model::Kv,
        Some(ModelArg::Queue) => Model::Queue,
        None => match workload {
            Some(WorkloadKind::Queue) => Model::Queue,
            Some(WorkloadKind::Register) => Model::CasRegister,
            None => Model::infer(fmt, &parsed.events).ok_or_else(|| {
                format!("{shown}: cannot tell which model to check against; name it with --model register|cas-register|kv|queue")
            })?,
        },
    };

    let options = Options {
        time_limit: Some(Duration::from_secs_f64(args.time_limit)),
        ..Options::default()
    };
    let mut results =
        check(fmt, &parsed.events, model, &replicas, &options).map_err(|e| {
            match e.index.and_then(|i| parsed.line_of_index(i)) {
                Some(line) => format!(
                    "{shown}:{line}: {} (checking as {})",
                    e.message,
                    model.name()
                ),
                None => format!("{shown}: {} (checking as {})", e.message, model.name()),
            }
        })?;

    if model == Model::Queue
        && let Some(run) = &run_json
    {
        cap_incomplete_run(&mut results, run);
    }

    if args.json {
        let json = serde_json::to_string_pretty(&results).unwrap_or_default();
        say(&format!("{json}\n"));
    } else {
        let logs = if replicas.is_empty() {
            String::new()
        } else {
            format!(", {} replica logs", replicas.len())
        };
        say(&format!(
            "{shown}: {} events ({}), checked as {}{logs}\n",
            parsed.events.len(),
            fmt.name(),
            model.name(),
        ));
        say(&results.render_text());
    }
    Ok(match results.valid {
        Validity::Valid => Exit::Valid,
        Validity::Invalid => Exit::Invalid,
        Validity::Unknown => Exit::Unknown,
    })
}

/// Print to stdout; a closed pipe (`| head`) is not worth a panic.
fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

fn at(file: &str, e: &format::ParseError) -> String {
    if e.line == 0 {
        format!("{file}: {}", e.message)
    } else {
        format!("{file}:{}: {}", e.line, e.message)
    }
}

/// A run folder's `run.json`, if it reads as JSON.
fn read_run_json(dir: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("run.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// A run whose end was incomplete (`"complete": false` in run.json: no
/// convergence, a partial drain, missing logs) cannot rule out lost writes: a clean
/// queue verdict is at best unknown, as `watermark run` judged it.
fn cap_incomplete_run(results: &mut Results, run: &serde_json::Value) {
    if run.get("complete").and_then(|c| c.as_bool()) != Some(false) {
        return;
    }
    let notes: Vec<&str> = run
        .get("notes")
        .and_then(|n| n.as_array())
        .map(|n| n.iter().filter_map(|s| s.as_str()).collect())
        .unwrap_or_default();
    let reason = if notes.is_empty() {
        "the end of the run was incomplete, so lost writes cannot be ruled out".to_string()
    } else {
        format!(
            "the end of the run was incomplete ({}), so lost writes cannot be ruled out",
            notes.join("; ")
        )
    };
    for c in results.checkers.values_mut() {
        c.cap_unknown(reason.clone());
    }
    *results = Results::new(std::mem::take(&mut results.checkers));
}

/// Every final log of a run folder; an unreadable or malformed one is an error.
fn final_logs(dir: &Path) -> Result<Vec<ReplicaLog>, String> {
    let logs = FinalLogs::read(&dir.join("nodes"));
    match logs.errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(logs.replicas),
    }
}
