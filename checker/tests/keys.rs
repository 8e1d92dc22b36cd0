//! Which operations share a register: Jepsen `independent` histories (values are
//! `[key value]` tuples) are checked key by key, and keys are told apart by type
//! (the string "1" is not the number 1).

use checker::check::{Model, check};
use checker::format::{self, Format};
use checker::linear::Options;
use checker::verdict::Results;
use checker::verdict::Validity;

fn check_text(text: &str) -> (Format, Model, Results) {
    let fmt = format::detect(text).unwrap();
    let parsed = format::parse(text, fmt).unwrap();
    let model = Model::infer(fmt, &parsed.events).unwrap();
    let r = check(fmt, &parsed.events, model, &[], &Options::default()).unwrap();
    (fmt, model, r)
}

#[test]
fn independent_tuples_are_checked_per_key() {
    // Two keys, each linearizable on its own; as one register the read of 3 after
    // the write of 4 completed would not be.
    let text = r#"{:type :invoke, :f :write, :value [1 3], :process 0}
{:type :ok, :f :write, :value [1 3], :process 0}
{:type :invoke, :f :write, :value [2 4], :process 1}
{:type :ok, :f :write, :value [2 4], :process 1}
{:type :invoke, :f :read, :value [1 nil], :process 0}
{:type :ok, :f :read, :value [1 3], :process 0}
{:type :invoke, :f :cas, :value [2 [4 5]], :process 1}
{:type :ok, :f :cas, :value [2 [4 5]], :process 1}
"#;
    let (fmt, model, r) = check_text(text);
    assert_eq!((fmt, model), (Format::Edn, Model::CasRegister));
    assert_eq!(r.valid, Validity::Valid, "{}", r.render_text());

    // Key 1 reads the value written to key 2: not linearizable per key (though it
    // would be as one register).
    let text = r#"{:type :invoke, :f :write, :value [1 3], :process 0}
{:type :ok, :f :write, :value [1 3], :process 0}
{:type :invoke, :f :write, :value [2 4], :process 1}
{:type :ok, :f :write, :value [2 4], :process 1}
{:type :invoke, :f :read, :value [1 nil], :process 0}
{:type :ok, :f :read, :value [1 4], :process 0}
"#;
    let (_, _, r) = check_text(text);
    assert_eq!(r.valid, Validity::Invalid, "{}", r.render_text());
}

#[test]
fn a_plain_cas_register_history_is_not_taken_for_tuples() {
    // cas [expected new] with a scalar second element: one register, as before.
    let text = r#"{:type :invoke, :f :write, :value 1, :process 0}
{:type :ok, :f :write, :value 1, :process 0}
{:type :invoke, :f :cas, :value [1 2], :process 1}
{:type :ok, :f :cas, :value [1 2], :process 1}
{:type :invoke, :f :read, :value nil, :process 0}
{:type :ok, :f :read, :value 2, :process 0}
"#;
    let (_, _, r) = check_text(text);
    assert_eq!(r.valid, Validity::Valid, "{}", r.render_text());
}

#[test]
fn keys_of_different_types_are_different_registers() {
    let line = |i: u64, p: u64, t: &str, f: &str, v: &str| {
        format!(r#"{{"index":{i},"time":{i},"process":{p},"type":"{t}","f":"{f}","value":{v}}}"#)
    };
    let text = [
        line(0, 3, "invoke", "write", r#"7"#),
        line(1, 3, "ok", "write", r#"7"#),
        line(2, 0, "invoke", "write", r#"{"key":"1","value":5}"#),
        line(3, 0, "ok", "write", r#"{"key":"1","value":5}"#),
        line(4, 1, "invoke", "read", r#"{"key":1,"value":null}"#),
        line(5, 1, "ok", "read", r#"{"key":1,"value":null}"#),
        line(6, 2, "invoke", "read", r#"{"key":"","value":null}"#),
        line(7, 2, "ok", "read", r#"{"key":"","value":null}"#),
    ]
    .join("\n");
    // Key 1 (a number) was never written, nor was key "" (while the unkeyed
    // register holds 7).
    let (_, _, r) = check_text(&text);
    assert_eq!(r.valid, Validity::Valid, "{}", r.render_text());
}
