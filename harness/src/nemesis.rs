//! The nemesis: the faults of SPEC §6 on a schedule drawn from the run's seed.
//!
//! Two layers, as elsewhere in watermark:
//! - [`Planner`] is the schedule without I/O: from the seed it draws when the next
//!   step comes (every `interval` ± 25 %), whether it starts a fault or ends the oldest
//!   active one, which fault and which targets (a kill or pause hits a process drawn
//!   uniformly among those up, the controller included). It keeps to what the cluster
//!   can survive: at most a minority of nodes killed or paused at once (plus perhaps
//!   the controller), and a partition or a crash-all only alone — crash-all is the one
//!   fault that takes the majority down, and only when asked for. A draw that would
//!   take down more ends the oldest fault instead.
//! - [`Nemesis`] applies the planner's steps to a [`Cluster`] and reports each start
//!   and end as a [`NemesisEvent`] (the run writes them into history.jsonl as
//!   `"process":"nemesis"` events).
//!
//! Only `isolate-leader` depends on the cluster's state (the leader comes from the
//! controller's metadata); every random draw is made whatever that state is, so a seed
//! gives the same schedule on every run.

use std::time::Duration;

use rand::seq::IndexedRandom;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use serde_json::{Value, json};

use crate::cluster::{Cluster, Grudge, Proc};
use crate::error::Result;
use crate::net::topology::Topology;

/// The time between two restarts at the end of a crash-all. Spread over more than the
/// controller's session timeout (3 s) for three nodes, so a node that comes back early
/// can learn a leader that is still down and act on it (truncate, under `--truncation
/// hw`) before the controller declares that leader dead: KIP-101's first scenario.
pub const CRASH_ALL_RESTART_GAP: Duration = Duration::from_millis(1750);

/// A fault the user can ask for with `--nemesis`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// SIGKILL a node or the controller, restart it later on the same data dir.
    Kill,
    /// SIGSTOP a node or the controller, SIGCONT it later.
    Pause,
    /// Any partition topology: isolate-one, isolate-leader, isolate-controller, halves, bridge.
    Partition,
    /// Only the isolate-leader topology.
    IsolateLeader,
    /// Only the isolate-controller topology.
    IsolateController,
    /// SIGKILL every node at once, restart them in random order.
    CrashAll,
    /// SIGKILL a node run with `--simulate-page-cache`: its unflushed bytes are lost.
    LoseUnflushed,
}

impl FaultKind {
    pub const ALL: [FaultKind; 7] = [
        FaultKind::Kill,
        FaultKind::Pause,
        FaultKind::Partition,
        FaultKind::IsolateLeader,
        FaultKind::IsolateController,
        FaultKind::CrashAll,
        FaultKind::LoseUnflushed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Pause => "pause",
            FaultKind::Partition => "partition",
            FaultKind::IsolateLeader => "isolate-leader",
            FaultKind::IsolateController => "isolate-controller",
            FaultKind::CrashAll => "crash-all",
            FaultKind::LoseUnflushed => "lose-unflushed",
        }
    }

    /// The partition shapes this kind draws from (empty for non-partition kinds).
    pub fn topologies(self) -> &'static [Topology] {
        match self {
            FaultKind::Partition => &Topology::ALL,
            FaultKind::IsolateLeader => &[Topology::IsolateLeader],
            FaultKind::IsolateController => &[Topology::IsolateController],
            _ => &[],
        }
    }
}

/// Parse `--nemesis`: a comma-separated list of fault names, or `none`.
pub fn parse_nemesis(list: &str) -> std::result::Result<Vec<FaultKind>, String> {
    let names: Vec<&str> = list.split(',').map(str::trim).collect();
    if names == ["none"] {
        return Ok(Vec::new());
    }
    let mut kinds = Vec::new();
    for name in names {
        if name == "none" {
            return Err(format!(
                "`none` cannot be combined with other faults in `{list}`"
            ));
        }
        let kind = FaultKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "unknown fault `{name}` in --nemesis `{list}`; known faults: {}, or none",
                    known.join(", ")
                )
            })?;
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Ok(kinds)
}

/// Extra `broker node` arguments the faults need: `lose-unflushed` needs every node
/// run with `--simulate-page-cache`.
pub fn node_args(kinds: &[FaultKind]) -> Vec<String> {
    if kinds.contains(&FaultKind::LoseUnflushed) {
        vec!["--simulate-page-cache".into()]
    } else {
        Vec::new()
    }
}

/// A fault with its targets drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    Kill(Proc),
    Pause(Proc),
    LoseUnflushed(i32),
    /// Every node, and the order they are restarted in.
    CrashAll(Vec<i32>),
    /// A partition; for isolate-leader the grudge is empty until the leader of
    /// `partition` is read from the controller.
    Partition {
        topology: Topology,
        grudge: Grudge,
        partition: u32,
    },
}

impl Fault {
    /// Processes this fault takes down (killed or paused).
    fn down(&self) -> Vec<Proc> {
        match self {
            Fault::Kill(p) | Fault::Pause(p) => vec![*p],
            Fault::LoseUnflushed(id) => vec![Proc::Node(*id)],
            Fault::CrashAll(ids) => ids.iter().map(|&id| Proc::Node(id)).collect(),
            Fault::Partition { .. } => Vec::new(),
        }
    }

    /// Faults that must be alone.
    fn exclusive(&self) -> bool {
        matches!(self, Fault::CrashAll(_) | Fault::Partition { .. })
    }

    /// The history event of its start.
    pub fn start_event(&self) -> NemesisEvent {
        match self {
            Fault::Kill(p) => NemesisEvent::new("kill", json!([p.to_json()])),
            Fault::Pause(p) => NemesisEvent::new("pause", json!([p.to_json()])),
            Fault::LoseUnflushed(id) => NemesisEvent::new("lose-unflushed", json!([id])),
            Fault::CrashAll(ids) => {
                let mut sorted = ids.clone();
                sorted.sort();
                NemesisEvent::new("crash-all", json!(sorted))
            }
            Fault::Partition {
                topology, grudge, ..
            } => NemesisEvent::new(
                "partition",
                json!({"topology": topology.name(), "grudge": grudge.to_json()}),
            ),
        }
    }

    /// The history event of its end.
    pub fn end_event(&self) -> NemesisEvent {
        match self {
            Fault::Kill(p) => NemesisEvent::new("restart", json!([p.to_json()])),
            Fault::Pause(p) => NemesisEvent::new("resume", json!([p.to_json()])),
            Fault::LoseUnflushed(id) => NemesisEvent::new("restart", json!([id])),
            Fault::CrashAll(order) => NemesisEvent::new("restart", json!(order)),
            Fault::Partition {
                topology, grudge, ..
            } => NemesisEvent::new(
                "heal",
                json!({"topology": topology.name(), "grudge": grudge.to_json()}),
            ),
        }
    }
}

/// A fault's start or end, for history.jsonl: `f` names it, `value` its targets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NemesisEvent {
    pub f: String,
    pub value: Value,
}

impl NemesisEvent {
    pub fn new(f: &str, value: Value) -> NemesisEvent {
        NemesisEvent { f: f.into(), value }
    }
}

/// What the nemesis does at a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
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
}

impl Planner {
    /// `partitions`: how many partitions the topic has (isolate-leader picks one).
    pub fn new(
        seed: u64,
        kinds: &[FaultKind],
        nodes: &[i32],
        partitions: u32,
        interval: Duration,
    ) -> Planner {
        Planner {
            rng: ChaCha8Rng::seed_from_u64(seed),
            kinds: kinds.to_vec(),
            nodes: nodes.to_vec(),
            partitions: partitions.max(1),
            interval: interval.max(Duration::from_millis(100)),
            active: Vec::new(),
        }
    }

    /// Faults started and not yet ended, oldest first.
    pub fn active(&self) -> &[Fault] {
        &self.active
    }

    fn all_procs(&self) -> Vec<Proc> {
        std::iter::once(Proc::Controller)
            .chain(self.nodes.iter().map(|&id| Proc::Node(id)))
            .collect()
    }

    /// Processes no active fault has taken down, and how many more nodes may go down.
    fn room(&self) -> (Vec<Proc>, usize) {
        let down: Vec<Proc> = self.active.iter().flat_map(Fault::down).collect();
        let nodes_down = down.iter().filter(|p| matches!(p, Proc::Node(_))).count();
        let minority = self.nodes.len().saturating_sub(1) / 2;
        let up = self
            .all_procs()
            .into_iter()
            .filter(|p| !down.contains(p))
            .collect();
        (up, minority.saturating_sub(nodes_down))
    }

    /// Candidates for a kill or pause: the controller if up, nodes if the budget allows.
    fn targets(&self, nodes_only: bool) -> Vec<Proc> {
        if self.active.iter().any(Fault::exclusive) {
            return Vec::new();
        }
        let (up, budget) = self.room();
        up.into_iter()
            .filter(|p| match p {
                Proc::Controller => !nodes_only,
                Proc::Node(_) => budget > 0,
            })
            .collect()
    }

    fn can_start(&self, kind: FaultKind) -> bool {
        match kind {
            FaultKind::Kill | FaultKind::Pause => !self.targets(false).is_empty(),
            FaultKind::LoseUnflushed => !self.targets(true).is_empty(),
            _ => self.active.is_empty(),
        }
    }

    /// The delay before the next step, and the step.
    pub fn next_step(&mut self) -> (Duration, Step) {
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
            self.active.push(fault.clone());
            Step::Start(fault)
        } else if !self.active.is_empty() {
            Step::End(self.active.remove(0))
        } else {
            Step::Idle
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

    fn draw(&mut self, kind: FaultKind) -> Option<Fault> {
        let all = self.all_procs();
        let fault = match kind {
            FaultKind::Kill => Fault::Kill(self.draw_target(false)?),
            FaultKind::Pause => Fault::Pause(self.draw_target(false)?),
            FaultKind::LoseUnflushed => match self.draw_target(true)? {
                Proc::Node(id) => Fault::LoseUnflushed(id),
                Proc::Controller => unreachable!("lose-unflushed draws nodes only"),
            },
            FaultKind::CrashAll => {
                let mut order = self.nodes.clone();
                order.shuffle(&mut self.rng);
                Fault::CrashAll(order)
            }
            FaultKind::Partition | FaultKind::IsolateLeader | FaultKind::IsolateController => {
                let topology = *kind.topologies().choose(&mut self.rng).expect("not empty");
                let partition = self.rng.random_range(0..self.partitions);
                let grudge = match topology {
                    Topology::IsolateOne => Grudge::isolate_one(&all, &mut self.rng),
                    Topology::IsolateController => Grudge::isolate(Proc::Controller, &all),
                    Topology::Halves => Grudge::halves(&all, &mut self.rng),
                    Topology::Bridge => Grudge::bridge(&all, &mut self.rng),
                    Topology::IsolateLeader => Grudge::none(),
                };
                Fault::Partition {
                    topology,
                    grudge,
                    partition,
                }
            }
        };
        Some(fault)
    }

    /// The last started fault, resolved at run time (isolate-leader's grudge).
    fn resolve_last(&mut self, fault: Fault) {
        if let Some(last) = self.active.last_mut() {
            *last = fault;
        }
    }

    /// The last started fault could not be applied (e.g. the partition had no leader).
    fn abandon_last(&mut self) {
        self.active.pop();
    }

    /// End every active fault, oldest first.
    pub fn end_all(&mut self) -> Vec<Fault> {
        std::mem::take(&mut self.active)
    }
}

/// Applies a [`Planner`]'s schedule to a cluster.
#[derive(Debug)]
pub struct Nemesis {
    planner: Planner,
    /// The topic whose partitions' leaders isolate-leader reads.
    topic: String,
}

impl Nemesis {
    pub fn new(planner: Planner, topic: impl Into<String>) -> Nemesis {
        Nemesis {
            planner,
            topic: topic.into(),
        }
    }

    pub fn planner(&self) -> &Planner {
        &self.planner
    }

    /// Run the schedule for `time_limit`, then end every active fault. Each start and
    /// end is passed to `on_event` once applied. Dropping this future midway leaves
    /// faults active: end them with [`Nemesis::end_all`] or `Cluster::heal_all`.
    pub async fn run(
        &mut self,
        cluster: &mut Cluster,
        time_limit: Duration,
        on_event: &mut (dyn FnMut(NemesisEvent) + Send),
    ) -> Result<()> {
        let end = tokio::time::Instant::now() + time_limit;
        loop {
            let (delay, step) = self.planner.next_step();
            if tokio::time::Instant::now() + delay >= end {
                // The step falls after the end: undo a start that will not happen.
                if let Step::Start(_) = step {
                    self.planner.abandon_last();
                } else if let Step::End(fault) = step {
                    self.planner.active.insert(0, fault);
                }
                tokio::time::sleep_until(end).await;
                break;
            }
            tokio::time::sleep(delay).await;
            self.apply(step, cluster, on_event).await?;
        }
        self.end_all(cluster, on_event).await
    }

    /// End every active fault, oldest first, reporting each end.
    pub async fn end_all(
        &mut self,
        cluster: &mut Cluster,
        on_event: &mut (dyn FnMut(NemesisEvent) + Send),
    ) -> Result<()> {
        for fault in self.planner.end_all() {
            self.apply(Step::End(fault), cluster, on_event).await?;
        }
        Ok(())
    }

    /// Apply one step.
    pub async fn apply(
        &mut self,
        step: Step,
        cluster: &mut Cluster,
        on_event: &mut (dyn FnMut(NemesisEvent) + Send),
    ) -> Result<()> {
        match step {
            Step::Idle => {}
            Step::Start(fault) => {
                let fault = match fault {
                    Fault::Partition {
                        topology: Topology::IsolateLeader,
                        partition,
                        ..
                    } => match cluster.leader_of(&self.topic, partition).await {
                        Ok(Some(leader)) => {
                            let grudge = Grudge::isolate(Proc::Node(leader), &cluster.procs());
                            let fault = Fault::Partition {
                                topology: Topology::IsolateLeader,
                                grudge,
                                partition,
                            };
                            self.planner.resolve_last(fault.clone());
                            fault
                        }
                        // No leader (or the controller is unreachable): nothing to isolate now.
                        _ => {
                            self.planner.abandon_last();
                            return Ok(());
                        }
                    },
                    other => other,
                };
                match &fault {
                    Fault::Kill(p) => cluster.kill(*p).await?,
                    Fault::Pause(p) => cluster.pause(*p).await?,
                    Fault::LoseUnflushed(id) => cluster.kill(Proc::Node(*id)).await?,
                    Fault::CrashAll(ids) => {
                        let procs: Vec<Proc> = ids.iter().map(|&id| Proc::Node(id)).collect();
                        cluster.kill_at_once(&procs).await?
                    }
                    Fault::Partition { grudge, .. } => cluster.partition(grudge),
                }
                on_event(fault.start_event());
            }
            Step::End(fault) => {
                match &fault {
                    Fault::Kill(p) => cluster.restart(*p).await?,
                    Fault::Pause(p) => cluster.resume(*p).await?,
                    Fault::LoseUnflushed(id) => cluster.restart(Proc::Node(*id)).await?,
                    Fault::CrashAll(order) => {
                        for (i, &id) in order.iter().enumerate() {
                            if i > 0 {
                                tokio::time::sleep(CRASH_ALL_RESTART_GAP).await;
                            }
                            cluster.restart(Proc::Node(id)).await?;
                        }
                    }
                    Fault::Partition { .. } => cluster.heal(),
                }
                on_event(fault.end_event());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(seed: u64, kinds: &[FaultKind], nodes: i32, n: usize) -> Vec<(Duration, Step)> {
        let ids: Vec<i32> = (1..=nodes).collect();
        let mut p = Planner::new(seed, kinds, &ids, 2, Duration::from_secs(5));
        (0..n).map(|_| p.next_step()).collect()
    }

    #[test]
    fn names_parse_and_unknown_ones_are_refused_clearly() {
        use FaultKind::*;
        assert_eq!(
            parse_nemesis("kill,pause,partition"),
            Ok(vec![Kill, Pause, Partition])
        );
        assert_eq!(
            parse_nemesis(" crash-all , kill,kill"),
            Ok(vec![CrashAll, Kill])
        );
        assert_eq!(parse_nemesis("none"), Ok(vec![]));
        let err = parse_nemesis("kill,explode").unwrap_err();
        assert!(
            err.contains("unknown fault `explode`") && err.contains("lose-unflushed"),
            "{err}"
        );
        assert!(parse_nemesis("none,kill").unwrap_err().contains("`none`"));
        assert!(parse_nemesis("").is_err());
        assert_eq!(
            node_args(&[Kill, LoseUnflushed]),
            vec!["--simulate-page-cache"]
        );
        assert!(node_args(&[Kill]).is_empty());
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

    #[test]
    fn the_cluster_is_never_asked_to_survive_more_than_a_minority_down() {
        let kinds = FaultKind::ALL;
        for nodes in 1..=5 {
            for seed in 0..30 {
                let ids: Vec<i32> = (1..=nodes).collect();
                let mut p = Planner::new(seed, &kinds, &ids, 3, Duration::from_secs(1));
                for _ in 0..100 {
                    let (_, step) = p.next_step();
                    let active = p.active();
                    let exclusive = active.iter().filter(|f| f.exclusive()).count();
                    assert!(exclusive == 0 || active.len() == 1, "{active:?}");
                    if exclusive == 0 {
                        let down: Vec<Proc> = active.iter().flat_map(Fault::down).collect();
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
                    if let Step::Start(Fault::CrashAll(order)) = step {
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
            .filter(|(_, s)| matches!(s, Step::Start(_)))
            .count();
        let ends = all
            .iter()
            .filter(|(_, s)| matches!(s, Step::End(_)))
            .count();
        assert!(
            starts >= 100 && starts.abs_diff(ends) <= 2,
            "{starts} starts, {ends} ends"
        );
        let kinds: std::collections::BTreeSet<&str> = all
            .iter()
            .filter_map(|(_, s)| match s {
                Step::Start(f) => Some(f.start_event().f),
                _ => None,
            })
            .map(|f| match f.as_str() {
                "kill" => "kill",
                "pause" => "pause",
                _ => "partition",
            })
            .collect();
        assert_eq!(kinds.len(), 3, "every asked-for kind shows up: {kinds:?}");
    }

    #[test]
    fn isolate_kinds_draw_only_their_topology() {
        for (_, step) in steps(5, &[FaultKind::IsolateController], 3, 50) {
            if let Step::Start(Fault::Partition {
                topology, grudge, ..
            }) = step
            {
                assert_eq!(topology, Topology::IsolateController);
                assert_eq!(grudge.affected().len(), 4);
            }
        }
        for (_, step) in steps(5, &[FaultKind::IsolateLeader], 3, 50) {
            if let Step::Start(fault) = step {
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
    fn events_name_the_fault_and_its_targets() {
        let e = Fault::Kill(Proc::Node(2)).start_event();
        assert_eq!((e.f.as_str(), e.value), ("kill", json!([2])));
        let e = Fault::Pause(Proc::Controller).end_event();
        assert_eq!((e.f.as_str(), e.value), ("resume", json!(["controller"])));
        let e = Fault::CrashAll(vec![3, 1, 2]).end_event();
        assert_eq!((e.f.as_str(), e.value), ("restart", json!([3, 1, 2])));
        let grudge = Grudge::isolate(
            Proc::Node(1),
            &[Proc::Controller, Proc::Node(1), Proc::Node(2)],
        );
        let fault = Fault::Partition {
            topology: Topology::IsolateOne,
            grudge,
            partition: 0,
        };
        let e = fault.start_event();
        assert_eq!(e.f, "partition");
        assert_eq!(e.value["topology"], "isolate-one");
        assert_eq!(e.value["grudge"]["1"], json!(["controller", 2]));
        assert_eq!(fault.end_event().f, "heal");
    }

    #[test]
    fn kills_and_pauses_hit_the_controller_about_as_often_as_a_node() {
        for nodes in [3, 5] {
            let ids: Vec<i32> = (1..=nodes).collect();
            let kinds = [FaultKind::Kill, FaultKind::Pause, FaultKind::Partition];
            let mut p = Planner::new(3, &kinds, &ids, 2, Duration::from_secs(1));
            let mut hits: std::collections::BTreeMap<Proc, usize> = Default::default();
            for _ in 0..20_000 {
                if let (_, Step::Start(Fault::Kill(t) | Fault::Pause(t))) = p.next_step() {
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
}
