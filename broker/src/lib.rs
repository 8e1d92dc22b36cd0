//! The broker: a Kafka-style replicated log with its controller, the system under
//! test of watermark. One binary, two roles (`broker controller`, `broker node`);
//! all traffic is JSON over HTTP (see docs/api.md).

pub mod alter_partition;
pub mod api;
pub mod bugs;
pub mod cli;
pub mod controller;
pub mod error;
pub mod fetcher;
pub mod kv;
pub mod log;
pub mod node;
pub mod partition;
pub mod protocol;
pub mod purgatory;
pub mod replica;
pub mod replica_manager;
pub mod rpc;
pub mod server;
