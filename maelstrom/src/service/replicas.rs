//! The two weaker services, as state machines over copies of the store.
//!
//! **seq-kv** (sequentially consistent) keeps the last [`SEQ_STATES`] states of
//! one total order of updates, and each client's position in it — a client here is
//! the node that sent the request. A request that would not change the state it is
//! evaluated against (a read, a cas whose precondition fails, a write of the value
//! already there) may be answered from any state between the client's position and
//! the newest, drawn by the seeded rng; the client's position moves there. A
//! request that changes the state is applied to the newest state, which it extends,
//! and moves its client to it. So every client observes one total order, never
//! going backwards, while reads (and failing cas) may see the past: Maelstrom's
//! own construction (doc/services.md, "seq-kv").
//!
//! **lww-kv** (last write wins) simulates [`LWW_REPLICAS`] independent replicas.
//! Each write is stamped with its replica's Lamport clock (ticked by the write) and
//! the replica's index; before each request one random replica merges another's
//! state into its own, keeping per key the value with the higher stamp, and the
//! request is served by a random replica. Stamps are unique (clock, replica), so
//! replicas that have merged each other agree — unlike Maelstrom's, whose equal
//! stamps may keep replicas apart forever. Reads are stale, cas is not atomic
//! across replicas, and concurrent writes are lost: as intended.

use std::collections::{BTreeMap, HashMap, VecDeque};

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::kv::{Kv, KvRequest, key_text};
use crate::message::Body;

/// States of seq-kv's total order kept for stale answers.
pub const SEQ_STATES: usize = 32;
/// Replicas lww-kv simulates.
pub const LWW_REPLICAS: usize = 5;

/// seq-kv: see the module's documentation.
#[derive(Debug, Clone)]
pub(crate) struct SeqKv {
    /// The newest states of the total order, oldest first.
    states: VecDeque<Kv>,
    /// The position of `states.back()` in the total order.
    newest: u64,
    /// Each client's position.
    clients: HashMap<String, u64>,
    rng: ChaCha8Rng,
}

impl SeqKv {
    pub(crate) fn new(rng: ChaCha8Rng) -> SeqKv {
        SeqKv {
            states: VecDeque::from([Kv::default()]),
            newest: 0,
            clients: HashMap::new(),
            rng,
        }
    }

    pub(crate) fn handle(&mut self, from: &str, req: &KvRequest) -> Body {
        let oldest = self.newest + 1 - self.states.len() as u64;
        let seen = self.clients.get(from).copied().unwrap_or(0).max(oldest);
        let at = self.rng.random_range(seen..=self.newest);
        let past = &self.states[(at - oldest) as usize];
        if !past.would_change(req) {
            let reply = req.decide(past.get(req.key())).0;
            self.clients.insert(from.to_string(), at);
            return reply;
        }
        let mut next = self.states.back().cloned().unwrap_or_default();
        if !next.would_change(req) {
            self.clients.insert(from.to_string(), self.newest);
            return req.decide(next.get(req.key())).0;
        }
        let reply = next.apply(req);
        self.states.push_back(next);
        if self.states.len() > SEQ_STATES {
            self.states.pop_front();
        }
        self.newest += 1;
        self.clients.insert(from.to_string(), self.newest);
        reply
    }
}

/// A value with the stamp of the write that set it: (Lamport clock, replica).
#[derive(Debug, Clone, PartialEq)]
struct Stamped {
    value: Value,
    stamp: (u64, usize),
}

#[derive(Debug, Clone, Default)]
struct Replica {
    clock: u64,
    values: BTreeMap<String, Stamped>,
}

/// lww-kv: see the module's documentation.
#[derive(Debug, Clone)]
pub(crate) struct LwwKv {
    replicas: Vec<Replica>,
    rng: ChaCha8Rng,
}

impl LwwKv {
    pub(crate) fn new(rng: ChaCha8Rng) -> LwwKv {
        LwwKv {
            replicas: vec![Replica::default(); LWW_REPLICAS],
            rng,
        }
    }

    /// Merge replica `from` into replica `into`.
    fn merge(&mut self, from: usize, into: usize) {
        if from == into {
            return;
        }
        let source = self.replicas[from].clone();
        let dest = &mut self.replicas[into];
        dest.clock = dest.clock.max(source.clock);
        for (k, s) in source.values {
            match dest.values.get(&k) {
                Some(d) if d.stamp >= s.stamp => {}
                _ => {
                    dest.values.insert(k, s);
                }
            }
        }
    }

    pub(crate) fn handle(&mut self, req: &KvRequest) -> Body {
        let n = self.replicas.len();
        let (from, into) = (self.rng.random_range(0..n), self.rng.random_range(0..n));
        self.merge(from, into);
        let i = self.rng.random_range(0..n);
        let replica = &mut self.replicas[i];
        let key = key_text(req.key());
        let (reply, new) = req.decide(replica.values.get(&key).map(|s| &s.value));
        if let Some(value) = new {
            replica.clock += 1;
            let stamp = (replica.clock, i);
            replica.values.insert(key, Stamped { value, stamp });
        }
        reply
    }

    /// Merge every replica into every other until they agree (for tests).
    #[cfg(test)]
    pub(crate) fn converge(&mut self) {
        let n = self.replicas.len();
        for _ in 0..2 {
            for a in 0..n {
                for b in 0..n {
                    self.merge(a, b);
                }
            }
        }
    }
}
