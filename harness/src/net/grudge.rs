//! Network partitions as grudges (Jepsen's word): who can no longer reach whom, as a
//! set of cut directed links between processes. Plain data: the cluster cuts the
//! links a grudge names, the nemesis records it in the history, and
//! [`super::topology`] builds the shapes it draws.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::proc::Proc;

/// Who can no longer reach whom: a set of cut directed links between processes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grudge {
    /// (from, to): traffic from `from` to `to` is blackholed (both directions of the
    /// TCP connection that `from` opened to `to`).
    pub cut: Vec<(Proc, Proc)>,
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
    use serde_json::json;

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
    fn grudges_render_as_who_cannot_reach_whom() {
        let g = Grudge::isolate(Proc::Controller, &universe(2));
        assert_eq!(
            g.to_json(),
            json!({"controller": [1, 2], "1": ["controller"], "2": ["controller"]})
        );
    }
}
