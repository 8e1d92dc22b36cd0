//! Maelstrom's wire format: one JSON object per line, `{"src", "dest", "body"}`,
//! the body an object with a mandatory string `type`, an optional integer `msg_id`
//! and, in replies, `in_reply_to`; every other key of the body is the message's own.
//!
//! A node under test may print anything on its stdout, so [`parse_line`] never
//! trusts it: a line that is too long, not UTF-8, not JSON, not an object, or
//! without a usable `src`, `dest` or `body.type` is a [`ParseError`] that says which,
//! and no input panics. [`Message::to_line`] writes exactly one line: JSON escapes
//! every control character inside strings, so the only newline is the last byte.
//!
//! Leniencies, on purpose: keys of the envelope other than `src`, `dest` and `body`
//! are ignored, and a `msg_id` or `in_reply_to` of `null` counts as absent (some
//! node libraries write them so). Everything else the protocol fixes is checked.

use std::fmt;

use serde_json::{Map, Value};

/// The longest line accepted from a node, in bytes, without its newline. A reader
/// of a node's stdout stops buffering a line at this length (and discards the rest
/// of it); [`parse_line`] refuses anything longer.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// How much of an offending value an error quotes.
const QUOTED_CHARS: usize = 80;

/// One message: who sent it, to whom, and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub src: String,
    pub dest: String,
    pub body: Body,
}

/// A message's body: its reserved keys, and the rest as they came.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    /// The `type` key: what kind of message this is (`read`, `read_ok`, `error`, ...).
    pub kind: String,
    pub msg_id: Option<i64>,
    pub in_reply_to: Option<i64>,
    /// Every other key. Entries named `type`, `msg_id` or `in_reply_to` here are
    /// never written: the fields above are.
    pub fields: Map<String, Value>,
}

/// Why a line is not a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// Longer than [`MAX_LINE_BYTES`].
    TooLong { len: usize },
    /// Nothing but whitespace.
    Empty,
    /// Not UTF-8 from byte `valid_up_to` on.
    NotUtf8 { valid_up_to: usize },
    /// Not JSON at all.
    NotJson { error: String },
    /// JSON, but not an object.
    NotObject { found: String },
    /// A required key is absent (`src`, `dest`, `body`, `body.type`).
    Missing { field: &'static str },
    /// A key holds the wrong kind of value.
    Invalid {
        field: &'static str,
        expected: &'static str,
        found: String,
    },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::TooLong { len } => write!(
                f,
                "line of {len} bytes is longer than the {MAX_LINE_BYTES} bytes a message may have"
            ),
            ParseError::Empty => f.write_str("empty line: a message is one JSON object"),
            ParseError::NotUtf8 { valid_up_to } => {
                write!(f, "line is not UTF-8 (from byte {valid_up_to} on)")
            }
            ParseError::NotJson { error } => write!(f, "line is not JSON: {error}"),
            ParseError::NotObject { found } => {
                write!(f, "a message is a JSON object, but the line is {found}")
            }
            ParseError::Missing { field } => write!(f, "message has no `{field}`"),
            ParseError::Invalid {
                field,
                expected,
                found,
            } => write!(f, "`{field}` must be {expected}, but is {found}"),
        }
    }
}

impl std::error::Error for ParseError {}

/// A value, described for an error: its kind and a bounded quote of it.
fn describe(v: &Value) -> String {
    let kind = match v {
        Value::Null => return "null".to_string(),
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    let text = v.to_string();
    let mut quoted: String = text.chars().take(QUOTED_CHARS).collect();
    if quoted.len() < text.len() {
        quoted.push('…');
    }
    format!("{kind} ({quoted})")
}

/// Parse one line a node printed (without or with its trailing `\n` or `\r\n`).
pub fn parse_line(line: &[u8]) -> Result<Message, ParseError> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() > MAX_LINE_BYTES {
        return Err(ParseError::TooLong { len: line.len() });
    }
    let text = std::str::from_utf8(line).map_err(|e| ParseError::NotUtf8 {
        valid_up_to: e.valid_up_to(),
    })?;
    if text.trim().is_empty() {
        return Err(ParseError::Empty);
    }
    let value: Value = serde_json::from_str(text).map_err(|e| ParseError::NotJson {
        error: e.to_string(),
    })?;
    Message::from_value(&value)
}

/// A string field that must be present and non-empty.
fn node_id(m: &Map<String, Value>, field: &'static str) -> Result<String, ParseError> {
    match m.get(field) {
        None => Err(ParseError::Missing { field }),
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(other) => Err(ParseError::Invalid {
            field,
            expected: "a non-empty string",
            found: describe(other),
        }),
    }
}

/// An optional integer field of a body (`null` counts as absent).
fn optional_id(m: &Map<String, Value>, field: &'static str) -> Result<Option<i64>, ParseError> {
    match m.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_i64().map(Some).ok_or_else(|| ParseError::Invalid {
            field,
            expected: "an integer",
            found: describe(v),
        }),
    }
}

impl Message {
    pub fn new(src: impl Into<String>, dest: impl Into<String>, body: Body) -> Message {
        Message {
            src: src.into(),
            dest: dest.into(),
            body,
        }
    }

    /// A message from a parsed JSON value.
    pub fn from_value(value: &Value) -> Result<Message, ParseError> {
        let Value::Object(m) = value else {
            return Err(ParseError::NotObject {
                found: describe(value),
            });
        };
        let src = node_id(m, "src")?;
        let dest = node_id(m, "dest")?;
        let body = m.get("body").ok_or(ParseError::Missing { field: "body" })?;
        Ok(Message {
            src,
            dest,
            body: Body::from_value(body)?,
        })
    }

    /// The message as one line of JSON, ending in its only `\n`.
    pub fn to_line(&self) -> String {
        let mut out = String::with_capacity(64);
        out.push_str("{\"src\":");
        push_json(&mut out, &Value::String(self.src.clone()));
        out.push_str(",\"dest\":");
        push_json(&mut out, &Value::String(self.dest.clone()));
        out.push_str(",\"body\":");
        self.body.write(&mut out);
        out.push_str("}\n");
        out
    }

    /// A reply to this message: from its destination back to its source, in reply
    /// to its `msg_id`.
    pub fn reply(&self, mut body: Body) -> Message {
        body.in_reply_to = self.body.msg_id;
        Message::new(self.dest.clone(), self.src.clone(), body)
    }
}

/// Append a value's compact JSON.
fn push_json(out: &mut String, v: &Value) {
    // `Value`'s Display is its compact JSON; it cannot fail (a `Value` holds no
    // non-finite number).
    use std::fmt::Write as _;
    let _ = write!(out, "{v}");
}

impl Body {
    /// A body of type `kind` and nothing else.
    pub fn new(kind: impl Into<String>) -> Body {
        Body {
            kind: kind.into(),
            msg_id: None,
            in_reply_to: None,
            fields: Map::new(),
        }
    }

    /// This body with `field` set to `value`.
    pub fn with(mut self, field: &str, value: impl Into<Value>) -> Body {
        self.fields.insert(field.to_string(), value.into());
        self
    }

    /// A field other than the reserved ones.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.fields.get(field)
    }

    /// An `error` reply.
    pub fn is_error(&self) -> bool {
        self.kind == "error"
    }

    /// A body from a parsed JSON value.
    pub fn from_value(value: &Value) -> Result<Body, ParseError> {
        let Value::Object(m) = value else {
            return Err(ParseError::Invalid {
                field: "body",
                expected: "an object",
                found: describe(value),
            });
        };
        let kind = match m.get("type") {
            None => return Err(ParseError::Missing { field: "body.type" }),
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(other) => {
                return Err(ParseError::Invalid {
                    field: "body.type",
                    expected: "a non-empty string",
                    found: describe(other),
                });
            }
        };
        let msg_id = optional_id(m, "msg_id").map_err(|e| rename(e, "body.msg_id"))?;
        let in_reply_to =
            optional_id(m, "in_reply_to").map_err(|e| rename(e, "body.in_reply_to"))?;
        let fields = m
            .iter()
            .filter(|(k, _)| !is_reserved(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(Body {
            kind,
            msg_id,
            in_reply_to,
            fields,
        })
    }

    /// The body as a JSON object.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::String(self.kind.clone()));
        if let Some(id) = self.msg_id {
            m.insert("msg_id".into(), id.into());
        }
        if let Some(id) = self.in_reply_to {
            m.insert("in_reply_to".into(), id.into());
        }
        for (k, v) in self.fields.iter().filter(|(k, _)| !is_reserved(k)) {
            m.insert(k.clone(), v.clone());
        }
        Value::Object(m)
    }

    /// Append the body's compact JSON: the reserved keys first, then the others.
    fn write(&self, out: &mut String) {
        out.push_str("{\"type\":");
        push_json(out, &Value::String(self.kind.clone()));
        if let Some(id) = self.msg_id {
            out.push_str(&format!(",\"msg_id\":{id}"));
        }
        if let Some(id) = self.in_reply_to {
            out.push_str(&format!(",\"in_reply_to\":{id}"));
        }
        for (k, v) in self.fields.iter().filter(|(k, _)| !is_reserved(k)) {
            out.push(',');
            push_json(out, &Value::String(k.clone()));
            out.push(':');
            push_json(out, v);
        }
        out.push('}');
    }
}

fn is_reserved(key: &str) -> bool {
    matches!(key, "type" | "msg_id" | "in_reply_to")
}

/// The same error, about the body's field (the message's field names are shared).
fn rename(e: ParseError, field: &'static str) -> ParseError {
    match e {
        ParseError::Invalid {
            expected, found, ..
        } => ParseError::Invalid {
            field,
            expected,
            found,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Result<Message, ParseError> {
        parse_line(text.as_bytes())
    }

    #[test]
    fn a_message_parses_into_its_reserved_keys_and_fields() {
        let m = parse(
            r#"{"src":"c1","dest":"n1","body":{"type":"read","msg_id":123,"key":3,"extra":[1,{"a":null}]}}"#,
        )
        .unwrap();
        assert_eq!((m.src.as_str(), m.dest.as_str()), ("c1", "n1"));
        assert_eq!(m.body.kind, "read");
        assert_eq!((m.body.msg_id, m.body.in_reply_to), (Some(123), None));
        assert_eq!(m.body.get("key"), Some(&json!(3)));
        assert_eq!(m.body.get("extra"), Some(&json!([1, {"a": null}])));
        assert!(m.body.get("type").is_none() && m.body.get("msg_id").is_none());
    }

    #[test]
    fn a_line_round_trips_and_is_exactly_one_line() {
        let body = Body::new("echo_ok")
            .with("echo", "two\nlines\u{0}and a \"quote\" and ünïcode")
            .with("n", json!({"b": [1, 2.5, -3], "a": true}));
        let m = Message::new(
            "n1",
            "c2",
            Body {
                msg_id: Some(7),
                in_reply_to: Some(-2),
                ..body
            },
        );
        let line = m.to_line();
        assert!(line.ends_with('\n'));
        assert_eq!(line.matches('\n').count(), 1, "{line}");
        assert!(line.starts_with(
            r#"{"src":"n1","dest":"c2","body":{"type":"echo_ok","msg_id":7,"in_reply_to":-2,"#
        ));
        assert_eq!(parse(&line).unwrap(), m);
        assert_eq!(Body::from_value(&m.body.to_value()).unwrap(), m.body);
    }

    #[test]
    fn reserved_names_in_the_fields_are_never_written() {
        let mut b = Body::new("write")
            .with("type", "sneaky")
            .with("msg_id", "x");
        b.msg_id = Some(1);
        let line = Message::new("n1", "lin-kv", b).to_line();
        assert_eq!(
            line,
            "{\"src\":\"n1\",\"dest\":\"lin-kv\",\"body\":{\"type\":\"write\",\"msg_id\":1}}\n"
        );
    }

    #[test]
    fn a_reply_goes_back_in_reply_to_the_request() {
        let mut body = Body::new("read").with("key", 1);
        body.msg_id = Some(9);
        let req = Message::new("c1", "n2", body);
        let r = req.reply(Body::new("read_ok").with("value", 4));
        assert_eq!((r.src.as_str(), r.dest.as_str()), ("n2", "c1"));
        assert_eq!((r.body.in_reply_to, r.body.msg_id), (Some(9), None));
    }

    #[test]
    fn each_kind_of_bad_line_says_what_is_wrong() {
        use ParseError::*;
        type Expect = fn(&ParseError) -> bool;
        let cases: &[(&str, Expect)] = &[
            ("", |e| *e == Empty),
            ("   \r\n", |e| *e == Empty),
            ("hello world", |e| matches!(e, NotJson { .. })),
            ("{\"src\":\"n1\"", |e| matches!(e, NotJson { .. })),
            (
                "[1,2]",
                |e| matches!(e, NotObject { found } if found.starts_with("an array")),
            ),
            ("42", |e| matches!(e, NotObject { .. })),
            (r#"{"dest":"c1","body":{"type":"x"}}"#, |e| {
                *e == Missing { field: "src" }
            }),
            (r#"{"src":"n1","body":{"type":"x"}}"#, |e| {
                *e == Missing { field: "dest" }
            }),
            (r#"{"src":"n1","dest":"c1"}"#, |e| {
                *e == Missing { field: "body" }
            }),
            (r#"{"src":"n1","dest":"c1","body":{}}"#, |e| {
                *e == Missing { field: "body.type" }
            }),
            (r#"{"src":5,"dest":"c1","body":{"type":"x"}}"#, |e| {
                matches!(e, Invalid { field: "src", .. })
            }),
            (r#"{"src":"","dest":"c1","body":{"type":"x"}}"#, |e| {
                matches!(e, Invalid { field: "src", .. })
            }),
            (r#"{"src":"n1","dest":null,"body":{"type":"x"}}"#, |e| {
                matches!(e, Invalid { field: "dest", .. })
            }),
            (r#"{"src":"n1","dest":"c1","body":"read"}"#, |e| {
                matches!(e, Invalid { field: "body", .. })
            }),
            (r#"{"src":"n1","dest":"c1","body":{"type":7}}"#, |e| {
                matches!(
                    e,
                    Invalid {
                        field: "body.type",
                        ..
                    }
                )
            }),
            (
                r#"{"src":"n1","dest":"c1","body":{"type":"x","msg_id":"1"}}"#,
                |e| {
                    matches!(
                        e,
                        Invalid {
                            field: "body.msg_id",
                            ..
                        }
                    )
                },
            ),
            (
                r#"{"src":"n1","dest":"c1","body":{"type":"x","in_reply_to":1.5}}"#,
                |e| {
                    matches!(
                        e,
                        Invalid {
                            field: "body.in_reply_to",
                            ..
                        }
                    )
                },
            ),
        ];
        for (line, ok) in cases {
            let e = parse(line).unwrap_err();
            assert!(ok(&e), "{line:?} gave {e:?}");
            assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn null_ids_are_absent_and_unknown_envelope_keys_are_ignored() {
        let m = parse(
            r#"{"id":4,"src":"n1","dest":"c1","body":{"type":"x","msg_id":null,"in_reply_to":null}}"#,
        )
        .unwrap();
        assert_eq!((m.body.msg_id, m.body.in_reply_to), (None, None));
    }

    #[test]
    fn oversized_and_non_utf8_lines_are_refused_without_reading_them() {
        let long = vec![b'x'; MAX_LINE_BYTES + 1];
        assert_eq!(
            parse_line(&long),
            Err(ParseError::TooLong {
                len: MAX_LINE_BYTES + 1
            })
        );
        // Exactly the limit is read (and here fails as JSON, not as too long).
        let at_limit = vec![b' '; MAX_LINE_BYTES];
        assert_eq!(parse_line(&at_limit), Err(ParseError::Empty));
        assert_eq!(
            parse_line(b"{\"src\":\"\xff\"}"),
            Err(ParseError::NotUtf8 { valid_up_to: 8 })
        );
    }

    #[test]
    fn errors_quote_a_bounded_part_of_what_they_found() {
        let big = format!(
            r#"{{"src":"{}","dest":1,"body":{{"type":"x"}}}}"#,
            "é".repeat(500)
        );
        let e = parse(&big).unwrap_err().to_string();
        assert!(e.contains("`dest` must be a non-empty string"), "{e}");
        let e = parse(&format!("[\"{}\"]", "é".repeat(500)))
            .unwrap_err()
            .to_string();
        assert!(e.chars().count() < 200 && e.ends_with("…)"), "{e}");
    }

    #[test]
    fn deeply_nested_input_is_an_error_not_a_crash() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(matches!(parse(&deep), Err(ParseError::NotJson { .. })));
    }
}
