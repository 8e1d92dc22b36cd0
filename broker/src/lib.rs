//! The broker: a Kafka-style replicated log with its controller, the system under
//! test of watermark. One binary, two roles (`broker controller`, `broker node`);
//! all traffic is JSON over HTTP (see docs/api.md).
//!
//! Layers, each importing only those above it: `protocol`, `error`, `bugs`, `events`
//! (shared words, and the event lines' shape), `value` (record values kept exactly);
//! `disk` (the storage fault switch); `fsutil` (durable file replacement), `checksum`
//! (the checksum line of the small state files); `log`
//! (storage); `replica` (the replication rules, pure) and `kv` (the register view
//! over a log); `rpc`, `server`, `http_errors`, `json_body` (HTTP plumbing); `cli` (the command
//! line), `auth` (the cluster's credentials); then the two roles, `controller` and
//! `node`.
//!
//! Public are only what the binary and the tests use: the command line, the two
//! roles' `run`, the storage (tested through its files) and the wire types.
//!
//! How the whole project fits together: docs/architecture.md.

mod auth;
mod bugs;
mod checksum;
pub mod cli;
pub mod controller;
#[cfg(test)]
mod damage;
pub mod disk;
mod error;
mod events;
mod fsutil;
mod http_errors;
mod json_body;
mod kv;
pub mod log;
pub mod node;
pub mod protocol;
mod replica;
mod rpc;
mod server;
pub mod value;
