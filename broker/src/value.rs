//! A record's value (and a conditional write's `if_value`) exactly as the client
//! wrote it: JSON kept as text, never as floating point, so an integer of any size —
//! `123456789012345678901234567890` — is stored, replicated and read back digit for
//! digit. (serde_json's `Value` would hold it as an `f64`, rounding it.)
//!
//! The text is canonical, so that two values are equal exactly when their texts are
//! (the register view's compare-and-set relies on it): no insignificant whitespace,
//! object keys sorted (the last of repeated keys wins), strings with serde_json's
//! escapes, integers as written (those that fit 64 bits in their shortest form), and
//! other numbers as serde_json writes the `f64` they denote (`1e2` is `100.0`).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// A JSON value kept as its canonical text (see the module doc), held as raw JSON so
/// that writing it out copies it without parsing it again.
#[derive(Clone)]
pub struct RecordValue(Box<RawValue>);

impl PartialEq for RecordValue {
    fn eq(&self, other: &RecordValue) -> bool {
        self.text() == other.text()
    }
}

impl Eq for RecordValue {}

impl std::hash::Hash for RecordValue {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.text().hash(h);
    }
}

impl RecordValue {
    /// `null`.
    pub fn null() -> RecordValue {
        RecordValue(RawValue::from_string("null".into()).expect("null is JSON"))
    }

    /// The value of the JSON text `text` (any JSON), or why it is not JSON.
    pub fn parse(text: &str) -> Result<RecordValue, serde_json::Error> {
        let raw: &RawValue = serde_json::from_str(text)?;
        RecordValue::from_raw(raw)
    }

    /// The value of an already delimited JSON text.
    pub fn from_raw(raw: &RawValue) -> Result<RecordValue, serde_json::Error> {
        let mut out = String::with_capacity(raw.get().len());
        canonical(raw, &mut out)?;
        if out == raw.get() {
            // Already canonical (as values written by this broker, or by a client
            // that writes compact JSON with sorted keys, are): copied, not re-parsed.
            return Ok(RecordValue(raw.to_owned()));
        }
        RawValue::from_string(out).map(RecordValue)
    }

    /// The canonical text.
    pub fn text(&self) -> &str {
        self.0.get()
    }

    pub fn is_null(&self) -> bool {
        self.text() == "null"
    }

    /// As a serde_json value: exact except for integers beyond 64 bits, which become
    /// floating point. For tests and messages, never for storage.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(self.text()).unwrap_or(serde_json::Value::Null)
    }
}

/// Append the canonical text of `raw` to `out`.
fn canonical(raw: &RawValue, out: &mut String) -> Result<(), serde_json::Error> {
    let text = raw.get().trim();
    match text.as_bytes().first() {
        Some(b'{') => {
            let map: BTreeMap<String, &RawValue> = serde_json::from_str(text)?;
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k)?);
                out.push(':');
                canonical(v, out)?;
            }
            out.push('}');
        }
        Some(b'[') => {
            let items: Vec<&RawValue> = serde_json::from_str(text)?;
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(v, out)?;
            }
            out.push(']');
        }
        Some(b'"') => {
            let s: String = serde_json::from_str(text)?;
            out.push_str(&serde_json::to_string(&s)?);
        }
        Some(b'-' | b'0'..=b'9') if !text.contains(['.', 'e', 'E']) => {
            // An integer: exact, whatever its size; shortest form when it fits.
            if let Ok(i) = text.parse::<i64>() {
                out.push_str(&i.to_string());
            } else if let Ok(u) = text.parse::<u64>() {
                out.push_str(&u.to_string());
            } else {
                out.push_str(text);
            }
        }
        _ => {
            // true, false, null, or a number that is not an integer.
            let v: serde_json::Value = serde_json::from_str(text)?;
            out.push_str(&serde_json::to_string(&v)?);
        }
    }
    Ok(())
}

impl fmt::Display for RecordValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl fmt::Debug for RecordValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl Serialize for RecordValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RecordValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        RecordValue::from_raw(&raw).map_err(D::Error::custom)
    }
}

impl From<serde_json::Value> for RecordValue {
    fn from(v: serde_json::Value) -> RecordValue {
        RecordValue::parse(&v.to_string()).expect("a serde_json value is JSON")
    }
}

impl PartialEq<serde_json::Value> for RecordValue {
    fn eq(&self, other: &serde_json::Value) -> bool {
        RecordValue::parse(&other.to_string()).is_ok_and(|v| v.text() == self.text())
    }
}

/// `rv!(…)`: a record value written in `json!` syntax, for tests.
#[cfg(test)]
macro_rules! rv {
    ($($t:tt)+) => {
        $crate::value::RecordValue::from(serde_json::json!($($t)+))
    };
}
#[cfg(test)]
pub(crate) use rv;

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(text: &str) -> String {
        RecordValue::parse(text).unwrap().text().to_string()
    }

    #[test]
    fn integers_of_any_size_are_kept_exactly() {
        for t in [
            "123456789012345678901234567890",
            "-123456789012345678901234567890",
            "18446744073709551616",
            "-9223372036854775809",
            "18446744073709551615",
            "-9223372036854775808",
            "0",
            "7",
        ] {
            assert_eq!(canon(t), t);
        }
        assert_eq!(canon("-0"), "0");
        let v = RecordValue::parse(r#"{"n": 123456789012345678901234567890}"#).unwrap();
        assert_eq!(v.text(), r#"{"n":123456789012345678901234567890}"#);
        let round: RecordValue = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(round, v);
        assert_ne!(
            RecordValue::parse("123456789012345678901234567890").unwrap(),
            RecordValue::parse("123456789012345678901234567891").unwrap()
        );
    }

    #[test]
    fn equal_values_have_equal_texts() {
        for (a, b) in [
            (r#"{ "b": 1, "a": [1, 2] }"#, r#"{"a":[1,2],"b":1}"#),
            (r#"{"a": 1, "a": 2}"#, r#"{"a":2}"#),
            ("1e2", "100.0"),
            (r#""\u0041""#, r#""A""#),
            (" true ", "true"),
            ("[null, false]", "[null,false]"),
        ] {
            assert_eq!(canon(a), canon(b), "{a} vs {b}");
        }
        assert_ne!(
            canon("1"),
            canon("1.0"),
            "an integer is not a float, as in serde_json"
        );
        assert_eq!(canon(r#"{"b":{"d":1,"c":2}}"#), r#"{"b":{"c":2,"d":1}}"#);
    }

    #[test]
    fn what_is_not_json_is_refused() {
        for t in ["", "{", "[1,]", "01", "1e400", "nul", r#"{"a" 1}"#] {
            assert!(RecordValue::parse(t).is_err(), "{t:?}");
        }
    }

    #[test]
    fn serde_json_values_convert_and_compare() {
        let v = serde_json::json!({"i": 1, "s": "x"});
        assert_eq!(RecordValue::from(v.clone()), v);
        assert_eq!(RecordValue::from(v.clone()).to_value(), v);
        assert!(RecordValue::null().is_null());
    }
}
