//! A kafka history read once into what the checks need: every send with its key,
//! message and acknowledged offset; every `ok` poll and final poll split by key,
//! with the offset asked for and the records returned; every acknowledged commit
//! and every `ok` listing of committed offsets, per key. Keys and messages are
//! interned (messages by their exact text). The shapes are docs/history.md's
//! ("The Maelstrom workloads", kafka).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::super::reading::{self, HistoryError};
use crate::history::{Outcome, Paired};
use crate::values;
use crate::verdict::OpRef;

pub(super) type Key = u32;
pub(super) type Msg = u32;

#[derive(Debug)]
pub(super) struct Send {
    pub(super) op: usize,
    pub(super) key: Key,
    pub(super) msg: Msg,
    /// The offset it was acknowledged at (`ok` sends only).
    pub(super) offset: Option<i64>,
}

/// One key of an `ok` poll or final poll.
#[derive(Debug)]
pub(super) struct Polled {
    pub(super) op: usize,
    pub(super) key: Key,
    /// The offset asked for (absent: the key was not asked for, yet returned).
    pub(super) from: Option<i64>,
    /// (offset, message), as returned.
    pub(super) records: Vec<(i64, Msg)>,
    pub(super) is_final: bool,
}

/// One key of an acknowledged `commit_offsets`.
#[derive(Debug)]
pub(super) struct Commit {
    pub(super) op: usize,
    pub(super) key: Key,
    pub(super) offset: i64,
}

/// One key of an `ok` `list_committed_offsets`.
#[derive(Debug)]
pub(super) struct Listing {
    pub(super) op: usize,
    pub(super) key: Key,
    /// The committed offset answered (absent: the key was left out).
    pub(super) offset: Option<i64>,
}

#[derive(Debug)]
pub(super) struct Kafka<'a> {
    pub(super) ops: &'a [Paired<'a>],
    pub(super) keys: Vec<String>,
    pub(super) msgs: Vec<&'a Value>,
    pub(super) sends: Vec<Send>,
    pub(super) polls: Vec<Polled>,
    pub(super) commits: Vec<Commit>,
    pub(super) listings: Vec<Listing>,
}

/// A shape error at the completion (or invocation) of `op`.
fn shape(op: &Paired, at_completion: bool, message: String) -> HistoryError {
    HistoryError {
        index: if at_completion {
            op.completion.map(|c| c.index)
        } else {
            Some(op.invoke.index)
        },
        message: format!("{} {message}", op.invoke.f),
    }
}

/// An object of integer offsets by key.
fn offsets<'v>(
    op: &Paired,
    v: Option<&'v Value>,
    at_completion: bool,
) -> Result<Vec<(&'v str, i64)>, HistoryError> {
    let Some(Value::Object(m)) = v else {
        return Err(shape(op, at_completion, "without an offsets object".into()));
    };
    m.iter()
        .map(|(k, o)| {
            let o = o.as_i64().ok_or_else(|| {
                shape(
                    op,
                    at_completion,
                    format!("offset of {k} is not an integer"),
                )
            })?;
            Ok((k.as_str(), o))
        })
        .collect()
}

impl<'a> Kafka<'a> {
    pub(super) fn read(ops: &'a [Paired<'a>]) -> Result<Kafka<'a>, HistoryError> {
        let mut k = Kafka {
            ops,
            keys: Vec::new(),
            msgs: Vec::new(),
            sends: Vec::new(),
            polls: Vec::new(),
            commits: Vec::new(),
            listings: Vec::new(),
        };
        let mut names = Names::default();
        for (i, op) in ops.iter().enumerate() {
            match op.invoke.f.as_str() {
                "send" => k.read_send(&mut names, i, op)?,
                _ if op.outcome != Outcome::Ok => {}
                "poll" | "final-poll" => k.read_poll(&mut names, i, op)?,
                "commit_offsets" => {
                    for (key, offset) in offsets(op, op.invoke.value.get("offsets"), false)? {
                        let key = names.key(&mut k.keys, key);
                        k.commits.push(Commit { op: i, key, offset });
                    }
                }
                _ => k.read_listing(&mut names, i, op)?,
            }
        }
        Ok(k)
    }

    fn read_send(
        &mut self,
        names: &mut Names,
        i: usize,
        op: &'a Paired<'a>,
    ) -> Result<(), HistoryError> {
        let key = match reading::arg(op, "key")? {
            Value::String(s) => s.clone(),
            other => values::canonical(other),
        };
        let key = names.key(&mut self.keys, &key);
        let msg = names.msg(&mut self.msgs, reading::arg(op, "msg")?);
        let offset = match op.outcome {
            Outcome::Ok => Some(
                reading::result(op, "offset")?
                    .as_i64()
                    .ok_or_else(|| shape(op, true, "offset is not an integer".into()))?,
            ),
            _ => None,
        };
        self.sends.push(Send {
            op: i,
            key,
            msg,
            offset,
        });
        Ok(())
    }

    fn read_poll(
        &mut self,
        names: &mut Names,
        i: usize,
        op: &'a Paired<'a>,
    ) -> Result<(), HistoryError> {
        let asked: BTreeMap<&str, i64> = offsets(op, op.invoke.value.get("offsets"), false)?
            .into_iter()
            .collect();
        let Value::Object(msgs) = reading::result(op, "msgs")? else {
            return Err(shape(op, true, "msgs is not an object".into()));
        };
        let mut by_key: BTreeMap<&str, Vec<(i64, Msg)>> =
            asked.keys().map(|k| (*k, Vec::new())).collect();
        for (key, pairs) in msgs {
            let records = by_key.entry(key.as_str()).or_default();
            for pair in pairs
                .as_array()
                .ok_or_else(|| shape(op, true, format!("msgs of {key} are not a list")))?
            {
                let (Some(o), Some(m)) = (pair.get(0).and_then(Value::as_i64), pair.get(1)) else {
                    return Err(shape(
                        op,
                        true,
                        format!("a record of {key} is not [offset, message]"),
                    ));
                };
                records.push((o, names.msg(&mut self.msgs, m)));
            }
        }
        for (key, records) in by_key {
            let id = names.key(&mut self.keys, key);
            self.polls.push(Polled {
                op: i,
                key: id,
                from: asked.get(key).copied(),
                records,
                is_final: op.invoke.f == "final-poll",
            });
        }
        Ok(())
    }

    fn read_listing(
        &mut self,
        names: &mut Names,
        i: usize,
        op: &'a Paired<'a>,
    ) -> Result<(), HistoryError> {
        let Value::Array(keys) = reading::arg(op, "keys")? else {
            return Err(shape(op, false, "keys is not a list".into()));
        };
        let answered: BTreeMap<&str, i64> = offsets(op, op.value().get("offsets"), true)?
            .into_iter()
            .collect();
        for key in keys {
            let name = key
                .as_str()
                .ok_or_else(|| shape(op, false, "key is not a string".into()))?;
            let offset = answered.get(name).copied();
            let key = names.key(&mut self.keys, name);
            self.listings.push(Listing { op: i, key, offset });
        }
        Ok(())
    }

    pub(super) fn key_name(&self, key: Key) -> &str {
        &self.keys[key as usize]
    }

    pub(super) fn show(&self, msg: Msg) -> String {
        reading::show(self.msgs[msg as usize])
    }

    pub(super) fn exported(&self, msg: Msg) -> Value {
        values::exported(self.msgs[msg as usize])
    }

    pub(super) fn send_ref(&self, s: &Send) -> OpRef {
        let op = &self.ops[s.op];
        let end = match s.offset {
            Some(o) => format!("ok at offset {o}"),
            None => reading::outcome(op).to_string(),
        };
        let text = format!(
            "send {} to {} → {end}",
            self.show(s.msg),
            self.key_name(s.key)
        );
        reading::op_ref(op, text)
    }

    pub(super) fn poll_ref(&self, p: &Polled) -> OpRef {
        let shown: Vec<String> = p
            .records
            .iter()
            .take(6)
            .map(|(o, m)| format!("{o}:{}", self.show(*m)))
            .collect();
        let more = match p.records.len() {
            n if n > 6 => format!(" …{} more", n - 6),
            _ => String::new(),
        };
        let from = p
            .from
            .map_or("unasked".to_string(), |f| format!("from {f}"));
        let f = &self.ops[p.op].invoke.f;
        let text = format!(
            "{f} {} {from} → [{}{more}]",
            self.key_name(p.key),
            shown.join(" ")
        );
        reading::op_ref(&self.ops[p.op], text)
    }

    pub(super) fn commit_ref(&self, c: &Commit) -> OpRef {
        let text = format!("commit_offsets {} → {} ok", self.key_name(c.key), c.offset);
        reading::op_ref(&self.ops[c.op], text)
    }

    pub(super) fn listing_ref(&self, l: &Listing) -> OpRef {
        let answered = l.offset.map_or("nothing".to_string(), |o| o.to_string());
        let text = format!(
            "list_committed_offsets {} → {answered}",
            self.key_name(l.key)
        );
        reading::op_ref(&self.ops[l.op], text)
    }
}

/// The interning of keys and messages.
#[derive(Default)]
struct Names {
    keys: HashMap<String, Key>,
    msgs: HashMap<String, Msg>,
}

impl Names {
    fn key(&mut self, keys: &mut Vec<String>, name: &str) -> Key {
        *self.keys.entry(name.to_string()).or_insert_with(|| {
            keys.push(name.to_string());
            keys.len() as Key - 1
        })
    }

    fn msg<'a>(&mut self, msgs: &mut Vec<&'a Value>, v: &'a Value) -> Msg {
        *self.msgs.entry(values::canonical(v)).or_insert_with(|| {
            msgs.push(v);
            msgs.len() as Msg - 1
        })
    }
}
