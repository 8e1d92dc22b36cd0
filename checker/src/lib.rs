//! Pure history checkers for watermark: history in, verdict out.
//!
//! - [`history`]: events (SPEC §4) and their pairing into operations;
//! - [`verdict`]: results.json — validity, per-checker results, anomalies;
//! - [`queue`]: Kafka queue analysis (lost writes, inconsistent offsets, ...).
//!
//! No network, no processes, no file I/O: callers pass text in.

pub mod history;
pub mod queue;
pub mod verdict;
