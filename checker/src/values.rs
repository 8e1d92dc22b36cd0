//! A history's values as the checkers compare and show them: exactly.
//!
//! Histories carry JSON (or EDN) values, and the checkers ask two things of them:
//! are two values the same, and how is one shown. Both are answered by a value's
//! [`canonical`] text — compact JSON, object keys sorted — so `1` and `"1"` differ
//! and `{"a":1,"b":2}` is `{"b":2,"a":1}`.
//!
//! Integers are kept exactly, whatever their size. Integers that fit 64 bits are
//! JSON numbers; a larger one (`123456789012345678901234567890`, or EDN's
//! `123456789012345678901234567890N`) cannot be a number of the JSON values the
//! checker holds without rounding it to a float — which would make two different
//! large numbers equal — so the history readers keep it as its digits, marked as a
//! number by a leading U+FDD0 (a Unicode noncharacter, reserved for a program's
//! internal use and never found in a history's text). [`canonical`] shows it as the
//! bare number, so it equals only the same number, never a string of its digits.

use serde_json::{Map, Number, Value};

/// What starts the text of an integer too large for 64 bits.
const BIG: char = '\u{FDD0}';

/// An integer too large for 64 bits, from its literal digits (with its sign).
pub fn big_integer(digits: &str) -> Value {
    let mut s = String::with_capacity(digits.len() + BIG.len_utf8());
    s.push(BIG);
    s.push_str(digits.strip_prefix('+').unwrap_or(digits));
    Value::String(s)
}

/// An integer literal (`-12`, `123456789012345678901234567890`) as a value: a
/// JSON number if it fits 64 bits, else [`big_integer`]. `None`: not an integer.
pub fn integer(text: &str) -> Option<Value> {
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if let Ok(i) = text.parse::<i64>() {
        return Some(Value::Number(i.into()));
    }
    if let Ok(u) = text.strip_prefix('+').unwrap_or(text).parse::<u64>() {
        return Some(Value::Number(u.into()));
    }
    Some(big_integer(text))
}

/// The digits of an integer too large for 64 bits, if `v` is one.
pub fn as_big_integer(v: &Value) -> Option<&str> {
    match v {
        Value::String(s) => s.strip_prefix(BIG),
        _ => None,
    }
}

/// The value's text: compact JSON with object keys sorted, and every integer as
/// its exact digits. Two values are the same if and only if their texts are.
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

/// [`canonical`], appended to `out`.
pub fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => match s.strip_prefix(BIG) {
            Some(digits) => out.push_str(digits),
            None => write_string(s, out),
        },
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => write_object(m, out),
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn write_object(m: &Map<String, Value>, out: &mut String) {
    // Sorted as serde_json sorts its maps, whatever order `m` iterates in.
    let mut fields: Vec<(&String, &Value)> = m.iter().collect();
    fields.sort_by(|a, b| a.0.cmp(b.0));
    out.push('{');
    for (i, (k, v)) in fields.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(k, out);
        out.push(':');
        write_canonical(v, out);
    }
    out.push('}');
}

/// A string as a JSON string literal.
pub fn write_string(s: &str, out: &mut String) {
    // Serialising a string cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

/// The value as results.json shows it: an integer too large for 64 bits as the
/// string of its digits (JSON readers would round it as a number).
pub fn exported(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(s.strip_prefix(BIG).unwrap_or(s).to_string()),
        Value::Array(items) => Value::Array(items.iter().map(exported).collect()),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), exported(v))).collect())
        }
        v => v.clone(),
    }
}

/// Whether `v` holds an integer too large for 64 bits.
pub fn has_big_integer(v: &Value) -> bool {
    match v {
        Value::String(s) => s.starts_with(BIG),
        Value::Array(items) => items.iter().any(has_big_integer),
        Value::Object(m) => m.values().any(has_big_integer),
        _ => false,
    }
}

/// Serialize `v` as JSON with every integer exact: one too large for 64 bits is
/// written as the bare number it is (its [`canonical`] text), not as the string the
/// checker holds it in; any other value as serde_json writes it. For values written
/// to history.jsonl and sent to the broker.
pub fn serialize_exact<S: serde::Serializer>(v: &Value, s: S) -> Result<S::Ok, S::Error> {
    use serde::Serialize;
    if !has_big_integer(v) {
        return v.serialize(s);
    }
    serde_json::value::RawValue::from_string(canonical(v))
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}

/// A float as a value (`None`: not finite, which JSON cannot hold).
pub fn float(f: f64) -> Option<Value> {
    Number::from_f64(f).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn large_integers_are_exact_and_differ_from_strings() {
        let a = integer("123456789012345678901234567890").unwrap();
        let b = integer("123456789012345678901234567891").unwrap();
        assert_ne!(canonical(&a), canonical(&b));
        assert_eq!(canonical(&a), "123456789012345678901234567890");
        assert_ne!(
            canonical(&a),
            canonical(&json!("123456789012345678901234567890"))
        );
        assert_eq!(integer("-5"), Some(json!(-5)));
        assert_eq!(integer("18446744073709551615"), Some(json!(u64::MAX)));
        assert_eq!(
            canonical(&integer("-18446744073709551616").unwrap()),
            "-18446744073709551616"
        );
        assert_eq!(integer("1.5"), None);
        assert_eq!(
            exported(&json!([a])),
            json!(["123456789012345678901234567890"])
        );
    }

    #[test]
    fn large_integers_serialize_as_bare_numbers() {
        #[derive(serde::Serialize)]
        struct Event {
            #[serde(serialize_with = "serialize_exact")]
            value: Value,
        }
        let big = integer("123456789012345678901234567890").unwrap();
        let e = Event {
            value: json!({"n": [big, 1]}),
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"value":{"n":[123456789012345678901234567890,1]}}"#
        );
        let plain = Event { value: json!("x") };
        assert_eq!(serde_json::to_string(&plain).unwrap(), r#"{"value":"x"}"#);
    }

    #[test]
    fn canonical_text_is_serde_json_text_for_ordinary_values() {
        for v in [
            json!(null),
            json!({"b": [1, 2.5, "x\"y"], "a": {"z": true}}),
            json!("ü\n"),
            json!(-3),
        ] {
            assert_eq!(canonical(&v), v.to_string());
        }
    }
}
