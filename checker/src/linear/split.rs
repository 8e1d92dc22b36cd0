//! A history read into model operations, one part per key: the register's values
//! interned to integers, the kv store's strings to text ids, and each operation
//! kept with the history operation it came from, for explanations. What each
//! outcome means for the search (docs/history.md): `ok` happened; `info`, and an
//! invocation never completed, may take effect at any point after its invocation
//! or never (no completion position); `fail` did not happen and is dropped —
//! except that a failed cas can be read as an observation (Porcupine's etcd
//! histories).

use std::borrow::Cow;

use serde_json::Value;

use super::LinError;
use super::fx::FxMap;
use super::kv::KvOp;
use super::model::{CasOutcome, CasRegister, RegisterOp, Values};
use super::search::LinOp;
use super::strings::{TextId, Texts, TextsBuilder};
use crate::history::{Outcome, Paired};

/// One key's operations, with the history operation each came from.
pub(super) struct Part<'a, O> {
    pub(super) key: Option<Value>,
    pub(super) ops: Vec<LinOp<O>>,
    pub(super) origin: Vec<&'a Paired<'a>>,
    /// `Some(n)`: these are the few operations of a key of `n` that already
    /// cannot be linearized on their own (found by the unique-value path).
    pub(super) narrowed_from: Option<usize>,
}

impl<'a, O> Part<'a, O> {
    fn new(key: Option<Value>) -> Self {
        Part {
            key,
            ops: Vec::new(),
            origin: Vec::new(),
            narrowed_from: None,
        }
    }

    /// Operations without a history operation behind them (for unit tests).
    #[cfg(test)]
    pub(super) fn bare(ops: Vec<LinOp<O>>) -> Self {
        Part {
            ops,
            ..Part::new(None)
        }
    }

    /// Keep the operations whose `keep` is true.
    pub(super) fn retain(&mut self, keep: &[bool]) {
        let mut k = keep.iter();
        self.ops.retain(|_| *k.next().unwrap_or(&true));
        if !self.origin.is_empty() {
            let mut k = keep.iter();
            self.origin.retain(|_| *k.next().unwrap_or(&true));
        }
    }

    /// The part of only the operations `which` (ascending), narrowed from this one.
    pub(super) fn narrowed(&self, which: &[usize]) -> Self
    where
        O: Clone,
    {
        Part {
            key: self.key.clone(),
            ops: which.iter().map(|&i| self.ops[i].clone()).collect(),
            origin: which.iter().map(|&i| self.origin[i]).collect(),
            narrowed_from: Some(self.ops.len()),
        }
    }
}

/// The key and the payload of an operation's value: `{"key":k,"value":v}`, or a
/// bare value for single-register histories.
fn keyed(v: &Value) -> (Option<&Value>, &Value) {
    match v {
        Value::Object(m) => match m.get("key") {
            Some(k) => (Some(k), m.get("value").unwrap_or(&Value::Null)),
            None => (None, v),
        },
        _ => (None, v),
    }
}

/// A key's identity: its JSON text, so the string "1" and the number 1 are two
/// keys, and "" (not JSON) for no key, distinct from the empty string `""`.
fn key_name(key: Option<&Value>) -> Cow<'_, str> {
    match key {
        None => Cow::Borrowed(""),
        Some(v) => Cow::Owned(crate::values::canonical(v)),
    }
}

/// A key as shown: strings as they are, other JSON as text.
pub(super) fn key_label(key: &Value) -> String {
    match key {
        Value::String(s) => s.clone(),
        v => crate::values::canonical(v),
    }
}

fn part_for<'a, 'o, O>(
    parts: &'a mut Vec<Part<'o, O>>,
    index: &mut FxMap<Cow<'o, str>, usize>,
    key: Option<&'o Value>,
) -> &'a mut Part<'o, O> {
    let name = key_name(key);
    let i = match index.get(&name) {
        Some(&i) => i,
        None => {
            parts.push(Part::new(key.cloned()));
            index.insert(name, parts.len() - 1);
            parts.len() - 1
        }
    };
    &mut parts[i]
}

/// Read every operation that did not fail with `read` (`Ok(None)`: left out),
/// one part per key: `read` gets the operation, its invocation's value and its
/// completion's (without the key), and an `ok` operation is placed at its
/// completion, another one anywhere after its invocation.
pub(super) fn parts_by_key<'a, O>(
    ops: &'a [Paired<'a>],
    mut read: impl FnMut(&'a Paired<'a>, &'a Value, &'a Value) -> Result<Option<O>, LinError>,
) -> Result<Vec<Part<'a, O>>, LinError> {
    let mut parts = Vec::new();
    let mut index = FxMap::default();
    for op in ops {
        if op.outcome == Outcome::Fail {
            continue;
        }
        let (key, arg) = keyed(&op.invoke.value);
        let Some(mop) = read(op, arg, keyed(op.value()).1)? else {
            continue;
        };
        let part = part_for(&mut parts, &mut index, key);
        part.ops.push(LinOp {
            op: mop,
            invoke: op.invoke_pos,
            complete: if op.outcome == Outcome::Ok {
                op.complete_pos
            } else {
                None
            },
        });
        part.origin.push(op);
    }
    Ok(parts)
}

/// An operation that does not fit the model: where, and why.
pub(super) fn shape(op: &Paired, message: String) -> LinError {
    LinError::Shape {
        index: op.invoke.index,
        message,
    }
}

/// How a history's register operations are read.
#[derive(Debug, Clone, Copy)]
pub(super) struct RegisterReading<'v> {
    /// A cas is an operation (`cas-register`), or an error (`register`).
    pub(super) cas: bool,
    /// A failed cas observed a value other than the expected one (Porcupine's
    /// etcd histories) instead of not having happened.
    pub(super) failed_cas_observes: bool,
    /// A read that returned nil says nothing about the value (Knossos's
    /// register models: a nil read matches any value).
    pub(super) nil_read_unknown: bool,
    /// The register's value before any operation (`null`: nil).
    pub(super) initial: &'v Value,
}

pub(super) fn register_parts<'a>(
    ops: &'a [Paired<'a>],
    reading: RegisterReading,
) -> Result<(CasRegister, Vec<Part<'a, RegisterOp>>), LinError> {
    let mut values = Values::default();
    let init = values.intern(reading.initial);
    let mut intern = |v: &Value| values.intern(v);
    let observes = reading.failed_cas_observes;
    let mut parts = Vec::new();
    let mut index = FxMap::default();
    for op in ops {
        let (key, arg) = keyed(&op.invoke.value);
        let failed = op.outcome == Outcome::Fail;
        let complete = if op.outcome == Outcome::Info {
            None
        } else {
            op.complete_pos
        };
        let rop = match op.invoke.f.as_str() {
            "read" => match op.outcome {
                Outcome::Ok => match keyed(op.value()).1 {
                    Value::Null if reading.nil_read_unknown => RegisterOp::Read(None),
                    v => RegisterOp::Read(Some(intern(v))),
                },
                Outcome::Fail if !observes => continue,
                _ => RegisterOp::Read(None),
            },
            "write" if failed => continue,
            "write" => RegisterOp::Write(intern(arg)),
            "cas" if !reading.cas => {
                return Err(shape(
                    op,
                    "the register model knows read and write, not cas (check with the cas-register model)"
                        .to_string(),
                ));
            }
            "cas" => {
                let Some([from, to]) = arg.as_array().map(Vec::as_slice) else {
                    return Err(shape(op, format!("cas expects [expected, new], got {arg}")));
                };
                let outcome = match op.outcome {
                    Outcome::Ok => CasOutcome::Ok,
                    Outcome::Fail if observes => CasOutcome::Failed,
                    Outcome::Fail => continue,
                    Outcome::Info => CasOutcome::Unknown,
                };
                RegisterOp::Cas {
                    from: intern(from),
                    to: intern(to),
                    outcome,
                }
            }
            f => {
                let knows = if reading.cas {
                    "read, write and cas"
                } else {
                    "read and write"
                };
                return Err(shape(op, format!("a register knows {knows}, not {f:?}")));
            }
        };
        let part = part_for(&mut parts, &mut index, key);
        part.ops.push(LinOp {
            op: rop,
            invoke: op.invoke_pos,
            complete,
        });
        part.origin.push(op);
    }
    let names = values.into_names();
    Ok((CasRegister { names, init }, parts))
}

/// A kv history read for checking.
pub(super) struct KvParts<'a> {
    /// The key names, by key number.
    pub(super) keys: Vec<String>,
    /// The distinct string values.
    pub(super) texts: Texts,
    /// The operations of each part: each key, or one part for the whole store.
    pub(super) parts: Vec<Part<'a, KvOp>>,
}

/// Read a kv history: every key numbered in the order it first appears, every
/// string value interned, and the operations that did not fail in one part per
/// key (`split`) or in one part for the whole store.
pub(super) fn kv_parts<'a>(ops: &'a [Paired<'a>], split: bool) -> Result<KvParts<'a>, LinError> {
    let mut keys = KeyNumbers::default();
    let mut texts = TextsBuilder::default();
    let mut parts = Vec::new();
    for op in ops {
        let (Some(key), arg) = keyed(&op.invoke.value) else {
            return Err(shape(
                op,
                format!(
                    "kv expects {{\"key\":k,\"value\":v}}, got {}",
                    op.invoke.value
                ),
            ));
        };
        if op.outcome == Outcome::Fail {
            continue;
        }
        let k = keys.number(key);
        let kop = kv_op(op, k, arg, &mut texts)?;
        let complete = if op.outcome == Outcome::Info {
            None
        } else {
            op.complete_pos
        };
        // Parts are made in the order keys first appear, so with a split the
        // key's number is its part's.
        let p = if split { k as usize } else { 0 };
        if p == parts.len() {
            parts.push(Part::new(split.then(|| key.clone())));
        }
        let part = &mut parts[p];
        part.ops.push(LinOp {
            op: kop,
            invoke: op.invoke_pos,
            complete,
        });
        part.origin.push(op);
    }
    Ok(KvParts {
        keys: keys.names,
        texts: texts.finish(),
        parts,
    })
}

/// A kv history's keys, numbered in the order they first appear.
#[derive(Default)]
struct KeyNumbers<'a> {
    /// The key names, by key number.
    names: Vec<String>,
    ids: FxMap<Cow<'a, str>, u32>,
}

impl<'a> KeyNumbers<'a> {
    /// The number of `key`, a new one if it has not appeared before.
    fn number(&mut self, key: &'a Value) -> u32 {
        let name = key_name(Some(key));
        match self.ids.get(&name) {
            Some(&k) => k,
            None => {
                self.names.push(key_label(key));
                self.ids.insert(name, self.names.len() as u32 - 1);
                self.names.len() as u32 - 1
            }
        }
    }
}

/// The kv operation `op` on key number `k`, with its invocation's value `arg`:
/// a get (its value if it completed `ok`), a put or an append.
fn kv_op<'a>(
    op: &'a Paired<'a>,
    k: u32,
    arg: &'a Value,
    texts: &mut TextsBuilder<'a>,
) -> Result<KvOp, LinError> {
    let mut text = |v: &'a Value| -> Result<TextId, LinError> {
        match v {
            Value::String(s) => Ok(texts.intern(s)),
            Value::Null => Ok(texts.intern("")),
            other => Err(shape(op, format!("kv values are strings, got {other}"))),
        }
    };
    Ok(match op.invoke.f.as_str() {
        "get" if op.outcome == Outcome::Ok => KvOp::Get {
            key: k,
            value: Some(text(keyed(op.value()).1)?),
        },
        "get" => KvOp::Get {
            key: k,
            value: None,
        },
        "put" => KvOp::Put {
            key: k,
            value: text(arg)?,
        },
        "append" => KvOp::Append {
            key: k,
            value: text(arg)?,
        },
        f => {
            return Err(shape(
                op,
                format!("kv knows get, put and append, not {f:?}"),
            ));
        }
    })
}
