//! The register's final reads, judged for availability: once the cluster has
//! healed and converged, the register reads every key written once more (reads
//! whose value says `"final": true`, and the key's partition), each partition's by
//! one process — and a campaign does so twice, before and after it moves
//! leadership, each time by other processes. A partition that answered none of one
//! process's final reads while they were asked for [`ASKED_FOR_NS`] or more is
//! `unavailable`: nothing excuses a whole, converged cluster — a broker that makes
//! every linearizable read wait until it times out loses nothing and misreads
//! nothing, so no safety check sees it, and a run that also answered a read now and
//! then during its faults is not caught by "never answered" either.

use std::collections::BTreeMap;

use checker::history::{Event, EventType, Process};
use checker::verdict::{Anomaly, AnomalyKind, OpRef};
use serde_json::Value;
use workloads::register::FINAL_FIELD;
use workloads::register::final_reads::PARTITION_STALL;

/// How long a partition's final reads must have been asked, from the first
/// invocation to the last completion, all unanswered, to count: half the time the
/// register gives a partition before it gives up (5 s), so a partition given up
/// at once (the final step's deadline) says nothing.
const ASKED_FOR_NS: u64 = PARTITION_STALL.as_nanos() as u64 / 2;

/// One partition's final reads: when asked first and ended last, how many answered,
/// and the unanswered ones.
#[derive(Default)]
struct Partition {
    first: Option<u64>,
    last: u64,
    answered: u64,
    unanswered: Vec<OpRef>,
}

/// Whether `e` is one of the register's final reads.
fn is_final_read(e: &Event) -> bool {
    matches!(e.process, Process::Client(_))
        && e.f == "read"
        && e.value.get(FINAL_FIELD).and_then(Value::as_bool) == Some(true)
}

/// An `unavailable` anomaly per partition none of whose final reads by one process
/// (one round of them) was answered.
pub(super) fn unanswered(events: &[Event]) -> Vec<Anomaly> {
    let mut partitions: BTreeMap<(i64, u64), Partition> = BTreeMap::new();
    let mut open: BTreeMap<u64, u64> = BTreeMap::new();
    for e in events.iter().filter(|e| is_final_read(e)) {
        let (Process::Client(p), Some(partition)) =
            (e.process, e.value.get("partition").and_then(Value::as_i64))
        else {
            continue;
        };
        let part = partitions.entry((partition, p)).or_default();
        match e.kind {
            EventType::Invoke => {
                part.first.get_or_insert(e.time);
                open.insert(p, e.index);
            }
            kind => {
                part.last = part.last.max(e.time);
                let invoke = open.remove(&p).unwrap_or(e.index);
                if kind == EventType::Ok {
                    part.answered += 1;
                } else {
                    let why = e.error.clone().unwrap_or_else(|| kind.to_string());
                    part.unanswered.push(OpRef {
                        invoke,
                        complete: Some(e.index),
                        process: p,
                        f: e.f.clone(),
                        text: format!("final read → {why}"),
                    });
                }
            }
        }
    }
    partitions
        .into_iter()
        .filter(|(_, part)| {
            part.answered == 0
                && part
                    .first
                    .is_some_and(|first| part.last.saturating_sub(first) >= ASKED_FOR_NS)
        })
        .map(|((partition, _), part)| anomaly(partition, &part))
        .collect()
}

fn anomaly(partition: i64, part: &Partition) -> Anomaly {
    let secs = part.last.saturating_sub(part.first.unwrap_or(0)) as f64 / 1e9;
    let message = format!(
        "partition {partition} of the register answered none of its {} final reads in {secs:.1} s, \
         asked once the cluster had healed and converged",
        part.unanswered.len()
    );
    let mut a = Anomaly::new(AnomalyKind::Unavailable, message);
    a.partition = Some(partition);
    a.ops = part.unanswered.iter().take(6).cloned().collect();
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A final read of `key` in partition `partition` by `process` from `from_ms`
    /// to `to_ms`, answered or refused.
    fn read(process: u64, partition: i64, from_ms: u64, to_ms: u64, ok: bool) -> [Event; 2] {
        let ev = |ms: u64, kind: EventType, error: Option<String>| Event {
            index: 0,
            time: ms * 1_000_000,
            process: Process::Client(process),
            kind,
            f: "read".to_string(),
            value: json!({"key": "k1", "partition": partition, "final": true}),
            error,
        };
        let end = if ok {
            ev(to_ms, EventType::Ok, None)
        } else {
            ev(to_ms, EventType::Fail, Some("REQUEST_TIMED_OUT".into()))
        };
        [ev(from_ms, EventType::Invoke, None), end]
    }

    fn indexed(events: Vec<Event>) -> Vec<Event> {
        let mut events = events;
        events.sort_by_key(|e| e.time);
        for (i, e) in events.iter_mut().enumerate() {
            e.index = i as u64;
        }
        events
    }

    #[test]
    fn a_partition_whose_final_reads_all_went_unanswered_for_long_is_unavailable() {
        let mut events = Vec::new();
        // Partition 0 refuses three reads over 9 s; partition 1 answers after a refusal.
        for (from, to) in [(0, 3000), (3200, 6200), (6400, 9400)] {
            events.extend(read(10, 0, from, to, false));
        }
        events.extend(read(11, 1, 0, 100, false));
        events.extend(read(11, 1, 300, 310, true));
        let found = unanswered(&indexed(events));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, AnomalyKind::Unavailable);
        assert_eq!(found[0].partition, Some(0));
        assert_eq!(found[0].ops.len(), 3);
        assert!(found[0].message.contains("none of its 3 final reads"));
        assert!(found[0].ops[0].text.contains("REQUEST_TIMED_OUT"));
    }

    /// Two rounds of final reads, by two processes: a round answered does not hide
    /// one that went unanswered.
    #[test]
    fn each_round_of_final_reads_is_judged_on_its_own() {
        let mut events = Vec::new();
        for (from, to) in [(0, 3000), (3200, 6200)] {
            events.extend(read(10, 1, from, to, false));
        }
        events.extend(read(14, 1, 7000, 7010, true));
        let found = unanswered(&indexed(events));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].partition, Some(1));
        assert!(found[0].message.contains("none of its 2 final reads"));
    }

    #[test]
    fn refusals_over_a_short_time_or_reads_that_are_not_final_say_nothing() {
        // Given up within 5 s: the final step's deadline, not the cluster.
        let mut events: Vec<Event> = read(10, 0, 0, 3000, false).into();
        // Not final: a read of the run, refused for 9 s.
        let mut run: Vec<Event> = read(12, 1, 0, 9000, false).into();
        for e in &mut run {
            e.value = json!({"key": "k2"});
        }
        events.extend(run);
        assert!(unanswered(&indexed(events)).is_empty());
    }
}
