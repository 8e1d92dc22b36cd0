//! One line of `history.jsonl` (docs/history.md) read field by field: the event's
//! fields, and its value either as a JSON value (exact: [`crate::values`]) or left
//! as its text for a reader that wants less than a whole value (the queue
//! analysis reads a poll's records straight into offsets and interned values).

use std::borrow::Cow;

use super::json::{Json, Num};
use crate::history::{Event, EventType, Process};

const EXPECTED: &str =
    "expected an event {\"index\",\"time\",\"process\",\"type\",\"f\",\"value\"}";

/// An event's fields, its value still text.
#[derive(Debug, Clone)]
pub(crate) struct Head<'a> {
    pub(crate) index: u64,
    pub(crate) time: u64,
    pub(crate) process: Process,
    pub(crate) kind: EventType,
    pub(crate) f: Cow<'a, str>,
    /// The value's JSON text (`None`: no `value` field, which reads as `null`).
    pub(crate) value: Option<&'a str>,
    pub(crate) error: Option<String>,
}

impl Head<'_> {
    /// The whole event, its value read.
    pub(crate) fn into_event(self) -> Result<Event, String> {
        let value = match self.value {
            Some(text) => {
                super::json::parse_value(text).map_err(|e| format!("{EXPECTED}: value: {e}"))?
            }
            None => serde_json::Value::Null,
        };
        Ok(Event {
            index: self.index,
            time: self.time,
            process: self.process,
            kind: self.kind,
            f: self.f.into_owned(),
            value,
            error: self.error,
        })
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

/// Read a line's event fields; unknown fields are skipped, a missing `value` is
/// `null`, a `null` `error` none.
pub(crate) fn head(line: &str) -> Result<Head<'_>, String> {
    let mut index = None;
    let mut time = None;
    let mut process = None;
    let mut kind = None;
    let mut f = None;
    let mut value = None;
    let mut error = None;
    let mut j = Json::new(line);
    let whole = j.object(|j, key| {
        let u64_field = |j: &mut Json, name: &str| -> Result<u64, String> {
            j.number()
                .ok()
                .and_then(Num::as_u64)
                .ok_or_else(|| format!("{name}: expected a non-negative integer"))
        };
        match key.as_ref() {
            "index" => index = Some(u64_field(j, "index")?),
            "time" => time = Some(u64_field(j, "time")?),
            "process" => {
                let found = j.peek();
                process = Some(if found == Some(b'"') {
                    let s = j.string()?;
                    if s != "nemesis" {
                        return Err(format!(
                            "process: expected a non-negative client number or \"nemesis\", found {s:?}"
                        ));
                    }
                    Process::Nemesis
                } else {
                    Process::Client(u64_field(j, "process").map_err(|_| {
                        "process: expected a non-negative client number or \"nemesis\"".to_string()
                    })?)
                });
            }
            "type" => {
                let s = j
                    .string()
                    .map_err(|e| format!("type: {e}"))?;
                kind = Some(event_type(&s).ok_or_else(|| {
                    format!("type: expected \"invoke\", \"ok\", \"fail\" or \"info\", found {s:?}")
                })?);
            }
            "f" => f = Some(j.string().map_err(|e| format!("f: {e}"))?),
            "value" => {
                j.peek();
                let start = j.pos();
                j.skip()?;
                value = Some(&line[start..j.pos()]);
            }
            "error" => {
                error = if j.null() {
                    None
                } else {
                    Some(j.string().map_err(|e| format!("error: {e}"))?.into_owned())
                };
            }
            _ => j.skip()?,
        }
        Ok(())
    });
    let done = whole.and_then(|()| j.end());
    done.map_err(|e| format!("{EXPECTED}: {e}"))?;
    let missing = |name: &str| format!("{EXPECTED}: missing field `{name}`");
    Ok(Head {
        index: index.ok_or_else(|| missing("index"))?,
        time: time.ok_or_else(|| missing("time"))?,
        process: process.ok_or_else(|| missing("process"))?,
        kind: kind.ok_or_else(|| missing("type"))?,
        f: f.ok_or_else(|| missing("f"))?,
        value: value.filter(|v| *v != "null"),
        error,
    })
}

/// A line as a whole event.
pub(crate) fn event(line: &str) -> Result<Event, String> {
    head(line)?.into_event()
}

#[cfg(test)]
mod tests {
    use super::super::event_line;
    use crate::history::{Event, EventType, Process};
    use serde_json::json;

    #[test]
    fn event_round_trips_as_one_line() {
        let mut e = Event {
            index: 12,
            time: 120,
            process: Process::Client(3),
            kind: EventType::Invoke,
            f: "send".into(),
            value: json!({"partition": 0, "value": 7}),
            error: None,
        };
        let line = e.to_json_line();
        assert_eq!(
            line,
            r#"{"index":12,"time":120,"process":3,"type":"invoke","f":"send","value":{"partition":0,"value":7}}"#
        );
        assert_eq!(event_line(&line).unwrap(), e);
        e.process = Process::Nemesis;
        e.kind = EventType::Info;
        e.error = Some("timeout".into());
        let line = e.to_json_line();
        assert!(line.contains(r#""process":"nemesis""#) && line.contains(r#""error":"timeout""#));
        assert_eq!(event_line(&line).unwrap(), e);
    }

    #[test]
    fn unknown_fields_are_ignored_and_bad_lines_say_what_was_expected() {
        let e = event_line(
            r#"{"index":1,"time":2,"process":0,"type":"ok","f":"read","value":null,"node":"n1"}"#,
        )
        .unwrap();
        assert_eq!(e.kind, EventType::Ok);
        let err =
            event_line(r#"{"index":1,"time":2,"process":"x","type":"ok","f":"read"}"#).unwrap_err();
        assert!(err.contains("nemesis"), "{err}");
        let err =
            event_line(r#"{"index":1,"time":2,"process":1,"type":"done","f":"r"}"#).unwrap_err();
        assert!(err.contains("done"), "{err}");
    }
}
