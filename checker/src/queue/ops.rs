//! A queue history's operations as the analysis reads them: a [`Send`] of a value
//! to a partition, and a [`Poll`] (or final-poll) of a partition's records, each
//! borrowed from the history's events and described in words for the anomalies
//! that involve it. The shapes are those of docs/history.md ("The queue
//! workload").

use serde_json::Value;

use super::QueueError;
use crate::history::{Outcome, Paired};
use crate::verdict::OpRef;

/// A `send` operation.
#[derive(Debug)]
pub(super) struct Send<'a> {
    pub(super) op: Paired<'a>,
    pub(super) partition: i64,
    pub(super) value: &'a Value,
    /// The acknowledged offset (`ok` with an offset only).
    pub(super) offset: Option<i64>,
}

/// An `ok` `poll` or `final-poll` operation.
#[derive(Debug)]
pub(super) struct Poll<'a> {
    pub(super) op: Paired<'a>,
    pub(super) partition: i64,
    /// The offset asked for.
    pub(super) from: i64,
    /// (offset, value), as returned.
    pub(super) records: Vec<(i64, &'a Value)>,
    /// The high watermark the broker answered with, if the history records it.
    pub(super) high_watermark: Option<i64>,
    /// Part of the final drain.
    pub(super) is_final: bool,
}

static NULL: Value = Value::Null;

fn shape(op: &Paired, message: String) -> QueueError {
    QueueError::Shape {
        index: op.completion.map_or(op.invoke.index, |c| c.index),
        message,
    }
}

fn int_field(v: &Value, field: &str) -> Option<i64> {
    v.get(field).and_then(Value::as_i64)
}

impl<'a> Send<'a> {
    /// Read a `send`: `{"partition":p,"value":v}`, and `"offset":o` when acknowledged.
    pub(super) fn parse(op: Paired<'a>) -> Result<Send<'a>, QueueError> {
        let invoked = &op.invoke.value;
        let partition = int_field(invoked, "partition").ok_or_else(|| {
            shape(
                &op,
                format!("send expects {{\"partition\":p,\"value\":v}}, got {invoked}"),
            )
        })?;
        let offset = if op.outcome == Outcome::Ok {
            int_field(op.value(), "offset")
        } else {
            None
        };
        Ok(Send {
            op,
            partition,
            value: invoked.get("value").unwrap_or(&NULL),
            offset,
        })
    }

    /// The send as an anomaly's operation.
    pub(super) fn op_ref(&self) -> OpRef {
        let end = match (self.op.outcome, self.offset) {
            (Outcome::Ok, Some(o)) => format!("ok at offset {o}"),
            (Outcome::Ok, None) => "ok (no offset)".to_string(),
            (Outcome::Fail, _) => "fail".to_string(),
            (Outcome::Info, _) => "info".to_string(),
        };
        let text = format!(
            "send {} to partition {} → {end}",
            crate::values::canonical(self.value),
            self.partition
        );
        OpRef::of(&self.op, text)
    }
}

impl<'a> Poll<'a> {
    /// Read a `poll` or `final-poll`: `{"partition":p,"offset":o}` →
    /// `{"partition":p,"records":[[offset,value],...],"high_watermark":hw}`. Only an
    /// `ok` poll read anything (`None` otherwise).
    pub(super) fn parse(op: Paired<'a>) -> Result<Option<Poll<'a>>, QueueError> {
        if op.outcome != Outcome::Ok {
            return Ok(None);
        }
        let (invoked, answer) = (&op.invoke.value, op.value());
        let expect = || {
            shape(
                &op,
                format!(
                    "{} expects {{\"partition\":p,\"offset\":o}} → {{\"partition\":p,\"records\":[[offset,value],...]}}, got {invoked} → {answer}",
                    op.invoke.f
                ),
            )
        };
        let partition = int_field(invoked, "partition")
            .or_else(|| int_field(answer, "partition"))
            .ok_or_else(expect)?;
        let mut records = Vec::new();
        for r in answer
            .get("records")
            .and_then(Value::as_array)
            .ok_or_else(expect)?
        {
            match r.as_array().map(Vec::as_slice) {
                Some([o, v]) => records.push((o.as_i64().ok_or_else(expect)?, v)),
                _ => return Err(expect()),
            }
        }
        Ok(Some(Poll {
            op,
            partition,
            from: int_field(invoked, "offset").unwrap_or(0),
            records,
            high_watermark: int_field(answer, "high_watermark"),
            is_final: op.invoke.f == "final-poll",
        }))
    }

    /// The offsets returned, in the order returned.
    pub(super) fn offsets(&self) -> impl Iterator<Item = i64> + '_ {
        self.records.iter().map(|(o, _)| *o)
    }

    /// The poll as an anomaly's operation (its first six records shown).
    pub(super) fn op_ref(&self) -> OpRef {
        let shown: Vec<String> = self
            .records
            .iter()
            .take(6)
            .map(|(o, v)| format!("{o}:{}", crate::values::canonical(v)))
            .collect();
        let more = if self.records.len() > 6 {
            format!(" …{} more", self.records.len() - 6)
        } else {
            String::new()
        };
        let text = format!(
            "{} partition {} from offset {} → [{}{more}]",
            self.op.invoke.f,
            self.partition,
            self.from,
            shown.join(" ")
        );
        OpRef::of(&self.op, text)
    }
}
