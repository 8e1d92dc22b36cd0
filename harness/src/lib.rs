//! watermark: the harness. A thin binary (`main.rs`) over these modules; the public
//! ones are what the binary, the integration tests and the benchmarks use.
//!
//! Imports go one way: `proc` and `net` (plain data, the proxies) at the bottom, then
//! `cluster` (processes and links), `nemesis` (faults on a cluster), `options`, the
//! run folder (`store`, with `console`: the run's watermark.log), how a history is
//! judged (`judge`) and `report`, and the commands (`run` and its `series` and
//! `crashes`, `replay`, `check`, `export`, `selftest`, `serve`) on top, under `cli`.

mod check;
pub mod cli;
pub mod cluster;
pub mod console;
mod crashes;
pub mod error;
pub mod exit;
mod export;
mod judge;
mod names;
pub mod nemesis;
pub mod net;
mod options;
pub mod proc;
mod progress;
mod replay;
pub mod report;
mod run;
mod selftest;
mod series;
mod serve;
mod store;
