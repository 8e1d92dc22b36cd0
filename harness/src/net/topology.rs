//! Network partitions as grudges (Jepsen's word): who can no longer reach whom.
//!
//! The universe of a partition is every broker process: the controller and the nodes.
//! The controller is one more member (it plays the part ZooKeeper plays in Jepsen's
//! Kafka test, where it runs beside the brokers and is partitioned with them), so
//! `halves` and `bridge` may put it on either side.
//!
//! Clients are not in the universe: as in Jepsen, a partition cuts processes from each
//! other while clients still reach every process (their links have proxies too, see
//! `Cluster::set_client_link_cut`, but no topology cuts them).
//!
//! Every grudge the nemesis draws is symmetric: if a cannot reach b, b cannot reach a
//! (both directed links are cut), as with a DROP rule on each side. Scenario scripts
//! may cut one direction only (one node no longer fetching from another).

use std::collections::BTreeMap;

use rand::Rng;
use rand::seq::SliceRandom;
use serde_json::{Value, json};

use crate::cluster::{Grudge, Proc};

/// The shapes of partition the nemesis draws from (SPEC §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Topology {
    /// One random process (node or controller) cut from all others.
    IsolateOne,
    /// The current leader of a partition (from the controller's metadata) cut from all.
    IsolateLeader,
    /// The controller cut from every node.
    IsolateController,
    /// A random split into two halves (the smaller one first).
    Halves,
    /// Two halves that both see one bridge process (Jepsen's `bridge`).
    Bridge,
}

impl Topology {
    pub const ALL: [Topology; 5] = [
        Topology::IsolateOne,
        Topology::IsolateLeader,
        Topology::IsolateController,
        Topology::Halves,
        Topology::Bridge,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Topology::IsolateOne => "isolate-one",
            Topology::IsolateLeader => "isolate-leader",
            Topology::IsolateController => "isolate-controller",
            Topology::Halves => "halves",
            Topology::Bridge => "bridge",
        }
    }
}

impl std::fmt::Display for Proc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Proc::Controller => f.write_str("controller"),
            Proc::Node(id) => write!(f, "node {id}"),
        }
    }
}

impl Proc {
    /// As in history values: the node id, or `"controller"`.
    pub fn to_json(self) -> Value {
        match self {
            Proc::Controller => json!("controller"),
            Proc::Node(id) => json!(id),
        }
    }

    /// As a JSON object key: `"1"`, `"controller"`.
    pub fn key(self) -> String {
        match self {
            Proc::Controller => "controller".into(),
            Proc::Node(id) => id.to_string(),
        }
    }
}

impl Grudge {
    /// Nobody is cut.
    pub fn none() -> Grudge {
        Grudge::default()
    }

    /// `p` can reach nobody in `all`, and nobody can reach `p`.
    pub fn isolate(p: Proc, all: &[Proc]) -> Grudge {
        Grudge::components(&[vec![p], all.iter().copied().filter(|q| *q != p).collect()])
    }

    /// Two processes can reach each other only if some group holds both. Processes in
    /// no group are untouched. Groups may overlap (a bridge is in both halves).
    pub fn components(groups: &[Vec<Proc>]) -> Grudge {
        let mut members: Vec<Proc> = groups.iter().flatten().copied().collect();
        members.sort();
        members.dedup();
        let together = |a: Proc, b: Proc| groups.iter().any(|g| g.contains(&a) && g.contains(&b));
        let mut cut = Vec::new();
        for &a in &members {
            for &b in &members {
                if a != b && !together(a, b) {
                    cut.push((a, b));
                }
            }
        }
        Grudge { cut }
    }

    /// A random split of `all` into two halves, the smaller one first.
    pub fn halves(all: &[Proc], rng: &mut impl Rng) -> Grudge {
        let mut shuffled = all.to_vec();
        shuffled.shuffle(rng);
        let (small, large) = shuffled.split_at(shuffled.len() / 2);
        Grudge::components(&[small.to_vec(), large.to_vec()])
    }

    /// Jepsen's bridge: shuffle, then two halves that share the middle process, which
    /// sees everyone while the halves do not see each other.
    pub fn bridge(all: &[Proc], rng: &mut impl Rng) -> Grudge {
        let mut shuffled = all.to_vec();
        shuffled.shuffle(rng);
        if shuffled.len() < 3 {
            return Grudge::none();
        }
        let mid = shuffled.len() / 2;
        let left = shuffled[..=mid].to_vec();
        let right = shuffled[mid..].to_vec();
        Grudge::components(&[left, right])
    }

    /// A random process of `all` isolated.
    pub fn isolate_one(all: &[Proc], rng: &mut impl Rng) -> Grudge {
        match all.len() {
            0 => Grudge::none(),
            n => Grudge::isolate(all[rng.random_range(0..n)], all),
        }
    }

    /// Can `from` reach `to`?
    pub fn allows(&self, from: Proc, to: Proc) -> bool {
        !self.cut.contains(&(from, to))
    }

    /// Processes that some link of the grudge touches.
    pub fn affected(&self) -> Vec<Proc> {
        let mut out: Vec<Proc> = self.cut.iter().flat_map(|&(a, b)| [a, b]).collect();
        out.sort();
        out.dedup();
        out
    }

    /// For history values: each process and those it cannot reach,
    /// e.g. `{"1": [2, "controller"], "2": [1], ...}`.
    pub fn to_json(&self) -> Value {
        let mut map: BTreeMap<Proc, Vec<Proc>> = BTreeMap::new();
        for &(a, b) in &self.cut {
            map.entry(a).or_default().push(b);
        }
        let mut obj = serde_json::Map::new();
        for (a, mut bs) in map {
            bs.sort();
            bs.dedup();
            obj.insert(
                a.key(),
                Value::Array(bs.into_iter().map(Proc::to_json).collect()),
            );
        }
        Value::Object(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn universe(n: i32) -> Vec<Proc> {
        std::iter::once(Proc::Controller)
            .chain((1..=n).map(Proc::Node))
            .collect()
    }

    fn symmetric(g: &Grudge) -> bool {
        g.cut.iter().all(|&(a, b)| g.cut.contains(&(b, a)))
    }

    #[test]
    fn isolate_cuts_one_process_from_all_others_both_ways() {
        let all = universe(3);
        let g = Grudge::isolate(Proc::Node(2), &all);
        assert_eq!(g.cut.len(), 6);
        assert!(symmetric(&g));
        for &q in &all {
            if q != Proc::Node(2) {
                assert!(!g.allows(Proc::Node(2), q) && !g.allows(q, Proc::Node(2)));
            }
        }
        assert!(g.allows(Proc::Node(1), Proc::Controller));
    }

    #[test]
    fn halves_split_everyone_into_two_sides_reproducibly() {
        let all = universe(4);
        let g = Grudge::halves(&all, &mut ChaCha8Rng::seed_from_u64(7));
        assert_eq!(g, Grudge::halves(&all, &mut ChaCha8Rng::seed_from_u64(7)));
        assert!(symmetric(&g));
        // 5 processes: sides of 2 and 3, so 2 * 3 * 2 directed cut links.
        assert_eq!(g.cut.len(), 12);
        let a = Proc::Controller;
        let side: Vec<Proc> = all
            .iter()
            .copied()
            .filter(|&q| q == a || g.allows(a, q))
            .collect();
        assert!(side.len() == 2 || side.len() == 3);
    }

    #[test]
    fn bridge_sees_both_halves_which_do_not_see_each_other() {
        let all = universe(4);
        for seed in 0..20 {
            let g = Grudge::bridge(&all, &mut ChaCha8Rng::seed_from_u64(seed));
            assert!(symmetric(&g));
            let bridges: Vec<Proc> = all
                .iter()
                .copied()
                .filter(|&b| all.iter().all(|&q| g.allows(b, q)))
                .collect();
            assert_eq!(bridges.len(), 1, "seed {seed}: {g:?}");
            // 5 processes: halves of 2 around the bridge, 2 * 2 * 2 directed cuts.
            assert_eq!(g.cut.len(), 8);
        }
    }

    #[test]
    fn grudges_render_as_who_cannot_reach_whom() {
        let g = Grudge::isolate(Proc::Controller, &universe(2));
        assert_eq!(
            g.to_json(),
            json!({"controller": [1, 2], "1": ["controller"], "2": ["controller"]})
        );
    }
}
