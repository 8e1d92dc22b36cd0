//! A queue history read event by event into its compact operations
//! ([`QueueHistory`]): invocations paired with their completions as they come
//! (the rules of `history::pair`), each send's and poll's value read for what the
//! analysis needs — from a JSON value (events in memory) or straight from a
//! history line's text (`watermark check`, which never holds the whole history).

use std::collections::BTreeMap;

use serde_json::Value;

use super::QueueError;
use super::ops::{Interned, OpInfo, Poll, Records, Send};
use crate::format::json::{Json, Num};
use crate::history::{Event, EventType, Outcome, PairError, Process};
use crate::linear::fx::FxMap;
use crate::values;

/// An event's value: in memory, or a history line's JSON text (`None`: `null`).
#[derive(Clone, Copy)]
pub(crate) enum ValueIn<'a> {
    Json(&'a Value),
    Text(Option<&'a str>),
}

/// One event as the queue reading takes it, from either reader: its line in the
/// file (None in memory), index, process, type, operation, value, and a
/// completion's error.
pub(crate) struct Seen<'a> {
    pub line: Option<usize>,
    pub index: u64,
    pub process: Process,
    pub kind: EventType,
    pub f: &'a str,
    pub value: ValueIn<'a>,
    pub error: Option<&'a str>,
}

impl ValueIn<'_> {
    fn show(self) -> String {
        match self {
            ValueIn::Json(v) => values::canonical(v),
            ValueIn::Text(None) => "null".into(),
            ValueIn::Text(Some(t)) => crate::format::read_json(t)
                .map(|v| values::canonical(&v))
                .unwrap_or_else(|_| t.to_string()),
        }
    }

    /// The integer fields `names` of an object (`None` where absent or not an
    /// integer that fits `i64`, as `Value::as_i64`).
    fn ints<const N: usize>(self, names: [&str; N]) -> [Option<i64>; N] {
        let mut out = [None; N];
        match self {
            ValueIn::Json(v) => {
                for (o, n) in out.iter_mut().zip(names) {
                    *o = v.get(n).and_then(Value::as_i64);
                }
            }
            ValueIn::Text(Some(t)) if t.starts_with('{') => {
                let mut j = Json::new(t);
                let _ = j.object(|j, k| {
                    match names.iter().position(|n| *n == k) {
                        Some(i) => out[i] = int_next(j)?,
                        None => j.skip()?,
                    }
                    Ok(())
                });
            }
            ValueIn::Text(_) => {}
        }
        out
    }
}

/// Intern the next JSON value of a text.
fn intern_json(j: &mut Json, names: &mut Interned) -> Result<u32, String> {
    match j.peek() {
        Some(b'-' | b'0'..=b'9') => Ok(match j.number()? {
            Num::Int(i) => names.int(i),
            Num::UInt(u) => names.text(&u.to_string()),
            Num::Big(t) => names.text(t),
            f @ Num::Float(_) => names.text(&f.to_value().to_string()),
        }),
        Some(b'"') => {
            let start = j.pos();
            let s = j.string()?;
            let raw = matches!(s, std::borrow::Cow::Borrowed(_)) && !s.starts_with('\u{FDD0}');
            if raw {
                Ok(names.text(j.since(start)))
            } else {
                Ok(names.text(&values::canonical(&Value::String(s.into_owned()))))
            }
        }
        _ => {
            let v = j.value()?;
            Ok(names.value(&v))
        }
    }
}

/// A send's value `{"partition":p,"value":v}`: the partition, the value.
fn send_value(v: ValueIn, names: &mut Interned) -> Option<(i64, u32)> {
    match v {
        ValueIn::Json(v) => {
            let p = v.get("partition").and_then(Value::as_i64)?;
            Some((p, names.value(v.get("value").unwrap_or(&Value::Null))))
        }
        ValueIn::Text(Some(t)) if t.starts_with('{') => {
            let (mut p, mut value) = (None, None);
            let mut j = Json::new(t);
            j.object(|j, k| {
                match k.as_ref() {
                    "partition" => p = int_next(j)?,
                    "value" => value = Some(intern_json(j, names)?),
                    _ => j.skip()?,
                }
                Ok(())
            })
            .ok()?;
            Some((p?, value.unwrap_or_else(|| names.text("null"))))
        }
        ValueIn::Text(_) => None,
    }
}

/// Read the next value of `j` as an `i64` field (`None` if it is not one).
fn int_next(j: &mut Json) -> Result<Option<i64>, String> {
    if j.peek().is_some_and(|b| b == b'-' || b.is_ascii_digit()) {
        Ok(match j.number()? {
            Num::Int(i) => Some(i),
            _ => None,
        })
    } else {
        j.skip()?;
        Ok(None)
    }
}

/// A poll's answer `{"partition":p,"records":[[o,v],...],"high_watermark":hw}`:
/// its records appended to `records`, its partition and high watermark. `None`:
/// not that shape (nothing appended).
fn poll_answer(
    v: ValueIn,
    records: &mut Records,
    names: &mut Interned,
) -> Option<(Option<i64>, Option<i64>)> {
    let start = records.offsets.len();
    let got = match v {
        ValueIn::Json(v) => (|| {
            for r in v.get("records")?.as_array()? {
                match r.as_array().map(Vec::as_slice) {
                    Some([o, x]) => records.push(o.as_i64()?, names.value(x)),
                    _ => return None,
                }
            }
            let [p, hw] = ValueIn::Json(v).ints(["partition", "high_watermark"]);
            Some((p, hw))
        })(),
        ValueIn::Text(Some(t)) if t.starts_with('{') => {
            let (mut p, mut hw, mut seen) = (None, None, false);
            let mut j = Json::new(t);
            let read = j.object(|j, k| {
                match k.as_ref() {
                    "partition" => p = int_next(j)?,
                    "high_watermark" => hw = int_next(j)?,
                    "records" => {
                        records.offsets.truncate(start);
                        records.values.truncate(start);
                        seen = true;
                        j.array(|j| {
                            let mut n = 0;
                            let mut offset = 0;
                            j.array(|j| {
                                n += 1;
                                match n {
                                    1 => offset = int_next(j)?.ok_or_else(String::new)?,
                                    2 => records.push(offset, intern_json(j, names)?),
                                    _ => return Err(String::new()),
                                }
                                Ok(())
                            })?;
                            if n == 2 { Ok(()) } else { Err(String::new()) }
                        })?;
                    }
                    _ => j.skip()?,
                }
                Ok(())
            });
            (read.is_ok() && seen).then_some((p, hw))
        }
        ValueIn::Text(_) => None,
    };
    if got.is_none() {
        records.offsets.truncate(start);
        records.values.truncate(start);
    }
    got
}

/// What an open invocation is.
#[derive(Debug)]
enum Slot {
    /// `sends[i]`; or the message of a send whose value has the wrong shape.
    Send(Result<usize, String>),
    /// `polls[i]`.
    Poll(usize),
    Other,
}

#[derive(Debug)]
struct Open {
    f: u32,
    index: u64,
    line: Option<usize>,
    seq: usize,
    slot: Slot,
}

/// Where an event is: its position among all events, its index, and its line if
/// known.
#[derive(Clone, Copy)]
struct At {
    pos: usize,
    index: u64,
    line: Option<usize>,
}

impl At {
    /// An error pairing this event with its invocation or completion.
    fn pair_error(self, message: String) -> Located {
        Located {
            error: QueueError::Pair(PairError {
                position: self.pos,
                message,
            }),
            index: self.index,
            line: self.line,
        }
    }
}

/// An error with where it is: the event's index and its line, if known.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    pub(crate) error: QueueError,
    pub(crate) index: u64,
    pub(crate) line: Option<usize>,
}

/// A queue history, read: its sends and ok polls in invocation order, their
/// records and values, and what the reading found wrong, if anything.
#[derive(Debug, Default)]
pub struct QueueHistory {
    pub(super) sends: Vec<Send>,
    pub(super) polls: Vec<Poll>,
    pub(super) records: Records,
    pub(super) names: Interned,
    /// Every poll read, `ok` or not, with its invoked value's text.
    all_polls: Vec<(Poll, bool, String)>,
    /// Partitions whose final drain was tried and never answered: every final-poll
    /// of theirs failed or was left in doubt, with how many there were.
    pub(super) undrained: BTreeMap<i64, usize>,
    open: FxMap<u64, Open>,
    f_ids: FxMap<String, u32>,
    f_names: Vec<String>,
    pos: usize,
    seq: usize,
    pair_error: Option<Located>,
    shape_error: Option<(usize, Located)>,
}

impl QueueHistory {
    /// Read events held in memory.
    pub fn from_events(events: &[Event]) -> QueueHistory {
        let mut h = QueueHistory::default();
        for e in events {
            h.event(Seen {
                line: None,
                index: e.index,
                process: e.process,
                kind: e.kind,
                f: &e.f,
                value: ValueIn::Json(&e.value),
                error: e.error.as_deref(),
            });
        }
        h.finish();
        h
    }

    /// The operations' names, client events only (for telling the model).
    pub fn operation_names(&self) -> impl Iterator<Item = &str> {
        self.f_names.iter().map(String::as_str)
    }

    /// Client invocations still open (after [`Self::finish`]: never completed).
    pub fn open_invocations(&self) -> usize {
        self.open.len()
    }

    /// The first error in the history, as the queue analysis reports it.
    pub(crate) fn error(&self) -> Option<&Located> {
        self.pair_error
            .as_ref()
            .or(self.shape_error.as_ref().map(|(_, l)| l))
    }

    fn shape(&mut self, seq: usize, index: u64, line: Option<usize>, message: String) {
        if self.shape_error.as_ref().is_none_or(|(s, _)| seq < *s) {
            let error = QueueError::Shape { index, message };
            self.shape_error = Some((seq, Located { error, index, line }));
        }
    }

    /// The next event.
    pub(crate) fn event(&mut self, e: Seen<'_>) {
        let pos = self.pos;
        self.pos += 1;
        let Process::Client(p) = e.process else {
            return;
        };
        if self.pair_error.is_some() {
            return;
        }
        let f_id = self.f_id(e.f);
        let at = At {
            pos,
            index: e.index,
            line: e.line,
        };
        if e.kind == EventType::Invoke {
            self.invoke(p, e.f, f_id, at, e.value);
        } else {
            self.complete(p, f_id, at, e);
        }
    }

    /// The number of the operation named `f`, a new one if it is new.
    fn f_id(&mut self, f: &str) -> u32 {
        match self.f_ids.get(f) {
            Some(&id) => id,
            None => {
                self.f_names.push(f.to_string());
                self.f_ids
                    .insert(f.to_string(), self.f_names.len() as u32 - 1);
                self.f_names.len() as u32 - 1
            }
        }
    }

    /// Process `p` invokes `f`: open its invocation, unless one is open already.
    fn invoke(&mut self, p: u64, f: &str, f_id: u32, at: At, value: ValueIn) {
        if let Some(prev) = self.open.get(&p) {
            let message = format!(
                "process {p} invokes {f} while its {} (index {}) has not completed",
                self.f_names[prev.f as usize], prev.index
            );
            self.pair_error = Some(at.pair_error(message));
            return;
        }
        let op = OpInfo {
            invoke_index: at.index,
            complete_index: None,
            process: p,
            outcome: Outcome::Info,
        };
        let slot = self.invoked(op, f, value);
        let seq = self.seq;
        self.seq += 1;
        self.open.insert(
            p,
            Open {
                f: f_id,
                index: at.index,
                line: at.line,
                seq,
                slot,
            },
        );
    }

    /// What an invocation of `f` opens: a send with its partition and value (or
    /// the message saying its value has the wrong shape), a poll, or neither.
    fn invoked(&mut self, op: OpInfo, f: &str, value: ValueIn) -> Slot {
        match f {
            "send" => Slot::Send(match send_value(value, &mut self.names) {
                Some((partition, value)) => {
                    self.sends.push(Send {
                        op,
                        partition,
                        value,
                        offset: None,
                        attempts: 1,
                        producer: None,
                        refused_out_of_sequence: false,
                        leader_epoch: None,
                    });
                    Ok(self.sends.len() - 1)
                }
                None => Err(format!(
                    "send expects {{\"partition\":p,\"value\":v}}, got {}",
                    value.show()
                )),
            }),
            "poll" | "final-poll" => {
                let [partition, from] = value.ints(["partition", "offset"]);
                let poll = Poll {
                    op,
                    partition: partition.unwrap_or(i64::MIN),
                    from: from.unwrap_or(0),
                    start: 0,
                    end: 0,
                    high_watermark: None,
                    is_final: f == "final-poll",
                };
                self.all_polls
                    .push((poll, partition.is_some(), value.show()));
                Slot::Poll(self.all_polls.len() - 1)
            }
            _ => Slot::Other,
        }
    }

    /// Process `p` completes `e.f` (`ok`, `fail` or `info`, with its `error`): close
    /// the invocation it pairs with, which must be open and of the same operation.
    fn complete(&mut self, p: u64, f_id: u32, at: At, e: Seen<'_>) {
        let Seen {
            kind,
            f,
            value,
            error,
            ..
        } = e;
        let Some(open) = self.open.remove(&p) else {
            self.pair_error =
                Some(at.pair_error(format!("{kind} {f} of process {p} without an invocation")));
            return;
        };
        if open.f != f_id {
            let message = format!(
                "process {p} completes {f} but invoked {} (index {})",
                self.f_names[open.f as usize], open.index
            );
            self.pair_error = Some(at.pair_error(message));
            return;
        }
        let outcome = match kind {
            EventType::Ok => Outcome::Ok,
            EventType::Fail => Outcome::Fail,
            _ => Outcome::Info,
        };
        match open.slot {
            Slot::Send(Ok(i)) => {
                let s = &mut self.sends[i];
                s.op.complete_index = Some(at.index);
                s.op.outcome = outcome;
                let [offset, attempts, producer, leader_epoch] =
                    value.ints(["offset", "attempts", "producer", "leader_epoch"]);
                s.producer = producer;
                s.leader_epoch = leader_epoch;
                if outcome == Outcome::Ok {
                    s.offset = offset;
                }
                s.attempts = attempts.map_or(1, |n| n.clamp(1, i64::from(u32::MAX)) as u32);
                s.refused_out_of_sequence = outcome != Outcome::Ok
                    && error.is_some_and(|e| e.starts_with("OUT_OF_ORDER_SEQUENCE_NUMBER"));
            }
            Slot::Send(Err(message)) => self.shape(open.seq, at.index, at.line, message),
            Slot::Poll(i) => self.completed_poll(i, outcome, f, open.seq, at, value),
            Slot::Other => {}
        }
    }

    /// Poll `all_polls[i]` (invoked `seq`-th) completes: an `ok` one's records are
    /// read from its answer, an answer of the wrong shape being an error.
    fn completed_poll(
        &mut self,
        i: usize,
        outcome: Outcome,
        f: &str,
        seq: usize,
        at: At,
        value: ValueIn,
    ) {
        let (poll, has_partition, invoked) = &mut self.all_polls[i];
        poll.op.complete_index = Some(at.index);
        poll.op.outcome = outcome;
        if outcome == Outcome::Ok {
            let start = self.records.offsets.len();
            match poll_answer(value, &mut self.records, &mut self.names) {
                Some((partition, hw)) if *has_partition || partition.is_some() => {
                    if !*has_partition {
                        poll.partition = partition.unwrap_or_default();
                    }
                    (poll.start, poll.end) = (start, self.records.offsets.len());
                    poll.high_watermark = hw;
                    invoked.clear();
                    invoked.shrink_to_fit();
                }
                _ => {
                    let message = format!(
                        "{f} expects {{\"partition\":p,\"offset\":o}} → {{\"partition\":p,\"records\":[[offset,value],...]}}, got {invoked} → {}",
                        value.show()
                    );
                    self.shape(seq, at.index, at.line, message);
                }
            }
        }
    }

    /// The end of the history: invocations still open stay indeterminate; a send
    /// of the wrong shape among them is an error at its invocation.
    pub(crate) fn finish(&mut self) {
        let wrong: Vec<(usize, u64, Option<usize>, String)> = self
            .open
            .values()
            .filter_map(|o| match &o.slot {
                Slot::Send(Err(m)) => Some((o.seq, o.index, o.line, m.clone())),
                _ => None,
            })
            .collect();
        for (seq, index, line, message) in wrong {
            self.shape(seq, index, line, message);
        }
        let mut finals: BTreeMap<i64, (usize, bool)> = BTreeMap::new();
        for (p, has_partition, _) in self.all_polls.iter().filter(|(p, _, _)| p.is_final) {
            if *has_partition {
                let (tries, answered) = finals.entry(p.partition).or_default();
                *tries += 1;
                *answered |= p.op.outcome == Outcome::Ok;
            }
        }
        self.undrained = finals
            .into_iter()
            .filter(|(_, (_, answered))| !answered)
            .map(|(p, (tries, _))| (p, tries))
            .collect();
        self.polls = std::mem::take(&mut self.all_polls)
            .into_iter()
            .filter(|(p, _, _)| p.op.outcome == Outcome::Ok)
            .map(|(p, _, _)| p)
            .collect();
    }
}
