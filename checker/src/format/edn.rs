//! A reader for the EDN that Jepsen histories use: maps, vectors, lists, sets,
//! keywords, symbols, strings, characters, integers, floats, `nil`, booleans,
//! tagged values (`#jepsen.history.Op{...}` reads as the map, `#inst "…"` as the
//! string, `#object[…]` as the vector), `##Inf`/`##NaN`, `;` comments and `#_`
//! discards.
//!
//! Forms read straight into JSON values: keywords and symbols become strings
//! without the colon, lists and sets become arrays, map keys become strings,
//! integers of any size are exact ([`crate::values`]), and a number JSON cannot
//! hold (a ratio, a hexadecimal literal) its text.

use serde_json::{Map, Number, Value};

use crate::values;

/// A reading error: 1-based line, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdnError {
    pub line: usize,
    pub message: String,
}

/// Reads forms one after another from a text.
pub struct Reader<'a> {
    src: &'a [u8],
    pos: usize,
    line: usize,
    depth: usize,
}

/// Nesting deeper than this is not a history (and would exhaust the stack).
const MAX_DEPTH: usize = 200;

fn is_delim(b: u8) -> bool {
    b.is_ascii_whitespace()
        || matches!(
            b,
            b',' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'"' | b';'
        )
}

impl<'a> Reader<'a> {
    /// `first_line` numbers the text's first line (for reading part of a file).
    pub fn new(text: &'a str, first_line: usize) -> Reader<'a> {
        Reader {
            src: text.as_bytes(),
            pos: 0,
            line: first_line,
            depth: 0,
        }
    }

    /// The line the reader is on.
    pub fn line(&self) -> usize {
        self.line
    }

    fn err<T>(&self, message: impl Into<String>) -> Result<T, EdnError> {
        Err(EdnError {
            line: self.line,
            message: message.into(),
        })
    }

    fn skip_space(&mut self) {
        while let Some(&b) = self.src.get(self.pos) {
            match b {
                b'\n' => {
                    self.line += 1;
                    self.pos += 1;
                }
                b';' => {
                    while self.src.get(self.pos).is_some_and(|&b| b != b'\n') {
                        self.pos += 1;
                    }
                }
                b',' => self.pos += 1,
                b if b.is_ascii_whitespace() => self.pos += 1,
                _ => break,
            }
        }
    }

    /// Skip whitespace, comments and `#_` discarded forms.
    fn skip_discards(&mut self) -> Result<(), EdnError> {
        loop {
            self.skip_space();
            if !self.src[self.pos..].starts_with(b"#_") {
                return Ok(());
            }
            self.pos += 2;
            self.form()?;
        }
    }

    /// The next form, or `None` at the end of the text.
    pub fn next_form(&mut self) -> Result<Option<Value>, EdnError> {
        self.skip_discards()?;
        if self.pos >= self.src.len() {
            return Ok(None);
        }
        self.form().map(Some)
    }

    fn form(&mut self) -> Result<Value, EdnError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.err(format!("expected at most {MAX_DEPTH} levels of nesting"));
        }
        let v = self.form_inner();
        self.depth -= 1;
        v
    }

    fn form_inner(&mut self) -> Result<Value, EdnError> {
        self.skip_discards()?;
        let Some(&b) = self.src.get(self.pos) else {
            return self.err("expected a value, found the end of the text");
        };
        match b {
            b'{' => {
                self.pos += 1;
                let items = self.seq(b'}')?;
                if items.len() % 2 != 0 {
                    return self.err("expected a map with an even number of forms");
                }
                let mut m = Map::new();
                let mut it = items.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    let k = match k {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    m.insert(k, v);
                }
                Ok(Value::Object(m))
            }
            b'[' | b'(' => {
                self.pos += 1;
                Ok(Value::Array(self.seq(if b == b'[' {
                    b']'
                } else {
                    b')'
                })?))
            }
            b'"' => self.string(),
            b'#' => {
                self.pos += 1;
                match self.src.get(self.pos) {
                    Some(b'{') => {
                        self.pos += 1;
                        Ok(Value::Array(self.seq(b'}')?))
                    }
                    // ##Inf, ##-Inf, ##NaN: no JSON number; kept as text.
                    Some(b'#') => Ok(Value::String(self.token().to_string())),
                    _ => {
                        self.token(); // the tag
                        self.form()
                    }
                }
            }
            b')' | b']' | b'}' => self.err(format!("unexpected '{}'", b as char)),
            b'\\' => {
                self.pos += 1;
                let t = self.token();
                Ok(Value::String(t.to_string()))
            }
            _ => self.atom(),
        }
    }

    fn seq(&mut self, close: u8) -> Result<Vec<Value>, EdnError> {
        let start = self.line;
        let mut items = Vec::new();
        loop {
            self.skip_discards()?;
            match self.src.get(self.pos) {
                None => {
                    return Err(EdnError {
                        line: start,
                        message: format!("expected '{}' to close what opens here", close as char),
                    });
                }
                Some(&b) if b == close => {
                    self.pos += 1;
                    return Ok(items);
                }
                Some(_) => items.push(self.form()?),
            }
        }
    }

    fn string(&mut self) -> Result<Value, EdnError> {
        let start = self.line;
        self.pos += 1;
        let mut out = Vec::new();
        while let Some(&b) = self.src.get(self.pos) {
            self.pos += 1;
            match b {
                b'"' => {
                    return String::from_utf8(out)
                        .map(Value::String)
                        .map_err(|_| EdnError {
                            line: start,
                            message: "string is not UTF-8".into(),
                        });
                }
                b'\\' => {
                    let Some(&e) = self.src.get(self.pos) else {
                        break;
                    };
                    self.pos += 1;
                    out.push(match e {
                        b'n' => b'\n',
                        b't' => b'\t',
                        b'r' => b'\r',
                        other => other,
                    });
                }
                b'\n' => {
                    self.line += 1;
                    out.push(b);
                }
                _ => out.push(b),
            }
        }
        Err(EdnError {
            line: start,
            message: "expected '\"' to close the string opened here".into(),
        })
    }

    fn token(&mut self) -> &'a str {
        let start = self.pos;
        while self.src.get(self.pos).is_some_and(|&b| !is_delim(b)) {
            self.pos += 1;
        }
        // Tokens end at ASCII delimiters, so they are valid UTF-8 slices.
        std::str::from_utf8(&self.src[start..self.pos]).unwrap_or("")
    }

    fn atom(&mut self) -> Result<Value, EdnError> {
        let t = self.token();
        if t.is_empty() {
            return self.err(format!(
                "unexpected character {:?}",
                self.src[self.pos] as char
            ));
        }
        Ok(match t {
            "nil" => Value::Null,
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ if t.starts_with(':') => Value::String(t[1..].to_string()),
            _ if t.starts_with(|c: char| c.is_ascii_digit())
                || (t.len() > 1
                    && t.starts_with(['-', '+'])
                    && t.as_bytes()[1].is_ascii_digit()) =>
            {
                let digits = t.trim_end_matches(['N', 'M']);
                if let Some(i) = values::integer(digits) {
                    // Integers of any size, exactly (`…N` is a BigInt).
                    i
                } else if let Some(n) = digits.parse::<f64>().ok().and_then(Number::from_f64) {
                    Value::Number(n)
                } else {
                    // A ratio (1/3), a radix or hexadecimal literal (0x1f): EDN
                    // numbers JSON cannot hold, and histories only carry them in
                    // fields the checkers do not read (object ids, exceptions).
                    Value::String(t.to_string())
                }
            }
            _ => Value::String(t.to_string()),
        })
    }
}

/// Read every form of a text, each with the line it starts on.
pub fn read_all(text: &str) -> Result<Vec<(usize, Value)>, EdnError> {
    let mut r = Reader::new(text, 1);
    let mut forms = Vec::new();
    loop {
        r.skip_discards()?;
        let line = r.line();
        match r.next_form()? {
            Some(v) => forms.push((line, v)),
            None => return Ok(forms),
        }
    }
}

/// Read a history's operations, each with the line it starts on: one form per
/// operation (a map per line, as Jepsen writes `history.edn`), or all of them in
/// one vector or list (as Knossos's test data, or a pretty-printed history), or
/// both in turn. A vector or list whose first element is neither a map, a tagged
/// form nor another collection is an operation itself (Knossos's
/// `[process type f value]` tuples).
pub fn read_ops(text: &str) -> Result<Vec<(usize, Value)>, EdnError> {
    let mut r = Reader::new(text, 1);
    let mut ops = Vec::new();
    loop {
        r.skip_discards()?;
        let line = r.line();
        let Some(&b) = r.src.get(r.pos) else {
            return Ok(ops);
        };
        if matches!(b, b'[' | b'(') && r.holds_ops()? {
            let close = if b == b'[' { b']' } else { b')' };
            r.pos += 1;
            loop {
                r.skip_discards()?;
                let item_line = r.line();
                match r.src.get(r.pos) {
                    None => {
                        return Err(EdnError {
                            line,
                            message: format!(
                                "expected '{}' to close what opens here",
                                close as char
                            ),
                        });
                    }
                    Some(&c) if c == close => {
                        r.pos += 1;
                        break;
                    }
                    Some(_) => ops.push((item_line, r.form()?)),
                }
            }
        } else if let Some(v) = r.next_form()? {
            ops.push((line, v));
        }
    }
}

impl Reader<'_> {
    /// At a `[` or `(`: does the collection hold operations (its first element a
    /// map, a tagged form or a collection), rather than being one?
    fn holds_ops(&mut self) -> Result<bool, EdnError> {
        let (pos, line) = (self.pos, self.line);
        self.pos += 1;
        self.skip_discards()?;
        let first = self.src.get(self.pos).copied();
        self.pos = pos;
        self.line = line;
        Ok(matches!(first, Some(b'{' | b'[' | b'(' | b'#') | None)
            || matches!(first, Some(b']' | b')')))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_jepsen_ops() {
        let forms = read_all(
            "{:type :invoke, :f :cas, :value [1 -2], :process 0, :time 12}\n\
             ; a comment\n\
             #jepsen.history.Op{:process :nemesis, :value nil, :error \"a \\\"b\\\"\", :x #{1} #_ :gone :y 1.5 #_ 2}",
        )
        .unwrap();
        assert_eq!(forms.len(), 2);
        assert_eq!(
            forms[0].1,
            json!({"type": "invoke", "f": "cas", "value": [1, -2], "process": 0, "time": 12})
        );
        assert_eq!(forms[1].0, 3);
        assert_eq!(
            forms[1].1,
            json!({"process": "nemesis", "value": null, "error": "a \"b\"", "x": [1], "y": 1.5})
        );
    }

    #[test]
    fn errors_name_the_line() {
        let e = read_all("{:a 1}\n{:b [1 2}\n").unwrap_err();
        assert_eq!(e.line, 2, "{e:?}");
        let e = read_all("{:a 1}\n\n{:b 1").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("'}'"), "{e:?}");
        for deep in [
            "[".repeat(100_000),
            "#a ".repeat(100_000),
            "#_ ".repeat(100_000),
        ] {
            let e = read_all(&deep).unwrap_err();
            assert!(e.message.contains("nesting"), "{e:?}");
        }
        let e = read_all("{:a \"x}").unwrap_err();
        assert!(e.message.contains("string"), "{e:?}");
    }
}
