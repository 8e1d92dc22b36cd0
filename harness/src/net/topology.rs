//! The shapes of partition the nemesis draws from (docs/faults.md#partitions), as
//! pure builders of [`Grudge`]s: the universe and a seeded random source in, the cut
//! links out.
//!
//! The universe of a partition is every broker process: the controller and the nodes.
//! The controller is one more member (it plays the part ZooKeeper plays in Jepsen's
//! Kafka test, where it runs beside the brokers and is partitioned with them), so
//! `halves` and `bridge` may put it on either side.
//!
//! Clients are not in the universe: as in Jepsen, a partition cuts processes from each
//! other while clients still reach every process (their links have proxies too, but no
//! topology cuts them).
//!
//! Every grudge drawn here is symmetric: if a cannot reach b, b cannot reach a (both
//! directed links are cut), as with a DROP rule on each side. Scenario scripts may cut
//! one direction only (one node no longer fetching from another).

use clap::ValueEnum;
use rand::Rng;
use rand::seq::SliceRandom;

use super::grudge::Grudge;
use crate::names::by_name;
use crate::proc::Proc;

/// The shapes of partition the nemesis draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, ValueEnum)]
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

by_name!(Topology => "topology");

impl Topology {
    /// Does the shape aim at a role (a leader, the controller)?
    pub fn needs_roles(self) -> bool {
        matches!(self, Topology::IsolateLeader | Topology::IsolateController)
    }

    /// The grudge of this shape over `all`, drawn from `rng` where the shape is random.
    /// `isolate-leader` needs the cluster's state (who leads): it is empty here, and
    /// the nemesis fills it in when it applies the fault.
    pub fn draw(self, all: &[Proc], rng: &mut impl Rng) -> Grudge {
        match self {
            Topology::IsolateOne => isolate_one(all, rng),
            Topology::IsolateController => Grudge::isolate(Proc::Controller, all),
            Topology::Halves => halves(all, rng),
            Topology::Bridge => bridge(all, rng),
            Topology::IsolateLeader => Grudge::none(),
        }
    }
}

/// A random split of `all` into two halves, the smaller one first.
fn halves(all: &[Proc], rng: &mut impl Rng) -> Grudge {
    let mut shuffled = all.to_vec();
    shuffled.shuffle(rng);
    let (small, large) = shuffled.split_at(shuffled.len() / 2);
    Grudge::components(&[small.to_vec(), large.to_vec()])
}

/// Jepsen's bridge: shuffle, then two halves that share the middle process, which
/// sees everyone while the halves do not see each other.
fn bridge(all: &[Proc], rng: &mut impl Rng) -> Grudge {
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
fn isolate_one(all: &[Proc], rng: &mut impl Rng) -> Grudge {
    match all.len() {
        0 => Grudge::none(),
        n => Grudge::isolate(all[rng.random_range(0..n)], all),
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
    fn halves_split_everyone_into_two_sides_reproducibly() {
        let all = universe(4);
        let g = halves(&all, &mut ChaCha8Rng::seed_from_u64(7));
        assert_eq!(g, halves(&all, &mut ChaCha8Rng::seed_from_u64(7)));
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
            let g = bridge(&all, &mut ChaCha8Rng::seed_from_u64(seed));
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
    fn each_shape_draws_as_its_builder_does() {
        let all = universe(3);
        let rng = || ChaCha8Rng::seed_from_u64(3);
        assert_eq!(
            Topology::Halves.draw(&all, &mut rng()),
            halves(&all, &mut rng())
        );
        assert_eq!(
            Topology::IsolateController.draw(&all, &mut rng()),
            Grudge::isolate(Proc::Controller, &all)
        );
        assert_eq!(
            Topology::IsolateLeader.draw(&all, &mut rng()),
            Grudge::none()
        );
        assert_eq!(
            Topology::IsolateOne.draw(&all, &mut rng()).affected().len(),
            4
        );
    }
}
