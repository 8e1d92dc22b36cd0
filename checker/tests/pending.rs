//! Pending invocations — an `invoke` the history never completes, because the
//! writer stopped — are indeterminate, exactly like `info` (docs/history.md): they
//! may have taken effect at any point after their invocation, or never, and they
//! alone never make a verdict unknown.
//!
//! Properties, on random register histories held to the brute force
//! (tests/support/brute.rs):
//! - a pending operation never turns a linearizable history invalid;
//! - it never turns an invalid one valid beyond what the brute force allows (the
//!   verdict with it equals the brute force's), and a pending read — which
//!   changes nothing — changes no verdict at all;
//! - a pending operation is judged exactly as the same operation ending `info`.
//!
//! And through `check::check`, for registers and queues: the verdict is valid or
//! invalid, never unknown because of pending operations, and their number is
//! stated.

#[path = "support/brute.rs"]
mod brute;

use brute::{Choices, Mix, Reading};
use checker::check::{Model, check as check_as};
use checker::format::Format;
use checker::history::{Event, EventType, Process, pair};
use checker::linear::{ModelKind, Options, check};
use checker::verdict::Validity;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::{Value, json};

fn config(cases: u32, seed: u64) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_iters: 2000,
        ..Config::default()
    }
}

fn options() -> Options {
    Options {
        threads: 2,
        ..Options::default()
    }
}

fn verdict(linearizable: bool) -> Validity {
    if linearizable {
        Validity::Valid
    } else {
        Validity::Invalid
    }
}

/// A history with every invocation completed (any outcomes).
fn complete_history(ch: &mut Choices) -> Vec<Event> {
    loop {
        let events = brute::random_history(
            ch,
            Mix {
                max_ops: 6,
                ..brute::SMALL
            },
        );
        if pair(&events)
            .unwrap()
            .iter()
            .all(|o| o.complete_index.is_some())
        {
            return events;
        }
        // The tail was cut: take the next draw.
        ch.i += 1;
    }
}

/// A pending operation of a new process, invoked at `at`.
fn with_pending(events: &[Event], at: usize, f: &str, arg: Value) -> Vec<Event> {
    let mut out: Vec<Event> = events.to_vec();
    let process = 1000;
    out.insert(
        at,
        Event {
            index: 0,
            time: 0,
            process: Process::Client(process),
            kind: EventType::Invoke,
            f: f.into(),
            value: arg,
            error: None,
        },
    );
    for (i, e) in out.iter_mut().enumerate() {
        e.index = i as u64;
        e.time = i as u64;
    }
    out
}

fn random_op(ch: &mut Choices) -> (&'static str, Value) {
    match ch.below(3) {
        0 => ("read", Value::Null),
        1 => ("write", json!(100 + ch.below(3))),
        _ => ("cas", json!([100 + ch.below(3), 100 + ch.below(3)])),
    }
}

proptest! {
    #![proptest_config(config(3000, 0x5eed_0101))]

    #[test]
    fn a_pending_op_is_judged_as_the_brute_force_judges_it(choices in prop::collection::vec(any::<u32>(), 0..80)) {
        let mut ch = Choices::new(&choices);
        let events = complete_history(&mut ch);
        let at = ch.below(events.len() as u32 + 1) as usize;
        let (f, arg) = random_op(&mut ch);
        let pending = with_pending(&events, at, f, arg);
        let reading = Reading::default();
        let before = brute::linearizable(&pair(&events).unwrap(), &reading);
        let after = brute::linearizable(&pair(&pending).unwrap(), &reading);
        let r = check(&pending, ModelKind::CasRegister, &options()).unwrap();
        prop_assert_eq!(r.valid, verdict(after), "{:#?}", pending);
        // Never linearizable → not linearizable.
        prop_assert!(!before || r.valid == Validity::Valid, "{:#?}", pending);
        // A pending read changes nothing: the verdict is the history's without it.
        if f == "read" {
            prop_assert_eq!(r.valid, verdict(before), "{:#?}", pending);
        }
    }

    #[test]
    fn a_pending_op_is_judged_as_the_same_op_ending_info(choices in prop::collection::vec(any::<u32>(), 0..80)) {
        let mut ch = Choices::new(&choices);
        let events = complete_history(&mut ch);
        let at = ch.below(events.len() as u32 + 1) as usize;
        let (f, arg) = random_op(&mut ch);
        let pending = with_pending(&events, at, f, arg.clone());
        let mut info = pending.clone();
        brute::push(&mut info, 1000, EventType::Info, f, arg);
        for plain in [false, true] {
            let opts = Options { plain, ..options() };
            let a = check(&pending, ModelKind::CasRegister, &opts).unwrap();
            let b = check(&info, ModelKind::CasRegister, &opts).unwrap();
            prop_assert_eq!(a.valid, b.valid, "plain {}: {:#?}", plain, pending);
        }
    }
}

fn line(events: &mut Vec<Event>, p: u64, kind: EventType, f: &str, value: Value) {
    brute::push(events, p, kind, f, value);
}

#[test]
fn a_register_history_with_pending_invocations_gets_a_verdict() {
    use EventType::*;
    let mut h = Vec::new();
    line(&mut h, 0, Invoke, "write", json!({"key": 1, "value": 5}));
    line(&mut h, 0, Ok, "write", json!({"key": 1, "value": 5}));
    line(&mut h, 1, Invoke, "write", json!({"key": 1, "value": 6}));
    line(&mut h, 2, Invoke, "read", json!({"key": 1, "value": null}));
    line(&mut h, 2, Ok, "read", json!({"key": 1, "value": 6}));
    line(&mut h, 3, Invoke, "read", json!({"key": 1, "value": null}));
    let r = check_as(Format::Jsonl, &h, Model::CasRegister, &[], &options()).unwrap();
    assert_eq!(r.valid, Validity::Valid, "{}", r.render_text());
    let lin = &r.checkers["linearizable"];
    assert_eq!(lin.stats["ops-never-completed"], 2);
    assert!(
        r.render_text()
            .contains("2 invocations never completed: they were checked as indeterminate"),
        "{}",
        r.render_text()
    );
    // A read of 7, which nobody wrote, cannot be linearized.
    line(&mut h, 4, Invoke, "read", json!({"key": 1, "value": null}));
    line(&mut h, 4, Ok, "read", json!({"key": 1, "value": 7}));
    let r = check_as(Format::Jsonl, &h, Model::CasRegister, &[], &options()).unwrap();
    assert_eq!(r.valid, Validity::Invalid, "{}", r.render_text());
}

#[test]
fn a_queue_history_with_pending_sends_gets_a_verdict() {
    use EventType::*;
    let send = |v: i64| json!({"partition": 0, "value": v});
    let mut h = Vec::new();
    line(&mut h, 0, Invoke, "send", send(1));
    line(
        &mut h,
        0,
        Ok,
        "send",
        json!({"partition": 0, "value": 1, "offset": 0}),
    );
    // Two sends never complete: one landed, one did not.
    line(&mut h, 1, Invoke, "send", send(2));
    line(&mut h, 2, Invoke, "send", send(3));
    line(
        &mut h,
        9,
        Invoke,
        "final-poll",
        json!({"partition": 0, "offset": 0}),
    );
    line(
        &mut h,
        9,
        Ok,
        "final-poll",
        json!({"partition": 0, "records": [[0, 1], [1, 3]], "high_watermark": 2}),
    );
    let r = check_as(Format::Jsonl, &h, Model::Queue, &[], &options()).unwrap();
    assert_eq!(r.valid, Validity::Valid, "{}", r.render_text());
    assert_eq!(r.checkers["queue"].stats["ops-never-completed"], 2);

    // A pending send a consumer read must survive, as an `info` one must.
    let mut h2 = h[..4].to_vec();
    line(
        &mut h2,
        5,
        Invoke,
        "poll",
        json!({"partition": 0, "offset": 0}),
    );
    line(
        &mut h2,
        5,
        Ok,
        "poll",
        json!({"partition": 0, "records": [[0, 1], [1, 2]], "high_watermark": 2}),
    );
    h2.extend(h[4..].iter().cloned());
    for (i, e) in h2.iter_mut().enumerate() {
        e.index = i as u64;
    }
    let r = check_as(Format::Jsonl, &h2, Model::Queue, &[], &options()).unwrap();
    assert_eq!(r.valid, Validity::Invalid, "{}", r.render_text());
    assert!(
        r.render_text().contains("lost-write"),
        "{}",
        r.render_text()
    );
}
