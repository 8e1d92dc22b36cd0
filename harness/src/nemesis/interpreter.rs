//! The one place where schedules meet the system: [`Interpreter::play`] asks a
//! [`Source`] for steps, sleeps their delays, applies each through the seam
//! ([`System`]), records each in the history as one [`NemesisEvent`] (with, for a
//! fault aimed at the active controller, the `active-controller` mark before it),
//! and tells the source how it went. At the time limit — or when a script is done —
//! it takes the steps that end whatever the source left in force.
//!
//! When the source wants a look, it first reads what the system reported since the
//! last look (its transitions) and its roles, into the campaign's [`Coverage`].

use std::time::Duration;

use tokio::time::Instant;

use super::action::Action;
use super::coverage::Coverage;
use super::fault::NemesisEvent;
use super::schedule::{
    Aimed, AimedFault, Condition, Found, Next, Now, ReplicaTest, Role, Source, Step, Taken,
    reassignment_target,
};
use super::schedule_file::{Recorder, ScheduleFile};
use crate::error::{HarnessError, Result};
use crate::net::Grudge;
use crate::proc::Proc;
use crate::system::view::ClusterView;
use crate::system::{self, Reconfiguration, System};

/// How often a kill timed by the cluster's state looks at the metadata.
const ISR_LOOK_INTERVAL: Duration = Duration::from_millis(25);
/// Roles seen within this long name a fault's targets in the schedule without
/// another look.
const FRESH_VIEW: Duration = Duration::from_millis(250);
/// How often a wait looks at the system.
const POLL: Duration = Duration::from_millis(100);

/// Plays schedules against one system, recording every step.
pub struct Interpreter<'a, S: System> {
    system: &'a mut S,
    /// The workload's topics, whose roles are observed.
    topics: Vec<&'static str>,
    coverage: Coverage,
    on_event: &'a mut (dyn FnMut(NemesisEvent) + Send),
    /// The faults applied, as a schedule file would name them.
    recorder: Recorder,
    /// What times in the schedule are counted from (the start of play).
    start: Instant,
    /// The last roles seen, and when.
    last_view: Option<(Instant, ClusterView)>,
}

impl<'a, S: System> Interpreter<'a, S> {
    pub fn new(
        system: &'a mut S,
        topics: &[&'static str],
        coverage: Coverage,
        on_event: &'a mut (dyn FnMut(NemesisEvent) + Send),
    ) -> Interpreter<'a, S> {
        Interpreter {
            system,
            topics: topics.to_vec(),
            coverage,
            on_event,
            recorder: Recorder::default(),
            start: Instant::now(),
            last_view: None,
        }
    }

    /// The faults applied so far, as a schedule file (`schedule.json`).
    pub fn schedule(&self) -> ScheduleFile {
        self.recorder.schedule()
    }

    /// What the campaign exercised, as observed.
    pub fn into_coverage(self) -> Coverage {
        self.coverage
    }

    /// Play `source` until it is done or `limit` has passed (a source that runs to
    /// its end ignores the limit), then end whatever it left in force. A limited
    /// schedule that is done early still lasts until the limit. A step that fails to
    /// apply ends the schedule with its error, its faults left for `heal_all`.
    pub async fn play(&mut self, source: &mut dyn Source, limit: Duration) -> Result<()> {
        let start = Instant::now();
        self.start = start;
        let end = (!source.to_the_end()).then_some(start + limit);
        self.look().await;
        loop {
            let view = if source.wants_look() {
                self.look().await
            } else {
                None
            };
            let now = Now {
                elapsed: start.elapsed(),
                left: end.map(|e| e.saturating_duration_since(Instant::now())),
                view: view.as_ref(),
                coverage: &self.coverage,
            };
            match source.next(&now) {
                Next::Done => break,
                Next::Fail(why) => return Err(HarnessError::new(why)),
                Next::Wait(d) => {
                    if !sleep_within(d, end).await {
                        break;
                    }
                }
                Next::Now(step) => {
                    let taken = self.take(step).await?;
                    source.taken(taken);
                }
                Next::After(d, step) => {
                    if !sleep_within(d, end).await {
                        source.taken(Taken::TooLate);
                        break;
                    }
                    let taken = self.take(step).await?;
                    source.taken(taken);
                }
            }
        }
        if let Some(end) = end {
            tokio::time::sleep_until(end).await;
        }
        for step in source.wind_down() {
            self.take(step).await?;
        }
        self.look().await;
        Ok(())
    }

    /// The system's transitions since the last look, and its roles now.
    async fn look(&mut self) -> Option<ClusterView> {
        let events = self.system.transitions();
        self.coverage.add_all(&events);
        let view = self.system.roles(&self.topics).await;
        if let Some(v) = &view {
            self.coverage.observe(v);
            self.last_view = Some((Instant::now(), v.clone()));
        }
        view
    }

    /// Take one step now, as a schedule would: applied, recorded.
    pub async fn apply(&mut self, step: Step) -> Result<Taken> {
        self.take(step).await
    }

    /// Take one step.
    async fn take(&mut self, step: Step) -> Result<Taken> {
        Ok(match step {
            Step::Act(action) => {
                self.act(&action).await?;
                Taken::Applied(action)
            }
            Step::Aim(aimed) => match self.resolve(&aimed).await {
                Some(action) => {
                    self.act(&action).await?;
                    Taken::Applied(action)
                }
                None => Taken::Unresolved,
            },
            Step::Note(event) => {
                self.coverage.note(&event);
                self.recorder.note(&event);
                (self.on_event)(event);
                Taken::Noted
            }
            Step::Await { until, within } => Taken::Found(self.wait_for(&until, within).await),
        })
    }

    /// The action an aimed fault is on the process its role names now (None: it
    /// names none), with the `active-controller` mark recorded for the controller.
    async fn resolve(&mut self, aimed: &Aimed) -> Option<Action> {
        let target = match &aimed.role {
            Role::ActiveController => {
                let (p, epoch) = self.system.active_controller().await.ok()?;
                let action = fault_on(&aimed.fault, p, &self.system.procs())?;
                (self.on_event)(controller_mark(p, epoch, &action.event().f));
                return Some(action);
            }
            Role::LeaderOf { topic, partition } => {
                let view = self.system.roles(&[topic.as_str()]).await?;
                let p = view
                    .partitions
                    .iter()
                    .find(|q| q.topic == *topic && q.partition == *partition)?;
                Proc::Node(p.leader?)
            }
            Role::Partition { topic, partition } => {
                let AimedFault::Reassign { seed } = aimed.fault else {
                    return None;
                };
                let view = self.system.roles(&[topic.as_str()]).await?;
                let p = view
                    .partitions
                    .iter()
                    .find(|q| q.topic == *topic && q.partition == *partition)?;
                let replicas = reassignment_target(&p.replicas, &self.system.nodes(), seed);
                return Some(Action::Reconfigure {
                    change: Reconfiguration::Reassign {
                        topic: topic.clone(),
                        partition: *partition,
                        replicas,
                        from: p.replicas.clone(),
                    },
                    settle: Duration::ZERO,
                    throttle: None,
                });
            }
            Role::Topic(topic) => {
                let view = self.system.roles(&[topic.as_str()]).await?;
                let count = view.partitions.iter().filter(|p| p.topic == *topic).count() as u32;
                return Some(Action::Reconfigure {
                    change: Reconfiguration::AddPartitions {
                        topic: topic.clone(),
                        count: count + 1,
                    },
                    settle: Duration::ZERO,
                    throttle: None,
                });
            }
        };
        fault_on(&aimed.fault, target, &self.system.procs())
    }

    /// Record `action` in the schedule, with the roles just before it (looked at
    /// again unless seen within [`FRESH_VIEW`]).
    async fn record(&mut self, action: &Action) {
        if Recorder::starts(action)
            && self
                .last_view
                .as_ref()
                .is_none_or(|(at, _)| at.elapsed() > FRESH_VIEW)
            && let Some(v) = self.system.roles(&self.topics).await
        {
            self.last_view = Some((Instant::now(), v));
        }
        let view = self.last_view.as_ref().map(|(_, v)| v);
        let procs = self.system.procs();
        self.recorder
            .applied(self.start.elapsed(), action, view, &procs);
        // What it does changes the roles: the next fault looks again.
        self.last_view = None;
    }

    /// Apply one action to the system and record it.
    async fn act(&mut self, action: &Action) -> Result<()> {
        self.record(action).await;
        let s = &mut *self.system;
        match action {
            Action::Kill(p) => s.kill(&[*p]).await?,
            Action::KillOnceInIsr {
                leader,
                follower,
                topic,
                partition,
                within,
            } => {
                let joined = |isr: &[i32]| isr.contains(follower);
                system::wait_isr(&*s, topic, *partition, *within, ISR_LOOK_INTERVAL, joined).await;
                s.kill(&[Proc::Node(*leader)]).await?
            }
            Action::LoseUnflushed(id) => s.cut_power(*id, None).await?,
            Action::TornWrite { node, seed } => s.cut_power(*node, Some(*seed)).await?,
            Action::Corrupt { node, seed } => s.corrupt(*node, *seed).await?,
            Action::Clock { proc, fault } => s.set_clock(*proc, Some(*fault)).await?,
            Action::ClockReset { proc, .. } => s.set_clock(*proc, None).await?,
            Action::CrashAll(ids) => {
                let procs: Vec<Proc> = ids.iter().map(|&id| Proc::Node(id)).collect();
                s.kill(&procs).await?
            }
            Action::Restart(p) => s.restart(*p).await?,
            Action::RestartEach(order) => {
                for (gap, id) in order {
                    tokio::time::sleep(*gap).await;
                    s.restart(Proc::Node(*id)).await?;
                }
            }
            Action::Pause(p) => s.pause(*p).await?,
            Action::Resume(p) => s.resume(*p).await?,
            Action::Cut { grudge, .. } => s.cut(grudge),
            Action::Heal { grudge, .. } => s.heal(grudge),
            Action::HoldAnswers(p) => s.hold_answers(*p, true),
            Action::ReleaseAnswers(p) => s.hold_answers(*p, false),
            Action::Reconfigure {
                change,
                settle,
                throttle,
            } => {
                // The throttle first, so that nothing of the move passes at full
                // speed; its own event, so the history shows the links it slows.
                if let Some(t) = throttle {
                    s.degrade(&t.procs, true, t.seed, &|c| t.how().apply(c));
                    (self.on_event)(t.degrade().event());
                }
                let refused = reconfigure(&mut *s, change, *settle).await.err();
                if refused.is_none() && !settle.is_zero() {
                    settled(&*s, change, *settle).await;
                }
                let mut event = action.event();
                if let Some(why) = refused {
                    event.value["refused"] = serde_json::json!(why);
                }
                (self.on_event)(event);
                return Ok(());
            }
            Action::Disk { node, mode, for_ms } => s.fail_storage(*node, *mode, *for_ms).await?,
            Action::DiskOk { node, .. } => s.storage_ok(*node).await?,
            Action::Degrade {
                procs,
                between,
                how,
                seed,
            } => s.degrade(procs, *between, *seed, &|c| how.apply(c)),
            Action::Restore {
                procs,
                between,
                how,
                seed,
            } => s.degrade(procs, *between, *seed, &|c| how.clear(c)),
        }
        (self.on_event)(action.event());
        // Kills that cut the power too: what each process's storage lost.
        for cut in s.take_losses() {
            (self.on_event)(NemesisEvent::new("power-cut", cut));
        }
        for done in s.take_damage() {
            (self.on_event)(NemesisEvent::new("corrupted", done));
        }
        Ok(())
    }

    /// Wait, at most `within`, until the system shows `until` (zero: look once).
    async fn wait_for(&mut self, until: &Condition, within: Duration) -> Option<Found> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(found) = self.holds(until).await {
                return Some(found);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(POLL.min(deadline - Instant::now())).await;
        }
    }

    /// Does the system show `cond` now? What it found if so.
    async fn holds(&mut self, cond: &Condition) -> Option<Found> {
        let s = &*self.system;
        match cond {
            Condition::Committed {
                topic,
                partition,
                records,
            } => committed(s, topic, *partition, *records).await,
            Condition::LeaderMoved {
                topic,
                partition,
                from,
                running,
                above_epoch,
            } => leader_moved(s, topic, *partition, *from, *running, *above_epoch).await,
            Condition::Replica {
                node,
                topic,
                partition,
                test,
            } => {
                let r = s.replica(*node, topic, *partition).await?;
                let holds = match *test {
                    ReplicaTest::Any => true,
                    ReplicaTest::LeoAtLeast(n) => r.leo >= n,
                    ReplicaTest::HwAtLeast(n) => r.hw >= n,
                    ReplicaTest::PendingAtLeast(n) => r.leo >= r.hw + n,
                    ReplicaTest::UnflushedAtLeast(n) => r.leo >= r.flushed + n,
                    ReplicaTest::LeaderIs(l) => r.leader == l,
                };
                holds.then_some(Found::Replica(r))
            }
            Condition::IsrWithout {
                topic,
                partition,
                node,
            } => {
                let view = s.roles(&[topic.as_str()]).await?;
                let p = view
                    .partitions
                    .iter()
                    .find(|q| q.topic == *topic && q.partition == *partition)?;
                (!p.isr.contains(node)).then_some(Found::Holds)
            }
            Condition::ActiveController { fault } => {
                let (process, epoch) = s.active_controller().await.ok()?;
                (self.on_event)(controller_mark(process, epoch, fault));
                Some(Found::Controller { process, epoch })
            }
            Condition::Down(p) => (!s.is_running(*p)).then_some(Found::Holds),
            Condition::RunningAtMost(n) => {
                let running = s
                    .nodes()
                    .into_iter()
                    .filter(|&id| s.is_running(Proc::Node(id)))
                    .count();
                (running <= *n).then_some(Found::Holds)
            }
        }
    }
}

/// The partition's leader, its replica's state and the replicas, once its HW covers
/// `records`.
async fn committed<S: System>(s: &S, topic: &str, partition: u32, records: u64) -> Option<Found> {
    let view = s.roles(&[topic]).await?;
    let p = view
        .partitions
        .iter()
        .find(|q| q.topic == topic && q.partition == partition)?;
    let leader = p.leader?;
    let seen = s.replica(leader, topic, partition).await?;
    (seen.hw >= records).then(|| Found::Leader {
        leader,
        seen,
        replicas: p.replicas.clone(),
    })
}

/// The partition's leader, if another than `from` (running, named by a controller
/// above `above_epoch`, as asked).
async fn leader_moved<S: System>(
    s: &S,
    topic: &str,
    partition: u32,
    from: i32,
    running: bool,
    above_epoch: Option<i64>,
) -> Option<Found> {
    let view = s.roles(&[topic]).await?;
    if above_epoch.is_some_and(|e| view.controller_epoch <= e) {
        return None;
    }
    let l = view
        .partitions
        .iter()
        .find(|q| q.topic == topic && q.partition == partition)?
        .leader?;
    (l != from && (!running || s.is_running(Proc::Node(l)))).then_some(Found::NewLeader(l))
}

/// Ask for `change`; one refused because another reassignment is in progress is
/// asked again, for at most `settle`; one that found no active controller (an
/// election under way, the controller just killed) is asked again for at most
/// [`ELECTION`] or `settle`, whichever is longer.
async fn reconfigure<S: System>(
    s: &mut S,
    change: &Reconfiguration,
    settle: Duration,
) -> std::result::Result<(), String> {
    let start = Instant::now();
    loop {
        let waited = start.elapsed();
        match s.reconfigure(change).await {
            Err(why) if why.contains("REASSIGNMENT_IN_PROGRESS") && waited < settle => {
                tokio::time::sleep(POLL).await
            }
            Err(why) if no_controller(&why) && waited < settle.max(ELECTION) => {
                tokio::time::sleep(POLL).await
            }
            done => return done,
        }
    }
}

/// How long a reconfiguration waits for a controller to be elected.
const ELECTION: Duration = Duration::from_secs(5);

/// A refusal that only says no controller could take the request now.
fn no_controller(why: &str) -> bool {
    why.contains("active controller")
        || why.contains("NOT_CONTROLLER")
        || why.contains("is not running")
}

/// Wait, at most `within`, until a reassignment shows complete (no replica adding
/// or removing, the replicas as asked); other changes are done once accepted.
async fn settled<S: System>(s: &S, change: &Reconfiguration, within: Duration) {
    let Reconfiguration::Reassign {
        topic,
        partition,
        replicas,
        ..
    } = change
    else {
        return;
    };
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some(view) = s.roles(&[topic.as_str()]).await
            && view.partitions.iter().any(|p| {
                p.topic == *topic
                    && p.partition == *partition
                    && p.adding.is_empty()
                    && p.removing.is_empty()
                    && p.replicas == *replicas
            })
        {
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// An aimed fault on `p`, whose isolation cuts it from every one of `procs` (None:
/// a fault that aims at no process).
fn fault_on(fault: &AimedFault, p: Proc, procs: &[Proc]) -> Option<Action> {
    Some(match fault {
        AimedFault::Kill => Action::Kill(p),
        AimedFault::Pause => Action::Pause(p),
        AimedFault::Isolate { shape } => Action::Cut {
            shape: shape.clone(),
            grudge: Grudge::isolate(p, procs),
        },
        AimedFault::Reassign { .. } | AimedFault::AddPartition => return None,
    })
}

/// The history mark naming the process a fault aimed at the active controller hits:
/// `{"f": "active-controller", "value": {"process": 2, "controller_epoch": 5,
/// "fault": "kill"}}`, just before that fault's own event.
pub fn controller_mark(controller: Proc, epoch: i64, fault: &str) -> NemesisEvent {
    NemesisEvent::new(
        "active-controller",
        serde_json::json!({"process": controller.to_json(), "controller_epoch": epoch, "fault": fault}),
    )
}

/// Sleep `d` unless that passes `end`; then sleep until `end` and say so (false).
async fn sleep_within(d: Duration, end: Option<Instant>) -> bool {
    let wake = Instant::now() + d;
    match end {
        Some(end) if wake >= end => {
            tokio::time::sleep_until(end).await;
            false
        }
        _ => {
            tokio::time::sleep_until(wake).await;
            true
        }
    }
}
