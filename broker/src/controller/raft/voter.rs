//! A voter that outlives its Raft core. openraft stops a voter's core for good on
//! any storage error (a log write or fsync that fails, a vote that cannot be
//! saved), and a stopped core never votes or appends again: two voters whose disk
//! failed for a moment would leave the quorum without a majority until someone
//! restarted their processes. Kafka's controller exits on such an error and counts
//! on being restarted; a voter here restarts itself instead: it watches its core,
//! and when it stops, re-opens the voter from `DATA_DIR/raft` — exactly what a
//! restarted process would read, so everything it acknowledged (written and
//! fsynced before the acknowledgement) is there, and nothing it did not acknowledge
//! matters — retrying until the disk lets it.
//!
//! Everyone who talks to the voter (the controller service, the Raft RPC routes)
//! asks [`Voter::raft`] for the current core each time, and follows
//! [`Voter::generations`] to learn of a new one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::sync::watch;

use super::network::{Identity, Network};
use super::{Announcer, Raft, log_store, raft_config, state_machine};
use crate::controller::state::ControllerState;
use crate::disk::DiskFaults;

/// How long to wait between attempts to re-open a stopped voter.
const REOPEN_BACKOFF: Duration = Duration::from_millis(500);

/// Everything opening the voter takes: the same at the first start and at each
/// re-open.
pub struct Opener {
    pub dir: PathBuf,
    pub identity: Arc<Identity>,
    pub state: Arc<Mutex<ControllerState>>,
    pub network: Network,
    pub election_timeout_ms: u64,
    pub effects: Announcer,
    pub faults: DiskFaults,
}

impl Opener {
    /// Read the voter's storage and start its core; Err says why it cannot (a
    /// corrupt log, voters other than the log's, a disk that still fails).
    pub async fn open(&self) -> Result<Raft, String> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        let log = log_store::LogStore::open(&self.dir, &self.faults)?;
        let fresh = log.is_pristine();
        let me = self.identity.id as u64;
        let sm = state_machine::StateMachine::open(
            &self.dir,
            me,
            self.state.clone(),
            self.effects.clone(),
            &self.faults,
        )?;
        let voters: std::collections::BTreeSet<u64> = self
            .identity
            .quorum
            .voters
            .iter()
            .map(|&v| v as u64)
            .collect();
        if let Some(known) = log.last_voters().or_else(|| sm.snapshot_voters())
            && known != voters
        {
            return Err(format!(
                "{} holds a controller quorum of voters {known:?}, but --controller-voters \
                 gives {voters:?}; start every broker with the same voters",
                self.dir.display()
            ));
        }
        let config = Arc::new(raft_config(self.election_timeout_ms)?);
        let raft = Raft::new(me, config, self.network.clone(), log, sm)
            .await
            .map_err(|e| format!("cannot start the controller's Raft voter: {e}"))?;
        if fresh {
            let members: BTreeMap<u64, openraft::EmptyNode> = voters
                .iter()
                .map(|&v| (v, openraft::EmptyNode {}))
                .collect();
            if let Err(e) = raft.initialize(members).await {
                // NotAllowed: the quorum formed meanwhile (an entry already arrived).
                eprintln!("controller: quorum already initialised ({e})");
            }
        }
        Ok(raft)
    }
}

/// This process's voter: its current core, and how to open a new one.
pub struct Voter {
    current: RwLock<Raft>,
    /// Counts the cores opened after the first.
    generation: watch::Sender<u64>,
    opener: Opener,
}

impl Voter {
    /// Open the voter (Err: it cannot start at all, as at a process start) and
    /// keep it running: re-opened whenever its core stops.
    pub async fn start(opener: Opener) -> Result<Arc<Voter>, String> {
        let raft = opener.open().await?;
        let voter = Arc::new(Voter {
            current: RwLock::new(raft),
            generation: watch::Sender::new(0),
            opener,
        });
        tokio::spawn(voter.clone().supervise());
        Ok(voter)
    }

    /// The current core (a stopped one until it is re-opened).
    pub fn raft(&self) -> Raft {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Changes whenever a new core replaces a stopped one.
    pub fn generations(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Forever: wait for the current core to stop, then re-open the voter.
    async fn supervise(self: Arc<Self>) {
        let id = self.opener.identity.id;
        loop {
            let raft = self.raft();
            let why = stopped(&raft).await;
            eprintln!(
                "controller {id}: the Raft voter stopped ({why}); re-opening it from {}",
                self.opener.dir.display()
            );
            let _ = raft.shutdown().await;
            let mut attempts = 0u64;
            let raft = loop {
                tokio::time::sleep(REOPEN_BACKOFF).await;
                attempts += 1;
                match self.opener.open().await {
                    Ok(raft) => break raft,
                    // Said once, not every half second while the disk fails.
                    Err(e) if attempts == 1 => {
                        eprintln!("controller {id}: cannot re-open the Raft voter yet: {e}")
                    }
                    Err(_) => {}
                }
            };
            *self.current.write().unwrap_or_else(|p| p.into_inner()) = raft;
            self.generation.send_modify(|g| *g += 1);
            eprintln!(
                "controller {id}: the Raft voter is re-opened from disk (after {attempts} attempt{})",
                if attempts == 1 { "" } else { "s" }
            );
        }
    }
}

/// Wait until `raft`'s core stops; why it did.
async fn stopped(raft: &Raft) -> String {
    let mut rx = raft.metrics();
    loop {
        if let Err(e) = &rx.borrow().running_state {
            return e.to_string();
        }
        if rx.changed().await.is_err() {
            return "its task ended".into();
        }
    }
}
