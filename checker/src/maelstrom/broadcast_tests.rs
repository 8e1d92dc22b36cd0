use super::super::reading::testing::Builder;
use super::*;
use crate::history::EventType::{self, *};
use crate::verdict::Validity;
use serde_json::json;

fn broadcast(b: &mut Builder, p: u64, node: &str, m: i64, kind: EventType) -> u64 {
    let v = json!({"node": node, "message": m});
    b.op(p, "broadcast", v.clone(), kind, v)
}

fn read(b: &mut Builder, p: u64, f: &str, node: &str, got: &[i64]) -> u64 {
    b.op(
        p,
        f,
        json!({"node": node}),
        Ok,
        json!({"node": node, "messages": got}),
    )
}

/// Two nodes, values 1 and 2 acknowledged, 3 in doubt and read by n2 only.
fn base() -> Builder {
    let mut b = Builder::default();
    broadcast(&mut b, 0, "n1", 1, Ok);
    read(&mut b, 1, "read", "n2", &[]);
    broadcast(&mut b, 1, "n2", 2, Ok);
    broadcast(&mut b, 2, "n1", 3, Info);
    read(&mut b, 3, "read", "n2", &[1, 2, 3]);
    read(&mut b, 4, "read", "n1", &[2, 1]);
    b
}

#[test]
fn every_value_acknowledged_or_read_in_every_final_read_is_valid() {
    let mut b = base();
    read(&mut b, 10, "final-read", "n1", &[3, 1, 2]);
    read(&mut b, 10, "final-read", "n2", &[1, 2, 3, 3]);
    let r = check(&b.events);
    assert_eq!(r.valid, Validity::Valid, "{r:?}");
    assert_eq!(r.stats["broadcasts"], 3);
    assert_eq!(r.stats["broadcasts-acknowledged"], 2);
    assert_eq!((r.stats["reads"], r.stats["final-reads"]), (3, 2));
    assert_eq!(r.stats["values-lost"], 0);
    // n1's read at index 10 lacked nothing acknowledged; n2's first read (2) began
    // after 1 was acknowledged and lacked it.
    assert_eq!(r.stats["reads-stale"], 1);
    assert!(r.stats.contains_key("lag-ms-p50") && r.stats.contains_key("lag-ms-max"));
}

#[test]
fn an_info_broadcast_nobody_read_may_be_missing() {
    let mut b = Builder::default();
    broadcast(&mut b, 0, "n1", 1, Ok);
    broadcast(&mut b, 1, "n1", 2, Info);
    broadcast(&mut b, 2, "n1", 9, Fail);
    read(&mut b, 3, "final-read", "n1", &[1]);
    assert_eq!(check(&b.events).valid, Validity::Valid);
}

#[test]
fn values_missing_from_a_nodes_final_read_are_lost_there() {
    let mut b = base();
    let f1 = read(&mut b, 10, "final-read", "n1", &[2]);
    read(&mut b, 10, "final-read", "n2", &[1, 2, 3]);
    let r = check(&b.events);
    assert_eq!(r.valid, Validity::Invalid);
    assert_eq!(r.anomalies.len(), 1);
    let a = &r.anomalies[0];
    assert_eq!(a.kind, AnomalyKind::LostWrite);
    assert_eq!(a.node, Some(json!("n1")));
    // 1 was acknowledged; 3 was only in doubt, but n2 read it.
    assert_eq!(a.values, [json!(1), json!(3)]);
    assert_eq!(a.ops[0].invoke, f1);
    assert_eq!(a.ops[1].f, "broadcast");
    assert!(
        a.message.contains("lacks 2 of the 3 values"),
        "{}",
        a.message
    );
    assert_eq!(r.stats["values-lost"], 2);
}

#[test]
fn the_last_final_read_of_a_node_is_the_one_judged() {
    let mut b = base();
    read(&mut b, 10, "final-read", "n1", &[2]);
    read(&mut b, 11, "final-read", "n1", &[1, 2, 3]);
    read(&mut b, 12, "final-read", "n2", &[1, 2, 3]);
    assert_eq!(check(&b.events).valid, Validity::Valid);
}

#[test]
fn values_never_broadcast_or_only_later_are_unexpected() {
    let mut b = Builder::default();
    broadcast(&mut b, 0, "n1", 1, Ok);
    let early = read(&mut b, 1, "read", "n2", &[1, 5, 7]);
    broadcast(&mut b, 0, "n1", 5, Ok);
    read(&mut b, 2, "final-read", "n1", &[1, 5, 7]);
    read(&mut b, 3, "final-read", "n2", &[1, 5, 7]);
    let r = check(&b.events);
    let kinds: Vec<(AnomalyKind, Vec<Value>)> = r
        .anomalies
        .iter()
        .map(|a| (a.kind, a.values.clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            (AnomalyKind::Unexpected, vec![json!(5)]),
            (AnomalyKind::Unexpected, vec![json!(7)])
        ]
    );
    assert!(
        r.anomalies[0].message.contains("before any broadcast"),
        "{}",
        r.anomalies[0].message
    );
    assert!(r.anomalies[1].message.contains("never broadcast"));
    assert_eq!(r.anomalies[1].ops.last().unwrap().invoke, early);
}

#[test]
fn a_value_whose_broadcast_failed_is_an_aborted_read() {
    let mut b = Builder::default();
    broadcast(&mut b, 0, "n1", 4, Fail);
    read(&mut b, 1, "final-read", "n1", &[4]);
    let r = check(&b.events);
    assert_eq!(r.anomalies.len(), 1);
    assert_eq!(r.anomalies[0].kind, AnomalyKind::AbortedRead);
    assert_eq!(r.anomalies[0].ops[0].f, "broadcast");
}

#[test]
fn nodes_without_a_final_read_leave_the_verdict_unknown() {
    let mut b = base();
    read(&mut b, 10, "final-read", "n1", &[1, 2, 3]);
    let r = check(&b.events);
    assert_eq!(r.valid, Validity::Unknown);
    assert!(r.reason.as_deref().unwrap().contains("n2"), "{r:?}");
    let r = check(&base().events);
    assert_eq!(r.valid, Validity::Unknown);
    assert!(r.reason.as_deref().unwrap().contains("no final reads"));
    // A failed final read is no final read; an anomaly found still stands.
    let mut b = base();
    b.op(
        9,
        "final-read",
        json!({"node": "n2"}),
        Fail,
        json!({"node": "n2"}),
    );
    read(&mut b, 10, "final-read", "n1", &[]);
    assert_eq!(check(&b.events).valid, Validity::Invalid);
}

#[test]
fn lag_is_measured_from_the_acknowledgement_to_lasting_visibility() {
    let mut b = Builder::default();
    broadcast(&mut b, 0, "n1", 1, Ok); // acknowledged at time 1 ms
    read(&mut b, 1, "read", "n2", &[1]); // seen at 2 ms, but then not:
    read(&mut b, 1, "read", "n2", &[]);
    read(&mut b, 1, "read", "n2", &[1]); // for good from 6 ms on
    read(&mut b, 1, "final-read", "n2", &[1]);
    read(&mut b, 2, "final-read", "n1", &[1]);
    let r = check(&b.events);
    assert_eq!(r.valid, Validity::Valid);
    // n1: its final read at 10 ms; n2: from 6 ms. Acknowledged at 1 ms.
    assert_eq!(r.stats["lag-ms-max"], 9);
    assert_eq!(r.stats["lag-ms-p50"], 5);
}

#[test]
fn reads_whose_messages_are_no_list_cannot_be_read() {
    let mut b = Builder::default();
    b.op(
        0,
        "read",
        json!({"node": "n1"}),
        Ok,
        json!({"node": "n1", "messages": 3}),
    );
    assert_eq!(try_check(&b.events).unwrap_err().index, Some(1));
    let mut b = Builder::default();
    b.op(0, "broadcast", json!({"node": "n1"}), Ok, json!({}));
    assert_eq!(try_check(&b.events).unwrap_err().index, Some(0));
}
