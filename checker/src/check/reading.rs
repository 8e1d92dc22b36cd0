//! A history file read for checking, from a reader rather than a text: our
//! history.jsonl line by line — never the whole file in memory — each line checked
//! for the history's order and, for the queue analysis, read straight into its
//! compact operations; the other formats (Jepsen's and Porcupine's, read as
//! whole texts) into events.

use std::io::BufRead;

use super::{CheckError, Model, check};
use crate::format::{self, Format, ParseError, Parsed, jsonl};
use crate::history::{Disorder, OrderCheck};
use crate::linear::Options;
use crate::queue::{
    QueueHistory, ReplicaLog,
    reading::{Seen, ValueIn},
};
use crate::verdict::Results;

/// A history read for checking.
#[derive(Debug)]
pub struct History {
    pub format: Format,
    /// How many events it holds.
    pub events: usize,
    /// The events that break the history's order, with their lines.
    pub disorders: Vec<Disorder>,
    body: Body,
}

#[derive(Debug)]
enum Body {
    Events(Parsed),
    Queue(Box<QueueHistory>),
}

/// Read a history in `format` from `input`: for the queue analysis
/// (`model` is [`Model::Queue`]) into its compact operations, else into events.
/// history.jsonl is read a line at a time; a last line without its newline that
/// does not parse is the torn tail of a writer that crashed, and is dropped.
pub fn read_history(
    mut input: impl BufRead,
    format: Format,
    model: Option<Model>,
) -> Result<History, ParseError> {
    if format != Format::Jsonl {
        let mut text = String::new();
        input.read_to_string(&mut text).map_err(|e| ParseError {
            line: 0,
            message: format!("cannot read the history: {e}"),
        })?;
        let parsed = format::parse(&text, format)?;
        return Ok(History {
            format,
            events: parsed.events.len(),
            disorders: parsed.disorders.clone(),
            body: Body::Events(parsed),
        });
    }
    let queue = model == Some(Model::Queue);
    let mut order = OrderCheck::default();
    let mut disorders = Vec::new();
    let mut h = QueueHistory::default();
    let (mut events, mut lines) = (Vec::new(), Vec::new());
    let mut count = 0;
    each_line(input, |n, line| {
        let head = jsonl::head(line)?;
        if let Some(message) = order.event(head.index, head.time, head.process, head.kind) {
            disorders.push(Disorder { line: n, message });
        }
        count += 1;
        if queue {
            h.event(Seen {
                line: Some(n),
                index: head.index,
                process: head.process,
                kind: head.kind,
                f: &head.f,
                value: ValueIn::Text(head.value),
                error: head.error.as_deref(),
            });
        } else {
            events.push(head.into_event()?);
            lines.push(n);
        }
        Ok(())
    })?;
    let body = if queue {
        h.finish();
        Body::Queue(Box::new(h))
    } else {
        Body::Events(Parsed {
            format,
            events,
            lines,
            disorders: disorders.clone(),
        })
    };
    Ok(History {
        format,
        events: count,
        disorders,
        body,
    })
}

/// Each non-blank line of a history.jsonl with its 1-based number; the torn last
/// line of a crashed writer (no newline, does not parse) is dropped.
fn each_line(
    mut input: impl BufRead,
    mut line: impl FnMut(usize, &str) -> Result<(), String>,
) -> Result<(), ParseError> {
    let mut buf = Vec::new();
    let mut n = 0;
    loop {
        buf.clear();
        let read = input.read_until(b'\n', &mut buf).map_err(|e| ParseError {
            line: n + 1,
            message: format!("cannot read the history: {e}"),
        })?;
        if read == 0 {
            return Ok(());
        }
        n += 1;
        let complete = buf.last() == Some(&b'\n');
        let mut bytes = &buf[..];
        bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let result = std::str::from_utf8(bytes)
            .map_err(|_| "the line is not valid UTF-8".to_string())
            .and_then(|text| {
                if text.trim().is_empty() {
                    Ok(())
                } else {
                    line(n, text)
                }
            });
        match result {
            Ok(()) => {}
            Err(_) if !complete => return Ok(()),
            Err(message) => return Err(ParseError { line: n, message }),
        }
    }
}

/// The operations' names in a history.jsonl, read quickly (values skipped): for
/// telling the model before reading the history for it.
pub fn operation_names(input: impl BufRead) -> Result<Vec<String>, ParseError> {
    let mut names: Vec<String> = Vec::new();
    each_line(input, |_, line| {
        let head = jsonl::head(line)?;
        if head.process != crate::history::Process::Nemesis && !names.iter().any(|f| *f == head.f) {
            names.push(head.f.into_owned());
        }
        Ok(())
    })?;
    Ok(names)
}

impl History {
    /// The events, if the history was read into events.
    pub fn parsed(&self) -> Option<&Parsed> {
        match &self.body {
            Body::Events(p) => Some(p),
            Body::Queue(_) => None,
        }
    }

    /// Check the history as [`check`] does, against `model`, which must be
    /// [`Model::Queue`] for a history read for the queue analysis (another is read
    /// into events). Errors carry the offending event's line.
    pub fn check(
        self,
        model: Model,
        replicas: &[ReplicaLog],
        options: &Options,
    ) -> Result<Results, CheckError> {
        match self.body {
            Body::Events(parsed) => check(self.format, &parsed.events, model, replicas, options)
                .map_err(|mut e| {
                    e.line = e.index.and_then(|i| parsed.line_of_index(i));
                    e
                }),
            Body::Queue(h) if model == Model::Queue => {
                let open = h.open_invocations();
                let r = h.check(replicas).map_err(|l| CheckError {
                    index: Some(l.index),
                    line: l.line,
                    message: l.error.to_string(),
                })?;
                Ok(super::results("queue", r, open))
            }
            Body::Queue(_) => Err(CheckError {
                index: None,
                line: None,
                message: format!(
                    "the history was read for the queue analysis, not for {}",
                    model.name()
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUEUE: &str = r#"{"index":0,"time":0,"process":0,"type":"invoke","f":"send","value":{"partition":0,"value":1}}
{"index":1,"time":1,"process":0,"type":"ok","f":"send","value":{"partition":0,"value":1,"offset":0}}
{"index":2,"time":2,"process":1,"type":"invoke","f":"poll","value":{"partition":0,"offset":0}}
{"index":3,"time":3,"process":1,"type":"ok","f":"poll","value":{"partition":0,"records":[[0,1],[0,"x"]],"high_watermark":1}}
{"index":4,"time":4,"process":2,"type":"invoke","f":"final-poll","value":{"partition":0,"offset":0}}
{"index":5,"time":5,"process":2,"type":"ok","f":"final-poll","value":{"partition":0,"records":[[0,2]],"high_watermark":1}}
"#;

    fn streamed(text: &str) -> Result<Results, CheckError> {
        read_history(text.as_bytes(), Format::Jsonl, Some(Model::Queue))
            .unwrap()
            .check(Model::Queue, &[], &Options::default())
    }

    /// `history` streamed as `watermark check` reads it (as `lines`), checked as
    /// its events in memory are, both judging it the same.
    fn judged_alike(history: &str, lines: &str) -> Results {
        let parsed = format::parse(history, Format::Jsonl).unwrap();
        let events = check(
            Format::Jsonl,
            &parsed.events,
            Model::Queue,
            &[],
            &Options::default(),
        )
        .unwrap();
        let r = streamed(lines).unwrap();
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            serde_json::to_string(&events).unwrap()
        );
        r
    }

    #[test]
    fn streaming_judges_as_the_events_in_memory_do() {
        let r = judged_alike(QUEUE, &QUEUE.replace('\n', "\r\n"));
        assert!(!r.checkers["queue"].anomalies.is_empty());
    }

    #[test]
    fn streaming_reads_a_completion_s_error_as_the_events_in_memory_do() {
        // A retry refused as out of sequence, its record in the log.
        let history = r#"{"index":0,"time":0,"process":0,"type":"invoke","f":"send","value":{"partition":0,"value":1}}
{"index":1,"time":1,"process":0,"type":"info","f":"send","value":{"partition":0,"value":1,"attempts":2,"producer":3},"error":"OUT_OF_ORDER_SEQUENCE_NUMBER: expected 1"}
{"index":2,"time":2,"process":2,"type":"invoke","f":"final-poll","value":{"partition":0,"offset":0}}
{"index":3,"time":3,"process":2,"type":"ok","f":"final-poll","value":{"partition":0,"records":[[0,1]],"high_watermark":1}}
"#;
        let r = judged_alike(history, history);
        let kinds: Vec<_> = r.checkers["queue"]
            .anomalies
            .iter()
            .map(|a| a.kind)
            .collect();
        assert_eq!(kinds, [crate::verdict::AnomalyKind::RefusedDuplicate]);
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_errors_name_their_line() {
        let torn = format!("{QUEUE}{{\"index\":6,\"ti");
        let h = read_history(torn.as_bytes(), Format::Jsonl, Some(Model::Queue)).unwrap();
        assert_eq!(h.events, 6);
        let bad = QUEUE.replace(r#""records":[[0,2]]"#, r#""records":7"#);
        let e = streamed(&bad).unwrap_err();
        assert_eq!((e.line, e.index), (Some(6), Some(5)), "{e:?}");
        assert!(e.message.contains("final-poll expects"), "{e:?}");
        let e = read_history(
            format!("{{\"index\":6,\"ti\n{QUEUE}").as_bytes(),
            Format::Jsonl,
            None,
        )
        .unwrap_err();
        assert_eq!(e.line, 1);
        let names = operation_names(QUEUE.as_bytes()).unwrap();
        assert_eq!(names, ["send", "poll", "final-poll"]);
    }
}
