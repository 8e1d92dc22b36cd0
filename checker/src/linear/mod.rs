//! Linearizability: is there a total order of the operations, consistent with real
//! time, that a sequential model accepts?
//!
//! - [`split`] turns paired operations into model operations (per model) and
//!   splits them by key: linearizability is compositional (Herlihy & Wing's
//!   locality), so each key is checked on its own;
//! - [`model`] holds the sequential objects ([`kv`] the string store, over the
//!   [`strings`] arena);
//! - [`search`] is the Wing–Gong–Lowe search of one key;
//! - [`rounds`] runs the search on every key with a bounded number of threads,
//!   in rounds of growing budgets, and turns failures into explained anomalies.
//!
//! What the verdict means and how it is explained: docs/anomalies.md
//! (`nonlinearizable`).

mod fx;
mod kv;
mod model;
mod rounds;
mod search;
mod split;
mod strings;

use std::time::{Duration, Instant};

use crate::history::{Event, PairError, pair_events};
use crate::verdict::CheckerResult;
use kv::{Kv, KvStore};
use search::Limits;

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
            let (model, parts) = split::register_parts(&ops, options.failed_cas_observes)?;
            Ok(rounds::run(&model, parts, &limits, options))
        }
        ModelKind::Kv => {
            let kv = split::kv_parts(&ops, true)?;
            let model = Kv { texts: kv.texts };
            Ok(rounds::run(&model, kv.parts, &limits, options))
        }
        ModelKind::KvUnsplit => {
            let kv = split::kv_parts(&ops, false)?;
            let model = KvStore {
                keys: kv.keys,
                texts: kv.texts,
            };
            Ok(rounds::run(&model, kv.parts, &limits, options))
        }
    }
}
