//! The replication package's planner, without I/O: given the seed, what the cluster
//! looks like now ([`ClusterView`]) and what the campaign has exercised so far
//! ([`Coverage`]), which [`Pattern`] comes next, on which partition, with which
//! roles and durations, and why.
//!
//! - Leadership must move in every campaign: until the coverage shows a leader
//!   election (by the brokers' events or the metadata), only patterns that move a
//!   leader are drawn, held past a session timeout — so the first fault of every
//!   campaign, a couple of seconds in, moves one.
//! - Patterns play in rounds ([`Pattern::per_round`]): every pattern that opens a
//!   window of its own once or twice, and one plain pattern, so that every
//!   campaign opens every window, whatever its seed. The patterns that lead a
//!   round ([`Pattern::leads_round`]: `follower-lag`, then `isolate-leader`'s
//!   two, then `crash-all`) play as soon as a partition suits them, once leadership has moved; the
//!   others are drawn greybox: a pattern's weight ([`Pattern::base_weight`],
//!   which orders the round) grows with the transitions it aims at that the
//!   campaign has not reached yet — each the less, the more patterns already
//!   tried to reach it — and drops to a tenth while no partition is led the way
//!   it needs; a pattern with variants plays them in turn.
//! - A pattern aims at a partition of any of the workload's topics (each one's
//!   final logs are checked for divergence), a leader of more partitions, and of
//!   more of the topics, more often — a fault on it moves all of them, and in the
//!   mixed workload one that leads the queue's and the register's partitions
//!   reaches both checkers: a deposed register leader serves stale reads, a queue
//!   leader lost writes —; and, for the patterns that need the leader and the
//!   controller apart, a partition whose leader (or next-in-line follower) is not
//!   the active controller ([`Pattern::aim_weight`]).
//! - Gaps between patterns are drawn under the session timeout.
//!
//! Every draw comes from the seed's generator, so the same seed, views and coverage
//! give the same decisions; each decision says why it was made, and the runner
//! records it in the history.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::overlap::{self, Anchor, Overlap};
use crate::nemesis::action::Script;
use crate::nemesis::coverage::{Coverage, Transition};
use crate::nemesis::fault::NemesisEvent;
use crate::nemesis::patterns::{self, Aim, PackageSettings, Pattern, Roles, aim_weight};
use crate::system::view::{ClusterView, PartitionView};

/// Looks in a row at a cluster still settling (no partition led, no controller),
/// or with no partition that suits the pattern drawn, before a pattern is played
/// all the same (each [`Decision::Wait`] of half the fetch wait: 5 s in all, the
/// controller's leader imbalance check in a campaign). Short looks: a pattern
/// starts as soon as the cluster is ready for it.
const MAX_STALLS: u32 = 20;

/// What the planner decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Nothing fits the cluster now (no partition has a live leader): look again later.
    Wait(Duration),
    Run(Box<Plan>),
}

/// A pattern resolved against the cluster: the roles it hits and its script.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Counts from 1 within a campaign.
    pub number: u32,
    pub pattern: &'static dyn Pattern,
    /// Why this pattern: `leadership has not moved yet`, `unseen: isr-shrink-lag`, ….
    pub why: String,
    /// The topic and partition aimed at (None for the role-free patterns).
    pub topic: Option<String>,
    pub partition: Option<u32>,
    /// The processes in each role, and the pattern's variant.
    pub roles: Roles,
    pub script: Script,
    /// A fault started while the script plays, if the seed drew one.
    pub overlap: Option<Overlap>,
    /// What the cluster looked like when the decision was made.
    pub observed: Value,
}

impl Plan {
    /// The history event recording this decision (`f` = `plan`).
    pub fn event(&self) -> NemesisEvent {
        NemesisEvent::new(
            "plan",
            json!({
                "number": self.number,
                "pattern": self.pattern.name(),
                "why": self.why,
                "topic": self.topic,
                "partition": self.partition,
                "roles": self.roles.to_json(),
                "steps": self.script.to_json(),
                "overlap": self.overlap.as_ref().map(Overlap::to_json),
                "available": self.available(),
                "observed": self.observed,
            }),
        )
    }
}

impl Plan {
    /// The stretch in which the partition aimed at must take acks=all writes, as
    /// the history records it (relative to the plan's own event): for a partition
    /// of the queue or the register, whose writes the `availability` verdict reads
    /// (the register's by key, so the promise says how many partitions it has), and
    /// only where no overlap plays within it or before it (a second fault may leave
    /// the partition rightly unable to write): an overlap that starts after a step
    /// due once the stretch is over leaves it whole, one timed from the start that
    /// starts within the stretch cuts it short (or leaves too little of it to
    /// judge), and one that starts before the stretch voids it even if it is over by
    /// then — slowing or pausing the active controller while the follower falls
    /// behind can cost the controller its leadership, and the leader's ISR change
    /// then waits for a new one, past the time the stretch allows.
    fn available(&self) -> Value {
        let Some((from, to)) = self.script.available else {
            return Value::Null;
        };
        let to = match self.overlap.as_ref().map(|o| (o.anchor, o.hold)) {
            None => Some(to),
            Some((Anchor::AfterStep(i, _), _)) => {
                let at: Duration = self.script.steps.iter().take(i + 1).map(|(d, _)| *d).sum();
                (at >= to).then_some(to)
            }
            Some((Anchor::FromStart(at), _)) if at >= to => Some(to),
            Some((Anchor::FromStart(at), _)) if at <= from => None,
            Some((Anchor::FromStart(at), _)) => Some(at),
        };
        let (Some(to), Some(topic), Some(partition)) = (to, &self.topic, self.partition) else {
            return Value::Null;
        };
        if to < from + MIN_STRETCH {
            return Value::Null;
        }
        let mut promise = json!({
            "partition": partition,
            "from_ms": from.as_millis() as u64,
            "to_ms": to.as_millis() as u64,
        });
        if topic == workloads::queue::TOPIC {
            promise["workload"] = json!("queue");
        } else if topic == workloads::register::TOPIC {
            // Its writes name keys: the judge places them by the partition count.
            let partitions = self.observed["partitions"]
                .as_array()
                .map_or(0, |ps| ps.iter().filter(|p| p["topic"] == *topic).count());
            promise["workload"] = json!("register");
            promise["partitions"] = json!(partitions);
        } else {
            return Value::Null;
        }
        promise
    }
}

/// The shortest stretch a plan promises: a send must be seen waiting a second of
/// it, unanswered, for a stall to be judged.
const MIN_STRETCH: Duration = Duration::from_millis(1200);

/// The seeded planner of the replication package: see the module doc.
#[derive(Debug, Clone)]
pub struct Aimed {
    rng: ChaCha8Rng,
    /// Draws the overlaps: a stream of its own, so that the patterns a seed draws
    /// do not depend on them.
    overlaps: ChaCha8Rng,
    settings: PackageSettings,
    reachable: BTreeSet<Transition>,
    /// How often each pattern played so far, by name: its variants play in turn.
    chosen: BTreeMap<&'static str, u32>,
    /// What is left of the current round ([`Pattern::per_round`]).
    round: Vec<&'static dyn Pattern>,
    /// Decisions in a row that found nothing left in the round fitting the cluster.
    stalls: u32,
    /// Patterns chosen while aiming at each transition still unseen: a transition
    /// that tries did not reach pulls less and less (by the square of the tries).
    tries: BTreeMap<Transition, u32>,
    decisions: u32,
}

impl Aimed {
    /// A planner for a cluster of `settings`, favouring the `reachable` transitions.
    pub fn new(seed: u64, settings: PackageSettings, reachable: BTreeSet<Transition>) -> Aimed {
        Aimed {
            // Its own stream: the fault lists' planner draws from the plain seed.
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6e65_6d65_7369_7321),
            overlaps: ChaCha8Rng::seed_from_u64(seed ^ 0x6f76_6572_6c61_7073),
            settings,
            reachable,
            chosen: BTreeMap::new(),
            round: Vec::new(),
            stalls: 0,
            tries: BTreeMap::new(),
            decisions: 0,
        }
    }

    pub fn settings(&self) -> &PackageSettings {
        &self.settings
    }

    /// A new round: every pattern that can run in this cluster as many times as
    /// [`Pattern::per_round`] says, and one of the plain ones, drawn by weight.
    fn next_round(&mut self) -> Vec<&'static dyn Pattern> {
        let mut round: Vec<&'static dyn Pattern> = patterns::ALL
            .iter()
            .copied()
            .filter(|p| p.can_run(&self.settings))
            .flat_map(|p| std::iter::repeat_n(p, p.per_round() as usize))
            .collect();
        let plain: Vec<&'static dyn Pattern> = patterns::ALL
            .iter()
            .copied()
            .filter(|p| p.per_round() == 0)
            .collect();
        if let Ok(p) = plain.choose_weighted(&mut self.rng, |p| p.base_weight()) {
            round.push(*p);
        }
        round
    }

    /// How long to wait before looking at a cluster that is not ready again.
    fn look(&self) -> Duration {
        self.settings.timeouts.fetch_wait / 2
    }

    /// Before the first pattern: long enough for the clients to have written.
    pub fn first_gap(&mut self) -> Duration {
        Duration::from_millis(self.rng.random_range(1500..3000))
    }

    /// Between two patterns: under a session timeout, sometimes well under it (the
    /// cluster has not settled yet). Every pattern ends with its faults undone and
    /// its dead restarted, once the controller has acted on them: a longer pause
    /// would only leave less time for the next.
    pub fn gap(&mut self) -> Duration {
        self.settings
            .timeouts
            .session
            .mul_f64(self.rng.random_range(0.1..0.5))
    }

    /// The next pattern for the cluster as `view` shows it, given `coverage`: which
    /// patterns fit ([`Aimed::fitting`]), which one is drawn ([`Aimed::draw`]), on
    /// which partition and with which script ([`Aimed::aim`]).
    pub fn decide(&mut self, view: &ClusterView, coverage: &Coverage) -> Decision {
        let move_leader = !coverage.leader_changed();
        let fitting = self.fitting(view, move_leader);
        if fitting.is_empty() {
            return Decision::Wait(self.look());
        }
        let unseen: BTreeSet<Transition> = self
            .reachable
            .difference(&coverage.seen())
            .copied()
            .collect();
        // While the cluster is still settling from the last pattern (no partition
        // led, no controller answering), look again shortly, up to 20 times: a
        // pattern drawn now would find no roles to aim at (a crash of every node
        // could not bring the old leader back last). Then the pattern is drawn
        // from what is left of the round; a new round starts when it is played,
        // or when nothing left in it fits the cluster.
        let settling = view.led().is_empty() || view.controller.is_none();
        if settling && self.stalls < MAX_STALLS {
            self.stalls += 1;
            return Decision::Wait(self.look());
        }
        if self.round.is_empty() || !self.round.iter().any(|p| fitting.contains(p)) {
            self.round = self.next_round();
        }
        let (pattern, led_round) = self.draw(view, &fitting, &unseen, move_leader);
        // Drawn without a partition that suits it (the rest of the round drawn
        // already): look again shortly, up to 20 times, rather than play it where
        // its window cannot open — the controller's next preferred leader check
        // spreads the leaderships within seconds.
        let suited = self.aim_at(pattern, view) >= 1.0;
        if !suited && !move_leader && self.stalls < MAX_STALLS {
            self.stalls += 1;
            return Decision::Wait(self.look());
        }
        self.stalls = 0;
        if let Some(i) = self.round.iter().position(|&p| p == pattern) {
            self.round.remove(i);
        }
        let why = self.why(pattern, &unseen, move_leader, led_round);
        Decision::Run(Box::new(self.aim(pattern, view, move_leader, why, &unseen)))
    }

    /// The patterns that can run now: every one that fits a partition led as it is
    /// (or needs none); while leadership has not moved yet, only those that move it.
    fn fitting(&self, view: &ClusterView, move_leader: bool) -> Vec<&'static dyn Pattern> {
        let led = view.led();
        patterns::ALL
            .iter()
            .copied()
            .filter(|p| !move_leader || p.moves_leader())
            .filter(|p| {
                p.fits(&self.settings, None, view.controller)
                    || led
                        .iter()
                        .any(|q| p.fits(&self.settings, Some(q), view.controller))
            })
            .collect()
    }

    /// How well a partition suits a pattern: a partition that needs roles apart
    /// (the leader, or the follower it lags, not the controller) and is not so
    /// led, or whose leadership the controller is about to hand back to its
    /// preferred replica, weighs a tenth.
    fn suits(&self, p: &dyn Pattern, q: &PartitionView, view: &ClusterView) -> f64 {
        let settled = if view.settled(q) { 1.0 } else { 0.1 };
        aim_weight(p, q, view.controller) * settled
    }

    /// How well the cluster suits a pattern now: its best partition's
    /// [`suits`](Self::suits), or a tenth when none suits it (the round's other
    /// patterns go first, and by its turn the preferred leaders are back and the
    /// leaderships spread).
    fn aim_at(&self, p: &dyn Pattern, view: &ClusterView) -> f64 {
        if p.role_free() {
            return 1.0;
        }
        view.led()
            .iter()
            .filter(|q| p.fits(&self.settings, Some(q), view.controller))
            .map(|q| self.suits(p, q, view))
            .fold(0.1, f64::max)
    }

    /// The pattern to play: the first that leads the round when a partition suits it
    /// (once leadership has moved: the campaign's first fault is drawn among all
    /// that move it), else one of the round's (or any fitting one) drawn greybox — each weighs its
    /// base weight, grown by the transitions it aims at that the campaign has not
    /// reached yet (each the less, the more patterns already tried to reach it), times
    /// how well the cluster suits it. Also says whether it led the round.
    fn draw(
        &mut self,
        view: &ClusterView,
        fitting: &[&'static dyn Pattern],
        unseen: &BTreeSet<Transition>,
        move_leader: bool,
    ) -> (&'static dyn Pattern, bool) {
        let in_round: Vec<&'static dyn Pattern> = fitting
            .iter()
            .copied()
            .filter(|p| self.round.contains(p))
            .collect();
        let from = if in_round.is_empty() {
            fitting
        } else {
            &in_round
        };
        // The campaign's first fault is drawn among all that move a leader.
        let lead = from
            .iter()
            .copied()
            .find(|p| !move_leader && p.leads_round() && self.aim_at(*p, view) >= 1.0);
        if let Some(p) = lead {
            return (p, true);
        }
        let weight = |p: &&'static dyn Pattern| {
            let fresh: f64 = p
                .targets()
                .iter()
                .filter(|t| unseen.contains(t))
                .map(|t| 1.0 / (1.0 + f64::from(self.tries.get(t).copied().unwrap_or(0))).powi(2))
                .sum();
            p.base_weight() * (1.0 + 3.0 * fresh) * self.aim_at(*p, view)
        };
        let weights: Vec<f64> = from.iter().map(weight).collect();
        let drawn = *from
            .iter()
            .zip(&weights)
            .collect::<Vec<_>>()
            .choose_weighted(&mut self.rng, |(_, w)| **w)
            .expect("positive weights")
            .0;
        (drawn, false)
    }

    /// Why `pattern` was chosen, for its record.
    fn why(
        &self,
        pattern: &dyn Pattern,
        unseen: &BTreeSet<Transition>,
        move_leader: bool,
        led_round: bool,
    ) -> String {
        let aims: Vec<String> = pattern
            .targets()
            .iter()
            .filter(|t| unseen.contains(t))
            .map(|t| t.to_string())
            .collect();
        if move_leader && self.decisions == 0 {
            "first fault: every campaign moves a leader early".to_string()
        } else if move_leader {
            "leadership has not moved yet: a fault that moves it".to_string()
        } else if led_round {
            "leads every round: a window only it opens".to_string()
        } else if !aims.is_empty() {
            format!("unseen: {}", aims.join(", "))
        } else {
            "every transition it aims at was seen: next in the round".to_string()
        }
    }

    /// The plan of `pattern`: on a partition of the workload's topics that suits it
    /// (roles apart, not about to move), if any does — a busier leader's more often:
    /// a fault on a node leading several partitions moves them all, and one leading
    /// partitions of every topic reaches every checker — and on a topic whose checker
    /// sees what the pattern breaks best ([`Pattern::topic_weight`]).
    fn aim(
        &mut self,
        pattern: &'static dyn Pattern,
        view: &ClusterView,
        move_leader: bool,
        why: String,
        unseen: &BTreeSet<Transition>,
    ) -> Plan {
        let mut aimable: Vec<&PartitionView> = view
            .led()
            .into_iter()
            .filter(|q| pattern.fits(&self.settings, Some(q), view.controller))
            .collect();
        if aimable.iter().any(|q| self.suits(pattern, q, view) >= 1.0) {
            aimable.retain(|q| self.suits(pattern, q, view) >= 1.0);
        }
        let busy = |q: &PartitionView| {
            q.leader
                .map_or(1, |l| view.leads(l).max(1) * view.topics_led(l).max(1)) as f64
        };
        let target = if pattern.role_free() {
            None
        } else {
            let weights: Vec<f64> = aimable
                .iter()
                .map(|q| {
                    busy(q)
                        * self.suits(pattern, q, view)
                        * pattern.topic_weight(&q.topic, &self.settings)
                })
                .collect();
            aimable
                .iter()
                .zip(&weights)
                .collect::<Vec<_>>()
                .choose_weighted(&mut self.rng, |(_, w)| **w)
                .ok()
                .map(|(q, _)| **q)
        };
        let turn = self.chosen.get(pattern.name()).copied().unwrap_or(0);
        let aim = Aim::new(
            &self.settings,
            target,
            view.controller,
            move_leader,
            turn,
            &mut self.rng,
        );
        let (roles, script) = pattern.script(&aim, &mut self.rng);
        self.decisions += 1;
        *self.chosen.entry(pattern.name()).or_default() += 1;
        for t in pattern.targets().iter().filter(|t| unseen.contains(t)) {
            *self.tries.entry(*t).or_default() += 1;
        }
        let overlap = overlap::draw(
            &mut self.overlaps,
            &script,
            target.map(|p| (p.topic.as_str(), p.partition)),
            &self.settings.nodes,
            &self.settings.timeouts,
        );
        Plan {
            number: self.decisions,
            pattern,
            why,
            topic: target.map(|p| p.topic.clone()),
            partition: target.map(|p| p.partition),
            roles,
            script,
            overlap,
            observed: view.to_json(),
        }
    }
}

#[cfg(test)]
mod tests;
