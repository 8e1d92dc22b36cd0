//! `watermark export RUN --format edn`: a run's history as Jepsen's `history.edn`,
//! so Knossos, Elle or any Jepsen tooling can cross-check what watermark found.
//!
//! One op map per line, as Jepsen writes the file: `{:index 3, :time 83512345,
//! :type :ok, :process 3, :f :write, :value [k1 7]}` — `:type` and `:f` keywords,
//! `:process` the client's number or `:nemesis`, `:error` a string when there is
//! one. Register operations become `jepsen.independent` tuples (`[key value]`, a
//! cas `[key [expected new]]`), which Knossos checks key by key as a
//! cas-register; queue operations keep their maps (`{:partition 0, :value 7}`).
//! `watermark check` reads the file back to the same events, so export and check
//! give the run's verdict again — on the history alone: the replicas' final logs
//! (replica-divergence) are not part of a Jepsen history.

use std::fmt::Write as _;
use std::path::PathBuf;

use checker::format::Format;
use checker::history::{Event, Process};
use serde_json::Value;

use crate::exit::Exit;

/// A format `watermark export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Jepsen's history.edn.
    Edn,
}

/// Options of `watermark export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The run folder (e.g. results/latest), or a history.jsonl.
    pub run: PathBuf,
    /// The format to write.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Where to write it (`-`: stdout) [default: history.edn in the run folder].
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Run `watermark export`.
pub fn run(args: ExportArgs) -> Exit {
    match export(&args) {
        Ok(Some(path)) => {
            println!("{}", path.display());
            Exit::Valid
        }
        Ok(None) => Exit::Valid,
        Err((exit, message)) => {
            eprintln!("watermark export: {message}");
            exit
        }
    }
}

fn export(args: &ExportArgs) -> Result<Option<PathBuf>, (Exit, String)> {
    let usage = |m: String| (Exit::Usage, m);
    let (dir, history) = if args.run.is_dir() {
        (args.run.clone(), args.run.join("history.jsonl"))
    } else {
        let dir = args
            .run
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), PathBuf::from);
        (dir, args.run.clone())
    };
    let shown = history.display().to_string();
    let text = std::fs::read_to_string(&history).map_err(|e| {
        usage(format!(
            "cannot read {shown}: {e} (give a run folder, e.g. results/latest, or its history.jsonl)"
        ))
    })?;
    let parsed = checker::format::parse(&text, Format::Jsonl).map_err(|e| {
        usage(match e.line {
            0 => format!("{shown}: {}", e.message),
            line => format!("{shown}:{line}: {}", e.message),
        })
    })?;
    let edn = to_edn(&parsed.events);
    match args.output.as_deref() {
        Some(p) if p.as_os_str() == "-" => {
            use std::io::Write;
            let _ = std::io::stdout().lock().write_all(edn.as_bytes());
            Ok(None)
        }
        out => {
            let path = out.map_or_else(|| dir.join("history.edn"), PathBuf::from);
            crate::store::write_atomic(&path, edn.as_bytes()).map_err(|e| {
                (
                    Exit::HarnessFailed,
                    format!("cannot write {}: {e}", path.display()),
                )
            })?;
            Ok(Some(path))
        }
    }
}

/// The history as Jepsen's history.edn, one op map per line.
pub fn to_edn(events: &[Event]) -> String {
    let mut out = String::with_capacity(events.len() * 96);
    for e in events {
        let process = match e.process {
            Process::Client(p) => p.to_string(),
            Process::Nemesis => ":nemesis".to_string(),
        };
        let _ = write!(
            out,
            "{{:index {}, :time {}, :type :{}, :process {process}, :f {}, :value ",
            e.index,
            e.time,
            e.kind,
            keyword_or_string(&e.f)
        );
        match independent(e) {
            Some((key, value)) => {
                out.push('[');
                write_value(&mut out, key);
                out.push(' ');
                write_value(&mut out, value);
                out.push(']');
            }
            None => write_value(&mut out, &e.value),
        }
        if let Some(err) = &e.error {
            out.push_str(", :error ");
            write_string(&mut out, err);
        }
        out.push_str("}\n");
    }
    out
}

/// A register operation's `{"key":k,"value":v}` as a `jepsen.independent` tuple.
fn independent(e: &Event) -> Option<(&Value, &Value)> {
    if e.process == Process::Nemesis || !["read", "write", "cas"].contains(&e.f.as_str()) {
        return None;
    }
    let map = e.value.as_object()?;
    if map.len() != 2 {
        return None;
    }
    let key = map
        .get("key")
        .filter(|k| !(k.is_array() || k.is_object()))?;
    Some((key, map.get("value")?))
}

/// `:name` when `name` reads back as that keyword, else a string.
fn keyword_or_string(name: &str) -> String {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || "-_?!*+.".contains(c));
    if first_ok && rest_ok {
        format!(":{name}")
    } else {
        let mut s = String::new();
        write_string(&mut s, name);
        s
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A JSON value as EDN: nil, booleans, numbers, strings, vectors, and maps with
/// keyword keys (string keys where a keyword cannot spell them).
fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("nil"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&keyword_or_string(k));
                out.push(' ');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use checker::history::EventType;
    use serde_json::json;

    fn ev(index: u64, process: Process, kind: EventType, f: &str, value: Value) -> Event {
        Event {
            index,
            time: index * 1000,
            process,
            kind,
            f: f.to_string(),
            value,
            error: None,
        }
    }

    #[test]
    fn events_read_back_as_they_were_written() {
        let c = Process::Client;
        let mut info = ev(
            3,
            c(4),
            EventType::Info,
            "send",
            json!({"partition": 1, "value": 9}),
        );
        info.error = Some("timed out \"badly\"\n".to_string());
        let events = vec![
            ev(
                0,
                c(4),
                EventType::Invoke,
                "send",
                json!({"partition": 1, "value": 9}),
            ),
            ev(
                1,
                Process::Nemesis,
                EventType::Info,
                "partition",
                json!({"topology": "one-way", "grudge": {"1": [2, 3]}, "x": [true, null, 1.5, "s"]}),
            ),
            ev(
                2,
                c(2),
                EventType::Ok,
                "final-poll",
                json!({"partition": 0, "records": [[0, 7], [1, 8]], "high_watermark": 2}),
            ),
            info,
        ];
        let edn = to_edn(&events);
        assert!(edn.starts_with("{:index 0, :time 0, :type :invoke, :process 4, :f :send, :value {:partition 1, :value 9}}\n"), "{edn}");
        assert!(edn.contains(":process :nemesis"), "{edn}");
        let back = checker::format::parse(&edn, Format::Edn).unwrap().events;
        assert_eq!(back, events);
    }

    #[test]
    fn register_operations_become_independent_tuples() {
        let c = Process::Client;
        let events = vec![
            ev(
                0,
                c(0),
                EventType::Invoke,
                "read",
                json!({"key": "k1", "value": null}),
            ),
            ev(
                1,
                c(0),
                EventType::Ok,
                "read",
                json!({"key": "k1", "value": 3}),
            ),
            ev(
                2,
                c(1),
                EventType::Invoke,
                "cas",
                json!({"key": 7, "value": [3, 4]}),
            ),
            ev(
                3,
                c(1),
                EventType::Fail,
                "cas",
                json!({"key": 7, "value": [3, 4]}),
            ),
        ];
        let edn = to_edn(&events);
        assert!(edn.contains(":f :read, :value [\"k1\" nil]"), "{edn}");
        assert!(edn.contains(":f :cas, :value [7 [3 4]]"), "{edn}");
        let back = checker::format::parse(&edn, Format::Edn).unwrap().events;
        assert_eq!(back, events);
    }
}
