//! The network the harness plays between Maelstrom nodes, as pure state: which
//! directed links between nodes a partition cuts, and how degraded each link is
//! (latency with jitter, message loss) — and so the fate of each message: delivered
//! after some delay, or dropped, and why. No I/O: the router asks, then acts.
//!
//! Partitions cut links between nodes only, as Maelstrom's do: a client always
//! reaches the node it talks to, and a service (lin-kv, …) every node. Degraded
//! links are any link to or from a degraded process, clients' and services'
//! included (docs/faults.md, "Degraded links"). Each link draws its losses and
//! delays from its own rng, seeded from the fault's seed and the link's ends, so a
//! seed and an order of messages give the same fates.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::net::{Conditions, Grudge};
use crate::proc::Proc;

/// What happens to one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Delivered after this long.
    Deliver(Duration),
    /// Never delivered: why.
    Drop(&'static str),
}

/// Why a message was dropped: a partition cut its link.
pub const PARTITIONED: &str = "partition";
/// Why a message was dropped: its degraded link lost it.
pub const LOST: &str = "lost";

/// The node a Maelstrom id names (`n3` → node 3), if it names one of `count`.
pub fn node_number(id: &str, count: usize) -> Option<i32> {
    let n: usize = id.strip_prefix('n')?.parse().ok()?;
    (1..=count).contains(&n).then_some(n as i32)
}

/// One degraded link: its conditions and its draws.
#[derive(Debug, Clone)]
struct Link {
    conditions: Conditions,
    rng: ChaCha8Rng,
}

/// The network's state: see the module doc.
#[derive(Debug, Clone, Default)]
pub struct Network {
    nodes: usize,
    cut: BTreeSet<(Proc, Proc)>,
    /// Degraded links by (source id, destination id).
    links: BTreeMap<(String, String), Link>,
}

/// A stable number for a link's place, mixed into its seed.
fn place(src: &str, dest: &str) -> u64 {
    // FNV-1a: stable across runs and platforms, unlike the std hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in src.bytes().chain([0]).chain(dest.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl Network {
    /// A healthy network between `nodes` nodes (n1..nN).
    pub fn new(nodes: usize) -> Network {
        Network {
            nodes,
            ..Network::default()
        }
    }

    fn proc_of(&self, id: &str) -> Option<Proc> {
        node_number(id, self.nodes).map(Proc::Node)
    }

    pub fn cut(&mut self, grudge: &Grudge) {
        self.cut.extend(grudge.cut.iter().copied());
    }

    pub fn heal(&mut self, grudge: &Grudge) {
        for link in &grudge.cut {
            self.cut.remove(link);
        }
    }

    /// Is the link from `src` to `dest` cut?
    pub fn is_cut(&self, src: &str, dest: &str) -> bool {
        match (self.proc_of(src), self.proc_of(dest)) {
            (Some(a), Some(b)) => self.cut.contains(&(a, b)),
            _ => false,
        }
    }

    /// Change the conditions of the links among `ends` (every id of the network),
    /// from or to a member of `procs` — or, `between`, from and to members.
    pub fn degrade(
        &mut self,
        ends: &[String],
        procs: &[Proc],
        between: bool,
        seed: u64,
        change: &dyn Fn(&mut Conditions),
    ) {
        let hit = |id: &str| self.proc_of(id).is_some_and(|p| procs.contains(&p));
        let mut touched = Vec::new();
        for a in ends {
            for b in ends {
                if a == b {
                    continue;
                }
                let (ha, hb) = (hit(a), hit(b));
                if (between && ha && hb) || (!between && (ha || hb)) {
                    touched.push((a.clone(), b.clone()));
                }
            }
        }
        for (a, b) in touched {
            let link = self
                .links
                .entry((a.clone(), b.clone()))
                .or_insert_with(|| Link {
                    conditions: Conditions::default(),
                    rng: ChaCha8Rng::seed_from_u64(seed ^ place(&a, &b)),
                });
            change(&mut link.conditions);
            if link.conditions == Conditions::default() {
                self.links.remove(&(a, b));
            }
        }
    }

    /// Heal every link and restore every degraded one.
    pub fn heal_all(&mut self) {
        self.cut.clear();
        self.links.clear();
    }

    /// The fate of the next message from `src` to `dest`.
    pub fn fate(&mut self, src: &str, dest: &str) -> Fate {
        if self.is_cut(src, dest) {
            return Fate::Drop(PARTITIONED);
        }
        let Some(link) = self.links.get_mut(&(src.to_string(), dest.to_string())) else {
            return Fate::Deliver(Duration::ZERO);
        };
        if let Some(flaky) = link.conditions.flaky {
            // A message is one datagram: a reset loses it as surely as a loss does.
            let p = (flaky.loss + flaky.reset).clamp(0.0, 1.0);
            if link.rng.random_bool(p) {
                return Fate::Drop(LOST);
            }
        }
        match link.conditions.slow {
            Some(slow) => {
                let jitter = slow.jitter.as_micros() as u64;
                let extra = if jitter == 0 {
                    0
                } else {
                    link.rng.random_range(0..=jitter)
                };
                Fate::Deliver(slow.delay + Duration::from_micros(extra))
            }
            None => Fate::Deliver(Duration::ZERO),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{Flaky, Slow};

    fn ends() -> Vec<String> {
        ["n1", "n2", "n3", "c1", "lin-kv"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    #[test]
    fn ids_name_nodes_of_the_cluster_only() {
        assert_eq!(node_number("n3", 3), Some(3));
        assert_eq!(node_number("n4", 3), None);
        assert_eq!(node_number("n0", 3), None);
        assert_eq!(node_number("c1", 3), None);
        assert_eq!(node_number("nx", 3), None);
    }

    #[test]
    fn a_partition_cuts_nodes_but_never_clients_or_services() {
        let mut net = Network::new(3);
        let all: Vec<Proc> = (1..=3).map(Proc::Node).collect();
        let g = Grudge::isolate(Proc::Node(1), &all);
        net.cut(&g);
        assert_eq!(net.fate("n1", "n2"), Fate::Drop(PARTITIONED));
        assert_eq!(net.fate("n3", "n1"), Fate::Drop(PARTITIONED));
        assert_eq!(net.fate("n2", "n3"), Fate::Deliver(Duration::ZERO));
        assert_eq!(net.fate("n1", "c1"), Fate::Deliver(Duration::ZERO));
        assert_eq!(net.fate("n1", "lin-kv"), Fate::Deliver(Duration::ZERO));
        net.heal(&g);
        assert_eq!(net.fate("n1", "n2"), Fate::Deliver(Duration::ZERO));
    }

    #[test]
    fn degraded_links_delay_and_lose_by_their_seed() {
        let slow = |c: &mut Conditions| {
            c.slow = Some(Slow {
                delay: Duration::from_millis(50),
                jitter: Duration::from_millis(10),
            });
            c.flaky = Some(Flaky {
                reset: 0.0,
                loss: 0.5,
            });
        };
        let draws = |seed| {
            let mut net = Network::new(3);
            net.degrade(&ends(), &[Proc::Node(2)], false, seed, &slow);
            (0..200).map(|_| net.fate("c1", "n2")).collect::<Vec<_>>()
        };
        let fates = draws(7);
        assert_eq!(fates, draws(7), "a seed gives the same fates");
        let lost = fates.iter().filter(|f| **f == Fate::Drop(LOST)).count();
        assert!((50..150).contains(&lost), "{lost} of 200 lost at 50%");
        for f in &fates {
            if let Fate::Deliver(d) = f {
                assert!(*d >= Duration::from_millis(50) && *d <= Duration::from_millis(60));
            }
        }
        let mut net = Network::new(3);
        net.degrade(&ends(), &[Proc::Node(2)], false, 7, &slow);
        assert_eq!(net.fate("n1", "n3"), Fate::Deliver(Duration::ZERO));
        net.degrade(&ends(), &[Proc::Node(2)], false, 7, &|c| {
            *c = Conditions::default()
        });
        assert_eq!(net.fate("c1", "n2"), Fate::Deliver(Duration::ZERO));
    }
}
