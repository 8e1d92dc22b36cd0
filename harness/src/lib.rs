//! watermark: the harness. A thin binary (`main.rs`) over these modules; the public
//! ones are what the binary, the integration tests and the benchmarks use. The map
//! of the whole — crates, modules, the flow of one campaign — is
//! docs/architecture.md.
//!
//! Imports go one way, in three layers:
//! - the engine: `proc` and `net` (plain data, the proxies) at the bottom, `system`
//!   (the seam to the system under test, and our broker cluster behind it),
//!   `nemesis` (schedules of faults, played through the seam), `store` (the run
//!   folder) and `console` (what the harness says, and the run's watermark.log);
//! - judging and reporting: `judge` (each workload's checker, the crashes) and
//!   `report`;
//! - the `commands` (run, series, replay, check, export, selftest, serve), with
//!   `options` (watermark run's), under `cli`.

pub mod cli;
mod commands;
pub mod console;
pub mod error;
pub mod exit;
mod judge;
mod names;
pub mod nemesis;
pub mod net;
mod options;
pub mod proc;
pub mod report;
pub mod store;
pub mod system;
