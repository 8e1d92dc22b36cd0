//! Histories of Knossos's other models read into model operations, one part per
//! key (a Jepsen `independent` history's keys): the mutex, the multi-register,
//! the set and the two queues. As in Knossos, an `ok` operation carries its
//! completion's value (what a read or dequeue returned, a transaction's reads
//! filled in), an indeterminate one its invocation's, and a `fail` one did not
//! happen. Each reader also reads the model's initial state, when one is given.

use serde_json::Value;

use super::LinError;
use super::fx::FxMap;
use super::model::{NIL, Val, Values};
use super::multi_register::{Micro, MultiRegister, Txn};
use super::mutex::{Mutex, MutexOp};
use super::queues::{FifoQueue, QueueOp, UnorderedQueue};
use super::set::{Set, SetOp};
use super::split::{Part, key_label, parts_by_key, shape};
use crate::history::{Outcome, Paired};

type Parts<'a, O> = Vec<Part<'a, O>>;

fn initial_error(model: &str, expected: &str, got: &Value) -> LinError {
    LinError::Initial(format!(
        "the {model} model's initial state is {expected}, not {got}"
    ))
}

/// `acquire` and `release`; the initial state `true` (held) or `false`.
pub(super) fn mutex<'a>(
    ops: &'a [Paired<'a>],
    initial: Option<&Value>,
) -> Result<(Mutex, Parts<'a, MutexOp>), LinError> {
    let init = match initial {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => return Err(initial_error("mutex", "true (held) or false (free)", v)),
    };
    let parts = parts_by_key(ops, |op, _, _| match op.invoke.f.as_str() {
        "acquire" => Ok(Some(MutexOp::Acquire)),
        "release" => Ok(Some(MutexOp::Release)),
        f => Err(shape(
            op,
            format!("a mutex knows acquire and release, not {f:?}"),
        )),
    })?;
    Ok((Mutex { init }, parts))
}

/// `txn` of `[read k v]` and `[write k v]` (also `r` and `w`); the initial state
/// a map of keys to values.
pub(super) fn multi_register<'a>(
    ops: &'a [Paired<'a>],
    initial: Option<&Value>,
) -> Result<(MultiRegister, Parts<'a, Txn>), LinError> {
    let mut values = Values::default();
    let mut keys: Vec<String> = Vec::new();
    let mut key_ids: FxMap<String, u32> = FxMap::default();
    let mut key = |k: &Value| -> u32 {
        let name = crate::values::canonical(k);
        *key_ids.entry(name).or_insert_with(|| {
            keys.push(key_label(k));
            keys.len() as u32 - 1
        })
    };
    let mut init: Vec<(u32, Val)> = Vec::new();
    match initial {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                init.push((key(&Value::String(k.clone())), values.intern(v)));
            }
        }
        Some(v) => {
            return Err(initial_error(
                "multi-register",
                "a map of keys to values",
                v,
            ));
        }
    }
    let parts = parts_by_key(ops, |op, arg, done| {
        if op.invoke.f != "txn" {
            return Err(shape(
                op,
                format!("a multi-register knows txn, not {:?}", op.invoke.f),
            ));
        }
        // An ok transaction's reads are filled in on its completion.
        let txn = if op.outcome == Outcome::Ok && done.is_array() {
            done
        } else {
            arg
        };
        let expect = || {
            shape(
                op,
                format!("a txn is a list of [read k v] and [write k v], got {txn}"),
            )
        };
        let mut micros = Vec::new();
        for m in txn.as_array().ok_or_else(expect)? {
            let Some([f, k, v]) = m.as_array().map(Vec::as_slice) else {
                return Err(expect());
            };
            micros.push(match f.as_str() {
                Some("read" | "r") if v.is_null() => Micro::Read(key(k), None),
                Some("read" | "r") => Micro::Read(key(k), Some(values.intern(v))),
                Some("write" | "w") => Micro::Write(key(k), values.intern(v)),
                _ => return Err(expect()),
            });
        }
        Ok(Some(Txn(micros.into())))
    })?;
    let mut row = vec![NIL; keys.len()];
    for (k, v) in init {
        row[k as usize] = v;
    }
    let model = MultiRegister {
        keys,
        names: values.into_names(),
        init: row,
    };
    Ok((model, parts))
}

/// `add` an element, `read` the whole set (a vector or `#{…}`); the initial
/// state a list of elements. A read that never completed is left out.
pub(super) fn set<'a>(
    ops: &'a [Paired<'a>],
    initial: Option<&Value>,
) -> Result<(Set, Parts<'a, SetOp>), LinError> {
    let mut values = Values::default();
    let init: Vec<Val> = match initial {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(es)) => es.iter().map(|e| values.intern(e)).collect(),
        Some(v) => return Err(initial_error("set", "a list of elements", v)),
    };
    // Reads keep element ids until every element is known, then become bitsets.
    let mut reads: Vec<Vec<Val>> = Vec::new();
    let parts = parts_by_key(ops, |op, arg, done| match op.invoke.f.as_str() {
        "add" => Ok(Some(SetOp::Add(values.intern(arg)))),
        "read" if op.outcome != Outcome::Ok => Ok(None),
        "read" => {
            let Some(es) = done.as_array() else {
                return Err(shape(
                    op,
                    format!("a set read returns the whole set (a list or #{{…}}), got {done}"),
                ));
            };
            reads.push(es.iter().map(|e| values.intern(e)).collect());
            Ok(Some(SetOp::Read(Box::new([reads.len() as u32 - 1]))))
        }
        f => Err(shape(op, format!("a set knows add and read, not {f:?}"))),
    })?;
    let words = Set::words(values.len());
    let mut parts = parts;
    for part in &mut parts {
        for o in &mut part.ops {
            if let SetOp::Read(i) = &o.op {
                let ids = std::mem::take(&mut reads[i[0] as usize]);
                o.op = SetOp::Read(Set::bits(words, ids));
            }
        }
    }
    let model = Set {
        init: Set::bits(words, init),
        names: values.into_names(),
    };
    Ok((model, parts))
}

/// The queues' operations, the values interned; `fifo`: an indeterminate
/// dequeue took the head (unordered: it is left out; see [`super::queues`]).
fn queue_parts<'a>(
    ops: &'a [Paired<'a>],
    values: &mut Values,
    fifo: bool,
) -> Result<Parts<'a, QueueOp>, LinError> {
    parts_by_key(ops, |op, arg, done| match op.invoke.f.as_str() {
        "enqueue" => Ok(Some(QueueOp::Enqueue(values.intern(arg)))),
        "dequeue" if op.outcome == Outcome::Ok => Ok(Some(QueueOp::Dequeue(values.intern(done)))),
        "dequeue" if fifo => Ok(Some(QueueOp::DequeueAny)),
        "dequeue" => Ok(None),
        f => Err(shape(
            op,
            format!("a queue knows enqueue and dequeue, not {f:?}"),
        )),
    })
}

fn initial_values(
    model: &str,
    initial: Option<&Value>,
    values: &mut Values,
) -> Result<Vec<Val>, LinError> {
    match initial {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(vs)) => Ok(vs.iter().map(|v| values.intern(v)).collect()),
        Some(v) => Err(initial_error(model, "a list of values, oldest first", v)),
    }
}

/// `enqueue` and `dequeue`, oldest first; the initial state a list of values.
pub(super) fn fifo_queue<'a>(
    ops: &'a [Paired<'a>],
    initial: Option<&Value>,
) -> Result<(FifoQueue, Parts<'a, QueueOp>), LinError> {
    let mut values = Values::default();
    let init = initial_values("fifo-queue", initial, &mut values)?;
    let parts = queue_parts(ops, &mut values, true)?;
    let names = values.into_names();
    Ok((FifoQueue { names, init }, parts))
}

/// `enqueue` and `dequeue`, in any order; the initial state a list of values.
pub(super) fn unordered_queue<'a>(
    ops: &'a [Paired<'a>],
    initial: Option<&Value>,
) -> Result<(UnorderedQueue, Parts<'a, QueueOp>), LinError> {
    let mut values = Values::default();
    let init = initial_values("unordered-queue", initial, &mut values)?;
    let parts = queue_parts(ops, &mut values, false)?;
    let mut counts = vec![0u32; values.len()];
    for v in init {
        counts[v as usize] += 1;
    }
    let names = values.into_names();
    Ok((
        UnorderedQueue {
            names,
            init: counts,
        },
        parts,
    ))
}
