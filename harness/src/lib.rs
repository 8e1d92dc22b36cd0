//! watermark: the harness. A thin binary (`main.rs`) over these modules.

pub mod broker_api;
pub mod broker_bin;
pub mod check;
pub mod cli;
pub mod cluster;
pub mod convergence;
pub mod error;
pub mod exit;
pub mod nemesis;
pub mod net;
pub mod options;
pub mod progress;
pub mod replay;
pub mod report;
pub mod run;
pub mod scenario;
pub mod selftest;
pub mod serve;
pub mod store;
pub mod supervisor;
