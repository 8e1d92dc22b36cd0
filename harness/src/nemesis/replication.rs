//! The replication package at work (`--nemesis replication`, the default): the I/O
//! around the pure [`Aimed`] planner. Before each pattern it looks at the cluster —
//! the controller's metadata (who leads, the ISR, the leader epochs) and the
//! `EVENT` lines the brokers appended to their logs since — folds what it saw into
//! the campaign's [`Coverage`], asks the planner for the next pattern, records the
//! decision in the history (`plan`), and plays the pattern's script on the
//! cluster, each step recorded as it is applied. At the time limit it stops
//! mid-script and undoes whatever is still in force.

use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;

use super::action::{Action, Script};
use super::aimed::{Aimed, Decision};
use super::coverage::Coverage;
use super::fault::NemesisEvent;
use super::view::ClusterView;
use crate::error::Result;
use crate::proc::Proc;
use crate::system::broker::Cluster;
use crate::system::broker::events::EventTail;

/// No pattern starts closer than this to the time limit: it would be cut short
/// before anything it aims at could happen.
const LAST_START: Duration = Duration::from_secs(1);

/// Runs the replication package against a cluster.
#[derive(Debug)]
pub struct ReplicationNemesis {
    planner: Aimed,
    topics: Vec<&'static str>,
    coverage: Coverage,
    tail: EventTail,
    /// Steps in force that a later step has not undone yet, oldest first.
    in_force: Vec<Action>,
}

impl ReplicationNemesis {
    /// `topics`: the workload's, whose partitions the patterns aim at; `logs`: the
    /// cluster's root, holding each process's `broker.log`; `coverage` counts from
    /// the campaign's start.
    pub fn new(
        planner: Aimed,
        topics: &[&'static str],
        logs: &Path,
        coverage: Coverage,
    ) -> ReplicationNemesis {
        ReplicationNemesis {
            planner,
            topics: topics.to_vec(),
            coverage,
            tail: EventTail::new(logs),
            in_force: Vec::new(),
        }
    }

    /// What the campaign has exercised so far.
    pub fn coverage(&self) -> &Coverage {
        &self.coverage
    }

    pub fn into_coverage(self) -> Coverage {
        self.coverage
    }

    /// Steps still in force.
    pub fn in_force(&self) -> &[Action] {
        &self.in_force
    }

    /// Play patterns until `time_limit`, then undo what is in force. Every decision
    /// and step goes to `on_event` once taken.
    pub async fn run(
        &mut self,
        cluster: &mut Cluster,
        time_limit: Duration,
        on_event: &mut (dyn FnMut(NemesisEvent) + Send),
    ) -> Result<()> {
        let end = Instant::now() + time_limit;
        self.observe(cluster).await;
        let mut wait = self.planner.first_gap();
        'campaign: while sleep_within(wait, end).await {
            if end - Instant::now() < LAST_START {
                sleep_within(LAST_START, end).await;
                break;
            }
            let view = self.observe(cluster).await;
            let plan = match self.planner.decide(&view, &self.coverage) {
                Decision::Wait(d) => {
                    wait = d;
                    continue;
                }
                Decision::Run(plan) => plan,
            };
            on_event(plan.event());
            *self
                .coverage
                .patterns
                .entry(plan.pattern.to_string())
                .or_default() += 1;
            if !self.play(plan.script, cluster, end, on_event).await? {
                break 'campaign;
            }
            wait = self.planner.gap();
        }
        self.undo_all(cluster, on_event).await?;
        self.observe(cluster).await;
        Ok(())
    }

    /// Play one pattern's script, each step recorded as it is applied, then undo
    /// whatever it left in force. Stops at `end` (and says so: false), leaving
    /// what is in force for [`undo_all`](Self::undo_all).
    pub async fn play(
        &mut self,
        script: Script,
        cluster: &mut Cluster,
        end: Instant,
        on_event: &mut (dyn FnMut(NemesisEvent) + Send),
    ) -> Result<bool> {
        for (after, action) in script.steps {
            if !sleep_within(after, end).await {
                return Ok(false);
            }
            self.apply(action, cluster, on_event).await?;
        }
        self.undo_all(cluster, on_event).await?;
        Ok(true)
    }

    /// Undo every step in force, newest first, recording each undo.
    pub async fn undo_all(
        &mut self,
        cluster: &mut Cluster,
        on_event: &mut (dyn FnMut(NemesisEvent) + Send),
    ) -> Result<()> {
        while let Some(step) = self.in_force.pop() {
            if let Some(undo) = step.undo() {
                act(&undo, cluster, on_event).await?;
            }
        }
        Ok(())
    }

    /// What the cluster looks like now; the coverage takes in the brokers' new
    /// events and the leader epochs.
    async fn observe(&mut self, cluster: &Cluster) -> ClusterView {
        let events = self.tail.poll();
        self.coverage.add_all(&events);
        let view = view_of(cluster, &self.topics).await;
        self.coverage.observe(&view);
        view
    }

    /// Apply one step, record it, and keep track of what is in force.
    async fn apply(
        &mut self,
        action: Action,
        cluster: &mut Cluster,
        on_event: &mut (dyn FnMut(NemesisEvent) + Send),
    ) -> Result<()> {
        act(&action, cluster, on_event).await?;
        if action.undo().is_some() {
            self.in_force.push(action);
        } else if let Some(i) = self.in_force.iter().rposition(|a| action.undoes(a)) {
            self.in_force.remove(i);
        }
        Ok(())
    }
}

/// Apply one step to the cluster and record it.
async fn act(
    action: &Action,
    cluster: &mut Cluster,
    on_event: &mut (dyn FnMut(NemesisEvent) + Send),
) -> Result<()> {
    {
        match action {
            Action::Kill(p) => cluster.kill(*p).await?,
            Action::KillOnceInIsr {
                leader,
                follower,
                topic,
                partition,
                within,
            } => {
                let joined = |isr: &[i32]| isr.contains(follower);
                cluster
                    .wait_isr(topic, *partition, *within, ISR_LOOK_INTERVAL, joined)
                    .await;
                cluster.kill(Proc::Node(*leader)).await?
            }
            Action::LoseUnflushed(id) => cluster.kill(Proc::Node(*id)).await?,
            Action::CrashAll(ids) => {
                let procs: Vec<Proc> = ids.iter().map(|&id| Proc::Node(id)).collect();
                cluster.kill_at_once(&procs).await?
            }
            Action::Restart(p) => cluster.restart(*p).await?,
            Action::RestartEach(order) => {
                for (gap, id) in order {
                    tokio::time::sleep(*gap).await;
                    cluster.restart(Proc::Node(*id)).await?;
                }
            }
            Action::Pause(p) => cluster.pause(*p).await?,
            Action::Resume(p) => cluster.resume(*p).await?,
            Action::Cut { grudge, .. } => cluster.partition(grudge),
            Action::Heal { grudge, .. } => cluster.heal_links(grudge),
            Action::Disk { node, mode, for_ms } => {
                cluster
                    .set_disk(*node, mode.as_str(), Some(*for_ms))
                    .await?
            }
            Action::DiskOk { node, .. } => cluster.disk_ok(*node).await?,
            Action::Degrade {
                procs,
                between,
                how,
                seed,
            } => degrade(cluster, procs, *between, *seed, |c| how.apply(c)),
            Action::Restore {
                procs,
                between,
                how,
                seed,
            } => degrade(cluster, procs, *between, *seed, |c| how.clear(c)),
        }
        on_event(action.event());
        Ok(())
    }
}

/// Change the links of `procs` (every one to and from them, or only those
/// `between` them).
fn degrade(
    cluster: &mut Cluster,
    procs: &[Proc],
    between: bool,
    seed: u64,
    change: impl Fn(&mut crate::net::Conditions),
) {
    if between {
        cluster.degrade_between(procs, seed, change)
    } else {
        cluster.degrade(procs, seed, change)
    }
}

/// How often a kill timed by the cluster's state looks at the metadata.
const ISR_LOOK_INTERVAL: Duration = Duration::from_millis(25);

/// The cluster as the controller's metadata shows it now, for `topics` (no
/// partitions if the controller does not answer).
pub async fn view_of(cluster: &Cluster, topics: &[&str]) -> ClusterView {
    let meta = cluster.metadata().await.ok();
    ClusterView::new(&cluster.node_ids(), meta.as_ref(), topics)
}

/// Sleep `d` unless that passes `end`; then sleep until `end` and say so (false).
async fn sleep_within(d: Duration, end: Instant) -> bool {
    let wake = Instant::now() + d;
    if wake >= end {
        tokio::time::sleep_until(end).await;
        return false;
    }
    tokio::time::sleep_until(wake).await;
    true
}
