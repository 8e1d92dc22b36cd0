//! How `watermark check` judges a history, phase by phase: find it and tell its
//! format ([`Input::open`]), choose the models it is checked against
//! ([`Input::models`]), read it, run the checkers (a run folder as `watermark run`
//! judged it: `crate::judge`), judge its crash events as the run does, and note what
//! run.json says of a run that ended early.

use std::path::{Path, PathBuf};
use std::time::Duration;

use checker::check::{History, Model, read_history};
use checker::format::{self, Format};
use checker::history::Event;
use checker::linear::Options;
use checker::queue::ReplicaLog;
use checker::verdict::Results;
use clap::ValueEnum;

use super::input::{
    at, beginning, disorder_note, ended_early, final_logs, history_in, judged_by_harness,
    judged_events, read_run_json, slim,
};
use super::{FormatArg, Judged, Judging, checker_options};
use crate::options::WorkloadKind;

/// A history to judge: where it is, its format, and what its run folder says.
struct Input {
    path: PathBuf,
    /// The path as shown in messages.
    shown: String,
    format: Format,
    run_json: Option<serde_json::Value>,
    /// The run's workload, from its run.json.
    workload: Option<WorkloadKind>,
    replicas: Vec<ReplicaLog>,
}

/// Which models, and how to read the history for them.
struct Models {
    /// The model, if it is known before reading the history.
    known: Option<Model>,
    /// A mixed run: two workloads' operations, each judged by its own checker.
    mixed: Option<WorkloadKind>,
    /// Read compactly for this model (None: into events).
    read_for: Option<Model>,
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
    let input = Input::open(history, judging)?;
    let plan = input.models(judging, keep_events)?;
    let read = read_history(input.reader()?, input.format, plan.read_for)
        .map_err(|e| at(&input.shown, &e))?;
    let disorder = disorder_note(&input.shown, &read.disorders, judging.lenient)?;
    let models = input.checked_models(&plan, &read)?;
    let mut checked_as = models
        .iter()
        .map(|m| m.name())
        .collect::<Vec<_>>()
        .join(" and ");
    if let (true, Some(w)) = (models.is_empty(), input.workload) {
        // A Maelstrom workload is checked by its own check, not against a model.
        checked_as = w.to_string();
    }
    let options = options(judging, &models)?;
    let events = match (keep_events, read.parsed()) {
        (true, Some(p)) => p.events.clone(),
        _ => Vec::new(),
    };
    // The events the harness judges itself (crashes, availability), where the
    // history was read into events (else they are read from the file).
    let recorded: Option<Vec<Event>> = read.parsed().map(|p| {
        p.events
            .iter()
            .filter(|e| judged_by_harness(e))
            .cloned()
            .map(slim)
            .collect()
    });
    let event_count = read.events;
    let mut results = input.check(read, &plan, &models, judging, &options, &checked_as)?;
    input.judge_harness_verdicts(&mut results, recorded, judging)?;
    let warning = input.run_json.as_ref().and_then(ended_early);
    for w in warning.iter().chain(&disorder) {
        for c in results.checkers.values_mut() {
            c.notes.push(w.clone());
        }
    }
    Ok(Judged {
        path: input.path,
        format: input.format,
        event_count,
        events,
        checked_as,
        replicas: input.replicas,
        results,
        warning,
    })
}

/// The checker's budgets, and a linearizability model's initial state.
fn options(judging: &Judging, models: &[Model]) -> Result<Options, String> {
    let mut options = checker_options(Duration::from_secs_f64(judging.checker_time_limit));
    if let Some(text) = &judging.initial {
        if models == [Model::Queue] {
            return Err(
                "--initial sets a linearizability model's initial state; the queue analysis has none"
                    .to_string(),
            );
        }
        let value = format::parse_value(text).map_err(|e| format!("--initial {text:?}: {e}"))?;
        options.initial = Some(value);
    }
    Ok(options)
}

impl Input {
    /// The history a path names, its format, and — a history.jsonl inside a run
    /// folder — the run's workload and the replicas' logs.
    fn open(history: &Path, judging: &Judging) -> Result<Input, String> {
        let path = if history.is_dir() {
            history_in(history)?
        } else {
            history.to_path_buf()
        };
        let mut input = Input {
            shown: path.display().to_string(),
            path,
            format: Format::Jsonl,
            run_json: None,
            workload: None,
            replicas: Vec::new(),
        };
        input.format = match judging.format {
            FormatArg::Auto => format::detect(&beginning(input.reader()?, &input.shown)?)
                .map_err(|e| at(&input.shown, &e))?,
            FormatArg::Jsonl => Format::Jsonl,
            FormatArg::Edn => Format::Edn,
            FormatArg::JepsenLog => Format::JepsenLog,
            FormatArg::PorcupineKv => Format::PorcupineKv,
        };
        let folder = input
            .path
            .parent()
            .filter(|d| input.format == Format::Jsonl && d.join("run.json").is_file())
            .map(Path::to_path_buf);
        input.run_json = folder.as_deref().and_then(read_run_json);
        input.workload = input
            .run_json
            .as_ref()
            .and_then(|v| v.get("workload"))
            .and_then(|w| w.as_str())
            .and_then(|w| WorkloadKind::from_str(w, false).ok());
        if let Some(d) = folder {
            input.replicas = final_logs(&d)?;
        }
        Ok(input)
    }

    fn reader(&self) -> Result<std::io::BufReader<std::fs::File>, String> {
        std::fs::File::open(&self.path)
            .map(std::io::BufReader::new)
            .map_err(|e| {
                format!(
                    "cannot read {}: {e} (give a history file or a run folder)",
                    self.shown
                )
            })
    }

    fn cannot_tell(&self) -> String {
        let names: Vec<&str> = Model::ALL.iter().map(|m| m.name()).collect();
        format!(
            "{}: cannot tell which model to check against; name it with --model {}",
            self.shown,
            names.join("|")
        )
    }

    /// The model, if it is known before reading the history (--model, the run's
    /// workload, or a history.jsonl's operations, named in a quick first pass so
    /// that it is read only for the model it is checked against).
    fn models(&self, judging: &Judging, keep_events: bool) -> Result<Models, String> {
        let mixed = self.workload.filter(|w| w.model().is_none());
        let known = match (judging.model, self.workload) {
            (Some(m), _) => Some(m),
            (None, Some(w)) => w.model(),
            (None, None) if self.format == Format::Jsonl => {
                let names = checker::check::operation_names(self.reader()?)
                    .map_err(|e| at(&self.shown, &e))?;
                Some(
                    Model::infer_from_names(self.format, names.iter().map(String::as_str))
                        .ok_or_else(|| self.cannot_tell())?,
                )
            }
            (None, None) => None,
        };
        let read_for = if keep_events || mixed.is_some() {
            None
        } else {
            known
        };
        Ok(Models {
            known,
            mixed,
            read_for,
        })
    }

    /// The models checked against: --model, else the run's workload (a mixed run:
    /// the queue analysis and the register's model), else what the format and the
    /// operations imply.
    fn checked_models(&self, plan: &Models, read: &History) -> Result<Vec<Model>, String> {
        Ok(match (plan.known, plan.mixed) {
            (Some(m), _) => vec![m],
            (None, Some(w)) => w.parts().iter().filter_map(|p| p.model()).collect(),
            (None, None) => vec![
                read.parsed()
                    .and_then(|p| Model::infer(self.format, &p.events))
                    .ok_or_else(|| self.cannot_tell())?,
            ],
        })
    }

    /// Run the checkers: a mixed run's each on its own operations, else the one model.
    fn check(
        &self,
        read: History,
        plan: &Models,
        models: &[Model],
        judging: &Judging,
        options: &Options,
        checked_as: &str,
    ) -> Result<Results, String> {
        let failed = |message: String, line: Option<usize>| match line {
            Some(line) => format!(
                "{}:{line}: {message} (checking as {checked_as})",
                self.shown
            ),
            None => format!("{}: {message} (checking as {checked_as})", self.shown),
        };
        let (replicas, fmt) = (&self.replicas, self.format);
        if let (Some(w), Some(parsed)) = (plan.mixed, read.parsed()) {
            let judged = match judging.model {
                Some(m) => crate::judge::judge_as(w, m, fmt, &parsed.events, replicas, options),
                None => crate::judge::judge(w, fmt, &parsed.events, replicas, options),
            };
            return judged
                .map_err(|e| failed(e.message, e.index.and_then(|i| parsed.line_of_index(i))));
        }
        read.check(models[0], replicas, options)
            .map_err(|e| failed(e.message, e.line))
    }

    /// The harness's own verdicts (crashes, protocol errors, availability), as the
    /// run judged them.
    fn judge_harness_verdicts(
        &self,
        results: &mut Results,
        recorded: Option<Vec<Event>>,
        judging: &Judging,
    ) -> Result<(), String> {
        if self.format != Format::Jsonl {
            return Ok(());
        }
        let allowed_by_run = self
            .run_json
            .as_ref()
            .and_then(|r| r.pointer("/options/allow_crashes"))
            .and_then(|a| a.as_bool())
            .unwrap_or(false);
        let events = match recorded {
            Some(events) => events,
            None => judged_events(self.reader()?, &self.shown)?,
        };
        crate::judge::add_harness_verdicts(
            results,
            &events,
            judging.allow_crashes || allowed_by_run,
        );
        Ok(())
    }
}
