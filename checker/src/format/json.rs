//! A JSON reader for history lines that keeps numbers exactly and reads one field
//! at a time: the event's fields without building a value for the whole line, a
//! queue operation's records straight into offsets and interned values, and any
//! other value into a JSON value whose integers of any size are exact
//! ([`crate::values`]).
//!
//! It reads what serde_json reads (RFC 8259), with the same limits: nesting at
//! most 128 deep, strings valid UTF-8 without raw control characters, numbers
//! finite.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::values;

/// Nesting deeper than this is refused (serde_json's limit).
const MAX_DEPTH: usize = 128;

/// A number as written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num<'a> {
    /// An integer that fits `i64` (negative ones always do).
    Int(i64),
    /// A non-negative integer above `i64::MAX` that fits `u64`.
    UInt(u64),
    Float(f64),
    /// An integer beyond 64 bits: its text.
    Big(&'a str),
}

impl Num<'_> {
    /// The number as `u64`, if it is a non-negative integer that fits.
    pub(crate) fn as_u64(self) -> Option<u64> {
        match self {
            Num::Int(i) => u64::try_from(i).ok(),
            Num::UInt(u) => Some(u),
            _ => None,
        }
    }

    pub(crate) fn to_value(self) -> Value {
        match self {
            Num::Int(i) => Value::Number(i.into()),
            Num::UInt(u) => Value::Number(u.into()),
            // Only finite floats are read.
            Num::Float(f) => values::float(f).unwrap_or(Value::Null),
            Num::Big(t) => values::big_integer(t),
        }
    }
}

/// Reads JSON from a text, one token or value at a time.
pub(crate) struct Json<'a> {
    src: &'a [u8],
    pos: usize,
    depth: usize,
}

type R<T> = Result<T, String>;

impl<'a> Json<'a> {
    pub(crate) fn new(text: &'a str) -> Json<'a> {
        Json {
            src: text.as_bytes(),
            pos: 0,
            depth: 0,
        }
    }

    fn err<T>(&self, what: &str) -> R<T> {
        let found = match self.src.get(self.pos) {
            None => "the end of the line".to_string(),
            Some(_) => {
                let rest = String::from_utf8_lossy(&self.src[self.pos..]);
                let shown: String = rest.chars().take(12).collect();
                format!("{shown:?}")
            }
        };
        Err(format!(
            "expected {what} at column {}, found {found}",
            self.pos + 1
        ))
    }

    fn ws(&mut self) {
        while self
            .src
            .get(self.pos)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.pos += 1;
        }
    }

    /// The next byte that is not whitespace, not consumed.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.src.get(self.pos).copied()
    }

    fn eat(&mut self, b: u8, what: &str) -> R<()> {
        if self.peek() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            self.err(what)
        }
    }

    /// Only whitespace is left.
    pub(crate) fn end(&mut self) -> R<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => self.err("the end of the line"),
        }
    }

    /// `null`, consumed if it is next.
    pub(crate) fn null(&mut self) -> bool {
        if self.peek() == Some(b'n') && self.src[self.pos..].starts_with(b"null") {
            self.pos += 4;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &[u8]) -> R<()> {
        if self.src[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            self.err("a JSON value")
        }
    }

    /// The fields of an object, each given to `field` with its key; `field` must
    /// read (or [`skip`](Self::skip)) the field's value.
    pub(crate) fn object(
        &mut self,
        mut field: impl FnMut(&mut Self, Cow<'a, str>) -> R<()>,
    ) -> R<()> {
        self.eat(b'{', "'{'")?;
        self.nest()?;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            if self.peek() != Some(b'"') {
                return self.err("a field name");
            }
            let key = self.string()?;
            self.eat(b':', "':'")?;
            field(self, key)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return self.err("',' or '}'"),
            }
        }
    }

    /// The items of an array, each read by `item`.
    pub(crate) fn array(&mut self, mut item: impl FnMut(&mut Self) -> R<()>) -> R<()> {
        self.eat(b'[', "'['")?;
        self.nest()?;
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            item(self)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return self.err("',' or ']'"),
            }
        }
    }

    fn nest(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.err(&format!("at most {MAX_DEPTH} levels of nesting"));
        }
        Ok(())
    }

    /// A string, its escapes decoded.
    pub(crate) fn string(&mut self) -> R<Cow<'a, str>> {
        self.eat(b'"', "a string")?;
        let start = self.pos;
        loop {
            match self.src.get(self.pos) {
                None => return self.err("'\"' to close the string"),
                Some(b'"') => {
                    let s = &self.src[start..self.pos];
                    self.pos += 1;
                    return Ok(Cow::Borrowed(self.utf8(s)?));
                }
                Some(b'\\') => break,
                Some(&b) if b < 0x20 => return self.err("no control character in a string"),
                Some(_) => self.pos += 1,
            }
        }
        let mut out = self.utf8(&self.src[start..self.pos])?.to_string();
        loop {
            let Some(&b) = self.src.get(self.pos) else {
                return self.err("'\"' to close the string");
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    return Ok(Cow::Owned(out));
                }
                b'\\' => {
                    self.pos += 1;
                    let c = match self.src.get(self.pos) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.pos += 1;
                            let c = self.unicode_escape()?;
                            out.push(c);
                            continue;
                        }
                        _ => {
                            return self
                                .err("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
                        }
                    };
                    self.pos += 1;
                    out.push(c);
                }
                b if b < 0x20 => return self.err("no control character in a string"),
                _ => {
                    let run = self.pos;
                    while self
                        .src
                        .get(self.pos)
                        .is_some_and(|&b| b != b'"' && b != b'\\' && b >= 0x20)
                    {
                        self.pos += 1;
                    }
                    out.push_str(self.utf8(&self.src[run..self.pos])?);
                }
            }
        }
    }

    fn utf8(&self, bytes: &'a [u8]) -> R<&'a str> {
        std::str::from_utf8(bytes).map_err(|_| "a string is not valid UTF-8".to_string())
    }

    fn hex4(&mut self) -> R<u32> {
        let digits = self.src.get(self.pos..self.pos + 4);
        let n = digits
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| u32::from_str_radix(d, 16).ok());
        match n {
            Some(n) => {
                self.pos += 4;
                Ok(n)
            }
            None => self.err("four hexadecimal digits after \\u"),
        }
    }

    fn unicode_escape(&mut self) -> R<char> {
        let hi = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&hi) {
            if !self.src[self.pos..].starts_with(b"\\u") {
                return self.err("the low surrogate of a \\u surrogate pair");
            }
            self.pos += 2;
            let lo = self.hex4()?;
            if !(0xDC00..0xE000).contains(&lo) {
                return self.err("a low surrogate (\\uDC00-\\uDFFF)");
            }
            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
        } else {
            hi
        };
        match char::from_u32(code) {
            Some(c) => Ok(c),
            None => self.err("a character, not a lone surrogate"),
        }
    }

    /// A number, exactly as written.
    pub(crate) fn number(&mut self) -> R<Num<'a>> {
        self.ws();
        let start = self.pos;
        let digits = |s: &mut Self| {
            let from = s.pos;
            while s.src.get(s.pos).is_some_and(u8::is_ascii_digit) {
                s.pos += 1;
            }
            s.pos - from
        };
        if self.src.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        let n = digits(self);
        if n == 0 || (n > 1 && self.src[int_start] == b'0') {
            self.pos = start;
            return self.err("a number");
        }
        let mut float = false;
        if self.src.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            float = true;
            if digits(self) == 0 {
                return self.err("digits after the decimal point");
            }
        }
        if matches!(self.src.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            float = true;
            if matches!(self.src.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return self.err("digits of the exponent");
            }
        }
        // Only ASCII was consumed.
        let text = std::str::from_utf8(&self.src[start..self.pos]).unwrap_or("0");
        if !float {
            if let Ok(i) = text.parse::<i64>() {
                // serde_json reads -0 as the float -0.0.
                return Ok(if i == 0 && text.starts_with('-') {
                    Num::Float(-0.0)
                } else {
                    Num::Int(i)
                });
            }
            if let Ok(u) = text.parse::<u64>() {
                return Ok(Num::UInt(u));
            }
            return Ok(Num::Big(text));
        }
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Num::Float(f)),
            _ => {
                self.pos = start;
                self.err("a number a 64-bit float can hold")
            }
        }
    }

    /// Any value, its integers exact.
    pub(crate) fn value(&mut self) -> R<Value> {
        Ok(match self.peek() {
            Some(b'{') => {
                let mut m = Map::new();
                self.object(|j, k| {
                    let v = j.value()?;
                    m.insert(k.into_owned(), v);
                    Ok(())
                })?;
                Value::Object(m)
            }
            Some(b'[') => {
                let mut items = Vec::new();
                self.array(|j| {
                    items.push(j.value()?);
                    Ok(())
                })?;
                Value::Array(items)
            }
            Some(b'"') => Value::String(self.string()?.into_owned()),
            Some(b't') => {
                self.literal(b"true")?;
                Value::Bool(true)
            }
            Some(b'f') => {
                self.literal(b"false")?;
                Value::Bool(false)
            }
            Some(b'n') => {
                self.literal(b"null")?;
                Value::Null
            }
            _ => self.number()?.to_value(),
        })
    }

    /// Read past a value, checking it is JSON.
    pub(crate) fn skip(&mut self) -> R<()> {
        match self.peek() {
            Some(b'{') => self.object(|j, _| j.skip()),
            Some(b'[') => self.array(Self::skip),
            Some(b'"') => self.string().map(drop),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            _ => self.number().map(drop),
        }
    }

    /// Where the reader is (a byte offset).
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// The text read since byte offset `start`.
    pub(crate) fn since(&self, start: usize) -> &'a str {
        // Readers stop between tokens, on UTF-8 boundaries.
        std::str::from_utf8(&self.src[start..self.pos]).unwrap_or("")
    }
}

/// A whole text as one JSON value.
pub(crate) fn parse_value(text: &str) -> R<Value> {
    let mut j = Json::new(text);
    let v = j.value()?;
    j.end()?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_what_serde_json_reads() {
        for text in [
            r#"{"a":[1,-2,3.5,1e3,-0,true,false,null,"x\"\u00e9\ud83d\ude00\n"],"b":{}}"#,
            "[]",
            " 18446744073709551615 ",
            "-9223372036854775808",
            r#""\/""#,
        ] {
            let ours = parse_value(text).unwrap();
            let theirs: Value = serde_json::from_str(text).unwrap();
            assert_eq!(ours, theirs, "{text}");
        }
        for bad in [
            "01",
            "1.",
            "-",
            "[1,]",
            "{\"a\" 1}",
            "\"a",
            "\"\u{1}\"",
            "1e999",
            "[1] x",
            "tru",
            r#""\ud800""#,
        ] {
            assert!(parse_value(bad).is_err(), "{bad}");
            assert!(serde_json::from_str::<Value>(bad).is_err(), "{bad}");
        }
        assert!(
            parse_value(&"[".repeat(200))
                .unwrap_err()
                .contains("nesting")
        );
    }

    #[test]
    fn keeps_large_integers_exactly() {
        let v = parse_value("[123456789012345678901234567890,-123456789012345678901234567890]")
            .unwrap();
        assert_eq!(
            values::canonical(&v),
            "[123456789012345678901234567890,-123456789012345678901234567890]"
        );
        assert_ne!(v[0], parse_value("123456789012345678901234567891").unwrap());
        assert_eq!(
            v[1],
            parse_value("-123456789012345678901234567890").unwrap()
        );
        assert_eq!(parse_value("12").unwrap(), json!(12));
    }
}
