//! Sequential specifications the search linearizes against.
//!
//! A [`Model`] says, for a state and an operation (its input *and* the output the
//! client saw), whether the operation could have happened there and what state it
//! leaves. The search knows nothing else about registers or stores. States are
//! compared and hashed for the search's memo cache, so they are kept small: values
//! are interned to integers before checking ([`Values`]), and states that are
//! strings or rows live in a per-search arena ([`super::strings`],
//! [`super::rows`]) so that a state is an integer there too.
//!
//! The models: [`CasRegister`] here (also `register`, without cas); the kv store
//! ([`super::kv`]); Knossos's mutex ([`super::mutex`]), multi-register
//! ([`super::multi_register`]), set ([`super::set`]) and queues
//! ([`super::queues`]).

use std::fmt::Debug;
use std::hash::Hash;

/// A sequential object: the initial state and the transition relation.
pub trait Model: Sync {
    /// An operation with its observed outcome. Equal operations are
    /// interchangeable (the search takes identical indeterminate ones in order).
    type Op: Debug + Send + Sync + Eq + Hash;
    /// Small and `Copy`: an integer, or an id into the search's arena.
    type State: Copy + Default + Eq + Hash + Debug + Send;
    /// What one search keeps for the model besides its states (the kv models'
    /// strings, so that a state is an id into it). One per search: keys checked
    /// in parallel share nothing, and it is freed in one piece with the search.
    type Arena: Default + Send;
    fn init(&self, arena: &mut Self::Arena) -> Self::State;
    /// The state after `op`, or `None` if `op` (with the output seen) cannot
    /// happen in `state`.
    fn step(
        &self,
        arena: &mut Self::Arena,
        state: &Self::State,
        op: &Self::Op,
    ) -> Option<Self::State>;
    /// Does `op` accept every state and change none (a read whose result is
    /// unknown)? It constrains nothing, and the search leaves it out.
    fn inert(&self, _op: &Self::Op) -> bool {
        false
    }
    /// The operation in words, starting with its name (`write 3`, `cas 1→2 ok`).
    fn describe_op(&self, op: &Self::Op) -> String;
    fn describe_state(&self, arena: &Self::Arena, state: &Self::State) -> String;
    /// Make room in the arena for the states of about `entries` memo entries.
    fn reserve(&self, _arena: &mut Self::Arena, _entries: usize) {}
    /// Bytes the arena holds, charged to the memory budget with the memo.
    fn arena_bytes(&self, _arena: &Self::Arena) -> usize {
        0
    }
}

/// An interned value; [`NIL`] is `nil` / `null`.
pub type Val = u32;
/// `nil` / `null`: a register's initial value.
pub const NIL: Val = 0;

/// A history's values interned to [`Val`]s by their exact text
/// ([`crate::values::canonical`]: `1` and `"1"` differ, integers of any size are
/// exact), `null` being [`NIL`].
#[derive(Debug, Clone)]
pub struct Values {
    names: Vec<String>,
    ids: super::fx::FxMap<String, Val>,
}

impl Default for Values {
    fn default() -> Self {
        Values {
            names: vec!["nil".to_string()],
            ids: Default::default(),
        }
    }
}

impl Values {
    pub fn intern(&mut self, v: &serde_json::Value) -> Val {
        if v.is_null() {
            return NIL;
        }
        let s = crate::values::canonical(v);
        if let Some(&id) = self.ids.get(&s) {
            return id;
        }
        self.names.push(s.clone());
        let id = (self.names.len() - 1) as Val;
        self.ids.insert(s, id);
        id
    }

    /// How many values, `nil` included.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// The values by id, for descriptions.
    pub fn into_names(self) -> Vec<String> {
        self.names
    }
}

/// A value's name, from interned names.
pub fn name(names: &[String], v: Val) -> &str {
    names.get(v as usize).map_or("?", String::as_str)
}

/// What a compare-and-set's client was told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
/// `cas-register`, and each key of the broker's key-value view). Initially nil,
/// or the value given.
#[derive(Debug, Clone, Default)]
pub struct CasRegister {
    /// Interned values by id, for descriptions (`NIL` is `names[0]`).
    pub names: Vec<String>,
    /// The value before any operation.
    pub init: Val,
}

impl CasRegister {
    fn name(&self, v: Val) -> &str {
        name(&self.names, v)
    }
}

impl Model for CasRegister {
    type Op = RegisterOp;
    type State = Val;
    type Arena = ();

    fn init(&self, _: &mut ()) -> Val {
        self.init
    }

    fn step(&self, _: &mut (), s: &Val, op: &RegisterOp) -> Option<Val> {
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

    fn inert(&self, op: &RegisterOp) -> bool {
        *op == RegisterOp::Read(None)
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

    fn describe_state(&self, _: &(), s: &Val) -> String {
        self.name(*s).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cas_register_semantics() {
        let m = CasRegister::default();
        let cas = |from, to, outcome| RegisterOp::Cas { from, to, outcome };
        assert_eq!(
            m.step(&mut (), &NIL, &RegisterOp::Read(Some(NIL))),
            Some(NIL)
        );
        assert_eq!(m.step(&mut (), &1, &RegisterOp::Read(Some(2))), None);
        assert_eq!(m.step(&mut (), &1, &cas(1, 2, CasOutcome::Ok)), Some(2));
        assert_eq!(m.step(&mut (), &1, &cas(3, 2, CasOutcome::Ok)), None);
        assert_eq!(m.step(&mut (), &1, &cas(1, 2, CasOutcome::Failed)), None);
        assert_eq!(m.step(&mut (), &1, &cas(3, 2, CasOutcome::Failed)), Some(1));
        assert_eq!(
            m.step(&mut (), &1, &cas(3, 2, CasOutcome::Unknown)),
            Some(1)
        );
        assert_eq!(
            m.step(&mut (), &3, &cas(3, 2, CasOutcome::Unknown)),
            Some(2)
        );
    }
}
