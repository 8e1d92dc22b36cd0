//! watermark: the harness. A thin binary (`main.rs`) over these modules.

pub mod check;
pub mod cli;
pub mod cluster;
pub mod error;
pub mod exit;
pub mod net;
pub mod supervisor;
