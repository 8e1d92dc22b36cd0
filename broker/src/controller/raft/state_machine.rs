//! The controller's Raft state machine: committed commands applied, in log order, to
//! the [`ControllerState`] this process shares with its controller service. Every
//! entry's term raises the controller epoch; Raft's own entries (blank, membership)
//! change nothing else. Snapshots are the replicated part of the state
//! ([`Durable`]), kept in `DATA_DIR/raft/snapshot.json` (replaced atomically, ending
//! with a checksum line: a flipped digit must not read back as other metadata), so a
//! restarted voter starts from its last snapshot and replays the log after it; one
//! that does not check refuses the start.
//!
//! The effects of the entries this voter appended as leader (its own proposals) go
//! to the controller service in log order, to be carried out (log lines, pushes):
//! whether or not whoever proposed an entry still waits for its answer, a committed
//! change is always announced.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::RaftStateMachine;
use openraft::{
    EmptyNode, Entry, EntryPayload, ErrorSubject, ErrorVerb, LogId, OptionalSend,
    RaftSnapshotBuilder, Snapshot, SnapshotMeta, StorageError, StoredMembership,
};
use serde::{Deserialize, Serialize};

use super::{Reply, TypeConfig};
use crate::checksum;
use crate::controller::state::{ControllerState, Durable, Effects};
use crate::disk::DiskFaults;
use crate::fsutil::write_atomic_with;

type Id = u64;
type Meta = SnapshotMeta<Id, EmptyNode>;

/// The effects of applied entries, with the controller epoch (term) they were made in.
pub type Announcer = tokio::sync::mpsc::UnboundedSender<(i32, Effects)>;

const SNAPSHOT_FILE: &str = "snapshot.json";

/// The snapshot file: Raft's metadata and the state.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OnDisk {
    meta: Meta,
    state: Durable,
}

/// The state machine of one voter.
pub struct StateMachine {
    dir: PathBuf,
    /// This voter's id: entries whose leader it was are its own proposals.
    me: Id,
    state: Arc<Mutex<ControllerState>>,
    /// Where the effects of this voter's own entries go, with their term.
    effects: Announcer,
    last_applied: Option<LogId<Id>>,
    membership: StoredMembership<Id, EmptyNode>,
    snapshots: u64,
    /// The node's disk, which snapshots are written to.
    faults: DiskFaults,
}

impl StateMachine {
    /// Start from the snapshot in `dir`, if any, else from a fresh state: `state`
    /// (its brokers and settings) is reset to either, so that a voter re-opened in
    /// the same process replays its log onto what a restarted one would.
    pub fn open(
        dir: &Path,
        me: Id,
        state: Arc<Mutex<ControllerState>>,
        effects: Announcer,
        faults: &DiskFaults,
    ) -> Result<StateMachine, String> {
        let mut sm = StateMachine {
            dir: dir.to_path_buf(),
            me,
            state,
            effects,
            last_applied: None,
            membership: StoredMembership::default(),
            snapshots: 0,
            faults: faults.clone(),
        };
        match read_snapshot(dir)? {
            Some(disk) => {
                sm.lock()
                    .reset_to(disk.state)
                    .map_err(|e| format!("{}: {e}", dir.join(SNAPSHOT_FILE).display()))?;
                sm.last_applied = disk.meta.last_log_id;
                sm.membership = disk.meta.last_membership;
            }
            None => sm.lock().reset_fresh(),
        }
        Ok(sm)
    }

    /// The voters of the membership its snapshot holds, if any.
    pub fn snapshot_voters(&self) -> Option<std::collections::BTreeSet<Id>> {
        self.membership
            .log_id()
            .map(|_| self.membership.membership().voter_ids().collect())
    }

    fn lock(&self) -> MutexGuard<'_, ControllerState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn read_snapshot(dir: &Path) -> Result<Option<OnDisk>, String> {
    let path = dir.join(SNAPSHOT_FILE);
    let refuse = |what: String| {
        format!(
            "{} is {what}; this voter cannot trust its Raft state",
            path.display()
        )
    };
    match std::fs::read(&path) {
        Ok(bytes) => {
            let body = checksum::unseal(&bytes).map_err(|c| refuse(c.to_string()))?;
            serde_json::from_slice(body)
                .map(Some)
                .map_err(|e| refuse(format!("corrupt at byte 0: unreadable ({e})")))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

fn write_snapshot(
    dir: &Path,
    meta: &Meta,
    state: &Durable,
    faults: &DiskFaults,
) -> std::io::Result<()> {
    let disk = OnDisk {
        meta: meta.clone(),
        state: state.clone(),
    };
    let bytes = serde_json::to_vec(&disk).map_err(std::io::Error::other)?;
    write_atomic_with(&dir.join(SNAPSHOT_FILE), &checksum::seal(&bytes), faults)
}

fn sm_err(verb: ErrorVerb, e: impl std::fmt::Display) -> StorageError<Id> {
    StorageError::from_io_error(
        ErrorSubject::StateMachine,
        verb,
        std::io::Error::other(e.to_string()),
    )
}

/// Builds a snapshot of the state as it was when asked for.
pub struct Builder {
    dir: PathBuf,
    meta: Meta,
    state: Durable,
    faults: DiskFaults,
}

impl RaftSnapshotBuilder<TypeConfig> for Builder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<Id>> {
        write_snapshot(&self.dir, &self.meta, &self.state, &self.faults)
            .map_err(|e| sm_err(ErrorVerb::Write, e))?;
        let data = serde_json::to_vec(&self.state).map_err(|e| sm_err(ErrorVerb::Write, e))?;
        Ok(Snapshot {
            meta: self.meta.clone(),
            snapshot: Box::new(data),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = Builder;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<Id>>, StoredMembership<Id, EmptyNode>), StorageError<Id>> {
        Ok((self.last_applied, self.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Reply>, StorageError<Id>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut replies = Vec::new();
        let state = self.state.clone();
        let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
        for entry in entries {
            self.last_applied = Some(entry.log_id);
            state.observe_epoch(entry.log_id.leader_id.term as i32);
            let mut reply = Reply { outcome: None };
            match entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(command) => {
                    let (answer, effects) = state.apply(&command);
                    reply.outcome = Some(answer.map_err(|e| e.body()));
                    let term = entry.log_id.leader_id.term as i32;
                    if entry.log_id.leader_id.node_id == self.me && effects != Effects::default() {
                        // The receiver is gone only when the process is stopping.
                        let _ = self.effects.send((term, effects));
                    }
                }
                EntryPayload::Membership(m) => {
                    self.membership = StoredMembership::new(Some(entry.log_id), m);
                }
            }
            replies.push(reply);
        }
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> Builder {
        self.snapshots += 1;
        let last = self.last_applied;
        let snapshot_id = match last {
            Some(l) => format!("{}-{}-{}", l.leader_id.term, l.index, self.snapshots),
            None => format!("none-{}", self.snapshots),
        };
        Builder {
            dir: self.dir.clone(),
            meta: Meta {
                last_log_id: last,
                last_membership: self.membership.clone(),
                snapshot_id,
            },
            state: self.lock().durable(),
            faults: self.faults.clone(),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Vec<u8>>, StorageError<Id>> {
        Ok(Box::default())
    }

    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        snapshot: Box<Vec<u8>>,
    ) -> Result<(), StorageError<Id>> {
        let durable: Durable =
            serde_json::from_slice(&snapshot).map_err(|e| sm_err(ErrorVerb::Read, e))?;
        write_snapshot(&self.dir, meta, &durable, &self.faults)
            .map_err(|e| sm_err(ErrorVerb::Write, e))?;
        self.lock()
            .reset_to(durable)
            .map_err(|e| sm_err(ErrorVerb::Read, e))?;
        self.last_applied = meta.last_log_id;
        self.membership = meta.last_membership.clone();
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<Id>> {
        let disk = read_snapshot(&self.dir).map_err(|e| sm_err(ErrorVerb::Read, e))?;
        Ok(match disk {
            None => None,
            Some(d) => Some(Snapshot {
                snapshot: Box::new(
                    serde_json::to_vec(&d.state).map_err(|e| sm_err(ErrorVerb::Read, e))?,
                ),
                meta: d.meta,
            }),
        })
    }
}

#[cfg(test)]
mod tests;
