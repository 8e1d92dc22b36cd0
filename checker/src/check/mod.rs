//! Which checker judges a history, and running it: the one call `watermark run`
//! and `watermark check` make — on events in memory ([`check`]), or on a history
//! read from a file for checking ([`read_history`], [`History::check`]).

mod reading;

pub use reading::{History, operation_names, read_history};

use std::collections::BTreeMap;

use crate::format::Format;
use crate::history::{Event, EventType, Process};
use crate::linear::{self, ModelKind, Options};
use crate::queue::{self, ReplicaLog};
use crate::verdict::Results;

/// What a history is checked as: Knossos's models by their Knossos names, the kv
/// store of Porcupine's logs, and the Kafka queue analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    Register,
    CasRegister,
    Mutex,
    MultiRegister,
    Set,
    FifoQueue,
    UnorderedQueue,
    Kv,
    Queue,
}

impl Model {
    /// Every model, in the order `--model` lists them.
    pub const ALL: [Model; 9] = [
        Model::Register,
        Model::CasRegister,
        Model::Mutex,
        Model::MultiRegister,
        Model::Set,
        Model::FifoQueue,
        Model::UnorderedQueue,
        Model::Kv,
        Model::Queue,
    ];

    /// The linearizability model it is (None: the queue analysis).
    pub fn linear(self) -> Option<ModelKind> {
        Some(match self {
            Model::Register => ModelKind::Register,
            Model::CasRegister => ModelKind::CasRegister,
            Model::Mutex => ModelKind::Mutex,
            Model::MultiRegister => ModelKind::MultiRegister,
            Model::Set => ModelKind::Set,
            Model::FifoQueue => ModelKind::FifoQueue,
            Model::UnorderedQueue => ModelKind::UnorderedQueue,
            Model::Kv => ModelKind::Kv,
            Model::Queue => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Model::Register => "register",
            Model::CasRegister => "cas-register",
            Model::Mutex => "mutex",
            Model::MultiRegister => "multi-register",
            Model::Set => "set",
            Model::FifoQueue => "fifo-queue",
            Model::UnorderedQueue => "unordered-queue",
            Model::Kv => "kv",
            Model::Queue => "queue",
        }
    }

    /// The model a file format implies, or the operations' names suggest:
    /// `send`/`poll` → queue, `txn` → multi-register, `acquire`/`release` →
    /// mutex, `add` → set, `get`/`put`/`append` → kv, `read`/`write`/`cas` →
    /// cas-register. `enqueue`/`dequeue` could be either queue: `None`.
    pub fn infer(format: Format, events: &[Event]) -> Option<Model> {
        let fs = events
            .iter()
            .filter(|e| e.process != Process::Nemesis)
            .map(|e| e.f.as_str());
        Model::infer_from_names(format, fs)
    }

    /// [`Model::infer`] from the client operations' names.
    pub fn infer_from_names<'a>(
        format: Format,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Option<Model> {
        match format {
            Format::JepsenLog => return Some(Model::CasRegister),
            Format::PorcupineKv => return Some(Model::Kv),
            Format::Jsonl | Format::Edn => {}
        }
        let fs: std::collections::BTreeSet<&str> = names.into_iter().collect();
        let any = |names: &[&str]| names.iter().any(|f| fs.contains(f));
        if any(&["send", "poll", "final-poll"]) {
            Some(Model::Queue)
        } else if any(&["enqueue", "dequeue"]) {
            None
        } else if any(&["txn"]) {
            Some(Model::MultiRegister)
        } else if any(&["acquire", "release"]) {
            Some(Model::Mutex)
        } else if any(&["add"]) {
            Some(Model::Set)
        } else if any(&["get", "put", "append"]) {
            Some(Model::Kv)
        } else if any(&["read", "write", "cas"]) {
            Some(Model::CasRegister)
        } else {
            None
        }
    }
}

impl std::str::FromStr for Model {
    type Err = String;
    fn from_str(s: &str) -> Result<Model, String> {
        Model::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Model::ALL.iter().map(|m| m.name()).collect();
                format!("unknown model {s:?}: expected one of {}", names.join(", "))
            })
    }
}

/// A history the chosen checker cannot read: the history index and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckError {
    /// History index of the offending event, when one is to blame.
    pub index: Option<u64>,
    /// Its 1-based line in the history file, when read from one.
    pub line: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CheckError {}

/// Check a history: the queue analysis for queues (with the replicas' final logs,
/// if any), linearizability for the other models, beside the divergence of the
/// replicas' final logs, if any (a property of the logs alone). Jepsen log histories read a
/// failed cas as an observation, as Porcupine does; Jepsen EDN histories read a
/// nil read as matching any value, as Knossos does. Invocations that never
/// completed are indeterminate, like `info` (docs/history.md): they are counted
/// and noted, and the verdict is what the checker finds.
pub fn check(
    format: Format,
    events: &[Event],
    model: Model,
    replicas: &[ReplicaLog],
    options: &Options,
) -> Result<Results, CheckError> {
    let mut checkers = BTreeMap::new();
    if model == Model::Queue {
        let r = queue::check(events, replicas).map_err(|e| CheckError {
            line: None,
            index: match &e {
                queue::QueueError::Pair(p) => events.get(p.position).map(|e| e.index),
                queue::QueueError::Shape { index, .. } => Some(*index),
            },
            message: e.to_string(),
        })?;
        checkers.insert("queue".to_string(), r);
    } else {
        let kind = model.linear().unwrap_or(ModelKind::Kv);
        let options = Options {
            failed_cas_observes: format == Format::JepsenLog,
            nil_read_unknown: format == Format::Edn,
            ..options.clone()
        };
        let mut r = linear::check(events, kind, &options).map_err(|e| CheckError {
            line: None,
            index: match &e {
                linear::LinError::Pair(p) => events.get(p.position).map(|e| e.index),
                linear::LinError::Shape { index, .. } => Some(*index),
                linear::LinError::Initial(_) => None,
            },
            message: e.to_string(),
        })?;
        r.add_anomalies(queue::replica_divergence(replicas));
        checkers.insert("linearizable".to_string(), r);
    }
    Ok(noted(checkers, open_invocations(events)))
}

/// The results of one checker, `name`, on a history with `open` invocations that
/// never completed.
pub(crate) fn results(name: &str, r: crate::verdict::CheckerResult, open: usize) -> Results {
    noted(BTreeMap::from([(name.to_string(), r)]), open)
}

fn noted(mut checkers: BTreeMap<String, crate::verdict::CheckerResult>, open: usize) -> Results {
    for r in checkers.values_mut() {
        r.stats
            .insert("ops-never-completed".to_string(), open as u64);
        if open > 0 {
            let (n, were) = if open == 1 {
                ("1 invocation".to_string(), "it was")
            } else {
                (format!("{open} invocations"), "they were")
            };
            r.notes.push(format!(
                "{n} never completed: {were} checked as indeterminate (taking effect at any point after the invocation, or never)"
            ));
        }
    }
    Results::new(checkers)
}

/// Client invocations without a completion at the end of the history.
fn open_invocations(events: &[Event]) -> usize {
    let mut open = std::collections::HashSet::new();
    for e in events {
        if let Process::Client(p) = e.process {
            if e.kind == EventType::Invoke {
                open.insert(p);
            } else {
                open.remove(&p);
            }
        }
    }
    open.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{AnomalyKind, Validity};
    use serde_json::json;

    #[test]
    fn the_final_logs_given_are_judged_for_divergence_under_a_linearizable_model() {
        let log = |node: &str, values: [i64; 2]| {
            ReplicaLog::from_values(node, "register", 0, 2, values.map(|v| json!(v)))
        };
        let check = |replicas: &[ReplicaLog]| {
            check(
                Format::Jsonl,
                &[],
                Model::CasRegister,
                replicas,
                &Options::default(),
            )
            .unwrap()
            .checkers["linearizable"]
                .clone()
        };
        assert_eq!(
            check(&[log("1", [5, 6]), log("2", [5, 6])]).valid,
            Validity::Valid
        );
        let r = check(&[log("1", [5, 6]), log("2", [5, 7])]);
        assert_eq!(r.valid, Validity::Invalid);
        assert_eq!(r.anomalies[0].kind, AnomalyKind::ReplicaDivergence);
    }
}
