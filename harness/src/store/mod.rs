//! The run folder (docs/run-folder.md): the interface between running a
//! campaign and judging it. `run` creates
//! `results/<workload>-<UTC timestamp>-s<seed>/`, points `results/current` at it (and
//! `results/latest` once it ended), writes `run.json` (everything needed to repeat
//! the run), streams `history.jsonl` line by line while the run goes — so a harness
//! that crashes still leaves a readable prefix — and finally writes `results.json`.
//!
//! - [`folder`] — the folder, `current` and `latest`, and where each file goes;
//! - [`record`] — `run.json`;
//! - [`history`] — `history.jsonl`, streamed, and the [`Tally`] it keeps ([`tally`]);
//! - [`final_logs`] — the replicas' logs at the end of the run, and their one reader;
//! - [`atomic`] — how every whole file is written (temp file, fsync, rename, fsync dir).

mod atomic;
mod final_logs;
mod folder;
mod history;
mod record;
mod tally;
mod timestamp;

pub use atomic::{write_atomic, write_json};
pub use final_logs::FinalLogs;
pub use folder::RunFolder;
pub use history::{History, HistoryFile};
pub use record::RunRecord;
pub use tally::{OkRates, Tally};
pub use timestamp::{compact_timestamp, rfc3339_millis};
