//! Properties of the linearizability checker:
//! - histories produced by a real (simulated) linearizable register — random
//!   concurrency, crashes (info, the op may land later or never) and failures —
//!   are always judged linearizable;
//! - on small random histories the verdict equals a brute-force search over every
//!   real-time-respecting order of the operations.
//!
//! Histories are decoded from a stream of random choices, so proptest shrinks a
//! failing case to a short history; the runner's seed is fixed.

use checker::history::{Event, EventType, Op, Outcome, Process, pair};
use checker::linear::{ModelKind, Options, check};
use checker::verdict::Validity;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::{Value, json};

/// Reads choices from the stream, wrapping around (a stream of zeros is valid).
struct Choices<'a> {
    c: &'a [u32],
    i: usize,
}

impl Choices<'_> {
    fn below(&mut self, n: u32) -> u32 {
        let v = self.c.get(self.i).copied().unwrap_or(0);
        self.i += 1;
        v % n.max(1)
    }
    fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent
    }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Read,
    Write(i64),
    Cas(i64, i64),
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    Idle,
    Invoked(Kind),
    /// Took effect; the client will be told `ok` (or `fail` for a cas that did
    /// not match), with the read value.
    Applied(Kind, bool, Option<i64>),
}

struct Sim {
    events: Vec<Event>,
    keyed: bool,
}

impl Sim {
    fn emit(&mut self, process: u64, kind: EventType, key: u32, f: &str, v: Value) {
        let index = self.events.len() as u64;
        let value = if self.keyed {
            json!({"key": key, "value": v})
        } else {
            v
        };
        self.events.push(Event {
            index,
            time: index,
            process: Process::Client(process),
            kind,
            f: f.into(),
            value,
            error: None,
        });
    }
}

fn name_and_arg(k: Kind) -> (&'static str, Value) {
    match k {
        Kind::Read => ("read", Value::Null),
        Kind::Write(v) => ("write", json!(v)),
        Kind::Cas(a, b) => ("cas", json!([a, b])),
    }
}

fn nil_or(v: Option<i64>) -> Value {
    v.map_or(Value::Null, |v| json!(v))
}

/// Apply an operation to the real register: (cas matched, value read).
fn apply(reg: &mut Option<i64>, k: Kind) -> (bool, Option<i64>) {
    match k {
        Kind::Read => (true, *reg),
        Kind::Write(v) => {
            *reg = Some(v);
            (true, None)
        }
        Kind::Cas(a, b) => {
            if *reg == Some(a) {
                *reg = Some(b);
                (true, None)
            } else {
                (false, None)
            }
        }
    }
}

/// A history of a linearizable register (one per key), driven by the choices.
fn simulate(ch: &mut Choices, keys: u32, with_cas: bool) -> Vec<Event> {
    let workers = 2 + ch.below(4) as usize;
    let steps = 10 + ch.below(120);
    let mut sim = Sim {
        events: Vec::new(),
        keyed: keys > 1,
    };
    let mut regs: Vec<Option<i64>> = vec![None; keys as usize];
    // Each worker: its current process number, key, and phase.
    let mut procs: Vec<(u64, u32, Phase)> =
        (0..workers).map(|w| (w as u64, 0, Phase::Idle)).collect();
    let mut next_process = workers as u64;
    // Crashed operations that may still take effect later.
    let mut limbo: Vec<(u32, Kind)> = Vec::new();
    for _ in 0..steps {
        if !limbo.is_empty() && ch.chance(10) {
            let (key, k) = limbo.swap_remove(ch.below(limbo.len() as u32) as usize);
            apply(&mut regs[key as usize], k);
            continue;
        }
        let w = ch.below(workers as u32) as usize;
        let (p, key, phase) = procs[w];
        match phase {
            Phase::Idle => {
                let key = ch.below(keys);
                let v = ch.below(4) as i64;
                let k = match ch.below(if with_cas { 3 } else { 2 }) {
                    0 => Kind::Read,
                    1 => Kind::Write(v),
                    _ => Kind::Cas(ch.below(4) as i64, v),
                };
                let (f, arg) = name_and_arg(k);
                sim.emit(p, EventType::Invoke, key, f, arg);
                procs[w] = (p, key, Phase::Invoked(k));
            }
            Phase::Invoked(k) => {
                let (f, arg) = name_and_arg(k);
                if !matches!(k, Kind::Cas(..)) && ch.chance(10) {
                    // Failed before taking effect (e.g. refused by the leader). Not
                    // for cas: Porcupine's reading takes a failed cas as having
                    // seen a different value.
                    sim.emit(p, EventType::Fail, key, f, arg);
                    procs[w] = (p, key, Phase::Idle);
                } else if ch.chance(8) {
                    // Timed out before taking effect: it may still land, or never.
                    sim.emit(p, EventType::Info, key, f, arg);
                    if !matches!(k, Kind::Read) && ch.chance(50) {
                        limbo.push((key, k));
                    }
                    procs[w] = (next_process, 0, Phase::Idle);
                    next_process += 1;
                } else {
                    let (matched, read) = apply(&mut regs[key as usize], k);
                    procs[w] = (p, key, Phase::Applied(k, matched, read));
                }
            }
            Phase::Applied(k, matched, read) => {
                let (f, arg) = name_and_arg(k);
                if ch.chance(8) {
                    // Took effect, but the answer was lost.
                    sim.emit(p, EventType::Info, key, f, arg);
                    procs[w] = (next_process, 0, Phase::Idle);
                    next_process += 1;
                    continue;
                }
                match k {
                    Kind::Read => sim.emit(p, EventType::Ok, key, f, nil_or(read)),
                    Kind::Cas(..) if !matched => sim.emit(p, EventType::Fail, key, f, arg),
                    _ => sim.emit(p, EventType::Ok, key, f, arg),
                }
                procs[w] = (p, key, Phase::Idle);
            }
        }
    }
    sim.events
}

fn options(failed_cas_observes: bool) -> Options {
    Options {
        threads: 2,
        failed_cas_observes,
        ..Options::default()
    }
}

fn config(cases: u32, seed: u64) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_iters: 2000,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config(300, 0x5eed_0001))]

    #[test]
    fn simulated_registers_are_linearizable(choices in prop::collection::vec(any::<u32>(), 0..400)) {
        let mut ch = Choices { c: &choices, i: 0 };
        let keys = 1 + ch.below(3);
        let with_cas = ch.chance(70);
        let events = simulate(&mut ch, keys, with_cas);
        for observes in [false, true] {
            let kind = if with_cas { ModelKind::CasRegister } else { ModelKind::Register };
            let r = check(&events, kind, &options(observes)).unwrap();
            prop_assert_eq!(r.valid, Validity::Valid, "{:#?}", r.anomalies);
        }
    }
}

// ---------------------------------------------------------------------------
// Brute force: every order of the operations that respects real time.

/// An operation as the brute force sees it, straight from the history.
#[derive(Debug, Clone)]
struct Bop {
    invoke: usize,
    complete: Option<usize>,
    f: String,
    arg: Value,
    outcome: Outcome,
    read: Value,
}

/// Does `op` fit the register value `reg`, and what does it leave?
fn brute_step(reg: &Value, op: &Bop, observes: bool) -> Option<Value> {
    match (op.f.as_str(), op.outcome) {
        ("read", Outcome::Ok) => (op.read == *reg).then(|| reg.clone()),
        ("read", _) => Some(reg.clone()),
        ("write", _) => Some(op.arg.clone()),
        ("cas", o) => {
            let (from, to) = (&op.arg[0], &op.arg[1]);
            match o {
                Outcome::Ok => (reg == from).then(|| to.clone()),
                Outcome::Fail => {
                    debug_assert!(observes);
                    (reg != from).then(|| reg.clone())
                }
                Outcome::Info => Some(if reg == from { to.clone() } else { reg.clone() }),
            }
        }
        _ => unreachable!(),
    }
}

fn brute_force(ops: &[Op], observes: bool) -> bool {
    let ops: Vec<Bop> = ops
        .iter()
        .filter(|o| o.outcome != Outcome::Fail || (observes && o.f != "write"))
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
    fn go(ops: &[Bop], done: &mut Vec<bool>, reg: &Value, observes: bool) -> bool {
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
            if let Some(next) = brute_step(reg, &ops[i], observes) {
                done[i] = true;
                if go(ops, done, &next, observes) {
                    return true;
                }
                done[i] = false;
            }
        }
        false
    }
    go(&ops, &mut vec![false; ops.len()], &Value::Null, observes)
}

/// A small random history: any interleaving, any outcomes, any values read.
fn random_history(ch: &mut Choices) -> Vec<Event> {
    let procs = 1 + ch.below(3) as u64;
    let ops = 1 + ch.below(7);
    let mut events: Vec<Event> = Vec::new();
    let mut open: Vec<Option<(String, Value)>> = vec![None; procs as usize];
    let mut proc_ids: Vec<u64> = (0..procs).collect();
    let mut next_id = procs;
    let mut invoked = 0;
    let val = |ch: &mut Choices| {
        if ch.chance(20) {
            Value::Null
        } else {
            json!(ch.below(3))
        }
    };
    let mut push = |p: u64, kind: EventType, f: &str, value: Value| {
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
    };
    while invoked < ops || open.iter().any(Option::is_some) {
        let mut w = ch.below(procs as u32) as usize;
        if invoked == ops && open[w].is_none() {
            // Nothing left to invoke: complete some open operation.
            w = open.iter().position(Option::is_some).unwrap_or(w);
        }
        match open[w].take() {
            None if invoked < ops => {
                let (f, arg) = match ch.below(3) {
                    0 => ("read", Value::Null),
                    1 => ("write", json!(ch.below(3))),
                    _ => ("cas", json!([ch.below(3), ch.below(3)])),
                };
                push(proc_ids[w], EventType::Invoke, f, arg.clone());
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
                    val(ch)
                } else {
                    arg
                };
                push(proc_ids[w], kind, &f, value);
                if kind == EventType::Info {
                    proc_ids[w] = next_id;
                    next_id += 1;
                }
            }
        }
    }
    // Sometimes cut the tail, as a crashed harness would: invocations stay open.
    if ch.chance(20) {
        let cut = ch.below(3) as usize;
        events.truncate(events.len().saturating_sub(cut));
    }
    events
}

proptest! {
    #![proptest_config(config(2000, 0x5eed_0002))]

    #[test]
    fn small_histories_agree_with_brute_force(choices in prop::collection::vec(any::<u32>(), 0..80)) {
        let mut ch = Choices { c: &choices, i: 0 };
        let events = random_history(&mut ch);
        let ops = pair(&events).unwrap();
        for observes in [false, true] {
            let expected = if brute_force(&ops, observes) { Validity::Valid } else { Validity::Invalid };
            let r = check(&events, ModelKind::CasRegister, &options(observes)).unwrap();
            prop_assert_eq!(r.valid, expected, "failed cas observes: {}; {:#?}", observes, events);
        }
    }
}

#[test]
fn brute_force_itself_tells_the_two_apart() {
    // write 1 completes before a read of nil starts: not linearizable.
    let c = Process::Client;
    let e = |i: u64, p: u64, kind: EventType, f: &str, value: Value| Event {
        index: i,
        time: i,
        process: c(p),
        kind,
        f: f.into(),
        value,
        error: None,
    };
    let bad = vec![
        e(0, 0, EventType::Invoke, "write", json!(1)),
        e(1, 0, EventType::Ok, "write", json!(1)),
        e(2, 1, EventType::Invoke, "read", Value::Null),
        e(3, 1, EventType::Ok, "read", Value::Null),
    ];
    assert!(!brute_force(&pair(&bad).unwrap(), false));
    let mut good = bad.clone();
    good.swap(1, 2); // now concurrent
    good[1].index = 1;
    good[2].index = 2;
    assert!(brute_force(&pair(&good).unwrap(), false));
}
