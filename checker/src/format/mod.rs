//! History file formats, all read into [`Event`]s: our `history.jsonl`, Jepsen's
//! `history.edn`, Jepsen's text logs (Porcupine's etcd histories) and Porcupine's
//! kv logs (EDN maps with a `:key`), with detection from the content.
//!
//! Parsers take the text, never a path; errors give the 1-based line and what was
//! expected there, for the caller to prefix with the file name.

mod edn;
pub(crate) mod json;
pub(crate) mod jsonl;

use std::fmt;

use serde_json::{Value, json};

use crate::history::{Disorder, Event, EventType, OrderCheck, Process};

/// A history file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `history.jsonl`: one JSON event per line (docs/history.md).
    Jsonl,
    /// Jepsen `history.edn`: one EDN map per op, or one vector of them.
    Edn,
    /// Jepsen's log lines: `INFO  jepsen.util - 2\t:invoke\t:cas\t[3 0]`.
    JepsenLog,
    /// Porcupine's kv logs: EDN maps with `:key`, ops get/put/append.
    PorcupineKv,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Edn => "edn",
            Format::JepsenLog => "jepsen-log",
            Format::PorcupineKv => "porcupine-kv",
        }
    }
}

/// A text that is not a history: where, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line (0: the text as a whole).
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for ParseError {}

/// A parsed history: its events, and the line each event came from.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub format: Format,
    pub events: Vec<Event>,
    /// `lines[i]` is the 1-based line of `events[i]`.
    pub lines: Vec<usize>,
    /// The events that break the history's order (`history::OrderCheck`), in
    /// order: the caller decides whether that is an error.
    pub disorders: Vec<Disorder>,
}

impl Parsed {
    /// The line of the event with this history index.
    pub fn line_of_index(&self, index: u64) -> Option<usize> {
        self.events
            .iter()
            .position(|e| e.index == index)
            .map(|p| self.lines[p])
    }
}

fn first_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with(';'))
        .take(20)
}

/// The text from its first character that is not whitespace, a comma or in a
/// `;` comment (EDN's blanks), with that character's 1-based line.
fn first_form(text: &str) -> Option<(usize, &str)> {
    let mut line = 1;
    let mut rest = text;
    loop {
        let c = rest.chars().next()?;
        if c == ';' {
            rest = rest.find('\n').map_or("", |i| &rest[i..]);
        } else if c == '\n' {
            line += 1;
            rest = &rest[1..];
        } else if c.is_whitespace() || c == ',' {
            rest = &rest[c.len_utf8()..];
        } else {
            return Some((line, rest));
        }
    }
}

/// A Jepsen log's op line: `jepsen.util - ` then the process and the type (an EDN
/// history names `jepsen.util$…` only in exception traces).
fn is_jepsen_log_line(line: &str) -> bool {
    line.find("jepsen.util - ").is_some_and(|at| {
        let mut fields = line[at + "jepsen.util - ".len()..].split_whitespace();
        fields.next().is_some()
            && fields
                .next()
                .is_some_and(|t| [":invoke", ":ok", ":fail", ":info"].contains(&t))
    })
}

/// Parse one line of `history.jsonl` (docs/history.md) into an event; unknown fields
/// are ignored, and a bad line says what was expected.
pub fn event_line(line: &str) -> Result<Event, String> {
    jsonl::event(line)
}

/// Tell the format from the content: Jepsen log lines anywhere in the first
/// lines; a JSON object first (`{"`) for history.jsonl; an EDN form first — a map
/// (`{:`), a vector or list of operations (`[`, `(`), a tagged record or a
/// discarded form (`#`) — for Jepsen EDN, or Porcupine's kv logs when the first
/// lines are kv operations with a `:key`.
pub fn detect(text: &str) -> Result<Format, ParseError> {
    let Some((line, form)) = first_form(text) else {
        return Err(ParseError {
            line: 0,
            message: "the history is empty".into(),
        });
    };
    if first_lines(text).any(is_jepsen_log_line) {
        return Ok(Format::JepsenLog);
    }
    let after_brace = form
        .strip_prefix('{')
        .map(|r| r.trim_start_matches(|c: char| c.is_whitespace() || c == ','));
    if after_brace.is_some_and(|r| r.starts_with('"') || r.is_empty()) {
        return Ok(Format::Jsonl);
    }
    if form.starts_with(['{', '[', '(', '#']) {
        let kv = first_lines(text).any(|l| {
            l.contains(":key") && [":get", ":put", ":append"].iter().any(|f| l.contains(f))
        });
        return Ok(if kv { Format::PorcupineKv } else { Format::Edn });
    }
    Err(ParseError {
        line,
        message: "cannot tell the format: expected JSON lines ({\"index\":..}), Jepsen EDN \
                  ({:type :invoke ..} maps, one per line or in a vector or list) or Jepsen log \
                  lines (INFO jepsen.util - ..); name it with --format"
            .into(),
    })
}

/// Parse a history in the given format.
pub fn parse(text: &str, format: Format) -> Result<Parsed, ParseError> {
    let (events, lines) = match format {
        Format::Jsonl => parse_jsonl(text)?,
        Format::Edn | Format::PorcupineKv => parse_edn(text)?,
        Format::JepsenLog => parse_jepsen_log(text)?,
    };
    let mut order = OrderCheck::default();
    let disorders = events
        .iter()
        .zip(&lines)
        .filter_map(|(e, &line)| {
            let message = order.event(e.index, e.time, e.process, e.kind)?;
            Some(Disorder { line, message })
        })
        .collect();
    Ok(Parsed {
        format,
        events,
        lines,
        disorders,
    })
}

/// A value given on the command line (a model's initial state): JSON, or one
/// EDN form (`0`, `{:x 0 :y 0}`, `#{1 2}`, `[:a :b]`), read as EDN forms are.
pub fn parse_value(text: &str) -> Result<Value, ParseError> {
    if let Ok(v) = json::parse_value(text.trim()) {
        return Ok(v);
    }
    match edn::read_all(text).map_err(edn_err)?.as_slice() {
        [(_, v)] => Ok(v.clone()),
        [] => Err(ParseError {
            line: 0,
            message: "expected a value (JSON or EDN), found nothing".into(),
        }),
        _ => Err(ParseError {
            line: 0,
            message: format!("expected one value (JSON or EDN), found several in {text:?}"),
        }),
    }
}

/// A text as one JSON value, its integers exact ([`crate::values`]).
pub fn read_json(text: &str) -> Result<Value, String> {
    json::parse_value(text)
}

type EventsAndLines = (Vec<Event>, Vec<usize>);

/// One event per line. A last line without its newline that does not parse is the
/// torn tail of a writer that crashed mid-line: it is dropped.
fn parse_jsonl(text: &str) -> Result<EventsAndLines, ParseError> {
    let (mut events, mut lines) = (Vec::new(), Vec::new());
    let total = text.lines().count();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match jsonl::event(line) {
            Ok(e) => {
                events.push(e);
                lines.push(i + 1);
            }
            Err(_) if i + 1 == total && !text.ends_with('\n') => break,
            Err(message) => {
                return Err(ParseError {
                    line: i + 1,
                    message,
                });
            }
        }
    }
    Ok((events, lines))
}

fn edn_err(e: edn::EdnError) -> ParseError {
    ParseError {
        line: e.line,
        message: e.message,
    }
}

fn parse_edn(text: &str) -> Result<EventsAndLines, ParseError> {
    let forms = edn::read_ops(text).map_err(edn_err)?;
    let (mut events, mut lines) = (Vec::new(), Vec::new());
    for (pos, (line, form)) in forms.into_iter().enumerate() {
        let e = edn_event(pos as u64, form).map_err(|message| ParseError { line, message })?;
        events.push(e);
        lines.push(line);
    }
    unwrap_independent(&mut events);
    Ok((events, lines))
}

/// A `jepsen.independent` tuple `[key value]`: the key a scalar (a transaction's
/// first micro-op is not), and a cas's value itself a pair.
fn tuple<'a>(f: &str, v: &'a Value) -> Option<(&'a Value, &'a Value)> {
    match v.as_array().map(Vec::as_slice) {
        Some([k, v])
            if !(k.is_array() || k.is_object())
                && (f != "cas" || v.as_array().is_some_and(|a| a.len() == 2)) =>
        {
            Some((k, v))
        }
        _ => None,
    }
}

/// Jepsen's `independent` histories run one register per key, each op's value a
/// tuple `[key value]` (a cas `[key [expected new]]`). When every client op is
/// such a tuple (a completion may carry none), they become keyed ops
/// `{"key":k,"value":v}`, so each key is checked on its own.
fn unwrap_independent(events: &mut [Event]) {
    let client = |e: &&mut Event| e.process != Process::Nemesis;
    let mut invokes = 0;
    for e in events.iter_mut().filter(client) {
        let is_tuple = tuple(&e.f, &e.value).is_some();
        match e.kind {
            EventType::Invoke if is_tuple => invokes += 1,
            EventType::Invoke => return,
            _ if is_tuple || e.value.is_null() => {}
            _ => return,
        }
    }
    if invokes == 0 {
        return;
    }
    for e in events.iter_mut().filter(client) {
        if let Some((k, v)) = tuple(&e.f, &e.value) {
            e.value = json!({"key": k, "value": v});
        }
    }
}

fn event_type(s: &str) -> Option<EventType> {
    Some(match s {
        "invoke" => EventType::Invoke,
        "ok" => EventType::Ok,
        "fail" => EventType::Fail,
        "info" => EventType::Info,
        _ => return None,
    })
}

fn process(v: &Value) -> Option<Process> {
    match v {
        Value::String(s) if s == "nemesis" => Some(Process::Nemesis),
        v => v.as_u64().map(Process::Client),
    }
}

const EDN_OP: &str = "expected an op map {:type :invoke|:ok|:fail|:info, :process p, :f f, :value v} \
     (or a [process type f value] tuple)";

/// An operation: a map (or a tagged `#jepsen.history.Op{…}` record, read as its
/// map), or a Knossos `[process type f value]` tuple.
fn edn_event(pos: u64, form: Value) -> Result<Event, String> {
    let form = match form {
        Value::Array(t) if t.len() == 4 && !t[0].is_object() => {
            let [process, kind, f, value] = <[Value; 4]>::try_from(t).expect("four elements");
            json!({"process": process, "type": kind, "f": f, "value": value})
        }
        form => form,
    };
    let Value::Object(mut m) = form else {
        return Err(format!("{EDN_OP}, found {form}"));
    };
    let kind = m.get("type").and_then(Value::as_str).and_then(event_type);
    let proc = m.get("process").and_then(process);
    let f = m
        .get("f")
        .map(|f| f.as_str().map_or_else(|| f.to_string(), str::to_string));
    let (Some(kind), Some(process), Some(f)) = (kind, proc, f) else {
        return Err(format!("{EDN_OP}, found {}", Value::Object(m)));
    };
    let value = m.remove("value").unwrap_or(Value::Null);
    let value = match m.remove("key") {
        Some(key) => json!({"key": key, "value": value}),
        None => value,
    };
    Ok(Event {
        index: m.get("index").and_then(Value::as_u64).unwrap_or(pos),
        time: m.get("time").and_then(Value::as_u64).unwrap_or(pos),
        process,
        kind,
        f,
        value,
        error: m
            .get("error")
            .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_string)),
    })
}

/// Jepsen's `jepsen.util` op lines; other lines (log chatter) are skipped.
fn parse_jepsen_log(text: &str) -> Result<EventsAndLines, ParseError> {
    let (mut events, mut lines) = (Vec::new(), Vec::new());
    for (i, line) in text.lines().enumerate() {
        let Some(at) = line.find("jepsen.util - ") else {
            continue;
        };
        let rest = &line[at + "jepsen.util - ".len()..];
        let mut fields = rest.split_whitespace();
        let (Some(p), Some(t)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Some(kind) = t.strip_prefix(':').and_then(event_type) else {
            continue;
        };
        let err = |message: String| ParseError {
            line: i + 1,
            message,
        };
        let process = match p {
            ":nemesis" => Process::Nemesis,
            p => Process::Client(p.parse().map_err(|_| {
                err(format!(
                    "expected a process number or :nemesis, found {p:?}"
                ))
            })?),
        };
        let Some(f) = fields.next().and_then(|f| f.strip_prefix(':')) else {
            return Err(err(
                "expected the operation (:read, :write, :cas, ...) after the type".into(),
            ));
        };
        // The value is the rest of the line, an EDN form (or nothing).
        let after_f = rest
            .find(&format!(":{f}"))
            .map_or("", |k| &rest[k + 1 + f.len()..]);
        let mut reader = edn::Reader::new(after_f, i + 1);
        let value = reader.next_form().map_err(edn_err)?.unwrap_or(Value::Null);
        events.push(Event {
            index: events.len() as u64,
            time: events.len() as u64,
            process,
            kind,
            f: f.to_string(),
            value,
            error: None,
        });
        lines.push(i + 1);
    }
    if events.is_empty() {
        return Err(ParseError {
            line: 0,
            message: "no Jepsen op lines (INFO jepsen.util - p :type :f value)".into(),
        });
    }
    Ok((events, lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_each_format() {
        let jsonl = r#"{"index":0,"time":1,"process":0,"type":"invoke","f":"read","value":null}"#;
        assert_eq!(detect(jsonl), Ok(Format::Jsonl));
        assert_eq!(
            detect("{:type :invoke, :f :read, :value nil, :process 0}"),
            Ok(Format::Edn)
        );
        assert_eq!(
            detect("[{:type :invoke, :f :read, :process 0}]"),
            Ok(Format::Edn)
        );
        assert_eq!(
            detect("{:process 9, :type :invoke, :f :append, :key \"0\", :value \"x\"}"),
            Ok(Format::PorcupineKv)
        );
        assert_eq!(
            detect("INFO  jepsen.util - 0\t:invoke\t:read\tnil"),
            Ok(Format::JepsenLog)
        );
        assert!(detect("hello").is_err());
        assert!(detect("\n\n").is_err());
    }

    #[test]
    fn jepsen_log_lines() {
        let text = "INFO  jepsen.core - starting\n\
                    INFO  jepsen.util - 2\t:invoke\t:cas\t[3 0]\n\
                    INFO  jepsen.util - 4 :info :write :timed-out\n\
                    INFO  jepsen.util - 0\t:ok\t:read\tnil\n";
        let p = parse(text, Format::JepsenLog).unwrap();
        assert_eq!(p.lines, vec![2, 3, 4]);
        assert_eq!(p.events[0].value, json!([3, 0]));
        assert_eq!(
            (p.events[1].kind, p.events[1].value.clone()),
            (EventType::Info, json!("timed-out"))
        );
        assert_eq!(p.events[2].value, Value::Null);
        let e = parse(
            "INFO  jepsen.util - x\t:invoke\t:read\tnil\n",
            Format::JepsenLog,
        )
        .unwrap_err();
        assert_eq!(e.line, 1);
    }

    #[test]
    fn edn_and_kv_maps() {
        let p = parse("[{:type :invoke, :f :write, :value 3, :process 0, :index 7}\n {:type :ok, :f :write, :value 3, :process 0}]", Format::Edn).unwrap();
        assert_eq!(p.events[0].index, 7);
        assert_eq!(p.events[1].kind, EventType::Ok);
        let p = parse(
            "{:process 4, :type :ok, :f :get, :key \"5\", :value \"x\"}",
            Format::PorcupineKv,
        )
        .unwrap();
        assert_eq!(p.events[0].value, json!({"key": "5", "value": "x"}));
        let e = parse(
            "{:type :invoke}\n{:type :bogus, :f :read, :process 0}",
            Format::Edn,
        )
        .unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.message.contains("expected an op map"), "{e}");
    }

    #[test]
    fn jsonl_drops_only_a_torn_last_line() {
        let good = r#"{"index":0,"time":1,"process":0,"type":"invoke","f":"read","value":null}"#;
        let p = parse(&format!("{good}\n{{\"index\":1,\"ti"), Format::Jsonl).unwrap();
        assert_eq!(p.events.len(), 1);
        let e = parse(
            &format!("{good}\n{{\"index\":1,\"ti\n{good}\n"),
            Format::Jsonl,
        )
        .unwrap_err();
        assert_eq!(e.line, 2);
    }
}
