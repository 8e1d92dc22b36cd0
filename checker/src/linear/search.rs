//! The Wing & Gong linearizability search with Lowe's memoisation — the algorithm
//! Knossos calls `wgl` and Porcupine implements in `checker.go`.
//!
//! The history is a doubly linked list of call and return entries in real-time
//! order. The search repeatedly picks a call that precedes the first return in the
//! list (an operation that may take effect now), applies it to the model, and, if
//! the model accepts it and the pair (set of linearized operations, model state) is
//! new, lifts the call and its return out of the list and pushes it on a stack.
//! Reaching a return entry means the operation it closes cannot be placed: pop the
//! stack, restore the entry, and try the next call. An empty list is a
//! linearization; backtracking past an empty stack proves there is none.
//!
//! The memo cache is what makes this fast: a configuration (linearized set, state)
//! reached once never needs exploring again. Sets are bitsets hashed incrementally
//! (one random word per operation, xored in and out), so a cache probe costs a
//! state hash and, on a hash match, a word-by-word comparison.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use super::fx::{Fx, mix};
use super::model::Model;

/// An operation for the search: its model operation and its place in real time.
#[derive(Debug, Clone)]
pub struct LinOp<O> {
    pub op: O,
    /// Position of the invocation in the history's event order.
    pub invoke: usize,
    /// Position of the completion; `None` if it may take effect any time after its
    /// invocation (info, or never completed).
    pub complete: Option<usize>,
}

/// Limits shared by every search of one check: a deadline and a cap on memo
/// bytes across all threads. Past either, searches stop with [`Outcome::GaveUp`].
#[derive(Debug)]
pub struct Limits {
    pub deadline: Option<Instant>,
    pub max_bytes: usize,
    bytes: AtomicUsize,
    stop: AtomicBool,
}

impl Limits {
    pub fn new(deadline: Option<Instant>, max_bytes: usize) -> Limits {
        Limits {
            deadline,
            max_bytes,
            bytes: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        }
    }

    /// Add `n` bytes of memo; an error once a limit is exceeded (then every
    /// search stops).
    fn charge(&self, n: usize) -> Result<(), GaveUp> {
        let total = self.bytes.fetch_add(n, Ordering::Relaxed) + n;
        if self.stop.load(Ordering::Relaxed) {
            return Err(GaveUp::Stopped);
        }
        if total > self.max_bytes {
            self.stop.store(true, Ordering::Relaxed);
            return Err(GaveUp::Memory);
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.stop.store(true, Ordering::Relaxed);
            return Err(GaveUp::Time);
        }
        Ok(())
    }
}

/// Why a search stopped without a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GaveUp {
    Time,
    Memory,
    /// Another search hit a limit.
    Stopped,
}

/// Why a history is not linearizable, in operation numbers (indices into the
/// search's input).
#[derive(Debug, Clone)]
pub struct Failure<S> {
    /// The longest linearizable prefix found, in linearization order.
    pub prefix: Vec<usize>,
    /// Distinct model states reached after a prefix of that length (at most 4).
    pub states: Vec<S>,
    /// The operation whose return could not be passed: none of the candidates fit.
    pub blocked: usize,
    /// The calls that could have been linearized next at that point.
    pub pending: Vec<usize>,
}

#[derive(Debug, Clone)]
pub enum Outcome<S> {
    Linearizable,
    Illegal(Failure<S>),
    GaveUp(GaveUp),
}

const NIL: u32 = u32::MAX;
const HEAD: u32 = 0;
const CHARGE_EVERY: usize = 1024;
const MAX_STATES: usize = 4;
/// A paused search makes room for its whole budget up front, up to this many
/// entries (past it, a budget is more than most searches use).
const RESERVE_UP_TO: usize = 1 << 16;

/// The memo: a set of (linearized bitset, state). Open addressing; each slot packs
/// the high half of the entry's hash with its id, so probing a miss touches only
/// the slot array.
struct Cache<S> {
    words: usize,
    hashes: Vec<u64>,
    bits: Vec<u64>,
    states: Vec<S>,
    slots: Vec<u64>,
}

fn tag(hash: u64) -> u64 {
    hash & 0xffff_ffff_0000_0000
}

impl<S: Eq + Clone> Cache<S> {
    fn new(words: usize) -> Self {
        Cache {
            words,
            hashes: Vec::new(),
            bits: Vec::new(),
            states: Vec::new(),
            slots: vec![0; 1024],
        }
    }

    fn len(&self) -> usize {
        self.hashes.len()
    }

    /// Make room for `entries` in all, so that growing to them copies nothing.
    fn reserve(&mut self, entries: usize) {
        let more = entries.saturating_sub(self.len());
        self.hashes.reserve(more);
        self.bits.reserve(more * self.words);
        self.states.reserve(more);
        let slots = (entries * 2).next_power_of_two();
        if slots > self.slots.len() {
            self.rehash(slots);
        }
    }

    /// Bytes an entry costs: bitset, hash, state, and two slots at most half full.
    fn entry_bytes(&self) -> usize {
        self.words * 8 + 8 + std::mem::size_of::<S>() + 2 * 8
    }

    /// Insert unless present; true if it was new.
    fn insert(&mut self, hash: u64, bits: &[u64], state: &S) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = (hash as usize) & mask;
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                break;
            }
            if slot & 0xffff_ffff_0000_0000 == tag(hash) {
                let e = (slot as u32 - 1) as usize;
                if self.states[e] == *state
                    && same(&self.bits[e * self.words..(e + 1) * self.words], bits)
                {
                    return false;
                }
            }
            i = (i + 1) & mask;
        }
        let id = self.hashes.len() as u64;
        self.slots[i] = tag(hash) | (id + 1);
        self.hashes.push(hash);
        self.bits.extend_from_slice(bits);
        self.states.push(state.clone());
        if self.len() * 2 > self.slots.len() {
            self.grow();
        }
        true
    }

    fn grow(&mut self) {
        self.rehash(self.slots.len() * 2);
    }

    fn rehash(&mut self, size: usize) {
        let mut slots = vec![0u64; size];
        let mask = slots.len() - 1;
        for (e, h) in self.hashes.iter().enumerate() {
            let mut i = (*h as usize) & mask;
            while slots[i] != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = tag(*h) | (e as u64 + 1);
        }
        self.slots = slots;
    }
}

/// Bitset equality, a word at a time (short slices: no memcmp call).
fn same(a: &[u64], b: &[u64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

fn state_hash<S: Hash>(s: &S) -> u64 {
    let mut h = Fx::default();
    s.hash(&mut h);
    mix(h.finish())
}

/// The call/return list over arrays: node 0 is the head, then the entries.
struct List {
    next: Vec<u32>,
    prev: Vec<u32>,
    /// The operation of each node.
    op: Vec<u32>,
    /// For a call node, its return node; `NIL` for return nodes.
    ret: Vec<u32>,
}

impl List {
    fn new<O>(ops: &[LinOp<O>]) -> List {
        let mut entries: Vec<(usize, bool, u32)> = Vec::with_capacity(ops.len() * 2);
        for (i, o) in ops.iter().enumerate() {
            entries.push((o.invoke, false, i as u32));
            entries.push((o.complete.unwrap_or(usize::MAX), true, i as u32));
        }
        entries.sort_unstable();
        let n = entries.len() + 1;
        let mut l = List {
            next: vec![NIL; n],
            prev: vec![NIL; n],
            op: vec![NIL; n],
            ret: vec![NIL; n],
        };
        let mut ret_node = vec![NIL; ops.len()];
        for (k, (_, is_ret, op)) in entries.iter().enumerate() {
            let node = k as u32 + 1;
            l.op[node as usize] = *op;
            if *is_ret {
                ret_node[*op as usize] = node;
            }
            l.prev[node as usize] = node - 1;
            l.next[node as usize - 1] = node;
        }
        for node in 1..n {
            if ret_node[l.op[node] as usize] != node as u32 {
                l.ret[node] = ret_node[l.op[node] as usize];
            }
        }
        l
    }

    fn unlink(&mut self, e: u32) {
        let (p, n) = (self.prev[e as usize], self.next[e as usize]);
        self.next[p as usize] = n;
        if n != NIL {
            self.prev[n as usize] = p;
        }
    }

    fn relink(&mut self, e: u32) {
        let (p, n) = (self.prev[e as usize], self.next[e as usize]);
        self.next[p as usize] = e;
        if n != NIL {
            self.prev[n as usize] = e;
        }
    }

    /// Take a call and its return out of the list.
    fn lift(&mut self, call: u32) {
        self.unlink(call);
        self.unlink(self.ret[call as usize]);
    }

    /// Undo `lift`, in reverse order.
    fn unlift(&mut self, call: u32) {
        self.relink(self.ret[call as usize]);
        self.relink(call);
    }
}

/// A search that can pause when its memo reaches a size and resume later, so that
/// many keys can be advanced in rounds of growing budgets: a key whose violation
/// is cheap to prove is found before an expensive one is finished, and which keys
/// finish in which round does not depend on thread timing.
pub struct Search<M: Model> {
    zobrist: Vec<u64>,
    list: List,
    cache: Cache<M::State>,
    bits: Vec<u64>,
    bits_hash: u64,
    calls: Vec<(u32, M::State)>,
    state: M::State,
    arena: M::Arena,
    arena_charged: usize,
    entry: u32,
    best: Option<Failure<M::State>>,
    charged: usize,
    steps: usize,
}

impl<M: Model> Search<M> {
    pub fn new(model: &M, ops: &[LinOp<M::Op>]) -> Self {
        let n = ops.len();
        let words = n.div_ceil(64).max(1);
        let list = List::new(ops);
        let entry = list.next[HEAD as usize];
        let mut arena = M::Arena::default();
        let state = model.init(&mut arena);
        Search {
            zobrist: (0..n as u64)
                .map(|i| mix(i.wrapping_add(0x9e37_79b9_7f4a_7c15)))
                .collect(),
            list,
            cache: Cache::new(words),
            bits: vec![0u64; words],
            bits_hash: 0,
            calls: Vec::new(),
            state,
            arena,
            arena_charged: 0,
            entry,
            best: None,
            charged: 0,
            steps: 0,
        }
    }

    /// Memo entries so far.
    pub fn cache_entries(&self) -> usize {
        self.cache.len()
    }

    /// A state of this search in words.
    pub fn describe_state(&self, model: &M, s: &M::State) -> String {
        model.describe_state(&self.arena, s)
    }

    /// Memo and arena bytes added since the last charge.
    fn uncharged(&mut self, model: &M) -> usize {
        let memo = (self.cache.len() - self.charged) * self.cache.entry_bytes();
        self.charged = self.cache.len();
        let arena = model.arena_bytes(&self.arena);
        let grown = arena.saturating_sub(self.arena_charged);
        self.arena_charged = self.arena_charged.max(arena);
        memo + grown
    }

    /// Search on until a verdict (`Some`), or until the memo holds `pause_at`
    /// entries (`None`: call again with a larger budget to continue).
    pub fn run(
        &mut self,
        model: &M,
        ops: &[LinOp<M::Op>],
        limits: &Limits,
        pause_at: usize,
    ) -> Option<Outcome<M::State>> {
        if pause_at <= RESERVE_UP_TO {
            self.cache.reserve(pause_at);
            model.reserve(&mut self.arena, pause_at);
        }
        let mut entry = self.entry;
        while self.list.next[HEAD as usize] != NIL {
            if self.cache.len() >= pause_at {
                self.entry = entry;
                return None;
            }
            self.steps += 1;
            if self.steps % CHARGE_EVERY == 0 {
                let used = self.uncharged(model);
                if let Err(why) = limits.charge(used) {
                    self.entry = entry;
                    return Some(Outcome::GaveUp(why));
                }
            }
            let e = entry as usize;
            if self.list.ret[e] != NIL {
                let op = self.list.op[e] as usize;
                if let Some(next) = model.step(&mut self.arena, &self.state, &ops[op].op) {
                    self.bits[op / 64] |= 1 << (op % 64);
                    let h = self.bits_hash ^ self.zobrist[op];
                    if self
                        .cache
                        .insert(mix(h ^ state_hash(&next)), &self.bits, &next)
                    {
                        self.bits_hash = h;
                        self.calls
                            .push((entry, std::mem::replace(&mut self.state, next)));
                        self.list.lift(entry);
                        entry = self.list.next[HEAD as usize];
                        continue;
                    }
                    self.bits[op / 64] &= !(1 << (op % 64));
                }
                entry = self.list.next[e];
            } else {
                // A return: its operation cannot be placed before it. Remember how
                // far we got, then backtrack.
                note_failure(&mut self.best, &self.list, &self.calls, &self.state, entry);
                let Some((call, prev_state)) = self.calls.pop() else {
                    self.entry = entry;
                    let f = self.best.take().expect("a failure was just noted");
                    return Some(Outcome::Illegal(f));
                };
                let op = self.list.op[call as usize] as usize;
                self.bits[op / 64] &= !(1 << (op % 64));
                self.bits_hash ^= self.zobrist[op];
                self.state = prev_state;
                self.list.unlift(call);
                entry = self.list.next[call as usize];
            }
        }
        self.entry = entry;
        let used = self.uncharged(model);
        let _ = limits.charge(used);
        Some(Outcome::Linearizable)
    }
}

/// Keep the deepest point the search reached, and the states seen there.
fn note_failure<S: Clone + Eq>(
    best: &mut Option<Failure<S>>,
    list: &List,
    calls: &[(u32, S)],
    state: &S,
    ret_entry: u32,
) {
    let depth = calls.len();
    match best {
        Some(b) if b.prefix.len() > depth => {}
        Some(b) if b.prefix.len() == depth => {
            if b.states.len() < MAX_STATES && !b.states.contains(state) {
                b.states.push(state.clone());
            }
        }
        _ => {
            let mut pending = Vec::new();
            let mut e = list.next[HEAD as usize];
            while e != ret_entry && e != NIL {
                pending.push(list.op[e as usize] as usize);
                e = list.next[e as usize];
            }
            *best = Some(Failure {
                prefix: calls
                    .iter()
                    .map(|(c, _)| list.op[*c as usize] as usize)
                    .collect(),
                states: vec![state.clone()],
                blocked: list.op[ret_entry as usize] as usize,
                pending,
            });
        }
    }
}
