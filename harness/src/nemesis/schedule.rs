//! The one schedule abstraction every fault source shares (Jepsen's generator,
//! typed): a [`Source`] is asked, again and again, what comes next given what the
//! campaign sees now ([`Now`]), and answers a [`Step`] after a delay, a wait, or that
//! it is done. A step is a typed fault operation — on processes ([`Action`]), or on a
//! role the system names at that moment ([`Aimed`]: the leader of a partition, the
//! active controller) — a decision to record, or a bounded wait on what the system
//! shows. The source is told how each step went ([`Taken`]) and, at the end, hands
//! back what ends whatever it left in force ([`Source::wind_down`]).
//!
//! A source decides; it applies nothing and records nothing. The interpreter
//! (`super::interpreter`) is the one place that applies steps through the seam to
//! the system and records each in the history, so every fault of every source is
//! recorded the same way. The fault list, the replication package and the scenarios'
//! scripts are three sources; `super::compose` mixes, sequences and staggers them.
//! Sources are pure: the same seed, observations and outcomes give the same steps.

use std::time::Duration;

use super::action::Action;
use super::coverage::Coverage;
use super::fault::NemesisEvent;
use crate::proc::Proc;
use crate::system::ReplicaSeen;
use crate::system::view::ClusterView;

/// What a source sees when it is asked for its next step.
#[derive(Debug, Clone, Copy)]
pub struct Now<'a> {
    /// Time since the schedule started.
    pub elapsed: Duration,
    /// Time left until the campaign's time limit (None: no limit applies).
    pub left: Option<Duration>,
    /// The system's roles as just observed (None: the source does not observe, or
    /// the system shows none).
    pub view: Option<&'a ClusterView>,
    /// What the campaign has exercised so far.
    pub coverage: &'a Coverage,
}

/// A source's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Take `step` after `after`, unless the time limit comes first.
    After(Duration, Step),
    /// Take `step` at once, whatever the time: the end of a fault in force.
    Now(Step),
    /// Nothing to do yet: ask again after this long (with a fresh look).
    Wait(Duration),
    /// Nothing more, ever.
    Done,
    /// The schedule cannot go on (a scenario's script found no leader to strike):
    /// the nemesis fails, saying why.
    Fail(String),
}

/// One step of a schedule.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A fault operation on processes or links, recorded as it is applied.
    Act(Action),
    /// A fault operation on a role the system names when it is applied.
    Aim(Aimed),
    /// A decision (`plan`), recorded; it changes nothing.
    Note(NemesisEvent),
    /// Wait, at most `within`, until the system shows `until`; the source is told
    /// what was found.
    Await { until: Condition, within: Duration },
}

/// A fault aimed at a role, resolved to a process when it is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aimed {
    pub role: Role,
    pub fault: AimedFault,
}

/// A process named by what it does in the system now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The active controller: the broker it runs in, or the dedicated controller
    /// (recorded, before the fault, as an `active-controller` mark).
    ActiveController,
    /// The leader of a partition.
    LeaderOf { topic: String, partition: u32 },
    /// A partition itself (its replicas), for a reassignment.
    Partition { topic: String, partition: u32 },
    /// A topic itself (its partitions), for new partitions.
    Topic(String),
}

/// What an [`Aimed`] step does to the process its role names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AimedFault {
    Kill,
    Pause,
    /// Cut it off from every other process; `shape` names the partition in the
    /// history (`isolate-leader`, `isolate-controller`).
    Isolate {
        shape: String,
    },
    /// Move the partition to other replicas, drawn from `seed` among the nodes
    /// ([`reassignment_target`]).
    Reassign {
        seed: u64,
    },
    /// Grow the topic by one partition.
    AddPartition,
}

/// Where a fault-list reassignment moves a partition now on `replicas`, among
/// `nodes`: drawn from `seed` — its replicas reordered (a new preferred leader),
/// one fewer (never below two), one more, or one swapped for a node it does not
/// have, as the cluster allows.
pub fn reassignment_target(replicas: &[i32], nodes: &[i32], seed: u64) -> Vec<i32> {
    use rand::seq::{IndexedRandom, SliceRandom};
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let outside: Vec<i32> = nodes
        .iter()
        .copied()
        .filter(|n| !replicas.contains(n))
        .collect();
    let mut moves = vec!["reorder"];
    if replicas.len() > 2 {
        moves.push("shrink");
    }
    if !outside.is_empty() {
        moves.extend(["grow", "swap"]);
    }
    let mut target = replicas.to_vec();
    match *moves.choose(&mut rng).expect("reorder is always possible") {
        "shrink" => {
            target.remove(rng.random_range(0..target.len()));
        }
        "grow" => target.push(*outside.choose(&mut rng).expect("not empty")),
        "swap" => {
            let i = rng.random_range(0..target.len());
            target[i] = *outside.choose(&mut rng).expect("not empty");
        }
        _ => target.shuffle(&mut rng),
    }
    target
}

/// What an [`Step::Await`] waits for, or (waiting zero) tests once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// The partition has a leader whose HW covers at least `records` records.
    Committed {
        topic: String,
        partition: u32,
        records: u64,
    },
    /// The partition is led by another process than `from`: with `running`, one that
    /// runs; with `above_epoch`, as an active controller of a higher controller epoch
    /// than that names it.
    LeaderMoved {
        topic: String,
        partition: u32,
        from: i32,
        running: bool,
        above_epoch: Option<i64>,
    },
    /// Node `node`'s replica of the partition passes `test`.
    Replica {
        node: i32,
        topic: String,
        partition: u32,
        test: ReplicaTest,
    },
    /// The controller's ISR of the partition no longer holds `node`.
    IsrWithout {
        topic: String,
        partition: u32,
        node: i32,
    },
    /// The active controller answers; found, it is recorded as an
    /// `active-controller` mark naming `fault`, the fault aimed at it.
    ActiveController { fault: String },
    /// The process is not running.
    Down(Proc),
    /// At most this many of the nodes run.
    RunningAtMost(usize),
}

/// A test of one replica's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaTest {
    /// Any state it reports (found: the state).
    Any,
    LeoAtLeast(u64),
    HwAtLeast(u64),
    /// At least this many records above its HW.
    PendingAtLeast(u64),
    /// At least this many records not flushed yet (lost to a power cut).
    UnflushedAtLeast(u64),
    LeaderIs(i32),
}

/// How a step went.
#[derive(Debug, Clone, PartialEq)]
pub enum Taken {
    /// Applied: the action as it was applied (an aimed step's, resolved).
    Applied(Action),
    /// Recorded (a note).
    Noted,
    /// An aimed step whose role names no process now: nothing was done.
    Unresolved,
    /// The time limit came before the step: nothing was done.
    TooLate,
    /// What a wait found (None: not within its bound).
    Found(Option<Found>),
}

/// What a met [`Condition`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// `Committed`: the leader, its replica's state, and the partition's replicas.
    Leader {
        leader: i32,
        seen: ReplicaSeen,
        replicas: Vec<i32>,
    },
    /// `LeaderMoved`: the new leader.
    NewLeader(i32),
    /// `Replica`: the replica's state.
    Replica(ReplicaSeen),
    /// `ActiveController`: the process it runs in, and its controller epoch.
    Controller { process: Proc, epoch: i64 },
    /// Any other condition: it holds.
    Holds,
}

/// A source of fault steps: see the module doc.
pub trait Source: Send {
    /// Whether the system's roles (and the transitions it reported) should be looked
    /// at before the next question: the replication package looks before each
    /// decision; a fault list and a script never need it.
    fn wants_look(&self) -> bool {
        false
    }

    /// Whether the schedule runs to its own end rather than to the time limit (a
    /// scenario's script).
    fn to_the_end(&self) -> bool {
        false
    }

    /// The next step, given what is seen now.
    fn next(&mut self, now: &Now<'_>) -> Next;

    /// How the step last handed out went.
    fn taken(&mut self, taken: Taken);

    /// The steps that end whatever this source left in force, in the order to take
    /// them (at the time limit, or once the source is done).
    fn wind_down(&mut self) -> Vec<Step>;
}

impl<S: Source + ?Sized> Source for Box<S> {
    fn wants_look(&self) -> bool {
        (**self).wants_look()
    }
    fn to_the_end(&self) -> bool {
        (**self).to_the_end()
    }
    fn next(&mut self, now: &Now<'_>) -> Next {
        (**self).next(now)
    }
    fn taken(&mut self, taken: Taken) {
        (**self).taken(taken)
    }
    fn wind_down(&mut self) -> Vec<Step> {
        (**self).wind_down()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reassignment_target_is_a_valid_move_drawn_from_its_seed() {
        let nodes = [1, 2, 3, 4];
        let mut moves = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let t = reassignment_target(&[1, 2, 3], &nodes, seed);
            assert_eq!(t, reassignment_target(&[1, 2, 3], &nodes, seed));
            let mut unique = t.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), t.len(), "no replica twice: {t:?}");
            assert!(t.len() >= 2 && t.iter().all(|n| nodes.contains(n)), "{t:?}");
            moves.insert(match t.len() {
                2 => "shrink",
                4 => "grow",
                _ if t.contains(&4) => "swap",
                _ => "reorder",
            });
        }
        assert_eq!(moves.len(), 4, "{moves:?}");
        // Two replicas on two nodes: only reordered.
        for seed in 0..20 {
            let mut t = reassignment_target(&[1, 2], &[1, 2], seed);
            t.sort();
            assert_eq!(t, [1, 2]);
        }
    }
}
