//! Rows of small integers stored once by content, so that a model whose state is
//! a row — a value per key (the multi-register, the kv store as one state), a
//! set's bits, a queue's elements — has a `u32` state, equal exactly when the
//! rows are. One arena per search: keys searched in parallel share nothing, and
//! it is freed in one piece with the search.

use super::fx::{FxMap, mix};

/// A row in a [`Rows`] arena.
pub type RowId = u32;

const NONE: u32 = u32::MAX;

/// One search's rows.
#[derive(Debug, Default)]
pub struct Rows {
    /// Row `i` is `data[start[i]..start[i] + len[i]]`, or, when every row has
    /// the same `width`, `data[i·width..(i+1)·width]`.
    data: Vec<u32>,
    width: Option<usize>,
    start: Vec<u32>,
    len: Vec<u32>,
    hashes: Vec<u64>,
    /// The previous row with the same hash.
    same: Vec<RowId>,
    by_hash: FxMap<u64, RowId>,
    /// Room to build the next row in, without allocating.
    pub scratch: Vec<u32>,
}

/// A row's hash, for rows interned with [`Rows::intern`].
pub fn hash(row: &[u32]) -> u64 {
    row.iter()
        .fold(row.len() as u64, |h, &x| mix(h ^ x as u64).rotate_left(7))
}

impl Rows {
    /// Rows of `width` values each (before the first row is stored): a row is
    /// found without looking up where it starts.
    pub fn fixed(&mut self, width: usize) {
        debug_assert!(self.hashes.is_empty());
        self.width = Some(width);
    }

    #[inline]
    pub fn get(&self, id: RowId) -> &[u32] {
        match self.width {
            Some(w) => &self.data[id as usize * w..(id as usize + 1) * w],
            None => {
                let s = self.start[id as usize] as usize;
                &self.data[s..s + self.len[id as usize] as usize]
            }
        }
    }

    /// The hash the row was interned with.
    pub fn hash_of(&self, id: RowId) -> u64 {
        self.hashes[id as usize]
    }

    /// The id of `row`, stored if new.
    pub fn intern(&mut self, row: &[u32]) -> RowId {
        self.intern_hashed(hash(row), row)
    }

    /// The id of the scratch row.
    pub fn intern_scratch(&mut self) -> RowId {
        let scratch = std::mem::take(&mut self.scratch);
        let id = self.intern(&scratch);
        self.scratch = scratch;
        id
    }

    /// The id of `row`, whose hash (by the caller's own function, used for every
    /// row of this arena) is `hash`.
    pub fn intern_hashed(&mut self, hash: u64, row: &[u32]) -> RowId {
        let head = self.by_hash.get(&hash).copied().unwrap_or(NONE);
        let mut c = head;
        while c != NONE {
            if self.get(c) == row {
                return c;
            }
            c = self.same[c as usize];
        }
        let id = self.hashes.len() as RowId;
        if self.width.is_none() {
            self.start.push(self.data.len() as u32);
            self.len.push(row.len() as u32);
        }
        self.data.extend_from_slice(row);
        self.hashes.push(hash);
        self.same.push(head);
        self.by_hash.insert(hash, id);
        id
    }

    /// Bytes held, charged to the memory budget (with the table's control bytes).
    pub fn bytes(&self) -> usize {
        self.data.capacity() * 4
            + (self.start.capacity() + self.len.capacity() + self.same.capacity()) * 4
            + self.hashes.capacity() * 8
            + self.by_hash.capacity() * 13
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_stored_once_by_content() {
        let mut r = Rows::default();
        let a = r.intern(&[1, 2, 3]);
        let b = r.intern(&[1, 2]);
        let e = r.intern(&[]);
        assert_eq!(r.intern(&[1, 2, 3]), a);
        r.scratch.clear();
        r.scratch.extend_from_slice(&[1, 2]);
        assert_eq!(r.intern_scratch(), b);
        assert_ne!(a, b);
        assert_eq!(
            (r.get(a), r.get(b), r.get(e)),
            (&[1, 2, 3][..], &[1, 2][..], &[][..])
        );
        // Fixed-width rows.
        let mut f = Rows::default();
        f.fixed(2);
        let (p, q) = (f.intern(&[1, 2]), f.intern(&[3, 4]));
        assert_eq!(f.intern(&[3, 4]), q);
        assert_eq!((f.get(p), f.get(q)), (&[1, 2][..], &[3, 4][..]));
        // Colliding hashes are told apart by content.
        let x = r.intern_hashed(7, &[9]);
        let y = r.intern_hashed(7, &[8]);
        assert_ne!(x, y);
        assert_eq!(r.intern_hashed(7, &[9]), x);
    }
}
