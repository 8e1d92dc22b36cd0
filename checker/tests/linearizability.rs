//! Properties of the linearizability checker:
//! - histories produced by a real (simulated) linearizable register — random
//!   concurrency, crashes (info, the op may land later or never) and failures —
//!   are always judged linearizable;
//! - on small random histories the verdict equals a brute-force search over every
//!   real-time-respecting order of the operations, under every reading (failed
//!   cas as an observation, Knossos's nil reads, an initial value, `register`
//!   without cas), and with unique values, which the zones decide;
//! - on longer ones it equals the plain Wing–Gong–Lowe search (Porcupine's),
//!   which has none of the pruning.
//!
//! Histories are decoded from a stream of random choices, so proptest shrinks a
//! failing case to a short history; the runner's seed is fixed.

#[path = "support/brute.rs"]
mod brute;

use brute::{Choices, Mix, Reading};
use checker::history::{Event, EventType, Process, pair};
use checker::linear::{ModelKind, Options, check};
use checker::verdict::Validity;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::{Value, json};

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
        let mut ch = Choices::new(&choices);
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
// Against the brute force (tests/support/brute.rs): every real-time-respecting
// order of the operations, straight from the events.

fn verdict(linearizable: bool) -> Validity {
    if linearizable {
        Validity::Valid
    } else {
        Validity::Invalid
    }
}

proptest! {
    #![proptest_config(config(2000, 0x5eed_0002))]

    #[test]
    fn small_histories_agree_with_brute_force(choices in prop::collection::vec(any::<u32>(), 0..80)) {
        let mut ch = Choices::new(&choices);
        let events = brute::random_history(&mut ch, brute::SMALL);
        let ops = pair(&events).unwrap();
        for observes in [false, true] {
            let reading = Reading { failed_cas_observes: observes, ..Reading::default() };
            let expected = verdict(brute::linearizable(&ops, &reading));
            let r = check(&events, ModelKind::CasRegister, &options(observes)).unwrap();
            prop_assert_eq!(r.valid, expected, "failed cas observes: {}; {:#?}", observes, events);
        }
    }

    /// Knossos's readings: a nil read matches any value; a register may start
    /// with a value; `register` has no cas.
    #[test]
    fn readings_agree_with_brute_force(choices in prop::collection::vec(any::<u32>(), 0..80)) {
        let mut ch = Choices::new(&choices);
        let nil_read_unknown = ch.chance(50);
        let initial = if ch.chance(50) { Value::Null } else { json!(100 + ch.below(3)) };
        let cas = ch.chance(50);
        let events = brute::random_history(&mut ch, Mix { cas, ..brute::SMALL });
        let ops = pair(&events).unwrap();
        let reading = Reading { nil_read_unknown, initial: initial.clone(), ..Reading::default() };
        let expected = verdict(brute::linearizable(&ops, &reading));
        let kind = if cas { ModelKind::CasRegister } else { ModelKind::Register };
        let opts = Options { nil_read_unknown, initial: Some(initial), ..options(false) };
        let r = check(&events, kind, &opts).unwrap();
        prop_assert_eq!(r.valid, expected, "{:?}; {:#?}", reading, events);
    }

    /// Unique written values: the zones decide, and agree with the brute force.
    #[test]
    fn unique_values_agree_with_brute_force(choices in prop::collection::vec(any::<u32>(), 0..80)) {
        let mut ch = Choices::new(&choices);
        let mix = Mix { cas: false, unique: true, max_ops: 8, max_procs: 4, ..brute::SMALL };
        let events = brute::random_history(&mut ch, mix);
        let ops = pair(&events).unwrap();
        let expected = verdict(brute::linearizable(&ops, &Reading::default()));
        let r = check(&events, ModelKind::Register, &options(false)).unwrap();
        prop_assert_eq!(r.valid, expected, "{:#?}", events);
        // Every key is decided by its zones, a violation then explained by the search.
        let invalid = u64::from(r.valid == Validity::Invalid);
        prop_assert_eq!(r.stats["keys-unique-values"] + invalid, r.stats["keys"]);
    }
}

proptest! {
    #![proptest_config(config(400, 0x5eed_0003))]

    /// Histories too long for the brute force: the pruned search and the unique
    /// value path agree with the plain Wing–Gong–Lowe search (Porcupine's).
    #[test]
    fn medium_histories_agree_with_the_plain_search(choices in prop::collection::vec(any::<u32>(), 0..400)) {
        let mut ch = Choices::new(&choices);
        let unique = ch.chance(30);
        let mix = Mix { max_ops: 40, max_procs: 5, values: 4, cas: !unique && ch.chance(70), unique };
        let events = brute::random_history(&mut ch, mix);
        let kind = if mix.cas { ModelKind::CasRegister } else { ModelKind::Register };
        let plain = check(&events, kind, &Options { plain: true, ..options(false) }).unwrap();
        let ours = check(&events, kind, &options(false)).unwrap();
        prop_assert_eq!(ours.valid, plain.valid, "{:#?}", events);
    }
}

#[test]
fn brute_force_itself_tells_the_two_apart() {
    // write 1 completes before a read of nil starts: not linearizable.
    let mut bad = Vec::new();
    brute::push(&mut bad, 0, EventType::Invoke, "write", json!(1));
    brute::push(&mut bad, 0, EventType::Ok, "write", json!(1));
    brute::push(&mut bad, 1, EventType::Invoke, "read", Value::Null);
    brute::push(&mut bad, 1, EventType::Ok, "read", Value::Null);
    assert!(!brute::linearizable(
        &pair(&bad).unwrap(),
        &Reading::default()
    ));
    let nil_any = Reading {
        nil_read_unknown: true,
        ..Reading::default()
    };
    assert!(brute::linearizable(&pair(&bad).unwrap(), &nil_any));
    let mut good = bad.clone();
    good.swap(1, 2); // now concurrent
    good[1].index = 1;
    good[2].index = 2;
    assert!(brute::linearizable(
        &pair(&good).unwrap(),
        &Reading::default()
    ));
}
