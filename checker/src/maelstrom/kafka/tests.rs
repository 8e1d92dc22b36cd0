use super::super::reading::testing::Builder;
use super::*;
use crate::history::EventType::{self, *};
use crate::verdict::{AnomalyKind, Validity};
use serde_json::{Value, json};

fn send(b: &mut Builder, p: u64, key: &str, msg: i64, kind: EventType, offset: Option<i64>) -> u64 {
    let v = json!({"key": key, "msg": msg});
    let mut done = v.clone();
    if let Some(o) = offset {
        done["offset"] = json!(o);
    }
    b.op(p, "send", v, kind, done)
}

fn poll(b: &mut Builder, p: u64, f: &str, asked: Value, msgs: Value) -> u64 {
    let v = json!({"offsets": asked});
    b.op(p, f, v.clone(), Ok, json!({"offsets": asked, "msgs": msgs}))
}

fn commit(b: &mut Builder, p: u64, offsets: Value) -> u64 {
    let v = json!({"offsets": offsets});
    b.op(p, "commit_offsets", v.clone(), Ok, v)
}

fn list(b: &mut Builder, p: u64, keys: &[&str], offsets: Value) -> u64 {
    let v = json!({"keys": keys});
    b.op(
        p,
        "list_committed_offsets",
        v,
        Ok,
        json!({"keys": keys, "offsets": offsets}),
    )
}

fn kinds(r: &CheckerResult) -> Vec<AnomalyKind> {
    r.anomalies.iter().map(|a| a.kind).collect()
}

/// A valid history: sends to two keys, polls, commits and listings, and a
/// complete drain of both keys.
fn valid() -> Builder {
    let mut b = Builder::default();
    send(&mut b, 0, "a", 1, Ok, Some(0));
    send(&mut b, 1, "a", 2, Ok, Some(1));
    send(&mut b, 0, "b", 3, Ok, Some(5)); // offsets may be sparse
    send(&mut b, 1, "a", 4, Info, None);
    send(&mut b, 0, "a", 9, Fail, None);
    list(&mut b, 2, &["a", "b"], json!({}));
    poll(
        &mut b,
        2,
        "poll",
        json!({"a": 0, "b": 0}),
        json!({"a": [[0, 1], [1, 2]], "b": [[5, 3]]}),
    );
    commit(&mut b, 2, json!({"a": 1}));
    list(&mut b, 3, &["a"], json!({"a": 1}));
    poll(&mut b, 3, "poll", json!({"a": 2}), json!({}));
    commit(&mut b, 2, json!({"a": 1}));
    b.nemesis("heal");
    poll(
        &mut b,
        9,
        "final-poll",
        json!({"a": 0}),
        json!({"a": [[0, 1], [1, 2]]}),
    );
    poll(
        &mut b,
        9,
        "final-poll",
        json!({"a": 2}),
        json!({"a": [[2, 4]]}),
    );
    poll(&mut b, 9, "final-poll", json!({"a": 3}), json!({}));
    poll(
        &mut b,
        9,
        "final-poll",
        json!({"b": 0}),
        json!({"b": [[5, 3]]}),
    );
    poll(&mut b, 9, "final-poll", json!({"b": 6}), json!({"b": []}));
    b
}

#[test]
fn a_valid_history_is_valid() {
    let r = check(&valid().events);
    assert_eq!(r.valid, Validity::Valid, "{:#?}", r.anomalies);
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    assert_eq!(r.stats["sends"], 5);
    assert_eq!(
        (r.stats["sends-acknowledged"], r.stats["sends-failed"]),
        (3, 1)
    );
    assert_eq!((r.stats["keys"], r.stats["keys-drained"]), (2, 2));
    assert_eq!((r.stats["polls"], r.stats["final-polls"]), (2, 5));
    assert_eq!((r.stats["commits"], r.stats["listings"]), (2, 2));
}

#[test]
fn an_acknowledged_send_missing_from_a_complete_drain_is_lost() {
    let mut b = Builder::default();
    let s = send(&mut b, 0, "a", 1, Ok, Some(0));
    send(&mut b, 0, "a", 2, Ok, Some(1));
    // Only in doubt, but read: it must survive too.
    send(&mut b, 0, "a", 3, Info, None);
    let reader = poll(&mut b, 1, "poll", json!({"a": 2}), json!({"a": [[2, 3]]}));
    poll(
        &mut b,
        9,
        "final-poll",
        json!({"a": 0}),
        json!({"a": [[1, 2]]}),
    );
    poll(&mut b, 9, "final-poll", json!({"a": 2}), json!({"a": []}));
    let r = check(&b.events);
    // The final poll from 0 that began at offset 1 also skipped offset 0.
    let want = [
        AnomalyKind::LostWrite,
        AnomalyKind::LostWrite,
        AnomalyKind::PollSkip,
    ];
    assert_eq!(kinds(&r), want, "{:#?}", r.anomalies);
    // Listed by offsets: the one only a poll vouches for has none.
    let a = &r.anomalies[1];
    assert_eq!(
        (a.key.clone(), a.offsets.clone(), a.values.clone()),
        (Some(json!("a")), vec![0], vec![json!(1)])
    );
    assert_eq!(a.ops[0].invoke, s);
    assert!(a.message.contains("missing from the final log"));
    let b2 = &r.anomalies[0];
    assert_eq!(b2.values, [json!(3)]);
    assert_eq!(b2.ops.last().unwrap().invoke, reader);
}

#[test]
fn without_a_drain_a_send_is_lost_when_polls_read_past_it() {
    let mut b = Builder::default();
    send(&mut b, 0, "a", 1, Ok, Some(0));
    send(&mut b, 0, "a", 2, Ok, Some(1));
    send(&mut b, 0, "a", 7, Ok, Some(2)); // nobody read up to it: unobserved only
    let past = poll(&mut b, 1, "poll", json!({"a": 1}), json!({"a": [[1, 2]]}));
    let r = check(&b.events);
    assert_eq!(kinds(&r), [AnomalyKind::LostWrite]);
    assert_eq!(r.anomalies[0].values, [json!(1)]);
    assert_eq!(r.anomalies[0].ops[1].invoke, past);
    assert!(r.anomalies[0].message.contains("read up to offset 1"));
    assert_eq!(r.stats["sends-unobserved"], 2);
    assert!(
        r.notes[0].contains("no complete final drain of a"),
        "{:?}",
        r.notes
    );
    // A drain that stops short is judged the same way: 7 is not lost.
    poll(
        &mut b,
        9,
        "final-poll",
        json!({"a": 0}),
        json!({"a": [[1, 2]]}),
    );
    assert_eq!(
        kinds(&check(&b.events)),
        [AnomalyKind::LostWrite, AnomalyKind::PollSkip]
    );
}

#[test]
fn two_messages_at_one_offset_and_one_message_at_two_are_caught() {
    let mut b = Builder::default();
    send(&mut b, 0, "a", 1, Ok, Some(0));
    send(&mut b, 1, "a", 2, Ok, Some(0));
    poll(
        &mut b,
        2,
        "poll",
        json!({"a": 0}),
        json!({"a": [[0, 1], [1, 1]]}),
    );
    let r = check(&b.events);
    // 2, acknowledged at 0, was never read though polls read past it: lost too.
    let want = [
        AnomalyKind::LostWrite,
        AnomalyKind::InconsistentOffsets,
        AnomalyKind::Duplicate,
    ];
    assert_eq!(kinds(&r), want, "{:#?}", r.anomalies);
    assert_eq!(r.anomalies[0].values, [json!(2)]);
    let inconsistent = &r.anomalies[1];
    assert_eq!(
        (inconsistent.offsets.clone(), inconsistent.values.clone()),
        (vec![0], vec![json!(1), json!(2)])
    );
    assert_eq!(inconsistent.ops.len(), 3);
    let duplicate = &r.anomalies[2];
    assert_eq!(
        (duplicate.offsets.clone(), duplicate.values.clone()),
        (vec![0, 1], vec![json!(1)])
    );
}

#[test]
fn messages_never_sent_or_whose_send_failed_are_caught() {
    let mut b = Builder::default();
    send(&mut b, 0, "a", 1, Fail, None);
    send(&mut b, 0, "b", 2, Ok, Some(0));
    // 2 was sent to b, not to a: unexpected in a.
    poll(
        &mut b,
        1,
        "poll",
        json!({"a": 0}),
        json!({"a": [[0, 1], [1, 2], [2, 5]]}),
    );
    let r = check(&b.events);
    assert_eq!(
        kinds(&r),
        [
            AnomalyKind::Unexpected,
            AnomalyKind::Unexpected,
            AnomalyKind::AbortedRead
        ]
    );
    assert_eq!(r.anomalies[0].values, [json!(2)]);
    assert_eq!(r.anomalies[2].ops[0].f, "send");
}

#[test]
fn polls_out_of_order_or_below_their_offset_are_nonmonotonic() {
    let mut b = Builder::default();
    for (m, o) in [(1, 0), (2, 1), (3, 2)] {
        send(&mut b, 0, "a", m, Ok, Some(o));
    }
    poll(
        &mut b,
        1,
        "poll",
        json!({"a": 1}),
        json!({"a": [[0, 1], [1, 2]]}),
    );
    poll(
        &mut b,
        1,
        "poll",
        json!({"a": 0}),
        json!({"a": [[0, 1], [2, 3], [1, 2]]}),
    );
    let r = check(&b.events);
    assert_eq!(
        kinds(&r),
        [AnomalyKind::NonmonotonicPoll, AnomalyKind::NonmonotonicPoll]
    );
    assert_eq!(r.anomalies[0].offsets, [0]);
    assert_eq!(r.anomalies[1].offsets, [1]);
}

#[test]
fn a_poll_that_passes_over_existing_offsets_skips_them() {
    let mut b = Builder::default();
    for (m, o) in [(1, 0), (2, 1), (3, 2), (4, 4)] {
        send(&mut b, 0, "a", m, Ok, Some(o));
    }
    poll(&mut b, 1, "poll", json!({"a": 0}), json!({"a": [[0, 1]]}));
    // The consumer continues from 1, but the node jumps to 4: 1 and 2 exist.
    let skip = poll(&mut b, 1, "poll", json!({"a": 1}), json!({"a": [[4, 4]]}));
    poll(
        &mut b,
        2,
        "poll",
        json!({"a": 0}),
        json!({"a": [[0, 1], [1, 2], [2, 3], [4, 4]]}),
    );
    let r = check(&b.events);
    assert_eq!(kinds(&r), [AnomalyKind::PollSkip]);
    assert_eq!(r.anomalies[0].offsets, [1, 2]);
    assert_eq!(r.anomalies[0].ops[0].invoke, skip);
}

#[test]
fn a_process_whose_sends_go_backwards_is_nonmonotonic() {
    let mut b = Builder::default();
    send(&mut b, 0, "a", 1, Ok, Some(3));
    send(&mut b, 1, "a", 2, Ok, Some(1)); // another process: fine
    send(&mut b, 0, "a", 3, Ok, Some(2));
    send(&mut b, 0, "b", 4, Ok, Some(0)); // another key: fine
    let r = check(&b.events);
    assert_eq!(kinds(&r), [AnomalyKind::NonmonotonicSend]);
    assert_eq!(r.anomalies[0].offsets, [2, 3]);
}

#[test]
fn committed_offsets_that_go_backwards_are_nonmonotonic_commits() {
    let mut b = Builder::default();
    commit(&mut b, 0, json!({"a": 4, "b": 2}));
    let c = commit(&mut b, 0, json!({"a": 7}));
    list(&mut b, 1, &["a", "b"], json!({"a": 7, "b": 2}));
    let l = list(&mut b, 1, &["a"], json!({"a": 5}));
    list(&mut b, 1, &["b"], json!({}));
    // A listing that began before the commit completed may miss it.
    let i = b.invoke(2, "list_committed_offsets", json!({"keys": ["a"]}));
    commit(&mut b, 0, json!({"a": 9}));
    b.event(
        2,
        Ok,
        "list_committed_offsets",
        json!({"keys": ["a"], "offsets": {"a": 7}}),
    );
    let _ = i;
    let r = check(&b.events);
    assert_eq!(
        kinds(&r),
        [
            AnomalyKind::NonmonotonicCommit,
            AnomalyKind::NonmonotonicCommit
        ],
        "{:#?}",
        r.anomalies
    );
    let a = &r.anomalies[0];
    assert_eq!(
        (a.key.clone(), a.offsets.clone()),
        (Some(json!("a")), vec![5, 7])
    );
    assert_eq!((a.ops[0].invoke, a.ops[1].invoke), (c, l));
    assert!(
        r.anomalies[1].message.contains("no offset"),
        "{}",
        r.anomalies[1].message
    );
}

#[test]
fn malformed_values_cannot_be_read() {
    let mut b = Builder::default();
    b.op(
        0,
        "send",
        json!({"key": "a", "msg": 1}),
        Ok,
        json!({"key": "a", "msg": 1}),
    );
    assert_eq!(try_check(&b.events).unwrap_err().index, Some(1));
    let mut b = Builder::default();
    poll(&mut b, 0, "poll", json!({"a": 0}), json!({"a": [[0]]}));
    assert!(
        try_check(&b.events)
            .unwrap_err()
            .message
            .contains("[offset, message]")
    );
    let mut b = Builder::default();
    poll(&mut b, 0, "poll", json!({"a": "0"}), json!({}));
    assert_eq!(try_check(&b.events).unwrap_err().index, Some(0));
    assert_eq!(check(&b.events).valid, Validity::Unknown);
}
