//! The broker: a Kafka-style replicated log with its controller, the system under
//! test of watermark. One binary, two roles (`broker controller`, `broker node`);
//! all traffic is JSON over HTTP (see docs/api.md).

pub mod cli;
pub mod controller;
pub mod error;
pub mod log;
pub mod protocol;
pub mod replica;
pub mod server;
