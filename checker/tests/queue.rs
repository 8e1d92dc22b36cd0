//! Queue analysis: a hand-written history for every anomaly kind shows it is
//! found, and clean histories — including indeterminate and unacknowledged sends
//! that did or did not land — show none.

use checker::history::{Event, EventType, Process};
use checker::queue::{ReplicaLog, check, parse_final_log};
use checker::verdict::{AnomalyKind, CheckerResult, Validity};
use serde_json::{Value, json};

/// Builds a history event by event.
#[derive(Default)]
struct H {
    events: Vec<Event>,
}

impl H {
    fn push(&mut self, p: u64, kind: EventType, f: &str, value: Value) -> &mut Self {
        let index = self.events.len() as u64;
        self.events.push(Event {
            index,
            time: index * 1000,
            process: Process::Client(p),
            kind,
            f: f.into(),
            value,
            error: None,
        });
        self
    }
    fn invoke_send(&mut self, p: u64, part: i64, v: i64) -> &mut Self {
        self.push(
            p,
            EventType::Invoke,
            "send",
            json!({"partition": part, "value": v}),
        )
    }
    fn send_ok(&mut self, p: u64, part: i64, v: i64, offset: i64) -> &mut Self {
        self.invoke_send(p, part, v).push(
            p,
            EventType::Ok,
            "send",
            json!({"partition": part, "value": v, "offset": offset}),
        )
    }
    fn send_end(&mut self, p: u64, part: i64, v: i64, kind: EventType) -> &mut Self {
        self.invoke_send(p, part, v)
            .push(p, kind, "send", json!({"partition": part, "value": v}))
    }
    /// An `f` (poll or final-poll) by `p` from `from`, answered with `records` and,
    /// when given, the high watermark `hw`.
    fn answered(
        &mut self,
        f: &str,
        p: u64,
        (part, from): (i64, i64),
        records: &[(i64, i64)],
        hw: Option<i64>,
    ) -> &mut Self {
        let recs: Vec<Value> = records.iter().map(|(o, v)| json!([o, v])).collect();
        let mut answer = json!({"partition": part, "records": recs});
        if let Some(hw) = hw {
            answer["high_watermark"] = json!(hw);
        }
        self.push(
            p,
            EventType::Invoke,
            f,
            json!({"partition": part, "offset": from}),
        )
        .push(p, EventType::Ok, f, answer)
    }
    fn poll_f(
        &mut self,
        f: &str,
        p: u64,
        part: i64,
        from: i64,
        records: &[(i64, i64)],
    ) -> &mut Self {
        self.answered(f, p, (part, from), records, None)
    }
    fn poll(&mut self, p: u64, part: i64, from: i64, records: &[(i64, i64)]) -> &mut Self {
        self.poll_f("poll", p, part, from, records)
    }
    /// A poll whose answer gives the high watermark `hw`.
    fn poll_hw(
        &mut self,
        p: u64,
        part: i64,
        from: i64,
        records: &[(i64, i64)],
        hw: i64,
    ) -> &mut Self {
        self.answered("poll", p, (part, from), records, Some(hw))
    }
    /// A final drain of a partition in one final-poll that read up to the high
    /// watermark, as the workload's drain records it.
    fn final_poll(&mut self, part: i64, records: &[(i64, i64)]) -> &mut Self {
        let hw = records.iter().map(|(o, _)| o + 1).max().unwrap_or(0);
        self.drain_poll(part, 0, records, hw)
    }
    /// One final-poll from `from`, answered with high watermark `hw`.
    fn drain_poll(&mut self, part: i64, from: i64, records: &[(i64, i64)], hw: i64) -> &mut Self {
        self.answered("final-poll", 99, (part, from), records, Some(hw))
    }
    fn check(&self) -> CheckerResult {
        check(&self.events, &[]).expect("a well-formed history")
    }
}

fn kinds(r: &CheckerResult) -> Vec<AnomalyKind> {
    r.anomalies.iter().map(|a| a.kind).collect()
}

fn only(r: &CheckerResult, kind: AnomalyKind) -> &checker::verdict::Anomaly {
    assert_eq!(kinds(r), vec![kind], "{:#?}", r.anomalies);
    assert_eq!(r.valid, Validity::Invalid);
    &r.anomalies[0]
}

#[test]
fn clean_history_with_indeterminate_sends_is_valid() {
    let mut h = H::default();
    h.send_ok(0, 0, 1, 0)
        .send_end(1, 0, 2, EventType::Info) // landed
        .send_end(2, 0, 3, EventType::Info) // did not land
        .send_end(3, 0, 4, EventType::Fail) // certainly not
        .invoke_send(4, 0, 5) // acks=0: ok without an offset, did not land
        .push(
            4,
            EventType::Ok,
            "send",
            json!({"partition": 0, "value": 5}),
        )
        .invoke_send(4, 0, 6) // acks=0, landed
        .push(
            4,
            EventType::Ok,
            "send",
            json!({"partition": 0, "value": 6}),
        )
        .poll(5, 0, 0, &[(0, 1), (1, 2)])
        .poll(5, 0, 2, &[]) // nothing new yet: not a skip
        .send_ok(0, 0, 7, 3)
        .invoke_send(6, 1, 8) // never completed: the writer crashed
        .final_poll(0, &[(0, 1), (1, 2), (2, 6), (3, 7)])
        .final_poll(1, &[]);
    let r = h.check();
    assert_eq!(r.valid, Validity::Valid, "{:#?}", r.anomalies);
    assert_eq!(r.stats["sends"], 8);
    assert_eq!(r.stats["sends-acknowledged"], 2);
}

#[test]
fn lost_write_acknowledged_or_read() {
    let mut h = H::default();
    h.send_ok(0, 0, 1, 0)
        .send_ok(0, 0, 2, 1)
        .final_poll(0, &[(0, 1)]);
    let a = only(&h.check(), AnomalyKind::LostWrite).clone();
    assert_eq!(
        (a.partition, a.offsets.clone(), a.values.clone()),
        (Some(0), vec![1], vec![json!(2)])
    );
    assert_eq!((a.ops[0].invoke, a.ops[0].complete), (2, Some(3)));

    let mut h = H::default();
    h.send_end(0, 0, 1, EventType::Info)
        .poll(1, 0, 0, &[(0, 1)])
        .final_poll(0, &[]);
    let r = h.check();
    let a = only(&r, AnomalyKind::LostWrite);
    assert_eq!(a.ops.len(), 2, "the send and the poll that saw it");
}

#[test]
fn inconsistent_offsets() {
    let mut h = H::default();
    h.send_ok(0, 0, 1, 0)
        .send_ok(1, 0, 2, 1)
        .poll(2, 0, 0, &[(0, 1), (1, 3)]);
    h.send_ok(3, 0, 3, 2)
        .final_poll(0, &[(0, 1), (1, 2), (2, 3)]);
    let r = h.check();
    // The poll saw 3 at offset 1 (where 2 lives) and also at offset 2: both the
    // inconsistency and the duplicate are reported.
    assert_eq!(
        kinds(&r),
        vec![AnomalyKind::InconsistentOffsets, AnomalyKind::Duplicate]
    );
    let a = &r.anomalies[0];
    assert_eq!((a.partition, a.offsets.clone()), (Some(0), vec![1]));
    assert_eq!(a.values, vec![json!(2), json!(3)]);
    assert_eq!(a.ops.len(), 3);
}

#[test]
fn duplicate() {
    let mut h = H::default();
    h.send_end(0, 0, 1, EventType::Info)
        .send_ok(1, 0, 2, 1)
        .final_poll(0, &[(0, 1), (1, 2), (2, 1)]);
    let a = only(&h.check(), AnomalyKind::Duplicate).clone();
    assert_eq!((a.offsets, a.values), (vec![0, 2], vec![json!(1)]));
}

/// A send the producer retried: `attempts` in its completion.
fn send_retried(h: &mut H, p: u64, part: i64, v: i64, end: EventType, offset: Option<i64>) {
    let mut value = json!({"partition": part, "value": v, "attempts": 2,
        "retried": ["timed out"]});
    if let Some(o) = offset {
        value["offset"] = json!(o);
    }
    h.invoke_send(p, part, v).push(p, end, "send", value);
}

#[test]
fn a_retried_send_written_twice_is_a_duplicate_that_names_the_send() {
    let mut h = H::default();
    send_retried(&mut h, 0, 0, 1, EventType::Ok, Some(1));
    h.final_poll(0, &[(0, 1), (1, 1)]);
    let a = only(&h.check(), AnomalyKind::Duplicate).clone();
    assert_eq!((a.offsets, a.values), (vec![0, 1], vec![json!(1)]));
    assert!(a.message.contains("attempted 2 times"), "{}", a.message);
    assert_eq!(a.ops[0].f, "send");
    assert!(
        a.ops[0].text.contains("after 2 attempts"),
        "{}",
        a.ops[0].text
    );
    assert_eq!(a.ops[1].f, "final-poll");
}

/// An idempotent producer's send, retried once, whose retry ended `end` with
/// `error`.
fn idempotent_retry(h: &mut H, p: u64, v: i64, end: EventType, error: &str) {
    let value = json!({"partition": 0, "value": v, "attempts": 2,
        "retried": ["timed out"], "producer": 7});
    h.invoke_send(p, 0, v).push(p, end, "send", value);
    h.events.last_mut().unwrap().error = Some(error.into());
}

#[test]
fn a_retry_refused_as_out_of_sequence_whose_record_is_in_the_log_is_a_refused_duplicate() {
    let mut h = H::default();
    idempotent_retry(
        &mut h,
        0,
        1,
        EventType::Info,
        "OUT_OF_ORDER_SEQUENCE_NUMBER: queue-0: expected sequence 4, got 3",
    );
    h.send_ok(1, 0, 2, 1).final_poll(0, &[(0, 1), (1, 2)]);
    let a = only(&h.check(), AnomalyKind::RefusedDuplicate).clone();
    assert_eq!((a.offsets, a.values), (vec![0], vec![json!(1)]));
    assert!(a.message.contains("producer 7"), "{}", a.message);
    assert_eq!(a.ops[0].f, "send");
    assert!(
        a.ops[0].text.contains("OUT_OF_ORDER_SEQUENCE_NUMBER"),
        "{}",
        a.ops[0].text
    );
    assert_eq!(a.ops[1].f, "final-poll");
}

#[test]
fn a_refused_retry_whose_record_is_not_in_the_log_or_another_error_is_fine() {
    // Refused as out of sequence, and the first attempt was not written either.
    let mut h = H::default();
    idempotent_retry(
        &mut h,
        0,
        1,
        EventType::Info,
        "OUT_OF_ORDER_SEQUENCE_NUMBER",
    );
    h.send_ok(1, 0, 2, 0).final_poll(0, &[(0, 2)]);
    assert_eq!(h.check().valid, Validity::Valid);
    // In the log, but the retry ended otherwise (a timeout again).
    let mut h = H::default();
    idempotent_retry(
        &mut h,
        0,
        1,
        EventType::Info,
        "REQUEST_TIMED_OUT: no answer",
    );
    h.send_ok(1, 0, 2, 1).final_poll(0, &[(0, 1), (1, 2)]);
    assert_eq!(h.check().valid, Validity::Valid);
}

#[test]
fn a_retried_send_written_once_is_fine() {
    for (end, offset) in [(EventType::Ok, Some(0)), (EventType::Info, None)] {
        let mut h = H::default();
        send_retried(&mut h, 0, 0, 1, end, offset);
        h.send_ok(1, 0, 2, 1).final_poll(0, &[(0, 1), (1, 2)]);
        let r = h.check();
        assert_eq!(r.valid, Validity::Valid, "{end:?}: {:?}", r.anomalies);
    }
}

#[test]
fn unexpected() {
    let mut h = H::default();
    h.send_ok(0, 0, 1, 0)
        .poll(1, 0, 0, &[(0, 1), (1, 42)])
        .final_poll(0, &[(0, 1), (1, 42)]);
    let a = only(&h.check(), AnomalyKind::Unexpected).clone();
    assert_eq!((a.offsets, a.values), (vec![1], vec![json!(42)]));
    assert_eq!(a.ops[0].f, "poll");
}

#[test]
fn aborted_read() {
    let mut h = H::default();
    h.send_end(0, 0, 1, EventType::Fail)
        .poll(1, 0, 0, &[(0, 1)])
        .final_poll(0, &[(0, 1)]);
    let a = only(&h.check(), AnomalyKind::AbortedRead).clone();
    assert_eq!((a.offsets, a.values), (vec![0], vec![json!(1)]));
    assert_eq!(
        a.ops.iter().map(|o| o.f.as_str()).collect::<Vec<_>>(),
        vec!["send", "poll"]
    );
}

#[test]
fn uncommitted_read_past_the_high_watermark_of_its_own_answer() {
    let mut h = H::default();
    // The poll says the HW is 1 and returns offset 1 too; the value is committed
    // later at the same offset, so no other check sees it.
    h.send_ok(0, 0, 1, 0)
        .send_ok(0, 0, 2, 1)
        .poll_hw(1, 0, 0, &[(0, 1), (1, 2)], 1)
        .final_poll(0, &[(0, 1), (1, 2)]);
    let r = h.check();
    let a = only(&r, AnomalyKind::UncommittedRead).clone();
    assert_eq!(a.offsets, vec![1]);
    assert_eq!(a.ops[0].f, "poll");
    assert_eq!(kinds(&r), [AnomalyKind::UncommittedRead]);
    // Below the HW it answered with: fine.
    let mut ok = H::default();
    ok.send_ok(0, 0, 1, 0)
        .poll_hw(1, 0, 0, &[(0, 1)], 1)
        .final_poll(0, &[(0, 1)]);
    assert!(ok.check().anomalies.is_empty());
}

#[test]
fn poll_skip() {
    let mut h = H::default();
    h.send_ok(0, 0, 1, 0)
        .send_ok(0, 0, 2, 1)
        .send_ok(0, 0, 3, 2)
        .send_ok(0, 0, 4, 3);
    h.poll(1, 0, 0, &[(1, 2), (3, 4)])
        .final_poll(0, &[(0, 1), (1, 2), (2, 3), (3, 4)]);
    let a = only(&h.check(), AnomalyKind::PollSkip).clone();
    assert_eq!(a.offsets, vec![0, 2]);
    assert_eq!(a.ops[0].invoke, 8);
}

#[test]
fn nonmonotonic_poll() {
    let mut h = H::default();
    h.send_ok(0, 0, 1, 0)
        .send_ok(0, 0, 2, 1)
        .send_ok(0, 0, 3, 2);
    h.poll(1, 0, 1, &[(0, 1), (1, 2), (2, 3)])
        .poll(1, 0, 1, &[(2, 3), (1, 2)]);
    h.final_poll(0, &[(0, 1), (1, 2), (2, 3)]);
    let r = h.check();
    assert_eq!(
        kinds(&r),
        vec![AnomalyKind::NonmonotonicPoll, AnomalyKind::NonmonotonicPoll]
    );
    assert_eq!(
        r.anomalies[0].offsets,
        vec![0],
        "below the offset asked for"
    );
    assert_eq!(r.anomalies[1].offsets, vec![1], "out of order");
}

#[test]
fn nonmonotonic_send() {
    let mut h = H::default();
    h.send_ok(0, 0, 1, 1)
        .send_ok(0, 0, 2, 0)
        .final_poll(0, &[(0, 2), (1, 1)]);
    let a = only(&h.check(), AnomalyKind::NonmonotonicSend).clone();
    assert_eq!(
        (a.offsets, a.values),
        (vec![0, 1], vec![json!(1), json!(2)])
    );
    assert_eq!(a.ops.len(), 2);
}

#[test]
fn an_idempotent_producers_batches_appended_out_of_their_order_are_nonmonotonic() {
    // Producer 7's two batches, in flight at once from two processes: the second
    // (a later sequence) landed before the first.
    let mut h = H::default();
    h.invoke_send(0, 0, 1).invoke_send(1, 0, 2);
    by_producer_ended(&mut h, 1, 2, 0);
    by_producer_ended(&mut h, 0, 1, 1);
    h.final_poll(0, &[(0, 2), (1, 1)]);
    let a = only(&h.check(), AnomalyKind::NonmonotonicSend).clone();
    assert_eq!(
        (a.offsets, a.values),
        (vec![0, 1], vec![json!(1), json!(2)])
    );
    assert!(a.message.contains("idempotent producer 7"), "{}", a.message);
    // In their order: fine; and a worker's own producer reported once, not twice.
    let mut h = H::default();
    h.invoke_send(0, 0, 1).invoke_send(1, 0, 2);
    by_producer_ended(&mut h, 1, 2, 1);
    by_producer_ended(&mut h, 0, 1, 0);
    h.final_poll(0, &[(0, 1), (1, 2)]);
    assert_eq!(h.check().valid, Validity::Valid);
    let mut h = H::default();
    h.invoke_send(0, 0, 1);
    by_producer_ended(&mut h, 0, 1, 1);
    h.invoke_send(0, 0, 2);
    by_producer_ended(&mut h, 0, 2, 0);
    h.final_poll(0, &[(0, 2), (1, 1)]);
    assert_eq!(h.check().anomalies.len(), 1);
}

/// Producer 7's send of `v` by `p` to partition 0 acknowledged at `offset`.
fn by_producer_ended(h: &mut H, p: u64, v: i64, offset: i64) {
    let value = json!({"partition": 0, "value": v, "offset": offset, "producer": 7});
    h.push(p, EventType::Ok, "send", value);
}

fn replica(node: &str, hw: i64, records: &[(i64, i64)]) -> String {
    let recs: Vec<Value> = records
        .iter()
        .map(|(o, v)| json!({"offset": o, "leader_epoch": 1, "key": null, "value": v}))
        .collect();
    let _ = node;
    json!({"topic": "queue", "partition": 0, "log_end_offset": records.len(), "high_watermark": hw, "records": recs})
        .to_string()
}

#[test]
fn replica_divergence_below_the_high_watermark() {
    let mut h = H::default();
    h.send_ok(0, 0, 1, 0)
        .send_ok(0, 0, 2, 1)
        .final_poll(0, &[(0, 1), (1, 2)]);
    let mut logs: Vec<ReplicaLog> = Vec::new();
    logs.extend(parse_final_log("1", &replica("1", 2, &[(0, 1), (1, 2)])).unwrap());
    logs.extend(parse_final_log("2", &replica("2", 2, &[(0, 1), (1, 2)])).unwrap());
    let r = check(&h.events, &logs).unwrap();
    assert_eq!(r.valid, Validity::Valid, "{:#?}", r.anomalies);

    logs.extend(parse_final_log("3", &replica("3", 2, &[(0, 1), (1, 5)])).unwrap());
    let r = check(&h.events, &logs).unwrap();
    let a = only(&r, AnomalyKind::ReplicaDivergence);
    assert_eq!(a.offsets, vec![1]);
    assert!(a.message.contains("node 3 has 5"), "{}", a.message);
}

#[test]
fn replica_logs_stand_in_for_a_missing_final_drain() {
    let mut h = H::default();
    h.send_ok(0, 0, 1, 0).send_ok(0, 0, 2, 1);
    let r = h.check();
    assert_eq!(r.valid, Validity::Unknown, "no final log at all");
    let logs = parse_final_log("1", &replica("1", 1, &[(0, 1), (1, 2)])).unwrap();
    let r = check(&h.events, &logs).unwrap();
    // Offset 1 is above that replica's high watermark: the write was acknowledged
    // but is not committed in the final log.
    assert_eq!(only(&r, AnomalyKind::LostWrite).values, vec![json!(2)]);
}

#[test]
fn malformed_input_is_an_error_not_a_panic() {
    let err = parse_final_log("2", "{\"topic\":\"queue\"}\n").unwrap_err();
    assert_eq!((err.node.as_str(), err.line), ("2", 1));
    let mut h = H::default();
    h.push(0, EventType::Invoke, "send", json!({"value": 1}));
    let err = check(&h.events, &[]).unwrap_err();
    assert!(err.to_string().contains("partition"), "{err}");
}

/// Every replica holds `records` with high watermark `hw`.
fn replicas(nodes: &[&str], hw: i64, records: &[(i64, i64)]) -> Vec<ReplicaLog> {
    nodes
        .iter()
        .flat_map(|n| parse_final_log(n, &replica(n, hw, records)).unwrap())
        .collect()
}

#[test]
fn a_drain_that_stopped_short_of_the_high_watermark_loses_nothing() {
    // The drain read offsets 0 and 1 of a high watermark of 3, then ran out of time.
    let mut h = H::default();
    h.send_ok(0, 0, 1, 0)
        .send_ok(0, 0, 2, 1)
        .send_ok(0, 0, 3, 2);
    h.drain_poll(0, 0, &[(0, 1), (1, 2)], 3);
    // Every replica holds all three: nothing was lost.
    let logs = replicas(&["1", "2", "3"], 3, &[(0, 1), (1, 2), (2, 3)]);
    let r = check(&h.events, &logs).unwrap();
    assert_eq!(r.valid, Validity::Valid, "{:#?}", r.anomalies);
    assert_eq!(r.stats["partitions-drained-partially"], 1);

    // Without replica logs, the missing value is in doubt: unknown, not lost.
    let r = h.check();
    assert_eq!(r.valid, Validity::Unknown, "{:#?}", r.anomalies);
    assert!(
        r.reason.as_deref().unwrap().contains("partial"),
        "{:?}",
        r.reason
    );

    // A value no replica holds is lost although the drain is partial.
    let logs = replicas(&["1", "2"], 3, &[(0, 1), (1, 2), (2, 9)]);
    let mut h2 = H::default();
    h2.send_ok(0, 0, 1, 0)
        .send_ok(0, 0, 2, 1)
        .send_ok(0, 0, 3, 2);
    h2.send_end(1, 0, 9, EventType::Info);
    h2.drain_poll(0, 0, &[(0, 1), (1, 2)], 3);
    let r = check(&h2.events, &logs).unwrap();
    assert_eq!(only(&r, AnomalyKind::LostWrite).values, vec![json!(3)]);
}

/// A partition no final-poll could read (it had no leader that served, the faults
/// all healed): its replicas' logs settle whether a write was lost, but the verdict
/// is at best unknown — nothing shows the cluster serving it again.
#[test]
fn a_partition_the_drain_could_not_read_at_all_is_at_best_unknown() {
    let mut h = H::default();
    h.send_ok(0, 0, 1, 0).send_ok(0, 0, 2, 1);
    for _ in 0..3 {
        let at = json!({"partition": 0, "offset": 0});
        h.push(99, EventType::Invoke, "final-poll", at.clone())
            .push(99, EventType::Fail, "final-poll", at);
    }
    let logs = replicas(&["1", "2"], 2, &[(0, 1), (1, 2)]);
    let r = check(&h.events, &logs).unwrap();
    assert_eq!(r.valid, Validity::Unknown, "{:#?}", r.anomalies);
    let reason = r.reason.unwrap();
    assert!(
        reason.contains("partition 0: none of its 3 final-polls answered"),
        "{reason}"
    );
    // A value no replica holds is lost all the same.
    let logs = replicas(&["1", "2"], 1, &[(0, 1)]);
    let r = check(&h.events, &logs).unwrap();
    assert_eq!(only(&r, AnomalyKind::LostWrite).values, vec![json!(2)]);
}

#[test]
fn a_drain_in_several_polls_that_reached_the_high_watermark_is_complete() {
    // The leader lost offset 2 and answers with high watermark 2: the drain read
    // all of it, in two polls, so the acknowledged value 3 is lost.
    let mut h = H::default();
    h.send_ok(0, 0, 1, 0)
        .send_ok(0, 0, 2, 1)
        .send_ok(0, 0, 3, 2);
    h.drain_poll(0, 0, &[(0, 1)], 2)
        .drain_poll(0, 1, &[(1, 2)], 2);
    let r = h.check();
    assert_eq!(only(&r, AnomalyKind::LostWrite).values, vec![json!(3)]);
    assert_eq!(r.stats["partitions-drained-partially"], 0);
    // A poll that returns nothing below the high watermark it reports leaves the
    // drain partial: in doubt, not lost.
    let mut h = H::default();
    h.send_ok(0, 0, 1, 0)
        .send_ok(0, 0, 2, 1)
        .send_ok(0, 0, 3, 2);
    h.drain_poll(0, 0, &[(0, 1), (1, 2)], 3)
        .drain_poll(0, 2, &[], 3);
    let r = h.check();
    assert_eq!(r.valid, Validity::Unknown, "{:#?}", r.anomalies);
    assert_eq!(r.stats["partitions-drained-partially"], 1);
}

#[test]
fn a_drain_answered_by_a_leader_with_a_lagging_high_watermark_is_partial() {
    // After a leader change the new leader (node 2) still reports high watermark 2,
    // so the drain stopped at offset 2; node 1 committed offset 2 already.
    let mut h = H::default();
    h.send_ok(0, 0, 1, 0)
        .send_ok(0, 0, 2, 1)
        .send_ok(0, 0, 3, 2);
    h.drain_poll(0, 0, &[(0, 1), (1, 2)], 2);
    let mut logs = replicas(&["1"], 3, &[(0, 1), (1, 2), (2, 3)]);
    logs.extend(replicas(&["2"], 2, &[(0, 1), (1, 2), (2, 3)]));
    let r = check(&h.events, &logs).unwrap();
    assert_eq!(r.valid, Validity::Valid, "{:#?}", r.anomalies);
    assert_eq!(r.stats["partitions-drained-partially"], 1);
}

#[test]
fn a_drain_that_does_not_record_the_high_watermark_is_partial() {
    // Histories from before final-polls carried the high watermark.
    let mut h = H::default();
    h.send_ok(0, 0, 1, 0).send_ok(0, 0, 2, 1);
    h.poll_f("final-poll", 99, 0, 0, &[(0, 1)]);
    let r = h.check();
    assert_eq!(r.valid, Validity::Unknown, "{:#?}", r.anomalies);
    let logs = replicas(&["1"], 2, &[(0, 1)]);
    let r = check(&h.events, &logs).unwrap();
    assert_eq!(only(&r, AnomalyKind::LostWrite).values, vec![json!(2)]);
}

#[test]
fn a_lagging_replica_does_not_diverge() {
    let mut h = H::default();
    h.send_ok(0, 0, 1, 0)
        .send_ok(0, 0, 2, 1)
        .final_poll(0, &[(0, 1), (1, 2)]);
    // Node 2 is behind: a shorter log and a lower high watermark.
    let mut logs = replicas(&["1"], 2, &[(0, 1), (1, 2)]);
    logs.extend(replicas(&["2"], 1, &[(0, 1)]));
    // Node 3 holds offset 1 above its high watermark with another value: not
    // committed there, so not a divergence either.
    logs.extend(replicas(&["3"], 1, &[(0, 1), (1, 7)]));
    let r = check(&h.events, &logs).unwrap();
    assert_eq!(r.valid, Validity::Valid, "{:#?}", r.anomalies);

    // KIP-101: both committed their own record at offset 1.
    logs.extend(replicas(&["4"], 2, &[(0, 1), (1, 8)]));
    let r = check(&h.events, &logs).unwrap();
    let a = only(&r, AnomalyKind::ReplicaDivergence);
    assert_eq!(a.offsets, vec![1]);
    assert!(a.message.contains("node 4 has 8"), "{}", a.message);
}

/// A cluster that acknowledged none of its sends lost nothing and promised nothing:
/// the verdict is unknown, not valid (a broker refusing every write must not pass),
/// while one acknowledged send is enough to judge the rest.
#[test]
fn a_history_without_one_acknowledged_send_is_at_best_unknown() {
    let mut h = H::default();
    h.send_end(0, 0, 1, EventType::Fail)
        .send_end(1, 0, 2, EventType::Info)
        .final_poll(0, &[]);
    let r = h.check();
    assert_eq!(r.valid, Validity::Unknown, "{:#?}", r.anomalies);
    let reason = r.reason.unwrap();
    assert!(
        reason.contains("none of the 2 sends was acknowledged"),
        "{reason}"
    );
    let mut h = H::default();
    h.send_end(0, 0, 1, EventType::Fail)
        .send_ok(1, 0, 2, 0)
        .final_poll(0, &[(0, 2)]);
    assert_eq!(h.check().valid, Validity::Valid);
}
