//! Integers beyond 64 bits are kept exactly, in history.jsonl and in Jepsen EDN:
//! a write of 123456789012345678901234567890 then a read of a different large
//! number is a linearizability violation, a read of the same number is not, and
//! the queue analysis tells two large values apart.

use checker::check::{Model, check};
use checker::format::{self, Format};
use checker::linear::Options;
use checker::verdict::{AnomalyKind, Results, Validity};

const BIG: &str = "123456789012345678901234567890";
/// Rounds to the same 64-bit float as `BIG`.
const NEAR: &str = "123456789012345678901234567891";

fn judge(text: &str, fmt: Format, model: Model) -> Results {
    assert_eq!(format::detect(text), Ok(fmt));
    let parsed = format::parse(text, fmt).unwrap();
    check(fmt, &parsed.events, model, &[], &Options::default()).unwrap()
}

fn register_jsonl(written: &str, read: &str) -> String {
    [
        format!(
            r#"{{"index":0,"time":0,"process":0,"type":"invoke","f":"write","value":{written}}}"#
        ),
        format!(r#"{{"index":1,"time":1,"process":0,"type":"ok","f":"write","value":{written}}}"#),
        r#"{"index":2,"time":2,"process":1,"type":"invoke","f":"read","value":null}"#.to_string(),
        format!(r#"{{"index":3,"time":3,"process":1,"type":"ok","f":"read","value":{read}}}"#),
    ]
    .join("\n")
}

fn register_edn(written: &str, read: &str) -> String {
    format!(
        "{{:type :invoke, :f :write, :value {written}, :process 0, :index 0, :time 0}}\n\
         {{:type :ok, :f :write, :value {written}, :process 0, :index 1, :time 1}}\n\
         {{:type :invoke, :f :read, :value nil, :process 1, :index 2, :time 2}}\n\
         {{:type :ok, :f :read, :value {read}, :process 1, :index 3, :time 3}}\n"
    )
}

#[test]
fn a_read_of_a_different_large_number_is_not_linearizable_in_jsonl() {
    let r = judge(
        &register_jsonl(BIG, NEAR),
        Format::Jsonl,
        Model::CasRegister,
    );
    assert_eq!(r.valid, Validity::Invalid, "{r:?}");
    let r = judge(&register_jsonl(BIG, BIG), Format::Jsonl, Model::CasRegister);
    assert_eq!(r.valid, Validity::Valid, "{r:?}");
    let r = judge(
        &register_jsonl(&format!("-{BIG}"), &format!("-{NEAR}")),
        Format::Jsonl,
        Model::CasRegister,
    );
    assert_eq!(r.valid, Validity::Invalid, "{r:?}");
    // The number is not the string of its digits.
    let r = judge(
        &register_jsonl(BIG, &format!("\"{BIG}\"")),
        Format::Jsonl,
        Model::CasRegister,
    );
    assert_eq!(r.valid, Validity::Invalid, "{r:?}");
}

#[test]
fn a_read_of_a_different_large_number_is_not_linearizable_in_edn() {
    let r = judge(&register_edn(BIG, NEAR), Format::Edn, Model::CasRegister);
    assert_eq!(r.valid, Validity::Invalid, "{r:?}");
    let r = judge(
        &register_edn(BIG, &format!("{BIG}N")),
        Format::Edn,
        Model::CasRegister,
    );
    assert_eq!(r.valid, Validity::Valid, "{r:?}");
    let r = judge(
        &register_edn(&format!("{BIG}N"), NEAR),
        Format::Edn,
        Model::CasRegister,
    );
    assert_eq!(r.valid, Validity::Invalid, "{r:?}");
}

#[test]
fn the_explanation_shows_the_numbers_exactly() {
    let r = judge(
        &register_jsonl(BIG, NEAR),
        Format::Jsonl,
        Model::CasRegister,
    );
    let text = r.render_text();
    assert!(text.contains(NEAR) && !text.contains("e+29"), "{text}");
    assert!(!text.contains('\u{FDD0}'), "{text}");
}

fn queue_jsonl(sent: &str, polled: &str) -> String {
    [
        format!(r#"{{"index":0,"time":0,"process":0,"type":"invoke","f":"send","value":{{"partition":0,"value":{sent}}}}}"#),
        format!(r#"{{"index":1,"time":1,"process":0,"type":"ok","f":"send","value":{{"partition":0,"value":{sent},"offset":0}}}}"#),
        r#"{"index":2,"time":2,"process":1,"type":"invoke","f":"final-poll","value":{"partition":0,"offset":0}}"#.to_string(),
        format!(r#"{{"index":3,"time":3,"process":1,"type":"ok","f":"final-poll","value":{{"partition":0,"records":[[0,{polled}]],"high_watermark":1}}}}"#),
    ]
    .join("\n")
}

#[test]
fn the_queue_analysis_tells_large_values_apart() {
    let r = judge(&queue_jsonl(BIG, BIG), Format::Jsonl, Model::Queue);
    assert_eq!(r.valid, Validity::Valid, "{r:?}");
    let r = judge(&queue_jsonl(BIG, NEAR), Format::Jsonl, Model::Queue);
    assert_eq!(r.valid, Validity::Invalid, "{r:?}");
    let kinds: Vec<AnomalyKind> = r.checkers["queue"]
        .anomalies
        .iter()
        .map(|a| a.kind)
        .collect();
    assert!(kinds.contains(&AnomalyKind::LostWrite), "{kinds:?}");
    assert!(kinds.contains(&AnomalyKind::Unexpected), "{kinds:?}");
    let text = r.render_text();
    assert!(
        text.contains(&format!("value {NEAR} at offset 0")),
        "{text}"
    );
    assert!(!text.contains('\u{FDD0}'), "{text}");
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains(&format!("\"{BIG}\"")), "{json}");
}
