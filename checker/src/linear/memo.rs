//! The search's memo (Lowe's): the configurations already explored, so that none
//! is explored twice.
//!
//! A configuration is (the determinate operations linearized, the indeterminate
//! ones linearized, the model state). Determinate operations and the state are
//! compared exactly. Indeterminate operations — `info`, or never completed — have
//! no return the search must reach, so having linearized *fewer* of them is never
//! worse: everything the search can do with more of them done, it can do with
//! fewer, leaving the rest never taken effect. So a configuration is skipped when
//! one with the same determinate set and state and a *subset* of its
//! indeterminate operations was explored (dominance); without indeterminate
//! operations this is Porcupine's exact memo.
//!
//! Each distinct (determinate set, state) is one *key*, in flat arrays, found
//! through an open-addressing table whose slots hold the high half of the key's
//! hash and its id, so a probe that misses touches only the slot table. A key
//! heads a chain of the indeterminate sets explored with it, kept minimal: a new
//! set removes the chain's supersets of it.

/// The memo: keys (bitset, hash, state) by id, and the indeterminate sets of each.
pub(super) struct Memo<S> {
    words: usize,
    info_words: usize,
    hashes: Vec<u64>,
    /// `words` per key.
    bits: Vec<u64>,
    states: Vec<S>,
    /// Per key, its first indeterminate set (`NONE`: none left); empty without
    /// indeterminate operations.
    chain: Vec<u32>,
    /// The indeterminate sets, `info_words` each, and the next set of each one's
    /// chain.
    sets: Vec<u64>,
    next: Vec<u32>,
    slots: Vec<u64>,
    /// Sets explored, counting those later superseded.
    entries: usize,
}

const TAG: u64 = 0xffff_ffff_0000_0000;
const NONE: u32 = u32::MAX;

impl<S: Eq + Copy + Default> Memo<S> {
    /// A memo for `words` words of determinate bitset and `info_words` of
    /// indeterminate bitset.
    pub(super) fn new(words: usize, info_words: usize) -> Self {
        Memo {
            words,
            info_words,
            hashes: Vec::new(),
            bits: Vec::new(),
            states: Vec::new(),
            chain: Vec::new(),
            sets: Vec::new(),
            next: Vec::new(),
            slots: vec![0; 1024],
            entries: 0,
        }
    }

    /// Configurations recorded.
    pub(super) fn len(&self) -> usize {
        self.entries
    }

    /// Bytes a configuration costs at most: a key (bitset, hash, state, chain
    /// head) and an indeterminate set; the slot table is charged apart.
    pub(super) fn entry_bytes(&self) -> usize {
        let key = self.words * 8 + 8 + size_of::<S>() + 4;
        let set = if self.info_words > 0 {
            self.info_words * 8 + 4
        } else {
            0
        };
        key + set
    }

    /// Bytes of the slot table.
    pub(super) fn table_bytes(&self) -> usize {
        self.slots.len() * 8
    }

    /// Must the slot table grow (to twice its size) before the next insert?
    #[inline]
    pub(super) fn full(&self) -> bool {
        (self.hashes.len() + 1) * 2 > self.slots.len()
    }

    /// Make room for `keys` keys, so that growing to them copies nothing.
    pub(super) fn reserve(&mut self, keys: usize) {
        let more = keys.saturating_sub(self.hashes.len());
        self.hashes.reserve(more);
        self.bits.reserve(more * self.words);
        self.states.reserve(more);
        let slots = (keys * 2).next_power_of_two();
        if slots > self.slots.len() {
            self.rehash(slots);
        }
    }

    /// Double the slot table (the caller charges the new table first).
    pub(super) fn grow(&mut self) {
        self.rehash(self.slots.len() * 2);
    }

    /// Record the configuration unless it, or one that dominates it, is known;
    /// true if it is new. `hash` covers `bits` and `state`.
    #[inline(always)]
    pub(super) fn insert(&mut self, hash: u64, bits: &[u64], info: &[u64], state: &S) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = (hash as usize) & mask;
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                break;
            }
            if slot & TAG == hash & TAG {
                let k = (slot as u32 - 1) as usize;
                if self.states[k] == *state
                    && same(&self.bits[k * self.words..(k + 1) * self.words], bits)
                {
                    // Without indeterminate operations, a key is explored once.
                    return self.info_words > 0 && self.add_set(k, info);
                }
            }
            i = (i + 1) & mask;
        }
        if self.full() {
            // The caller did not grow the table: keep it at most half full.
            self.grow();
            return self.insert(hash, bits, info, state);
        }
        let k = self.hashes.len();
        self.slots[i] = (hash & TAG) | (k as u64 + 1);
        self.hashes.push(hash);
        self.bits.extend_from_slice(bits);
        self.states.push(*state);
        if self.info_words == 0 {
            self.entries += 1;
            return true;
        }
        self.chain.push(NONE);
        self.add_set(k, info)
    }

    /// Add `info` to key `k`'s chain unless a subset of it is there; drop the
    /// chain's supersets of it.
    fn add_set(&mut self, k: usize, info: &[u64]) -> bool {
        let w = self.info_words;
        let (mut prev, mut c) = (NONE, self.chain[k]);
        while c != NONE {
            let set = &self.sets[c as usize * w..(c as usize + 1) * w];
            let after = self.next[c as usize];
            if subset(set, info) {
                return false;
            }
            if subset(info, set) {
                // Superseded: whatever it leads to, `info` leads to as well.
                match prev {
                    NONE => self.chain[k] = after,
                    p => self.next[p as usize] = after,
                }
            } else {
                prev = c;
            }
            c = after;
        }
        let id = self.next.len() as u32;
        self.sets.extend_from_slice(info);
        self.next.push(self.chain[k]);
        self.chain[k] = id;
        self.entries += 1;
        true
    }

    fn rehash(&mut self, size: usize) {
        let mut slots = vec![0u64; size];
        let mask = slots.len() - 1;
        for (e, h) in self.hashes.iter().enumerate() {
            let mut i = (*h as usize) & mask;
            while slots[i] != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = (h & TAG) | (e as u64 + 1);
        }
        self.slots = slots;
    }
}

/// Bitset equality, a word at a time (short slices: no memcmp call).
fn same(a: &[u64], b: &[u64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

/// Is every bit of `a` set in `b`?
fn subset(a: &[u64], b: &[u64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x & !y == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_on_determinate_sets_dominated_on_indeterminate_ones() {
        let mut m: Memo<u32> = Memo::new(1, 1);
        assert!(m.insert(7, &[0b01], &[0b010], &3));
        // The same configuration, or one with more indeterminate ops done: known.
        assert!(!m.insert(7, &[0b01], &[0b010], &3));
        assert!(!m.insert(7, &[0b01], &[0b110], &3));
        // Fewer indeterminate ops done, another state or determinate set: new.
        assert!(m.insert(7, &[0b01], &[0b000], &3));
        assert!(m.insert(7, &[0b01], &[0b001], &4));
        assert!(m.insert(7, &[0b11], &[0b001], &4));
        assert_eq!(m.len(), 4);
        // The empty set superseded {1}: anything with key (0b01, 3) is known now.
        assert!(!m.insert(7, &[0b01], &[0b100], &3));
        // Growing keeps every key findable.
        for k in 0..5000u64 {
            assert!(m.insert(k.wrapping_mul(0x9e37_79b9_7f4a_7c15), &[k], &[0], &0));
        }
        assert!(!m.insert(7, &[0b01], &[0b111], &3));
        assert!(!m.insert(
            4999u64.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            &[4999],
            &[1],
            &0
        ));
        // Without indeterminate operations, the memo is exact.
        let mut m: Memo<u32> = Memo::new(1, 0);
        assert!(m.insert(7, &[1], &[], &3));
        assert!(!m.insert(7, &[1], &[], &3));
        assert!(m.insert(7, &[1], &[], &4));
    }
}
