//! Where a workload's operations go: every invocation and completion is handed to a
//! [`Recorder`] the moment it happens, which gives it its index and time and writes
//! it to the history (the harness streams it to `history.jsonl`).

use checker::history::EventType;
use serde_json::Value;

/// Receives a workload's events, in the order they happen.
pub trait Recorder: Send + Sync {
    /// Record one event of client `process`; `error` says why an operation failed
    /// or is in doubt.
    fn record(&self, process: u64, kind: EventType, f: &str, value: Value, error: Option<String>);
}
