//! Reading what `watermark check` is given: the history file a path names (a run
//! folder's, a Jepsen store folder's), its first bytes to tell its format by, a run
//! folder's run.json and final logs, the events the harness judges itself, and what
//! the history's order and the run's end say about how far to trust it.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use checker::format::{self, Format};
use checker::queue::ReplicaLog;

use crate::store::FinalLogs;

/// The events of a history.jsonl the harness judges itself — the nemesis's (its
/// `crash` and `protocol-error` events, its plans and faults) and the workloads'
/// operations (for the `availability` and `contract` verdicts) —, read a line at a
/// time (only lines that may hold one are parsed).
pub(super) fn judged_events(
    input: impl std::io::BufRead,
    shown: &str,
) -> Result<Vec<checker::history::Event>, String> {
    let mut events = Vec::new();
    // A quick look before parsing: the nemesis's events and the broker workloads'
    // operations, the most the harness's verdicts read (`judged_by_harness`).
    let quoted = |f: &str| format!("\"{f}\"");
    let mut wanted: Vec<String> = workloads::queue::OPERATIONS
        .iter()
        .chain(&workloads::register::OPERATIONS)
        .map(|f| quoted(f))
        .collect();
    wanted.push(quoted("nemesis"));
    for line in input.lines() {
        let line = line.map_err(|e| format!("cannot read {shown}: {e}"))?;
        if !wanted.iter().any(|w| line.contains(w.as_str())) {
            continue;
        }
        // A torn or malformed line was already reported by the reading above.
        if let Ok(parsed) = format::parse(&line, Format::Jsonl) {
            events.extend(
                parsed
                    .events
                    .into_iter()
                    .filter(judged_by_harness)
                    .map(slim),
            );
        }
    }
    Ok(events)
}

/// An event the harness judges itself: the nemesis's, or a client operation the
/// availability or the contract verdict reads.
pub(super) fn judged_by_harness(e: &checker::history::Event) -> bool {
    e.process == checker::history::Process::Nemesis
        || crate::judge::availability::reads(&e.f)
        || crate::judge::contract::reads(&e.f)
}

/// The event as the harness keeps it: what an `ok` poll, final-poll or read
/// returned (records, maybe many) is not needed, only that it was asked — how,
/// as its invocation says — and how it ended.
pub(super) fn slim(mut e: checker::history::Event) -> checker::history::Event {
    let read = matches!(e.f.as_str(), "poll" | "final-poll" | "read");
    if read && e.kind == checker::history::EventType::Ok {
        e.value = serde_json::Value::Null;
    }
    e
}

/// The beginning of a history file (its first MiB, whole lines where it can), to
/// tell its format by.
pub(super) fn beginning(mut input: impl std::io::Read, shown: &str) -> Result<String, String> {
    let mut head = Vec::new();
    input
        .by_ref()
        .take(1 << 20)
        .read_to_end(&mut head)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if head.len() == 1 << 20
        && let Some(end) = head.iter().rposition(|&b| b == b'\n')
    {
        head.truncate(end + 1);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

/// A history that breaks its order is bad input (the first such event, by its
/// line); with `--lenient` each is a warning on stderr (the first ten), and the
/// returned note says so in the results.
pub(super) fn disorder_note(
    shown: &str,
    disorders: &[checker::history::Disorder],
    lenient: bool,
) -> Result<Option<String>, String> {
    let Some(first) = disorders.first() else {
        return Ok(None);
    };
    let n = disorders.len();
    if !lenient {
        let more = if n > 1 {
            format!(" ({} more such events)", n - 1)
        } else {
            String::new()
        };
        return Err(format!(
            "{shown}:{}: {}{more}; the history breaks its order (--lenient checks it anyway)",
            first.line, first.message
        ));
    }
    for d in disorders.iter().take(10) {
        eprintln!(
            "watermark check: warning: {shown}:{}: {}",
            d.line, d.message
        );
    }
    if n > 10 {
        eprintln!("watermark check: warning: … and {} more", n - 10);
    }
    let events = if n == 1 {
        "1 event"
    } else {
        &format!("{n} events")
    };
    Ok(Some(format!(
        "the history breaks its order at {events} (first: line {}: {}); checked anyway (--lenient)",
        first.line, first.message
    )))
}

pub(super) fn at(file: &str, e: &format::ParseError) -> String {
    if e.line == 0 {
        format!("{file}: {}", e.message)
    } else {
        format!("{file}:{}: {}", e.line, e.message)
    }
}

/// A run folder's `run.json`, if it reads as JSON.
pub(super) fn read_run_json(dir: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("run.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// The history a folder holds: a watermark run folder's history.jsonl, or a
/// Jepsen store folder's history.edn.
pub(super) fn history_in(dir: &Path) -> Result<PathBuf, String> {
    ["history.jsonl", "history.edn"]
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "{} holds neither history.jsonl (a watermark run folder) nor history.edn \
                 (a Jepsen store folder); give a history file or such a folder",
                dir.display()
            )
        })
}

/// What run.json says about a run that ended early or whose end was incomplete
/// (`"complete": false`: no convergence, a partial drain, missing logs; no end
/// time: interrupted, or the harness died). The history still gets a verdict —
/// what it recorded is judged, and the checker says unknown where it cannot
/// judge — but the reader should know.
pub(super) fn ended_early(run: &serde_json::Value) -> Option<String> {
    let notes: Vec<&str> = run
        .get("notes")
        .and_then(|n| n.as_array())
        .map(|n| n.iter().filter_map(|s| s.as_str()).collect())
        .unwrap_or_default();
    let with_notes = |what: String| {
        if notes.is_empty() {
            what
        } else {
            format!("{what} ({})", notes.join("; "))
        }
    };
    let outcome = run.get("outcome").and_then(|o| o.as_str());
    if run.get("ended_at").is_some_and(|e| e.is_null()) || outcome == Some("harness-failed") {
        let how = outcome.map_or("it never recorded its end".to_string(), |o| {
            format!("its outcome is {o}")
        });
        return Some(with_notes(format!(
            "the run ended early ({how}): the verdict is on the history it recorded"
        )));
    }
    if outcome == Some("interrupted") {
        return Some(with_notes(
            "the run was interrupted: the verdict is on the history it recorded".to_string(),
        ));
    }
    if run.get("complete").and_then(|c| c.as_bool()) == Some(false) {
        return Some(with_notes(
            "the end of the run was incomplete: the verdict is on what the run recorded"
                .to_string(),
        ));
    }
    None
}

/// Every final log of a run folder; an unreadable or malformed one is an error.
pub(super) fn final_logs(dir: &Path) -> Result<Vec<ReplicaLog>, String> {
    let logs = FinalLogs::read(&dir.join("nodes"));
    match logs.errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(logs.replicas),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use checker::history::{Event, EventType, Process};
    use serde_json::json;

    fn poll(kind: EventType, f: &str, value: serde_json::Value) -> Event {
        Event {
            index: 0,
            time: 0,
            process: Process::Client(1),
            kind,
            f: f.into(),
            value,
            error: None,
        }
    }

    #[test]
    fn a_read_keeps_how_it_was_asked_and_refused_but_not_what_it_returned() {
        let asked = json!({"partition": 0, "offset": 3, "max_records": 10001});
        for f in ["poll", "final-poll"] {
            let invoke = poll(EventType::Invoke, f, asked.clone());
            assert!(judged_by_harness(&invoke));
            assert_eq!(slim(invoke).value, asked);
            assert_eq!(slim(poll(EventType::Fail, f, asked.clone())).value, asked);
            let records = json!({"partition": 0, "records": [[3, 7]]});
            assert!(slim(poll(EventType::Ok, f, records)).value.is_null());
        }
    }
}
