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
//!   campaign opens every window, whatever its seed. The pattern that leads a
//!   round ([`Pattern::leads_round`]) plays as soon as a partition suits it; the
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

use std::collections::VecDeque;
use std::time::Duration;

pub use aimed::{Aimed, Decision, Plan};

use super::action::Action;
#[cfg(doc)]
use super::patterns::Pattern;
use super::schedule::{Next, Now, Source, Step, Taken};

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
    /// Playing a pattern's script: its steps left, each after its delay.
    Playing(VecDeque<(Duration, Action)>),
    /// The script is over: undoing what it left in force, newest first.
    Undoing,
    /// The time limit cut a script short: nothing more.
    Over,
}

/// The replication package as a source: see the module doc.
#[derive(Debug)]
pub struct Package {
    planner: Aimed,
    phase: Phase,
    /// Steps in force that a later step has not undone yet, oldest first.
    in_force: Vec<Action>,
    /// One script only: done once it is undone.
    once: bool,
}

impl Package {
    pub fn new(planner: Aimed) -> Package {
        Package {
            planner,
            phase: Phase::Start,
            in_force: Vec::new(),
            once: false,
        }
    }

    /// One script played to its end, then undone: a pattern played alone.
    pub fn once(planner: Aimed, steps: Vec<(Duration, Action)>) -> Package {
        Package {
            planner,
            phase: Phase::Playing(steps.into()),
            in_force: Vec::new(),
            once: true,
        }
    }

    /// Steps still in force.
    pub fn in_force(&self) -> &[Action] {
        &self.in_force
    }

    /// The undoing of the newest step still in force.
    fn undo_next(&mut self) -> Option<Step> {
        let step = self.in_force.pop()?;
        Some(Step::Act(
            step.undo().expect("only undoable steps are kept"),
        ))
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
                        self.phase = Phase::Playing(plan.script.steps.into());
                        Next::Now(Step::Note(event))
                    }
                }
            }
            Phase::Playing(steps) => match steps.pop_front() {
                Some((after, action)) => Next::After(after, Step::Act(action)),
                None => {
                    self.phase = Phase::Undoing;
                    self.next(now)
                }
            },
            Phase::Undoing => match self.undo_next() {
                Some(step) => Next::Now(step),
                None if self.once => {
                    self.phase = Phase::Over;
                    Next::Done
                }
                None => {
                    self.phase = Phase::Deciding;
                    Next::Wait(self.planner.gap())
                }
            },
            Phase::Over => Next::Done,
        }
    }

    fn taken(&mut self, taken: Taken) {
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

    /// Undo every step in force, newest first.
    fn wind_down(&mut self) -> Vec<Step> {
        std::iter::from_fn(|| self.undo_next()).collect()
    }
}
