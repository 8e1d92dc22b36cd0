//! The echo workload's check: every `ok` echo carried back exactly the payload it
//! was sent with (compared by exact text: docs/checker.md, "Exact numbers"). A
//! node that alters, drops or invents the payload is an `echo-mismatch`
//! (docs/anomalies.md). Failed and indeterminate echoes promise nothing.
//!
//! Reads the `echo` operations of docs/history.md ("The Maelstrom workloads"):
//! invocation `{"node":n,"echo":payload}`, `ok` `{"node":n,"echo":what came back}`
//! (no `echo` when the reply had none).

use std::collections::BTreeMap;

use serde_json::Value;

use super::reading::{self, HistoryError};
use crate::history::Outcome;
use crate::values;
use crate::verdict::{Anomaly, AnomalyKind, CheckerResult};

/// Check the echo operations of a history.
pub fn check(events: &[crate::history::Event]) -> CheckerResult {
    try_check(events).unwrap_or_else(reading::unreadable)
}

/// [`check`], or why the history cannot be read.
pub fn try_check(events: &[crate::history::Event]) -> Result<CheckerResult, HistoryError> {
    let ops = reading::ops(events, &["echo"])?;
    let mut anomalies = Vec::new();
    let mut ok = 0;
    for op in &ops {
        let sent = reading::arg(op, "echo")?;
        if op.outcome != Outcome::Ok {
            continue;
        }
        ok += 1;
        let got = op.value().get("echo");
        if got.is_some_and(|g| values::canonical(g) == values::canonical(sent)) {
            continue;
        }
        let node = reading::node(op);
        let at = node.as_deref().unwrap_or("the node");
        let answered = match got {
            Some(g) => format!("with {}", reading::show(g)),
            None => "without an echo".to_string(),
        };
        let mut a = Anomaly::new(
            AnomalyKind::EchoMismatch,
            format!(
                "{at} answered the echo of {} {answered}",
                reading::show(sent)
            ),
        );
        a.node = node.map(Value::String);
        a.values = std::iter::once(sent)
            .chain(got)
            .map(values::exported)
            .collect();
        a.ops = vec![reading::op_ref(
            op,
            format!("echo {} → ok {answered}", reading::show(sent)),
        )];
        anomalies.push(a);
    }
    let mut r = CheckerResult::from_anomalies(anomalies);
    r.stats = BTreeMap::from([
        ("echoes".to_string(), ops.len() as u64),
        ("echoes-ok".to_string(), ok),
    ]);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::super::reading::testing::Builder;
    use super::*;
    use crate::history::EventType::*;
    use crate::verdict::Validity;
    use serde_json::json;

    fn echo(
        b: &mut Builder,
        p: u64,
        sent: Value,
        kind: crate::history::EventType,
        got: Option<Value>,
    ) {
        let mut done = json!({"node": "n1"});
        if let Some(g) = got {
            done["echo"] = g;
        }
        b.op(p, "echo", json!({"node": "n1", "echo": sent}), kind, done);
    }

    #[test]
    fn echoes_that_come_back_unchanged_are_valid() {
        let mut b = Builder::default();
        echo(
            &mut b,
            0,
            json!("Please echo 1"),
            Ok,
            Some(json!("Please echo 1")),
        );
        echo(
            &mut b,
            1,
            json!({"b": [1, 2], "a": null}),
            Ok,
            Some(json!({"a": null, "b": [1, 2]})),
        );
        // A failed or unknown echo promises nothing.
        echo(&mut b, 2, json!(3), Fail, None);
        b.nemesis("partition");
        echo(&mut b, 3, json!(4), Info, None);
        b.invoke(4, "echo", json!({"node": "n1", "echo": 5}));
        // Other workloads' operations are not the echo checker's.
        b.op(
            5,
            "read",
            json!({"key": 1, "value": null}),
            Ok,
            json!({"key": 1, "value": 2}),
        );
        let r = check(&b.events);
        assert_eq!(r.valid, Validity::Valid, "{r:?}");
        assert_eq!((r.stats["echoes"], r.stats["echoes-ok"]), (5, 2));
    }

    #[test]
    fn an_altered_or_missing_echo_is_a_mismatch() {
        let mut b = Builder::default();
        echo(
            &mut b,
            0,
            json!("Please echo 1"),
            Ok,
            Some(json!("Please echo 2")),
        );
        echo(&mut b, 1, json!(1), Ok, Some(json!("1")));
        echo(&mut b, 2, json!("x"), Ok, None);
        let r = check(&b.events);
        assert_eq!(r.valid, Validity::Invalid);
        assert_eq!(r.anomalies.len(), 3);
        let a = &r.anomalies[0];
        assert_eq!(a.kind, AnomalyKind::EchoMismatch);
        assert_eq!(a.values, [json!("Please echo 1"), json!("Please echo 2")]);
        assert_eq!(a.node, Some(json!("n1")));
        assert_eq!((a.ops[0].invoke, a.ops[0].complete), (0, Some(1)));
        assert!(a.message.contains("\"Please echo 2\""), "{}", a.message);
        assert!(r.anomalies[2].message.contains("without an echo"));
        assert_eq!(r.anomalies[2].values, [json!("x")]);
    }

    #[test]
    fn an_invocation_without_its_payload_cannot_be_read() {
        let mut b = Builder::default();
        b.op(
            0,
            "echo",
            json!({"node": "n1"}),
            Ok,
            json!({"node": "n1", "echo": 1}),
        );
        let e = try_check(&b.events).unwrap_err();
        assert_eq!(e.index, Some(0));
        assert_eq!(check(&b.events).valid, Validity::Unknown);
    }
}
