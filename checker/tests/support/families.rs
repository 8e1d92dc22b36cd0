//! Generated register histories, everything following from a seed:
//!
//! - [`hard`]: the hard family, single-register cas histories that a plain
//!   Wing–Gong–Lowe search (Porcupine's) struggles to decide. A simulated
//!   linearizable register is driven by `clients` workers with reads, writes and
//!   compare-and-sets of small values; a share of operations end indeterminate
//!   (`info`: the op took effect then, later, or never); then one late `ok` read
//!   is corrupted to another value, so that some histories are not linearizable
//!   and proving it means exhausting the search.
//! - [`unique`]: long read/write histories whose written values are unique, as
//!   our register workload writes them: what the zones decide without searching.
//!
//! Shared by the `families` tests and the `families` benchmark
//! (`#[path]`-included).

#![allow(dead_code)]

use checker::history::{Event, EventType, Process};
use serde_json::{Value, json};

/// The family's parameters.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Operations invoked.
    pub ops: usize,
    pub clients: u64,
    /// Percent of operations that end indeterminate.
    pub info_percent: u64,
    /// Values are `0..values`.
    pub values: u64,
}

/// 150 or 200 operations, 5 clients, 15% indeterminate, values 0–4.
pub const fn shape(ops: usize) -> Shape {
    Shape {
        ops,
        clients: 5,
        info_percent: 15,
        values: 5,
    }
}

/// The seeds of the benchmark set.
pub const SEEDS: std::ops::RangeInclusive<u64> = 1..=30;

/// splitmix64: a small, seedable generator (no dependency, the same stream on
/// every platform).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x6a09_e667_f3bc_c909)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Read,
    Write(u64),
    Cas(u64, u64),
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    Idle,
    /// Invoked; `info`: it will end indeterminate.
    Invoked(Kind, bool),
    /// Took effect: (cas matched, value read).
    Applied(Kind, bool, Option<u64>),
}

fn f_and_arg(k: Kind) -> (&'static str, Value) {
    match k {
        Kind::Read => ("read", Value::Null),
        Kind::Write(v) => ("write", json!(v)),
        Kind::Cas(a, b) => ("cas", json!([a, b])),
    }
}

fn apply(reg: &mut Option<u64>, k: Kind) -> (bool, Option<u64>) {
    match k {
        Kind::Read => (true, *reg),
        Kind::Write(v) => {
            *reg = Some(v);
            (true, None)
        }
        Kind::Cas(a, b) if *reg == Some(a) => {
            *reg = Some(b);
            (true, None)
        }
        Kind::Cas(..) => (false, None),
    }
}

fn emit(events: &mut Vec<Event>, p: u64, kind: EventType, f: &str, value: Value) {
    let index = events.len() as u64;
    events.push(Event {
        index,
        time: index,
        process: Process::Client(p),
        kind,
        f: f.into(),
        value,
        error: (kind == EventType::Info).then(|| "timeout".to_string()),
    });
}

/// One history of the hard family. Before the corruption it is linearizable by
/// construction; the corrupted read is an `ok` read in the last fifth.
pub fn hard(shape: Shape, seed: u64) -> Vec<Event> {
    let mut rng = Rng::new(seed);
    let mut events: Vec<Event> = Vec::new();
    let mut reg: Option<u64> = None;
    let mut workers: Vec<(u64, Phase)> = (0..shape.clients).map(|w| (w, Phase::Idle)).collect();
    // Indeterminate operations that will still take effect.
    let mut limbo: Vec<Kind> = Vec::new();
    let mut invoked = 0;
    while invoked < shape.ops || workers.iter().any(|(_, p)| !matches!(p, Phase::Idle)) {
        if !limbo.is_empty() && rng.chance(5) {
            let k = limbo.swap_remove(rng.below(limbo.len() as u64) as usize);
            apply(&mut reg, k);
            continue;
        }
        let w = rng.below(shape.clients) as usize;
        let (p, phase) = workers[w];
        match phase {
            Phase::Idle if invoked < shape.ops => {
                let v = rng.below(shape.values);
                let k = match rng.below(3) {
                    0 => Kind::Read,
                    1 => Kind::Write(v),
                    _ => Kind::Cas(rng.below(shape.values), v),
                };
                let (f, arg) = f_and_arg(k);
                emit(&mut events, p, EventType::Invoke, f, arg);
                invoked += 1;
                workers[w].1 = Phase::Invoked(k, rng.chance(shape.info_percent));
            }
            Phase::Idle => {}
            Phase::Invoked(k, true) => {
                let (f, arg) = f_and_arg(k);
                // Took effect before the timeout, will later, or never.
                match rng.below(3) {
                    0 => {
                        apply(&mut reg, k);
                    }
                    1 => limbo.push(k),
                    _ => {}
                }
                emit(&mut events, p, EventType::Info, f, arg);
                workers[w] = (p + shape.clients, Phase::Idle);
            }
            Phase::Invoked(k, false) => {
                let (matched, read) = apply(&mut reg, k);
                workers[w].1 = Phase::Applied(k, matched, read);
            }
            Phase::Applied(k, matched, read) => {
                let (f, arg) = f_and_arg(k);
                match k {
                    Kind::Read => emit(
                        &mut events,
                        p,
                        EventType::Ok,
                        f,
                        read.map_or(Value::Null, |v| json!(v)),
                    ),
                    Kind::Cas(..) if !matched => emit(&mut events, p, EventType::Fail, f, arg),
                    _ => emit(&mut events, p, EventType::Ok, f, arg),
                }
                workers[w].1 = Phase::Idle;
            }
        }
    }
    corrupt_late_read(&mut events, shape.values, &mut rng);
    events
}

/// Change the value of one `ok` read in the last fifth of the history.
fn corrupt_late_read(events: &mut [Event], values: u64, rng: &mut Rng) {
    let from = events.len() * 4 / 5;
    let reads: Vec<usize> = (from..events.len())
        .filter(|&i| events[i].kind == EventType::Ok && events[i].f == "read")
        .collect();
    let Some(&i) = reads.get(rng.below(reads.len() as u64) as usize) else {
        return;
    };
    let old = events[i].value.as_u64();
    let mut v = rng.below(values);
    if Some(v) == old {
        v = (v + 1) % values;
    }
    events[i].value = json!(v);
}

/// A unique-value worker's operation in flight.
#[derive(Clone, Copy)]
enum Flight {
    /// Invoked; `info`: it will end indeterminate.
    Invoked(Kind, bool),
    /// A read that took effect and saw this value.
    Read(Option<u64>),
    /// A write that took effect.
    Wrote(u64),
}

/// A linearizable read/write history of `ops` operations on one key of the
/// broker's register view (`{"key":"k","value":v}`), by 10 workers: half reads,
/// half writes of values unique in the history, 10% indeterminate (half of those
/// took effect); `corrupt`: one `ok` read in the last fifth then returns the
/// value of the first write acknowledged, long overwritten.
pub fn unique(ops: usize, seed: u64, corrupt: bool) -> Vec<Event> {
    let mut rng = Rng::new(seed);
    let clients = 10u64;
    let keyed = |v: Value| json!({"key": "k", "value": v});
    let mut events: Vec<Event> = Vec::new();
    let mut reg: Option<u64> = None;
    let mut written = 0u64;
    let mut workers: Vec<(u64, Option<Flight>)> = (0..clients).map(|w| (w, None)).collect();
    let mut invoked = 0;
    while invoked < ops || workers.iter().any(|(_, f)| f.is_some()) {
        let w = rng.below(clients) as usize;
        let (p, flight) = workers[w];
        workers[w].1 = match flight {
            None if invoked < ops => {
                let k = if rng.chance(50) {
                    Kind::Read
                } else {
                    written += 1;
                    Kind::Write(written)
                };
                let (f, arg) = f_and_arg(k);
                emit(&mut events, p, EventType::Invoke, f, keyed(arg));
                invoked += 1;
                Some(Flight::Invoked(k, rng.chance(10)))
            }
            None => None,
            Some(Flight::Invoked(k, true)) => {
                if rng.chance(50) {
                    apply(&mut reg, k);
                }
                let (f, arg) = f_and_arg(k);
                emit(&mut events, p, EventType::Info, f, keyed(arg));
                workers[w].0 = p + clients;
                None
            }
            Some(Flight::Invoked(k, false)) => match (k, apply(&mut reg, k)) {
                (Kind::Write(v), _) => Some(Flight::Wrote(v)),
                (_, (_, read)) => Some(Flight::Read(read)),
            },
            Some(Flight::Read(v)) => {
                let v = v.map_or(Value::Null, |v| json!(v));
                emit(&mut events, p, EventType::Ok, "read", keyed(v));
                None
            }
            Some(Flight::Wrote(v)) => {
                emit(&mut events, p, EventType::Ok, "write", keyed(json!(v)));
                None
            }
        };
    }
    let first_acknowledged = events
        .iter()
        .find(|e| e.kind == EventType::Ok && e.f == "write")
        .map(|e| e.value["value"].clone());
    if let (true, Some(old)) = (corrupt, first_acknowledged) {
        let from = events.len() * 4 / 5;
        let reads: Vec<usize> = (from..events.len())
            .filter(|&i| events[i].kind == EventType::Ok && events[i].f == "read")
            .collect();
        if let Some(&i) = reads.get(rng.below(reads.len() as u64) as usize) {
            events[i].value = keyed(old);
        }
    }
    events
}
