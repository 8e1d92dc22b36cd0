//! Knossos's models on Jepsen-shaped EDN histories, through `check::check` as
//! `watermark check` runs it: each model's valid and invalid histories, its
//! initial state, indeterminate and pending operations, keys, and the model a
//! history's operations imply.

use checker::check::{Model, check};
use checker::format::{self, Format};
use checker::linear::Options;
use checker::verdict::{Results, Validity};
use serde_json::{Value, json};

/// EDN op lines from `(process type f value)` tuples.
fn edn(ops: &[(u64, &str, &str, &str)]) -> String {
    ops.iter()
        .enumerate()
        .map(|(i, (p, t, f, v))| {
            format!("{{:index {i}, :time {i}, :type :{t}, :process {p}, :f :{f}, :value {v}}}\n")
        })
        .collect()
}

fn judge(text: &str, model: Option<Model>, initial: Option<Value>) -> Results {
    let fmt = format::detect(text).unwrap();
    assert_eq!(fmt, Format::Edn);
    let parsed = format::parse(text, fmt).unwrap();
    let model = model.or_else(|| Model::infer(fmt, &parsed.events)).unwrap();
    let options = Options {
        initial,
        ..Options::default()
    };
    check(fmt, &parsed.events, model, &[], &options).unwrap()
}

fn valid(text: &str, model: Option<Model>, initial: Option<Value>) -> Validity {
    judge(text, model, initial).valid
}

#[test]
fn register_matches_any_value_on_a_nil_read_and_has_no_cas() {
    // A nil read says nothing (Knossos): valid even after a write completed.
    let h = edn(&[
        (0, "invoke", "write", "1"),
        (0, "ok", "write", "1"),
        (1, "invoke", "read", "nil"),
        (1, "ok", "read", "nil"),
    ]);
    assert_eq!(valid(&h, Some(Model::Register), None), Validity::Valid);
    // Starting at 0, a read of 0 before any write is fine, of 1 is not.
    let h = edn(&[
        (0, "invoke", "read", "nil"),
        (0, "ok", "read", "0"),
        (0, "invoke", "write", "1"),
        (0, "ok", "write", "1"),
        (1, "invoke", "read", "nil"),
        (1, "ok", "read", "0"),
    ]);
    assert_eq!(
        valid(&h, Some(Model::Register), Some(json!(0))),
        Validity::Invalid
    );
    assert_eq!(
        valid(
            &h[..h.find("{:index 2").unwrap()],
            Some(Model::Register),
            Some(json!(0))
        ),
        Validity::Valid
    );
    // `register` rejects cas, naming the operation; `cas-register` takes it.
    let h = edn(&[(0, "invoke", "cas", "[0 1]"), (0, "ok", "cas", "[0 1]")]);
    let parsed = format::parse(&h, Format::Edn).unwrap();
    let e = check(
        Format::Edn,
        &parsed.events,
        Model::Register,
        &[],
        &Options::default(),
    )
    .unwrap_err();
    assert!(e.message.contains("not cas"), "{e}");
    assert_eq!(valid(&h, None, Some(json!(0))), Validity::Valid);
    assert_eq!(valid(&h, None, None), Validity::Invalid);
}

#[test]
fn mutex() {
    // Two holders at once: not a mutex.
    let h = edn(&[
        (0, "invoke", "acquire", "nil"),
        (0, "ok", "acquire", "nil"),
        (1, "invoke", "acquire", "nil"),
        (1, "ok", "acquire", "nil"),
    ]);
    assert_eq!(valid(&h, None, None), Validity::Invalid);
    // Released in between, concurrently: fine. A failed release did not happen;
    // an acquire that timed out may hold the lock, or not.
    let h = edn(&[
        (0, "invoke", "acquire", "nil"),
        (0, "ok", "acquire", "nil"),
        (1, "invoke", "acquire", "nil"),
        (0, "invoke", "release", "nil"),
        (0, "ok", "release", "nil"),
        (1, "ok", "acquire", "nil"),
        (2, "invoke", "release", "nil"),
        (2, "fail", "release", "nil"),
        (3, "invoke", "acquire", "nil"),
        (3, "info", "acquire", "nil"),
        (1, "invoke", "release", "nil"),
        (1, "ok", "release", "nil"),
    ]);
    let r = judge(&h, None, None);
    assert_eq!(r.valid, Validity::Valid, "{}", r.render_text());
    // Held initially: the first acquire cannot succeed.
    let h = edn(&[(0, "invoke", "acquire", "nil"), (0, "ok", "acquire", "nil")]);
    assert_eq!(valid(&h, None, Some(json!(true))), Validity::Invalid);
    assert_eq!(valid(&h, None, Some(json!(false))), Validity::Valid);
}

#[test]
fn multi_register() {
    // Knossos's example shape: x = y = 0 initially; a transaction's reads see its
    // own writes; nil reads (the invocation's) are unknown.
    let h = edn(&[
        (0, "invoke", "txn", "[[:read :x nil] [:read :y nil]]"),
        (1, "invoke", "txn", "[[:write :x 1] [:write :y 1]]"),
        (0, "ok", "txn", "[[:read :x 0] [:read :y 0]]"),
        (1, "ok", "txn", "[[:write :x 1] [:write :y 1]]"),
        (
            2,
            "invoke",
            "txn",
            "[[:read :x nil] [:write :y 2] [:read :y nil]]",
        ),
        (2, "ok", "txn", "[[:read :x 1] [:write :y 2] [:read :y 2]]"),
    ]);
    let init = json!({"x": 0, "y": 0});
    let r = judge(&h, None, Some(init.clone()));
    assert_eq!(r.valid, Validity::Valid, "{}", r.render_text());
    // A torn read: x from before the write, y from after.
    let h = edn(&[
        (1, "invoke", "txn", "[[:write :x 1] [:write :y 1]]"),
        (1, "ok", "txn", "[[:write :x 1] [:write :y 1]]"),
        (0, "invoke", "txn", "[[:r :x nil] [:r :y nil]]"),
        (0, "ok", "txn", "[[:r :x 0] [:r :y 1]]"),
    ]);
    let r = judge(&h, None, Some(init.clone()));
    assert_eq!(r.valid, Validity::Invalid, "{}", r.render_text());
    let e = r.checkers["linearizable"].anomalies[0]
        .explanation
        .as_ref()
        .unwrap();
    assert_eq!(e.states, vec!["{x: 1, y: 1}"]);
    // The initial state in EDN, as `--initial '{:x 0 :y 0}'` gives it.
    assert_eq!(format::parse_value("{:x 0 :y 0}").unwrap(), init);
}

#[test]
fn set() {
    let h = edn(&[
        (0, "invoke", "add", "1"),
        (0, "ok", "add", "1"),
        (1, "invoke", "add", "2"),
        (2, "invoke", "read", "nil"),
        (2, "ok", "read", "#{1 2}"),
        (1, "info", "add", "2"),
        (3, "invoke", "add", "3"),
        (3, "fail", "add", "3"),
        (2, "invoke", "read", "nil"),
        (2, "ok", "read", "#{2 1}"),
    ]);
    let r = judge(&h, None, None);
    assert_eq!(r.valid, Validity::Valid, "{}", r.render_text());
    // A read that misses a completed add, or shows a failed one.
    for read in ["#{2}", "#{1 2 3}"] {
        let bad = h.replace("#{2 1}", read);
        assert_eq!(valid(&bad, None, None), Validity::Invalid, "{read}");
    }
    // Starting with 9 in it.
    assert_eq!(valid(&h, None, Some(json!([9]))), Validity::Invalid);
    let with9 = h
        .replace("#{1 2}", "#{1 2 9}")
        .replace("#{2 1}", "#{9 2 1}");
    assert_eq!(valid(&with9, None, Some(json!([9]))), Validity::Valid);
}

#[test]
fn queues() {
    // Dequeued out of order: fine unordered, not FIFO.
    let h = edn(&[
        (0, "invoke", "enqueue", "1"),
        (0, "ok", "enqueue", "1"),
        (0, "invoke", "enqueue", "2"),
        (0, "ok", "enqueue", "2"),
        (1, "invoke", "dequeue", "nil"),
        (1, "ok", "dequeue", "2"),
    ]);
    assert_eq!(
        valid(&h, Some(Model::UnorderedQueue), None),
        Validity::Valid
    );
    assert_eq!(valid(&h, Some(Model::FifoQueue), None), Validity::Invalid);
    // An indeterminate dequeue may have taken the head: then 2 is next.
    let h2 = h.replace(
        "{:index 4",
        "{:index 90, :time 90, :type :invoke, :process 5, :f :dequeue, :value nil}\n\
         {:index 91, :time 91, :type :info, :process 5, :f :dequeue, :value nil}\n{:index 4",
    );
    assert_eq!(valid(&h2, Some(Model::FifoQueue), None), Validity::Valid);
    // A value dequeued twice, or never enqueued.
    let twice = format!(
        "{h}{}",
        edn(&[(1, "invoke", "dequeue", "nil"), (1, "ok", "dequeue", "2")])
            .replace(":index 0,", ":index 6,")
            .replace(":index 1,", ":index 7,")
    );
    assert_eq!(
        valid(&twice, Some(Model::UnorderedQueue), None),
        Validity::Invalid
    );
    let h3 = edn(&[(1, "invoke", "dequeue", "nil"), (1, "ok", "dequeue", "7")]);
    assert_eq!(
        valid(&h3, Some(Model::UnorderedQueue), None),
        Validity::Invalid
    );
    assert_eq!(
        valid(&h3, Some(Model::FifoQueue), Some(json!([7, 8]))),
        Validity::Valid
    );
    // enqueue/dequeue do not say which queue: no model is inferred.
    let parsed = format::parse(&h, Format::Edn).unwrap();
    assert_eq!(Model::infer(Format::Edn, &parsed.events), None);
}

#[test]
fn independent_keys_for_any_model() {
    // jepsen.independent: a set per key; each is judged on its own.
    let h = edn(&[
        (0, "invoke", "add", "[:a 1]"),
        (0, "ok", "add", "[:a 1]"),
        (1, "invoke", "add", "[:b 1]"),
        (1, "ok", "add", "[:b 1]"),
        (2, "invoke", "read", "[:a nil]"),
        (2, "ok", "read", "[:a #{1}]"),
        (2, "invoke", "read", "[:b nil]"),
        (2, "ok", "read", "[:b #{}]"),
    ]);
    let r = judge(&h, None, None);
    assert_eq!(r.valid, Validity::Invalid, "{}", r.render_text());
    let a = &r.checkers["linearizable"].anomalies[0];
    assert_eq!(a.key, Some(json!("b")));
    assert_eq!(r.checkers["linearizable"].stats["keys"], 2);
}

#[test]
fn initial_states_that_do_not_fit_are_errors() {
    let h = edn(&[(0, "invoke", "acquire", "nil"), (0, "ok", "acquire", "nil")]);
    let parsed = format::parse(&h, Format::Edn).unwrap();
    let options = Options {
        initial: Some(json!([1])),
        ..Options::default()
    };
    let e = check(Format::Edn, &parsed.events, Model::Mutex, &[], &options).unwrap_err();
    assert!(e.message.contains("mutex model's initial state"), "{e}");
    assert_eq!(e.index, None);
    assert!(format::parse_value("{:x").is_err());
    assert_eq!(format::parse_value("#{1 2}").unwrap(), json!([1, 2]));
    assert_eq!(format::parse_value("\"s\"").unwrap(), json!("s"));
}
