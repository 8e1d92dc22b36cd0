//! A queue history's operations as the analysis keeps them, compactly: a
//! [`Send`] of a value to a partition, and a [`Poll`] (or final-poll) of a
//! partition's records, each with what names its operation in an anomaly
//! ([`OpInfo`]). Values are interned ([`Interned`]: an integer id per distinct
//! value, by its exact text), a poll's records are a range of one shared arena
//! of (offset, value id) pairs, so a record costs 12 bytes and no allocation. The
//! shapes are those of docs/history.md ("The queue workload").

use serde_json::Value;

use crate::history::Outcome;
use crate::linear::fx::FxMap;
use crate::values;
use crate::verdict::OpRef;

/// An interned value.
pub(crate) type Val = u32;

/// A value's exact text, kept once.
#[derive(Debug)]
enum Name {
    Int(i64),
    Text(Box<str>),
}

/// The distinct values of a history, each with its id: integers that fit 64 bits
/// by their number, others by their exact text ([`values::canonical`]).
#[derive(Debug, Default)]
pub(crate) struct Interned {
    ints: FxMap<i64, Val>,
    texts: FxMap<Box<str>, Val>,
    names: Vec<Name>,
}

impl Interned {
    pub(crate) fn int(&mut self, i: i64) -> Val {
        let names = &mut self.names;
        *self.ints.entry(i).or_insert_with(|| {
            names.push(Name::Int(i));
            names.len() as Val - 1
        })
    }

    /// A value by its exact text (never that of an `i64`: see [`Self::int`]).
    pub(crate) fn text(&mut self, text: &str) -> Val {
        if let Some(&v) = self.texts.get(text) {
            return v;
        }
        let v = self.names.len() as Val;
        self.names.push(Name::Text(text.into()));
        self.texts.insert(text.into(), v);
        v
    }

    pub(crate) fn value(&mut self, v: &Value) -> Val {
        match v.as_i64() {
            Some(i) => self.int(i),
            None => self.text(&values::canonical(v)),
        }
    }

    /// The value's exact text.
    pub(crate) fn show(&self, v: Val) -> String {
        match &self.names[v as usize] {
            Name::Int(i) => i.to_string(),
            Name::Text(t) => t.to_string(),
        }
    }

    /// The value as results.json gives it ([`values::exported`]).
    pub(crate) fn exported(&self, v: Val) -> Value {
        match &self.names[v as usize] {
            Name::Int(i) => Value::from(*i),
            Name::Text(t) => crate::format::read_json(t)
                .map(|v| values::exported(&v))
                .unwrap_or_else(|_| Value::String(t.to_string())),
        }
    }
}

/// Which operation an anomaly names.
#[derive(Debug, Clone, Copy)]
pub(super) struct OpInfo {
    pub(super) invoke_index: u64,
    /// The completion's index (`None`: never completed).
    pub(super) complete_index: Option<u64>,
    pub(super) process: u64,
    pub(super) outcome: Outcome,
}

impl OpInfo {
    fn op_ref(&self, f: &str, text: String) -> OpRef {
        OpRef {
            invoke: self.invoke_index,
            complete: self.complete_index,
            process: self.process,
            f: f.to_string(),
            text,
        }
    }
}

/// A `send` operation.
#[derive(Debug, Clone, Copy)]
pub(super) struct Send {
    pub(super) op: OpInfo,
    pub(super) partition: i64,
    pub(super) value: Val,
    /// The acknowledged offset (`ok` with an offset only).
    pub(super) offset: Option<i64>,
    /// Attempts the producer made (its completion's `attempts`; 1 without one).
    pub(super) attempts: u32,
    /// The idempotent producer's id (its completion's `producer`), if it was one.
    pub(super) producer: Option<i64>,
    /// Its last attempt was refused as out of sequence (the completion's `error`
    /// starts with `OUT_OF_ORDER_SEQUENCE_NUMBER`).
    pub(super) refused_out_of_sequence: bool,
    /// The epoch of the leader that answered its last attempt (the completion's
    /// `leader_epoch`): the one that acknowledged it, or refused it.
    pub(super) leader_epoch: Option<i64>,
}

/// An `ok` `poll` or `final-poll` operation.
#[derive(Debug, Clone)]
pub(super) struct Poll {
    pub(super) op: OpInfo,
    pub(super) partition: i64,
    /// The offset asked for.
    pub(super) from: i64,
    /// Its records: `Records` positions `start..end`, as returned.
    pub(super) start: usize,
    pub(super) end: usize,
    /// The high watermark the broker answered with, if the history records it.
    pub(super) high_watermark: Option<i64>,
    /// Part of the final drain.
    pub(super) is_final: bool,
}

/// Every poll's records, one after another: (offset, value).
#[derive(Debug, Default)]
pub(super) struct Records {
    pub(super) offsets: Vec<i64>,
    pub(super) values: Vec<Val>,
}

impl Records {
    pub(super) fn push(&mut self, offset: i64, value: Val) {
        self.offsets.push(offset);
        self.values.push(value);
    }
}

impl Poll {
    /// The offsets returned, in the order returned.
    pub(super) fn offsets<'r>(&self, r: &'r Records) -> &'r [i64] {
        &r.offsets[self.start..self.end]
    }

    /// The records returned: (offset, value).
    pub(super) fn records<'r>(&self, r: &'r Records) -> impl Iterator<Item = (i64, Val)> + 'r {
        let (start, end) = (self.start, self.end);
        r.offsets[start..end]
            .iter()
            .copied()
            .zip(r.values[start..end].iter().copied())
    }

    pub(super) fn f(&self) -> &'static str {
        if self.is_final { "final-poll" } else { "poll" }
    }

    /// The poll as an anomaly's operation (its first six records shown).
    pub(super) fn op_ref(&self, r: &Records, names: &Interned) -> OpRef {
        let shown: Vec<String> = self
            .records(r)
            .take(6)
            .map(|(o, v)| format!("{o}:{}", names.show(v)))
            .collect();
        let n = self.end - self.start;
        let more = if n > 6 {
            format!(" …{} more", n - 6)
        } else {
            String::new()
        };
        let text = format!(
            "{} partition {} from offset {} → [{}{more}]",
            self.f(),
            self.partition,
            self.from,
            shown.join(" ")
        );
        self.op.op_ref(self.f(), text)
    }
}

impl Send {
    /// The send as an anomaly's operation.
    pub(super) fn op_ref(&self, names: &Interned) -> OpRef {
        let end = match (self.op.outcome, self.offset) {
            (Outcome::Ok, Some(o)) => format!("ok at offset {o}"),
            (Outcome::Ok, None) => "ok (no offset)".to_string(),
            (Outcome::Fail, _) => "fail".to_string(),
            (Outcome::Info, _) => "info".to_string(),
        };
        let retries = match self.attempts {
            1 => String::new(),
            n => format!(" after {n} attempts"),
        };
        let end = match self.refused_out_of_sequence {
            true => format!("{end} (OUT_OF_ORDER_SEQUENCE_NUMBER)"),
            false => end,
        };
        let text = format!(
            "send {} to partition {} → {end}{retries}",
            names.show(self.value),
            self.partition
        );
        self.op.op_ref("send", text)
    }
}
