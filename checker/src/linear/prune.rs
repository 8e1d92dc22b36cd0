//! Operations the search can leave out without changing the verdict: each one
//! only multiplies the configurations to explore.
//!
//! - **Inert operations** (any model): an operation that accepts every state and
//!   changes none — a read whose result is unknown — fits wherever it is placed.
//! - **Unobservable indeterminate writes** (registers): an indeterminate `write v`,
//!   or an indeterminate `cas` to `v`, when no read returned `v` and no cas that
//!   may have happened expected `v`. Had it taken effect, nothing could have seen
//!   `v` before the next write: whatever ran in between would have run the same
//!   without it (an indeterminate cas that then matched can as well never have
//!   happened), so it can be taken as never having happened. Dropping an
//!   indeterminate cas may leave its expected value unobserved in turn, so this
//!   runs to a fixpoint. Not with failed cas read as observations (Jepsen log
//!   histories): such a cas sees every value but one.

use super::model::{CasOutcome, Model, RegisterOp, Val};
use super::split::Part;

/// Leave out the inert operations.
pub(super) fn inert<M: Model>(model: &M, part: &mut Part<'_, M::Op>) {
    let keep: Vec<bool> = part.ops.iter().map(|o| !model.inert(&o.op)).collect();
    part.retain(&keep);
}

/// Leave out the indeterminate register writes whose value nothing observes.
pub(super) fn unobservable(part: &mut Part<'_, RegisterOp>) {
    let observes = |op: &RegisterOp| match *op {
        RegisterOp::Read(Some(v)) => Some(v),
        RegisterOp::Cas { from, outcome, .. } if outcome != CasOutcome::Failed => Some(from),
        _ => None,
    };
    let writes = |op: &RegisterOp| match *op {
        RegisterOp::Write(v) => Some(v),
        RegisterOp::Cas {
            to,
            outcome: CasOutcome::Unknown,
            ..
        } => Some(to),
        _ => None,
    };
    let ops = &part.ops;
    if ops.iter().any(|o| {
        matches!(
            o.op,
            RegisterOp::Cas {
                outcome: CasOutcome::Failed,
                ..
            }
        )
    }) {
        return;
    }
    let mut seen: super::fx::FxMap<Val, usize> = Default::default();
    for o in ops {
        if let Some(v) = observes(&o.op) {
            *seen.entry(v).or_default() += 1;
        }
    }
    let mut keep = vec![true; ops.len()];
    loop {
        let mut changed = false;
        for (i, o) in ops.iter().enumerate() {
            if !keep[i] || o.complete.is_some() {
                continue;
            }
            let Some(v) = writes(&o.op) else { continue };
            if seen.get(&v).copied().unwrap_or(0) > 0 {
                continue;
            }
            keep[i] = false;
            changed = true;
            if let Some(from) = observes(&o.op) {
                *seen.entry(from).or_default() -= 1;
            }
        }
        if !changed {
            break;
        }
    }
    part.retain(&keep);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linear::search::LinOp;

    fn part(ops: Vec<(RegisterOp, Option<usize>)>) -> Part<'static, RegisterOp> {
        Part::bare(
            ops.into_iter()
                .enumerate()
                .map(|(i, (op, complete))| LinOp {
                    op,
                    invoke: i,
                    complete,
                })
                .collect(),
        )
    }

    #[test]
    fn drops_indeterminate_writes_nothing_observes_to_a_fixpoint() {
        let cas = |from, to, outcome| RegisterOp::Cas { from, to, outcome };
        let mut p = part(vec![
            (RegisterOp::Write(1), None),           // read below: kept
            (RegisterOp::Write(2), None),           // nobody reads 2
            (cas(3, 4, CasOutcome::Unknown), None), // nobody reads 4
            (RegisterOp::Write(3), None),           // only that cas read 3
            (RegisterOp::Write(5), Some(20)),       // determinate: kept
            (cas(1, 6, CasOutcome::Ok), Some(21)),  // determinate
            (RegisterOp::Read(Some(1)), Some(22)),
        ]);
        unobservable(&mut p);
        let left: Vec<RegisterOp> = p.ops.iter().map(|o| o.op).collect();
        assert_eq!(
            left,
            vec![
                RegisterOp::Write(1),
                RegisterOp::Write(5),
                cas(1, 6, CasOutcome::Ok),
                RegisterOp::Read(Some(1)),
            ]
        );
        // A failed cas read as an observation sees every value but one: nothing goes.
        let mut p = part(vec![
            (RegisterOp::Write(2), None),
            (cas(1, 3, CasOutcome::Failed), Some(5)),
        ]);
        unobservable(&mut p);
        assert_eq!(p.ops.len(), 2);
    }
}
