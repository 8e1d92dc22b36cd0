//! Maelstrom's protocol, for testing any system that speaks it (the protocol of
//! Jepsen's Maelstrom and of Fly.io's Gossip Glomers): JSON messages, one per
//! line, on the nodes' stdin and stdout. Pure code — message types and rules, no
//! processes, no sockets — shared by the harness's router and the tests:
//!
//! - [`message`]: the envelope `{src, dest, body}`, parsing a node's stdout line
//!   (never trusting it) and writing one line;
//! - [`error`]: Maelstrom's error codes, and whether an error means `fail` or `info`;
//! - [`init`]: the `init` / `init_ok` handshake;
//! - [`service`]: the `lin-kv`, `seq-kv` and `lww-kv` services nodes may call;
//! - [`workload`]: each workload's client requests and how replies become history
//!   completions (docs/history.md, "The Maelstrom workloads").

pub mod error;
pub mod init;
pub mod message;
pub mod service;
pub mod workload;

#[cfg(test)]
mod robustness;
