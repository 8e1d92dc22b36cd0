//! Linearizability: is there a total order of the operations, consistent with real
//! time, that a sequential model accepts?
//!
//! This module turns paired operations into model operations (per model), splits
//! them by key — linearizability is compositional (Herlihy & Wing's locality), so
//! each key is checked on its own — runs the [`search`] on every key with a bounded
//! number of threads, and turns failures into explained anomalies.

mod fx;
pub mod kv;
pub mod model;
pub mod search;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::history::{Event, Outcome, PairError, Paired, pair_events};
use crate::verdict::{Anomaly, AnomalyKind, CheckerResult, Explanation, OpRef};
use fx::FxMap;
use kv::{Kv, KvOp, KvStore, TextsBuilder};
use model::{CasOutcome, CasRegister, Model, NIL, RegisterOp, Val};
use search::{GaveUp, Limits, LinOp, Outcome as SearchOutcome, Search};

/// Which sequential object a history is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    /// Read/write register, nil initially (split by key when ops carry one).
    Register,
    /// Register with compare-and-set (split by key when ops carry one).
    CasRegister,
    /// String key-value store with get/put/append, split by key.
    Kv,
    /// The same store checked as one state over all keys (no split).
    KvUnsplit,
}

/// How to check.
#[derive(Debug, Clone)]
pub struct Options {
    /// Past this, the verdict is unknown.
    pub time_limit: Option<Duration>,
    /// Cap on the bytes of memo over all keys (each entry costs a bitset of the
    /// key's operations, a hash and a state); past it, the verdict is unknown.
    pub max_memory: usize,
    /// Threads checking keys in parallel.
    pub threads: usize,
    /// A failed compare-and-set is an observation ("the value was not the expected
    /// one"), as in Porcupine's etcd model, instead of an operation that did not
    /// happen (Knossos, and our broker).
    pub failed_cas_observes: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            time_limit: None,
            max_memory: 1 << 30,
            threads: std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .min(8),
            failed_cas_observes: false,
        }
    }
}

/// A history whose operations a model cannot read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinError {
    Pair(PairError),
    /// The operation at this history index does not fit the model.
    Shape {
        index: u64,
        message: String,
    },
}

impl std::fmt::Display for LinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinError::Pair(e) => e.fmt(f),
            LinError::Shape { index, message } => write!(f, "event index {index}: {message}"),
        }
    }
}

impl std::error::Error for LinError {}

/// One key's operations, with the history operation each came from.
struct Part<'a, O> {
    key: Option<Value>,
    ops: Vec<LinOp<O>>,
    origin: Vec<&'a Paired<'a>>,
}

/// Check a history's events for linearizability against a model.
pub fn check(
    events: &[Event],
    kind: ModelKind,
    options: &Options,
) -> Result<CheckerResult, LinError> {
    let ops = pair_events(events).map_err(LinError::Pair)?;
    let limits = Limits::new(
        options.time_limit.map(|d| Instant::now() + d),
        options.max_memory,
    );
    match kind {
        ModelKind::Register | ModelKind::CasRegister => {
            let (model, parts) = register_parts(&ops, options.failed_cas_observes)?;
            Ok(run(&model, parts, &limits, options))
        }
        ModelKind::Kv => {
            let (_, texts, parts) = kv_parts(&ops, true)?;
            Ok(run(&Kv { texts }, parts, &limits, options))
        }
        ModelKind::KvUnsplit => {
            let (keys, texts, parts) = kv_parts(&ops, false)?;
            Ok(run(&KvStore { keys, texts }, parts, &limits, options))
        }
    }
}

fn shape(op: &Paired, message: String) -> LinError {
    LinError::Shape {
        index: op.invoke.index,
        message,
    }
}

/// The key and the payload of an operation's value: `{"key":k,"value":v}`, or a
/// bare value for single-register histories.
fn keyed(v: &Value) -> (Option<&Value>, &Value) {
    match v {
        Value::Object(m) => match m.get("key") {
            Some(k) => (Some(k), m.get("value").unwrap_or(&Value::Null)),
            None => (None, v),
        },
        _ => (None, v),
    }
}

/// A key's identity: its JSON text, so the string "1" and the number 1 are two
/// keys, and "" (not JSON) for no key, distinct from the empty string `""`.
fn key_name(key: Option<&Value>) -> Cow<'_, str> {
    match key {
        None => Cow::Borrowed(""),
        Some(v) => Cow::Owned(v.to_string()),
    }
}

/// A key as shown: strings as they are, other JSON as text.
fn key_label(key: &Value) -> String {
    match key {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

fn part_for<'a, 'o, O>(
    parts: &'a mut Vec<Part<'o, O>>,
    index: &mut FxMap<Cow<'o, str>, usize>,
    key: Option<&'o Value>,
) -> &'a mut Part<'o, O> {
    let name = key_name(key);
    let i = match index.get(&name) {
        Some(&i) => i,
        None => {
            parts.push(Part {
                key: key.cloned(),
                ops: Vec::new(),
                origin: Vec::new(),
            });
            index.insert(name, parts.len() - 1);
            parts.len() - 1
        }
    };
    &mut parts[i]
}

fn register_parts<'a>(
    ops: &'a [Paired<'a>],
    failed_cas_observes: bool,
) -> Result<(CasRegister, Vec<Part<'a, RegisterOp>>), LinError> {
    let mut names: Vec<String> = vec!["nil".to_string()];
    let mut ids: FxMap<String, Val> = FxMap::default();
    let mut intern = |v: &Value| -> Val {
        if v.is_null() {
            return NIL;
        }
        let s = v.to_string();
        *ids.entry(s.clone()).or_insert_with(|| {
            names.push(s);
            (names.len() - 1) as Val
        })
    };
    let mut parts = Vec::new();
    let mut index = FxMap::default();
    for op in ops {
        let (key, arg) = keyed(&op.invoke.value);
        let failed = op.outcome == Outcome::Fail;
        let complete = if op.outcome == Outcome::Info {
            None
        } else {
            op.complete_pos
        };
        let rop = match op.invoke.f.as_str() {
            "read" => match op.outcome {
                Outcome::Ok => RegisterOp::Read(Some(intern(keyed(op.value()).1))),
                Outcome::Fail if !failed_cas_observes => continue,
                _ => RegisterOp::Read(None),
            },
            "write" if failed => continue,
            "write" => RegisterOp::Write(intern(arg)),
            "cas" => {
                let Some([from, to]) = arg.as_array().map(Vec::as_slice) else {
                    return Err(shape(op, format!("cas expects [expected, new], got {arg}")));
                };
                let outcome = match op.outcome {
                    Outcome::Ok => CasOutcome::Ok,
                    Outcome::Fail if failed_cas_observes => CasOutcome::Failed,
                    Outcome::Fail => continue,
                    Outcome::Info => CasOutcome::Unknown,
                };
                RegisterOp::Cas {
                    from: intern(from),
                    to: intern(to),
                    outcome,
                }
            }
            f => {
                return Err(shape(
                    op,
                    format!("a register knows read, write and cas, not {f:?}"),
                ));
            }
        };
        let part = part_for(&mut parts, &mut index, key);
        part.ops.push(LinOp {
            op: rop,
            invoke: op.invoke_pos,
            complete,
        });
        part.origin.push(op);
    }
    Ok((CasRegister { names }, parts))
}

/// A kv history read for checking: the key names, the distinct string values,
/// and the operations of each part (each key, or one part for the whole store).
type KvParts<'a> = (Vec<String>, kv::Texts, Vec<Part<'a, KvOp>>);

fn kv_parts<'a>(ops: &'a [Paired<'a>], split: bool) -> Result<KvParts<'a>, LinError> {
    let mut keys: Vec<String> = Vec::new();
    let mut key_ids: FxMap<Cow<str>, u32> = FxMap::default();
    let mut texts = TextsBuilder::default();
    let mut parts = Vec::new();
    for op in ops {
        let (Some(key), arg) = keyed(&op.invoke.value) else {
            return Err(shape(
                op,
                format!(
                    "kv expects {{\"key\":k,\"value\":v}}, got {}",
                    op.invoke.value
                ),
            ));
        };
        if op.outcome == Outcome::Fail {
            continue;
        }
        let name = key_name(Some(key));
        let k = match key_ids.get(&name) {
            Some(&k) => k,
            None => {
                keys.push(key_label(key));
                key_ids.insert(name, keys.len() as u32 - 1);
                keys.len() as u32 - 1
            }
        };
        let mut text = |v: &'a Value| -> Result<kv::TextId, LinError> {
            match v {
                Value::String(s) => Ok(texts.intern(s)),
                Value::Null => Ok(texts.intern("")),
                other => Err(shape(op, format!("kv values are strings, got {other}"))),
            }
        };
        let kop = match op.invoke.f.as_str() {
            "get" if op.outcome == Outcome::Ok => KvOp::Get {
                key: k,
                value: Some(text(keyed(op.value()).1)?),
            },
            "get" => KvOp::Get {
                key: k,
                value: None,
            },
            "put" => KvOp::Put {
                key: k,
                value: text(arg)?,
            },
            "append" => KvOp::Append {
                key: k,
                value: text(arg)?,
            },
            f => {
                return Err(shape(
                    op,
                    format!("kv knows get, put and append, not {f:?}"),
                ));
            }
        };
        let complete = if op.outcome == Outcome::Info {
            None
        } else {
            op.complete_pos
        };
        // Parts are made in the order keys first appear, so with a split the
        // key's number is its part's.
        let p = if split { k as usize } else { 0 };
        if p == parts.len() {
            parts.push(Part {
                key: split.then(|| key.clone()),
                ops: Vec::new(),
                origin: Vec::new(),
            });
        }
        let part = &mut parts[p];
        part.ops.push(LinOp {
            op: kop,
            invoke: op.invoke_pos,
            complete,
        });
        part.origin.push(op);
    }
    Ok((keys, texts.finish(), parts))
}

/// A key's verdict, with states already described.
enum KeyVerdict {
    Ok,
    Illegal {
        prefix: Vec<usize>,
        states: Vec<String>,
        blocked: usize,
        pending: Vec<usize>,
    },
    GaveUp(GaveUp),
}

/// The first round's memo budget per key; each round multiplies it by four.
const FIRST_ROUND: usize = 1 << 12;

/// A key being checked: its search (once started) and its verdict (once known).
struct Slot<M: Model> {
    search: Option<Search<M>>,
    verdict: Option<KeyVerdict>,
    entries: usize,
}

/// Check every key, on a bounded number of threads, in rounds of growing memo
/// budgets. A round ends when every open key has finished or reached the budget;
/// after a round that proved some key non-linearizable, the open keys are left
/// unjudged (the history is invalid either way, as in Porcupine, which stops at
/// the first violation). Because each search is deterministic and budgets count
/// memo entries, not time, the keys reported do not depend on thread timing.
fn run<M: Model>(
    model: &M,
    parts: Vec<Part<'_, M::Op>>,
    limits: &Limits,
    options: &Options,
) -> CheckerResult {
    let mut slots: Vec<Slot<M>> = parts
        .iter()
        .map(|_| Slot {
            search: None,
            verdict: None,
            entries: 0,
        })
        .collect();
    let threads = options.threads.clamp(1, parts.len().max(1));
    let mut budget = FIRST_ROUND;
    loop {
        let open: Vec<(usize, &mut Slot<M>)> = slots
            .iter_mut()
            .enumerate()
            .filter(|(_, s)| s.verdict.is_none())
            .collect();
        if open.is_empty() {
            break;
        }
        let queue = Mutex::new(open);
        let work = || {
            loop {
                let Some((p, slot)) = queue.lock().unwrap_or_else(|e| e.into_inner()).pop() else {
                    break;
                };
                let ops = &parts[p].ops;
                let search = slot.search.get_or_insert_with(|| Search::new(model, ops));
                let outcome = search.run(model, ops, limits, budget);
                slot.verdict = outcome.map(|outcome| match outcome {
                    SearchOutcome::Linearizable => KeyVerdict::Ok,
                    SearchOutcome::GaveUp(why) => KeyVerdict::GaveUp(why),
                    SearchOutcome::Illegal(f) => KeyVerdict::Illegal {
                        states: f
                            .states
                            .iter()
                            .map(|s| search.describe_state(model, s))
                            .collect(),
                        prefix: f.prefix,
                        blocked: f.blocked,
                        pending: f.pending,
                    },
                });
                slot.entries = search.cache_entries();
                if slot.verdict.is_some() {
                    slot.search = None; // free the memo
                }
            }
        };
        if threads == 1 {
            work();
        } else {
            // The calling thread works too: one spawn fewer, and it is already
            // running when other threads may still wait for a core.
            std::thread::scope(|s| {
                for _ in 1..threads {
                    s.spawn(work);
                }
                work();
            });
        }
        let done =
            |f: fn(&KeyVerdict) -> bool| slots.iter().any(|s| s.verdict.as_ref().is_some_and(f));
        if done(|v| matches!(v, KeyVerdict::Illegal { .. } | KeyVerdict::GaveUp(_))) {
            break;
        }
        budget = budget.saturating_mul(4);
    }
    let verdicts: Vec<Option<(KeyVerdict, usize)>> = slots
        .into_iter()
        .map(|s| s.verdict.map(|v| (v, s.entries)))
        .collect();

    let mut anomalies = Vec::new();
    let mut gave_up: Option<GaveUp> = None;
    let mut entries = 0u64;
    let mut unjudged = 0u64;
    for (part, v) in parts.iter().zip(verdicts) {
        let Some((verdict, used)) = v else {
            unjudged += 1;
            continue;
        };
        entries += used as u64;
        match verdict {
            KeyVerdict::Ok => {}
            KeyVerdict::GaveUp(why) => {
                if gave_up.is_none() || why != GaveUp::Stopped {
                    gave_up = Some(why);
                }
            }
            KeyVerdict::Illegal {
                prefix,
                states,
                blocked,
                pending,
            } => {
                let r = |i: usize| OpRef::of(part.origin[i], model.describe_op(&part.ops[i].op));
                let op = r(blocked);
                let mut a = Anomaly::new(
                    AnomalyKind::Nonlinearizable,
                    format!(
                        "{} cannot be linearized after the longest linearizable prefix ({} of {} operations)",
                        op.text,
                        prefix.len(),
                        part.ops.len()
                    ),
                );
                a.key = part.key.clone();
                a.ops = vec![op.clone()];
                a.explanation = Some(Explanation {
                    op,
                    prefix: prefix.into_iter().map(r).collect(),
                    states,
                    pending: pending.into_iter().map(r).collect(),
                });
                anomalies.push(a);
            }
        }
    }
    let mut result = CheckerResult::from_anomalies(anomalies);
    if let Some(why) = gave_up {
        result.cap_unknown(match why {
            GaveUp::Time => format!(
                "time limit of {:.1}s reached",
                options.time_limit.unwrap_or_default().as_secs_f64()
            ),
            GaveUp::Memory | GaveUp::Stopped => {
                format!("memory budget of {} MiB reached", options.max_memory >> 20)
            }
        });
    }
    let total_ops: usize = parts.iter().map(|p| p.ops.len()).sum();
    result.stats = BTreeMap::from([
        ("ops".to_string(), total_ops as u64),
        ("keys".to_string(), parts.len() as u64),
        ("memo-entries".to_string(), entries),
        ("keys-unjudged".to_string(), unjudged),
    ]);
    result
}
