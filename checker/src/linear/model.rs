//! Sequential specifications the search linearizes against.
//!
//! A [`Model`] says, for a state and an operation (its input *and* the output the
//! client saw), whether the operation could have happened there and what state it
//! leaves. The search knows nothing else about registers or stores. States are
//! compared and hashed for the search's memo cache, so they are kept small: values
//! are interned to integers before checking, and strings grow by shared pieces.

use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// A sequential object: the initial state and the transition relation.
pub trait Model: Sync {
    /// An operation with its observed outcome.
    type Op: Debug + Send + Sync;
    type State: Clone + Eq + Hash + Debug + Send;
    fn init(&self) -> Self::State;
    /// The state after `op`, or `None` if `op` (with the output seen) cannot
    /// happen in `state`.
    fn step(&self, state: &Self::State, op: &Self::Op) -> Option<Self::State>;
    /// The operation in words, starting with its name (`write 3`, `cas 1→2 ok`).
    fn describe_op(&self, op: &Self::Op) -> String;
    fn describe_state(&self, state: &Self::State) -> String;
}

/// An interned register value; [`NIL`] is the initial "no value".
pub type Val = u32;
/// The register's initial value (`nil` / `null`).
pub const NIL: Val = 0;

/// What a compare-and-set's client was told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CasOutcome {
    /// It swapped.
    Ok,
    /// The comparison failed: the value was not the expected one at some instant
    /// within the operation (Porcupine's reading of etcd's `:fail :cas`).
    Failed,
    /// Unknown: it may have swapped, if the value matched.
    Unknown,
}

/// An operation on a register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterOp {
    /// A read that returned the value (`None`: the result is unknown).
    Read(Option<Val>),
    Write(Val),
    Cas {
        from: Val,
        to: Val,
        outcome: CasOutcome,
    },
}

/// A register with read, write and compare-and-set (Jepsen's `register` and
/// `cas-register`, and each key of the broker's key-value view). Initially nil.
#[derive(Debug, Clone, Default)]
pub struct CasRegister {
    /// Interned values by id, for descriptions (`NIL` is `names[0]`).
    pub names: Vec<String>,
}

impl CasRegister {
    fn name(&self, v: Val) -> &str {
        self.names.get(v as usize).map_or("?", String::as_str)
    }
}

impl Model for CasRegister {
    type Op = RegisterOp;
    type State = Val;

    fn init(&self) -> Val {
        NIL
    }

    fn step(&self, s: &Val, op: &RegisterOp) -> Option<Val> {
        match *op {
            RegisterOp::Read(None) => Some(*s),
            RegisterOp::Read(Some(v)) => (v == *s).then_some(*s),
            RegisterOp::Write(v) => Some(v),
            RegisterOp::Cas { from, to, outcome } => match outcome {
                CasOutcome::Ok => (from == *s).then_some(to),
                CasOutcome::Failed => (from != *s).then_some(*s),
                CasOutcome::Unknown => Some(if from == *s { to } else { *s }),
            },
        }
    }

    fn describe_op(&self, op: &RegisterOp) -> String {
        match *op {
            RegisterOp::Read(Some(v)) => format!("read → {}", self.name(v)),
            RegisterOp::Read(None) => "read → ?".to_string(),
            RegisterOp::Write(v) => format!("write {}", self.name(v)),
            RegisterOp::Cas { from, to, outcome } => {
                let end = match outcome {
                    CasOutcome::Ok => "ok",
                    CasOutcome::Failed => "failed",
                    CasOutcome::Unknown => "?",
                };
                format!("cas {}→{} {end}", self.name(from), self.name(to))
            }
        }
    }

    fn describe_state(&self, s: &Val) -> String {
        self.name(*s).to_string()
    }
}

// ---------------------------------------------------------------------------
// Strings built by appends

const BASE: u64 = 0x100_0000_01b3;

/// Polynomial hash of a string, so that `hash(a + b) = hash(a)·BASE^|b| + hash(b)`.
fn poly(s: &str) -> (u64, u64) {
    let mut h = 0u64;
    let mut pow = 1u64;
    for b in s.bytes() {
        h = h.wrapping_mul(BASE).wrapping_add(b as u64 + 1);
        pow = pow.wrapping_mul(BASE);
    }
    (h, pow)
}

/// A string value given with an operation, with its hash precomputed.
#[derive(Debug, Clone)]
pub struct Text {
    pub text: Arc<str>,
    hash: u64,
    pow: u64,
}

impl Text {
    pub fn new(s: &str) -> Text {
        let (hash, pow) = poly(s);
        Text {
            text: Arc::from(s),
            hash,
            pow,
        }
    }
}

/// One piece of an appended string: everything before it, then its text.
#[derive(Debug)]
struct Piece {
    prev: Option<Arc<Piece>>,
    text: Arc<str>,
    len: usize,
    hash: u64,
}

impl Drop for Piece {
    // Long chains would otherwise drop recursively, one stack frame per piece.
    fn drop(&mut self) {
        let mut prev = self.prev.take();
        while let Some(p) = prev {
            match Arc::try_unwrap(p) {
                Ok(mut piece) => prev = piece.prev.take(),
                Err(_) => break,
            }
        }
    }
}

/// An immutable string grown by appends in O(1), compared by hash first.
#[derive(Debug, Clone, Default)]
pub struct Str(Option<Arc<Piece>>);

impl Str {
    fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |p| p.len)
    }
    fn hash64(&self) -> u64 {
        self.0.as_ref().map_or(0, |p| p.hash)
    }
    fn append(&self, t: &Text) -> Str {
        if t.text.is_empty() {
            return self.clone();
        }
        Str(Some(Arc::new(Piece {
            prev: self.0.clone(),
            text: t.text.clone(),
            len: self.len() + t.text.len(),
            hash: self.hash64().wrapping_mul(t.pow).wrapping_add(t.hash),
        })))
    }
    fn set(t: &Text) -> Str {
        Str::default().append(t)
    }
    /// Does this string end with `s` at byte `end` (walking pieces backwards)?
    fn equals(&self, s: &str) -> bool {
        if self.len() != s.len() {
            return false;
        }
        let mut end = s.len();
        let mut cur = self.0.as_deref();
        while let Some(p) = cur {
            let start = end - p.text.len();
            if s.as_bytes()[start..end] != *p.text.as_bytes() {
                return false;
            }
            end = start;
            cur = p.prev.as_deref();
        }
        true
    }
    fn to_text(&self) -> String {
        let mut parts = Vec::new();
        let mut cur = self.0.as_deref();
        while let Some(p) = cur {
            parts.push(&*p.text);
            cur = p.prev.as_deref();
        }
        parts.reverse();
        parts.concat()
    }
    fn matches(&self, t: &Text) -> bool {
        self.hash64() == t.hash && self.equals(&t.text)
    }
}

impl PartialEq for Str {
    /// Compares bytes from the end, piece by piece, without building either
    /// string; a shared piece ends the comparison early.
    fn eq(&self, other: &Str) -> bool {
        if self.len() != other.len() || self.hash64() != other.hash64() {
            return false;
        }
        let (mut a, mut b) = (self.0.as_deref(), other.0.as_deref());
        let (mut ai, mut bi) = (a.map_or(0, |p| p.text.len()), b.map_or(0, |p| p.text.len()));
        loop {
            let (pa, pb) = match (a, b) {
                (Some(pa), Some(pb)) => (pa, pb),
                (None, None) => return true,
                _ => return false,
            };
            if std::ptr::eq(pa, pb) && ai == bi {
                return true;
            }
            let n = ai.min(bi);
            if pa.text.as_bytes()[ai - n..ai] != pb.text.as_bytes()[bi - n..bi] {
                return false;
            }
            ai -= n;
            bi -= n;
            if ai == 0 {
                a = pa.prev.as_deref();
                ai = a.map_or(0, |p| p.text.len());
            }
            if bi == 0 {
                b = pb.prev.as_deref();
                bi = b.map_or(0, |p| p.text.len());
            }
        }
    }
}

impl Eq for Str {}

impl Hash for Str {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(self.hash64());
    }
}

/// An operation on a string key-value store (Porcupine's kv model).
#[derive(Debug, Clone)]
pub enum KvOp {
    /// `key`: the key's number (only [`KvStore`] uses it).
    Get {
        key: usize,
        value: Option<Text>,
    },
    Put {
        key: usize,
        value: Text,
    },
    Append {
        key: usize,
        value: Text,
    },
}

/// One key of a string store: initially empty; `put` sets, `append` appends, `get`
/// returns it. The store's keys are independent, so each is checked on its own.
#[derive(Debug, Clone, Default)]
pub struct Kv;

fn kv_step(s: &Str, op: &KvOp) -> Option<Str> {
    match op {
        KvOp::Get { value: None, .. } => Some(s.clone()),
        KvOp::Get { value: Some(v), .. } => s.matches(v).then(|| s.clone()),
        KvOp::Put { value, .. } => Some(Str::set(value)),
        KvOp::Append { value, .. } => Some(s.append(value)),
    }
}

fn kv_describe(op: &KvOp, keys: Option<&[String]>) -> String {
    let k = |key: &usize| keys.map(|ks| format!(" {}", ks[*key])).unwrap_or_default();
    match op {
        KvOp::Get {
            key,
            value: Some(v),
        } => format!("get{} → {:?}", k(key), &*v.text),
        KvOp::Get { key, value: None } => format!("get{} → ?", k(key)),
        KvOp::Put { key, value } => format!("put{} {:?}", k(key), &*value.text),
        KvOp::Append { key, value } => format!("append{} {:?}", k(key), &*value.text),
    }
}

impl Model for Kv {
    type Op = KvOp;
    type State = Str;
    fn init(&self) -> Str {
        Str::default()
    }
    fn step(&self, s: &Str, op: &KvOp) -> Option<Str> {
        kv_step(s, op)
    }
    fn describe_op(&self, op: &KvOp) -> String {
        kv_describe(op, None)
    }
    fn describe_state(&self, s: &Str) -> String {
        format!("{:?}", s.to_text())
    }
}

/// The whole store as one state (no split by key): what a checker without
/// P-compositionality must do; kept for comparison with Porcupine's figure.
#[derive(Debug, Clone, Default)]
pub struct KvStore {
    pub keys: Vec<String>,
}

/// Every key's string, with the sum of their keyed hashes kept up to date.
#[derive(Debug, Clone)]
pub struct Store {
    hash: u64,
    values: Arc<Vec<Str>>,
}

impl PartialEq for Store {
    fn eq(&self, other: &Store) -> bool {
        self.hash == other.hash
            && (Arc::ptr_eq(&self.values, &other.values) || self.values == other.values)
    }
}

impl Eq for Store {}

impl Hash for Store {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(self.hash);
    }
}

fn keyed(key: usize, s: &Str) -> u64 {
    s.hash64()
        .wrapping_mul(0x9e37_79b9_7f4a_7c15 ^ (key as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9) | 1)
}

impl Model for KvStore {
    type Op = KvOp;
    type State = Store;
    fn init(&self) -> Store {
        let values = vec![Str::default(); self.keys.len()];
        let hash = values
            .iter()
            .enumerate()
            .fold(0u64, |h, (k, s)| h.wrapping_add(keyed(k, s)));
        Store {
            hash,
            values: Arc::new(values),
        }
    }
    fn step(&self, s: &Store, op: &KvOp) -> Option<Store> {
        let (KvOp::Get { key, .. } | KvOp::Put { key, .. } | KvOp::Append { key, .. }) = op;
        let old = &s.values[*key];
        let new = kv_step(old, op)?;
        if matches!(op, KvOp::Get { .. }) {
            return Some(s.clone());
        }
        let mut next = s.clone();
        next.hash = next
            .hash
            .wrapping_sub(keyed(*key, old))
            .wrapping_add(keyed(*key, &new));
        Arc::make_mut(&mut next.values)[*key] = new;
        Some(next)
    }
    fn describe_op(&self, op: &KvOp) -> String {
        kv_describe(op, Some(&self.keys))
    }
    fn describe_state(&self, s: &Store) -> String {
        let parts: Vec<String> = self
            .keys
            .iter()
            .zip(s.values.iter())
            .map(|(k, v)| format!("{k}: {:?}", v.to_text()))
            .collect();
        format!("{{{}}}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appended_strings_hash_and_compare_by_content() {
        let (a, b, ab) = (
            Text::new("x 1 y"),
            Text::new("x 2 y"),
            Text::new("x 1 yx 2 y"),
        );
        let s1 = Str::default().append(&a).append(&b);
        let s2 = Str::set(&ab);
        assert_eq!(s1, s2);
        let s3 = Str::set(&Text::new("x 1")).append(&Text::new(" yx 2 y"));
        assert_eq!(s1, s3);
        assert_ne!(s1, Str::set(&Text::new("x 1 yx 3 y")));
        assert!(s1.matches(&ab) && !s1.matches(&a));
        assert_ne!(s1, Str::set(&a));
        assert_eq!(s1.to_text(), "x 1 yx 2 y");
        assert!(Str::default().matches(&Text::new("")));
    }

    #[test]
    fn cas_register_semantics() {
        let m = CasRegister::default();
        let cas = |from, to, outcome| RegisterOp::Cas { from, to, outcome };
        assert_eq!(m.step(&NIL, &RegisterOp::Read(Some(NIL))), Some(NIL));
        assert_eq!(m.step(&1, &RegisterOp::Read(Some(2))), None);
        assert_eq!(m.step(&1, &cas(1, 2, CasOutcome::Ok)), Some(2));
        assert_eq!(m.step(&1, &cas(3, 2, CasOutcome::Ok)), None);
        assert_eq!(m.step(&1, &cas(1, 2, CasOutcome::Failed)), None);
        assert_eq!(m.step(&1, &cas(3, 2, CasOutcome::Failed)), Some(1));
        assert_eq!(m.step(&1, &cas(3, 2, CasOutcome::Unknown)), Some(1));
        assert_eq!(m.step(&3, &cas(3, 2, CasOutcome::Unknown)), Some(2));
    }
}
