//! Knossos's multi-register: registers by key, read and written by transactions
//! (`:txn` of `[:read k v]` and `[:write k v]` micro-operations, applied in
//! order, atomically). A read of `nil` is always legal (its value is unknown, as
//! in a transaction that never completed); a key never written holds `nil`, or
//! its initial value. The state is a value per key, a row in the search's
//! [`Rows`] arena.

use super::model::{Model, Val, name};
use super::rows::{RowId, Rows};

/// One micro-operation: the key's number and the value (`None`: a read whose
/// value is unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Micro {
    Read(u32, Option<Val>),
    Write(u32, Val),
}

/// A transaction, with the values its reads returned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Txn(pub Box<[Micro]>);

/// Registers by key.
#[derive(Debug, Clone, Default)]
pub struct MultiRegister {
    /// Key names, by number.
    pub keys: Vec<String>,
    /// Value names, by id.
    pub names: Vec<String>,
    /// Each key's value before any transaction.
    pub init: Vec<Val>,
}

impl Model for MultiRegister {
    type Op = Txn;
    type State = RowId;
    type Arena = Rows;

    fn init(&self, rows: &mut Rows) -> RowId {
        rows.fixed(self.init.len());
        rows.intern(&self.init)
    }

    fn step(&self, rows: &mut Rows, s: &RowId, txn: &Txn) -> Option<RowId> {
        let mut scratch = std::mem::take(&mut rows.scratch);
        scratch.clear();
        scratch.extend_from_slice(rows.get(*s));
        let mut fits = true;
        for m in txn.0.iter() {
            match *m {
                Micro::Read(k, Some(v)) if scratch[k as usize] != v => {
                    fits = false;
                    break;
                }
                Micro::Read(..) => {}
                Micro::Write(k, v) => scratch[k as usize] = v,
            }
        }
        rows.scratch = scratch;
        fits.then(|| rows.intern_scratch())
    }

    fn inert(&self, txn: &Txn) -> bool {
        txn.0.iter().all(|m| matches!(m, Micro::Read(_, None)))
    }

    fn describe_op(&self, txn: &Txn) -> String {
        let micros: Vec<String> = txn
            .0
            .iter()
            .map(|m| match *m {
                Micro::Read(k, Some(v)) => {
                    format!("read {} → {}", self.keys[k as usize], name(&self.names, v))
                }
                Micro::Read(k, None) => format!("read {} → ?", self.keys[k as usize]),
                Micro::Write(k, v) => {
                    format!("write {} {}", self.keys[k as usize], name(&self.names, v))
                }
            })
            .collect();
        format!("txn [{}]", micros.join(", "))
    }

    fn describe_state(&self, rows: &Rows, s: &RowId) -> String {
        let kv: Vec<String> = self
            .keys
            .iter()
            .zip(rows.get(*s))
            .map(|(k, &v)| format!("{k}: {}", name(&self.names, v)))
            .collect();
        format!("{{{}}}", kv.join(", "))
    }

    fn arena_bytes(&self, rows: &Rows) -> usize {
        rows.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linear::model::NIL;

    #[test]
    fn transactions_apply_in_order_and_nil_reads_match_anything() {
        let m = MultiRegister {
            keys: vec!["x".into(), "y".into()],
            names: vec!["nil".into(), "0".into(), "1".into()],
            init: vec![1, NIL],
        };
        let mut rows = Rows::default();
        let s0 = m.init(&mut rows);
        let txn = |ms: &[Micro]| Txn(ms.into());
        // Reads see the writes before them in the same transaction.
        let t = txn(&[
            Micro::Read(0, Some(1)),
            Micro::Write(1, 2),
            Micro::Read(1, Some(2)),
        ]);
        let s1 = m.step(&mut rows, &s0, &t).unwrap();
        assert_eq!(m.describe_state(&rows, &s1), "{x: 0, y: 1}");
        assert_eq!(
            m.step(&mut rows, &s0, &txn(&[Micro::Read(1, Some(2))])),
            None
        );
        assert_eq!(
            m.step(&mut rows, &s0, &txn(&[Micro::Read(1, None)])),
            Some(s0)
        );
        assert_eq!(
            m.step(&mut rows, &s0, &txn(&[Micro::Read(1, Some(NIL))])),
            Some(s0)
        );
        // Equal states are one id, however they were reached.
        let back = m
            .step(&mut rows, &s1, &txn(&[Micro::Write(1, NIL)]))
            .unwrap();
        assert_eq!(back, s0);
        assert!(m.inert(&txn(&[Micro::Read(0, None)])));
        assert!(!m.inert(&t));
        assert_eq!(m.describe_op(&t), "txn [read x → 0, write y 1, read y → 1]");
    }
}
