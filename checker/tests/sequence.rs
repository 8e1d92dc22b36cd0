//! out-of-sequence: an idempotent producer's next batch refused by a leader no
//! older than those that acknowledged the batches before it is found; a refusal
//! by a deposed leader, after a batch in doubt, or while one ahead was pending
//! is not.

use checker::history::{Event, EventType, Process};
use checker::queue::check;
use checker::verdict::{AnomalyKind, CheckerResult, Validity};
use serde_json::{Value, json};

const REFUSED: &str =
    "OUT_OF_ORDER_SEQUENCE_NUMBER: queue-0: the producer's next sequence is 9, not 2";

/// Builds a one-partition history event by event; every acknowledged value is
/// in the log, in the order acknowledged.
#[derive(Default)]
struct H {
    events: Vec<Event>,
    log: Vec<i64>,
}

impl H {
    fn push(&mut self, p: u64, kind: EventType, f: &str, value: Value, error: &str) -> &mut Self {
        let index = self.events.len() as u64;
        self.events.push(Event {
            index,
            time: index * 1000,
            process: Process::Client(p),
            kind,
            f: f.into(),
            value,
            error: (!error.is_empty()).then(|| error.to_string()),
        });
        self
    }
    fn invoke(&mut self, p: u64, v: i64) -> &mut Self {
        self.push(
            p,
            EventType::Invoke,
            "send",
            json!({"partition": 0, "value": v}),
            "",
        )
    }
    /// Producer `id`'s send of `v` by `p` ends `end`, answered by the leader of
    /// `epoch` (`ok`: at the log's next offset; otherwise refused as out of
    /// sequence).
    fn end(&mut self, p: u64, v: i64, end: EventType, id: i64, epoch: Option<i64>) -> &mut Self {
        let error = if end == EventType::Ok { "" } else { REFUSED };
        self.ended(p, v, end, id, epoch, error)
    }
    fn ended(
        &mut self,
        p: u64,
        v: i64,
        end: EventType,
        id: i64,
        epoch: Option<i64>,
        error: &str,
    ) -> &mut Self {
        let mut value = json!({"partition": 0, "value": v, "producer": id});
        if let Some(e) = epoch {
            value["leader_epoch"] = json!(e);
        }
        if end == EventType::Ok {
            value["offset"] = json!(self.log.len());
            self.log.push(v);
        }
        self.push(p, end, "send", value, error)
    }
    /// Producer `id`'s send of `v` (by process `v`), invoked and ended at once.
    fn send(&mut self, v: i64, end: EventType, id: i64, epoch: Option<i64>) -> &mut Self {
        self.invoke(v as u64, v).end(v as u64, v, end, id, epoch)
    }
    /// The final drain, reading the log, and the verdict.
    fn drained(&mut self) -> CheckerResult {
        let records: Vec<Value> = self
            .log
            .iter()
            .enumerate()
            .map(|(o, v)| json!([o, v]))
            .collect();
        let n = records.len();
        let answer = json!({"partition": 0, "records": records, "high_watermark": n});
        let at = json!({"partition": 0, "offset": 0});
        self.push(99, EventType::Invoke, "final-poll", at, "").push(
            99,
            EventType::Ok,
            "final-poll",
            answer,
            "",
        );
        check(&self.events, &[]).expect("a well-formed history")
    }
}

fn found(r: &CheckerResult) -> Vec<AnomalyKind> {
    r.anomalies.iter().map(|a| a.kind).collect()
}

/// The one anomaly of an invalid verdict, an out-of-sequence one.
fn only_out_of_sequence(r: &CheckerResult) -> &checker::verdict::Anomaly {
    assert_eq!(found(r), [AnomalyKind::OutOfSequence], "{:#?}", r.anomalies);
    assert_eq!(r.valid, Validity::Invalid);
    &r.anomalies[0]
}

#[test]
fn the_next_batch_refused_by_a_leader_no_older_than_the_acknowledging_ones_is_found() {
    for refusing_epoch in [3, 5] {
        let mut h = H::default();
        h.send(1, EventType::Ok, 7, Some(2))
            .send(2, EventType::Ok, 7, Some(3))
            .send(3, EventType::Fail, 7, Some(refusing_epoch))
            // Its next batch: refused too, reported once.
            .send(4, EventType::Fail, 7, Some(refusing_epoch));
        let r = h.drained();
        let a = only_out_of_sequence(&r);
        assert_eq!(a.values, [json!(3)]);
        for part in [
            "producer 7's".to_string(),
            format!("leader of epoch {refusing_epoch}"),
            "epochs up to 3".to_string(),
        ] {
            assert!(a.message.contains(&part), "{part}: {}", a.message);
        }
        assert!(!a.message.contains("  "), "{}", a.message);
        // The last acknowledged batch, then the refused one.
        assert_eq!(a.ops.len(), 2, "{:?}", a.ops);
        assert!(a.ops[1].text.contains("OUT_OF_ORDER"), "{}", a.ops[1].text);
    }
    // The producer's very first batch to the partition refused: the same.
    let mut h = H::default();
    h.send(1, EventType::Ok, 8, Some(1))
        .send(2, EventType::Fail, 7, Some(1));
    let r = h.drained();
    assert!(only_out_of_sequence(&r).message.contains("first batch"));
}

#[test]
fn a_refusal_by_a_deposed_leader_is_fine() {
    // Acknowledged in epoch 4 by the new leader; the old one, cut off and still
    // in epoch 3, refuses the next batch: it never had the acknowledged one.
    let mut h = H::default();
    h.send(1, EventType::Ok, 7, Some(4))
        .send(2, EventType::Fail, 7, Some(3));
    let r = h.drained();
    assert_eq!(r.valid, Validity::Valid, "{:#?}", r.anomalies);
}

#[test]
fn a_refusal_after_a_batch_in_doubt_failed_or_pending_is_fine() {
    // The batch ahead failed or is in doubt: the leader may expect either.
    for (end, error) in [
        (EventType::Fail, "NOT_LEADER_OR_FOLLOWER"),
        (EventType::Info, "timed out"),
    ] {
        let mut h = H::default();
        h.send(9, EventType::Ok, 8, Some(1))
            .invoke(1, 1)
            .ended(1, 1, end, 7, None, error)
            .send(2, EventType::Fail, 7, Some(1));
        let r = h.drained();
        assert_eq!(r.valid, Validity::Valid, "{end:?}: {:#?}", r.anomalies);
    }
    // The batch ahead ended ok only after the refusal ended.
    let mut h = H::default();
    h.invoke(1, 1)
        .send(2, EventType::Fail, 7, Some(1))
        .end(1, 1, EventType::Ok, 7, Some(1));
    let r = h.drained();
    assert_eq!(r.valid, Validity::Valid, "{:#?}", r.anomalies);
    // A refusal of an attempt in doubt before is refused-duplicate's business.
    let mut h = H::default();
    h.send(1, EventType::Ok, 7, Some(1)).invoke(2, 2).ended(
        2,
        2,
        EventType::Info,
        7,
        Some(1),
        REFUSED,
    );
    let r = h.drained();
    assert_eq!(r.valid, Validity::Valid, "{:#?}", r.anomalies);
}

#[test]
fn without_the_epochs_or_with_a_send_never_ended_nothing_is_judged() {
    // A history recorded without leader epochs (refusal or acknowledgement).
    for (acked, refusing) in [(None, Some(1)), (Some(1), None)] {
        let mut h = H::default();
        h.send(1, EventType::Ok, 7, acked)
            .send(2, EventType::Fail, 7, refusing);
        let r = h.drained();
        assert_eq!(r.valid, Validity::Valid, "{:#?}", r.anomalies);
    }
    // A send to the partition that never ended may have been the producer's.
    let mut h = H::default();
    h.send(1, EventType::Ok, 7, Some(1))
        .invoke(5, 5)
        .send(2, EventType::Fail, 7, Some(1));
    let r = h.drained();
    assert!(
        !found(&r).contains(&AnomalyKind::OutOfSequence),
        "{:#?}",
        r.anomalies
    );
}
