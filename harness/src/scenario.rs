//! Fixed fault scripts (`watermark run --scenario NAME`): the KIP-101 failures of
//! pre-0.11 Kafka, reproduced on every run against `--truncation hw` and harmless
//! against `--truncation epoch`.
//!
//! A script replaces the random schedule of the [`crate::nemesis`]. It is driven by
//! what the harness can observe — the controller's metadata (who leads) and the
//! nodes' `/debug/partitions` (each replica's HW and LEO) — and every step it takes is
//! a nemesis event in history.jsonl, named as the random faults are (`crash-all`,
//! `restart`, `pause`, `resume`, `lose-unflushed`). Every wait is bounded: a script
//! that does not see what it waits for goes on after its deadline (under epoch
//! truncation some of what a script waits for never happens, by design).
//!
//! The scripts work on partition 0 of the workload's topic, with three or more nodes.

use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use crate::cluster::{Cluster, Proc};
use crate::error::{HarnessError, Result};
use crate::nemesis::NemesisEvent;

/// How often a script looks at the cluster while it waits.
const POLL: Duration = Duration::from_millis(100);
/// How long a script waits for the first leader and committed records.
const WARM_UP: Duration = Duration::from_secs(30);
/// How long a script waits for the controller to move leadership.
const FAILOVER: Duration = Duration::from_secs(15);
/// How long a script waits for the new leader to take writes.
const NEW_WRITES: Duration = Duration::from_secs(15);
/// Records the partition must hold, committed, before a script strikes.
const MIN_COMMITTED: u64 = 100;
/// Records a new leader should write past the old leader's end before it returns.
const OVERWRITE: u64 = 20;

/// The scripts `--scenario` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// KIP-101 scenario 1: every node crashes; the followers come back first, learn
    /// the (still dead) leader, truncate to their stale HW; the controller then elects
    /// one of them; acknowledged records are lost, and the old leader's log diverges
    /// when it returns.
    Kip101DataLoss,
    /// KIP-101 scenario 2: one follower loses its unflushed bytes (power cut) and
    /// leaves the ISR; then the leader stalls while the other follower loses its
    /// unflushed bytes and comes back at once; it is elected with a shorter log and
    /// (with the first follower back in its ISR) takes new writes at offsets the old
    /// leader already committed; the old leader returns, keeps what its HW covers, and
    /// the logs diverge.
    Kip101Divergence,
}

/// Every name, for error messages.
pub const NAMES: &[&str] = &["kip101-data-loss", "kip101-divergence"];

impl Scenario {
    pub fn parse(name: &str) -> std::result::Result<Scenario, String> {
        match name {
            "kip101-data-loss" => Ok(Scenario::Kip101DataLoss),
            "kip101-divergence" => Ok(Scenario::Kip101Divergence),
            "kip279-divergence" => Err(
                "--scenario kip279-divergence is not yet supported; choose kip101-data-loss \
                 or kip101-divergence"
                    .to_string(),
            ),
            other => Err(format!(
                "unknown scenario `{other}`; choose from {}",
                NAMES.join(", ")
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Kip101DataLoss => "kip101-data-loss",
            Scenario::Kip101Divergence => "kip101-divergence",
        }
    }

    /// Extra arguments of every `broker node` the script needs.
    pub fn node_args(self) -> Vec<String> {
        match self {
            Scenario::Kip101DataLoss => Vec::new(),
            // The followers must lose their unflushed bytes when killed: the last
            // second's, so the new leader soon writes past the old leader's end.
            Scenario::Kip101Divergence => ["--simulate-page-cache", "--flush-ms", "1000"]
                .map(String::from)
                .to_vec(),
        }
    }

    /// Run the script against `cluster`, on partition 0 of `topic`, reporting each
    /// step through `on_event` once applied.
    pub async fn run(
        self,
        cluster: &mut Cluster,
        topic: &str,
        on_event: &mut (dyn FnMut(NemesisEvent) + Send),
    ) -> Result<()> {
        let mut s = Script {
            cluster,
            topic,
            on_event,
        };
        match self {
            Scenario::Kip101DataLoss => s.kip101_data_loss().await,
            Scenario::Kip101Divergence => s.kip101_divergence().await,
        }
    }
}

struct Script<'a> {
    cluster: &'a mut Cluster,
    topic: &'a str,
    on_event: &'a mut (dyn FnMut(NemesisEvent) + Send),
}

/// What a node says of its replica of partition 0.
#[derive(Debug, Clone, Copy)]
struct Seen {
    leo: u64,
    hw: u64,
}

impl Script<'_> {
    fn event(&mut self, f: &str, ids: &[i32]) {
        (self.on_event)(NemesisEvent::new(f, json!(ids)));
    }

    async fn leader(&self) -> Option<i32> {
        self.cluster.leader_of(self.topic, 0).await.ok().flatten()
    }

    async fn seen(&self, id: i32) -> Option<Seen> {
        let d = self.cluster.debug_partitions(id).await.ok()?;
        d.partitions
            .iter()
            .find(|r| r.topic == self.topic && r.partition == 0)
            .map(|r| Seen {
                leo: r.log_end_offset,
                hw: r.high_watermark,
            })
    }

    /// Wait until partition 0 has a leader with `MIN_COMMITTED` committed records;
    /// the leader, its view, and the other replicas (followers).
    async fn warm_up(&self) -> Result<(i32, Seen, Vec<i32>)> {
        let deadline = Instant::now() + WARM_UP;
        loop {
            if let Some(l) = self.leader().await
                && let Some(seen) = self.seen(l).await
                && seen.hw >= MIN_COMMITTED
            {
                let followers = self
                    .replicas()
                    .await?
                    .into_iter()
                    .filter(|&r| r != l)
                    .collect();
                return Ok((l, seen, followers));
            }
            if Instant::now() >= deadline {
                return Err(HarnessError::new(format!(
                    "scenario: partition {}-0 had no leader with {MIN_COMMITTED} committed \
                     records within {WARM_UP:?}",
                    self.topic
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn replicas(&self) -> Result<Vec<i32>> {
        let meta = self.cluster.metadata().await?;
        let p = meta
            .partition(self.topic, 0)
            .ok_or_else(|| HarnessError::new(format!("scenario: no partition {}-0", self.topic)))?;
        if p.replicas.len() < 3 {
            return Err(HarnessError::new(
                "scenario: partition 0 needs three replicas (--nodes 3 or more)",
            ));
        }
        Ok(p.replicas.clone())
    }

    /// Wait (bounded) until the controller names a leader other than `old` (or none).
    async fn wait_leader_moved(&self, old: i32) -> Option<i32> {
        let deadline = Instant::now() + FAILOVER;
        while Instant::now() < deadline {
            if let Ok(meta) = self.cluster.metadata().await
                && let Some(l) = meta.partition(self.topic, 0).map(|p| p.leader)
                && l >= 0
                && l != old
            {
                return Some(l);
            }
            tokio::time::sleep(POLL).await;
        }
        None
    }

    /// Wait (bounded) until `leader`'s log reaches `offset`.
    async fn wait_leo(&self, leader: i32, offset: u64) {
        let deadline = Instant::now() + NEW_WRITES;
        while Instant::now() < deadline {
            if self.seen(leader).await.is_some_and(|s| s.leo >= offset) {
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn kip101_data_loss(&mut self) -> Result<()> {
        let (old, seen, followers) = self.warm_up().await?;
        let nodes = self.cluster.node_ids();
        let all: Vec<Proc> = nodes.iter().map(|&id| Proc::Node(id)).collect();
        self.cluster.kill_at_once(&all).await?;
        self.event("crash-all", &nodes);
        // The followers come back at once: the controller still names the old leader.
        for &f in &followers {
            self.cluster.restart(Proc::Node(f)).await?;
        }
        self.event("restart", &followers);
        if let Some(new) = self.wait_leader_moved(old).await {
            self.wait_leo(new, seen.leo + OVERWRITE).await;
        }
        let rest: Vec<i32> = nodes
            .iter()
            .copied()
            .filter(|id| !followers.contains(id))
            .collect();
        for &id in &rest {
            self.cluster.restart(Proc::Node(id)).await?;
        }
        self.event("restart", &rest);
        Ok(())
    }

    async fn kip101_divergence(&mut self) -> Result<()> {
        let (old, _, followers) = self.warm_up().await?;
        let (first, last) = (followers[0], followers[1]);
        // One follower loses its unflushed bytes first and leaves the ISR, so the
        // old leader and the controller's first choice are all the ISR holds.
        self.cluster.kill(Proc::Node(last)).await?;
        self.event("lose-unflushed", &[last]);
        self.wait_isr_without(last).await;
        let seen = self.seen(old).await;
        // The leader stalls; the other follower loses its unflushed bytes and comes
        // back at once, while the controller still names the stalled leader.
        self.cluster.pause(Proc::Node(old)).await?;
        self.event("pause", &[old]);
        self.cluster.kill(Proc::Node(first)).await?;
        self.event("lose-unflushed", &[first]);
        self.cluster.restart(Proc::Node(first)).await?;
        self.event("restart", &[first]);
        // The other follower comes back too: with it in the ISR again, a new leader
        // can take acks=all writes (min.insync.replicas 2).
        let new = self.wait_leader_moved(old).await;
        self.cluster.restart(Proc::Node(last)).await?;
        self.event("restart", &[last]);
        if let Some(new) = new {
            let end = seen.map_or(0, |s| s.leo);
            self.wait_leo(new, end + OVERWRITE).await;
        }
        self.cluster.resume(Proc::Node(old)).await?;
        self.event("resume", &[old]);
        Ok(())
    }

    /// Wait (bounded) until the controller's ISR of partition 0 no longer holds `id`.
    async fn wait_isr_without(&self, id: i32) {
        let deadline = Instant::now() + FAILOVER;
        while Instant::now() < deadline {
            if let Ok(meta) = self.cluster.metadata().await
                && meta
                    .partition(self.topic, 0)
                    .is_some_and(|p| !p.isr.contains(&id))
            {
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_are_refused_with_the_list() {
        for name in NAMES {
            assert_eq!(Scenario::parse(name).unwrap().name(), *name);
        }
        let e = Scenario::parse("kip999").unwrap_err();
        assert!(e.contains("kip101-data-loss"), "{e}");
        assert!(Scenario::parse("kip279-divergence").is_err());
    }

    #[test]
    fn only_the_divergence_script_needs_the_page_cache_simulation() {
        assert!(Scenario::Kip101DataLoss.node_args().is_empty());
        assert!(
            Scenario::Kip101Divergence
                .node_args()
                .contains(&"--simulate-page-cache".to_string())
        );
    }
}
