//! The string key-value store of Porcupine's kv histories: per key a string,
//! initially empty; `put` sets it, `append` appends to it, `get` returns it. The
//! strings live in a per-search arena ([`super::strings`]), so a state is a `u32`.

use super::fx::mix;
use super::model::Model;
use super::rows::{RowId, Rows};
use super::strings::{EMPTY, StrId, Strings, TextId, Texts};

/// An operation on a string key-value store (Porcupine's kv model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KvOp {
    /// `key`: the key's number (only [`KvStore`] uses it).
    Get {
        key: u32,
        value: Option<TextId>,
    },
    Put {
        key: u32,
        value: TextId,
    },
    Append {
        key: u32,
        value: TextId,
    },
}

impl KvOp {
    fn key(&self) -> usize {
        let (KvOp::Get { key, .. } | KvOp::Put { key, .. } | KvOp::Append { key, .. }) = self;
        *key as usize
    }
}

fn kv_step(strings: &mut Strings, texts: &Texts, s: StrId, op: &KvOp) -> Option<StrId> {
    match *op {
        KvOp::Get { value: None, .. } => Some(s),
        KvOp::Get { value: Some(v), .. } => strings.equals(texts, s, v).then_some(s),
        KvOp::Put { value, .. } => Some(strings.append(texts, EMPTY, value)),
        KvOp::Append { value, .. } => Some(strings.append(texts, s, value)),
    }
}

fn kv_describe(texts: &Texts, op: &KvOp, keys: Option<&[String]>) -> String {
    let k = keys
        .map(|ks| format!(" {}", ks[op.key()]))
        .unwrap_or_default();
    match *op {
        KvOp::Get { value: Some(v), .. } => format!("get{k} → {:?}", texts.get(v)),
        KvOp::Get { value: None, .. } => format!("get{k} → ?"),
        KvOp::Put { value, .. } => format!("put{k} {:?}", texts.get(value)),
        KvOp::Append { value, .. } => format!("append{k} {:?}", texts.get(value)),
    }
}

/// One key of a string store. The store's keys are independent, so each is
/// checked on its own.
#[derive(Debug, Clone, Default)]
pub struct Kv {
    pub texts: Texts,
}

impl Model for Kv {
    type Op = KvOp;
    type State = StrId;
    type Arena = Strings;
    fn init(&self, _: &mut Strings) -> StrId {
        EMPTY
    }
    fn step(&self, strings: &mut Strings, s: &StrId, op: &KvOp) -> Option<StrId> {
        kv_step(strings, &self.texts, *s, op)
    }
    fn inert(&self, op: &KvOp) -> bool {
        matches!(op, KvOp::Get { value: None, .. })
    }
    fn describe_op(&self, op: &KvOp) -> String {
        kv_describe(&self.texts, op, None)
    }
    fn describe_state(&self, strings: &Strings, s: &StrId) -> String {
        format!("{:?}", strings.to_text(&self.texts, *s))
    }
    fn reserve(&self, strings: &mut Strings, entries: usize) {
        // A new string is only ever made by a step that adds a memo entry.
        strings.reserve(entries + 1);
    }
    fn arena_bytes(&self, strings: &Strings) -> usize {
        strings.bytes()
    }
}

/// The whole store as one state (no split by key): what a checker without
/// P-compositionality must do; kept for comparison with Porcupine's figure.
#[derive(Debug, Clone, Default)]
pub struct KvStore {
    pub keys: Vec<String>,
    pub texts: Texts,
}

/// A whole store, in a [`Stores`] arena: equal exactly when every key's string is.
pub type StoreId = RowId;

/// One search's stores: a string id per key, each store a row stored once by
/// content, hashed as the sum of its keys' (key, string) words so that a step
/// updates the hash in O(1).
#[derive(Debug, Default)]
pub struct Stores {
    strings: Strings,
    rows: Rows,
}

fn keyed(key: usize, s: StrId) -> u64 {
    mix(((key as u64) << 32) | s as u64)
}

impl Model for KvStore {
    type Op = KvOp;
    type State = StoreId;
    type Arena = Stores;
    fn init(&self, stores: &mut Stores) -> StoreId {
        let n = self.keys.len();
        stores.rows.fixed(n);
        let hash = (0..n).fold(0u64, |h, k| h.wrapping_add(keyed(k, EMPTY)));
        stores.rows.intern_hashed(hash, &vec![EMPTY; n])
    }
    fn step(&self, stores: &mut Stores, s: &StoreId, op: &KvOp) -> Option<StoreId> {
        let key = op.key();
        let old = stores.rows.get(*s)[key];
        let new = kv_step(&mut stores.strings, &self.texts, old, op)?;
        if new == old {
            return Some(*s);
        }
        let hash = stores
            .rows
            .hash_of(*s)
            .wrapping_sub(keyed(key, old))
            .wrapping_add(keyed(key, new));
        let rows = &mut stores.rows;
        let mut scratch = std::mem::take(&mut rows.scratch);
        scratch.clear();
        scratch.extend_from_slice(rows.get(*s));
        scratch[key] = new;
        let id = rows.intern_hashed(hash, &scratch);
        rows.scratch = scratch;
        Some(id)
    }
    fn inert(&self, op: &KvOp) -> bool {
        matches!(op, KvOp::Get { value: None, .. })
    }
    fn describe_op(&self, op: &KvOp) -> String {
        kv_describe(&self.texts, op, Some(&self.keys))
    }
    fn describe_state(&self, stores: &Stores, s: &StoreId) -> String {
        let parts: Vec<String> = self
            .keys
            .iter()
            .zip(stores.rows.get(*s))
            .map(|(k, v)| format!("{k}: {:?}", stores.strings.to_text(&self.texts, *v)))
            .collect();
        format!("{{{}}}", parts.join(", "))
    }
    fn arena_bytes(&self, stores: &Stores) -> usize {
        stores.strings.bytes() + stores.rows.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linear::strings::TextsBuilder;

    #[test]
    fn stores_compare_by_every_key() {
        let mut b = TextsBuilder::default();
        let (a, c) = (b.intern("a"), b.intern("c"));
        let m = KvStore {
            keys: vec!["0".into(), "1".into()],
            texts: b.finish(),
        };
        let mut arena = Stores::default();
        let s0 = m.init(&mut arena);
        let put = |key, value| KvOp::Put { key, value };
        let app = |key, value| KvOp::Append { key, value };
        let s1 = m.step(&mut arena, &s0, &put(0, a)).unwrap();
        let s2 = m.step(&mut arena, &s1, &app(1, c)).unwrap();
        let s3 = m.step(&mut arena, &s0, &app(1, c)).unwrap();
        let s4 = m.step(&mut arena, &s3, &app(0, a)).unwrap();
        assert_eq!(s2, s4);
        assert_ne!(s1, s3);
        let get = |key, value| KvOp::Get { key, value };
        assert_eq!(m.step(&mut arena, &s2, &get(0, Some(a))), Some(s2));
        assert_eq!(m.step(&mut arena, &s2, &get(1, Some(a))), None);
        assert_eq!(m.describe_state(&arena, &s4), r#"{0: "a", 1: "c"}"#);
    }
}
