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

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use checker::check::{Model, read_history};
use checker::format::{self, Format};
use checker::linear::Options;
use checker::queue::ReplicaLog;
use checker::verdict::Validity;
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

/// Read the history at `history` (a file, a run folder or a Jepsen store folder)
/// and judge it as `judging` says; bad input is an error naming file and line.
///
/// With `keep_events` the events are kept in [`Judged::events`]; without, a
/// queue history is read straight into the queue analysis's compact operations.
pub(crate) fn judge(
    history: &Path,
    judging: &Judging,
    keep_events: bool,
) -> Result<Judged, String> {
    if !(judging.checker_time_limit.is_finite() && judging.checker_time_limit > 0.0) {
        return Err(format!(
            "--checker-time-limit must be a positive number of seconds, not {}",
            judging.checker_time_limit
        ));
    }
    let path = if history.is_dir() {
        history_in(history)?
    } else {
        history.to_path_buf()
    };
    let shown = path.display().to_string();
    let open = || {
        std::fs::File::open(&path)
            .map(std::io::BufReader::new)
            .map_err(|e| format!("cannot read {shown}: {e} (give a history file or a run folder)"))
    };
    let fmt = match judging.format {
        FormatArg::Auto => {
            format::detect(&beginning(open()?, &shown)?).map_err(|e| at(&shown, &e))?
        }
        FormatArg::Jsonl => Format::Jsonl,
        FormatArg::Edn => Format::Edn,
        FormatArg::JepsenLog => Format::JepsenLog,
        FormatArg::PorcupineKv => Format::PorcupineKv,
    };

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

    let cannot_tell = || {
        let names: Vec<&str> = Model::ALL.iter().map(|m| m.name()).collect();
        format!(
            "{shown}: cannot tell which model to check against; name it with --model {}",
            names.join("|")
        )
    };
    // A mixed run's history holds two workloads' operations, each judged by its
    // own checker on its own operations (crate::judge): read it into events.
    let mixed = workload.filter(|w| w.model().is_none());
    // The model, if it is known before reading the history: a history.jsonl's
    // operations are named in a quick first pass, so that it is read only for
    // the model it is checked against.
    let known = match (judging.model, workload) {
        (Some(m), _) => Some(m),
        (None, Some(w)) => w.model(),
        (None, None) if fmt == Format::Jsonl => {
            let names = checker::check::operation_names(open()?).map_err(|e| at(&shown, &e))?;
            Some(
                Model::infer_from_names(fmt, names.iter().map(String::as_str))
                    .ok_or_else(cannot_tell)?,
            )
        }
        (None, None) => None,
    };
    let read_for = if keep_events || mixed.is_some() {
        None
    } else {
        known
    };
    let history = read_history(open()?, fmt, read_for).map_err(|e| at(&shown, &e))?;
    let disorder = disorder_note(&shown, &history.disorders, judging.lenient)?;
    // The models checked against: --model, else the run's workload (a mixed run:
    // the queue analysis and the register's model), else what the format and the
    // operations imply.
    let models: Vec<Model> = match (known, mixed) {
        (Some(m), _) => vec![m],
        (None, Some(w)) => w.parts().iter().filter_map(|p| p.model()).collect(),
        (None, None) => vec![
            history
                .parsed()
                .and_then(|p| Model::infer(fmt, &p.events))
                .ok_or_else(cannot_tell)?,
        ],
    };
    let checked_as = models
        .iter()
        .map(|m| m.name())
        .collect::<Vec<_>>()
        .join(" and ");

    let mut options = checker_options(Duration::from_secs_f64(judging.checker_time_limit));
    if let Some(text) = &judging.initial {
        if models == [Model::Queue] {
            return Err("--initial sets a linearizability model's initial state; the queue analysis has none".to_string());
        }
        let value = format::parse_value(text).map_err(|e| format!("--initial {text:?}: {e}"))?;
        options.initial = Some(value);
    }
    let event_count = history.events;
    let events = match (keep_events, history.parsed()) {
        (true, Some(p)) => p.events.clone(),
        _ => Vec::new(),
    };
    // The crash events, where the history was read into events (else they are
    // read from the file below).
    let recorded_crashes: Option<Vec<checker::history::Event>> = history
        .parsed()
        .map(|p| p.events.iter().filter(|e| is_crash(e)).cloned().collect());
    let failed = |message: String, line: Option<usize>| match line {
        Some(line) => format!("{shown}:{line}: {message} (checking as {checked_as})"),
        None => format!("{shown}: {message} (checking as {checked_as})"),
    };
    let mut results = match (mixed, history.parsed()) {
        (Some(w), Some(parsed)) => {
            let judged = match judging.model {
                Some(m) => crate::judge::judge_as(w, m, fmt, &parsed.events, &replicas, &options),
                None => crate::judge::judge(w, fmt, &parsed.events, &replicas, &options),
            };
            judged.map_err(|e| failed(e.message, e.index.and_then(|i| parsed.line_of_index(i))))?
        }
        _ => history
            .check(models[0], &replicas, &options)
            .map_err(|e| failed(e.message, e.line))?,
    };

    // The harness's own verdict on the processes it watched, as the run judged it.
    if fmt == Format::Jsonl {
        let allowed_by_run = run_json
            .as_ref()
            .and_then(|r| r.pointer("/options/allow_crashes"))
            .and_then(|a| a.as_bool())
            .unwrap_or(false);
        let crashes = match recorded_crashes {
            Some(crashes) => crashes,
            None => crash_events(open()?, &shown)?,
        };
        crate::judge::crashes::add_verdict(
            &mut results,
            &crashes,
            judging.allow_crashes || allowed_by_run,
        );
    }

    let warning = run_json.as_ref().and_then(ended_early);
    for w in warning.iter().chain(&disorder) {
        for c in results.checkers.values_mut() {
            c.notes.push(w.clone());
        }
    }
    Ok(Judged {
        path,
        format: fmt,
        event_count,
        events,
        checked_as,
        replicas,
        results,
        warning,
    })
}

/// The `crash` events of a history.jsonl, read a line at a time (only lines that
/// mention a crash are parsed).
fn crash_events(
    input: impl std::io::BufRead,
    shown: &str,
) -> Result<Vec<checker::history::Event>, String> {
    let mut crashes = Vec::new();
    for line in input.lines() {
        let line = line.map_err(|e| format!("cannot read {shown}: {e}"))?;
        if !line.contains(crate::judge::crashes::EVENT) {
            continue;
        }
        // A torn or malformed line was already reported by the reading above.
        if let Ok(parsed) = format::parse(&line, Format::Jsonl) {
            crashes.extend(parsed.events.into_iter().filter(is_crash));
        }
    }
    Ok(crashes)
}

fn is_crash(e: &checker::history::Event) -> bool {
    e.process == checker::history::Process::Nemesis && e.f == crate::judge::crashes::EVENT
}

/// The beginning of a history file (its first MiB, whole lines where it can), to
/// tell its format by.
fn beginning(mut input: impl std::io::Read, shown: &str) -> Result<String, String> {
    let mut head = Vec::new();
    input
        .by_ref()
        .take(1 << 20)
        .read_to_end(&mut head)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if head.len() == 1 << 20
        && let Some(end) = head.iter().rposition(|&b| b == b'\n')
    {
        head.truncate(end + 1);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

/// A history that breaks its order is bad input (the first such event, by its
/// line); with `--lenient` each is a warning on stderr (the first ten), and the
/// returned note says so in the results.
fn disorder_note(
    shown: &str,
    disorders: &[checker::history::Disorder],
    lenient: bool,
) -> Result<Option<String>, String> {
    let Some(first) = disorders.first() else {
        return Ok(None);
    };
    let n = disorders.len();
    if !lenient {
        let more = if n > 1 {
            format!(" ({} more such events)", n - 1)
        } else {
            String::new()
        };
        return Err(format!(
            "{shown}:{}: {}{more}; the history breaks its order (--lenient checks it anyway)",
            first.line, first.message
        ));
    }
    for d in disorders.iter().take(10) {
        eprintln!(
            "watermark check: warning: {shown}:{}: {}",
            d.line, d.message
        );
    }
    if n > 10 {
        eprintln!("watermark check: warning: … and {} more", n - 10);
    }
    let events = if n == 1 {
        "1 event"
    } else {
        &format!("{n} events")
    };
    Ok(Some(format!(
        "the history breaks its order at {events} (first: line {}: {}); checked anyway (--lenient)",
        first.line, first.message
    )))
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

/// The history a folder holds: a watermark run folder's history.jsonl, or a
/// Jepsen store folder's history.edn.
fn history_in(dir: &Path) -> Result<PathBuf, String> {
    ["history.jsonl", "history.edn"]
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "{} holds neither history.jsonl (a watermark run folder) nor history.edn \
                 (a Jepsen store folder); give a history file or such a folder",
                dir.display()
            )
        })
}

/// What run.json says about a run that ended early or whose end was incomplete
/// (`"complete": false`: no convergence, a partial drain, missing logs; no end
/// time: interrupted, or the harness died). The history still gets a verdict —
/// what it recorded is judged, and the checker says unknown where it cannot
/// judge — but the reader should know.
fn ended_early(run: &serde_json::Value) -> Option<String> {
    let notes: Vec<&str> = run
        .get("notes")
        .and_then(|n| n.as_array())
        .map(|n| n.iter().filter_map(|s| s.as_str()).collect())
        .unwrap_or_default();
    let with_notes = |what: String| {
        if notes.is_empty() {
            what
        } else {
            format!("{what} ({})", notes.join("; "))
        }
    };
    let outcome = run.get("outcome").and_then(|o| o.as_str());
    if run.get("ended_at").is_some_and(|e| e.is_null()) || outcome == Some("harness-failed") {
        let how = outcome.map_or("it never recorded its end".to_string(), |o| {
            format!("its outcome is {o}")
        });
        return Some(with_notes(format!(
            "the run ended early ({how}): the verdict is on the history it recorded"
        )));
    }
    if outcome == Some("interrupted") {
        return Some(with_notes(
            "the run was interrupted: the verdict is on the history it recorded".to_string(),
        ));
    }
    if run.get("complete").and_then(|c| c.as_bool()) == Some(false) {
        return Some(with_notes(
            "the end of the run was incomplete: the verdict is on what the run recorded"
                .to_string(),
        ));
    }
    None
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

/// Every final log of a run folder; an unreadable or malformed one is an error.
fn final_logs(dir: &Path) -> Result<Vec<ReplicaLog>, String> {
    let logs = FinalLogs::read(&dir.join("nodes"));
    match logs.errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(logs.replicas),
    }
}
