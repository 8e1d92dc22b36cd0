//! The nodes' storage faults (docs/faults.md). By default each process's data dir is
//! a fault filesystem ([`faultfs`]) the harness mounts over `<id>/disk`: the `disk`
//! fault fails its writes and fsyncs from outside the broker, and a power cut drops
//! what the broker wrote and did not fsync. With `--no-fault-fs` the data dir is a
//! plain directory, the `disk` fault goes through the broker's own switch
//! (`POST /debug/disk`) and the brokers simulate their page cache where a fault
//! needs it.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Cluster;
use crate::error::{HarnessError, Result};
use crate::proc::Proc;
use crate::system::DiskMode;

/// Mount a fault filesystem under every process's data dir.
pub(super) fn mount_all(
    root: &std::path::Path,
    procs: &[Proc],
) -> Result<BTreeMap<Proc, faultfs::Mount>> {
    faultfs::available().map_err(|why| {
        HarnessError::new(format!(
            "{why}; or run with --no-fault-fs (storage faults then go through the broker's own switch)"
        ))
    })?;
    let mut disks = BTreeMap::new();
    for &p in procs {
        let dir = root.join(p.key());
        let mount = crate::system::storage::mount(&dir)?;
        disks.insert(p, mount);
    }
    Ok(disks)
}

impl Cluster {
    /// Make node `id`'s storage fail in `mode` for `for_ms` milliseconds.
    pub(super) async fn set_disk(&self, id: i32, mode: DiskMode, for_ms: u64) -> Result<()> {
        if let Some(disk) = self.disks.get(&Proc::Node(id)) {
            let failure = match mode {
                DiskMode::Enospc => faultfs::Failure::Enospc,
                DiskMode::Eio => faultfs::Failure::Eio,
            };
            disk.control()
                .fail(failure, Some(std::time::Duration::from_millis(for_ms)));
            return Ok(());
        }
        self.switch_disk(id, mode.as_str(), Some(for_ms)).await
    }

    /// Through the broker's `POST /debug/disk` switch: `mode` `enospc`, `eio` or `ok`.
    async fn switch_disk(&self, id: i32, mode: &str, for_ms: Option<u64>) -> Result<()> {
        let addr = self
            .real_addr(Proc::Node(id))
            .ok_or_else(|| HarnessError::new(format!("node {id} is not running")))?;
        self.admin
            .set_disk(addr, &self.credentials, mode, for_ms)
            .await
    }

    /// End a disk fault on node `id`: its storage works again. A node that died
    /// meanwhile (killed, or crashed) restarts with a working disk: nothing to do.
    pub(super) async fn disk_ok(&self, id: i32) -> Result<()> {
        if let Some(disk) = self.disks.get(&Proc::Node(id)) {
            disk.control().heal();
        } else if self.is_running(Proc::Node(id)) {
            self.switch_disk(id, "ok", None).await?;
        }
        Ok(())
    }

    /// Make every node's storage work.
    pub(super) async fn disks_ok(&self) -> Result<()> {
        for id in self.node_ids() {
            self.disk_ok(id).await?;
        }
        Ok(())
    }

    /// A restarted process gets a working disk, as with the broker's own switch
    /// (which lives in the process).
    pub(super) fn disk_replaced(&self, p: Proc) {
        if let Some(disk) = self.disks.get(&p) {
            disk.control().heal();
        }
    }

    /// SIGKILL these processes at the same instant (every one signalled first, then
    /// each reaped; their links lead nowhere until they are back); `cut`: then cut
    /// their power, tearing the last write with that seed, and keep what each lost
    /// for [`take_losses`](crate::system::System::take_losses).
    pub(super) async fn kill_cutting(
        &mut self,
        procs: &[Proc],
        cut: Option<Option<u64>>,
    ) -> Result<()> {
        for &p in procs {
            self.member(p)?.signal_kill();
        }
        for &p in procs {
            self.member(p)?.kill().await?;
            self.point_links_at(p, None);
        }
        if let Some(torn) = cut {
            for &p in procs {
                let lost = self.power_out(p, torn)?;
                self.losses
                    .push(json!({"process": p.to_json(), "lost": lost}));
            }
        }
        Ok(())
    }

    /// The power goes out on `p`, which is dead already: its files lose what it did
    /// not fsync (`torn`: but a prefix of the last write, drawn from that seed).
    fn power_out(&self, p: Proc, torn: Option<u64>) -> Result<Value> {
        let disk = self.disks.get(&p).ok_or_else(|| {
            HarnessError::new("a power cut needs the fault filesystem (run without --no-fault-fs)")
        })?;
        crate::system::storage::cut_power(disk, p, torn)
    }

    /// Does a kill of a node cut its power too (a campaign whose kills must lose
    /// what was not fsynced, the faults said so)?
    pub(super) fn kills_cut_power(&self) -> bool {
        self.config.power_cut_on_kill && !self.disks.is_empty()
    }
}
