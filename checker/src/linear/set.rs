//! Knossos's set: `add` an element, `read` the whole set, which must be exactly
//! the elements added (a read that never completed says nothing and is left
//! out). Empty initially, or the elements given. The state is a bitset over the
//! history's distinct elements, a row in the search's [`Rows`] arena.

use super::model::{Model, Val, name};
use super::rows::{RowId, Rows};

/// An operation on a set: the element added, or the bitset of the set read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SetOp {
    Add(Val),
    Read(Box<[u32]>),
}

/// A set of the history's values.
#[derive(Debug, Clone, Default)]
pub struct Set {
    /// Element names, by id.
    pub names: Vec<String>,
    /// The elements before any operation, as a bitset of [`Set::words`] words.
    pub init: Box<[u32]>,
}

impl Set {
    /// Words of a bitset over `elements` distinct elements.
    pub fn words(elements: usize) -> usize {
        elements.div_ceil(32)
    }

    /// The bitset of `elements` (ids below `32 × words`).
    pub fn bits(words: usize, elements: impl IntoIterator<Item = Val>) -> Box<[u32]> {
        let mut bits = vec![0u32; words];
        for e in elements {
            bits[e as usize / 32] |= 1 << (e % 32);
        }
        bits.into()
    }

    fn describe_bits(&self, bits: &[u32]) -> String {
        let elements: Vec<&str> = (0..bits.len() * 32)
            .filter(|&e| bits[e / 32] & (1 << (e % 32)) != 0)
            .map(|e| name(&self.names, e as Val))
            .collect();
        format!("#{{{}}}", elements.join(" "))
    }
}

impl Model for Set {
    type Op = SetOp;
    type State = RowId;
    type Arena = Rows;

    fn init(&self, rows: &mut Rows) -> RowId {
        rows.fixed(self.init.len());
        rows.intern(&self.init)
    }

    fn step(&self, rows: &mut Rows, s: &RowId, op: &SetOp) -> Option<RowId> {
        match op {
            SetOp::Read(bits) => (rows.get(*s) == &bits[..]).then_some(*s),
            SetOp::Add(e) => {
                let (word, bit) = (*e as usize / 32, 1 << (e % 32));
                if rows.get(*s)[word] & bit != 0 {
                    return Some(*s);
                }
                let mut scratch = std::mem::take(&mut rows.scratch);
                scratch.clear();
                scratch.extend_from_slice(rows.get(*s));
                scratch[word] |= bit;
                rows.scratch = scratch;
                Some(rows.intern_scratch())
            }
        }
    }

    fn describe_op(&self, op: &SetOp) -> String {
        match op {
            SetOp::Add(e) => format!("add {}", name(&self.names, *e)),
            SetOp::Read(bits) => format!("read → {}", self.describe_bits(bits)),
        }
    }

    fn describe_state(&self, rows: &Rows, s: &RowId) -> String {
        self.describe_bits(rows.get(*s))
    }

    fn arena_bytes(&self, rows: &Rows) -> usize {
        rows.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_accumulate_and_a_read_sees_exactly_the_set() {
        let names: Vec<String> = ["nil", "1", "2", "3"].map(String::from).into();
        let words = Set::words(names.len());
        let m = Set {
            init: Set::bits(words, [3]),
            names,
        };
        let mut rows = Rows::default();
        let s0 = m.init(&mut rows);
        let s1 = m.step(&mut rows, &s0, &SetOp::Add(1)).unwrap();
        assert_eq!(m.step(&mut rows, &s1, &SetOp::Add(1)), Some(s1));
        let read = |es: &[Val]| SetOp::Read(Set::bits(words, es.iter().copied()));
        assert_eq!(m.step(&mut rows, &s1, &read(&[1, 3])), Some(s1));
        assert_eq!(m.step(&mut rows, &s1, &read(&[1])), None);
        assert_eq!(m.step(&mut rows, &s1, &read(&[1, 2, 3])), None);
        // The same set by another order of adds is the same state.
        let a = m.step(&mut rows, &s1, &SetOp::Add(2)).unwrap();
        let b = m.step(&mut rows, &s0, &SetOp::Add(2)).unwrap();
        assert_eq!(m.step(&mut rows, &b, &SetOp::Add(1)), Some(a));
        assert_eq!(m.describe_state(&rows, &a), "#{1 2 3}");
        assert_eq!(m.describe_op(&read(&[])), "read → #{}");
    }
}
