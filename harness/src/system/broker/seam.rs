//! Our broker's cluster behind the seam: [`System`] in terms of its processes, its
//! proxies and its HTTP API.

use std::time::Duration;

use super::Cluster;
use super::events::BrokerEvent;
use crate::error::Result;
use crate::net::{Conditions, Grudge};
use crate::proc::Proc;
use crate::system::view::ClusterView;
use crate::system::{DiskMode, ReplicaSeen, System};

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

    async fn kill(&mut self, procs: &[Proc]) -> Result<()> {
        self.kill_at_once(procs).await
    }

    async fn restart(&mut self, p: Proc) -> Result<()> {
        Cluster::restart(self, p).await
    }

    async fn pause(&mut self, p: Proc) -> Result<()> {
        self.member(p)?.pause()
    }

    async fn resume(&mut self, p: Proc) -> Result<()> {
        self.member(p)?.resume()
    }

    fn cut(&mut self, grudge: &Grudge) {
        self.partition(grudge)
    }

    fn heal(&mut self, grudge: &Grudge) {
        self.heal_links(grudge)
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

    async fn fail_storage(&mut self, node: i32, mode: DiskMode, for_ms: u64) -> Result<()> {
        self.set_disk(node, mode.as_str(), Some(for_ms)).await
    }

    async fn storage_ok(&mut self, node: i32) -> Result<()> {
        self.disk_ok(node).await
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
        let d = self.debug_partitions(node).await.ok()?;
        d.partitions
            .iter()
            .find(|r| r.topic == topic && r.partition == partition)
            .map(|r| ReplicaSeen {
                leo: r.log_end_offset,
                hw: r.high_watermark,
                leader: r.leader,
            })
    }

    fn transitions(&mut self) -> Vec<BrokerEvent> {
        self.events.poll()
    }

    async fn heal_all(&mut self) -> Result<()> {
        Cluster::heal_all(self).await
    }

    async fn wait_converged(&self, timeout: Duration) -> Result<()> {
        Cluster::wait_converged(self, timeout).await
    }

    async fn final_logs(&self, save: &mut dyn FnMut(i32, &str) -> Result<()>) -> Result<bool> {
        self.dump_logs(save).await.map(|()| true)
    }

    async fn shutdown(self) -> Result<()> {
        Cluster::shutdown(self).await
    }
}
