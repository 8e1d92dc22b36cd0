//! The history: what clients asked for and what they were told (docs/history.md).
//!
//! A history is a sequence of [`Event`]s — one JSON object per line in
//! `history.jsonl` — in the order they happened. Checkers do not reason about
//! events but about [`Op`]s: an invocation paired with its completion on the same
//! process. An `ok` completion means the operation happened, `fail` that it
//! certainly did not, and `info` that nobody knows: it may have taken effect at any
//! point after its invocation, or never. An invocation without a completion (the
//! tail of a history whose writer crashed) is treated exactly like `info`.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

/// Who performed an event: a client process, or the nemesis injecting faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Process {
    /// A client, by number. A client whose operation ends in `info` never invokes
    /// again; it continues under a new number.
    Client(u64),
    /// The fault injector (`"nemesis"` in JSON).
    Nemesis,
}

impl fmt::Display for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Process::Client(n) => write!(f, "{n}"),
            Process::Nemesis => f.write_str("nemesis"),
        }
    }
}

impl Serialize for Process {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Process::Client(n) => s.serialize_u64(*n),
            Process::Nemesis => s.serialize_str("nemesis"),
        }
    }
}

impl<'de> Deserialize<'de> for Process {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ProcessVisitor;
        impl Visitor<'_> for ProcessVisitor {
            type Value = Process;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a non-negative client number or \"nemesis\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Process, E> {
                Ok(Process::Client(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Process, E> {
                u64::try_from(v)
                    .map(Process::Client)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Process, E> {
                if v == "nemesis" {
                    Ok(Process::Nemesis)
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(v), &self))
                }
            }
        }
        d.deserialize_any(ProcessVisitor)
    }
}

/// What an event says about its operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventType {
    /// The operation starts.
    Invoke,
    /// It happened.
    Ok,
    /// It certainly did not happen.
    Fail,
    /// Unknown: it may have happened at any point after its invocation, or never.
    Info,
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EventType::Invoke => "invoke",
            EventType::Ok => "ok",
            EventType::Fail => "fail",
            EventType::Info => "info",
        })
    }
}

/// One line of `history.jsonl`.
///
/// Serialises as `{"index","time","process","type","f","value"}` plus `"error"`
/// when there is one; parsing ignores unknown fields, so newer writers stay readable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the history, from 0.
    pub index: u64,
    /// Nanoseconds since the run started (monotonic).
    pub time: u64,
    pub process: Process,
    #[serde(rename = "type")]
    pub kind: EventType,
    /// The operation (`send`, `poll`, `read`, ...) or, for the nemesis, the fault.
    pub f: String,
    /// Written exactly: an integer beyond 64 bits as the number it is.
    #[serde(default, serialize_with = "crate::values::serialize_exact")]
    pub value: Value,
    /// Why an operation failed or is indeterminate (e.g. `NOT_LEADER`, `timeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Event {
    /// The event as one JSON line, without the trailing newline.
    pub fn to_json_line(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string(self).expect("an event always serialises")
    }
}

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Ok,
    Fail,
    /// Indeterminate, including an invocation that never completed.
    Info,
}

/// An invocation paired with its completion.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    pub process: u64,
    pub f: String,
    /// The value the invocation carried.
    pub invoke_value: Value,
    /// The value the completion carried (`Null` when there was no completion).
    pub value: Value,
    pub outcome: Outcome,
    /// History indices of the invocation and the completion (`None`: never completed).
    pub invoke_index: u64,
    pub complete_index: Option<u64>,
    /// Positions in the event sequence, which orders the real-time "happened
    /// before" relation: an op precedes another if it completed before the other
    /// was invoked. `complete_pos` is `None` for info and never-completed ops.
    pub invoke_pos: usize,
    pub complete_pos: Option<usize>,
    pub invoke_time: u64,
    pub complete_time: Option<u64>,
    pub error: Option<String>,
}

/// A history that cannot be paired: which event, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairError {
    /// Position of the offending event in the sequence given (0-based).
    pub position: usize,
    pub message: String,
}

impl fmt::Display for PairError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "event {}: {}", self.position, self.message)
    }
}

impl std::error::Error for PairError {}

/// An invocation and its completion, borrowed from the events (no copies): what
/// checkers that only read need.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Paired<'a> {
    pub invoke: &'a Event,
    /// `None`: the invocation never completed.
    pub completion: Option<&'a Event>,
    pub outcome: Outcome,
    pub invoke_pos: usize,
    /// Position of an `ok` or `fail` completion; `None` for info and never-completed.
    pub complete_pos: Option<usize>,
}

impl<'a> Paired<'a> {
    /// The completion's value (`Null` when there was none).
    pub fn value(&self) -> &'a Value {
        static NULL: Value = Value::Null;
        self.completion.map_or(&NULL, |c| &c.value)
    }

    pub fn process(&self) -> u64 {
        match self.invoke.process {
            Process::Client(p) => p,
            Process::Nemesis => u64::MAX,
        }
    }

    /// An owned copy.
    fn to_op(self) -> Op {
        Op {
            process: self.process(),
            f: self.invoke.f.clone(),
            invoke_value: self.invoke.value.clone(),
            value: self.value().clone(),
            outcome: self.outcome,
            invoke_index: self.invoke.index,
            complete_index: self.completion.map(|c| c.index),
            invoke_pos: self.invoke_pos,
            complete_pos: self.complete_pos,
            invoke_time: self.invoke.time,
            complete_time: self.completion.map(|c| c.time),
            error: self.completion.and_then(|c| c.error.clone()),
        }
    }
}

/// Pair every client invocation with the next completion of the same process.
///
/// Nemesis events are skipped. Ops come out in invocation order. An invocation
/// still open at the end becomes an `info` op, so the prefix a crashed writer left
/// behind is still checkable. A completion without an open invocation, or a second
/// invocation while one is open, is an error.
pub fn pair(events: &[Event]) -> Result<Vec<Op>, PairError> {
    Ok(pair_events(events)?
        .into_iter()
        .map(Paired::to_op)
        .collect())
}

/// [`pair`] without copying: the pairs borrow the events.
pub(crate) fn pair_events(events: &[Event]) -> Result<Vec<Paired<'_>>, PairError> {
    use std::collections::HashMap;
    let mut open: HashMap<u64, usize> = HashMap::new(); // process -> op slot
    let mut ops: Vec<Paired> = Vec::new();
    for (pos, e) in events.iter().enumerate() {
        let Process::Client(p) = e.process else {
            continue;
        };
        match e.kind {
            EventType::Invoke => {
                if let Some(&slot) = open.get(&p) {
                    let prev = ops[slot].invoke;
                    return Err(PairError {
                        position: pos,
                        message: format!(
                            "process {p} invokes {} while its {} (index {}) has not completed",
                            e.f, prev.f, prev.index
                        ),
                    });
                }
                open.insert(p, ops.len());
                ops.push(Paired {
                    invoke: e,
                    completion: None,
                    outcome: Outcome::Info,
                    invoke_pos: pos,
                    complete_pos: None,
                });
            }
            kind => {
                let Some(slot) = open.remove(&p) else {
                    return Err(PairError {
                        position: pos,
                        message: format!("{kind} {} of process {p} without an invocation", e.f),
                    });
                };
                let op = &mut ops[slot];
                if op.invoke.f != e.f {
                    return Err(PairError {
                        position: pos,
                        message: format!(
                            "process {p} completes {} but invoked {} (index {})",
                            e.f, op.invoke.f, op.invoke.index
                        ),
                    });
                }
                op.outcome = match kind {
                    EventType::Ok => Outcome::Ok,
                    EventType::Fail => Outcome::Fail,
                    _ => Outcome::Info,
                };
                op.completion = Some(e);
                if kind != EventType::Info {
                    op.complete_pos = Some(pos);
                }
            }
        }
    }
    Ok(ops)
}

/// Checks, event by event, the order every history keeps (docs/history.md,
/// "Order"): indices increase, and each process's times never run backwards — in
/// particular a completion is never timed before its invocation. Formats without
/// indices or times number their events in order, which keeps the rules.
#[derive(Debug, Default)]
pub struct OrderCheck {
    /// The previous event's index.
    last_index: Option<u64>,
    /// Per process: its latest event's time and index, and whether that event was
    /// an invocation still open.
    last: std::collections::HashMap<Process, (u64, u64, bool)>,
}

impl OrderCheck {
    /// The next event: `None` if it keeps the order, else what it breaks.
    pub fn event(
        &mut self,
        index: u64,
        time: u64,
        process: Process,
        kind: EventType,
    ) -> Option<String> {
        let mut broken = match self.last_index {
            Some(prev) if index == prev => Some(format!(
                "duplicate index {index}: the previous event has it too (indices increase by event)"
            )),
            Some(prev) if index < prev => Some(format!(
                "index {index} after index {prev}: indices must increase"
            )),
            _ => None,
        };
        self.last_index = Some(self.last_index.map_or(index, |p| p.max(index)));
        let open = kind == EventType::Invoke;
        if let Some((t, i, was_open)) = self.last.insert(process, (time, index, open))
            && time < t
            && broken.is_none()
        {
            broken = Some(if was_open && !open {
                format!(
                    "the {kind} of process {process} is timed {time}, before its invocation (index {i}) at {t}"
                )
            } else {
                format!(
                    "time runs backwards for process {process}: {time}, after its event at index {i} timed {t}"
                )
            });
        }
        broken
    }
}

/// An event that breaks the history's order: where, and what it breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disorder {
    /// The event's 1-based line in its file.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for Disorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(index: u64, process: Process, kind: EventType, f: &str, value: Value) -> Event {
        Event {
            index,
            time: index * 10,
            process,
            kind,
            f: f.into(),
            value,
            error: None,
        }
    }

    #[test]
    fn pairs_per_process_and_open_invocations_become_info() {
        use EventType::*;
        let c = Process::Client;
        let events = vec![
            ev(0, c(0), Invoke, "write", json!(1)),
            ev(1, c(1), Invoke, "read", Value::Null),
            ev(2, Process::Nemesis, Info, "kill", json!([1])),
            ev(3, c(0), Ok, "write", json!(1)),
            ev(4, c(1), Info, "read", Value::Null),
            ev(5, c(2), Invoke, "write", json!(2)),
        ];
        let ops = pair(&events).unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(
            (ops[0].outcome, ops[0].complete_pos),
            (Outcome::Ok, Some(3))
        );
        assert_eq!(
            (ops[1].outcome, ops[1].complete_pos, ops[1].complete_index),
            (Outcome::Info, None, Some(4))
        );
        assert_eq!(
            (ops[2].outcome, ops[2].complete_index),
            (Outcome::Info, None)
        );
        assert_eq!((ops[0].invoke_index, ops[0].complete_index), (0, Some(3)));
    }

    #[test]
    fn unpaired_completions_are_errors() {
        use EventType::*;
        let events = vec![ev(0, Process::Client(0), Ok, "write", json!(1))];
        assert_eq!(pair(&events).unwrap_err().position, 0);
        let events = vec![
            ev(0, Process::Client(0), Invoke, "write", json!(1)),
            ev(1, Process::Client(0), Invoke, "write", json!(2)),
        ];
        assert!(
            pair(&events)
                .unwrap_err()
                .message
                .contains("has not completed")
        );
    }

    #[test]
    fn order_check_names_what_each_event_breaks() {
        use EventType::*;
        let c = Process::Client;
        let mut o = OrderCheck::default();
        assert_eq!(o.event(0, 10, c(0), Invoke), None);
        assert_eq!(o.event(1, 20, c(1), Invoke), None);
        let e = o.event(1, 30, c(2), Invoke).unwrap();
        assert!(e.contains("duplicate index 1"), "{e}");
        let e = o.event(0, 40, c(3), Invoke).unwrap();
        assert!(e.contains("index 0 after index 1"), "{e}");
        let e = o.event(5, 5, c(0), Ok).unwrap();
        assert!(e.contains("before its invocation (index 0) at 10"), "{e}");
        let e = o.event(6, 15, c(1), Info).unwrap();
        assert!(e.contains("before its invocation"), "{e}");
        assert_eq!(o.event(7, 15, c(1), Invoke), None);
        let e = o.event(8, 1, Process::Nemesis, Info);
        assert_eq!(e, None);
        let e = o.event(9, 0, Process::Nemesis, Info).unwrap();
        assert!(e.contains("time runs backwards for process nemesis"), "{e}");
    }
}
