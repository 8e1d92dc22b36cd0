//! What the router is told, by whom: each node's reader thread (a line it read, the
//! end of the output), the harness's clients and the `init` of a node (a request
//! and where its reply goes, or that its reply is no longer awaited), the router
//! itself (a delayed message now due), and the cluster (stop). One type, apart
//! from the router and the nodes, so that neither needs the other for it.

use std::time::Instant;

use maelstrom::message::{Body, Message};
use tokio::sync::oneshot;

/// What the router is told.
#[derive(Debug)]
pub enum Inbound {
    /// A line node `node` (its index) wrote in life `life`; `too_long`: its length,
    /// if only its start was kept.
    Line {
        node: usize,
        life: u64,
        line: Vec<u8>,
        too_long: Option<usize>,
        at: Instant,
    },
    /// Its output ended.
    Closed { node: usize, life: u64 },
    /// A request of the harness (a client, or the `init` of a node): its reply goes
    /// to `reply`. `init` requests reach a node not yet initialised, and bypass
    /// the network's faults.
    Request {
        msg: Message,
        reply: oneshot::Sender<Body>,
        init: bool,
    },
    /// The harness gave up waiting for the reply to `msg_id` of `client`.
    Cancel { client: String, msg_id: i64 },
    /// A message a degraded link held, now due.
    Due {
        msg: Message,
        sent: Instant,
        between_nodes: bool,
    },
    /// Stop, once every line before this one is handled.
    Stop(oneshot::Sender<()>),
}
