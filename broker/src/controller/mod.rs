//! The controller: broker liveness, leader election, ISR changes, and telling the
//! brokers (LeaderAndIsr) whenever a partition's leader or ISR changes — Kafka's
//! KRaft controller. By default (combined mode) every broker runs a voter of the
//! controller quorum in its own process; `--controller-voters` picks the voters,
//! which may also be dedicated controller processes (`broker controller`, no
//! partitions: KRaft's dedicated mode). The Raft leader is the active controller,
//! and its term the controller epoch. The metadata is the quorum's replicated log, so
//! it survives any minority of voters dying, and a new active controller carries on
//! with the same state.
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
use std::error::Error;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use crate::auth::{self, ClusterAuth};
use crate::bugs::Bugs;
use crate::disk::DiskFaults;
use broker_config::ControllerSettings;

use crate::cli::{ControllerArgs, Voters};
use crate::protocol::BrokerId;
use raft::Identity;
use raft::network::{Network, Quorum, Receiver};
use raft::voter::{Opener, Voter};
pub use service::Controller;
use state::{Config, ControllerState};

/// How this broker's voter is set up (from the node's command line).
#[derive(Debug, Clone)]
pub struct Settings {
    /// This broker's id (a voter's).
    pub id: BrokerId,
    /// Every broker of the cluster (this one included, if it is one) and how to
    /// reach it.
    pub brokers: BTreeMap<BrokerId, String>,
    /// The voters of the controller quorum.
    pub voters: Vec<BrokerId>,
    /// How to reach every other voter.
    pub voter_addrs: BTreeMap<BrokerId, String>,
    pub data_dir: PathBuf,
    /// The voters' settings (session and election timeouts, the leader rebalance,
    /// unclean election).
    pub config: ControllerSettings,
    /// The cluster's credentials: sent with every Raft RPC and LeaderAndIsr, and
    /// required of every `/internal/` request (None: not checked).
    pub auth: Option<ClusterAuth>,
    /// Planted bugs (`--bug`): the election rules read theirs.
    pub bugs: Bugs,
    /// The node's disk (its fault switch): the Raft log and snapshots are on it.
    pub disk: DiskFaults,
}

/// Open this broker's voter (its Raft log in `DATA_DIR/raft`) and start it; Err says
/// why it cannot (a corrupt log, voters other than the log's). Returns the
/// controller and its routes (the controller calls and `/internal/raft/`).
pub async fn start(s: Settings) -> Result<(Arc<Controller>, axum::Router), String> {
    let ids: Vec<BrokerId> = s.brokers.keys().copied().collect();
    let millis = |d: std::time::Duration| d.as_millis() as u64;
    let session_timeout_ms = millis(s.config.session_timeout());
    let election_timeout_ms = millis(s.config.election_timeout());
    let unclean_election = s.config.unclean_election;
    let config = Config {
        session_timeout_ms,
        unclean_election,
        leader_imbalance_check_interval_ms: s
            .config
            .leader_imbalance_check_interval()
            .map_or(0, millis),
        bugs: s.bugs,
    };
    let state = Arc::new(Mutex::new(ControllerState::new(config, &ids)));
    let mut voters = s.voters.clone();
    voters.sort_unstable();
    let identity = Arc::new(Identity {
        id: s.id,
        quorum: Quorum {
            voters,
            brokers: ids,
            unclean_election,
        },
        established: AtomicBool::new(false),
    });
    let peers = s
        .voter_addrs
        .iter()
        .map(|(v, a)| (*v as u64, a.clone()))
        .collect();
    let (announcer, announced) = tokio::sync::mpsc::unbounded_channel();
    let leases = Arc::new(raft::Leases::default());
    let network = Network::new(peers, identity.clone(), leases.clone(), s.auth.as_ref());
    let voter = Voter::start(Opener {
        dir: s.data_dir.join("raft"),
        identity: identity.clone(),
        state: state.clone(),
        network,
        election_timeout_ms,
        effects: announcer,
        faults: s.disk,
    })
    .await?;
    let all: Vec<(BrokerId, String)> = s.brokers.into_iter().collect();
    let pusher =
        push::Pusher::new(&all, s.auth.as_ref()).map_err(|e| format!("HTTP client: {e}"))?;
    let lease = raft::lease(election_timeout_ms);
    let controller = Arc::new(Controller::new(
        identity.clone(),
        voter.clone(),
        state,
        leases,
        lease,
        pusher,
    ));
    tokio::spawn(controller.clone().run_announcements(announced));
    tokio::spawn(controller.clone().run_takeovers());
    tokio::spawn(controller.clone().run_ticker());
    // The controller calls and the Raft RPCs alike refuse internal requests without
    // the cluster's credentials.
    let routes =
        http::router(controller.clone()).merge(raft::network::routes(Receiver { voter, identity }));
    let routes = auth::guarded(routes, s.auth.map(Arc::new));
    Ok((controller, routes))
}

/// The voters of `--controller-voters` (sorted) and how to reach each but `me`: a
/// broker by its broker address, a dedicated controller by the address given with it.
pub fn voter_addresses(
    me: BrokerId,
    voters: &Voters,
    brokers: &BTreeMap<BrokerId, String>,
) -> Result<(Vec<BrokerId>, BTreeMap<BrokerId, String>), String> {
    let mut ids = Vec::new();
    let mut addrs = BTreeMap::new();
    for (id, addr) in &voters.0 {
        match (addr, brokers.get(id)) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "--controller-voters gives an address for broker {id}; name brokers by id \
                     alone (ID=ADDR is for dedicated controllers)"
                ));
            }
            (Some(a), None) => {
                addrs.insert(*id, a.clone());
            }
            (None, Some(a)) => {
                addrs.insert(*id, a.clone());
            }
            (None, None) if *id == me => {}
            (None, None) => {
                return Err(format!(
                    "--controller-voters names {id}, which is neither this process, a broker \
                     ({:?}), nor a dedicated controller given as {id}=ADDR",
                    brokers.keys().collect::<Vec<_>>()
                ));
            }
        }
        ids.push(*id);
    }
    addrs.remove(&me);
    ids.sort_unstable();
    Ok((ids, addrs))
}

/// Run a dedicated controller voter (`broker controller`) until it is killed.
pub fn run(args: ControllerArgs) -> Result<(), Box<dyn Error>> {
    if args.id <= 0 {
        return Err(format!("--id {} must be a positive integer", args.id).into());
    }
    let brokers: BTreeMap<BrokerId, String> = args.brokers.0.iter().cloned().collect();
    if brokers.is_empty() {
        return Err(
            "--brokers lists no broker; give e.g. 1=127.0.0.1:9001,2=127.0.0.1:9002".into(),
        );
    }
    if brokers.contains_key(&args.id) {
        return Err(format!(
            "--id {} is a broker's id (--brokers); a dedicated controller needs its own",
            args.id
        )
        .into());
    }
    let (voters, voter_addrs) = voter_addresses(args.id, &args.controller_voters, &brokers)?;
    if !voters.contains(&args.id) {
        return Err(format!(
            "--controller-voters {voters:?} does not name this controller (--id {})",
            args.id
        )
        .into());
    }
    let auth = ClusterAuth::from_args(args.cluster_id.as_deref(), args.secret_file.as_deref())?;
    if auth.is_none() {
        eprintln!(
            "controller: no --cluster-id and secret: internal requests are not authenticated"
        );
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(async move {
            let listener = crate::server::bind_and_announce(args.listen, &args.data_dir).await?;
            eprintln!(
                "controller {}: voters {voters:?}, brokers {:?}",
                args.id,
                brokers.keys()
            );
            let settings = Settings {
                id: args.id,
                brokers,
                voters,
                voter_addrs,
                data_dir: args.data_dir.clone(),
                config: args.settings.clone(),
                auth,
                bugs: Bugs::planted(args.bug),
                disk: DiskFaults::default(),
            };
            let (_, routes) = start(settings).await?;
            axum::serve(listener, http::with_fallback(routes)).await?;
            Ok(())
        })
}
