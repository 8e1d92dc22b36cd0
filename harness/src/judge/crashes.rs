//! The crashes of a run: a process of the cluster that died without the nemesis
//! asking (a panic, an abort, an exit — `cluster::crash`) is a `crash` event in the
//! history, written the moment it is detected ([`record`]), and a `crash` anomaly
//! of the harness's own verdict, `crashes` ([`add_verdict`]), beside the workload's
//! checkers: a crashed system under test never yields a valid run. With
//! `--allow-crashes` the crashes are only noted. `watermark check` judges a run
//! folder's crash events the same way, so it agrees with the run.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use checker::history::{Event, EventType, Process};
use checker::verdict::{Anomaly, AnomalyKind, CheckerResult, Results};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

use crate::store::History;
use crate::system::process::crash::Crash;

/// The name of the verdict in results.json, beside the workload's checkers.
pub const CHECKER: &str = "crashes";
/// `f` of a crash event in the history (process `"nemesis"`).
pub const EVENT: &str = "crash";

/// How long the end of a run waits for the last crash reports to be written.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(15);

/// Write each crash into the history as it is reported, and say it on the console
/// (into watermark.log only, under a live progress bar). Ends when the cluster is
/// gone.
pub fn record(mut reports: UnboundedReceiver<Crash>, history: Arc<History>) -> JoinHandle<()> {
    let live_bar = std::io::stderr().is_terminal();
    tokio::spawn(async move {
        while let Some(crash) = reports.recv().await {
            let value = crash.to_json();
            let said = value["message"]
                .as_str()
                .and_then(|m| m.lines().last())
                .unwrap_or("its log says nothing");
            let line = format!(
                "watermark: {} crashed ({}), the nemesis did not stop it: {said} (see {})",
                crash.proc,
                crash.status(),
                crash.log_in_run()
            );
            if live_bar {
                crate::console::record(&line);
            } else {
                crate::errln!("{line}");
            }
            history.nemesis(EventType::Info, EVENT, value);
        }
    })
}

/// Wait (bounded) until every crash reported is in the history: call once the
/// cluster is gone.
pub async fn flush(recorder: JoinHandle<()>) {
    let _ = tokio::time::timeout(FLUSH_TIMEOUT, recorder).await;
}

/// The file a `corrupt` fault damaged that this crash's last words name: the
/// process refused to start on it, as the broker's contract allows (docs/broker.md).
fn refused_on_damage<'a>(crash: &Event, events: &'a [Event]) -> Option<&'a str> {
    let said = crash.value.get("message").and_then(Value::as_str)?;
    let node = crash.value.get("node")?;
    events
        .iter()
        .filter(|e| e.process == Process::Nemesis && e.f == "corrupted" && e.time <= crash.time)
        .filter(|e| e.value.get("process") == Some(node))
        .filter_map(|e| e.value.get("file").and_then(Value::as_str))
        .find(|file| said.contains(file))
}

/// The `crashes` verdict of a history's crash events, or None if it has none:
/// invalid with one `crash` anomaly per crash, or — `allow` — valid with a note each.
/// A process that refused to start naming the file a `corrupt` fault damaged is a
/// note, not an anomaly.
pub fn judge(events: &[Event], allow: bool) -> Option<CheckerResult> {
    let crashes: Vec<&Event> = events
        .iter()
        .filter(|e| e.process == Process::Nemesis && e.f == EVENT)
        .collect();
    if crashes.is_empty() {
        return None;
    }
    let (mut refused, mut rest) = (Vec::new(), Vec::new());
    for e in crashes {
        match refused_on_damage(e, events) {
            Some(file) => refused.push(format!(
                "{} (it refused to start on {file}, which a corrupt fault damaged)",
                anomaly(e).message
            )),
            None => rest.push(e),
        }
    }
    let crashes = rest;
    let anomalies: Vec<Anomaly> = crashes.iter().map(|e| anomaly(e)).collect();
    let mut result = if allow {
        let mut r = CheckerResult::from_anomalies(Vec::new());
        r.notes = anomalies
            .iter()
            .map(|a| format!("{} (allowed by --allow-crashes)", a.message))
            .collect();
        r
    } else {
        CheckerResult::from_anomalies(anomalies)
    };
    result.stats = BTreeMap::from([
        ("crashes".to_string(), crashes.len() as u64),
        ("refused-on-damage".to_string(), refused.len() as u64),
    ]);
    result.notes.extend(refused);
    Some(result)
}

/// Add the `crashes` verdict of `events` to `results` (if they hold any crash),
/// folding the run's validity again.
pub fn add_verdict(results: &mut Results, events: &[Event], allow: bool) {
    if let Some(verdict) = judge(events, allow) {
        results.insert(CHECKER, verdict);
    }
}

/// One crash event as an anomaly: the process, how it ended and when, and what its
/// log said.
fn anomaly(e: &Event) -> Anomaly {
    let v = &e.value;
    let node = v.get("node").cloned().filter(|n| !n.is_null());
    let who = match &node {
        Some(Value::String(s)) => s.clone(),
        Some(n) => format!("node {n}"),
        None => "a process".to_string(),
    };
    let status = v.get("status").and_then(Value::as_str).unwrap_or("ended");
    let log = v.get("log").and_then(Value::as_str);
    let mut message = format!(
        "{who} died on its own ({status}) {:.3} s into the run; the nemesis had not stopped it",
        e.time as f64 / 1e9
    );
    if let Some(log) = log {
        message.push_str(&format!("; its log: {log}"));
    }
    let mut a = Anomaly::new(AnomalyKind::Crash, message);
    a.node = node;
    a.log = v.get("message").and_then(Value::as_str).map(str::to_string);
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use checker::verdict::Validity;
    use serde_json::json;

    fn crash_event(index: u64, node: Value) -> Event {
        Event {
            index,
            time: 2_500_000_000,
            process: Process::Nemesis,
            kind: EventType::Info,
            f: EVENT.into(),
            value: json!({"node": node, "pid": 77, "status": "killed by SIGABRT",
                          "log": "nodes/2/broker.log", "message": "PLANTED BUG (abort): aborting"}),
            error: None,
        }
    }

    #[test]
    fn each_crash_is_an_anomaly_unless_allowed() {
        let kill = Event {
            f: "kill".into(),
            value: json!([1]),
            ..crash_event(0, json!(1))
        };
        assert!(judge(std::slice::from_ref(&kill), false).is_none());
        let events = [
            kill,
            crash_event(1, json!(2)),
            crash_event(2, json!("controller")),
        ];
        let r = judge(&events, false).unwrap();
        assert_eq!(r.valid, Validity::Invalid);
        assert_eq!(r.anomalies.len(), 2);
        let a = &r.anomalies[0];
        assert_eq!(a.kind, AnomalyKind::Crash);
        assert_eq!(a.node, Some(json!(2)));
        assert_eq!(a.log.as_deref(), Some("PLANTED BUG (abort): aborting"));
        assert!(
            a.message
                .starts_with("node 2 died on its own (killed by SIGABRT) 2.500 s"),
            "{}",
            a.message
        );
        assert!(r.anomalies[1].message.starts_with("controller died"));
        assert_eq!(r.stats["crashes"], 2);

        let allowed = judge(&events, true).unwrap();
        assert_eq!(allowed.valid, Validity::Valid);
        assert!(allowed.anomalies.is_empty());
        assert_eq!(allowed.notes.len(), 2);
        assert!(allowed.notes[0].ends_with("(allowed by --allow-crashes)"));
    }

    #[test]
    fn refusing_to_start_on_a_file_a_corrupt_fault_damaged_is_a_note() {
        let damaged = |node: i64| Event {
            f: "corrupted".into(),
            time: 1_000_000_000,
            value: json!({"process": node, "file": "raft/vote.json", "kind": "bit-flip",
                          "offset": 46, "length": 4}),
            ..crash_event(0, json!(node))
        };
        let refused = |index, node: i64| Event {
            value: json!({"node": node, "status": "exited with code 1",
                          "message": "broker: nodes/3/data/raft/vote.json is corrupt at byte 55"}),
            ..crash_event(index, json!(node))
        };
        let r = judge(&[damaged(3), refused(1, 3)], false).unwrap();
        assert_eq!(r.valid, Validity::Valid, "{r:?}");
        assert_eq!(r.notes.len(), 1);
        assert!(
            r.notes[0].contains("refused to start on raft/vote.json"),
            "{:?}",
            r.notes
        );
        assert_eq!(r.stats["refused-on-damage"], 1);
        // Another node's damage, or another file, explains nothing.
        let other = judge(&[damaged(2), refused(1, 3)], false).unwrap();
        assert_eq!(other.valid, Validity::Invalid);
        let plain = judge(&[damaged(3), crash_event(1, json!(3))], false).unwrap();
        assert_eq!(plain.valid, Validity::Invalid);
    }

    #[test]
    fn the_verdict_joins_the_workloads() {
        let mut results = Results::new(BTreeMap::from([(
            "queue".to_string(),
            CheckerResult::from_anomalies(Vec::new()),
        )]));
        add_verdict(&mut results, &[], false);
        assert_eq!(
            (results.valid, results.checkers.len()),
            (Validity::Valid, 1)
        );
        add_verdict(&mut results, &[crash_event(0, json!(3))], false);
        assert_eq!(results.valid, Validity::Invalid);
        assert_eq!(results.checkers[CHECKER].anomalies.len(), 1);
    }
}
