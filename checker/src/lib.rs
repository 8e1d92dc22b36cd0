//! Pure history checkers for watermark: history in, verdict out.
//!
//! - [`history`]: events (docs/history.md) and their pairing into operations;
//! - [`format`]: reading history.jsonl, Jepsen EDN and logs, Porcupine kv logs;
//! - [`linear`]: linearizability — the Wing–Gong–Lowe search over small models;
//! - [`maelstrom`]: the checks of Maelstrom's workloads (echo, unique-ids,
//!   broadcast, g-counter, kafka);
//! - [`queue`]: Kafka queue analysis (lost writes, inconsistent offsets, ...;
//!   every kind is defined in docs/anomalies.md);
//! - [`verdict`]: results.json — validity, per-checker results, anomalies;
//! - [`check`]: choosing the checker for a history and running it;
//! - [`values`]: how values are compared and shown, integers of any size exactly.
//!
//! No network, no processes, no file I/O: callers pass text (or a reader) in.
//!
//! How the whole project fits together: docs/architecture.md.

pub mod check;
pub mod format;
pub mod history;
pub mod linear;
pub mod maelstrom;
pub mod queue;
pub mod values;
pub mod verdict;
