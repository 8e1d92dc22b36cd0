//! Linearizability: is there a total order of the operations, consistent with real
//! time, that a sequential model accepts?
//!
//! - [`split`] turns paired operations into model operations (per model) and
//!   splits them by key: linearizability is compositional (Herlihy & Wing's
//!   locality), so each key is checked on its own;
//! - [`model`] holds the sequential objects and the register ([`kv`] the string
//!   store, over the [`strings`] arena; Knossos's [`mutex`], [`multi_register`],
//!   [`set`] and [`queues`], over the [`rows`] arena, read by [`knossos`]);
//! - [`prune`] leaves out operations that cannot change a verdict, and [`zones`]
//!   decides read/write registers with unique values without searching;
//! - [`search`] is the Wing–Gong–Lowe search of one key, over the real-time
//!   lists of [`entries`] and the memo of [`memo`];
//! - [`rounds`] runs the search on every key with a bounded number of threads,
//!   in rounds of growing budgets, and turns failures into explained anomalies.
//!
//! What the verdict means and how it is explained: docs/anomalies.md
//! (`nonlinearizable`).

mod entries;
pub(crate) mod fx;
mod knossos;
mod kv;
mod memo;
mod model;
mod multi_register;
mod mutex;
mod prune;
mod queues;
mod rounds;
mod rows;
mod search;
mod set;
mod split;
mod strings;
mod zones;

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::history::{Event, PairError, pair_events};
use crate::verdict::CheckerResult;
use kv::{Kv, KvStore};
use model::{CasRegister, Model, RegisterOp};
use search::{Limits, Outcome, Search};
use split::{Part, RegisterReading};

/// Which sequential object a history is checked against (docs/checker.md,
/// "Models"). Every model but `KvUnsplit` is checked key by key when the
/// operations carry keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    /// Read/write register, nil initially (Knossos's `register`: no cas).
    Register,
    /// Register with compare-and-set (Knossos's `cas-register`).
    CasRegister,
    /// A lock: acquire and release (Knossos's `mutex`).
    Mutex,
    /// Registers by key read and written by transactions (Knossos's
    /// `multi-register`).
    MultiRegister,
    /// A set: add, and read the whole set (Knossos's `set`).
    Set,
    /// A first-in first-out queue: enqueue, dequeue (Knossos's `fifo-queue`).
    FifoQueue,
    /// A queue in any order: enqueue, dequeue (Knossos's `unordered-queue`).
    UnorderedQueue,
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
    /// A register read that returned nil says nothing about the value, as in
    /// Knossos's register models (Jepsen EDN histories), instead of having seen
    /// no value (our history.jsonl, Porcupine's logs).
    pub nil_read_unknown: bool,
    /// The model's state before any operation (a register's value, a set's or a
    /// queue's elements, ...; docs/checker.md, "Models"); `None`: the model's own
    /// (nil, empty, free).
    pub initial: Option<Value>,
    /// The plain Wing–Gong–Lowe search, as Porcupine runs it: every operation
    /// searched, an indeterminate one with a return after every event, and no
    /// pruning or unique-value path. The baseline of benchmarks and tests.
    pub plain: bool,
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
            nil_read_unknown: false,
            initial: None,
            plain: false,
        }
    }
}

/// The default memory budget on a machine with `physical` bytes of memory: a
/// quarter of it, and at least 256 MiB. The caller reads the machine (the
/// checker does no I/O).
pub fn memory_budget(physical: u64) -> usize {
    usize::try_from(physical / 4)
        .unwrap_or(usize::MAX)
        .max(256 << 20)
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
    /// The initial state given does not fit the model.
    Initial(String),
}

impl std::fmt::Display for LinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinError::Pair(e) => e.fmt(f),
            LinError::Shape { index, message } => write!(f, "event index {index}: {message}"),
            LinError::Initial(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for LinError {}

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
    let null = Value::Null;
    match kind {
        ModelKind::Register | ModelKind::CasRegister => {
            let reading = RegisterReading {
                cas: kind == ModelKind::CasRegister,
                failed_cas_observes: options.failed_cas_observes,
                nil_read_unknown: options.nil_read_unknown,
                initial: options.initial.as_ref().unwrap_or(&null),
            };
            let (model, parts) = split::register_parts(&ops, reading)?;
            let (ops, keys) = counts(&parts);
            let (parts, fast) = if options.plain {
                (parts, 0)
            } else {
                registers_pruned(&model, parts, &limits)
            };
            let mut r = rounds::run(&model, parts, &limits, options);
            r.stats
                .insert("keys-unique-values".to_string(), fast as u64);
            Ok(with_counts(r, ops, keys))
        }
        ModelKind::Mutex => {
            let (model, parts) = knossos::mutex(&ops, options.initial.as_ref())?;
            Ok(searched(&model, parts, &limits, options))
        }
        ModelKind::MultiRegister => {
            let (model, parts) = knossos::multi_register(&ops, options.initial.as_ref())?;
            Ok(searched(&model, parts, &limits, options))
        }
        ModelKind::Set => {
            let (model, parts) = knossos::set(&ops, options.initial.as_ref())?;
            Ok(searched(&model, parts, &limits, options))
        }
        ModelKind::FifoQueue => {
            let (model, parts) = knossos::fifo_queue(&ops, options.initial.as_ref())?;
            Ok(searched(&model, parts, &limits, options))
        }
        ModelKind::UnorderedQueue => {
            let (model, parts) = knossos::unordered_queue(&ops, options.initial.as_ref())?;
            Ok(searched(&model, parts, &limits, options))
        }
        ModelKind::Kv | ModelKind::KvUnsplit if options.initial.is_some() => Err(
            LinError::Initial("the kv model starts empty; it takes no initial state".into()),
        ),
        ModelKind::Kv => {
            let kv = split::kv_parts(&ops, true)?;
            let model = Kv { texts: kv.texts };
            Ok(searched(&model, kv.parts, &limits, options))
        }
        ModelKind::KvUnsplit => {
            let kv = split::kv_parts(&ops, false)?;
            let model = KvStore {
                keys: kv.keys,
                texts: kv.texts,
            };
            Ok(searched(&model, kv.parts, &limits, options))
        }
    }
}

/// Operations and keys of a history, for the stats.
fn counts<O>(parts: &[Part<'_, O>]) -> (usize, usize) {
    (parts.iter().map(|p| p.ops.len()).sum(), parts.len())
}

fn with_counts(mut r: CheckerResult, ops: usize, keys: usize) -> CheckerResult {
    r.stats.insert("ops".to_string(), ops as u64);
    r.stats.insert("keys".to_string(), keys as u64);
    r
}

/// Search every key, its inert operations left out (unless `plain`).
fn searched<M: Model>(
    model: &M,
    mut parts: Vec<Part<'_, M::Op>>,
    limits: &Limits,
    options: &Options,
) -> CheckerResult {
    let (ops, keys) = counts(&parts);
    if !options.plain {
        for p in &mut parts {
            prune::inert(model, p);
        }
    }
    with_counts(rounds::run(model, parts, limits, options), ops, keys)
}

/// Registers' keys ready for the search: inert and unobservable operations left
/// out, and keys with unique written values decided by their zones — those
/// linearizable dropped (counted), those not narrowed to the operations that
/// conflict, for the search to explain.
fn registers_pruned<'a>(
    model: &CasRegister,
    parts: Vec<Part<'a, RegisterOp>>,
    limits: &Limits,
) -> (Vec<Part<'a, RegisterOp>>, usize) {
    let mut fast = 0;
    let mut out = Vec::with_capacity(parts.len());
    for mut part in parts {
        prune::inert(model, &mut part);
        prune::unobservable(&mut part);
        match zones::decide(&part.ops, model.init) {
            None => out.push(part),
            Some(zones::Zones::Linearizable) => fast += 1,
            Some(zones::Zones::Violation(core)) => {
                let narrowed = part.narrowed(&core);
                // The core is a handful of operations; should the search find it
                // linearizable after all, the whole key is searched instead.
                let mut search = Search::new(model, &narrowed.ops, false);
                match search.run(model, &narrowed.ops, limits, usize::MAX) {
                    Some(Outcome::Illegal(_)) => out.push(narrowed),
                    _ => out.push(part),
                }
            }
        }
    }
    (out, fast)
}
