//! Overlapping faults: a second fault the replication package starts while one of
//! its patterns plays, drawn from the seed. Patterns one after another never open
//! the windows that need two faults at once — a second failover before the node
//! the first one restarted has fetched in the new epoch, a controller failing over
//! while a partition's leadership moves, a leader paused or slowed while a
//! follower catches up — so some plans carry one ([`Overlap`]), recorded in the
//! plan's history event and counted in the coverage.
//!
//! The overlap keeps within the minority budget: a fault that takes a process
//! down (a kill, a pause) starts only once the pattern has brought back the last
//! process it took down ([`Anchor::AfterStep`]) — the moment the second failover's
//! window opens — and strikes a role resolved then (the partition's leader, the
//! active controller); a slow or flaky link, which takes nothing down, may come at
//! any point of the pattern ([`Anchor::FromStart`]). Either ends after its hold,
//! and the package decides its next pattern only once both are over.

use std::time::Duration;

use rand::seq::IndexedRandom;
use rand::{Rng, RngCore};
use serde_json::{Value, json};

use crate::nemesis::action::{Action, Script};
use crate::nemesis::fault::Degradation;
use crate::nemesis::patterns::Timeouts;
use crate::nemesis::schedule::{Aimed, AimedFault, Role, Step};
use crate::proc::Proc;

/// How often a plan carries an overlapping fault.
pub const PROBABILITY: f64 = 0.4;

/// The kinds of overlap, each with its weight: the second failover most often
/// (the window the package cannot open otherwise).
const KINDS: [(Kind, u32); 5] = [
    (Kind::SecondFailover, 3),
    (Kind::ControllerFailover, 1),
    (Kind::PauseLeader, 1),
    (Kind::Slow, 1),
    (Kind::Flaky, 1),
];

/// What an overlap does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Kill the partition's leader as it is then, restart it after the hold.
    SecondFailover,
    /// Kill the active controller as it is then, restart it after the hold.
    ControllerFailover,
    /// Pause the partition's leader as it is then, resume it after the hold.
    PauseLeader,
    /// Slow every link of one node.
    Slow,
    /// Lose and reset some of one node's packets.
    Flaky,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::SecondFailover => "second-failover",
            Kind::ControllerFailover => "controller-failover",
            Kind::PauseLeader => "pause-leader",
            Kind::Slow => "slow",
            Kind::Flaky => "flaky",
        }
    }

    /// Does it take a process down (and so wait for the pattern's to be back)?
    fn takes_down(self) -> bool {
        matches!(
            self,
            Kind::SecondFailover | Kind::ControllerFailover | Kind::PauseLeader
        )
    }
}

/// When an overlap starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// This long after the pattern's first step is due.
    FromStart(Duration),
    /// This long after the pattern's step of this index (from 0) was taken; past
    /// its last step, after the pattern has undone what it left in force.
    AfterStep(usize, Duration),
}

/// A fault started while a pattern plays: see the module doc.
#[derive(Debug, Clone, PartialEq)]
pub struct Overlap {
    pub kind: Kind,
    pub anchor: Anchor,
    /// The fault itself: an action, or one aimed at a role resolved when it starts.
    pub step: Step,
    /// How long it is held before it is undone.
    pub hold: Duration,
}

impl Overlap {
    /// For the plan's record.
    pub fn to_json(&self) -> Value {
        let (after_step, after_ms) = match self.anchor {
            Anchor::FromStart(d) => (None, d),
            Anchor::AfterStep(i, d) => (Some(i), d),
        };
        json!({
            "kind": self.kind.name(),
            "after_step": after_step,
            "after_ms": after_ms.as_millis() as u64,
            "hold_ms": self.hold.as_millis() as u64,
        })
    }
}

/// Does this step take a process down, or cut it off (what the minority budget
/// counts)?
fn takes_down(a: &Action) -> bool {
    matches!(
        a,
        Action::Kill(_)
            | Action::KillOnceInIsr { .. }
            | Action::LoseUnflushed(_)
            | Action::TornWrite { .. }
            | Action::Corrupt { .. }
            | Action::CrashAll(_)
            | Action::Pause(_)
            | Action::Cut { .. }
            | Action::HoldAnswers(_)
            | Action::Disk { .. }
    )
}

/// The index of the step after which the script has nothing down any more: the
/// last one that brings back what an earlier one took down (its length: the
/// script leaves something to the package's undoing; None: it takes nothing down).
fn last_back(script: &Script) -> Option<usize> {
    let steps = &script.steps;
    let first_down = steps.iter().position(|(_, a)| takes_down(a))?;
    let mut last = None;
    for (i, (_, a)) in steps.iter().enumerate().skip(first_down) {
        if steps[..i].iter().any(|(_, b)| takes_down(b) && a.undoes(b)) {
            last = Some(i);
        }
    }
    match last {
        Some(i) if script_leaves_nothing_down_after(script, i) => Some(i),
        _ => Some(steps.len()),
    }
}

/// Is every step taking something down at or before `i` undone by `i`, and none
/// after it?
fn script_leaves_nothing_down_after(script: &Script, i: usize) -> bool {
    let steps = &script.steps;
    let undone = |j: usize| steps[j + 1..=i].iter().any(|(_, b)| b.undoes(&steps[j].1));
    (0..=i).all(|j| !takes_down(&steps[j].1) || undone(j))
        && steps[i + 1..].iter().all(|(_, a)| !takes_down(a))
}

/// Maybe an overlap for a pattern playing `script` on `topic`-`partition` (None:
/// a pattern on no partition), drawn from `rng`.
pub fn draw(
    rng: &mut dyn RngCore,
    script: &Script,
    target: Option<(&str, u32)>,
    nodes: &[i32],
    timeouts: &Timeouts,
) -> Option<Overlap> {
    if script.steps.is_empty() || !rng.random_bool(PROBABILITY) {
        return None;
    }
    let kinds: Vec<(Kind, u32)> = KINDS
        .iter()
        .copied()
        .filter(|(k, _)| target.is_some() || !matches!(k, Kind::SecondFailover | Kind::PauseLeader))
        .collect();
    let kind = kinds.choose_weighted(rng, |(_, w)| *w).ok()?.0;
    let leader = |fault| {
        let (topic, partition) = target.expect("a partition for a leader's fault");
        Step::Aim(Aimed {
            role: Role::LeaderOf {
                topic: topic.to_string(),
                partition,
            },
            fault,
        })
    };
    let session = timeouts.session;
    let (step, hold) = match kind {
        Kind::SecondFailover => (
            leader(AimedFault::Kill),
            session.mul_f64(rng.random_range(0.5..1.5)),
        ),
        Kind::PauseLeader => (
            leader(AimedFault::Pause),
            session.mul_f64(rng.random_range(0.3..1.2)),
        ),
        Kind::ControllerFailover => (
            Step::Aim(Aimed {
                role: Role::ActiveController,
                fault: AimedFault::Kill,
            }),
            session.mul_f64(rng.random_range(0.5..1.5)),
        ),
        Kind::Slow | Kind::Flaky => {
            let node = *nodes.choose(rng)?;
            let how = if kind == Kind::Slow {
                let delay_ms = rng.random_range(50..=300);
                Degradation::Slow {
                    delay_ms,
                    jitter_ms: rng.random_range(0..=delay_ms / 4),
                }
            } else {
                Degradation::Flaky {
                    reset_pct: rng.random_range(1..=5),
                    loss_pct: rng.random_range(5..=20),
                }
            };
            let degrade = Action::Degrade {
                procs: vec![Proc::Node(node)],
                between: false,
                how,
                seed: rng.random(),
            };
            (
                Step::Act(degrade),
                Duration::from_millis(rng.random_range(1000..4000)),
            )
        }
    };
    let anchor = if kind.takes_down() {
        // Once the pattern's last process is back: within a second, before it has
        // caught up.
        let after = Duration::from_millis(rng.random_range(0..1000));
        match last_back(script) {
            Some(i) => Anchor::AfterStep(i, after),
            None => Anchor::FromStart(script.length().mul_f64(rng.random_range(0.0..1.0))),
        }
    } else {
        Anchor::FromStart(script.length().mul_f64(rng.random_range(0.0..1.0)))
    };
    Some(Overlap {
        kind,
        anchor,
        step,
        hold,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn timeouts() -> Timeouts {
        let s = Duration::from_secs(2);
        Timeouts {
            session: s,
            lag: s,
            fetch_wait: Duration::from_millis(500),
            storage: s,
            election: s,
            client: Duration::from_secs(3),
        }
    }

    fn kill_restart() -> Script {
        let leader = Proc::Node(1);
        let slow = Action::Degrade {
            procs: vec![Proc::Node(2)],
            between: false,
            how: Degradation::Slow {
                delay_ms: 100,
                jitter_ms: 0,
            },
            seed: 1,
        };
        let restore = slow.undo().unwrap();
        Script::default()
            .then(Duration::ZERO, slow)
            .then(Duration::from_millis(500), Action::Kill(leader))
            .then(Duration::from_secs(3), Action::Restart(leader))
            .then(Duration::from_millis(500), restore)
    }

    #[test]
    fn a_fault_that_takes_a_process_down_waits_for_the_patterns_to_be_back() {
        let script = kill_restart();
        let mut kinds = std::collections::BTreeSet::new();
        let mut drawn = 0;
        for seed in 0..400 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let again = draw(
                &mut ChaCha8Rng::seed_from_u64(seed),
                &script,
                Some(("queue", 0)),
                &[1, 2, 3],
                &timeouts(),
            );
            let Some(o) = draw(
                &mut rng,
                &script,
                Some(("queue", 0)),
                &[1, 2, 3],
                &timeouts(),
            ) else {
                assert!(again.is_none());
                continue;
            };
            assert_eq!(Some(&o), again.as_ref(), "a seed gives one overlap");
            drawn += 1;
            kinds.insert(o.kind.name());
            if o.kind.takes_down() {
                // The restart is step 2: nothing of the pattern is down after it.
                assert!(matches!(o.anchor, Anchor::AfterStep(2, _)), "{o:?}");
            } else {
                assert!(matches!(o.anchor, Anchor::FromStart(d) if d < script.length()));
            }
        }
        assert!((100..220).contains(&drawn), "{drawn} of 400 plans overlap");
        assert_eq!(kinds.len(), 5, "{kinds:?}");
    }

    #[test]
    fn a_pattern_on_no_partition_overlaps_with_no_leaders_fault() {
        let script = Script::default()
            .then(Duration::ZERO, Action::Kill(Proc::Node(2)))
            .then(Duration::from_secs(2), Action::Restart(Proc::Node(2)));
        for seed in 0..200 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            if let Some(o) = draw(&mut rng, &script, None, &[1, 2, 3], &timeouts()) {
                assert!(!matches!(o.kind, Kind::SecondFailover | Kind::PauseLeader));
            }
        }
    }

    #[test]
    fn the_script_is_back_after_its_last_restart_or_after_its_undoing() {
        assert_eq!(last_back(&kill_restart()), Some(2));
        let left_down = Script::default().then(Duration::ZERO, Action::Kill(Proc::Node(1)));
        assert_eq!(last_back(&left_down), Some(1));
        let two = Script::default()
            .then(Duration::ZERO, Action::Kill(Proc::Node(1)))
            .then(Duration::ZERO, Action::Restart(Proc::Node(1)))
            .then(Duration::ZERO, Action::Pause(Proc::Node(2)))
            .then(Duration::ZERO, Action::Resume(Proc::Node(2)));
        assert_eq!(last_back(&two), Some(3));
        let nothing = Script::default().then(
            Duration::ZERO,
            Action::Degrade {
                procs: vec![Proc::Node(1)],
                between: false,
                how: Degradation::Flaky {
                    reset_pct: 1,
                    loss_pct: 1,
                },
                seed: 0,
            },
        );
        assert_eq!(last_back(&nothing), None);
    }
}
