//! The fault list's schedule without I/O: from the seed, when the next change comes,
//! whether it starts a fault or ends the oldest active one, which fault and which
//! targets. A kill or pause hits a process drawn uniformly among those up, the
//! controller included. It keeps to what the cluster can survive: at most a minority
//! of nodes killed or paused at once (plus perhaps the controller), and a partition
//! or a crash-all only alone; degraded links (`slow`, `flaky`, `throttle`) overlap
//! the others, one of each kind at a time; a reconfiguration only while a majority of
//! the nodes is up with working links (the controller quorum must take it). A seed
//! gives the same schedule on every run.

use std::time::Duration;

use rand::seq::IndexedRandom;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::Fault;
use crate::nemesis::fault::{Degradation, FaultKind};
use crate::net::Topology;
use crate::proc::Proc;
use crate::system::DiskMode;
use crate::system::clock::ClockFault;

/// `slow`: the latency drawn, in ms (its jitter up to half as much again).
const SLOW_DELAY_MS: std::ops::RangeInclusive<u64> = 20..=250;
/// `flaky`: the fraction of connections and chunks that reset a connection, in %.
const FLAKY_RESET_PCT: std::ops::RangeInclusive<u32> = 1..=5;
/// `flaky`: the fraction of chunks lost once (stalled for a retransmission), in %.
const FLAKY_LOSS_PCT: std::ops::RangeInclusive<u32> = 5..=25;
/// `throttle`: the bandwidth of each direction of each connection, in KiB/s.
const THROTTLE_KIB_PER_S: std::ops::RangeInclusive<u64> = 8..=128;

/// What the fault list does at its next change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Start(Fault),
    End(Fault),
    /// Nothing to start or end (no faults asked for).
    Idle,
}

/// The seeded schedule (no I/O): see the module doc.
#[derive(Debug, Clone)]
pub struct Planner {
    rng: ChaCha8Rng,
    kinds: Vec<FaultKind>,
    nodes: Vec<i32>,
    partitions: u32,
    interval: Duration,
    active: Vec<Fault>,
    /// The controller is a process of its own (else it runs in a broker, and a
    /// fault aimed at it takes that broker down).
    dedicated_controller: bool,
    /// Partitions added so far (at most [`MAX_ADDED_PARTITIONS`]).
    added: u32,
    /// The system shows roles (a controller, leaders) to aim at; a black box
    /// does not, and its faults hit nodes drawn among all.
    roles: bool,
}

/// The most partitions `add-partitions` adds in one campaign.
pub const MAX_ADDED_PARTITIONS: u32 = 4;

impl Planner {
    /// `partitions`: how many partitions the topic has (isolate-leader picks one).
    /// The replication package is not a fault of this schedule: it is left out.
    pub fn new(
        seed: u64,
        kinds: &[FaultKind],
        nodes: &[i32],
        partitions: u32,
        interval: Duration,
    ) -> Planner {
        Planner {
            rng: ChaCha8Rng::seed_from_u64(seed),
            kinds: kinds
                .iter()
                .copied()
                .filter(|&k| k != FaultKind::Replication)
                .collect(),
            nodes: nodes.to_vec(),
            partitions: partitions.max(1),
            interval: interval.max(Duration::from_millis(100)),
            active: Vec::new(),
            dedicated_controller: false,
            added: 0,
            roles: true,
        }
    }

    /// The same schedule for a system that shows no roles (a black box): kills and
    /// pauses hit nodes only, partitions take the shapes that need no leader or
    /// controller.
    pub fn without_roles(mut self) -> Planner {
        self.roles = false;
        self
    }

    /// The same schedule for a cluster whose controller is a dedicated process: it
    /// is one more member of every partition's universe, and taking it down takes
    /// no broker down.
    pub fn with_dedicated_controller(mut self, dedicated: bool) -> Planner {
        self.dedicated_controller = dedicated;
        self
    }

    /// Is the controller a process of its own?
    pub fn dedicated_controller(&self) -> bool {
        self.dedicated_controller
    }

    /// Faults started and not yet ended, oldest first.
    pub fn active(&self) -> &[Fault] {
        &self.active
    }

    /// Every process a partition or a degraded link may hit: the brokers (and a
    /// dedicated controller).
    fn all_procs(&self) -> Vec<Proc> {
        Proc::universe(&self.nodes, self.dedicated_controller)
    }

    /// Kill and pause targets: every broker, and the controller — the active one at
    /// the time of the fault, which the nemesis resolves to the broker it runs in
    /// unless it is dedicated.
    fn kill_targets(&self) -> Vec<Proc> {
        self.roles
            .then_some(Proc::Controller)
            .into_iter()
            .chain(self.nodes.iter().map(|&id| Proc::Node(id)))
            .collect()
    }

    /// Processes no active fault has taken down, and how many more nodes may go down
    /// (while a reassignment is in progress, nodes behind degraded links count as
    /// down: see [`Self::impaired`]).
    fn room(&self) -> (Vec<Proc>, usize) {
        let down: Vec<Proc> = self.active.iter().flat_map(Fault::down).collect();
        let nodes_down = if self.reassigning() {
            self.impaired()
        } else {
            down.iter().filter(|p| matches!(p, Proc::Node(_))).count()
        };
        let minority = self.minority();
        let up = self
            .kill_targets()
            .into_iter()
            .filter(|p| !down.contains(p))
            .collect();
        (up, minority.saturating_sub(nodes_down))
    }

    /// Nodes down, or behind degraded links (a degraded link's controller counted as
    /// one more): what a controller quorum cannot count on. A slowed voter may answer
    /// its leader's heartbeats later than the leader waits for them, so a
    /// reconfiguration — which the controller quorum must take — only starts, and a
    /// reassignment only goes on, while these are a minority.
    fn impaired(&self) -> usize {
        let mut nodes: Vec<i32> = Vec::new();
        let mut controller = false;
        for f in &self.active {
            let procs = match f {
                Fault::Degrade { procs, .. } => procs.clone(),
                f => f.down(),
            };
            for p in procs {
                match p {
                    Proc::Node(id) => nodes.push(id),
                    Proc::Controller => controller = true,
                }
            }
        }
        nodes.sort();
        nodes.dedup();
        nodes.len() + usize::from(controller && !self.dedicated_controller)
    }

    /// Whether a reassignment is in progress (its end restores the replicas, through
    /// the controller).
    fn reassigning(&self) -> bool {
        self.active
            .iter()
            .any(|f| matches!(f, Fault::Reassign { .. }))
    }

    /// Candidates for a kill or pause: the controller if up, nodes if the budget allows.
    fn targets(&self, nodes_only: bool) -> Vec<Proc> {
        if self.active.iter().any(Fault::exclusive) {
            return Vec::new();
        }
        let (up, budget) = self.room();
        up.into_iter()
            .filter(|p| match p {
                // In a broker, the controller takes that broker down with it.
                Proc::Controller => !nodes_only && (self.dedicated_controller || budget > 0),
                Proc::Node(_) => budget > 0,
            })
            .collect()
    }

    fn can_start(&self, kind: FaultKind) -> bool {
        match kind {
            FaultKind::Kill | FaultKind::Pause => !self.targets(false).is_empty(),
            FaultKind::LoseUnflushed
            | FaultKind::TornWrite
            | FaultKind::Corrupt
            | FaultKind::Disk => !self.targets(true).is_empty(),
            // Degraded links beside other faults (not a partition or crash-all), one
            // of each kind at a time, and not while a reassignment is in progress
            // (its end needs the controller quorum: see `impaired`).
            FaultKind::Slow | FaultKind::Flaky | FaultKind::Throttle => {
                !self.reassigning()
                    && !self.active.iter().any(|f| {
                        f.exclusive()
                            || matches!(f, Fault::Degrade { how, .. } if how.kind() == kind)
                    })
            }
            // A reconfiguration beside other faults: one reassignment at a time, a
            // few new partitions in a campaign; either only while a majority of the
            // nodes is up with working links.
            FaultKind::Reassign => !self.reassigning() && self.quorum_works(),
            FaultKind::AddPartitions => self.added < MAX_ADDED_PARTITIONS && self.quorum_works(),
            // Beside any fault, one clock fault of a process at a time.
            FaultKind::ClockOffset | FaultKind::ClockStep | FaultKind::ClockStrobe => {
                self.clock_free().next().is_some()
            }
            // A partition or a crash-all alone (but for reconfigurations and clocks).
            _ => self.active.iter().all(Fault::beside_anything),
        }
    }

    /// Whether at most a minority of the nodes is impaired.
    fn quorum_works(&self) -> bool {
        self.impaired() <= self.minority()
    }

    /// The most nodes that may be out at once: a minority.
    fn minority(&self) -> usize {
        self.nodes.len().saturating_sub(1) / 2
    }

    /// The delay before the next step, and the step.
    pub fn next_step(&mut self) -> (Duration, Change) {
        let delay = self.interval.mul_f64(self.rng.random_range(0.75..1.25));
        let startable: Vec<FaultKind> = self
            .kinds
            .iter()
            .copied()
            .filter(|&k| self.can_start(k))
            .collect();
        let coin = self.rng.random_bool(0.5);
        let start = !startable.is_empty() && (self.active.is_empty() || coin);
        let drawn = if start {
            let kind = *startable.choose(&mut self.rng).expect("not empty");
            self.draw(kind)
        } else {
            None
        };
        let step = if let Some(fault) = drawn {
            if fault.instant() {
                self.added += 1;
            } else {
                self.active.push(fault.clone());
            }
            Change::Start(fault)
        } else if !self.active.is_empty() {
            Change::End(self.active.remove(0))
        } else {
            Change::Idle
        };
        (delay, step)
    }

    /// A kill or pause target: drawn uniformly among the processes that are up, so
    /// the controller is no likelier than a node; None if taking it down would leave
    /// less than a majority of nodes (the nemesis then ends a fault instead).
    fn draw_target(&mut self, nodes_only: bool) -> Option<Proc> {
        let (up, _) = self.room();
        let up: Vec<Proc> = up
            .into_iter()
            .filter(|p| !nodes_only || matches!(p, Proc::Node(_)))
            .collect();
        let drawn = *up.choose(&mut self.rng)?;
        self.targets(nodes_only).contains(&drawn).then_some(drawn)
    }

    /// The processes whose clock no fault holds.
    fn clock_free(&self) -> impl Iterator<Item = Proc> + '_ {
        self.all_procs().into_iter().filter(|p| {
            !self
                .active
                .iter()
                .any(|f| matches!(f, Fault::Clock { proc, .. } if proc == p))
        })
    }

    /// A clock fault of `kind` on a process drawn among those free (docs/faults.md#clocks).
    fn draw_clock(&mut self, kind: FaultKind) -> Option<Fault> {
        let free: Vec<Proc> = self.clock_free().collect();
        let proc = *free.choose(&mut self.rng)?;
        let sign = if self.rng.random_bool(0.5) { 1 } else { -1 };
        let fault = match kind {
            FaultKind::ClockOffset => ClockFault::Offset {
                offset_ms: sign * self.rng.random_range(10..=10_000),
            },
            FaultKind::ClockStep => ClockFault::Step {
                offset_ms: sign * self.rng.random_range(60_000..=7_200_000),
            },
            _ => ClockFault::Strobe {
                offset_ms: sign * self.rng.random_range(10..=10_000),
                period_ms: self.rng.random_range(10..=500),
            },
        };
        Some(Fault::Clock { proc, fault })
    }

    fn draw(&mut self, kind: FaultKind) -> Option<Fault> {
        let all = self.all_procs();
        let fault = match kind {
            FaultKind::Replication => return None,
            FaultKind::ClockOffset | FaultKind::ClockStep | FaultKind::ClockStrobe => {
                return self.draw_clock(kind);
            }
            FaultKind::Reassign => Fault::Reassign {
                partition: self.rng.random_range(0..self.partitions),
                seed: self.rng.random(),
                back: Vec::new(),
            },
            FaultKind::AddPartitions => Fault::AddPartitions,
            FaultKind::Kill => Fault::Kill(self.draw_target(false)?),
            FaultKind::Pause => Fault::Pause(self.draw_target(false)?),
            FaultKind::LoseUnflushed => match self.draw_target(true)? {
                Proc::Node(id) => Fault::LoseUnflushed(id),
                Proc::Controller => unreachable!("lose-unflushed draws nodes only"),
            },
            FaultKind::Corrupt => match self.draw_target(true)? {
                Proc::Node(node) => Fault::Corrupt {
                    node,
                    seed: self.rng.random(),
                },
                Proc::Controller => unreachable!("corrupt draws nodes only"),
            },
            FaultKind::TornWrite => match self.draw_target(true)? {
                Proc::Node(node) => Fault::TornWrite {
                    node,
                    seed: self.rng.random(),
                },
                Proc::Controller => unreachable!("torn-write draws nodes only"),
            },
            FaultKind::Disk => match self.draw_target(true)? {
                Proc::Node(node) => {
                    let mode = *[DiskMode::Enospc, DiskMode::Eio]
                        .choose(&mut self.rng)
                        .expect("not empty");
                    // The broker's own bound on the fault: past two intervals (the
                    // end step comes one to two intervals later), so the end step
                    // ends it in practice, and an end step that never comes does not
                    // leave the disk failing for good.
                    let for_ms = self.interval.mul_f64(self.rng.random_range(2.0..3.0));
                    Fault::Disk {
                        node,
                        mode,
                        for_ms: for_ms.as_millis() as u64,
                    }
                }
                Proc::Controller => unreachable!("disk draws nodes only"),
            },
            FaultKind::CrashAll => {
                let mut order = self.nodes.clone();
                order.shuffle(&mut self.rng);
                Fault::CrashAll(order)
            }
            FaultKind::Partition | FaultKind::IsolateLeader | FaultKind::IsolateController => {
                let shapes: Vec<Topology> = kind
                    .topologies()
                    .iter()
                    .copied()
                    .filter(|t| self.roles || !t.needs_roles())
                    .collect();
                let topology = *shapes.choose(&mut self.rng)?;
                let partition = self.rng.random_range(0..self.partitions);
                let grudge = topology.draw(&all, &mut self.rng);
                Fault::Partition {
                    topology,
                    grudge,
                    partition,
                }
            }
            FaultKind::Slow | FaultKind::Flaky | FaultKind::Throttle => {
                let mut procs = all;
                procs.shuffle(&mut self.rng);
                procs.truncate(self.rng.random_range(1..=procs.len()));
                procs.sort();
                let how = self.degradation(kind);
                Fault::Degrade {
                    procs,
                    how,
                    seed: self.rng.random(),
                }
            }
        };
        Some(fault)
    }

    /// The parameters of a degraded link, drawn (docs/faults.md#degraded-links).
    fn degradation(&mut self, kind: FaultKind) -> Degradation {
        match kind {
            FaultKind::Slow => {
                let delay_ms = self.rng.random_range(SLOW_DELAY_MS);
                Degradation::Slow {
                    delay_ms,
                    jitter_ms: self.rng.random_range(0..=delay_ms / 2),
                }
            }
            FaultKind::Flaky => Degradation::Flaky {
                reset_pct: self.rng.random_range(FLAKY_RESET_PCT),
                loss_pct: self.rng.random_range(FLAKY_LOSS_PCT),
            },
            _ => Degradation::Throttle {
                bytes_per_s: self.rng.random_range(THROTTLE_KIB_PER_S) * 1024,
            },
        }
    }

    /// The last started fault, resolved at run time (isolate-leader's grudge).
    pub(crate) fn resolve_last(&mut self, fault: Fault) {
        if let Some(last) = self.active.last_mut() {
            *last = fault;
        }
    }

    /// The last started fault could not be applied (e.g. the partition had no leader).
    pub(crate) fn abandon_last(&mut self) {
        self.active.pop();
    }

    /// The last new partition handed out was not added after all.
    pub(crate) fn abandon_added(&mut self) {
        self.added = self.added.saturating_sub(1);
    }

    /// A step handed out but not taken: `fault`, which it would have ended, is active
    /// again, as the oldest.
    pub(crate) fn put_back(&mut self, fault: Fault) {
        self.active.insert(0, fault);
    }

    /// End every active fault, oldest first.
    pub fn end_all(&mut self) -> Vec<Fault> {
        std::mem::take(&mut self.active)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::Topology;
    use clap::ValueEnum;

    fn steps(seed: u64, kinds: &[FaultKind], nodes: i32, n: usize) -> Vec<(Duration, Change)> {
        let ids: Vec<i32> = (1..=nodes).collect();
        let mut p = Planner::new(seed, kinds, &ids, 2, Duration::from_secs(5));
        (0..n).map(|_| p.next_step()).collect()
    }

    #[test]
    fn a_seed_gives_the_same_schedule() {
        let kinds = [
            FaultKind::Kill,
            FaultKind::Pause,
            FaultKind::Partition,
            FaultKind::CrashAll,
        ];
        assert_eq!(steps(42, &kinds, 5, 200), steps(42, &kinds, 5, 200));
        assert_ne!(steps(42, &kinds, 5, 200), steps(43, &kinds, 5, 200));
    }

    #[test]
    fn delays_are_the_interval_with_jitter() {
        for (delay, _) in steps(1, &[FaultKind::Kill], 3, 200) {
            assert!(delay >= Duration::from_millis(3750) && delay < Duration::from_millis(6250));
        }
    }

    /// …and a reconfiguration only meets a controller quorum whose majority is up
    /// with working links.
    #[test]
    fn the_cluster_is_never_asked_to_survive_more_than_a_minority_down() {
        let kinds = FaultKind::value_variants();
        for nodes in 1..=5 {
            for seed in 0..30 {
                let ids: Vec<i32> = (1..=nodes).collect();
                let mut p = Planner::new(seed, kinds, &ids, 3, Duration::from_secs(1));
                for _ in 0..100 {
                    let (_, step) = p.next_step();
                    let active: Vec<&Fault> =
                        p.active().iter().filter(|f| !f.beside_anything()).collect();
                    let exclusive = active.iter().filter(|f| f.exclusive()).count();
                    assert!(exclusive == 0 || active.len() == 1, "{active:?}");
                    if exclusive == 0 {
                        let down: Vec<Proc> = active.iter().flat_map(|f| f.down()).collect();
                        let nodes_down = down.iter().filter(|p| matches!(p, Proc::Node(_))).count();
                        assert!(nodes_down <= (nodes as usize - 1) / 2, "{active:?}");
                        let mut unique = down.clone();
                        unique.sort();
                        unique.dedup();
                        assert_eq!(
                            unique.len(),
                            down.len(),
                            "one process, one fault: {active:?}"
                        );
                    }
                    let reconfigures = matches!(
                        step,
                        Change::Start(Fault::Reassign { .. } | Fault::AddPartitions)
                    );
                    if exclusive == 0 && (reconfigures || p.reassigning()) {
                        assert!(p.quorum_works(), "{step:?} beside {:?}", p.active());
                    }
                    if let Change::Start(Fault::CrashAll(order)) = step {
                        let mut sorted = order.clone();
                        sorted.sort();
                        assert_eq!(sorted, ids);
                    }
                }
            }
        }
    }

    #[test]
    fn every_fault_starts_and_ends_alternately_with_three_nodes() {
        // Three nodes: one node down at most, so kill and pause of nodes never overlap.
        let all = steps(
            9,
            &[FaultKind::Kill, FaultKind::Pause, FaultKind::Partition],
            3,
            300,
        );
        let starts = all
            .iter()
            .filter(|(_, s)| matches!(s, Change::Start(_)))
            .count();
        let ends = all
            .iter()
            .filter(|(_, s)| matches!(s, Change::End(_)))
            .count();
        assert!(
            starts >= 100 && starts.abs_diff(ends) <= 2,
            "{starts} starts, {ends} ends"
        );
        let kinds: std::collections::BTreeSet<&str> = all
            .iter()
            .filter_map(|(_, s)| match s {
                Change::Start(Fault::Kill(_)) => Some("kill"),
                Change::Start(Fault::Pause(_)) => Some("pause"),
                Change::Start(_) => Some("partition"),
                _ => None,
            })
            .collect();
        assert_eq!(kinds.len(), 3, "every asked-for kind shows up: {kinds:?}");
    }

    #[test]
    fn isolate_kinds_draw_only_their_topology() {
        for (_, step) in steps(5, &[FaultKind::IsolateController], 3, 50) {
            if let Change::Start(Fault::Partition {
                topology, grudge, ..
            }) = step
            {
                assert_eq!(topology, Topology::IsolateController);
                assert_eq!(grudge.affected().len(), 4);
            }
        }
        for (_, step) in steps(5, &[FaultKind::IsolateLeader], 3, 50) {
            if let Change::Start(fault) = step {
                assert!(matches!(
                    fault,
                    Fault::Partition {
                        topology: Topology::IsolateLeader,
                        ..
                    }
                ));
            }
        }
    }

    #[test]
    fn clock_faults_hit_one_process_each_within_their_bounds_beside_other_faults() {
        let kinds = [
            FaultKind::ClockOffset,
            FaultKind::ClockStep,
            FaultKind::ClockStrobe,
            FaultKind::Kill,
        ];
        let mut p = Planner::new(5, &kinds, &[1, 2, 3], 2, Duration::from_secs(1));
        let (mut offsets, mut steps, mut strobes, mut beside) = (0, 0, 0, 0);
        for _ in 0..2000 {
            let (_, step) = p.next_step();
            let clocked: Vec<Proc> = p
                .active()
                .iter()
                .filter_map(|f| match f {
                    Fault::Clock { proc, .. } => Some(*proc),
                    _ => None,
                })
                .collect();
            let mut unique = clocked.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), clocked.len(), "{:?}", p.active());
            beside += usize::from(!clocked.is_empty() && p.active().len() > clocked.len());
            let Change::Start(Fault::Clock { fault, .. }) = step else {
                continue;
            };
            let off = fault.offset_ms().abs();
            match fault {
                ClockFault::Offset { .. } => {
                    offsets += 1;
                    assert!((10..=10_000).contains(&off))
                }
                ClockFault::Step { .. } => {
                    steps += 1;
                    assert!((60_000..=7_200_000).contains(&off))
                }
                ClockFault::Strobe { period_ms, .. } => {
                    strobes += 1;
                    assert!((10..=10_000).contains(&off) && (10..=500).contains(&period_ms))
                }
            }
        }
        assert!(offsets > 0 && steps > 0 && strobes > 0 && beside > 0);
    }

    #[test]
    fn degraded_links_draw_targets_and_parameters_one_of_each_kind_at_a_time() {
        let kinds = [
            FaultKind::Slow,
            FaultKind::Flaky,
            FaultKind::Throttle,
            FaultKind::Kill,
            FaultKind::Partition,
        ];
        let ids = [1, 2, 3];
        let mut p = Planner::new(11, &kinds, &ids, 2, Duration::from_secs(1));
        let mut seen = std::collections::BTreeSet::new();
        let mut seeds = std::collections::BTreeSet::new();
        let mut together = 0;
        for _ in 0..2000 {
            let (_, step) = p.next_step();
            let degraded: Vec<FaultKind> = p
                .active()
                .iter()
                .filter_map(|f| match f {
                    Fault::Degrade { how, .. } => Some(how.kind()),
                    _ => None,
                })
                .collect();
            let mut unique = degraded.clone();
            unique.dedup();
            assert_eq!(unique.len(), degraded.len(), "{:?}", p.active());
            if !degraded.is_empty() {
                assert!(!p.active().iter().any(Fault::exclusive), "{:?}", p.active());
                together += usize::from(p.active().len() > 1);
            }
            let Change::Start(Fault::Degrade { procs, how, seed }) = step else {
                continue;
            };
            assert!(!procs.is_empty() && procs.len() <= 4, "{procs:?}");
            assert!(procs.windows(2).all(|w| w[0] < w[1]), "{procs:?}");
            seen.insert(how.kind());
            seeds.insert(seed);
            match how {
                Degradation::Slow {
                    delay_ms,
                    jitter_ms,
                } => assert!(SLOW_DELAY_MS.contains(&delay_ms) && jitter_ms <= delay_ms / 2),
                Degradation::Flaky {
                    reset_pct,
                    loss_pct,
                } => assert!(
                    FLAKY_RESET_PCT.contains(&reset_pct) && FLAKY_LOSS_PCT.contains(&loss_pct)
                ),
                Degradation::Throttle { bytes_per_s } => {
                    assert!(THROTTLE_KIB_PER_S.contains(&(bytes_per_s / 1024)))
                }
            }
        }
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seeds.len() > 10, "each fault draws its own seed");
        assert!(together > 0, "degraded links overlap other faults");
        // The same seed, the same draws.
        let a = steps(4, &kinds, 3, 300);
        assert_eq!(a, steps(4, &kinds, 3, 300));
    }

    #[test]
    fn disk_faults_hit_a_node_in_both_modes_and_share_the_minority_budget() {
        let kinds = [FaultKind::Disk, FaultKind::Kill];
        let all = steps(11, &kinds, 3, 400);
        let mut modes = std::collections::BTreeSet::new();
        let mut nodes = std::collections::BTreeSet::new();
        for (_, step) in &all {
            if let Change::Start(Fault::Disk { node, mode, for_ms }) = step {
                modes.insert(mode.as_str());
                nodes.insert(*node);
                // Two to three intervals of 5 s.
                assert!((10_000..15_000).contains(for_ms), "{for_ms}");
            }
        }
        assert_eq!(modes.len(), 2, "both modes are drawn: {modes:?}");
        assert_eq!(nodes, [1, 2, 3].into(), "every node is drawn");
        // With three nodes, a node whose disk fails and a killed node never overlap.
        let ids = [1, 2, 3];
        let mut p = Planner::new(11, &kinds, &ids, 2, Duration::from_secs(1));
        for _ in 0..400 {
            p.next_step();
            let nodes_down = p
                .active()
                .iter()
                .flat_map(Fault::down)
                .filter(|p| matches!(p, Proc::Node(_)))
                .count();
            assert!(nodes_down <= 1, "{:?}", p.active());
        }
    }

    #[test]
    fn kills_and_pauses_hit_the_controller_about_as_often_as_a_node() {
        for nodes in [3, 5] {
            let ids: Vec<i32> = (1..=nodes).collect();
            let kinds = [FaultKind::Kill, FaultKind::Pause, FaultKind::Partition];
            let mut p = Planner::new(3, &kinds, &ids, 2, Duration::from_secs(1));
            let mut hits: std::collections::BTreeMap<Proc, usize> = Default::default();
            for _ in 0..20_000 {
                if let (_, Change::Start(Fault::Kill(t) | Fault::Pause(t))) = p.next_step() {
                    *hits.entry(t).or_default() += 1;
                }
            }
            let controller = hits[&Proc::Controller] as f64;
            let per_node = hits
                .iter()
                .filter(|(p, _)| **p != Proc::Controller)
                .map(|(_, n)| *n as f64)
                .sum::<f64>()
                / nodes as f64;
            assert!(controller < per_node * 1.3, "{nodes} nodes: {hits:?}");
        }
    }

    #[test]
    fn reconfigurations_overlap_other_faults_and_new_partitions_are_few() {
        let ids = [1, 2, 3];
        let kinds = [
            FaultKind::Reassign,
            FaultKind::AddPartitions,
            FaultKind::Kill,
        ];
        let mut p = Planner::new(3, &kinds, &ids, 2, Duration::from_secs(1));
        let mut added = 0;
        for _ in 0..300 {
            let (_, step) = p.next_step();
            if let Change::Start(Fault::AddPartitions) = step {
                added += 1;
            }
            let reassigning = p
                .active()
                .iter()
                .filter(|f| matches!(f, Fault::Reassign { .. }))
                .count();
            assert!(reassigning <= 1, "{:?}", p.active());
            assert!(!p.active().contains(&Fault::AddPartitions));
        }
        assert_eq!(added, MAX_ADDED_PARTITIONS);
    }
}
