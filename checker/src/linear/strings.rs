//! The kv models' strings. Every search step on a string store used to build a
//! string, and the memo keeps thousands of them; allocating and freeing them was
//! most of the work. Here the history's string values are interned once
//! ([`Texts`]), and each search keeps its strings in an arena ([`Strings`]): a
//! string is an append of one text to an earlier string, and strings are
//! hash-consed by content, so a state is a `u32` that is equal exactly when the
//! strings are. Appending is one table lookup in the common case (the same append
//! from the same string was done before), and the arena is freed in one piece with
//! the search.

use super::fx::{FxMap, mix};

const BASE: u64 = 0x100_0000_01b3;
/// No string (or store): the end of a chain.
pub(super) const NONE: u32 = u32::MAX;
const TAG: u64 = 0xffff_ffff_0000_0000;

fn tag(hash: u64) -> u64 {
    mix(hash) << 32
}

/// An interned string value of the history.
pub type TextId = u32;

/// A string's polynomial hash and `BASE^len`, so that
/// `hash(a + b) = hash(a)·BASE^|b| + hash(b)`.
fn poly(s: &str) -> (u64, u64) {
    let mut h = 0u64;
    let mut pow = 1u64;
    for b in s.bytes() {
        h = h.wrapping_mul(BASE).wrapping_add(b as u64 + 1);
        pow = pow.wrapping_mul(BASE);
    }
    (h, pow)
}

#[derive(Debug, Clone, Copy)]
struct Span {
    start: u32,
    len: u32,
    hash: u64,
    pow: u64,
}

/// The distinct string values of a history's operations, in one buffer.
#[derive(Debug, Clone, Default)]
pub struct Texts {
    buf: String,
    spans: Vec<Span>,
}

/// Builds [`Texts`], giving equal strings one id.
#[derive(Default)]
pub struct TextsBuilder<'a> {
    texts: Texts,
    ids: FxMap<&'a str, TextId>,
}

impl<'a> TextsBuilder<'a> {
    pub fn intern(&mut self, s: &'a str) -> TextId {
        let texts = &mut self.texts;
        *self.ids.entry(s).or_insert_with(|| {
            let (hash, pow) = poly(s);
            texts.spans.push(Span {
                start: texts.buf.len() as u32,
                len: s.len() as u32,
                hash,
                pow,
            });
            texts.buf.push_str(s);
            (texts.spans.len() - 1) as TextId
        })
    }

    pub fn finish(self) -> Texts {
        self.texts
    }
}

impl Texts {
    pub fn get(&self, t: TextId) -> &str {
        let s = self.spans[t as usize];
        &self.buf[s.start as usize..(s.start + s.len) as usize]
    }

    fn span(&self, t: TextId) -> Span {
        self.spans[t as usize]
    }
}

/// A string in a [`Strings`] arena; `EMPTY` is the empty string.
pub type StrId = u32;
pub const EMPTY: StrId = 0;

/// A string: `prev` with the text `text` appended.
#[derive(Debug, Clone, Copy)]
struct Piece {
    prev: StrId,
    text: TextId,
    len: u32,
    /// The string made before it with the same hash (a collision chain).
    same: StrId,
    hash: u64,
}

/// One search's strings, each stored once by content.
#[derive(Debug)]
pub struct Strings {
    pieces: Vec<Piece>,
    /// Open addressing by hash, at most half full: each slot holds the high
    /// half of a hash and 1 + the last string made with it (then via
    /// `Piece::same`); 0 if empty.
    by_content: Vec<u64>,
    /// Slots in use.
    used: usize,
    /// (string, text appended) → the result, when that is a string first made
    /// another way.
    by_shape: FxMap<(StrId, TextId), StrId>,
    /// Per text: the string equal to it, once seen (`NONE` until then).
    equal_to: Vec<StrId>,
}

impl Default for Strings {
    fn default() -> Self {
        Strings {
            pieces: vec![Piece {
                prev: NONE,
                text: NONE,
                len: 0,
                same: NONE,
                hash: 0,
            }],
            by_shape: FxMap::default(),
            by_content: vec![0; 256],
            used: 0,
            equal_to: Vec::new(),
        }
    }
}

/// Do two byte strings, given as chunks from their ends backwards, agree?
fn same_bytes<'a>(
    mut a: impl Iterator<Item = &'a [u8]>,
    mut b: impl Iterator<Item = &'a [u8]>,
) -> bool {
    let (mut x, mut y): (&[u8], &[u8]) = (&[], &[]);
    loop {
        while x.is_empty() {
            match a.next() {
                Some(c) => x = c,
                None => return y.is_empty() && b.all(<[u8]>::is_empty),
            }
        }
        while y.is_empty() {
            match b.next() {
                Some(c) => y = c,
                None => return false,
            }
        }
        let n = x.len().min(y.len());
        if x[x.len() - n..] != y[y.len() - n..] {
            return false;
        }
        x = &x[..x.len() - n];
        y = &y[..y.len() - n];
    }
}

impl Strings {
    fn len(&self, s: StrId) -> u32 {
        self.pieces[s as usize].len
    }

    fn hash(&self, s: StrId) -> u64 {
        self.pieces[s as usize].hash
    }

    /// The string's bytes as the texts appended, last first.
    fn chunks<'a>(&'a self, texts: &'a Texts, s: StrId) -> impl Iterator<Item = &'a [u8]> {
        let mut cur = s;
        std::iter::from_fn(move || {
            if cur == EMPTY {
                return None;
            }
            let p = self.pieces[cur as usize];
            cur = p.prev;
            Some(texts.get(p.text).as_bytes())
        })
    }

    /// `s` with `t` appended.
    pub fn append(&mut self, texts: &Texts, s: StrId, t: TextId) -> StrId {
        let span = texts.span(t);
        if span.len == 0 {
            return s;
        }
        let hash = self.hash(s).wrapping_mul(span.pow).wrapping_add(span.hash);
        let len = self.len(s) + span.len;
        let slot = self.slot(hash);
        let head = (self.by_content[slot] as u32).wrapping_sub(1);
        // Usually this very append was done before: the string's first piece
        // is (s, t). Another way to the same bytes (a put of what appends
        // built) is compared byte by byte once, then remembered.
        let mut c = head;
        while c != NONE {
            let p = self.pieces[c as usize];
            if p.prev == s && p.text == t {
                return c;
            }
            c = p.same;
        }
        if head != NONE {
            if let Some(&r) = self.by_shape.get(&(s, t)) {
                return r;
            }
            let mut c = head;
            while c != NONE {
                let tail = std::iter::once(texts.get(t).as_bytes());
                if self.len(c) == len
                    && same_bytes(self.chunks(texts, c), tail.chain(self.chunks(texts, s)))
                {
                    self.by_shape.insert((s, t), c);
                    return c;
                }
                c = self.pieces[c as usize].same;
            }
        }
        let id = self.pieces.len() as StrId;
        self.pieces.push(Piece {
            prev: s,
            text: t,
            len,
            same: head,
            hash,
        });
        self.by_content[slot] = tag(hash) | (id as u64 + 1);
        if head == NONE {
            self.used += 1;
            if self.used * 2 > self.by_content.len() {
                self.grow(self.by_content.len() * 2);
            }
        }
        id
    }

    /// The slot for `hash`: the one holding its strings, or the empty one
    /// where they would go.
    fn slot(&self, hash: u64) -> usize {
        let mask = self.by_content.len() - 1;
        let mut i = mix(hash) as usize & mask;
        loop {
            let slot = self.by_content[i];
            if slot == 0
                || (slot & TAG == tag(hash) && self.pieces[(slot as u32 - 1) as usize].hash == hash)
            {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self, slots: usize) {
        let old = std::mem::replace(&mut self.by_content, vec![0; slots]);
        for slot in old.into_iter().filter(|&s| s != 0) {
            let i = self.slot(self.pieces[(slot as u32 - 1) as usize].hash);
            self.by_content[i] = slot;
        }
    }

    /// Is `s` the text `t`?
    pub fn equals(&mut self, texts: &Texts, s: StrId, t: TextId) -> bool {
        if self.equal_to.len() <= t as usize {
            self.equal_to.resize(t as usize + 1, NONE);
        }
        let known = self.equal_to[t as usize];
        if known != NONE {
            return known == s;
        }
        let span = texts.span(t);
        let eq = self.len(s) == span.len
            && self.hash(s) == span.hash
            && same_bytes(
                self.chunks(texts, s),
                std::iter::once(texts.get(t).as_bytes()),
            );
        if eq {
            self.equal_to[t as usize] = s;
        }
        eq
    }

    /// Make room for `n` strings in all.
    pub(super) fn reserve(&mut self, n: usize) {
        self.pieces.reserve(n.saturating_sub(self.pieces.len()));
        let slots = (n * 2).next_power_of_two();
        if slots > self.by_content.len() {
            self.grow(slots);
        }
    }

    pub fn to_text(&self, texts: &Texts, s: StrId) -> String {
        let mut parts: Vec<&[u8]> = self.chunks(texts, s).collect();
        parts.reverse();
        String::from_utf8_lossy(&parts.concat()).into_owned()
    }

    /// Bytes held, charged to the memory budget.
    pub(super) fn bytes(&self) -> usize {
        // Pieces, tables, and the map's entries with hashbrown's control byte.
        self.pieces.capacity() * size_of::<Piece>()
            + self.by_shape.capacity() * 17
            + self.by_content.len() * 8
            + self.equal_to.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_stored_once_by_content() {
        let mut b = TextsBuilder::default();
        let (a, c, ac, x, ac3, empty) = (
            b.intern("x 1 y"),
            b.intern("x 2 y"),
            b.intern("x 1 yx 2 y"),
            b.intern("x 1"),
            b.intern(" yx 2 y"),
            b.intern(""),
        );
        let texts = b.finish();
        let mut s = Strings::default();
        let s1 = s.append(&texts, EMPTY, a);
        let s1 = s.append(&texts, s1, c);
        let s2 = s.append(&texts, EMPTY, ac);
        assert_eq!(s1, s2);
        let s3 = s.append(&texts, EMPTY, x);
        let s3 = s.append(&texts, s3, ac3);
        assert_eq!(s1, s3);
        let only_a = s.append(&texts, EMPTY, a);
        assert_ne!(s1, only_a);
        assert_eq!(s.append(&texts, only_a, empty), only_a);
        assert!(s.equals(&texts, s1, ac) && !s.equals(&texts, s1, a));
        assert!(s.equals(&texts, s3, ac) && !s.equals(&texts, only_a, ac));
        assert_eq!(s.to_text(&texts, s1), "x 1 yx 2 y");
        assert!(s.equals(&texts, EMPTY, empty));
        assert!(!s.equals(&texts, only_a, empty));
    }
}
