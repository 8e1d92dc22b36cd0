//! The controller quorum's replicated log, kept by openraft (a well-kept Raft
//! implementation; docs/broker.md says why this one). The controller's commands
//! ([`Command`]) are the log's entries; the pure controller state is its state
//! machine; the Raft leader is the active controller, and its term the controller
//! epoch.
//!
//! - `log_store`: the log and the vote, durable in `DATA_DIR/raft` (fsync before
//!   openraft counts an entry or a vote as written), checked when read back;
//! - `state_machine`: applies committed commands to the shared [`ControllerState`]
//!   and keeps snapshots in `DATA_DIR/raft/snapshot.json`;
//! - `network`: the Raft RPCs as JSON over the brokers' own HTTP servers, under
//!   `/internal/raft/`, so the harness's proxies cut them like any other traffic;
//!   every RPC names the sender's cluster [`Identity`], and a broker started with a
//!   different one is refused;
//! - `voter`: opening the voter, and re-opening it from disk when a storage error
//!   stops its Raft core;
//! - this module: the types openraft is instantiated with, and the timing.

mod log_store;
pub mod network;
mod state_machine;
pub mod voter;

use serde::{Deserialize, Serialize};

use super::state::{Applied, Command};
pub use network::{Identity, Leases};
pub use state_machine::Announcer;
pub use voter::Voter;

openraft::declare_raft_types!(
    /// The controller log's types: commands in, replies out, broker ids as node ids.
    pub TypeConfig:
        D = Command,
        R = Reply,
        NodeId = u64,
        Node = openraft::EmptyNode,
        SnapshotData = Vec<u8>,
);

/// A running voter.
pub type Raft = openraft::Raft<TypeConfig>;

/// What applying an entry answers its proposer: the command's outcome (None for
/// Raft's own entries). Its effects go to the controller service separately
/// ([`state_machine::Announcer`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    /// `Ok` with the answer, or `Err` with the error's JSON body.
    pub outcome: Option<Result<Applied, serde_json::Value>>,
}

/// The Raft timing for `--election-timeout-ms` E: a follower that hears from no
/// leader stands for election after openraft's leader lease (its maximum timeout,
/// 0.6 E) plus its own random timeout (0.3 to 0.6 E, drawn once per process): 0.9 to
/// 1.2 E in all. The leader heartbeats every E / 10. The active controller's own
/// lease ([`lease`]) ends before any follower can stand.
pub fn raft_config(election_timeout_ms: u64) -> Result<openraft::Config, String> {
    let e = election_timeout_ms.max(20);
    let config = openraft::Config {
        cluster_name: "watermark-controller".into(),
        election_timeout_min: e * 3 / 10,
        election_timeout_max: e * 6 / 10,
        heartbeat_interval: (e / 10).max(1),
        install_snapshot_timeout: 5000,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(1000),
        max_in_snapshot_log_to_keep: 100,
        ..openraft::Config::default()
    };
    config.validate().map_err(|e| format!("Raft settings: {e}"))
}

/// How long an acknowledgement of its leadership keeps the active controller's lease:
/// 0.8 E, less than the 0.9 E after which a follower may stand for election.
pub fn lease(election_timeout_ms: u64) -> std::time::Duration {
    std::time::Duration::from_millis(election_timeout_ms.max(20) * 8 / 10)
}
