//! The nodes' disk fault switch (`POST /debug/disk`, docs/faults.md): the `disk`
//! fault makes one node's storage fail for a while, and healing the cluster makes
//! every node's storage work again.

use super::Cluster;
use crate::error::{HarnessError, Result};
use crate::proc::Proc;

impl Cluster {
    /// Make node `id`'s storage fail in `mode` (`enospc`, `eio`) for `for_ms`
    /// milliseconds, or work again (`ok`, `for_ms` None).
    pub(super) async fn set_disk(&self, id: i32, mode: &str, for_ms: Option<u64>) -> Result<()> {
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
        if self.is_running(Proc::Node(id)) {
            self.set_disk(id, "ok", None).await?;
        }
        Ok(())
    }

    /// Make every running node's storage work (a node started since works anyway:
    /// the switch lives in the process).
    pub(super) async fn disks_ok(&self) -> Result<()> {
        for id in self.node_ids() {
            self.disk_ok(id).await?;
        }
        Ok(())
    }
}
