//! Maelstrom's workload checkers, for systems tested through Maelstrom's
//! protocol (the `maelstrom` crate): what each workload's history must satisfy,
//! judged with our anomaly names (docs/anomalies.md) — the queue checker's where
//! the meaning is the same (`lost-write`, `duplicate`, `unexpected`, ...), new ones
//! where it is not (`echo-mismatch`, `duplicate-id`, `counter-out-of-range`,
//! `nonmonotonic-commit`). lin-kv needs none of its own: its history has the
//! register's shapes, and [`crate::linear`] judges it per key.
//!
//! Every check takes the whole history's events — other workloads' operations and
//! the nemesis's events are skipped — and returns a [`CheckerResult`]
//! (`check`); `try_check` returns instead a [`HistoryError`] for a history whose
//! values lack what docs/history.md ("The Maelstrom workloads") says they carry,
//! which `check` reports as an unknown verdict.
//!
//! [`CheckerResult`]: crate::verdict::CheckerResult

pub mod broadcast;
pub mod echo;
pub mod g_counter;
pub mod kafka;
mod reading;
pub mod unique_ids;

pub use reading::HistoryError;
