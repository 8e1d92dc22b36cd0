//! The controller: broker liveness, leader election, ISR changes, and telling the
//! brokers (LeaderAndIsr) whenever a partition's leader or ISR changes — Kafka's
//! KRaft controller in combined mode. Every broker listed in `--controller-voters`
//! (by default every broker) runs a voter of the controller quorum in its own
//! process; the Raft leader is the active controller, and its term the controller
//! epoch. The metadata is the quorum's replicated log, so it survives any minority
//! of voters dying, and a new active controller carries on with the same state.
//!
//! Layers: `election` and `state` are the pure rules (no I/O, time passed in);
//! `raft` the replicated log (storage, state machine, RPCs); `service` the active
//! controller's shell (decide, propose, answer, push); `push` sends LeaderAndIsr;
//! `http` is the routes.

mod election;
pub(crate) mod http;
mod push;
mod raft;
mod service;
mod state;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::protocol::BrokerId;
use raft::Identity;
use raft::network::{Quorum, Receiver};
pub use service::Controller;
use state::{Config, ControllerState};

/// How this broker's voter is set up (from the node's command line).
#[derive(Debug, Clone)]
pub struct Settings {
    /// This broker's id (a voter's).
    pub id: BrokerId,
    /// Every broker of the cluster (this one included) and how to reach it.
    pub brokers: BTreeMap<BrokerId, String>,
    /// The voters of the controller quorum (a subset of the brokers).
    pub voters: Vec<BrokerId>,
    pub data_dir: PathBuf,
    pub session_timeout_ms: u64,
    pub unclean_election: bool,
    pub election_timeout_ms: u64,
}

/// Open this broker's voter (its Raft log in `DATA_DIR/raft`) and start it; Err says
/// why it cannot (a corrupt log, voters other than the log's). Returns the
/// controller and its routes (the controller calls and `/internal/raft/`).
pub async fn start(s: Settings) -> Result<(Arc<Controller>, axum::Router), String> {
    let ids: Vec<BrokerId> = s.brokers.keys().copied().collect();
    let config = Config {
        session_timeout_ms: s.session_timeout_ms,
        unclean_election: s.unclean_election,
    };
    let state = Arc::new(Mutex::new(ControllerState::new(config, &ids)));
    let mut voters = s.voters.clone();
    voters.sort_unstable();
    let identity = Arc::new(Identity {
        id: s.id,
        quorum: Quorum {
            voters,
            brokers: ids,
            unclean_election: s.unclean_election,
        },
        established: AtomicBool::new(false),
    });
    let peers = s
        .voters
        .iter()
        .filter(|&&v| v != s.id)
        .filter_map(|v| s.brokers.get(v).map(|a| (*v as u64, a.clone())))
        .collect();
    let (announcer, announced) = tokio::sync::mpsc::unbounded_channel();
    let (raft, leases) = raft::start(
        &s.data_dir,
        identity.clone(),
        state.clone(),
        peers,
        s.election_timeout_ms,
        announcer,
    )
    .await?;
    let all: Vec<(BrokerId, String)> = s.brokers.into_iter().collect();
    let pusher = push::Pusher::new(&all).map_err(|e| format!("HTTP client: {e}"))?;
    let lease = Duration::from_millis(s.election_timeout_ms);
    let controller = Arc::new(Controller::new(
        identity.clone(),
        raft.clone(),
        state,
        leases,
        lease,
        pusher,
    ));
    tokio::spawn(controller.clone().run_announcements(announced));
    tokio::spawn(controller.clone().run_takeovers());
    tokio::spawn(controller.clone().run_ticker());
    let routes =
        http::router(controller.clone()).merge(raft::network::routes(Receiver { raft, identity }));
    Ok((controller, routes))
}
