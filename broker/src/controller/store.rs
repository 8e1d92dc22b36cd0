//! The controller's durable state on disk: one JSON file in the data dir, replaced
//! atomically (temp file, fsync, rename, fsync dir) after every change, so a
//! controller killed at any instant restarts from the last state it acted on.
//! Kafka keeps the same facts in ZooKeeper or the KRaft metadata log.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::state::Durable;
use crate::fsutil::write_atomic;

/// The file's name inside the data dir.
pub const STATE_FILE: &str = "controller-state.json";
/// Bumped when the layout changes incompatibly.
const FORMAT: u32 = 1;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OnDisk {
    format: u32,
    state: Durable,
}

/// Where the durable state lives.
#[derive(Debug, Clone)]
pub struct Store {
    path: PathBuf,
}

impl Store {
    pub fn new(data_dir: &Path) -> Store {
        Store {
            path: data_dir.join(STATE_FILE),
        }
    }

    /// Read the last persisted state; a missing file is a fresh controller.
    pub fn load(&self) -> Result<Durable, String> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Durable::default()),
            Err(e) => return Err(format!("cannot read {}: {e}", self.path.display())),
        };
        let on_disk: OnDisk = serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "{} is not a controller state file ({e}); move it away to start afresh",
                self.path.display()
            )
        })?;
        if on_disk.format != FORMAT {
            return Err(format!(
                "{} has format {}, this controller reads format {FORMAT}",
                self.path.display(),
                on_disk.format
            ));
        }
        Ok(on_disk.state)
    }

    /// Replace the persisted state atomically and durably.
    pub fn save(&self, state: &Durable) -> io::Result<()> {
        let on_disk = OnDisk {
            format: FORMAT,
            state: state.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&on_disk).map_err(io::Error::other)?;
        bytes.push(b'\n');
        write_atomic(&self.path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::PartitionState;

    #[test]
    fn saved_state_loads_back_and_missing_file_is_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        assert_eq!(store.load().unwrap(), Durable::default());
        let state = Durable {
            controller_epoch: 7,
            broker_epochs: [(1, 11), (3, 33)].into_iter().collect(),
            partitions: vec![PartitionState {
                topic: "q".into(),
                partition: 0,
                leader: 3,
                leader_epoch: 2,
                partition_epoch: 5,
                isr: vec![3],
                replicas: vec![1, 3],
                min_insync_replicas: 1,
            }],
        };
        store.save(&state).unwrap();
        assert_eq!(store.load().unwrap(), state);
    }

    #[test]
    fn a_corrupt_file_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(STATE_FILE), b"{\"format\":1,").unwrap();
        let err = Store::new(dir.path()).load().unwrap_err();
        assert!(err.contains(STATE_FILE), "{err}");
    }
}
