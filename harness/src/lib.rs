//! watermark: the harness. A thin binary (`main.rs`) over these modules.

pub mod broker_api;
pub mod check;
pub mod cli;
pub mod cluster;
pub mod convergence;
pub mod error;
pub mod exit;
pub mod nemesis;
pub mod net;
pub mod supervisor;
