//! The fault list (`--nemesis kill,pause,…`) as a schedule source: the seeded
//! [`Planner`] draws when the next change comes (every `interval` ± 25 %), whether it
//! starts a fault or ends the oldest one, which fault and which targets, keeping to
//! what the cluster can survive (see `planner`); [`FaultList`] turns each change
//! into the steps that start or end it. Every draw is made whatever the cluster's
//! state, so a seed gives the same schedule on every run; only the targets named by
//! a role — the active controller, the leader of an `isolate-leader`'s partition —
//! are resolved when the step is applied.

mod planner;

use std::time::Duration;

pub use planner::{Change, Planner};

use super::action::Action;
use super::fault::Degradation;
use super::schedule::{Aimed, AimedFault, Next, Now, Role, Source, Step, Taken};
use crate::net::{Grudge, Topology};
use crate::proc::Proc;
use crate::system::clock::ClockFault;
use crate::system::{DiskMode, Reconfiguration};

/// How long moving a partition back waits for the reassignment in progress to end,
/// and for its own to complete.
const REASSIGN_BACK: Duration = Duration::from_secs(10);

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

/// A fault with its targets drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    Kill(Proc),
    Pause(Proc),
    LoseUnflushed(i32),
    /// A power cut that keeps a prefix, drawn from `seed`, of the last write.
    TornWrite {
        node: i32,
        seed: u64,
    },
    /// A node killed and one of its files damaged, as `seed` draws.
    Corrupt {
        node: i32,
        seed: u64,
    },
    /// Every node, and the order they are restarted in.
    CrashAll(Vec<i32>),
    /// A partition; for isolate-leader the grudge is empty until the leader of
    /// `partition` is read from the controller.
    Partition {
        topology: Topology,
        grudge: Grudge,
        partition: u32,
    },
    /// Degraded links (docs/faults.md#degraded-links): every link to or from `procs`,
    /// clients' included; `seed` seeds the links' draws.
    Degrade {
        procs: Vec<Proc>,
        how: Degradation,
        seed: u64,
    },
    /// A node's disk fails in `mode` for `for_ms` milliseconds at most (the broker
    /// ends it by itself then, should the end step not come).
    Disk {
        node: i32,
        mode: DiskMode,
        for_ms: u64,
    },
    /// A partition moved to replicas drawn from `seed` when it is applied; `back`:
    /// the replicas it had then, which its end restores.
    Reassign {
        partition: u32,
        seed: u64,
        back: Vec<i32>,
    },
    /// A partition added to the topic (no end).
    AddPartitions,
    /// A process's wall clock off, stepped or strobing until the end.
    Clock {
        proc: Proc,
        fault: ClockFault,
    },
}

impl Fault {
    /// Processes this fault takes down (killed or paused).
    pub(super) fn down(&self) -> Vec<Proc> {
        match self {
            Fault::Kill(p) | Fault::Pause(p) => vec![*p],
            // Not down, but out of the ISRs while its disk fails: it counts against the
            // minority budget, and no other fault hits it meanwhile.
            Fault::LoseUnflushed(id)
            | Fault::TornWrite { node: id, .. }
            | Fault::Corrupt { node: id, .. }
            | Fault::Disk { node: id, .. } => vec![Proc::Node(*id)],
            Fault::CrashAll(ids) => ids.iter().map(|&id| Proc::Node(id)).collect(),
            Fault::Partition { .. }
            | Fault::Degrade { .. }
            | Fault::Clock { .. }
            | Fault::Reassign { .. }
            | Fault::AddPartitions => Vec::new(),
        }
    }

    /// A fault done once applied: nothing to end.
    pub(super) fn instant(&self) -> bool {
        matches!(self, Fault::AddPartitions)
    }

    /// A change of the cluster's configuration, not a failure: it may go beside a
    /// partition or a crash-all.
    pub(super) fn reconfiguration(&self) -> bool {
        matches!(self, Fault::Reassign { .. } | Fault::AddPartitions)
    }

    /// Faults that may run beside any other, a partition or a crash-all too: the
    /// reconfigurations and the clock faults (neither takes a process down or cuts a
    /// link).
    pub(super) fn beside_anything(&self) -> bool {
        self.reconfiguration() || matches!(self, Fault::Clock { .. })
    }

    /// Faults that must be alone.
    pub(super) fn exclusive(&self) -> bool {
        matches!(self, Fault::CrashAll(_) | Fault::Partition { .. })
    }

    /// The step that starts it: on its targets, or on the role that names them now
    /// (the active controller; the leader of an isolate-leader's partition of
    /// `topic`; the partition a reassignment moves; `grown`, the topic new partitions
    /// go to).
    pub fn start(&self, topic: &str, grown: &str) -> Step {
        let aim = |role, fault| Step::Aim(Aimed { role, fault });
        let isolate = |shape: &str| AimedFault::Isolate {
            shape: shape.to_string(),
        };
        match self {
            Fault::Kill(Proc::Controller) => aim(Role::ActiveController, AimedFault::Kill),
            Fault::Pause(Proc::Controller) => aim(Role::ActiveController, AimedFault::Pause),
            Fault::Partition {
                topology: Topology::IsolateLeader,
                partition,
                ..
            } => aim(
                Role::LeaderOf {
                    topic: topic.to_string(),
                    partition: *partition,
                },
                isolate("isolate-leader"),
            ),
            Fault::Partition {
                topology: Topology::IsolateController,
                ..
            } => aim(Role::ActiveController, isolate("isolate-controller")),
            Fault::Reassign {
                partition, seed, ..
            } => aim(
                Role::Partition {
                    topic: topic.to_string(),
                    partition: *partition,
                },
                AimedFault::Reassign { seed: *seed },
            ),
            Fault::AddPartitions => aim(Role::Topic(grown.to_string()), AimedFault::AddPartition),
            Fault::Clock { proc, fault } => Step::Act(Action::Clock {
                proc: *proc,
                fault: *fault,
            }),
            Fault::Kill(p) => Step::Act(Action::Kill(*p)),
            Fault::Pause(p) => Step::Act(Action::Pause(*p)),
            Fault::LoseUnflushed(id) => Step::Act(Action::LoseUnflushed(*id)),
            Fault::TornWrite { node, seed } => Step::Act(Action::TornWrite {
                node: *node,
                seed: *seed,
            }),
            Fault::Corrupt { node, seed } => Step::Act(Action::Corrupt {
                node: *node,
                seed: *seed,
            }),
            Fault::CrashAll(order) => Step::Act(Action::CrashAll(order.clone())),
            Fault::Partition {
                topology, grudge, ..
            } => Step::Act(Action::Cut {
                shape: topology.to_string(),
                grudge: grudge.clone(),
            }),
            Fault::Degrade { procs, how, seed } => Step::Act(Action::Degrade {
                procs: procs.clone(),
                between: false,
                how: *how,
                seed: *seed,
            }),
            Fault::Disk { node, mode, for_ms } => Step::Act(Action::Disk {
                node: *node,
                mode: *mode,
                for_ms: *for_ms,
            }),
        }
    }

    /// The action that ends it; a crash-all restarts its nodes in order, `gap` apart;
    /// a reassignment moves the partition of `topic` back.
    pub fn end(&self, gap: Duration, topic: &str) -> Action {
        match self {
            Fault::Reassign {
                partition, back, ..
            } => Action::Reconfigure {
                change: Reconfiguration::Reassign {
                    topic: topic.to_string(),
                    partition: *partition,
                    replicas: back.clone(),
                    from: Vec::new(),
                },
                settle: REASSIGN_BACK,
                throttle: None,
            },
            // Nothing to end (never kept active).
            Fault::AddPartitions => Action::Reconfigure {
                change: Reconfiguration::AddPartitions {
                    topic: topic.to_string(),
                    count: 0,
                },
                settle: Duration::ZERO,
                throttle: None,
            },
            Fault::Clock { proc, fault } => Action::ClockReset {
                proc: *proc,
                fault: *fault,
            },
            Fault::Kill(p) => Action::Restart(*p),
            Fault::Pause(p) => Action::Resume(*p),
            Fault::LoseUnflushed(id)
            | Fault::TornWrite { node: id, .. }
            | Fault::Corrupt { node: id, .. } => Action::Restart(Proc::Node(*id)),
            Fault::CrashAll(order) => Action::RestartEach(
                order
                    .iter()
                    .enumerate()
                    .map(|(i, &id)| (if i == 0 { Duration::ZERO } else { gap }, id))
                    .collect(),
            ),
            Fault::Partition {
                topology, grudge, ..
            } => Action::Heal {
                shape: topology.to_string(),
                grudge: grudge.clone(),
            },
            Fault::Degrade { procs, how, seed } => Action::Restore {
                procs: procs.clone(),
                between: false,
                how: *how,
                seed: *seed,
            },
            Fault::Disk { node, mode, for_ms } => Action::DiskOk {
                node: *node,
                mode: *mode,
                for_ms: *for_ms,
            },
        }
    }

    /// This fault with the targets its start was applied to (a role resolved): a
    /// reassignment remembers the replicas to move back to.
    fn resolved(&self, applied: &Action) -> Fault {
        match (self, applied) {
            (
                Fault::Reassign {
                    partition, seed, ..
                },
                Action::Reconfigure {
                    change: Reconfiguration::Reassign { from, .. },
                    ..
                },
            ) => Fault::Reassign {
                partition: *partition,
                seed: *seed,
                back: from.clone(),
            },
            (Fault::Kill(_), Action::Kill(p)) => Fault::Kill(*p),
            (Fault::Pause(_), Action::Pause(p)) => Fault::Pause(*p),
            (
                Fault::Partition {
                    topology,
                    partition,
                    ..
                },
                Action::Cut { grudge, .. },
            ) => Fault::Partition {
                topology: *topology,
                grudge: grudge.clone(),
                partition: *partition,
            },
            (fault, _) => fault.clone(),
        }
    }
}

/// A [`Planner`]'s schedule as a source of steps.
#[derive(Debug)]
pub struct FaultList {
    planner: Planner,
    /// The topic whose partitions' leaders isolate-leader reads, and whose
    /// partitions a reassignment moves.
    topic: String,
    /// The topic new partitions go to.
    grown: String,
    /// The change last handed out.
    pending: Option<Change>,
}

impl FaultList {
    pub fn new(planner: Planner, topic: impl Into<String>) -> FaultList {
        let topic = topic.into();
        FaultList {
            planner,
            grown: topic.clone(),
            topic,
            pending: None,
        }
    }

    /// New partitions go to `topic` (the first topic's, unless said).
    pub fn growing(mut self, topic: impl Into<String>) -> FaultList {
        self.grown = topic.into();
        self
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
}

impl Source for FaultList {
    fn next(&mut self, _: &Now<'_>) -> Next {
        let (delay, change) = self.planner.next_step();
        let next = match &change {
            Change::Idle => Next::Wait(delay),
            Change::Start(f) => Next::After(delay, f.start(&self.topic, &self.grown)),
            Change::End(f) => {
                Next::After(delay, Step::Act(f.end(self.crash_all_gap(), &self.topic)))
            }
        };
        self.pending = Some(change);
        next
    }

    fn taken(&mut self, taken: Taken) {
        match (self.pending.take(), taken) {
            // The step falls after the end, or its role names nobody now (no leader,
            // no controller): the start did not happen; an end handed back stays.
            (Some(Change::Start(f)), Taken::TooLate | Taken::Unresolved) if f.instant() => {
                self.planner.abandon_added()
            }
            (Some(Change::Start(_)), Taken::TooLate | Taken::Unresolved) => {
                self.planner.abandon_last()
            }
            (Some(Change::End(f)), Taken::TooLate) => self.planner.put_back(f),
            (Some(Change::Start(f)), Taken::Applied(action)) if !f.instant() => {
                self.planner.resolve_last(f.resolved(&action))
            }
            _ => {}
        }
    }

    /// Every active fault's end, oldest first.
    fn wind_down(&mut self) -> Vec<Step> {
        let gap = self.crash_all_gap();
        self.planner
            .end_all()
            .into_iter()
            .map(|f| Step::Act(f.end(gap, &self.topic)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_starts_and_ends_as_the_history_names_it() {
        let events = |f: &Fault| {
            let start = match f.start("queue", "queue") {
                Step::Act(a) => a.event(),
                other => panic!("{other:?}"),
            };
            (start, f.end(Duration::from_secs(1), "queue").event())
        };
        let (s, e) = events(&Fault::Kill(Proc::Node(2)));
        assert_eq!((s.f.as_str(), s.value), ("kill", serde_json::json!([2])));
        assert_eq!((e.f.as_str(), e.value), ("restart", serde_json::json!([2])));
        let (s, e) = events(&Fault::CrashAll(vec![3, 1, 2]));
        assert_eq!(s.value, serde_json::json!([1, 2, 3]));
        assert_eq!(
            (e.f.as_str(), e.value),
            ("restart", serde_json::json!([3, 1, 2]))
        );
        let grudge = Grudge::isolate(
            Proc::Node(1),
            &[Proc::Controller, Proc::Node(1), Proc::Node(2)],
        );
        let fault = Fault::Partition {
            topology: Topology::IsolateOne,
            grudge,
            partition: 0,
        };
        let (s, e) = events(&fault);
        assert_eq!(
            (s.f.as_str(), &s.value["topology"]),
            ("partition", &"isolate-one".into())
        );
        assert_eq!(s.value["grudge"]["1"], serde_json::json!(["controller", 2]));
        assert_eq!(e.f, "heal");
        let disk = Fault::Disk {
            node: 2,
            mode: DiskMode::Eio,
            for_ms: 4000,
        };
        let (s, e) = events(&disk);
        assert_eq!(
            (s.f.as_str(), &s.value),
            (
                "disk",
                &serde_json::json!({"node": 2, "mode": "eio", "for_ms": 4000})
            )
        );
        assert_eq!((e.f.as_str(), e.value), ("disk-ok", s.value));
        assert_eq!(disk.down(), vec![Proc::Node(2)]);
        let throttle = Fault::Degrade {
            procs: vec![Proc::Node(3)],
            how: Degradation::Throttle { bytes_per_s: 1024 },
            seed: 5,
        };
        let (s, e) = events(&throttle);
        assert_eq!((s.f.as_str(), e.f.as_str()), ("throttle", "stop-throttle"));
    }

    #[test]
    fn faults_on_roles_are_aimed_and_resolved_when_applied() {
        let kill = Fault::Kill(Proc::Controller);
        assert_eq!(
            kill.start("queue", "queue"),
            Step::Aim(Aimed {
                role: Role::ActiveController,
                fault: AimedFault::Kill
            })
        );
        assert_eq!(
            kill.resolved(&Action::Kill(Proc::Node(2))),
            Fault::Kill(Proc::Node(2))
        );
        let isolate = Fault::Partition {
            topology: Topology::IsolateLeader,
            grudge: Grudge::none(),
            partition: 1,
        };
        let Step::Aim(aimed) = isolate.start("queue", "queue") else {
            panic!("aimed at the leader")
        };
        assert_eq!(
            aimed.role,
            Role::LeaderOf {
                topic: "queue".into(),
                partition: 1
            }
        );
        let cut = Grudge::isolate(
            Proc::Node(3),
            &[Proc::Node(1), Proc::Node(2), Proc::Node(3)],
        );
        let applied = Action::Cut {
            shape: "isolate-leader".into(),
            grudge: cut.clone(),
        };
        assert_eq!(
            isolate.resolved(&applied).end(Duration::ZERO, "queue"),
            Action::Heal {
                shape: "isolate-leader".into(),
                grudge: cut
            }
        );
    }

    #[test]
    fn a_reassignment_is_aimed_at_its_partition_and_ends_moving_it_back() {
        let fault = Fault::Reassign {
            partition: 1,
            seed: 7,
            back: Vec::new(),
        };
        let Step::Aim(aimed) = fault.start("queue", "queue") else {
            panic!("aimed at the partition")
        };
        assert_eq!(aimed.fault, AimedFault::Reassign { seed: 7 });
        let applied = Action::Reconfigure {
            change: Reconfiguration::Reassign {
                topic: "queue".into(),
                partition: 1,
                replicas: vec![3, 1],
                from: vec![1, 2, 3],
            },
            settle: Duration::ZERO,
            throttle: None,
        };
        let Action::Reconfigure {
            change: Reconfiguration::Reassign { replicas, .. },
            settle,
            ..
        } = fault.resolved(&applied).end(Duration::ZERO, "queue")
        else {
            panic!("ended by a reassignment")
        };
        assert_eq!(replicas, [1, 2, 3]);
        assert!(settle > Duration::ZERO, "waits for the one in progress");
        // New partitions go to the growing topic, once each.
        let Step::Aim(aimed) = Fault::AddPartitions.start("register", "queue") else {
            panic!("aimed at the topic")
        };
        assert_eq!(aimed.role, Role::Topic("queue".into()));
        assert!(Fault::AddPartitions.instant());
    }
}
