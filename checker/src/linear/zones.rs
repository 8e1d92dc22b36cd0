//! The unique-value fast path: a read/write register whose writes all wrote
//! different values is decided in O(n log n), without searching.
//!
//! When every written value is unique, a read names the one write it saw, so the
//! question is no longer *which* order but only whether the intervals allow one
//! (Gibbons & Korach's read-mapping case). Group each write with the reads of its
//! value into a *cluster* (the initial value's cluster has a write before
//! everything). A cluster's *zone* runs from the earliest completion among its
//! operations to the latest invocation: if the earliest completion comes first,
//! the value must hold throughout — a *forward* zone; otherwise all its
//! operations overlap at some instant — a *backward* zone, from the latest
//! invocation to the earliest completion. The history is linearizable exactly
//! when no read completed before its write was invoked, no read saw a value
//! nobody wrote, no two forward zones overlap, and no backward zone lies inside a
//! forward one (the zone characterisation of Gibbons & Korach's algorithm, as
//! stated by Golab, Li & Shah, 2011).
//!
//! Indeterminate operations fit in: a read whose result is unknown is already
//! gone (it constrains nothing), an indeterminate write nobody read may never
//! have happened and is left out, and one that was read happened at some point
//! after its invocation — its completion is at infinity.
//!
//! A violation is always between at most two clusters, and those clusters'
//! operations alone are not linearizable: [`Zones::Violation`] names them, so the
//! search can explain the violation on a handful of operations.

use super::fx::FxMap;
use super::model::{RegisterOp, Val};
use super::search::LinOp;

/// The fast path's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Zones {
    Linearizable,
    /// These operations (indices, ascending) alone cannot be linearized.
    Violation(Vec<usize>),
}

/// A write and the reads of its value, with its zone's ends.
struct Cluster {
    ops: Vec<usize>,
    /// Earliest completion.
    lo: usize,
    /// Latest invocation.
    hi: usize,
}

/// Invocations and completions on one clock where the initial value's write is
/// at 0 and a missing completion at infinity.
fn start(o: &LinOp<RegisterOp>) -> usize {
    o.invoke + 1
}

fn finish(o: &LinOp<RegisterOp>) -> usize {
    o.complete.map_or(usize::MAX, |c| c + 1)
}

/// Decide a register's operations by their zones, when no cas is among them and
/// every write wrote a value of its own (not the initial one); `None` otherwise.
pub(super) fn decide(ops: &[LinOp<RegisterOp>], init: Val) -> Option<Zones> {
    // Cluster 0 is the initial value's; written value v's is writer[v].
    let mut writer: FxMap<Val, usize> = FxMap::default();
    let mut clusters = vec![Cluster {
        ops: Vec::new(),
        lo: 0,
        hi: 0,
    }];
    for (i, o) in ops.iter().enumerate() {
        match o.op {
            RegisterOp::Cas { .. } => return None,
            RegisterOp::Write(v) => {
                if v == init || writer.insert(v, clusters.len()).is_some() {
                    return None;
                }
                clusters.push(Cluster {
                    ops: vec![i],
                    lo: finish(o),
                    hi: start(o),
                });
            }
            RegisterOp::Read(_) => {}
        }
    }
    let mut read_any = vec![false; clusters.len()];
    for (i, o) in ops.iter().enumerate() {
        let RegisterOp::Read(Some(v)) = o.op else {
            continue;
        };
        let c = if v == init {
            0
        } else {
            match writer.get(&v) {
                Some(&c) => c,
                None => return Some(Zones::Violation(vec![i])),
            }
        };
        if c != 0 {
            let w = clusters[c].ops[0];
            if finish(o) < start(&ops[w]) {
                return Some(Zones::Violation(sorted(vec![w, i])));
            }
        }
        let cluster = &mut clusters[c];
        cluster.ops.push(i);
        cluster.lo = cluster.lo.min(finish(o));
        cluster.hi = cluster.hi.max(start(o));
        read_any[c] = true;
    }
    // A cluster without reads: the initial value's says nothing, and an
    // indeterminate write nobody read may never have happened.
    let live = |c: usize| read_any[c] || (c != 0 && ops[clusters[c].ops[0]].complete.is_some());
    let (mut forward, mut backward): (Vec<usize>, Vec<usize>) = (0..clusters.len())
        .filter(|&c| live(c))
        .partition(|&c| clusters[c].lo < clusters[c].hi);
    forward.sort_by_key(|&c| clusters[c].lo);
    for pair in forward.windows(2) {
        let (a, b) = (&clusters[pair[0]], &clusters[pair[1]]);
        if b.lo < a.hi {
            return Some(Zones::Violation(both(a, b)));
        }
    }
    backward.sort_by_key(|&c| clusters[c].hi);
    for &c in &backward {
        let b = &clusters[c];
        // The forward zone that starts last at or before this one: the only one
        // that can contain it (forward zones are disjoint).
        let k = forward.partition_point(|&f| clusters[f].lo <= b.hi);
        if let Some(&f) = k.checked_sub(1).map(|k| &forward[k]) {
            let z = &clusters[f];
            if b.lo <= z.hi {
                return Some(Zones::Violation(both(z, b)));
            }
        }
    }
    Some(Zones::Linearizable)
}

fn sorted(mut v: Vec<usize>) -> Vec<usize> {
    v.sort_unstable();
    v
}

fn both(a: &Cluster, b: &Cluster) -> Vec<usize> {
    sorted(a.ops.iter().chain(&b.ops).copied().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (op, invoke, complete) on one clock.
    fn ops(list: &[(RegisterOp, usize, Option<usize>)]) -> Vec<LinOp<RegisterOp>> {
        list.iter()
            .map(|&(op, invoke, complete)| LinOp {
                op,
                invoke,
                complete,
            })
            .collect()
    }

    use RegisterOp::{Read, Write};
    const NIL: Val = 0;

    #[test]
    fn only_unique_writes_without_cas() {
        let cas = RegisterOp::Cas {
            from: 1,
            to: 2,
            outcome: super::super::model::CasOutcome::Ok,
        };
        assert_eq!(decide(&ops(&[(cas, 0, Some(1))]), NIL), None);
        let twice = ops(&[(Write(1), 0, Some(1)), (Write(1), 2, Some(3))]);
        assert_eq!(decide(&twice, NIL), None);
        assert_eq!(decide(&ops(&[(Write(7), 0, Some(1))]), 7), None);
        assert_eq!(
            decide(&ops(&[(Write(7), 0, Some(1))]), NIL),
            Some(Zones::Linearizable)
        );
    }

    #[test]
    fn reads_of_unwritten_values_and_reads_before_their_write() {
        let h = ops(&[(Write(1), 0, Some(1)), (Read(Some(2)), 2, Some(3))]);
        assert_eq!(decide(&h, NIL), Some(Zones::Violation(vec![1])));
        let h = ops(&[(Read(Some(1)), 0, Some(1)), (Write(1), 2, Some(3))]);
        assert_eq!(decide(&h, NIL), Some(Zones::Violation(vec![0, 1])));
        // Concurrent with its write: fine.
        let h = ops(&[(Read(Some(1)), 0, Some(2)), (Write(1), 1, Some(3))]);
        assert_eq!(decide(&h, NIL), Some(Zones::Linearizable));
    }

    #[test]
    fn overlapping_forward_zones() {
        // w1 then r1 later: value 1 holds over [1, 4]; w2 then r2 later holds over
        // [3, 6]: they overlap.
        let h = ops(&[
            (Write(1), 0, Some(1)),
            (Write(2), 2, Some(3)),
            (Read(Some(1)), 4, Some(5)),
            (Read(Some(2)), 6, Some(7)),
        ]);
        assert_eq!(decide(&h, NIL), Some(Zones::Violation(vec![0, 1, 2, 3])));
        // Sequential: fine.
        let h = ops(&[
            (Write(1), 0, Some(1)),
            (Read(Some(1)), 2, Some(3)),
            (Write(2), 4, Some(5)),
            (Read(Some(2)), 6, Some(7)),
        ]);
        assert_eq!(decide(&h, NIL), Some(Zones::Linearizable));
    }

    #[test]
    fn a_write_inside_another_value_s_forward_zone() {
        // Value 1 must hold over [1, 6]; a write of 2 sits entirely inside it.
        let h = ops(&[
            (Write(1), 0, Some(1)),
            (Write(2), 2, Some(3)),
            (Read(Some(1)), 6, Some(7)),
        ]);
        assert_eq!(decide(&h, NIL), Some(Zones::Violation(vec![0, 1, 2])));
        // The initial value's zone: a write completed before a read of nil began.
        let h = ops(&[(Write(2), 0, Some(1)), (Read(Some(NIL)), 2, Some(3))]);
        assert_eq!(decide(&h, NIL), Some(Zones::Violation(vec![0, 1])));
        // The same write indeterminate, unread: it may never have happened.
        let h = ops(&[(Write(2), 0, None), (Read(Some(NIL)), 2, Some(3))]);
        assert_eq!(decide(&h, NIL), Some(Zones::Linearizable));
        // Indeterminate and read: it happened, some time after its invocation.
        let h = ops(&[
            (Write(2), 0, None),
            (Read(Some(2)), 1, Some(2)),
            (Read(Some(NIL)), 3, Some(4)),
        ]);
        assert_eq!(decide(&h, NIL), Some(Zones::Violation(vec![0, 1, 2])));
    }
}
