//! What every Maelstrom workload checker needs from a history: its operations
//! paired (only those of the workload's `f`s; other operations and the nemesis
//! are skipped), the fields of their values, and how values are named and
//! ordered in an anomaly. A history whose values lack what docs/history.md says
//! they carry is a [`HistoryError`] naming the event.

use std::cmp::Ordering;

use serde_json::Value;

use crate::history::{Event, Outcome, Paired, pair_events};
use crate::values;
use crate::verdict::{CheckerResult, OpRef};

/// A history a checker cannot read: the event to blame, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryError {
    /// History index of the offending event, when one is to blame.
    pub index: Option<u64>,
    pub message: String,
}

impl std::fmt::Display for HistoryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.index {
            Some(i) => write!(f, "event index {i}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for HistoryError {}

/// An unreadable history's verdict: unknown, saying why.
pub(crate) fn unreadable(e: HistoryError) -> CheckerResult {
    CheckerResult::unknown(format!("the history cannot be read: {e}"))
}

/// The history's client operations whose `f` is one of `fs`, in invocation order.
pub(crate) fn ops<'a>(events: &'a [Event], fs: &[&str]) -> Result<Vec<Paired<'a>>, HistoryError> {
    let paired = pair_events(events).map_err(|e| HistoryError {
        index: events.get(e.position).map(|ev| ev.index),
        message: e.message,
    })?;
    Ok(paired
        .into_iter()
        .filter(|op| fs.contains(&op.invoke.f.as_str()))
        .collect())
}

/// `field` of the invocation's value.
pub(crate) fn arg<'a>(op: &Paired<'a>, field: &str) -> Result<&'a Value, HistoryError> {
    op.invoke.value.get(field).ok_or_else(|| HistoryError {
        index: Some(op.invoke.index),
        message: format!("{} invocation without `{field}`", op.invoke.f),
    })
}

/// `field` of an `ok` completion's value.
pub(crate) fn result<'a>(op: &Paired<'a>, field: &str) -> Result<&'a Value, HistoryError> {
    op.value().get(field).ok_or_else(|| HistoryError {
        index: op.completion.map(|c| c.index),
        message: format!("ok {} without `{field}`", op.invoke.f),
    })
}

/// An integer field of the invocation's value.
pub(crate) fn int_arg(op: &Paired, field: &str) -> Result<i64, HistoryError> {
    arg(op, field)?.as_i64().ok_or_else(|| HistoryError {
        index: Some(op.invoke.index),
        message: format!("{} invocation's `{field}` is not an integer", op.invoke.f),
    })
}

/// The node an operation was sent to (its invocation's `node`), if it says.
pub(crate) fn node(op: &Paired) -> Option<String> {
    op.invoke
        .value
        .get("node")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The operation as an anomaly names it.
pub(crate) fn op_ref(op: &Paired, text: impl Into<String>) -> OpRef {
    OpRef::of(op, text)
}

/// How an operation ended, in words (`ok`, `fail`, `info`).
pub(crate) fn outcome(op: &Paired) -> &'static str {
    match (op.outcome, op.completion.is_some()) {
        (Outcome::Ok, _) => "ok",
        (Outcome::Fail, _) => "fail",
        (Outcome::Info, true) => "info",
        (Outcome::Info, false) => "never completed",
    }
}

/// A value as a message shows it: its exact text, cut at `max` characters.
pub(crate) fn show(v: &Value) -> String {
    const MAX: usize = 60;
    let text = values::canonical(v);
    if text.chars().count() <= MAX {
        return text;
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}…")
}

/// Values in the order anomalies list them: integers by number, then the others
/// by their exact text.
pub(crate) fn value_order(a: &Value, b: &Value) -> Ordering {
    match (a.as_i64(), b.as_i64()) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => values::canonical(a).cmp(&values::canonical(b)),
    }
}

/// Up to `max` values, shown, with how many more there are.
pub(crate) fn list(values: &[Value], max: usize) -> String {
    let shown: Vec<String> = values.iter().take(max).map(show).collect();
    match values.len().saturating_sub(max) {
        0 => shown.join(", "),
        more => format!("{}, … ({more} more)", shown.join(", ")),
    }
}

/// The `p`th percentile (0–100) of sorted samples (nearest rank).
pub(crate) fn percentile(sorted: &[u64], p: u64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len() as u64).div_ceil(100).max(1) as usize;
    sorted.get(rank - 1).copied()
}

#[cfg(test)]
pub(crate) mod testing {
    //! Building histories for the checkers' tests.
    use serde_json::Value;

    use crate::history::{Event, EventType, Process};

    /// A history built operation by operation, indices and times in order.
    #[derive(Default)]
    pub(crate) struct Builder {
        pub(crate) events: Vec<Event>,
    }

    impl Builder {
        pub(crate) fn event(
            &mut self,
            process: u64,
            kind: EventType,
            f: &str,
            value: Value,
        ) -> u64 {
            let index = self.events.len() as u64;
            self.events.push(Event {
                index,
                time: index * 1_000_000,
                process: Process::Client(process),
                kind,
                f: f.into(),
                value,
                error: None,
            });
            index
        }

        pub(crate) fn invoke(&mut self, process: u64, f: &str, value: Value) -> u64 {
            self.event(process, EventType::Invoke, f, value)
        }

        /// A whole operation: invocation, then its completion right after.
        pub(crate) fn op(
            &mut self,
            process: u64,
            f: &str,
            invoke: Value,
            kind: EventType,
            done: Value,
        ) -> u64 {
            let i = self.invoke(process, f, invoke);
            self.event(process, kind, f, done);
            i
        }

        pub(crate) fn nemesis(&mut self, f: &str) {
            let index = self.events.len() as u64;
            self.events.push(Event {
                index,
                time: index * 1_000_000,
                process: Process::Nemesis,
                kind: EventType::Info,
                f: f.into(),
                value: Value::Null,
                error: None,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_ordered_numbers_first_and_shown_bounded() {
        let mut v = vec![json!("b"), json!(10), json!(2), json!({"a": 1}), json!("a")];
        v.sort_by(value_order);
        assert_eq!(
            v,
            [json!(2), json!(10), json!("a"), json!("b"), json!({"a": 1})]
        );
        assert!(show(&json!("x".repeat(100))).ends_with('…'));
        assert_eq!(list(&[json!(1), json!(2), json!(3)], 2), "1, 2, … (1 more)");
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let s: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&s, 50), Some(50));
        assert_eq!(percentile(&s, 95), Some(95));
        assert_eq!(percentile(&s, 100), Some(100));
        assert_eq!(percentile(&[7], 50), Some(7));
        assert_eq!(percentile(&[], 50), None);
    }

    #[test]
    fn a_history_that_does_not_pair_is_an_error_naming_the_event() {
        let mut b = testing::Builder::default();
        b.invoke(0, "echo", json!({}));
        b.invoke(0, "echo", json!({}));
        let e = ops(&b.events, &["echo"]).unwrap_err();
        assert_eq!(e.index, Some(1));
        assert!(unreadable(e).reason.unwrap().contains("cannot be read"));
    }
}
