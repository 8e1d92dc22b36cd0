//! The nemesis at work: a [`Planner`]'s steps applied to a [`Cluster`], each start
//! and end reported as a [`NemesisEvent`] once applied.

use std::time::Duration;

use serde_json::json;

use super::fault::{Fault, NemesisEvent};
use super::planner::{Planner, Step};
use crate::error::Result;
use crate::net::{Grudge, Topology};
use crate::proc::Proc;
use crate::system::broker::Cluster;

/// The time between two restarts at the end of a crash-all, with a dedicated
/// controller (which stays up). Spread over more than the controller's session
/// timeout (3 s) for three nodes, so a node that comes back early can learn a leader
/// that is still down and act on it (truncate, under `--truncation hw`) before the
/// controller declares that leader dead: KIP-101's first scenario.
pub const CRASH_ALL_RESTART_GAP: Duration = Duration::from_millis(1750);

/// The same when the controller runs in the brokers, and so went down with them: a
/// controller is elected only once a majority is back (up to the 1.5 s election
/// timeout), then gives every broker a session timeout (3 s) before it declares the
/// ones still down dead. With three brokers the last comes back after that.
pub const CRASH_ALL_RESTART_GAP_COMBINED: Duration = Duration::from_millis(5000);

/// Applies a [`Planner`]'s schedule to a cluster.
#[derive(Debug)]
pub struct Nemesis {
    planner: Planner,
    /// The topic whose partitions' leaders isolate-leader reads.
    topic: String,
}

impl Nemesis {
    pub fn new(planner: Planner, topic: impl Into<String>) -> Nemesis {
        Nemesis {
            planner,
            topic: topic.into(),
        }
    }

    pub fn planner(&self) -> &Planner {
        &self.planner
    }

    /// The time between two restarts at the end of a crash-all.
    fn crash_all_gap(&self) -> Duration {
        if self.planner.dedicated_controller() {
            CRASH_ALL_RESTART_GAP
        } else {
            CRASH_ALL_RESTART_GAP_COMBINED
        }
    }

    /// Run the schedule for `time_limit`, then end every active fault. Each start and
    /// end is passed to `on_event` once applied. Dropping this future midway leaves
    /// faults active: end them with [`Nemesis::end_all`] or `Cluster::heal_all`.
    pub async fn run(
        &mut self,
        cluster: &mut Cluster,
        time_limit: Duration,
        on_event: &mut (dyn FnMut(NemesisEvent) + Send),
    ) -> Result<()> {
        let end = tokio::time::Instant::now() + time_limit;
        loop {
            let (delay, step) = self.planner.next_step();
            if tokio::time::Instant::now() + delay >= end {
                // The step falls after the end: undo a start that will not happen.
                if let Step::Start(_) = step {
                    self.planner.abandon_last();
                } else if let Step::End(fault) = step {
                    self.planner.put_back(fault);
                }
                tokio::time::sleep_until(end).await;
                break;
            }
            tokio::time::sleep(delay).await;
            self.apply(step, cluster, on_event).await?;
        }
        self.end_all(cluster, on_event).await
    }

    /// End every active fault, oldest first, reporting each end.
    pub async fn end_all(
        &mut self,
        cluster: &mut Cluster,
        on_event: &mut (dyn FnMut(NemesisEvent) + Send),
    ) -> Result<()> {
        for fault in self.planner.end_all() {
            self.apply(Step::End(fault), cluster, on_event).await?;
        }
        Ok(())
    }

    /// Apply one step.
    pub async fn apply(
        &mut self,
        step: Step,
        cluster: &mut Cluster,
        on_event: &mut (dyn FnMut(NemesisEvent) + Send),
    ) -> Result<()> {
        match step {
            Step::Idle => {}
            Step::Start(fault) => {
                let fault = match fault {
                    Fault::Partition {
                        topology: Topology::IsolateLeader,
                        partition,
                        ..
                    } => match cluster.leader_of(&self.topic, partition).await {
                        Ok(Some(leader)) => {
                            let grudge = Grudge::isolate(Proc::Node(leader), &cluster.procs());
                            let fault = Fault::Partition {
                                topology: Topology::IsolateLeader,
                                grudge,
                                partition,
                            };
                            self.planner.resolve_last(fault.clone());
                            fault
                        }
                        // No leader (or the controller is unreachable): nothing to isolate now.
                        _ => {
                            self.planner.abandon_last();
                            return Ok(());
                        }
                    },
                    // Aimed at the controller: the active one now, named in the history.
                    Fault::Kill(Proc::Controller)
                    | Fault::Pause(Proc::Controller)
                    | Fault::Partition {
                        topology: Topology::IsolateController,
                        ..
                    } => match cluster.active_controller().await {
                        Ok((controller, meta)) => {
                            let fault = match fault {
                                Fault::Kill(_) => Fault::Kill(controller),
                                Fault::Pause(_) => Fault::Pause(controller),
                                Fault::Partition { partition, .. } => Fault::Partition {
                                    topology: Topology::IsolateController,
                                    grudge: Grudge::isolate(controller, &cluster.procs()),
                                    partition,
                                },
                                other => other,
                            };
                            self.planner.resolve_last(fault.clone());
                            on_event(controller_event(
                                controller,
                                meta.controller_epoch,
                                &fault.start_event().f,
                            ));
                            fault
                        }
                        // No controller now (no majority of voters): nothing to aim at.
                        Err(_) => {
                            self.planner.abandon_last();
                            return Ok(());
                        }
                    },
                    other => other,
                };
                match &fault {
                    Fault::Kill(p) => cluster.kill(*p).await?,
                    Fault::Pause(p) => cluster.pause(*p).await?,
                    Fault::LoseUnflushed(id) => cluster.kill(Proc::Node(*id)).await?,
                    Fault::CrashAll(ids) => {
                        let procs: Vec<Proc> = ids.iter().map(|&id| Proc::Node(id)).collect();
                        cluster.kill_at_once(&procs).await?
                    }
                    Fault::Partition { grudge, .. } => cluster.partition(grudge),
                    Fault::Degrade { procs, how, seed } => {
                        cluster.degrade(procs, *seed, |c| how.apply(c))
                    }
                    Fault::Disk { node, mode, for_ms } => {
                        cluster
                            .set_disk(*node, mode.as_str(), Some(*for_ms))
                            .await?
                    }
                }
                on_event(fault.start_event());
            }
            Step::End(fault) => {
                match &fault {
                    Fault::Kill(p) => cluster.restart(*p).await?,
                    Fault::Pause(p) => cluster.resume(*p).await?,
                    Fault::LoseUnflushed(id) => cluster.restart(Proc::Node(*id)).await?,
                    Fault::CrashAll(order) => {
                        for (i, &id) in order.iter().enumerate() {
                            if i > 0 {
                                tokio::time::sleep(self.crash_all_gap()).await;
                            }
                            cluster.restart(Proc::Node(id)).await?;
                        }
                    }
                    Fault::Partition { .. } => cluster.heal(),
                    Fault::Degrade { procs, how, seed } => {
                        cluster.degrade(procs, *seed, |c| how.clear(c))
                    }
                    Fault::Disk { node, .. } => cluster.disk_ok(*node).await?,
                }
                on_event(fault.end_event());
            }
        }
        Ok(())
    }
}

/// The history mark naming the process a fault aimed at the active controller hits:
/// `{"f": "active-controller", "value": {"process": 2, "controller_epoch": 5,
/// "fault": "kill"}}`, just before that fault's own event.
pub fn controller_event(controller: Proc, epoch: i64, fault: &str) -> NemesisEvent {
    NemesisEvent::new(
        "active-controller",
        json!({"process": controller.to_json(), "controller_epoch": epoch, "fault": fault}),
    )
}
