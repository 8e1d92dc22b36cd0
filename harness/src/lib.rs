//! watermark: the harness. A thin binary (`main.rs`) over these modules.

pub mod check;
pub mod cli;
pub mod cluster;
pub mod error;
pub mod exit;
mod names;
pub mod nemesis;
pub mod net;
pub mod options;
pub mod proc;
pub mod progress;
pub mod replay;
pub mod report;
pub mod run;
pub mod selftest;
pub mod serve;
pub mod store;
