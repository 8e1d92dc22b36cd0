//! Fixed fault scripts (`watermark run --scenario NAME`): the failures KIP-101 and
//! KIP-279 fixed, reproduced on every run against `--truncation hw` and harmless
//! against `--truncation epoch`.
//!
//! A script replaces the random schedule of the [`crate::nemesis`]. It is driven by
//! what the harness can observe — the controller's metadata (who leads) and the
//! nodes' `/debug/partitions` (each replica's HW and LEO) — and every step it takes is
//! a nemesis event in history.jsonl, named as the random faults are (`crash-all`,
//! `restart`, `pause`, `resume`, `kill`, `lose-unflushed`, `partition`, `heal`). Every wait is bounded: a script
//! that does not see what it waits for goes on after its deadline (under epoch
//! truncation some of what a script waits for never happens, by design).
//!
//! The scripts work on partition 0 of the workload's topic, with three or more nodes.
//! One more, `duplicate-on-retry` (module `retry`), shows a producer's retry
//! appending a value twice.

mod retry;

use std::time::Duration;

use broker_config::ReplicaSettings;
use clap::ValueEnum;
use serde_json::json;
use tokio::time::Instant;

use super::fault::NemesisEvent;
use super::runner::controller_event;
use crate::error::{HarnessError, Result};
use crate::names::by_name;
use crate::net::Grudge;
use crate::proc::Proc;
use crate::system::broker::Cluster;

/// How often a script looks at the cluster while it waits.
const POLL: Duration = Duration::from_millis(100);
/// How long a script waits for the first leader and committed records.
const WARM_UP: Duration = Duration::from_secs(30);
/// How long a script waits for the controller to move leadership.
const FAILOVER: Duration = Duration::from_secs(15);
/// How long the controller scenario keeps a killed controller down when no majority
/// of voters is left without it.
const CONTROLLER_BACK: Duration = Duration::from_secs(1);
/// How long a script waits for the new leader to take writes.
const NEW_WRITES: Duration = Duration::from_secs(15);
/// Records the partition must hold, committed, before a script strikes.
const MIN_COMMITTED: u64 = 100;
/// Records a new leader should write past the old leader's end before it returns.
const OVERWRITE: u64 = 20;
/// How long a script lets uncommitted records pile up behind a stalled follower (well
/// under the broker's 10 s replica lag time, so nobody leaves the ISR meanwhile).
const PILE_UP: Duration = Duration::from_secs(4);
/// Uncommitted records a script wants piled up before it goes on.
const PILED: u64 = 3;
/// How long a script waits after the HW moved for the acknowledgements to reach the
/// clients.
const ACKS_OUT: Duration = Duration::from_millis(300);

/// The scripts `--scenario` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// KIP-101's first failure: acknowledged records lost after every node crashed.
    ///
    /// KIP-101 scenario 1: every node crashes; the followers come back first, learn
    /// the (still dead) leader, truncate to their stale HW; the controller then elects
    /// one of them; acknowledged records are lost, and the old leader's log diverges
    /// when it returns.
    Kip101DataLoss,
    /// KIP-101's second failure: logs diverge after two followers lost unflushed bytes.
    ///
    /// KIP-101 scenario 2: one follower loses its unflushed bytes (power cut) and
    /// leaves the ISR; then the leader stalls while the other follower loses its
    /// unflushed bytes and comes back at once; it is elected with a shorter log and
    /// (with the first follower back in its ISR) takes new writes at offsets the old
    /// leader already committed; the old leader returns, keeps what its HW covers, and
    /// the logs diverge.
    Kip101Divergence,
    /// KIP-279's failure: leadership moves twice before a follower caught up.
    ///
    /// KIP-279's fast leader failover: leadership moves twice before a follower has
    /// caught up with the first move. A follower cut off from its peers (not from the
    /// controller) is told of the interim leader, truncates to its stale HW, and is
    /// elected when the interim leader dies a moment later; the acknowledged records
    /// its HW did not cover are gone, and the first leader's log diverges when it
    /// returns. The interim leader's epoch is one the final leader never saw: its
    /// follower asks about it after a restart, which is what KIP-279's answer (the
    /// largest epoch at or below the one asked for) is for.
    Kip279Divergence,
    /// A producer's retry writes a value twice (acks=all, answers lost).
    ///
    /// The leader of partition 0 appends and replicates the sends, but its answers
    /// to the clients are held (a one-way cut) past their request timeout; the
    /// producers retry (`--retries`, 5 unless given) once the answers flow, and the
    /// values are appended again. Caught as `duplicate`; valid with `--retries 0` or
    /// `--idempotent`.
    DuplicateOnRetry,
    /// The controller fails over in the middle of a leader failover.
    ///
    /// The leader of partition 0 is killed, and right after it the active
    /// controller (unless the leader was the controller itself): the new leader
    /// must be elected by a new controller, under a higher controller epoch, which
    /// first gives the brokers a session timeout to reach it. When the kills leave
    /// no majority of controller voters (two of three brokers), no controller
    /// exists: a moment later the old leader comes back first (a restarted broker
    /// leads nothing), so the controller elected then is not the killed one. Then
    /// both come back.
    ControllerFailover,
}

by_name!(Scenario => "scenario");

impl Scenario {
    /// Does the script need the controller as a process of its own? The divergence
    /// scripts take two of three brokers out of action around the failover they
    /// stage (a follower cut from its peers that must still reach the controller; a
    /// stalled leader while both followers go down), which, with every broker a
    /// voter, would leave no majority to elect a controller at the moment the KIP's
    /// timeline needs one.
    pub fn needs_dedicated_controller(self) -> bool {
        matches!(
            self,
            Scenario::Kip101Divergence | Scenario::Kip279Divergence
        )
    }

    /// What the script needs of every broker's replicas.
    pub fn settings(self, replica: &mut ReplicaSettings) {
        if self == Scenario::Kip101Divergence {
            // The followers must lose their unflushed bytes when killed: the last
            // second's, so the new leader soon writes past the old leader's end.
            replica.simulate_page_cache = true;
            replica.flush_ms = Some(1000);
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
            Scenario::Kip279Divergence => s.kip279_divergence().await,
            Scenario::DuplicateOnRetry => s.duplicate_on_retry().await,
            Scenario::ControllerFailover => s.controller_failover().await,
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
    leader: i32,
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
                leader: r.leader,
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
        self.wait_seen(leader, NEW_WRITES, |s| s.leo >= offset)
            .await;
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

    async fn kip279_divergence(&mut self) -> Result<()> {
        let (old, _, followers) = self.warm_up().await?;
        // The controller elects the first live ISR member in replica order: `interim`
        // leads after `old`, then `last` after `interim`.
        let (interim, last) = (followers[0], followers[1]);
        // The interim leader stops fetching from the leader (one direction only, so
        // nothing else stalls), and acks=all records pile up above the HW on the
        // leader and on `last`, which holds them but does not know they will commit.
        let stall = Grudge {
            cut: vec![(Proc::Node(interim), Proc::Node(old))],
        };
        self.cut(&stall, "one-way");
        self.wait_seen(last, PILE_UP, |s| s.leo >= s.hw + PILED)
            .await;
        // `last` is cut off from its peers (it still reaches the controller), so it
        // learns nothing more from any leader; then the interim leader catches up and
        // the old leader commits and acknowledges the piled-up records.
        let peers: Vec<Proc> = self
            .cluster
            .node_ids()
            .into_iter()
            .filter(|&id| id != last)
            .map(Proc::Node)
            .collect();
        let isolate = Grudge::components(&[vec![Proc::Node(last)], peers]);
        self.cut(&isolate, "isolate-from-peers");
        self.heal(&stall, "one-way");
        if let Some(held) = self.seen(last).await {
            self.wait_seen(old, PILE_UP, |s| s.hw >= held.leo).await;
        }
        tokio::time::sleep(ACKS_OUT).await;
        let end = self.seen(old).await.map_or(0, |s| s.leo);
        // First failover: the old leader stalls; the controller elects the interim
        // leader and tells `last`, which becomes its follower (under hw it truncates
        // to its stale HW at once; under epoch it waits for the interim leader's
        // OffsetsForLeaderEpoch answer, which never comes).
        self.cluster.pause(Proc::Node(old)).await?;
        self.event("pause", &[old]);
        if self.wait_leader_moved(old).await.is_some() {
            self.wait_seen(last, FAILOVER, |s| s.leader == interim)
                .await;
        }
        // Second failover, before `last` caught up: the interim leader dies, and
        // `last` is the only live ISR member left.
        self.cluster.kill(Proc::Node(interim)).await?;
        self.event("kill", &[interim]);
        self.heal(&isolate, "isolate-from-peers");
        let new = self.wait_leader_moved(interim).await;
        // The interim leader comes back as a follower, so acks=all writes flow again,
        // at offsets the old leader committed; then the old leader returns.
        self.cluster.restart(Proc::Node(interim)).await?;
        self.event("restart", &[interim]);
        if let Some(new) = new {
            self.wait_leo(new, end + OVERWRITE).await;
        }
        self.cluster.resume(Proc::Node(old)).await?;
        self.event("resume", &[old]);
        Ok(())
    }

    async fn controller_failover(&mut self) -> Result<()> {
        let (old, _, _) = self.warm_up().await?;
        let (controller, meta) = self.cluster.active_controller().await?;
        let epoch = meta.controller_epoch;
        (self.on_event)(controller_event(controller, epoch, "kill"));
        self.cluster.kill(Proc::Node(old)).await?;
        self.event("kill", &[old]);
        // The leader may be the controller itself: then one kill fails both over.
        if controller != Proc::Node(old) {
            self.cluster.kill(controller).await?;
            (self.on_event)(NemesisEvent::new("kill", json!([controller.to_json()])));
        }
        let dedicated = self.cluster.dedicated_controller();
        let nodes = self.cluster.node_ids();
        let running = nodes
            .iter()
            .filter(|&&id| self.cluster.is_running(Proc::Node(id)))
            .count();
        if dedicated {
            // A quorum of one: no controller until it is back.
            tokio::time::sleep(CONTROLLER_BACK).await;
            self.restart(controller).await?;
        } else if running <= nodes.len() / 2 {
            // No majority of voters left: the old leader comes back first (as a
            // restarted broker it leads nothing), so a controller other than the
            // killed one is elected, under a higher epoch, and elects the new leader.
            tokio::time::sleep(CONTROLLER_BACK).await;
            self.restart(Proc::Node(old)).await?;
        }
        // The new leader takes writes before the others return.
        if let Some(new) = self
            .wait_new_leader(old, (!dedicated).then_some(epoch))
            .await
            && let Some(seen) = self.seen(new).await
        {
            self.wait_leo(new, seen.leo + OVERWRITE).await;
        }
        self.restart(controller).await?;
        self.restart(Proc::Node(old)).await?;
        Ok(())
    }

    /// Start `p` again if it is down, recorded as a `restart`.
    async fn restart(&mut self, p: Proc) -> Result<()> {
        if self.cluster.is_running(p) {
            return Ok(());
        }
        self.cluster.restart(p).await?;
        (self.on_event)(NemesisEvent::new("restart", json!([p.to_json()])));
        Ok(())
    }

    /// Wait (bounded) until the active controller — of an epoch above `epoch`, if
    /// given — names a running leader of partition 0 other than `old`.
    async fn wait_new_leader(&self, old: i32, epoch: Option<i64>) -> Option<i32> {
        let deadline = Instant::now() + FAILOVER + CONTROLLER_BACK;
        while Instant::now() < deadline {
            if let Ok(meta) = self.cluster.metadata().await
                && epoch.is_none_or(|e| meta.controller_epoch > e)
                && let Some(l) = meta.partition(self.topic, 0).map(|p| p.leader)
                && l >= 0
                && l != old
                && self.cluster.is_running(Proc::Node(l))
            {
                return Some(l);
            }
            tokio::time::sleep(POLL).await;
        }
        None
    }

    /// Cut the links of `grudge`, recorded as a `partition` named `topology`.
    fn cut(&mut self, grudge: &Grudge, topology: &str) {
        self.cluster.partition(grudge);
        let value = json!({"topology": topology, "grudge": grudge.to_json()});
        (self.on_event)(NemesisEvent::new("partition", value));
    }

    /// Restore the links of `grudge`, recorded as the `heal` of that partition.
    fn heal(&mut self, grudge: &Grudge, topology: &str) {
        self.cluster.heal_links(grudge);
        let value = json!({"topology": topology, "grudge": grudge.to_json()});
        (self.on_event)(NemesisEvent::new("heal", value));
    }

    /// Wait (at most `timeout`) until node `id`'s replica of partition 0 passes `test`.
    async fn wait_seen(&self, id: i32, timeout: Duration, test: impl Fn(&Seen) -> bool) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.seen(id).await.is_some_and(|s| test(&s)) {
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Wait (bounded) until the controller's ISR of partition 0 no longer holds `id`.
    async fn wait_isr_without(&self, id: i32) {
        let left = |isr: &[i32]| !isr.contains(&id);
        self.cluster
            .wait_isr(self.topic, 0, FAILOVER, POLL, left)
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_divergence_script_needs_the_page_cache_simulation() {
        let needs = |s: Scenario| {
            let mut r = ReplicaSettings::default();
            s.settings(&mut r);
            r.simulate_page_cache
        };
        assert!(!needs(Scenario::Kip101DataLoss));
        assert!(!needs(Scenario::Kip279Divergence));
        assert!(needs(Scenario::Kip101Divergence));
    }
}
