//! A brute-force register checker and small random register histories, to hold
//! the real checker to: every order of the operations that respects real time is
//! tried, straight from the history's events, with no memo, pruning or zones.
//!
//! Shared by the property tests (`#[path]`-included).

#![allow(dead_code)]

use checker::history::{Event, EventType, Op, Outcome, Process};
use serde_json::{Value, json};

/// Reads choices from a stream, wrapping around (a stream of zeros is valid).
pub struct Choices<'a> {
    pub c: &'a [u32],
    pub i: usize,
}

impl Choices<'_> {
    pub fn new(c: &[u32]) -> Choices<'_> {
        Choices { c, i: 0 }
    }
    pub fn below(&mut self, n: u32) -> u32 {
        let v = self.c.get(self.i).copied().unwrap_or(0);
        self.i += 1;
        v % n.max(1)
    }
    pub fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent
    }
}

/// How the brute force reads a register history (the checker's options).
#[derive(Debug, Clone)]
pub struct Reading {
    pub failed_cas_observes: bool,
    pub nil_read_unknown: bool,
    pub initial: Value,
}

impl Default for Reading {
    fn default() -> Self {
        Reading {
            failed_cas_observes: false,
            nil_read_unknown: false,
            initial: Value::Null,
        }
    }
}

/// An operation as the brute force sees it, straight from the history.
#[derive(Debug, Clone)]
struct Bop {
    invoke: usize,
    /// `None`: may take effect any time after its invocation, or never.
    complete: Option<usize>,
    f: String,
    arg: Value,
    outcome: Outcome,
    read: Value,
}

/// Does `op` fit the register value `reg`, and what does it leave?
fn step(reg: &Value, op: &Bop, reading: &Reading) -> Option<Value> {
    match (op.f.as_str(), op.outcome) {
        ("read", Outcome::Ok) if op.read.is_null() && reading.nil_read_unknown => Some(reg.clone()),
        ("read", Outcome::Ok) => (op.read == *reg).then(|| reg.clone()),
        ("read", _) => Some(reg.clone()),
        ("write", _) => Some(op.arg.clone()),
        ("cas", o) => {
            let (from, to) = (&op.arg[0], &op.arg[1]);
            match o {
                Outcome::Ok => (reg == from).then(|| to.clone()),
                Outcome::Fail => (reg != from).then(|| reg.clone()),
                Outcome::Info => Some(if reg == from { to.clone() } else { reg.clone() }),
            }
        }
        _ => unreachable!(),
    }
}

/// Is there an order of the operations that respects real time and that the
/// register accepts? An indeterminate operation (info, or never completed) may
/// be left out; a failed one is left out, except a failed cas when it observes.
pub fn linearizable(ops: &[Op], reading: &Reading) -> bool {
    let ops: Vec<Bop> = ops
        .iter()
        .filter(|o| o.outcome != Outcome::Fail || (reading.failed_cas_observes && o.f != "write"))
        .map(|o| Bop {
            invoke: o.invoke_pos,
            complete: if o.outcome == Outcome::Info {
                None
            } else {
                o.complete_pos
            },
            f: o.f.clone(),
            arg: o.invoke_value.clone(),
            outcome: o.outcome,
            read: o.value.clone(),
        })
        .collect();
    // An indeterminate operation is always accepted (a cas that does not match
    // changes nothing) and never blocks another, so "left out" is the same as
    // "placed last": every operation is placed.
    fn go(ops: &[Bop], done: &mut Vec<bool>, reg: &Value, reading: &Reading) -> bool {
        if done.iter().all(|d| *d) {
            return true;
        }
        for i in 0..ops.len() {
            if done[i] {
                continue;
            }
            // i may go next only if no remaining op completed before i was invoked.
            let blocked = (0..ops.len())
                .any(|j| !done[j] && j != i && ops[j].complete.is_some_and(|c| c < ops[i].invoke));
            if blocked {
                continue;
            }
            if let Some(next) = step(reg, &ops[i], reading) {
                done[i] = true;
                if go(ops, done, &next, reading) {
                    return true;
                }
                done[i] = false;
            }
        }
        false
    }
    go(&ops, &mut vec![false; ops.len()], &reading.initial, reading)
}

/// Knobs of [`random_history`].
#[derive(Debug, Clone, Copy)]
pub struct Mix {
    pub max_ops: u32,
    pub max_procs: u32,
    /// Values written are `0..values`.
    pub values: u32,
    pub cas: bool,
    /// Every write writes a value of its own (then `values` is ignored).
    pub unique: bool,
}

pub const SMALL: Mix = Mix {
    max_ops: 7,
    max_procs: 3,
    values: 3,
    cas: true,
    unique: false,
};

/// A random history: any interleaving, any outcomes, any values read; sometimes
/// its tail is cut, as a crashed harness would, leaving invocations pending.
pub fn random_history(ch: &mut Choices, mix: Mix) -> Vec<Event> {
    let procs = 1 + ch.below(mix.max_procs) as u64;
    let ops = 1 + ch.below(mix.max_ops);
    let mut events: Vec<Event> = Vec::new();
    let mut open: Vec<Option<(String, Value)>> = vec![None; procs as usize];
    let mut proc_ids: Vec<u64> = (0..procs).collect();
    let mut next_id = procs;
    let mut invoked = 0;
    let mut written = 0u32;
    let read_value = |ch: &mut Choices, written: u32| {
        let range = if mix.unique { written + 1 } else { mix.values };
        if ch.chance(20) {
            Value::Null
        } else {
            json!(100 + ch.below(range))
        }
    };
    while invoked < ops || open.iter().any(Option::is_some) {
        let mut w = ch.below(procs as u32) as usize;
        if invoked == ops && open[w].is_none() {
            // Nothing left to invoke: complete some open operation.
            w = open.iter().position(Option::is_some).unwrap_or(w);
        }
        match open[w].take() {
            None if invoked < ops => {
                let value = |ch: &mut Choices, written: &mut u32| {
                    if mix.unique {
                        *written += 1;
                        json!(100 + *written)
                    } else {
                        json!(100 + ch.below(mix.values))
                    }
                };
                let (f, arg) = match ch.below(if mix.cas { 3 } else { 2 }) {
                    0 => ("read", Value::Null),
                    1 => ("write", value(ch, &mut written)),
                    _ => (
                        "cas",
                        json!([100 + ch.below(mix.values), 100 + ch.below(mix.values)]),
                    ),
                };
                push(&mut events, proc_ids[w], EventType::Invoke, f, arg.clone());
                open[w] = Some((f.to_string(), arg));
                invoked += 1;
            }
            None => {}
            Some((f, arg)) => {
                let kind = match ch.below(10) {
                    0 => EventType::Info,
                    1 if f != "read" => EventType::Fail,
                    _ => EventType::Ok,
                };
                let value = if f == "read" && kind == EventType::Ok {
                    read_value(ch, written)
                } else {
                    arg
                };
                push(&mut events, proc_ids[w], kind, &f, value);
                if kind == EventType::Info {
                    proc_ids[w] = next_id;
                    next_id += 1;
                }
            }
        }
    }
    if ch.chance(20) {
        let cut = ch.below(3) as usize;
        events.truncate(events.len().saturating_sub(cut));
    }
    events
}

pub fn push(events: &mut Vec<Event>, p: u64, kind: EventType, f: &str, value: Value) {
    let index = events.len() as u64;
    events.push(Event {
        index,
        time: index,
        process: Process::Client(p),
        kind,
        f: f.into(),
        value,
        error: None,
    });
}
