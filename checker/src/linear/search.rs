//! The Wing & Gong linearizability search with Lowe's memoisation — the algorithm
//! Knossos calls `wgl` and Porcupine implements in `checker.go` — with
//! indeterminate operations as optional moves.
//!
//! The determinate operations (those with a return) are call and return entries
//! of a doubly linked list in real-time order ([`Timeline`]). The search
//! repeatedly picks a call that precedes the first return in the list (an
//! operation that may take effect now), applies it to the model, and, if the model
//! accepts it and the configuration is new, lifts the call and its return out of
//! the list and pushes it on a stack. Once the calls before the first return are
//! tried, it tries the indeterminate operations invoked before that return
//! ([`Pending`]). When nothing fits, the first return's operation cannot be
//! placed: pop the stack, restore the entries, and try the next move. An empty
//! timeline is a linearization — indeterminate operations still pending never
//! took effect; backtracking past an empty stack proves there is none.
//!
//! Indeterminate operations (`info`, or never completed) have no return to reach,
//! which the plain search (Porcupine's, kept as `plain`) pays for: each may be
//! linearized or not at every point, doubling the configurations. Here they are
//! moves the search makes only when the timeline's calls are exhausted, and only
//! when they change the state; identical ones are taken in invocation order (they
//! are interchangeable); and the memo skips a configuration when one with the same
//! determinate set and state and fewer of them done was explored
//! ([`super::memo`]). Each keeps verdicts exact: a pending operation never has to
//! take effect, and taking it later is always as possible as taking it now.
//!
//! The memo is what makes this fast: a configuration (linearized sets, state)
//! reached once never needs exploring again. Sets are bitsets hashed incrementally
//! (one random word per determinate operation, xored in and out), so a probe
//! costs a state hash and, on a hash match, a word-by-word comparison.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

pub use super::entries::LinOp;
use super::entries::{HEAD, NIL, Pending, Timeline};
use super::fx::{Fx, FxMap, mix};
use super::memo::Memo;
use super::model::Model;

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

const CHARGE_EVERY: usize = 1024;
const MAX_STATES: usize = 4;
/// A paused search makes room for its whole budget up front, up to this many
/// entries (past it, a budget is more than most searches use), and never for
/// more than the memory budget holds (an entry of a long history's search is
/// large: a bit per operation).
const RESERVE_UP_TO: usize = 1 << 16;

fn state_hash<S: Hash>(s: &S) -> u64 {
    let mut h = Fx::default();
    s.hash(&mut h);
    mix(h.finish())
}

/// A move the search made: a call in the timeline, or an indeterminate operation
/// in the pending list, with the timeline's first return `ret` it was tried
/// before (where the search resumes trying when it is undone).
#[derive(Debug, Clone, Copy)]
enum Move {
    Timeline(u32),
    Pending { node: u32, ret: u32 },
}

/// What comes after the pending operations at a return were tried.
enum Next {
    /// Go on walking the timeline from this node.
    Walk(u32),
    /// No move is left to undo: not linearizable.
    Illegal,
    GaveUp(GaveUp),
}

/// A search that can pause when its memo reaches a size and resume later, so that
/// many keys can be advanced in rounds of growing budgets: a key whose violation
/// is cheap to prove is found before an expensive one is finished, and which keys
/// finish in which round does not depend on thread timing.
pub struct Search<M: Model> {
    /// Per operation, its random word. The determinate set is a bitset over
    /// all operations (the indeterminate ones' bits stay clear).
    zobrist: Vec<u64>,
    timeline: Timeline,
    pending: Pending,
    memo: Memo<M::State>,
    bits: Vec<u64>,
    info_bits: Vec<u64>,
    bits_hash: u64,
    /// The moves made, each with the state before it.
    calls: Vec<(Move, M::State)>,
    state: M::State,
    arena: M::Arena,
    arena_charged: usize,
    /// The timeline node to try next (where a paused search resumes).
    entry: u32,
    best: Option<Failure<M::State>>,
    charged: usize,
    steps: usize,
}

impl<M: Model> Search<M> {
    /// A search of `ops`. `plain`: every operation is determinate, one without a
    /// completion returning after every event — the plain Wing–Gong–Lowe search
    /// Porcupine runs, kept as a baseline.
    pub fn new(model: &M, ops: &[LinOp<M::Op>], plain: bool) -> Self {
        let (mut det, mut info) = (Vec::new(), Vec::new());
        for (i, o) in ops.iter().enumerate() {
            if o.complete.is_some() || plain {
                det.push(i as u32);
            } else {
                info.push(i as u32);
            }
        }
        info.sort_by_key(|&i| ops[i as usize].invoke);
        let mut classes: FxMap<&M::Op, u32> = FxMap::default();
        let mut class = Vec::with_capacity(info.len());
        for &i in &info {
            let next = classes.len() as u32;
            class.push(*classes.entry(&ops[i as usize].op).or_insert(next));
        }
        let words = ops.len().div_ceil(64).max(1);
        let info_words = info.len().div_ceil(64);
        let timeline = Timeline::new(ops, &det);
        let entry = timeline.first();
        let mut arena = M::Arena::default();
        let state = model.init(&mut arena);
        Search {
            zobrist: (0..ops.len() as u64)
                .map(|i| mix(i.wrapping_add(0x9e37_79b9_7f4a_7c15)))
                .collect(),
            timeline,
            pending: Pending::new(ops, &info, &class),
            memo: Memo::new(words, info_words),
            bits: vec![0u64; words],
            info_bits: vec![0u64; info_words],
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
        self.memo.len()
    }

    /// A state of this search in words.
    pub fn describe_state(&self, model: &M, s: &M::State) -> String {
        model.describe_state(&self.arena, s)
    }

    /// Memo and arena bytes added since the last charge.
    fn uncharged(&mut self, model: &M) -> usize {
        let memo = (self.memo.len() - self.charged) * self.memo.entry_bytes();
        self.charged = self.memo.len();
        let arena = model.arena_bytes(&self.arena);
        let grown = arena.saturating_sub(self.arena_charged);
        self.arena_charged = self.arena_charged.max(arena);
        memo + grown
    }

    /// Has the pending node's identical predecessor (if any) been linearized?
    /// Identical indeterminate operations are taken in invocation order only.
    fn in_turn(&self, node: u32) -> bool {
        let prev = self.pending.same[node as usize];
        prev == HEAD || {
            let k = prev as usize - 1;
            self.info_bits[k / 64] & (1 << (k % 64)) != 0
        }
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
            let room = pause_at.min(limits.max_bytes / (self.memo.entry_bytes() + 16) / 2);
            let before = self.memo.table_bytes();
            self.memo.reserve(room);
            model.reserve(&mut self.arena, room);
            if self.memo.table_bytes() > before {
                if let Err(why) = limits.charge(self.memo.table_bytes()) {
                    return Some(Outcome::GaveUp(why));
                }
            }
        }
        let mut entry = self.entry;
        while self.timeline.first() != NIL {
            if self.memo.len() >= pause_at {
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
            let e = entry;
            if self.timeline.ret[e as usize] != NIL {
                entry = match self.try_call(model, ops, e, limits) {
                    Ok(true) => self.timeline.first(),
                    Ok(false) => self.timeline.next[e as usize],
                    Err(why) => {
                        self.entry = entry;
                        return Some(Outcome::GaveUp(why));
                    }
                };
                continue;
            }
            // The first return: the calls before it are tried.
            entry = match self.at_return(model, ops, e, limits) {
                Next::Walk(next) => next,
                Next::Illegal => {
                    self.entry = entry;
                    let f = self.best.take().expect("a failure was noted");
                    return Some(Outcome::Illegal(f));
                }
                Next::GaveUp(why) => {
                    self.entry = entry;
                    return Some(Outcome::GaveUp(why));
                }
            };
        }
        self.entry = entry;
        let used = self.uncharged(model);
        let _ = limits.charge(used);
        Some(Outcome::Linearizable)
    }

    /// At the timeline's first return `ret`, its calls tried: try the
    /// indeterminate operations invoked before it; when none fits, the return's
    /// operation cannot be placed here — remember how far the search got, undo
    /// the last move and go on trying after it (within the pending list, when
    /// that move was an indeterminate operation).
    fn at_return(&mut self, model: &M, ops: &[LinOp<M::Op>], ret: u32, limits: &Limits) -> Next {
        let (mut node, mut ret) = (self.pending.first(), ret);
        loop {
            while node != NIL
                && self.pending.invoke[node as usize] < self.timeline.pos[ret as usize]
            {
                match self.try_pending(model, ops, node, ret, limits) {
                    Ok(true) => return Next::Walk(self.timeline.first()),
                    Ok(false) => node = self.pending.next[node as usize],
                    Err(why) => return Next::GaveUp(why),
                }
            }
            self.note_failure(ret);
            let Some((mv, before)) = self.calls.pop() else {
                return Next::Illegal;
            };
            self.state = before;
            match mv {
                Move::Timeline(call) => {
                    let k = self.timeline.op[call as usize] as usize;
                    self.bits[k / 64] &= !(1 << (k % 64));
                    self.bits_hash ^= self.zobrist[k];
                    self.timeline.unlift(call);
                    return Next::Walk(self.timeline.next[call as usize]);
                }
                Move::Pending { node: n, ret: r } => {
                    let k = n as usize - 1;
                    self.info_bits[k / 64] &= !(1 << (k % 64));
                    self.pending.unlift(n);
                    (node, ret) = (self.pending.next[n as usize], r);
                }
            }
        }
    }

    /// Linearize the timeline call `e` if the model accepts it and the
    /// configuration is new.
    #[inline]
    fn try_call(
        &mut self,
        model: &M,
        ops: &[LinOp<M::Op>],
        e: u32,
        limits: &Limits,
    ) -> Result<bool, GaveUp> {
        let op = self.timeline.op[e as usize] as usize;
        let Some(next) = model.step(&mut self.arena, &self.state, &ops[op].op) else {
            return Ok(false);
        };
        self.make_room(limits)?;
        let k = op;
        self.bits[k / 64] |= 1 << (k % 64);
        let h = self.bits_hash ^ self.zobrist[k];
        if self.memo.insert(
            mix(h ^ state_hash(&next)),
            &self.bits,
            &self.info_bits,
            &next,
        ) {
            self.bits_hash = h;
            let before = std::mem::replace(&mut self.state, next);
            self.calls.push((Move::Timeline(e), before));
            self.timeline.lift(e);
            return Ok(true);
        }
        self.bits[k / 64] &= !(1 << (k % 64));
        Ok(false)
    }

    /// The memo's slot table doubles when half full: the new table is charged
    /// before it is made (the old one, freed after, stays charged).
    #[inline]
    fn make_room(&mut self, limits: &Limits) -> Result<(), GaveUp> {
        if self.memo.full() {
            limits.charge(2 * self.memo.table_bytes())?;
            self.memo.grow();
        }
        Ok(())
    }

    /// Linearize the pending operation `node` if it is in turn, changes the state
    /// (one that changes nothing is as good as not yet taken effect) and the
    /// configuration is not dominated.
    fn try_pending(
        &mut self,
        model: &M,
        ops: &[LinOp<M::Op>],
        node: u32,
        ret: u32,
        limits: &Limits,
    ) -> Result<bool, GaveUp> {
        if !self.in_turn(node) {
            return Ok(false);
        }
        let op = self.pending.op[node as usize] as usize;
        let next = match model.step(&mut self.arena, &self.state, &ops[op].op) {
            Some(next) if next != self.state => next,
            _ => return Ok(false),
        };
        self.make_room(limits)?;
        let k = node as usize - 1;
        self.info_bits[k / 64] |= 1 << (k % 64);
        if self.memo.insert(
            mix(self.bits_hash ^ state_hash(&next)),
            &self.bits,
            &self.info_bits,
            &next,
        ) {
            let before = std::mem::replace(&mut self.state, next);
            self.calls.push((Move::Pending { node, ret }, before));
            self.pending.lift(node);
            return Ok(true);
        }
        self.info_bits[k / 64] &= !(1 << (k % 64));
        Ok(false)
    }

    /// The operation a move linearized.
    fn op_of(&self, mv: Move) -> usize {
        match mv {
            Move::Timeline(call) => self.timeline.op[call as usize] as usize,
            Move::Pending { node, .. } => self.pending.op[node as usize] as usize,
        }
    }

    /// Keep the deepest point the search reached, and the states seen there.
    fn note_failure(&mut self, ret: u32) {
        let depth = self.calls.len();
        match &mut self.best {
            Some(b) if b.prefix.len() > depth => {}
            Some(b) if b.prefix.len() == depth => {
                if b.states.len() < MAX_STATES && !b.states.contains(&self.state) {
                    b.states.push(self.state);
                }
            }
            _ => {
                let mut pending = Vec::new();
                let mut e = self.timeline.first();
                while e != ret && e != NIL {
                    pending.push(self.timeline.op[e as usize] as usize);
                    e = self.timeline.next[e as usize];
                }
                let mut p = self.pending.first();
                while p != NIL && self.pending.invoke[p as usize] < self.timeline.pos[ret as usize]
                {
                    pending.push(self.pending.op[p as usize] as usize);
                    p = self.pending.next[p as usize];
                }
                self.best = Some(Failure {
                    prefix: self.calls.iter().map(|(mv, _)| self.op_of(*mv)).collect(),
                    states: vec![self.state],
                    blocked: self.timeline.op[ret as usize] as usize,
                    pending,
                });
            }
        }
    }
}
