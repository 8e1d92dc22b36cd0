//! The protocol errors of a run of a Maelstrom system (`--bin`): each line a node
//! wrote that the router refused (docs/anomalies.md, "protocol-error") is a
//! `protocol-error` event in the history, written by the router as it reads it,
//! and here a `protocol-error` anomaly of the harness's own verdict, `protocol`,
//! beside the workload's checker — as [`super::crashes`] judges crashes.

use std::collections::BTreeMap;

use checker::history::{Event, Process};
use checker::verdict::{Anomaly, AnomalyKind, CheckerResult, Results};
use serde_json::Value;

/// The name of the verdict in results.json.
pub const CHECKER: &str = "protocol";
/// `f` of a protocol error in the history (process `"nemesis"`), as the router
/// writes it.
pub const EVENT: &str = "protocol-error";

/// The `protocol` verdict of a history's protocol errors, or None if it has none.
pub fn judge(events: &[Event]) -> Option<CheckerResult> {
    let errors: Vec<&Event> = events
        .iter()
        .filter(|e| e.process == Process::Nemesis && e.f == EVENT)
        .collect();
    if errors.is_empty() {
        return None;
    }
    let mut result = CheckerResult::from_anomalies(errors.iter().map(|e| anomaly(e)).collect());
    result.stats = BTreeMap::from([("protocol_errors".to_string(), errors.len() as u64)]);
    Some(result)
}

/// Add the `protocol` verdict of `events` to `results` (if they hold any protocol
/// error), folding the run's validity again.
pub fn add_verdict(results: &mut Results, events: &[Event]) {
    if let Some(verdict) = judge(events) {
        results.insert(CHECKER, verdict);
    }
}

fn anomaly(e: &Event) -> Anomaly {
    let v = &e.value;
    let node = v.get("node").and_then(Value::as_str).unwrap_or("a node");
    let error = v
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or("protocol error");
    let message = format!(
        "{node} broke Maelstrom's protocol {:.3} s into the run: {error}",
        e.time as f64 / 1e9
    );
    let mut a = Anomaly::new(AnomalyKind::ProtocolError, message);
    a.node = v.get("node").cloned();
    a.log = v.get("line").and_then(Value::as_str).map(str::to_string);
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use checker::history::EventType;
    use checker::verdict::Validity;
    use serde_json::json;

    #[test]
    fn each_protocol_error_is_an_anomaly() {
        let e = Event {
            index: 3,
            time: 1_500_000_000,
            process: Process::Nemesis,
            kind: EventType::Info,
            f: EVENT.into(),
            value: json!({"node": "n2", "line": "hello", "error": "line is not JSON: x"}),
            error: None,
        };
        assert!(judge(&[]).is_none());
        let r = judge(std::slice::from_ref(&e)).unwrap();
        assert_eq!(r.valid, Validity::Invalid);
        let a = &r.anomalies[0];
        assert_eq!(a.kind, AnomalyKind::ProtocolError);
        assert_eq!(
            (a.node.clone(), a.log.as_deref()),
            (Some(json!("n2")), Some("hello"))
        );
        assert!(
            a.message
                .starts_with("n2 broke Maelstrom's protocol 1.500 s"),
            "{}",
            a.message
        );
        let mut results = Results::new(BTreeMap::new());
        add_verdict(&mut results, &[e]);
        assert_eq!(results.valid, Validity::Invalid);
    }
}
