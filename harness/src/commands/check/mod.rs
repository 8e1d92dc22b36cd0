//! `watermark check`: judge a history file offline — ours (`history.jsonl`, alone
//! or inside a run folder), a Jepsen `history.edn` (alone or inside a Jepsen store
//! folder), or a Porcupine test log.
//!
//! This is the file-reading shell around the pure `checker` crate: it reads the
//! history (and, inside a run folder, `run.json` for the workload and every
//! `nodes/<id>/final-log.jsonl` for replica divergence), picks the format and the
//! model (a run folder is judged as `watermark run` judged it: [`crate::judge`]),
//! gives the checker its budgets (the time limit, and a memory budget that follows
//! the machine), runs it — and, for our history, judges its `crash` events as the
//! run does (`crate::judge::crashes`) — and prints the verdict. Unreadable or malformed
//! input is bad usage (exit 64) with the file, the line and what was expected.

mod input;
mod judging;

pub(crate) use judging::judge;

use std::path::PathBuf;
use std::time::Duration;

use checker::check::Model;
use checker::format::Format;
use checker::linear::Options;
use checker::queue::ReplicaLog;
use checker::verdict::Validity;

use crate::exit::Exit;

/// A history file's format (`auto`: detected from the content).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    Auto,
    Jsonl,
    Edn,
    JepsenLog,
    PorcupineKv,
}

/// `--model`: one of the checker's models, by the name it gives each
/// ([`Model::name`]), listed with `--help` from [`Model::ALL`].
fn model_parser() -> impl clap::builder::TypedValueParser<Value = Model> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Model::ALL.map(Model::name))
        .try_map(|name| name.parse::<Model>())
}

/// Options of `watermark check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The history file (history.jsonl, history.edn, a Jepsen or Porcupine log), or
    /// a folder: a run folder (its history.jsonl is checked) or a Jepsen store
    /// folder (its history.edn).
    pub history: PathBuf,
    #[command(flatten)]
    pub judging: Judging,
    /// Print results.json to stdout instead of the text verdict.
    #[arg(long)]
    pub json: bool,
}

/// How a history is read and judged: by `watermark check`, and by `watermark
/// report` for a history outside a run folder.
#[derive(Debug, Clone, clap::Args)]
pub struct Judging {
    /// The file's format.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,
    /// The model [default: the run folder's workload from run.json, else what the
    /// format and the operations imply].
    #[arg(long, value_name = "MODEL", value_parser = model_parser())]
    pub model: Option<Model>,
    /// The model's initial state, as JSON or EDN: a register's value (`0`), a
    /// multi-register's map (`{:x 0 :y 0}`), a set's or a queue's elements
    /// (`[1 2]`), a mutex held (`true`) [default: the model's own: nil, empty,
    /// free].
    #[arg(long, value_name = "VALUE")]
    pub initial: Option<String>,
    /// The checker's budget in seconds; past it the verdict is unknown (exit 2).
    /// Its memory budget is a quarter of the machine's memory. (`--time-limit`
    /// is an older name.)
    #[arg(
        long,
        alias = "time-limit",
        value_name = "SECS",
        default_value_t = 300.0
    )]
    pub checker_time_limit: f64,
    /// Check a history that breaks its order (a duplicate or decreasing index, a
    /// completion timed before its invocation, a process's time running
    /// backwards) anyway, with a warning, instead of refusing it.
    #[arg(long)]
    pub lenient: bool,
    /// Crashes the history records (`crash` events: a broker that died on its own)
    /// are noted, not anomalies [default: as the run folder's run.json says].
    #[arg(long)]
    pub allow_crashes: bool,
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

/// A history read and judged.
pub(crate) struct Judged {
    /// The history file (inside the folder given, if a folder was).
    pub path: PathBuf,
    pub format: Format,
    /// How many events the history holds.
    pub event_count: usize,
    /// The events, when asked for (a report needs them; a check of a queue
    /// history reads it compactly instead).
    pub events: Vec<checker::history::Event>,
    /// The models it was checked against, by name ("queue and cas-register").
    pub checked_as: String,
    /// The replicas' final logs of a run folder.
    pub replicas: Vec<ReplicaLog>,
    pub results: checker::verdict::Results,
    /// What run.json says about a run that ended early or incompletely (also a
    /// note of every checker).
    pub warning: Option<String>,
}

impl Judged {
    pub fn exit(&self) -> Exit {
        match self.results.valid {
            Validity::Valid => Exit::Valid,
            Validity::Invalid => Exit::Invalid,
            Validity::Unknown => Exit::Unknown,
        }
    }
}

fn check_file(args: &CheckArgs) -> Result<Exit, String> {
    let judged = judge(&args.history, &args.judging, false)?;
    let shown = judged.path.display().to_string();
    if args.json {
        let json = serde_json::to_string_pretty(&judged.results).unwrap_or_default();
        say(&format!("{json}\n"));
        if let Some(w) = &judged.warning {
            eprintln!("watermark check: warning: {w}");
        }
    } else {
        let logs = if judged.replicas.is_empty() {
            String::new()
        } else {
            format!(", {} replica logs", judged.replicas.len())
        };
        say(&format!(
            "{shown}: {} events ({}), checked as {}{logs}\n",
            judged.event_count,
            judged.format.name(),
            judged.checked_as,
        ));
        if let Some(w) = &judged.warning {
            say(&format!("warning: {w}\n"));
        }
        say(&judged.results.render_text());
    }
    Ok(judged.exit())
}

/// Print to stdout; a closed pipe (`| head`) is not worth a panic.
fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// The checker's budgets: `time_limit`, and a quarter of the machine's memory.
pub(crate) fn checker_options(time_limit: Duration) -> Options {
    let default = Options::default();
    Options {
        time_limit: Some(time_limit),
        max_memory: physical_memory().map_or(default.max_memory, checker::linear::memory_budget),
        ..default
    }
}

/// The machine's physical memory in bytes (Linux: `MemTotal` of /proc/meminfo).
fn physical_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
