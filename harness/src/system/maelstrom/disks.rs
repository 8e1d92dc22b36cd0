//! The nodes' storage seen from outside (docs/maelstrom.md#faults). When a fault of
//! the campaign works on storage, each node's working directory is a fault
//! filesystem (`nodes/<id>/data` over `nodes/<id>/disk`): a kill may cut the node's
//! power, `corrupt` damages one of its files, `disk` fails it for a while. What each
//! power cut lost and each damage done wait here for the history. Without such a
//! fault the nodes work in plain directories and none of this is mounted.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::error::{HarnessError, Result};
use crate::proc::Proc;
use crate::system::DiskMode;

/// The nodes' fault filesystems, by node index (none: plain directories).
pub(super) struct Disks {
    mounts: Vec<faultfs::Mount>,
    /// Every kill cuts the node's power too.
    cut_on_kill: bool,
    losses: Vec<Value>,
    damage: Vec<Value>,
}

impl Disks {
    /// One fault filesystem under `root/<id>/` for each of `ids` when `fault_fs`;
    /// none otherwise.
    pub(super) fn mount(
        root: &Path,
        ids: &[String],
        fault_fs: bool,
        cut_on_kill: bool,
    ) -> Result<Disks> {
        let mut mounts = Vec::new();
        if fault_fs {
            faultfs::available().map_err(|why| {
                HarnessError::new(format!("{why}: the storage faults of --bin need it"))
            })?;
            for id in ids {
                let dir = root.join(id);
                let mount = crate::system::storage::mount(&dir)?;
                mounts.push(mount);
            }
        }
        Ok(Disks {
            mounts,
            cut_on_kill: cut_on_kill && fault_fs,
            losses: Vec::new(),
            damage: Vec::new(),
        })
    }

    /// Node `id`'s working directory: on its fault filesystem if it has one.
    pub(super) fn work_dir(&self, root: &Path, id: &str) -> PathBuf {
        match self.mounts.is_empty() {
            true => root.join(id),
            false => root.join(id).join("data"),
        }
    }

    /// Node `i` (process `p`) was killed: its power goes too if the campaign's
    /// kills cut it.
    pub(super) fn killed(&mut self, i: usize, p: Proc) -> Result<()> {
        match self.cut_on_kill {
            true => self.cut_power(i, p, None),
            false => Ok(()),
        }
    }

    /// Cut the power of node `i` (process `p`), dead already (`torn`: keep a prefix
    /// of its last write, drawn from that seed); what it lost is kept for the
    /// history.
    pub(super) fn cut_power(&mut self, i: usize, p: Proc, torn: Option<u64>) -> Result<()> {
        let lost = crate::system::storage::cut_power(self.of(i, p)?, p, torn)?;
        self.losses
            .push(json!({"process": p.to_json(), "lost": lost}));
        Ok(())
    }

    /// Damage one file of node `p`'s working directory `dir` as `seed` draws.
    pub(super) fn damage(&mut self, p: Proc, dir: &Path, seed: u64) -> Result<()> {
        self.damage
            .extend(crate::system::corrupt::damage(dir, p, seed)?);
        Ok(())
    }

    /// Fail node `i`'s storage in `mode` for `for_ms`.
    pub(super) fn fail(&self, i: usize, p: Proc, mode: DiskMode, for_ms: u64) -> Result<()> {
        let failure = match mode {
            DiskMode::Enospc => faultfs::Failure::Enospc,
            DiskMode::Eio => faultfs::Failure::Eio,
        };
        self.of(i, p)?
            .control()
            .fail(failure, Some(Duration::from_millis(for_ms)));
        Ok(())
    }

    /// Node `i`'s storage works again (a restarted node gets a working disk).
    pub(super) fn heal(&self, i: usize) {
        if let Some(m) = self.mounts.get(i) {
            m.control().heal();
        }
    }

    /// Every node's storage works again.
    pub(super) fn heal_all(&self) {
        for m in &self.mounts {
            m.control().heal();
        }
    }

    pub(super) fn take_losses(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.losses)
    }

    pub(super) fn take_damage(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.damage)
    }

    fn of(&self, i: usize, p: Proc) -> Result<&faultfs::Mount> {
        self.mounts
            .get(i)
            .ok_or_else(|| HarnessError::new(format!("{p} has no fault filesystem")))
    }
}
