//! A schedule file played as a source: each fault at its time, its targets resolved
//! against the cluster as seen just then, its end at its time after that; a fault
//! whose role names no process when it is due (no leader at that moment) is skipped
//! and the skip noted. What is still in force at the time limit is ended then.
//! The faults of one plan strike what the original struck together: a process the
//! plan named before is the one its role resolved to then (the roles shift as the
//! plan's own faults move leaders and ISRs).

use std::time::Duration;

use serde_json::json;

use super::{Links, ScheduleFile, Spec, Target};
use crate::nemesis::action::{Action, MoveThrottle};
use crate::nemesis::fault::NemesisEvent;
use crate::nemesis::schedule::{Next, Now, Source, Step, Taken};
use crate::net::Grudge;
use crate::proc::Proc;
use crate::system::Reconfiguration;
use crate::system::view::ClusterView;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Moment {
    Start(usize),
    End(usize),
}

/// A schedule file as a source.
#[derive(Debug)]
pub struct ScheduleSource {
    file: ScheduleFile,
    /// Every start and end, in time order.
    moments: Vec<(Duration, Moment)>,
    next: usize,
    /// The end of each fault applied and not yet ended.
    in_force: Vec<Option<Action>>,
    procs: Vec<Proc>,
    nodes: Vec<i32>,
    /// The fault whose note was just handed out, to apply next.
    queued: Option<Action>,
    /// The plan being played, and the processes bound in it: each process the
    /// original named, with the one this replay found in its role the first time
    /// the plan named it.
    bound: (Option<u64>, Vec<(Proc, Proc)>),
}

impl ScheduleSource {
    /// `file` on a cluster of `procs` (its nodes `nodes`).
    pub fn new(file: ScheduleFile, procs: &[Proc], nodes: &[i32]) -> ScheduleSource {
        let mut moments = Vec::new();
        for (i, e) in file.faults.iter().enumerate() {
            moments.push((e.at, Moment::Start(i)));
            if let Some(d) = e.lasts {
                moments.push((e.at + d, Moment::End(i)));
            }
        }
        // At one instant, the faults that start go before those that end (a pattern
        // throttles a link and then heals its cut, so that nothing passes at full
        // speed between the two; a fault of no length starts before it ends); ties
        // otherwise in the file's order (stable).
        moments.sort_by_key(|&(t, m)| (t, matches!(m, Moment::End(_))));
        ScheduleSource {
            in_force: vec![None; file.faults.len()],
            file,
            moments,
            next: 0,
            procs: procs.to_vec(),
            nodes: nodes.to_vec(),
            queued: None,
            bound: (None, Vec::new()),
        }
    }

    /// The process each target of fault `i` names now: the one its plan bound
    /// already to the process the original named (a plan strikes again what it
    /// struck before, whatever the roles are by then), else its role resolved
    /// against `view`, binding it. Faults without a plan, or whose `process` does
    /// not list one process a target, resolve every role; so does the active
    /// controller, which names one process at any moment (a plan that fails it over
    /// strikes the controller of then, not the process that was it when the plan
    /// began).
    fn find(&self, i: usize, view: Option<&ClusterView>) -> Found {
        let e = &self.file.faults[i];
        let targets = e.fault.targets();
        let mut bound = match (e.plan, &self.bound) {
            (Some(n), (Some(m), b)) if n == *m => b.clone(),
            _ => Vec::new(),
        };
        let recorded = e.plan.and(e.processes());
        let mut found = Vec::new();
        for (k, t) in targets.into_iter().enumerate() {
            let original = recorded.as_ref().map(|r| r[k]);
            let already = original
                .filter(|_| *t != Target::ActiveController)
                .and_then(|o| bound.iter().find(|(b, _)| *b == o));
            let p = match already {
                Some(&(_, p)) => Some(p),
                None => {
                    let p = t.resolve(view, &self.procs);
                    // Bound once: a process another of the original's stands for
                    // already is not bound again.
                    if let (Some(o), Some(p)) = (original, p)
                        && !bound.iter().any(|&(_, q)| q == p)
                    {
                        bound.push((o, p));
                    }
                    p
                }
            };
            found.push((t.clone(), p));
        }
        Found { found, bound }
    }

    /// The action fault `i` is on the cluster seen as `view`, with its plan's
    /// bindings after it (Err: which target names no process now).
    fn resolve(
        &self,
        i: usize,
        view: Option<&ClusterView>,
    ) -> Result<(Action, Vec<(Proc, Proc)>), String> {
        let e = &self.file.faults[i];
        let Found { found, bound } = self.find(i, view);
        let one = |t: &Target| {
            let p = match found.iter().find(|(x, _)| x == t) {
                Some((_, p)) => *p,
                None => t.resolve(view, &self.procs),
            };
            p.ok_or_else(|| t.to_string())
        };
        let node = |t: &Target| match one(t)? {
            Proc::Node(id) => Ok(id),
            Proc::Controller => Err(format!("{t} (not a broker)")),
        };
        let action = match &e.fault {
            Spec::Kill(t) => Action::Kill(one(t)?),
            Spec::KillOnceInIsr {
                target,
                follower,
                topic,
                partition,
                within,
            } => Action::KillOnceInIsr {
                leader: node(target)?,
                follower: node(follower)?,
                topic: topic.clone(),
                partition: *partition,
                within: *within,
            },
            Spec::Pause(t) => Action::Pause(one(t)?),
            Spec::LoseUnflushed(t) => Action::LoseUnflushed(node(t)?),
            Spec::Clock { target, fault } => Action::Clock {
                proc: one(target)?,
                fault: *fault,
            },
            Spec::Corrupt { target, seed } => Action::Corrupt {
                node: node(target)?,
                seed: *seed,
            },
            Spec::TornWrite { target, seed } => Action::TornWrite {
                node: node(target)?,
                seed: *seed,
            },
            Spec::HoldAnswers(t) => Action::HoldAnswers(one(t)?),
            Spec::CrashAll { .. } => Action::CrashAll(self.nodes.clone()),
            Spec::Partition { shape, links } => {
                let grudge = match links {
                    Links::Isolate(t) => Grudge::isolate(one(t)?, &self.procs),
                    Links::Cut(pairs) => {
                        let mut cut = Vec::new();
                        for (a, b) in pairs {
                            let (a, b) = (one(a)?, one(b)?);
                            if a != b && !cut.contains(&(a, b)) {
                                cut.push((a, b));
                            }
                        }
                        Grudge { cut }
                    }
                };
                Action::Cut {
                    shape: shape.clone(),
                    grudge,
                }
            }
            Spec::Degrade {
                targets,
                between,
                how,
                seed,
            } => {
                let mut procs = Vec::new();
                for t in targets {
                    let p = one(t)?;
                    if !procs.contains(&p) {
                        procs.push(p);
                    }
                }
                Action::Degrade {
                    procs,
                    between: *between,
                    how: *how,
                    seed: *seed,
                }
            }
            Spec::Disk { target, mode } => Action::Disk {
                node: node(target)?,
                mode: *mode,
                for_ms: e.lasts.map_or(10_000, |d| d.as_millis() as u64),
            },
            Spec::Reassign {
                topic,
                partition,
                replicas,
                settle,
                throttle,
                ..
            } => {
                let now = view.and_then(|v| v.partition(topic, *partition));
                let replicas = translated(replicas, &bound);
                let from = now.map(|p| p.replicas.clone()).unwrap_or_default();
                // The throttle on the links between the leader of now and the
                // replicas the move adds.
                let throttle = throttle.map(|bytes_per_s| {
                    let leader = now.and_then(|p| p.leader);
                    let added = replicas.iter().filter(|id| !from.contains(id));
                    let procs = leader.into_iter().chain(added.copied());
                    MoveThrottle {
                        procs: procs.map(Proc::Node).collect(),
                        bytes_per_s,
                        seed: 0,
                    }
                });
                Action::Reconfigure {
                    change: Reconfiguration::Reassign {
                        topic: topic.clone(),
                        partition: *partition,
                        replicas,
                        from,
                    },
                    settle: *settle,
                    throttle,
                }
            }
            Spec::CancelReassignment { topic, partition } => Action::Reconfigure {
                change: Reconfiguration::CancelReassignment {
                    topic: topic.clone(),
                    partition: *partition,
                },
                settle: Duration::ZERO,
                throttle: None,
            },
            Spec::AddPartitions { topic, count } => Action::Reconfigure {
                change: Reconfiguration::AddPartitions {
                    topic: topic.clone(),
                    count: *count,
                },
                settle: Duration::ZERO,
                throttle: None,
            },
        };
        Ok((action, bound))
    }
}

/// The original's node ids `replicas` as this replay found them (as they are when
/// that would name one node twice).
fn translated(replicas: &[i32], bound: &[(Proc, Proc)]) -> Vec<i32> {
    let now: Vec<i32> = replicas
        .iter()
        .map(
            |&id| match bound.iter().find(|(o, _)| *o == Proc::Node(id)) {
                Some((_, Proc::Node(now))) => *now,
                _ => id,
            },
        )
        .collect();
    let distinct = now.iter().enumerate().all(|(i, a)| !now[..i].contains(a));
    if distinct { now } else { replicas.to_vec() }
}

/// A fault's targets as found now, and its plan's bindings with this fault's.
struct Found {
    found: Vec<(Target, Option<Proc>)>,
    bound: Vec<(Proc, Proc)>,
}

impl ScheduleSource {
    /// What ends fault `i`, applied as `action` on the cluster seen as `view`: a
    /// crash-all's restarts in its order, its roles resolved now (a role that names
    /// no node, or one named already, is passed over; the nodes it does not name
    /// come back last, at once).
    fn end(&self, i: usize, action: &Action, view: Option<&ClusterView>) -> Option<Action> {
        let Spec::CrashAll { restarts } = &self.file.faults[i].fault else {
            return action.undo();
        };
        let mut order: Vec<(Duration, i32)> = Vec::new();
        for (t, gap) in restarts {
            if let Some(Proc::Node(id)) = t.resolve(view, &self.procs)
                && !order.iter().any(|&(_, n)| n == id)
            {
                order.push((*gap, id));
            }
        }
        for &id in &self.nodes {
            if !order.iter().any(|&(_, n)| n == id) {
                order.push((Duration::ZERO, id));
            }
        }
        Some(Action::RestartEach(order))
    }

    /// The decision to apply fault `i` (a `plan`): its line, its target's role,
    /// and the partition that role is of, so that the run's own schedule names the
    /// target as this one did.
    fn decision(&self, i: usize) -> NemesisEvent {
        let e = &self.file.faults[i];
        let mut v = json!({
            "schedule": "fault",
            "line": e.line,
            "fault": e.fault.name(),
            "trigger": e.trigger.clone().unwrap_or_else(|| format!("schedule line {}", e.line)),
        });
        if let Some((topic, partition)) = e.fault.partition() {
            v["topic"] = json!(topic);
            v["partition"] = json!(partition);
        }
        if let Some(n) = e.plan {
            v["plan"] = json!(n);
        }
        NemesisEvent::new("plan", v)
    }
}

impl Source for ScheduleSource {
    fn wants_look(&self) -> bool {
        true
    }

    fn next(&mut self, now: &Now<'_>) -> Next {
        if let Some(action) = self.queued.take() {
            return Next::Now(Step::Act(action));
        }
        loop {
            let Some(&(t, moment)) = self.moments.get(self.next) else {
                return Next::Done;
            };
            if t > now.elapsed {
                return Next::Wait(t - now.elapsed);
            }
            self.next += 1;
            match moment {
                Moment::Start(i) => {
                    return match self.resolve(i, now.view) {
                        Ok((action, bound)) => {
                            self.bound = (self.file.faults[i].plan, bound);
                            self.in_force[i] = self.end(i, &action, now.view);
                            self.queued = Some(action);
                            Next::Now(Step::Note(self.decision(i)))
                        }
                        Err(target) => {
                            let e = &self.file.faults[i];
                            Next::Now(Step::Note(NemesisEvent::new(
                                "plan",
                                json!({
                                    "schedule": "skipped",
                                    "fault": e.fault.name(),
                                    "line": e.line,
                                    "why": format!("{target} names no process now"),
                                }),
                            )))
                        }
                    };
                }
                Moment::End(i) => {
                    if let Some(end) = self.in_force[i].take() {
                        return Next::Now(Step::Act(end));
                    }
                }
            }
        }
    }

    fn taken(&mut self, _: Taken) {}

    fn wind_down(&mut self) -> Vec<Step> {
        self.in_force
            .iter_mut()
            .rev()
            .filter_map(Option::take)
            .map(Step::Act)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nemesis::coverage::Coverage;

    /// The schedule `text` on brokers 1–3.
    fn three_nodes(text: &str) -> ScheduleSource {
        let file = ScheduleFile::parse(text).unwrap();
        let procs = [Proc::Node(1), Proc::Node(2), Proc::Node(3)];
        ScheduleSource::new(file, &procs, &[1, 2, 3])
    }

    /// The moment `ms` into the run, nothing seen of the cluster.
    fn at_ms(cov: &Coverage, ms: u64) -> Now<'_> {
        Now {
            elapsed: Duration::from_millis(ms),
            left: None,
            view: None,
            coverage: cov,
        }
    }

    #[test]
    fn faults_are_played_at_their_times_and_ended_after_their_length() {
        let text = "{\"schedule\": 1, \"faults\": [\n\
            {\"at\": 1, \"fault\": \"kill\", \"target\": \"node 2\", \"for\": 2},\n\
            {\"at\": 1.5, \"fault\": \"pause\", \"target\": \"leader of queue/0\"}\n]}";
        let mut s = three_nodes(text);
        let cov = Coverage::new(0);
        let at = |ms| at_ms(&cov, ms);
        assert_eq!(s.next(&at(0)), Next::Wait(Duration::from_secs(1)));
        assert!(matches!(s.next(&at(1000)), Next::Now(Step::Note(_))));
        assert_eq!(
            s.next(&at(1000)),
            Next::Now(Step::Act(Action::Kill(Proc::Node(2))))
        );
        // No view: the leader names no process, so the pause is skipped and noted.
        assert!(matches!(s.next(&at(1500)), Next::Now(Step::Note(_))));
        assert_eq!(s.next(&at(1600)), Next::Wait(Duration::from_millis(1400)));
        assert_eq!(
            s.next(&at(3000)),
            Next::Now(Step::Act(Action::Restart(Proc::Node(2))))
        );
        assert_eq!(s.next(&at(3100)), Next::Done);
        assert!(s.wind_down().is_empty());
    }

    /// A fault that starts as another ends goes first: a throttle put on before the
    /// cut it follows heals, as the pattern that recorded them did.
    #[test]
    fn at_one_instant_a_start_goes_before_an_end() {
        let text = "{\"schedule\": 1, \"faults\": [\n\
            {\"at\": 0, \"fault\": \"pause\", \"target\": \"node 2\", \"for\": 1},\n\
            {\"at\": 1, \"fault\": \"pause\", \"target\": \"node 3\", \"for\": 1}\n]}";
        let mut s = three_nodes(text);
        let cov = Coverage::new(0);
        let at = |ms| at_ms(&cov, ms);
        assert!(matches!(s.next(&at(0)), Next::Now(Step::Note(_))));
        assert_eq!(
            s.next(&at(0)),
            Next::Now(Step::Act(Action::Pause(Proc::Node(2))))
        );
        assert!(matches!(s.next(&at(1000)), Next::Now(Step::Note(_))));
        assert_eq!(
            s.next(&at(1000)),
            Next::Now(Step::Act(Action::Pause(Proc::Node(3))))
        );
        assert_eq!(
            s.next(&at(1000)),
            Next::Now(Step::Act(Action::Resume(Proc::Node(2))))
        );
    }

    /// A crash-all's restarts follow its roles as they were when it began: the old
    /// leader last, after its gap, whoever led by then.
    #[test]
    fn a_crash_all_restarts_its_nodes_in_the_order_of_their_roles() {
        let text = "{\"schedule\": 1, \"faults\": [\n\
            {\"at\": 0, \"fault\": \"crash-all\", \"for\": 0.5, \"restart\": \
            [\"follower of queue/0\", [\"leader of queue/0\", 6]]}\n]}";
        let mut s = three_nodes(text);
        let view = ClusterView::sample(Proc::Node(2), &[("queue", 0, &[1, 2, 3])]);
        let cov = Coverage::new(0);
        let now = Now {
            view: Some(&view),
            ..at_ms(&cov, 0)
        };
        assert!(matches!(s.next(&now), Next::Now(Step::Note(_))));
        assert_eq!(
            s.next(&now),
            Next::Now(Step::Act(Action::CrashAll(vec![1, 2, 3])))
        );
        let ms = Duration::from_millis;
        assert_eq!(
            s.next(&at_ms(&cov, 500)),
            Next::Now(Step::Act(Action::RestartEach(vec![
                (ms(0), 2),
                (ms(6000), 1),
                (ms(0), 3)
            ])))
        );
    }

    /// A throttled move slows the links between the leader of then and the replica
    /// it adds, and its end lifts that throttle.
    #[test]
    fn a_throttled_reassignment_throttles_the_added_replicas_link_to_the_leader() {
        let text = "{\"schedule\": 1, \"faults\": [\n\
            {\"at\": 1, \"fault\": \"reassign\", \"partition\": \"queue/0\", \"replicas\": [3, 1, 2], \
             \"settle\": 0, \"throttle_bytes_per_s\": 1024, \"for\": 2}\n]}";
        let mut s = three_nodes(text);
        let view = ClusterView::sample(Proc::Node(1), &[("queue", 0, &[1, 2])]);
        let cov = Coverage::new(0);
        let at = |ms| Now {
            view: Some(&view),
            ..at_ms(&cov, ms)
        };
        assert!(matches!(s.next(&at(1000)), Next::Now(Step::Note(_))));
        let Next::Now(Step::Act(grow)) = s.next(&at(1000)) else {
            panic!("the move")
        };
        let Action::Reconfigure {
            throttle: Some(t), ..
        } = &grow
        else {
            panic!("a throttled move: {grow:?}")
        };
        assert_eq!(t.procs, vec![Proc::Node(1), Proc::Node(3)]);
        assert_eq!(t.bytes_per_s, 1024);
        let Next::Now(Step::Act(lift)) = s.next(&at(3000)) else {
            panic!("its end")
        };
        assert!(lift.undoes(&grow), "{lift:?}");
    }

    /// The faults of one plan strike the process the original struck: a follower
    /// named again after the ISR's order changed, and a reassignment's node ids,
    /// are the processes the plan's first faults found; a fault of no plan
    /// resolves its role afresh.
    #[test]
    fn a_plan_strikes_the_processes_it_found_first() {
        let text = "{\"schedule\": 1, \"faults\": [\n\
            {\"at\": 0, \"fault\": \"pause\", \"target\": \"follower of queue/0\", \"process\": \"node 3\", \"plan\": 7},\n\
            {\"at\": 1, \"fault\": \"kill\", \"target\": \"follower 2 of queue/0\", \"process\": \"node 3\", \"plan\": 7},\n\
            {\"at\": 2, \"fault\": \"reassign\", \"partition\": \"queue/0\", \"replicas\": [3, 1], \"settle\": 0, \
             \"from\": [\"leader of queue/0\", \"follower of queue/0\", \"follower 2 of queue/0\"], \
             \"process\": \"node 1, node 3, node 2\", \"plan\": 7},\n\
            {\"at\": 3, \"fault\": \"kill\", \"target\": \"follower 2 of queue/0\", \"process\": \"node 3\"}\n]}";
        let mut s = three_nodes(text);
        // queue/0 led by 1; the controller would elect 2, then 3.
        let view = ClusterView::sample(Proc::Node(1), &[("queue", 0, &[1, 2, 3])]);
        let cov = Coverage::new(0);
        let at = |ms| Now {
            view: Some(&view),
            ..at_ms(&cov, ms)
        };
        let mut act = |ms| {
            assert!(matches!(s.next(&at(ms)), Next::Now(Step::Note(_))));
            match s.next(&at(ms)) {
                Next::Now(Step::Act(a)) => a,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(act(0), Action::Pause(Proc::Node(2)));
        // `follower 2` is node 3 now, but the plan named node 3 of the original
        // before: the process it found then.
        assert_eq!(act(1000), Action::Kill(Proc::Node(2)));
        let Action::Reconfigure {
            change: Reconfiguration::Reassign { replicas, from, .. },
            ..
        } = act(2000)
        else {
            panic!("a reassignment")
        };
        assert_eq!(replicas, vec![2, 1], "the original's 3 is this replay's 2");
        assert_eq!(from, vec![1, 2, 3]);
        assert_eq!(act(3000), Action::Kill(Proc::Node(3)));
    }

    /// The active controller is whoever it is when its fault is due, even if the
    /// plan bound the original's process as another role before.
    #[test]
    fn a_plan_fails_over_the_controller_of_then() {
        let text = "{\"schedule\": 1, \"faults\": [\n\
            {\"at\": 0, \"fault\": \"pause\", \"target\": \"leader of queue/0\", \"for\": 0.5, \"process\": \"node 1\", \"plan\": 2},\n\
            {\"at\": 1, \"fault\": \"kill\", \"target\": \"active-controller\", \"process\": \"node 1\", \"plan\": 2}\n]}";
        let mut s = three_nodes(text);
        // queue/0 led by 1, the controller 2.
        let view = ClusterView::sample(Proc::Node(2), &[("queue", 0, &[1, 2, 3])]);
        let cov = Coverage::new(0);
        let at = |ms| Now {
            view: Some(&view),
            ..at_ms(&cov, ms)
        };
        let mut act = |ms| loop {
            match s.next(&at(ms)) {
                Next::Now(Step::Note(_)) => continue,
                Next::Now(Step::Act(a)) => break a,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(act(0), Action::Pause(Proc::Node(1)));
        assert_eq!(act(500), Action::Resume(Proc::Node(1)));
        assert_eq!(act(1000), Action::Kill(Proc::Node(2)));
    }

    #[test]
    fn a_reassignment_moves_the_processes_its_plan_found_unless_it_would_name_one_twice() {
        let bound = [(Proc::Node(3), Proc::Node(2))];
        assert_eq!(translated(&[3, 1], &bound), vec![2, 1]);
        assert_eq!(translated(&[3, 2], &bound), vec![3, 2]);
    }

    #[test]
    fn what_is_in_force_at_the_limit_is_ended() {
        let text = r#"{"schedule": 1, "faults": [{"at": 0, "fault": "pause", "target": "n3"}]}"#;
        let file = ScheduleFile::parse(text).unwrap();
        let mut s = ScheduleSource::new(file, &[Proc::Node(3)], &[3]);
        let cov = Coverage::new(0);
        let now = Now {
            elapsed: Duration::ZERO,
            left: None,
            view: None,
            coverage: &cov,
        };
        assert!(matches!(s.next(&now), Next::Now(Step::Note(_))));
        assert_eq!(
            s.next(&now),
            Next::Now(Step::Act(Action::Pause(Proc::Node(3))))
        );
        assert_eq!(
            s.wind_down(),
            vec![Step::Act(Action::Resume(Proc::Node(3)))]
        );
    }
}
