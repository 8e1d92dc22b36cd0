//! The unique-ids workload's check: every id a node answered `ok` is unique in
//! the history — compared by exact text, so `1` and `"1"` differ. An id answered
//! twice or more is one `duplicate-id` (docs/anomalies.md) naming every operation
//! that got it. Failed and indeterminate requests got no id.
//!
//! Reads the `generate` operations of docs/history.md ("The Maelstrom
//! workloads"): invocation `{"node":n}`, `ok` `{"node":n,"id":id}`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::reading::{self, HistoryError};
use crate::history::{Event, Outcome, Paired};
use crate::values;
use crate::verdict::{Anomaly, AnomalyKind, CheckerResult};

/// Check the generate operations of a history.
pub fn check(events: &[Event]) -> CheckerResult {
    try_check(events).unwrap_or_else(reading::unreadable)
}

/// [`check`], or why the history cannot be read.
pub fn try_check(events: &[Event]) -> Result<CheckerResult, HistoryError> {
    let ops = reading::ops(events, &["generate"])?;
    // Per id (by its exact text): the id, and the operations that got it.
    let mut by_id: BTreeMap<String, (&Value, Vec<&Paired>)> = BTreeMap::new();
    for op in ops.iter().filter(|op| op.outcome == Outcome::Ok) {
        let id = reading::result(op, "id")?;
        by_id
            .entry(values::canonical(id))
            .or_insert_with(|| (id, Vec::new()))
            .1
            .push(op);
    }
    let ok: usize = by_id.values().map(|(_, got)| got.len()).sum();
    let mut anomalies: Vec<Anomaly> = by_id
        .values()
        .filter(|(_, got)| got.len() > 1)
        .map(|(id, got)| duplicate(id, got))
        .collect();
    anomalies.sort_by_key(|a| a.ops.first().map(|o| o.invoke));
    let duplicated = anomalies.len() as u64;
    let mut r = CheckerResult::from_anomalies(anomalies);
    r.stats = BTreeMap::from([
        ("generates".to_string(), ops.len() as u64),
        ("generates-ok".to_string(), ok as u64),
        ("ids-distinct".to_string(), by_id.len() as u64),
        ("ids-duplicated".to_string(), duplicated),
    ]);
    Ok(r)
}

/// The anomaly of an id that `got` (two or more operations) were all given.
fn duplicate(id: &Value, got: &[&Paired]) -> Anomaly {
    let nodes: BTreeSet<String> = got.iter().filter_map(|op| reading::node(op)).collect();
    let by = match nodes.len() {
        0 => String::new(),
        1 => format!(
            ", all by {}",
            nodes.iter().next().cloned().unwrap_or_default()
        ),
        _ => format!(
            ", by {}",
            nodes.iter().cloned().collect::<Vec<_>>().join(" and ")
        ),
    };
    let mut a = Anomaly::new(
        AnomalyKind::DuplicateId,
        format!(
            "id {} was generated {} times{by}",
            reading::show(id),
            got.len()
        ),
    );
    if nodes.len() == 1 {
        a.node = nodes.into_iter().next().map(Value::String);
    }
    a.values = vec![values::exported(id)];
    a.ops = got
        .iter()
        .map(|op| {
            let at = reading::node(op)
                .map(|n| format!(" at {n}"))
                .unwrap_or_default();
            reading::op_ref(op, format!("generate{at} → ok {}", reading::show(id)))
        })
        .collect();
    a
}

#[cfg(test)]
mod tests {
    use super::super::reading::testing::Builder;
    use super::*;
    use crate::history::EventType::*;
    use crate::verdict::Validity;
    use serde_json::json;

    fn generate(b: &mut Builder, p: u64, node: &str, id: Value) -> u64 {
        b.op(
            p,
            "generate",
            json!({"node": node}),
            Ok,
            json!({"node": node, "id": id}),
        )
    }

    #[test]
    fn distinct_ids_are_valid_whatever_their_types() {
        let mut b = Builder::default();
        generate(&mut b, 0, "n1", json!(1));
        generate(&mut b, 1, "n2", json!("1"));
        generate(&mut b, 2, "n1", json!([1, "n1"]));
        generate(&mut b, 3, "n2", json!({"n": 1}));
        b.op(
            4,
            "generate",
            json!({"node": "n1"}),
            Info,
            json!({"node": "n1"}),
        );
        b.op(
            5,
            "generate",
            json!({"node": "n1"}),
            Fail,
            json!({"node": "n1"}),
        );
        let r = check(&b.events);
        assert_eq!(r.valid, Validity::Valid, "{r:?}");
        assert_eq!((r.stats["generates"], r.stats["ids-distinct"]), (6, 4));
    }

    #[test]
    fn an_id_given_twice_names_both_operations_and_nodes() {
        let mut b = Builder::default();
        let first = generate(&mut b, 0, "n1", json!(7));
        generate(&mut b, 1, "n1", json!(8));
        let second = generate(&mut b, 2, "n2", json!(7));
        generate(&mut b, 3, "n3", json!({"b": 1, "a": 2}));
        generate(&mut b, 4, "n3", json!({"a": 2, "b": 1}));
        let r = check(&b.events);
        assert_eq!(r.valid, Validity::Invalid);
        assert_eq!(r.anomalies.len(), 2);
        let a = &r.anomalies[0];
        assert_eq!(a.kind, AnomalyKind::DuplicateId);
        assert_eq!(a.values, [json!(7)]);
        let invokes: Vec<u64> = a.ops.iter().map(|o| o.invoke).collect();
        assert_eq!(invokes, [first, second]);
        assert!(a.message.contains("by n1 and n2"), "{}", a.message);
        assert_eq!(a.node, None);
        // Equal objects are one id, whatever their keys' order; one node is named.
        assert_eq!(r.anomalies[1].node, Some(json!("n3")));
        assert_eq!(r.stats["ids-duplicated"], 2);
    }

    #[test]
    fn an_ok_without_an_id_cannot_be_read() {
        let mut b = Builder::default();
        b.op(
            0,
            "generate",
            json!({"node": "n1"}),
            Ok,
            json!({"node": "n1"}),
        );
        assert_eq!(try_check(&b.events).unwrap_err().index, Some(1));
    }
}
