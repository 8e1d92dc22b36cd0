//! What every part of a node shares and none owns: who it is (broker id and this
//! process's broker epoch), its settings (from the command line, converted here, at
//! the edge, into the replica's own types), its clock, and how it reaches its peers
//! and the controller.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use broker_config::ReplicaSettings;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::auth::ClusterAuth;
use crate::bugs::Bugs;
use crate::cli::NodeArgs;
use crate::controller::Controller;
use crate::disk::DiskFaults;
use crate::error::Code;
use crate::fsutil;
use crate::log::LogConfig;
use crate::protocol::{BrokerId, BrokerInfo, ConfirmLeadership, Metadata, PartitionState};
use crate::replica::Truncation;
use crate::rpc::{self, CallError};

/// Timeout of a call to the controller.
pub const CONTROLLER_TIMEOUT: Duration = Duration::from_secs(2);

/// A node's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// The replicas' settings as given (`broker-config`), each read through its
    /// getter, which applies the broker's default.
    pub replica: ReplicaSettings,
    /// Where the partitions' logs and checkpoints live (`--data-dir`).
    pub data_dir: PathBuf,
    /// How a follower truncates (`--truncation`; `--bug hw-truncation` means `hw`).
    pub truncation: Truncation,
    /// Planted bugs (`--bug`), none by default.
    pub bugs: Bugs,
    /// The logs' flush policy and page-cache simulation.
    pub log: LogConfig,
    /// A follower behind the leader for longer than this leaves the ISR.
    pub replica_lag_time_max_ms: u64,
    /// A partition whose storage keeps failing this long makes the node leave every
    /// ISR (`--storage-failure-timeout-ms`).
    pub storage_failure_timeout_ms: u64,
}

/// Everything a node's tasks and handlers share.
pub struct Context {
    /// This broker's id (`--id`).
    pub id: BrokerId,
    /// This process's broker epoch: fresh at every start, so the controller sees a
    /// restart (kept in the data dir under `--truncation hw`; see [`broker_epoch`]),
    /// and renewed when the node's storage fails for good ([`Context::renew_broker_epoch`]).
    broker_epoch: AtomicU64,
    /// The settings.
    pub config: Config,
    /// The HTTP client of every call to peers and the controller (carrying the
    /// cluster's credentials).
    pub client: reqwest::Client,
    /// The cluster's credentials, which internal requests to this node must carry
    /// (None: not checked).
    pub auth: Option<Arc<ClusterAuth>>,
    /// The clock's zero: the process start.
    clock: Instant,
    /// How to reach each other broker (`--peers`).
    peers: HashMap<BrokerId, String>,
    /// How to reach brokers not in `--peers` (joined ones): the addresses they
    /// registered with, as the controller's messages tell.
    registered: RwLock<HashMap<BrokerId, String>>,
    /// This broker's own address (its controller voter is reached there too).
    own_addr: String,
    /// Where other brokers reach this one, as it registers with the controller
    /// (`--advertised-address`, by default `own_addr`).
    pub advertised_addr: String,
    /// The controller voters (`--controller-voters`), tried in turn.
    voters: Vec<BrokerId>,
    /// How to reach every voter but this broker.
    voter_addrs: BTreeMap<BrokerId, String>,
    /// The voter that answered as the controller last, or named as the controller.
    active_controller: Mutex<BrokerId>,
    /// This broker's own controller voter, if it is one.
    pub local_controller: OnceLock<Arc<Controller>>,
    /// Partition counts of topics, learnt from the controller's metadata.
    topic_sizes: Mutex<HashMap<String, u32>>,
}

impl Context {
    /// A node's context from its command line (`--bug hw-truncation` becomes
    /// `--truncation hw`) and credentials. Under `hw` it reads or creates
    /// `DATA_DIR/broker-epoch`.
    pub fn new(
        args: &NodeArgs,
        auth: Option<ClusterAuth>,
        own_addr: String,
        voters: Vec<BrokerId>,
        voter_addrs: BTreeMap<BrokerId, String>,
    ) -> std::io::Result<Context> {
        let settings = &args.settings;
        let truncation = match settings.truncation() {
            broker_config::Truncation::Hw => Truncation::Hw,
            broker_config::Truncation::Epoch => Truncation::Epoch,
        };
        let bugs = Bugs::planted(settings.bug);
        let replica = &settings.replica;
        let millis = |d: Duration| d.as_millis() as u64;
        let config = Config {
            replica: replica.clone(),
            data_dir: args.data_dir.clone(),
            truncation,
            bugs,
            log: LogConfig {
                flush_messages: replica.flush_messages,
                flush_ms: replica.flush_ms,
                simulate_page_cache: replica.simulate_page_cache,
                segment_bytes: 0,
                faults: DiskFaults::default(),
                append_undo_lost: bugs.has(crate::bugs::Bug::AppendUndoLost),
                flush_skips_fsync: bugs.has(crate::bugs::Bug::FlushSkipsFsync),
            },
            replica_lag_time_max_ms: millis(replica.replica_lag_time_max()),
            storage_failure_timeout_ms: millis(replica.storage_failure_timeout()),
        };
        Ok(Context {
            id: args.id,
            broker_epoch: AtomicU64::new(broker_epoch(truncation, &args.data_dir)?),
            config,
            client: rpc::client(auth.as_ref()),
            auth: auth.map(Arc::new),
            clock: Instant::now(),
            peers: args.peers.0.iter().cloned().collect(),
            registered: RwLock::new(HashMap::new()),
            advertised_addr: args
                .advertised_address
                .clone()
                .unwrap_or_else(|| own_addr.clone()),
            own_addr,
            active_controller: Mutex::new(if voters.contains(&args.id) {
                args.id
            } else {
                voters[0]
            }),
            voters,
            voter_addrs,
            local_controller: OnceLock::new(),
            topic_sizes: Mutex::new(HashMap::new()),
        })
    }

    /// This process's broker epoch, as it presents itself to the controller and to
    /// the leaders it fetches from.
    pub fn broker_epoch(&self) -> u64 {
        self.broker_epoch.load(Ordering::SeqCst)
    }

    /// Present a new broker epoch from now on, as a restarted process would: the
    /// controller handles the next heartbeat as a failure followed by a start, so
    /// this broker leaves every ISR and its partitions elect other leaders (KIP-380).
    /// For a node whose storage failed: what it holds in memory may not be on disk.
    pub fn renew_broker_epoch(&self) -> u64 {
        let fresh = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        let old = self.broker_epoch();
        let new = fresh.max(old + 1);
        self.broker_epoch.store(new, Ordering::SeqCst);
        new
    }

    /// Milliseconds since this process started (the replicas' clock).
    pub fn now_ms(&self) -> u64 {
        self.clock.elapsed().as_millis() as u64
    }

    /// How to reach broker `id`: from `--peers` (the harness's proxies), else at the
    /// address it registered with (a broker that joined), as the controller said.
    pub fn peer_addr(&self, id: BrokerId) -> Option<String> {
        if let Some(a) = self.peers.get(&id) {
            return Some(a.clone());
        }
        let registered = self.registered.read().unwrap_or_else(|p| p.into_inner());
        registered.get(&id).cloned()
    }

    /// Learn the registered addresses of the brokers `--peers` does not name (its
    /// own entries always win: the address a peer registered with may not be the
    /// one this node must use, e.g. behind a proxy).
    pub fn learn_addresses(&self, brokers: &[BrokerInfo]) {
        let mut registered = self.registered.write().unwrap_or_else(|p| p.into_inner());
        for b in brokers {
            if b.id == self.id || self.peers.contains_key(&b.id) {
                continue;
            }
            if let Some(a) = &b.address {
                registered.insert(b.id, a.clone());
            }
        }
    }

    /// How to reach broker or voter `id`, this one included.
    fn addr_of(&self, id: BrokerId) -> Option<&str> {
        match id == self.id {
            true => Some(&self.own_addr),
            false => self
                .peers
                .get(&id)
                .or_else(|| self.voter_addrs.get(&id))
                .map(String::as_str),
        }
    }

    /// POST to the active controller, following `NOT_CONTROLLER` hints (a broker
    /// id) and trying the next voter when one does not answer or knows no controller.
    pub async fn controller_post<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        path: &str,
        body: &Req,
    ) -> Result<Resp, CallError> {
        self.controller_post_within(path, body, CONTROLLER_TIMEOUT)
            .await
    }

    /// [`Self::controller_post`], each attempt bounded by `timeout`. The first
    /// attempt goes to the controller this broker's own voter knows of, if it is
    /// one, else to the one that answered last.
    pub async fn controller_post_within<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        path: &str,
        body: &Req,
        timeout: Duration,
    ) -> Result<Resp, CallError> {
        let local = self.local_controller.get().and_then(|c| c.controller_id());
        let mut id = local.unwrap_or_else(|| self.active_controller());
        let mut last = None;
        for _ in 0..self.voters.len() + 2 {
            let Some(addr) = self.addr_of(id) else {
                id = next_in(&self.voters, id);
                continue;
            };
            match rpc::post(&self.client, addr, path, body, timeout).await {
                Ok(resp) => {
                    self.set_active_controller(id);
                    return Ok(resp);
                }
                Err(CallError::Api(e)) if e.code == Code::NotController => {
                    let hint = e.extra.get("controller_id").and_then(|c| c.as_i64());
                    id = match hint {
                        Some(h)
                            if h as BrokerId != id && self.voters.contains(&(h as BrokerId)) =>
                        {
                            h as BrokerId
                        }
                        _ => next_in(&self.voters, id),
                    };
                    last = Some(CallError::Api(e));
                }
                Err(CallError::Transport(e)) => {
                    id = next_in(&self.voters, id);
                    last = Some(CallError::Transport(e));
                }
                Err(other) => return Err(other),
            }
        }
        Err(last.unwrap_or_else(|| CallError::Transport("no controller voter to ask".into())))
    }

    /// The number of partitions of `topic`, asking the controller (or, on a voter, its
    /// own copy of the metadata) once if unknown.
    /// `Ok(None)`: the controller does not know the topic; `Err`: it did not answer.
    pub async fn topic_size(&self, topic: &str) -> Result<Option<u32>, CallError> {
        if let Some(n) = self
            .topic_sizes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(topic)
        {
            return Ok(Some(*n));
        }
        // A voter has the whole metadata itself; another broker asks the controller.
        let id = match self.voters.contains(&self.id) {
            true => self.id,
            false => self.active_controller(),
        };
        let addr = self.addr_of(id).unwrap_or(&self.own_addr);
        let md: Metadata = rpc::get(&self.client, addr, "/v1/metadata", CONTROLLER_TIMEOUT).await?;
        let mut sizes = self.topic_sizes.lock().unwrap_or_else(|p| p.into_inner());
        for t in &md.topics {
            sizes.insert(t.name.clone(), t.partitions.len() as u32);
        }
        Ok(sizes.get(topic).copied())
    }

    /// A controller message named partition `partition` of `topic`: the topic has at
    /// least `partition + 1` partitions (new partitions are only ever added), so a
    /// count learnt before it grew is corrected.
    pub fn learn_partition(&self, topic: &str, partition: u32) {
        let mut sizes = self.topic_sizes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = sizes.get_mut(topic) {
            *n = (*n).max(partition + 1);
        }
    }

    /// Ask the controller whether we still lead `topic-partition` in `leader_epoch`.
    pub async fn confirm_leadership(
        &self,
        topic: &str,
        partition: u32,
        leader_epoch: i32,
    ) -> Result<PartitionState, CallError> {
        let req = ConfirmLeadership {
            broker_id: self.id,
            topic: topic.to_string(),
            partition,
            leader_epoch,
        };
        self.controller_post("/internal/confirm-leadership", &req)
            .await
    }

    /// The voter that answered as the controller last (at start: this broker if it
    /// is a voter, else the first voter).
    pub fn active_controller(&self) -> BrokerId {
        *self
            .active_controller
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn set_active_controller(&self, id: BrokerId) {
        *self
            .active_controller
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = id;
    }
}

/// The broker epoch this process presents to the controller. Fresh at every start
/// (KIP-380: a restart is a failure followed by a start, so the restarted broker leaves
/// every ISR), except under `--truncation hw`, which emulates pre-0.11 Kafka fully:
/// it had no broker epochs, so a broker back within the session timeout kept its ISR
/// membership. There the first epoch is kept in `DATA_DIR/broker-epoch` and presented
/// again after every restart.
fn broker_epoch(truncation: Truncation, data_dir: &std::path::Path) -> std::io::Result<u64> {
    let fresh = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    if truncation != Truncation::Hw {
        return Ok(fresh);
    }
    let path = data_dir.join("broker-epoch");
    match std::fs::read_to_string(&path) {
        Ok(text) => text.trim().parse().map_err(|_| {
            std::io::Error::other(format!(
                "{}: `{}` is not a broker epoch",
                path.display(),
                text.trim()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(data_dir)?;
            fsutil::write_atomic(&path, format!("{fresh}\n").as_bytes())?;
            Ok(fresh)
        }
        Err(e) => Err(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", path.display()),
        )),
    }
}

/// The voter after `id` in `voters` (the first if `id` is not one).
fn next_in(voters: &[BrokerId], id: BrokerId) -> BrokerId {
    match voters.iter().position(|&v| v == id) {
        Some(i) => voters[(i + 1) % voters.len()],
        None => voters[0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::damage::sweep;

    /// `--truncation hw` keeps its broker epoch in `DATA_DIR/broker-epoch`. Every
    /// damage to it reads back as an error naming the file (the process refuses to
    /// start) or as another epoch — which the controller takes for a restart, taking
    /// the broker out of every ISR: the safe side. No checksum is needed for that.
    #[test]
    fn a_damaged_kept_broker_epoch_is_refused_or_another_epoch() {
        let d = tempfile::tempdir().unwrap();
        let kept = broker_epoch(Truncation::Hw, d.path()).unwrap();
        assert_eq!(broker_epoch(Truncation::Hw, d.path()).unwrap(), kept);
        let path = d.path().join("broker-epoch");
        let bytes = std::fs::read(&path).unwrap();
        for damage in sweep(bytes.len()) {
            if damage.first_change(&bytes).is_none() {
                continue;
            }
            let damaged = damage.apply(&bytes);
            std::fs::write(&path, &damaged).unwrap();
            match broker_epoch(Truncation::Hw, d.path()) {
                Ok(epoch) => {
                    let same = String::from_utf8_lossy(&damaged).trim() == kept.to_string();
                    assert_eq!(epoch == kept, same, "{damage:?}: {epoch}");
                }
                Err(e) => {
                    let msg = e.to_string();
                    assert!(
                        msg.contains(&path.display().to_string()),
                        "{damage:?}: {msg}"
                    );
                }
            }
        }
        // Under the default truncation rule the epoch is fresh at every start.
        assert_ne!(broker_epoch(Truncation::Epoch, d.path()).unwrap(), kept);
    }
}
