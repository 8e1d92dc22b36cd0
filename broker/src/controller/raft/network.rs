//! The Raft RPCs between voters: JSON over the brokers' own HTTP servers, under
//! `/internal/raft/` (`append`, `vote`, `snapshot`), so the harness's proxies cut
//! them like any other traffic between brokers.
//!
//! Every RPC carries the sender's [`Quorum`] (voters, brokers, unclean election):
//! voters that disagree on it would apply the same log to different clusters, so a
//! receiver refuses an RPC from a different quorum. The sender of a refused RPC exits
//! (a clear error, exit code 1) if the receiver belongs to a working quorum and the
//! sender has never been part of one: it is the broker started with the wrong voters.
//!
//! The leader's side also keeps a [`Leases`] record: when each voter last
//! acknowledged its leadership. A leader serves controller requests only while a
//! majority acknowledged it within its lease (`super::lease`, shorter than the time
//! after which a follower may start an election), so a paused or cut-off former
//! leader stops answering as the controller on its own, before it even learns of its
//! successor.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{DefaultBodyLimit, State};
use axum::routing::post;
use openraft::error::{
    Fatal, NetworkError, RPCError, RaftError, RemoteError, ReplicationClosed, StreamingError,
    Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::{EmptyNode, Snapshot, SnapshotMeta, Vote};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::TypeConfig;
use crate::error::ApiError;
use crate::json_body::JsonBody;
use crate::protocol::BrokerId;

type Id = u64;

/// What every voter of one cluster must agree on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quorum {
    pub voters: Vec<BrokerId>,
    pub brokers: Vec<BrokerId>,
    pub unclean_election: bool,
}

/// This voter: its id, its quorum, and whether it has been part of a working quorum
/// (it has seen a leader).
#[derive(Debug)]
pub struct Identity {
    pub id: BrokerId,
    pub quorum: Quorum,
    pub established: AtomicBool,
}

/// An RPC as sent.
#[derive(Serialize, Deserialize)]
struct Envelope<T> {
    from: BrokerId,
    quorum: Quorum,
    rpc: T,
}

/// `/internal/raft/snapshot`: the whole snapshot at once (the state is small).
#[derive(Serialize, Deserialize)]
struct FullSnapshot {
    vote: Vote<Id>,
    meta: SnapshotMeta<Id, EmptyNode>,
    /// The snapshot's JSON.
    data: String,
}

/// When each voter last acknowledged this leader (the send time of the heartbeat or
/// append it acknowledged).
#[derive(Debug, Default)]
pub struct Leases {
    acked: Mutex<HashMap<Id, Instant>>,
}

impl Leases {
    fn acked(&self, target: Id, sent: Instant) {
        let mut acked = self.acked.lock().unwrap_or_else(|p| p.into_inner());
        let at = acked.entry(target).or_insert(sent);
        *at = (*at).max(sent);
    }

    /// Whether a majority of `voters` (`me` counting itself) acknowledged within
    /// `lease`.
    pub fn held(&self, me: Id, voters: &[BrokerId], lease: Duration) -> bool {
        let acked = self.acked.lock().unwrap_or_else(|p| p.into_inner());
        let fresh = voters
            .iter()
            .map(|&v| v as Id)
            .filter(|&v| v == me || acked.get(&v).is_some_and(|t| t.elapsed() < lease))
            .count();
        fresh > voters.len() / 2
    }
}

/// Makes a [`PeerLink`] per voter (openraft's network factory).
#[derive(Clone)]
pub struct Network {
    client: reqwest::Client,
    peers: Arc<BTreeMap<Id, String>>,
    identity: Arc<Identity>,
    leases: Arc<Leases>,
}

impl Network {
    /// `auth`: the cluster's credentials, sent with every RPC (the voters refuse
    /// RPCs without them, like every `/internal/` request).
    pub fn new(
        peers: BTreeMap<Id, String>,
        identity: Arc<Identity>,
        leases: Arc<Leases>,
        auth: Option<&crate::auth::ClusterAuth>,
    ) -> Self {
        Network {
            client: crate::rpc::client(auth),
            peers: Arc::new(peers),
            identity,
            leases,
        }
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerLink;

    async fn new_client(&mut self, target: Id, _node: &EmptyNode) -> PeerLink {
        PeerLink {
            target,
            addr: self.peers.get(&target).cloned(),
            client: self.client.clone(),
            identity: self.identity.clone(),
            leases: self.leases.clone(),
        }
    }
}

/// The RPCs to one voter.
pub struct PeerLink {
    target: Id,
    addr: Option<String>,
    client: reqwest::Client,
    identity: Arc<Identity>,
    leases: Arc<Leases>,
}

/// Why an RPC got no answer from the peer's Raft.
enum Failed {
    Unreachable(String),
    Network(String),
}

fn io(msg: String) -> std::io::Error {
    std::io::Error::other(msg)
}

impl PeerLink {
    /// POST one RPC; Ok is the peer's Raft's own answer (which may be an error).
    async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        path: &str,
        rpc: Req,
        timeout: Duration,
    ) -> Result<Resp, Failed> {
        let Some(addr) = &self.addr else {
            return Err(Failed::Unreachable(format!(
                "voter {} is not in --peers",
                self.target
            )));
        };
        let body = Envelope {
            from: self.identity.id,
            quorum: self.identity.quorum.clone(),
            rpc,
        };
        let url = format!("http://{addr}/internal/raft/{path}");
        let sent = self.client.post(&url).json(&body).timeout(timeout).send();
        let resp = match sent.await {
            Ok(r) => r,
            Err(e) if e.is_connect() => return Err(Failed::Unreachable(format!("{url}: {e}"))),
            Err(e) => return Err(Failed::Network(format!("{url}: {e}"))),
        };
        let status = resp.status();
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| Failed::Network(format!("{url}: {e}")))?;
        if status.is_success() {
            return serde_json::from_slice(&bytes)
                .map_err(|e| Failed::Network(format!("{url}: bad answer: {e}")));
        }
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        if body.get("quorum").is_some() {
            self.refused(&body);
        }
        Err(Failed::Network(format!("{url}: HTTP {status} {body}")))
    }

    /// The peer refused our quorum: if it runs a working one and we never did, we
    /// are the misconfigured broker.
    fn refused(&self, body: &serde_json::Value) {
        let theirs = &body["quorum"];
        let established = body["established"].as_bool().unwrap_or(false);
        eprintln!(
            "controller: voter {} refuses this broker's quorum {:?}; it has {theirs}",
            self.target, self.identity.quorum
        );
        if established && !self.identity.established.load(Ordering::Relaxed) {
            eprintln!(
                "broker: this broker was started with --controller-voters {:?}, brokers {:?}, \
                 unclean election {}, but voter {} runs a controller quorum with {theirs}; \
                 start every broker with the same voters, peers and --unclean-election",
                self.identity.quorum.voters,
                self.identity.quorum.brokers,
                self.identity.quorum.unclean_election,
                self.target
            );
            std::process::exit(1);
        }
    }
}

impl RaftNetwork<TypeConfig> for PeerLink {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<Id>, RPCError<Id, EmptyNode, RaftError<Id>>> {
        let sent = Instant::now();
        let answer: Result<AppendEntriesResponse<Id>, RaftError<Id>> = self
            .call("append", rpc, option.hard_ttl())
            .await
            .map_err(rpc_err)?;
        let resp = answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))?;
        if !matches!(resp, AppendEntriesResponse::HigherVote(_)) {
            self.leases.acked(self.target, sent);
        }
        Ok(resp)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<Id>,
        option: RPCOption,
    ) -> Result<VoteResponse<Id>, RPCError<Id, EmptyNode, RaftError<Id>>> {
        let answer: Result<VoteResponse<Id>, RaftError<Id>> = self
            .call("vote", rpc, option.hard_ttl())
            .await
            .map_err(rpc_err)?;
        answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote<Id>,
        snapshot: Snapshot<TypeConfig>,
        _cancel: impl std::future::Future<Output = ReplicationClosed> + openraft::OptionalSend + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<Id>, StreamingError<TypeConfig, Fatal<Id>>> {
        let rpc = FullSnapshot {
            vote,
            meta: snapshot.meta,
            data: String::from_utf8_lossy(&snapshot.snapshot).into_owned(),
        };
        let answer: Result<SnapshotResponse<Id>, Fatal<Id>> = self
            .call("snapshot", rpc, option.hard_ttl())
            .await
            .map_err(|f| match f {
                Failed::Unreachable(m) => StreamingError::Unreachable(Unreachable::new(&io(m))),
                Failed::Network(m) => StreamingError::Network(NetworkError::new(&io(m))),
            })?;
        answer.map_err(|e| StreamingError::RemoteError(RemoteError::new(self.target, e)))
    }
}

fn rpc_err(f: Failed) -> RPCError<Id, EmptyNode, RaftError<Id>> {
    match f {
        Failed::Unreachable(m) => RPCError::Unreachable(Unreachable::new(&io(m))),
        Failed::Network(m) => RPCError::Network(NetworkError::new(&io(m))),
    }
}

// ---- the receiving side ----

/// What the routes need: this voter and its identity.
#[derive(Clone)]
pub struct Receiver {
    pub voter: Arc<super::Voter>,
    pub identity: Arc<Identity>,
}

/// The `/internal/raft/` routes.
pub fn routes(receiver: Receiver) -> axum::Router {
    axum::Router::new()
        .route("/internal/raft/append", post(append))
        .route("/internal/raft/vote", post(vote))
        .route("/internal/raft/snapshot", post(snapshot))
        .layer(DefaultBodyLimit::max(64 << 20))
        .with_state(receiver)
}

/// The envelope's RPC if the sender's quorum is ours, else the refusal.
fn open<T>(r: &Receiver, env: Envelope<T>) -> Result<T, ApiError> {
    if env.quorum == r.identity.quorum {
        return Ok(env.rpc);
    }
    let established = r.identity.established.load(Ordering::Relaxed);
    Err(ApiError::invalid(format!(
        "broker {} sent a Raft RPC for the quorum {:?}; this voter belongs to {:?}",
        env.from, env.quorum, r.identity.quorum
    ))
    .with(
        "quorum",
        serde_json::to_value(&r.identity.quorum).unwrap_or_default(),
    )
    .with("established", established))
}

async fn append(
    State(r): State<Receiver>,
    JsonBody(env): JsonBody<Envelope<AppendEntriesRequest<TypeConfig>>>,
) -> Result<Json<Result<AppendEntriesResponse<Id>, RaftError<Id>>>, ApiError> {
    let rpc = open(&r, env)?;
    Ok(Json(r.voter.raft().append_entries(rpc).await))
}

async fn vote(
    State(r): State<Receiver>,
    JsonBody(env): JsonBody<Envelope<VoteRequest<Id>>>,
) -> Result<Json<Result<VoteResponse<Id>, RaftError<Id>>>, ApiError> {
    let rpc = open(&r, env)?;
    Ok(Json(r.voter.raft().vote(rpc).await))
}

async fn snapshot(
    State(r): State<Receiver>,
    JsonBody(env): JsonBody<Envelope<FullSnapshot>>,
) -> Result<Json<Result<SnapshotResponse<Id>, Fatal<Id>>>, ApiError> {
    let rpc = open(&r, env)?;
    let snapshot = Snapshot {
        meta: rpc.meta,
        snapshot: Box::new(rpc.data.into_bytes()),
    };
    Ok(Json(
        r.voter
            .raft()
            .install_full_snapshot(rpc.vote, snapshot)
            .await,
    ))
}
