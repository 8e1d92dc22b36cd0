//! Our broker's cluster behind the seam: [`System`] in terms of its processes, its
//! proxies and its HTTP API.

use std::time::Duration;

use super::Cluster;
use super::events::BrokerEvent;
use crate::error::Result;
use crate::net::{Conditions, Grudge};
use crate::proc::Proc;
use crate::system::view::ClusterView;
use serde_json::json;

use crate::system::{DiskMode, Reconfiguration, ReplicaSeen, System};

impl System for Cluster {
    fn procs(&self) -> Vec<Proc> {
        self.members.keys().copied().collect()
    }

    fn nodes(&self) -> Vec<i32> {
        self.node_ids()
    }

    fn is_running(&self, p: Proc) -> bool {
        Cluster::is_running(self, p)
    }

    /// Their power cut too when the campaign's kills must lose what was not fsynced.
    async fn kill(&mut self, procs: &[Proc]) -> Result<()> {
        let cut = self.kills_cut_power().then_some(None);
        self.kill_cutting(procs, cut).await
    }

    /// Without the fault filesystem, a kill of a node run with `--simulate-page-cache`
    /// (the broker does not tear writes).
    async fn cut_power(&mut self, node: i32, torn: Option<u64>) -> Result<()> {
        let cut = (!self.disks.is_empty()).then_some(torn);
        self.kill_cutting(&[Proc::Node(node)], cut).await
    }

    /// Through its fault filesystem when it has one, so the kernel's cache sees it.
    async fn corrupt(&mut self, node: i32, seed: u64) -> Result<()> {
        self.kill(&[Proc::Node(node)]).await?;
        let p = Proc::Node(node);
        let dir = self.config.root.join(p.key()).join("data");
        self.damage
            .extend(crate::system::corrupt::damage(&dir, p, seed)?);
        Ok(())
    }

    fn take_damage(&mut self) -> Vec<serde_json::Value> {
        std::mem::take(&mut self.damage)
    }

    fn take_losses(&mut self) -> Vec<serde_json::Value> {
        std::mem::take(&mut self.losses)
    }

    /// On the same data dir, listening on a fresh port the proxies are pointed at.
    async fn restart(&mut self, p: Proc) -> Result<()> {
        let member = self.member(p)?;
        // It may have died on its own (a crash, reported as it is reaped): reap it,
        // then start it like a killed one.
        member.exited()?;
        if member.is_running() {
            return Ok(());
        }
        self.disk_replaced(p);
        let addr = self.member(p)?.restart().await?;
        self.point_links_at(p, Some(addr));
        Ok(())
    }

    async fn pause(&mut self, p: Proc) -> Result<()> {
        self.member(p)?.pause()
    }

    async fn resume(&mut self, p: Proc) -> Result<()> {
        self.member(p)?.resume()
    }

    /// Pairs that name no link of this cluster are ignored.
    fn cut(&mut self, grudge: &Grudge) {
        for pair in &grudge.cut {
            if let Some(link) = self.links.get(pair) {
                link.cut();
            }
        }
    }

    fn heal(&mut self, grudge: &Grudge) {
        for pair in &grudge.cut {
            if let Some(link) = self.links.get(pair) {
                link.heal();
            }
        }
    }

    fn degrade(
        &mut self,
        procs: &[Proc],
        between: bool,
        seed: u64,
        change: &dyn Fn(&mut Conditions),
    ) {
        if between {
            self.degrade_between(procs, seed, change)
        } else {
            self.degrade_around(procs, seed, change)
        }
    }

    fn hold_answers(&mut self, p: Proc, held: bool) {
        if let Some(link) = self.client_links.get(&p) {
            if held {
                link.cut_answers()
            } else {
                link.heal_answers()
            }
        }
    }

    async fn set_clock(
        &mut self,
        p: Proc,
        fault: Option<crate::system::clock::ClockFault>,
    ) -> Result<()> {
        match &mut self.clocks {
            Some(clocks) => clocks.set(p, fault),
            None => Err(crate::system::unsupported(
                "clock faults in this campaign (its processes run on the machine's clock)",
            )),
        }
    }

    async fn fail_storage(&mut self, node: i32, mode: DiskMode, for_ms: u64) -> Result<()> {
        self.set_disk(node, mode, for_ms).await
    }

    async fn storage_ok(&mut self, node: i32) -> Result<()> {
        self.disk_ok(node).await
    }

    /// Sent to the active controller.
    async fn reconfigure(&mut self, change: &Reconfiguration) -> std::result::Result<(), String> {
        let (controller, _) = Cluster::active_controller(self)
            .await
            .map_err(|e| e.to_string())?;
        let addr = self
            .real_addr(controller)
            .ok_or_else(|| format!("the controller ({controller}) is not running"))?;
        let (delete, path, body) = match change {
            Reconfiguration::AddPartitions { topic, count } => (
                false,
                format!("/v1/topics/{topic}/partitions"),
                json!({ "count": count }),
            ),
            Reconfiguration::Reassign {
                topic,
                partition,
                replicas,
                ..
            } => (
                false,
                format!("/v1/topics/{topic}/partitions/{partition}/reassign"),
                json!({ "replicas": replicas }),
            ),
            Reconfiguration::CancelReassignment { topic, partition } => (
                true,
                format!("/v1/topics/{topic}/partitions/{partition}/reassign"),
                json!({}),
            ),
        };
        self.admin
            .admin(addr, delete, &path, &body)
            .await
            .map_err(|e| e.to_string())
    }

    async fn roles(&self, topics: &[&str]) -> Option<ClusterView> {
        let meta = self.metadata().await.ok();
        Some(ClusterView::new(&self.node_ids(), meta.as_ref(), topics))
    }

    async fn active_controller(&self) -> Result<(Proc, i64)> {
        let (p, meta) = Cluster::active_controller(self).await?;
        Ok((p, meta.controller_epoch))
    }

    async fn replica(&self, node: i32, topic: &str, partition: u32) -> Option<ReplicaSeen> {
        let addr = self.real_addr(Proc::Node(node))?;
        let d = self.admin.debug_partitions(addr).await.ok()?;
        d.partitions
            .iter()
            .find(|r| r.topic == topic && r.partition == partition)
            .map(|r| ReplicaSeen {
                leo: r.log_end_offset,
                hw: r.high_watermark,
                flushed: r.flushed_offset,
                leader: r.leader,
            })
    }

    fn transitions(&mut self) -> Vec<BrokerEvent> {
        self.events.poll()
    }

    /// Every link healed (client links too) and restored, every paused process
    /// resumed, then every killed one restarted (a dedicated controller first), and
    /// every node's storage working.
    async fn heal_all(&mut self) -> Result<()> {
        for link in self.links.values().chain(self.client_links.values()) {
            link.heal();
        }
        self.restore_links();
        for p in self.procs() {
            self.resume(p).await?;
        }
        for p in self.procs() {
            self.restart(p).await?;
        }
        if let Some(clocks) = &mut self.clocks {
            clocks.reset_all()?;
        }
        self.disks_ok().await
    }

    async fn wait_converged(&self, timeout: Duration) -> Result<()> {
        self.await_convergence(timeout).await
    }

    async fn final_logs(&self, save: &mut dyn FnMut(i32, &str) -> Result<()>) -> Result<bool> {
        self.dump_logs(save).await.map(|()| true)
    }

    /// Every process stopped (a paused one continued before its SIGKILL), every
    /// proxy closed.
    async fn shutdown(mut self) -> Result<()> {
        for p in System::procs(&self) {
            self.member(p)?.kill().await?;
        }
        self.links.clear();
        self.client_links.clear();
        Ok(())
    }
}
