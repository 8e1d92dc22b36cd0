//! A campaign's schedule, as it was played: the interpreter hands each applied step
//! to a [`Recorder`], which pairs each fault with the step that ended it and names
//! its targets by the roles they had just before it ([`Target::of`]), aimed as the
//! decision that made it named them (the partition of a `plan`).

use std::time::Duration;

use super::target::Aimed;
use super::{Entry, Links, ScheduleFile, Spec, Target};
use serde_json::Value;

use crate::nemesis::action::Action;
use crate::nemesis::fault::NemesisEvent;
use crate::net::Grudge;
use crate::proc::Proc;
use crate::system::Reconfiguration;
use crate::system::view::{ClusterView, PartitionView};

/// The faults applied so far, each with its end once applied.
#[derive(Debug, Default)]
pub struct Recorder {
    entries: Vec<Entry>,
    /// Faults in force: the entry, and the action its end undoes.
    open: Vec<(usize, Action)>,
    /// The partition and the words of the last decision.
    hint: Option<(String, u32)>,
    /// The processes the last decision aimed at as the active controller and as its
    /// follower, if any.
    controller: Option<Proc>,
    follower: Option<Proc>,
    trigger: Option<String>,
    /// The last decision's number.
    plan: Option<u64>,
    /// Its partition as the last decision saw it (its leader, its followers in
    /// election order): its roles when no look at the cluster shows it.
    seen: Option<PartitionView>,
}

impl Recorder {
    /// A decision: the faults that follow are its (until the next).
    pub fn note(&mut self, event: &NemesisEvent) {
        if event.f != "plan" {
            return;
        }
        let v = &event.value;
        self.hint = v["topic"]
            .as_str()
            .zip(v["partition"].as_u64())
            .map(|(t, p)| (t.to_string(), p as u32));
        self.controller = Proc::from_json(&v["roles"]["controller"]);
        self.follower = Proc::from_json(&v["roles"]["follower"]);
        // A drawn decision's number, or, replaying a schedule, the plan its line
        // was of.
        self.plan = v["number"].as_u64().or_else(|| v["plan"].as_u64());
        self.seen = self.hint.as_ref().and_then(|(topic, partition)| {
            let leader = v["roles"]["leader"].as_i64()? as i32;
            let followers = v["roles"]["followers"].as_array();
            let followers = followers.into_iter().flatten().filter_map(Value::as_i64);
            let replicas: Vec<i32> = std::iter::once(leader)
                .chain(followers.map(|f| f as i32))
                .collect();
            Some(PartitionView {
                topic: topic.clone(),
                partition: *partition,
                leader: Some(leader),
                leader_epoch: 0,
                isr: replicas.clone(),
                replicas,
                adding: Vec::new(),
                removing: Vec::new(),
            })
        });
        if let Some(t) = v["trigger"].as_str() {
            self.trigger = Some(t.to_string());
            return;
        }
        self.trigger = v["pattern"].as_str().map(|p| {
            let variant = v["roles"]["variant"].as_str();
            match variant {
                Some(var) => format!("{p} ({var})"),
                None => p.to_string(),
            }
        });
    }

    /// What the last decision named `p`.
    fn aimed(&self, p: Proc) -> Aimed {
        if self.controller == Some(p) {
            Aimed::Controller
        } else if self.follower == Some(p) {
            Aimed::Follower
        } else {
            Aimed::Other
        }
    }

    /// Whether `action` starts a fault (and so wants the roles before it applies).
    pub fn starts(action: &Action) -> bool {
        action.undo().is_some() || matches!(action, Action::Reconfigure { .. })
    }

    /// `action` was applied `at` from the start, with the system seen as `view`
    /// just before it, among `procs`.
    pub fn applied(
        &mut self,
        at: Duration,
        action: &Action,
        view: Option<&ClusterView>,
        procs: &[Proc],
    ) {
        if let Some(i) = self.open.iter().rposition(|(_, a)| action.undoes(a)) {
            let (entry, started) = self.open.remove(i);
            let e = &mut self.entries[entry];
            e.lasts = Some(at.saturating_sub(e.at));
            if let (
                Spec::CrashAll { restarts },
                Action::CrashAll(nodes),
                Action::RestartEach(order),
            ) = (&mut e.fault, &started, action)
            {
                // The restarts in the order and with the gaps they had, each node
                // named by the role it had when the crash began.
                let named: Vec<(i32, Target)> = nodes
                    .iter()
                    .copied()
                    .zip(restarts.drain(..).map(|(t, _)| t))
                    .collect();
                *restarts = order
                    .iter()
                    .filter_map(|(gap, id)| {
                        let (_, t) = named.iter().find(|(n, _)| n == id)?;
                        Some((t.clone(), *gap))
                    })
                    .collect();
            }
            return;
        }
        let hint = self.hint.as_ref().map(|(t, p)| (t.as_str(), *p));
        // No look answered, or the controller did not say (a slowed or cut-off
        // controller): the decision's partition as it saw it.
        let blind = hint.is_some_and(|(t, n)| view.and_then(|v| v.partition(t, n)).is_none());
        let patched;
        let view = match (blind, &self.seen) {
            (true, Some(seen)) => {
                let mut v = view
                    .cloned()
                    .unwrap_or_else(|| ClusterView::new(&[], None, &[]));
                v.partitions.push(seen.clone());
                patched = v;
                Some(&patched)
            }
            _ => view,
        };
        let role = |p: Proc| Target::of(p, view, hint, self.aimed(p));
        let struck = |p: Proc| Target::struck(p, view, hint, self.aimed(p));
        let (fault, touched): (Spec, Vec<Proc>) = match action {
            Action::Kill(p) => (Spec::Kill(struck(*p)), vec![*p]),
            Action::KillOnceInIsr {
                leader,
                follower,
                topic,
                partition,
                within,
            } => {
                let p = Proc::Node(*leader);
                let f = Proc::Node(*follower);
                let spec = Spec::KillOnceInIsr {
                    target: struck(p),
                    follower: role(f),
                    topic: topic.clone(),
                    partition: *partition,
                    within: *within,
                };
                (spec, if f == p { vec![p] } else { vec![p, f] })
            }
            Action::Clock { proc, fault } => (
                Spec::Clock {
                    target: role(*proc),
                    fault: *fault,
                },
                vec![*proc],
            ),
            Action::Corrupt { node, seed } => {
                let p = Proc::Node(*node);
                let spec = Spec::Corrupt {
                    target: role(p),
                    seed: *seed,
                };
                (spec, vec![p])
            }
            Action::TornWrite { node, seed } => {
                let p = Proc::Node(*node);
                let spec = Spec::TornWrite {
                    target: role(p),
                    seed: *seed,
                };
                (spec, vec![p])
            }
            Action::LoseUnflushed(id) => {
                let p = Proc::Node(*id);
                (Spec::LoseUnflushed(role(p)), vec![p])
            }
            Action::CrashAll(nodes) => {
                // Named now, while the leaders are known; ordered at the restart.
                let restarts = nodes
                    .iter()
                    .map(|&id| (role(Proc::Node(id)), Duration::ZERO))
                    .collect();
                (Spec::CrashAll { restarts }, Vec::new())
            }
            Action::Pause(p) => (Spec::Pause(struck(*p)), vec![*p]),
            Action::HoldAnswers(p) => (Spec::HoldAnswers(role(*p)), vec![*p]),
            Action::Cut { shape, grudge } => {
                let (links, touched) = match isolated(grudge, procs) {
                    Some(p) => (Links::Isolate(struck(p)), vec![p]),
                    None => {
                        // Its processes in the order its pairs first name them.
                        let mut named: Vec<Proc> = Vec::new();
                        for &p in grudge.cut.iter().flat_map(|(a, b)| [a, b]) {
                            if !named.contains(&p) {
                                named.push(p);
                            }
                        }
                        let pairs = grudge.cut.iter().map(|&(a, b)| (role(a), role(b)));
                        (Links::Cut(pairs.collect()), named)
                    }
                };
                let spec = Spec::Partition {
                    shape: shape.clone(),
                    links,
                };
                (spec, touched)
            }
            Action::Degrade {
                procs: on,
                between,
                how,
                seed,
            } => {
                let spec = Spec::Degrade {
                    targets: on.iter().map(|&p| role(p)).collect(),
                    between: *between,
                    how: *how,
                    seed: *seed,
                };
                (spec, on.clone())
            }
            Action::Disk { node, mode, .. } => {
                let p = Proc::Node(*node);
                let spec = Spec::Disk {
                    target: role(p),
                    mode: *mode,
                };
                (spec, vec![p])
            }
            Action::Reconfigure {
                change,
                settle,
                throttle,
            } => match change {
                Reconfiguration::Reassign {
                    topic,
                    partition,
                    replicas,
                    ..
                } => {
                    // The replicas before the move, by role: what binds the ids
                    // of `replicas` to processes in a replay.
                    let before: Vec<Proc> = view
                        .and_then(|v| v.partition(topic, *partition))
                        .map(|p| p.replicas.iter().map(|&id| Proc::Node(id)).collect())
                        .unwrap_or_default();
                    let spec = Spec::Reassign {
                        topic: topic.clone(),
                        partition: *partition,
                        replicas: replicas.clone(),
                        settle: *settle,
                        from: before.iter().map(|&p| role(p)).collect(),
                        throttle: throttle.as_ref().map(|t| t.bytes_per_s),
                    };
                    (spec, before)
                }
                Reconfiguration::CancelReassignment { topic, partition } => {
                    let spec = Spec::CancelReassignment {
                        topic: topic.clone(),
                        partition: *partition,
                    };
                    (spec, Vec::new())
                }
                Reconfiguration::AddPartitions { topic, count } if *count > 0 => {
                    let spec = Spec::AddPartitions {
                        topic: topic.clone(),
                        count: *count,
                    };
                    (spec, Vec::new())
                }
                _ => return,
            },
            // An end whose start is not recorded (ended by the end of the run).
            _ => return,
        };
        let process = (!touched.is_empty()).then(|| {
            touched
                .iter()
                .map(Proc::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        });
        self.entries.push(Entry {
            at,
            lasts: None,
            fault,
            process,
            plan: self.plan,
            trigger: self.trigger.clone(),
            line: 0,
        });
        if action.undo().is_some() {
            self.open.push((self.entries.len() - 1, action.clone()));
        }
    }

    /// The schedule so far (faults still in force have no end).
    pub fn schedule(&self) -> ScheduleFile {
        ScheduleFile {
            faults: self.entries.clone(),
            ..ScheduleFile::default()
        }
    }
}

/// The process a grudge cuts off from every other one, if that is its shape.
fn isolated(grudge: &Grudge, procs: &[Proc]) -> Option<Proc> {
    let mut want = grudge.cut.clone();
    want.sort();
    grudge.affected().into_iter().find(|&p| {
        let mut shape = Grudge::isolate(p, procs).cut;
        shape.sort();
        shape == want
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decision's `plan` event.
    fn plan(v: serde_json::Value) -> NemesisEvent {
        NemesisEvent::new("plan", v)
    }

    /// queue/0 led by 2 (the controller would elect 3, then 1), node 1 the active
    /// controller.
    fn view() -> ClusterView {
        ClusterView::sample(Proc::Node(1), &[("queue", 0, &[2, 3, 1])])
    }

    #[test]
    fn faults_are_named_by_role_and_paired_with_their_ends() {
        let procs = [Proc::Node(1), Proc::Node(2), Proc::Node(3)];
        let v = view();
        let mut r = Recorder::default();
        let s = Duration::from_secs;
        r.applied(s(1), &Action::Kill(Proc::Node(2)), Some(&v), &procs);
        let cut = Action::Cut {
            shape: "isolate-controller".into(),
            grudge: Grudge::isolate(Proc::Node(1), &procs),
        };
        r.applied(s(2), &cut, Some(&v), &procs);
        r.applied(s(3), &Action::Pause(Proc::Node(3)), Some(&v), &procs);
        r.applied(s(4), &Action::Restart(Proc::Node(2)), Some(&v), &procs);
        r.applied(s(6), &cut.undo().unwrap(), Some(&v), &procs);
        let f = r.schedule().faults;
        assert_eq!(f.len(), 3);
        let field = |e: &Entry, k: &str| {
            e.fault
                .fields()
                .into_iter()
                .find(|(f, _)| *f == k)
                .map(|(_, v)| v)
                .unwrap()
        };
        assert_eq!(field(&f[0], "target"), "leader of queue/0");
        assert_eq!(f[0].lasts, Some(s(3)));
        assert_eq!(f[0].process.as_deref(), Some("node 2"));
        assert_eq!(field(&f[1], "isolate"), "active-controller");
        assert_eq!(f[1].process.as_deref(), Some("node 1"));
        assert_eq!(f[1].lasts, Some(s(4)));
        assert_eq!(field(&f[2], "target"), "follower of queue/0");
        assert_eq!(f[2].lasts, None, "still in force");
    }

    /// A crash-all's restarts are recorded in their order, with their gaps, each
    /// node by the role it had before the crash: the old leader last, seconds after.
    #[test]
    fn a_crash_all_records_its_restart_order_by_role() {
        let procs = [Proc::Node(1), Proc::Node(2), Proc::Node(3)];
        let v = view();
        let mut r = Recorder::default();
        r.note(&plan(
            serde_json::json!({"pattern": "crash-all", "topic": "queue", "partition": 0}),
        ));
        let ms = Duration::from_millis;
        r.applied(ms(1000), &Action::CrashAll(vec![1, 2, 3]), Some(&v), &procs);
        let restart = Action::RestartEach(vec![(ms(0), 3), (ms(400), 1), (ms(6000), 2)]);
        r.applied(ms(1300), &restart, None, &procs);
        let f = r.schedule().faults;
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].lasts, Some(ms(300)));
        assert_eq!(
            f[0].to_line(),
            "{\"at\": 1.0, \"fault\": \"crash-all\", \"restart\": [[\"follower of queue/0\",0.0],\
             [\"follower 2 of queue/0\",0.4],[\"leader of queue/0\",6.0]], \"for\": 0.3, \
             \"trigger\": \"crash-all\"}"
        );
        let back = ScheduleFile::parse(&r.schedule().to_text()).unwrap();
        assert_eq!(back.faults[0].fault, f[0].fault);
        assert_eq!(back.length(), ms(7700));
    }

    /// A decision's number is each of its faults' `plan`; a reassignment records
    /// the replicas it moves from by role, and their processes.
    #[test]
    fn a_reassignment_records_its_plan_and_the_replicas_it_moves_from() {
        let procs = [Proc::Node(1), Proc::Node(2), Proc::Node(3)];
        let v = view();
        let mut r = Recorder::default();
        r.note(&plan(serde_json::json!({"number": 4, "pattern": "reassign", "topic": "queue", "partition": 0})));
        let reassign = Action::Reconfigure {
            change: Reconfiguration::Reassign {
                topic: "queue".into(),
                partition: 0,
                replicas: vec![2, 3],
                from: vec![],
            },
            settle: Duration::from_secs(3),
            throttle: None,
        };
        r.applied(Duration::from_secs(1), &reassign, Some(&v), &procs);
        let e = &r.schedule().faults[0];
        assert_eq!(
            e.to_line(),
            "{\"at\": 1.0, \"fault\": \"reassign\", \"partition\": \"queue/0\", \"replicas\": [2,3], \
             \"settle\": 3.0, \"from\": [\"leader of queue/0\",\"follower of queue/0\",\
             \"follower 2 of queue/0\"], \"process\": \"node 2, node 3, node 1\", \"plan\": 4, \
             \"trigger\": \"reassign\"}"
        );
        assert_eq!(e.processes().map(|p| p.len()), Some(3));
    }

    /// A throttled move is one fault: its throttle's lifting is its end.
    #[test]
    fn a_throttled_reassignment_is_one_fault_that_lasts_until_its_throttle_is_lifted() {
        let procs = [Proc::Node(1), Proc::Node(2), Proc::Node(3)];
        let v = view();
        let mut r = Recorder::default();
        let grow = Action::Reconfigure {
            change: Reconfiguration::Reassign {
                topic: "queue".into(),
                partition: 0,
                replicas: vec![1, 2, 3],
                from: vec![],
            },
            settle: Duration::ZERO,
            throttle: Some(crate::nemesis::action::MoveThrottle {
                procs: vec![Proc::Node(1), Proc::Node(2)],
                bytes_per_s: 2048,
                seed: 5,
            }),
        };
        let lift = grow.undo().expect("its throttle is lifted");
        assert!(lift.undoes(&grow));
        assert_eq!(lift.event().f, "stop-throttle");
        r.applied(Duration::from_secs(1), &grow, Some(&v), &procs);
        r.applied(Duration::from_millis(3500), &lift, Some(&v), &procs);
        let f = r.schedule().faults;
        assert_eq!(f.len(), 1, "{f:?}");
        let line = f[0].to_line();
        assert!(line.contains("\"throttle_bytes_per_s\": 2048"), "{line}");
        assert!(line.contains("\"for\": 2.5"), "{line}");
    }

    /// When no look at the cluster answers (or the controller did not say), a
    /// fault is named by the roles its decision saw.
    #[test]
    fn without_a_look_the_decisions_roles_name_the_processes() {
        let procs = [Proc::Node(1), Proc::Node(2), Proc::Node(3)];
        let mut r = Recorder::default();
        r.note(&plan(
            serde_json::json!({"pattern": "leader-kill", "topic": "register", "partition": 0,
                "roles": {"leader": 2, "followers": [3, 1]}}),
        ));
        r.applied(
            Duration::from_secs(1),
            &Action::Pause(Proc::Node(1)),
            None,
            &procs,
        );
        let silent = ClusterView {
            partitions: vec![],
            controller: None,
            ..view()
        };
        r.applied(
            Duration::from_secs(2),
            &Action::Kill(Proc::Node(2)),
            Some(&silent),
            &procs,
        );
        let f = r.schedule().faults;
        let target = |e: &Entry| e.fault.fields()[0].1.clone();
        assert_eq!(target(&f[0]), "follower 2 of register/0");
        assert_eq!(target(&f[1]), "leader of register/0");
    }

    /// A pattern aimed at a partition names its processes by their roles there: a
    /// follower it kills that is also the active controller is replayed as that
    /// follower, and a leader that is as that leader, unless the pattern aimed at
    /// the controller.
    #[test]
    fn a_plan_names_its_processes_by_their_roles_in_its_partition() {
        let procs = [Proc::Node(1), Proc::Node(2), Proc::Node(3)];
        let v = view();
        let plan = |roles: serde_json::Value| {
            plan(
                serde_json::json!({"pattern": "p", "topic": "queue", "partition": 0, "roles": roles}),
            )
        };
        let mut r = Recorder::default();
        let s = Duration::from_secs;
        r.note(&plan(serde_json::json!({"leader": 2, "follower": 1})));
        r.applied(s(1), &Action::Kill(Proc::Node(1)), Some(&v), &procs);
        r.note(&plan(serde_json::json!({"leader": 2, "controller": 1})));
        r.applied(s(2), &Action::Kill(Proc::Node(1)), Some(&v), &procs);
        // The controller leading the partition too: killed as the controller, its
        // link throttled as the leader.
        let led = ClusterView::sample(Proc::Node(1), &[("queue", 0, &[1, 2, 3])]);
        r.note(&plan(serde_json::json!({"leader": 1, "controller": 1})));
        let throttle = Action::Degrade {
            procs: vec![Proc::Node(3), Proc::Node(1)],
            between: true,
            how: crate::nemesis::fault::Degradation::Throttle { bytes_per_s: 1024 },
            seed: 1,
        };
        r.applied(s(3), &throttle, Some(&led), &procs);
        r.applied(s(3), &Action::Kill(Proc::Node(1)), Some(&led), &procs);
        r.note(&plan(serde_json::json!({"leader": 1})));
        r.applied(s(4), &Action::Kill(Proc::Node(1)), Some(&led), &procs);
        let f = r.schedule().faults;
        let target = |e: &Entry| e.fault.fields()[0].1.clone();
        assert_eq!(target(&f[0]), "follower 2 of queue/0");
        assert_eq!(target(&f[1]), "active-controller");
        assert!(
            f[2].to_line()
                .contains(r#""targets": ["follower 2 of queue/0","leader of queue/0"]"#),
            "{}",
            f[2].to_line()
        );
        assert_eq!(target(&f[3]), "active-controller");
        assert_eq!(target(&f[4]), "leader of queue/0");
    }
}
