//! The replication package (`--nemesis replication`, the default) as a schedule
//! source: before each pattern it looks at the cluster (the roles the seam shows,
//! the transitions the brokers reported, both folded into the campaign's coverage),
//! asks the pure planner ([`Aimed`], `aimed`) for the next pattern, hands out its
//! decision (`plan`) and then its script's steps one by one, and once the script is
//! over the undoing of whatever it left in force. At the time limit it stops
//! mid-script and hands back the undoing of what is still in force.
//!
//! - Leadership must move in every campaign: until the coverage shows a leader
//!   election (by the brokers' events or the metadata), only patterns that move a
//!   leader are drawn, held past a session timeout — so the first fault of every
//!   campaign, a couple of seconds in, moves one.
//! - Patterns play in rounds ([`Pattern::per_round`]): every pattern that opens a
//!   window of its own once or twice, and one plain pattern, so that every
//!   campaign opens every window, whatever its seed. The patterns that lead a
//!   round ([`Pattern::leads_round`]: `follower-lag`, then `isolate-leader`'s
//!   two, then `crash-all`) play as soon as a partition suits them; the
//!   others are drawn greybox: a pattern's weight ([`Pattern::base_weight`],
//!   which orders the round) grows with the transitions it aims at that the
//!   campaign has not reached yet — each the less, the more patterns already
//!   tried to reach it — and drops to a tenth while no partition is led the way
//!   it needs; a pattern with variants plays them in turn.
//! - A pattern aims at a partition of any of the workload's topics (each one's
//!   final logs are checked for divergence), a leader of more partitions, and of
//!   more of the topics, more often; and, for the patterns that need the leader and
//!   the controller apart, a partition whose leader (or next-in-line follower) is
//!   not the active controller ([`super::patterns::aim_weight`]).
//! - Gaps between patterns are drawn under the session timeout.
//!
//! Every draw comes from the seed's generator, so the same seed, views and coverage
//! give the same decisions; each decision says why it was made, and is recorded in
//! the history.

mod aimed;
pub mod overlap;

use std::collections::VecDeque;
use std::time::Duration;

pub use aimed::{Aimed, Decision, Plan};
pub use overlap::Overlap;

use super::action::Action;
#[cfg(doc)]
use super::patterns::Pattern;
use super::schedule::{Next, Now, Source, Step, Taken};
use overlap::Anchor;

/// No pattern starts closer than this to the time limit: it would be cut short
/// before anything it aims at could happen.
const LAST_START: Duration = Duration::from_secs(1);

/// Where the package is between two questions.
#[derive(Debug)]
enum Phase {
    /// Before the first pattern: the first gap is drawn.
    Start,
    /// Between patterns: the next question decides.
    Deciding,
    /// Playing a pattern (and its overlap).
    Playing(Box<Play>),
    /// The time limit cut a script short: nothing more.
    Over,
}

/// A pattern being played: its script's steps left, each after its delay from
/// the previous, then the undoing of what it left in force; beside it, its
/// overlapping fault, if it has one.
#[derive(Debug)]
struct Play {
    steps: VecDeque<(Duration, Action)>,
    /// Steps of the script handed out so far.
    taken: usize,
    /// When the next script step is due (on the schedule's clock), once asked.
    due: Option<Duration>,
    /// The script is over: undoing what it left in force, newest first.
    undoing: bool,
    /// When the play began (on the schedule's clock).
    began: Option<Duration>,
    lane: Option<Lane>,
    /// The overlap's step was the last handed out.
    lane_last: bool,
}

/// The overlapping fault beside a pattern.
#[derive(Debug)]
struct Lane {
    overlap: Overlap,
    /// When its next step is due (None: its anchor has not come yet).
    due: Option<Duration>,
    state: LaneState,
}

#[derive(Debug)]
enum LaneState {
    /// Not started.
    Waiting,
    /// Started (as [`Package::overlap_in_force`]), to be undone when due.
    InForce,
    /// Undone, or never resolved to a process.
    Over,
}

/// Whose step comes next in a play.
enum Turn {
    Script(Duration),
    Undo,
    LaneStart(Duration),
    LaneUndo(Duration),
}

impl Play {
    fn new(steps: Vec<(Duration, Action)>, overlap: Option<Overlap>) -> Play {
        Play {
            steps: steps.into(),
            taken: 0,
            due: None,
            undoing: false,
            began: None,
            lane: overlap.map(|overlap| Lane {
                overlap,
                due: None,
                state: LaneState::Waiting,
            }),
            lane_last: false,
        }
    }
}

/// The replication package as a source: see the module doc.
#[derive(Debug)]
pub struct Package {
    planner: Aimed,
    phase: Phase,
    /// Steps of the patterns' scripts in force that a later step has not undone
    /// yet, oldest first (an overlap keeps its own).
    in_force: Vec<Action>,
    /// The overlapping fault in force, as it was applied (an aimed step resolved).
    overlap_in_force: Option<Action>,
    /// One script only: done once it is undone.
    once: bool,
}

impl Package {
    pub fn new(planner: Aimed) -> Package {
        Package {
            planner,
            phase: Phase::Start,
            in_force: Vec::new(),
            overlap_in_force: None,
            once: false,
        }
    }

    /// One script played to its end, then undone: a pattern played alone.
    pub fn once(planner: Aimed, steps: Vec<(Duration, Action)>) -> Package {
        Package {
            planner,
            phase: Phase::Playing(Box::new(Play::new(steps, None))),
            in_force: Vec::new(),
            overlap_in_force: None,
            once: true,
        }
    }

    /// Steps still in force.
    pub fn in_force(&self) -> &[Action] {
        &self.in_force
    }

    /// The next step of the play: the script's or its undoing's, or the overlap's,
    /// whichever falls due first.
    fn play_next(&mut self, now: &Now<'_>) -> Next {
        let Phase::Playing(play) = &mut self.phase else {
            unreachable!("only while playing")
        };
        let began = *play.began.get_or_insert(now.elapsed);
        if !play.undoing && play.steps.is_empty() {
            play.undoing = true;
        }
        let script = if !play.undoing {
            let after = play.steps.front().expect("not empty").0;
            Some(Turn::Script(*play.due.get_or_insert(now.elapsed + after)))
        } else if !self.in_force.is_empty() {
            Some(Turn::Undo)
        } else {
            None
        };
        let script_over = script.is_none();
        let lane = play.lane.as_mut().and_then(|lane| {
            if lane.due.is_none() {
                lane.due = match lane.overlap.anchor {
                    Anchor::FromStart(d) => Some(began + d),
                    Anchor::AfterStep(i, d) if play.taken > i || script_over => {
                        Some(now.elapsed + d)
                    }
                    Anchor::AfterStep(..) => None,
                };
            }
            match (&lane.state, lane.due) {
                (LaneState::Waiting, Some(at)) => Some(Turn::LaneStart(at)),
                (LaneState::InForce, Some(at)) => Some(Turn::LaneUndo(at)),
                _ => None,
            }
        });
        let at = |t: &Turn| match t {
            Turn::Script(at) | Turn::LaneStart(at) | Turn::LaneUndo(at) => *at,
            Turn::Undo => now.elapsed,
        };
        let turn = match (script, lane) {
            (Some(s), Some(l)) if at(&l) < at(&s) => l,
            (Some(s), _) => s,
            (None, Some(l)) => l,
            (None, None) => {
                let waiting = play
                    .lane
                    .as_ref()
                    .is_some_and(|l| !matches!(l.state, LaneState::Over));
                if waiting {
                    // The overlap's anchor comes with the script's end: ask again.
                    return Next::Wait(Duration::from_millis(10));
                }
                return self.played();
            }
        };
        let wait = |at: Duration| at.saturating_sub(now.elapsed);
        play.lane_last = matches!(turn, Turn::LaneStart(_) | Turn::LaneUndo(_));
        match turn {
            Turn::Script(at) => {
                let (_, action) = play.steps.pop_front().expect("not empty");
                play.due = None;
                play.taken += 1;
                Next::After(wait(at), Step::Act(action))
            }
            Turn::Undo => {
                let step = self.in_force.pop().expect("not empty");
                Next::Now(Step::Act(
                    step.undo().expect("only undoable steps are kept"),
                ))
            }
            Turn::LaneStart(at) => {
                let lane = play.lane.as_ref().expect("a lane");
                Next::After(wait(at), lane.overlap.step.clone())
            }
            Turn::LaneUndo(at) if at > now.elapsed => {
                play.lane_last = false;
                Next::Wait(wait(at))
            }
            Turn::LaneUndo(_) => {
                let lane = play.lane.as_mut().expect("a lane");
                lane.state = LaneState::Over;
                let applied = self.overlap_in_force.take().expect("in force");
                Next::Now(Step::Act(applied.undo().expect("an overlap is undoable")))
            }
        }
    }

    /// The play is over: the next decision after a gap, or the end of a pattern
    /// played alone.
    fn played(&mut self) -> Next {
        if self.once {
            self.phase = Phase::Over;
            Next::Done
        } else {
            self.phase = Phase::Deciding;
            Next::Wait(self.planner.gap())
        }
    }
}

impl Source for Package {
    fn wants_look(&self) -> bool {
        matches!(self.phase, Phase::Start | Phase::Deciding)
    }

    fn to_the_end(&self) -> bool {
        self.once
    }

    fn next(&mut self, now: &Now<'_>) -> Next {
        match &mut self.phase {
            Phase::Start => {
                self.phase = Phase::Deciding;
                Next::Wait(self.planner.first_gap())
            }
            Phase::Deciding => {
                if now.left.is_some_and(|left| left < LAST_START) {
                    self.phase = Phase::Over;
                    return Next::Done;
                }
                let Some(view) = now.view else {
                    return Next::Wait(self.planner.settings().timeouts.fetch_wait / 2);
                };
                match self.planner.decide(view, now.coverage) {
                    Decision::Wait(d) => Next::Wait(d),
                    Decision::Run(plan) => {
                        let event = plan.event();
                        let plan = *plan;
                        self.phase =
                            Phase::Playing(Box::new(Play::new(plan.script.steps, plan.overlap)));
                        Next::Now(Step::Note(event))
                    }
                }
            }
            Phase::Playing(_) => self.play_next(now),
            Phase::Over => Next::Done,
        }
    }

    fn taken(&mut self, taken: Taken) {
        if let Phase::Playing(play) = &mut self.phase
            && std::mem::take(&mut play.lane_last)
        {
            let lane = play.lane.as_mut().expect("a lane");
            match taken {
                // Its start: held, then undone.
                Taken::Applied(action) if matches!(lane.state, LaneState::Waiting) => {
                    if action.undo().is_some() {
                        lane.state = LaneState::InForce;
                        lane.due = lane.due.map(|at| at + lane.overlap.hold);
                        self.overlap_in_force = Some(action);
                    } else {
                        lane.state = LaneState::Over;
                    }
                }
                Taken::TooLate => self.phase = Phase::Over,
                _ => lane.state = LaneState::Over,
            }
            return;
        }
        match taken {
            Taken::Applied(action) => {
                if action.undo().is_some() {
                    self.in_force.push(action);
                } else if let Some(i) = self.in_force.iter().rposition(|a| action.undoes(a)) {
                    self.in_force.remove(i);
                }
            }
            Taken::TooLate => self.phase = Phase::Over,
            _ => {}
        }
    }

    /// Undo every step in force, newest first (an overlap's first).
    fn wind_down(&mut self) -> Vec<Step> {
        let mut steps: Vec<Step> = self
            .overlap_in_force
            .take()
            .and_then(|a| a.undo())
            .map(Step::Act)
            .into_iter()
            .collect();
        while let Some(a) = self.in_force.pop() {
            steps.push(Step::Act(a.undo().expect("only undoable steps are kept")));
        }
        steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nemesis::coverage::Coverage;
    use crate::nemesis::patterns::{PackageSettings, Timeouts};
    use crate::nemesis::schedule::{Aimed as AimedStep, AimedFault, Role};
    use crate::proc::Proc;

    fn planner() -> Aimed {
        let settings = PackageSettings {
            timeouts: Timeouts::of_cluster(&broker_config::Settings::default()),
            nodes: vec![1, 2, 3],
            power_cuts: false,
            crash_all_safe: true,
            dedicated_controller: false,
            lossless_topics: vec!["queue".into()],
            linearizable_topics: vec!["register".into()],
            reconfigurable: false,
            min_insync: 2,
        };
        Aimed::new(1, settings, Default::default())
    }

    /// A package playing a kill of node 1 at 1 s and its restart 3 s later, with
    /// `overlap` beside them.
    fn playing(overlap: Overlap) -> Package {
        let s = Duration::from_secs;
        let leader = Proc::Node(1);
        let steps = vec![
            (s(1), Action::Kill(leader)),
            (s(3), Action::Restart(leader)),
        ];
        let mut package = Package::once(planner(), Vec::new());
        package.phase = Phase::Playing(Box::new(Play::new(steps, Some(overlap))));
        package
    }

    /// Play `package` to its end on a clock of its own, an aimed kill resolving
    /// to node 3: each step taken with its time.
    fn play(mut package: Package) -> Vec<(Duration, Action)> {
        let coverage = Coverage::new(0);
        let mut elapsed = Duration::ZERO;
        let mut taken = Vec::new();
        for _ in 0..100 {
            let now = Now {
                elapsed,
                left: None,
                view: None,
                coverage: &coverage,
            };
            let step = match package.next(&now) {
                Next::After(d, step) => {
                    elapsed += d;
                    step
                }
                Next::Now(step) => step,
                Next::Wait(d) => {
                    elapsed += d;
                    continue;
                }
                Next::Done => return taken,
                Next::Fail(why) => panic!("{why}"),
            };
            let action = match step {
                Step::Act(a) => a,
                Step::Aim(AimedStep {
                    fault: AimedFault::Kill,
                    ..
                }) => Action::Kill(Proc::Node(3)),
                other => panic!("unexpected {other:?}"),
            };
            taken.push((elapsed, action.clone()));
            package.taken(Taken::Applied(action));
        }
        panic!("the play did not end: {taken:?}");
    }

    #[test]
    fn a_second_failover_strikes_once_the_pattern_has_its_leader_back_and_ends_after_its_hold() {
        let s = Duration::from_secs;
        let leader = Proc::Node(1);
        let overlap = Overlap {
            kind: overlap::Kind::SecondFailover,
            anchor: Anchor::AfterStep(1, Duration::from_millis(500)),
            step: Step::Aim(AimedStep {
                role: Role::LeaderOf {
                    topic: "queue".into(),
                    partition: 0,
                },
                fault: AimedFault::Kill,
            }),
            hold: s(2),
        };
        let taken = play(playing(overlap));
        let ms = Duration::from_millis;
        assert_eq!(
            taken,
            vec![
                (s(1), Action::Kill(leader)),
                (s(4), Action::Restart(leader)),
                (ms(4500), Action::Kill(Proc::Node(3))),
                (ms(6500), Action::Restart(Proc::Node(3))),
            ]
        );
    }

    #[test]
    fn a_slow_link_from_the_start_interleaves_with_the_script() {
        let s = Duration::from_secs;
        let leader = Proc::Node(1);
        let slow = Action::Degrade {
            procs: vec![Proc::Node(2)],
            between: false,
            how: crate::nemesis::fault::Degradation::Slow {
                delay_ms: 100,
                jitter_ms: 0,
            },
            seed: 7,
        };
        let overlap = Overlap {
            kind: overlap::Kind::Slow,
            anchor: Anchor::FromStart(s(2)),
            step: Step::Act(slow.clone()),
            hold: s(5),
        };
        let taken = play(playing(overlap));
        assert_eq!(
            taken,
            vec![
                (s(1), Action::Kill(leader)),
                (s(2), slow.clone()),
                (s(4), Action::Restart(leader)),
                (s(7), slow.undo().unwrap()),
            ]
        );
    }

    #[test]
    fn at_the_time_limit_the_overlap_in_force_is_undone_first() {
        let s = Duration::from_secs;
        let leader = Proc::Node(1);
        let overlap = Overlap {
            kind: overlap::Kind::PauseLeader,
            anchor: Anchor::FromStart(Duration::ZERO),
            step: Step::Act(Action::Pause(Proc::Node(2))),
            hold: s(10),
        };
        let mut package = playing(overlap);
        let coverage = Coverage::new(0);
        let now = Now {
            elapsed: Duration::ZERO,
            left: None,
            view: None,
            coverage: &coverage,
        };
        assert!(matches!(
            package.next(&now),
            Next::After(_, Step::Act(Action::Pause(_)))
        ));
        package.taken(Taken::Applied(Action::Pause(Proc::Node(2))));
        assert!(matches!(
            package.next(&now),
            Next::After(_, Step::Act(Action::Kill(_)))
        ));
        package.taken(Taken::Applied(Action::Kill(leader)));
        assert!(matches!(
            package.next(&now),
            Next::After(_, Step::Act(Action::Restart(_)))
        ));
        package.taken(Taken::TooLate);
        assert_eq!(
            package.wind_down(),
            vec![
                Step::Act(Action::Resume(Proc::Node(2))),
                Step::Act(Action::Restart(leader)),
            ]
        );
        assert_eq!(package.next(&now), Next::Done);
    }
}
