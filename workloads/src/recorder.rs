//! Where a workload's operations go: every invocation and completion is handed to a
//! [`Recorder`] the moment it happens, which gives it its index and time and writes
//! it to the history (the harness streams it to `history.jsonl`).

use serde_json::Value;

/// What an event says about an operation (SPEC §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Invoke,
    /// It happened.
    Ok,
    /// It certainly did not happen.
    Fail,
    /// Unknown; the process never invokes again.
    Info,
}

/// Receives a workload's events, in the order they happen.
pub trait Recorder: Send + Sync {
    /// Record one client event of `process`; `error` says why an operation failed
    /// or is in doubt.
    fn record(&self, process: u64, kind: Kind, f: &str, value: Value, error: Option<String>);
}
