use super::super::reading::testing::Builder;
use super::*;
use crate::history::EventType::{self, *};
use crate::verdict::Validity;
use serde_json::json;

fn add(b: &mut Builder, p: u64, node: &str, delta: i64, kind: EventType) -> u64 {
    let v = json!({"node": node, "delta": delta});
    b.op(p, "add", v.clone(), kind, v)
}

fn read(b: &mut Builder, p: u64, f: &str, node: &str, value: Value) -> u64 {
    b.op(
        p,
        f,
        json!({"node": node}),
        Ok,
        json!({"node": node, "value": value}),
    )
}

#[test]
fn final_reads_of_the_acknowledged_sum_are_valid() {
    let mut b = Builder::default();
    add(&mut b, 0, "n1", 3, Ok);
    read(&mut b, 1, "read", "n2", json!(0)); // stale, allowed
    add(&mut b, 1, "n2", 4, Ok);
    add(&mut b, 2, "n2", 100, Fail);
    read(&mut b, 1, "read", "n1", json!(7));
    read(&mut b, 3, "final-read", "n1", json!(7));
    read(&mut b, 3, "final-read", "n2", json!(7));
    let r = check(&b.events);
    assert_eq!(r.valid, Validity::Valid, "{r:?}");
    assert_eq!(r.stats["reads-stale"], 1);
    assert_eq!(
        (r.stats["sum-acknowledged"], r.stats["adds-failed"]),
        (7, 1)
    );
}

#[test]
fn adds_in_doubt_allow_exactly_the_sums_they_can_make() {
    let mut b = Builder::default();
    add(&mut b, 0, "n1", 10, Ok);
    add(&mut b, 1, "n1", 5, Info);
    b.invoke(2, "add", json!({"node": "n1", "delta": 1})); // never completed
    for (p, v) in [(3, 10), (4, 11), (5, 15), (6, 16)] {
        read(&mut b, p, "final-read", "n1", json!(v));
    }
    let r = check(&b.events);
    assert_eq!(r.valid, Validity::Valid, "{r:?}");
    // 12 is between the least and the greatest sum, but no subset makes it.
    for v in [12, 9, 17] {
        let mut b3 = Builder::default();
        add(&mut b3, 0, "n1", 10, Ok);
        add(&mut b3, 1, "n1", 5, Info);
        b3.invoke(2, "add", json!({"node": "n1", "delta": 1}));
        read(&mut b3, 3, "final-read", "n1", json!(v));
        let r = check(&b3.events);
        assert_eq!(r.valid, Validity::Invalid, "{v}");
        let a = &r.anomalies[0];
        assert_eq!(
            (a.kind, &a.values),
            (AnomalyKind::CounterOutOfRange, &vec![json!(v)])
        );
        assert!(
            a.message.contains("acceptable 10..=11, 15..=16"),
            "{}",
            a.message
        );
        assert_eq!(a.node, Some(json!("n1")));
    }
}

#[test]
fn a_node_that_counts_only_locally_is_caught_by_its_final_read() {
    let mut b = Builder::default();
    add(&mut b, 0, "n1", 2, Ok);
    add(&mut b, 1, "n2", 3, Ok);
    read(&mut b, 2, "final-read", "n1", json!(2));
    read(&mut b, 2, "final-read", "n2", json!(3));
    let r = check(&b.events);
    assert_eq!(r.anomalies.len(), 2);
    assert!(
        r.anomalies
            .iter()
            .all(|a| a.kind == AnomalyKind::CounterOutOfRange)
    );
    assert!(
        r.anomalies[0].message.contains("not the 5 acknowledged"),
        "{}",
        r.anomalies[0].message
    );
}

#[test]
fn an_intermediate_read_beyond_every_add_invoked_is_out_of_range() {
    let mut b = Builder::default();
    add(&mut b, 0, "n1", 2, Ok);
    // Invoked before the read completes, so it may count: 2 + 3.
    let i = b.invoke(1, "add", json!({"node": "n1", "delta": 3}));
    read(&mut b, 2, "read", "n2", json!(5));
    b.event(1, Ok, "add", b.events[i as usize].value.clone());
    read(&mut b, 2, "read", "n2", json!(6));
    read(&mut b, 2, "read", "n2", json!("5"));
    read(&mut b, 3, "final-read", "n1", json!(5));
    let r = check(&b.events);
    assert_eq!(r.anomalies.len(), 2, "{:?}", r.anomalies);
    assert!(
        r.anomalies[0].message.contains("more than the 5"),
        "{}",
        r.anomalies[0].message
    );
    assert!(r.anomalies[1].message.contains("not an integer"));
}

#[test]
fn strict_checking_reports_stale_reads() {
    let mut b = Builder::default();
    add(&mut b, 0, "n1", 2, Ok);
    read(&mut b, 1, "read", "n2", json!(0));
    read(&mut b, 1, "final-read", "n2", json!(2));
    read(&mut b, 1, "final-read", "n1", json!(2));
    assert_eq!(check(&b.events).valid, Validity::Valid);
    let r = check_strict(&b.events);
    assert_eq!(r.valid, Validity::Invalid);
    assert!(
        r.anomalies[0].message.contains("stale"),
        "{}",
        r.anomalies[0].message
    );
}

#[test]
fn nodes_without_a_final_read_leave_the_verdict_unknown() {
    let mut b = Builder::default();
    add(&mut b, 0, "n1", 2, Ok);
    add(&mut b, 1, "n2", 2, Ok);
    assert_eq!(check(&b.events).valid, Validity::Unknown);
    read(&mut b, 2, "final-read", "n1", json!(4));
    let r = check(&b.events);
    assert_eq!(r.valid, Validity::Unknown);
    assert!(r.reason.unwrap().contains("n2"));
}

#[test]
fn many_scattered_adds_in_doubt_widen_to_one_range() {
    let adds: Vec<i128> = (0..14).map(|i| 1 << i).collect();
    let mut b = Builder::default();
    for (p, d) in adds.iter().enumerate() {
        add(&mut b, p as u64, "n1", *d as i64 * 3, Info);
    }
    read(&mut b, 99, "final-read", "n1", json!(1));
    let r = check(&b.events);
    // 2^14 sums, multiples of 3: widened, so 1 (within 0..max) is accepted.
    assert_eq!(r.valid, Validity::Valid, "{r:?}");
    assert!(r.notes[0].contains("ranges"));
}

#[test]
fn a_delta_that_is_no_integer_cannot_be_read() {
    let mut b = Builder::default();
    b.op(0, "add", json!({"node": "n1", "delta": "3"}), Ok, json!({}));
    assert_eq!(try_check(&b.events, false).unwrap_err().index, Some(0));
}
