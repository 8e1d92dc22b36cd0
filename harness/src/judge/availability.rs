//! Availability where the system's contract promises it: a pattern of the
//! replication package may declare, in its `plan` event, a stretch in which the
//! partition it aims at must take acks=all writes despite its faults (`available`:
//! a follower cut from its leader past the lag time leaves the ISR, and the leader
//! acknowledges with the rest). Safety checks cannot see a broker that stalls
//! there — nothing it acknowledged is lost, it acknowledges nothing — so this
//! verdict, `availability`, reads the writes to that partition (the queue's sends,
//! the register's writes and compare-and-sets, placed by key): an `unavailable`
//! anomaly when clients kept a write waiting through the stretch and none was
//! acknowledged in it. A stretch in which anything else happened (another
//! fault, its end, a crash, the run's end) is not judged: the promise was made for
//! the script's faults alone. `watermark check` judges a run folder's history the
//! same way, so it agrees with the run.

use std::collections::BTreeMap;

use checker::history::{Event, EventType, Process};
use checker::verdict::{Anomaly, AnomalyKind, CheckerResult, OpRef, Results};
use serde_json::Value;

/// The name of the verdict in results.json.
pub const CHECKER: &str = "availability";
/// How long a send must have waited within the stretch to count as the clients
/// asking (a send the stretch only grazes asks nothing).
const WAITED_NS: u64 = 1_000_000_000;

/// The operations a run must see answered at least once (the workloads' sends,
/// polls, reads and writes ok; a compare-and-set ok or refused by its own
/// precondition — it may rightly fail every time, but not for another reason).
const ANSWERED: &[&str] = &["send", "poll", "read", "write", "cas"];
/// How many times a kind of operation must be asked before never being answered
/// counts.
const MIN_ASKED: u64 = 20;

/// The writes of each workload, by `f`.
const QUEUE_WRITES: &[&str] = &["send"];
const REGISTER_WRITES: &[&str] = &["write", "cas"];

/// Whether `f` names an operation the verdict reads: a write, or one that must
/// be answered at least once.
pub fn reads(f: &str) -> bool {
    QUEUE_WRITES.contains(&f) || REGISTER_WRITES.contains(&f) || ANSWERED.contains(&f)
}

/// Where a workload's writes go.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Workload {
    Queue,
    /// The register's keys, placed among this many partitions.
    Register {
        partitions: u32,
    },
}

/// A stretch a plan declared: the workload's partition and its bounds (ns).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stretch {
    plan: u64,
    workload: Workload,
    partition: i64,
    from: u64,
    to: u64,
}

/// Where a write went: a queue's partition, or a register's key.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    Partition(i64),
    Key(String),
}

/// A write: when it was invoked, where to, and how and when it ended.
#[derive(Debug, Clone)]
struct Write {
    process: u64,
    f: &'static str,
    invoke_index: u64,
    invoke: u64,
    target: Target,
    complete_index: Option<u64>,
    complete: Option<u64>,
    /// How it ended (`ok`, `fail`, `info`; None: never).
    ended: Option<EventType>,
}

impl Write {
    fn ok(&self) -> bool {
        self.ended == Some(EventType::Ok)
    }

    /// Whether it went to the stretch's partition.
    fn to(&self, s: &Stretch) -> bool {
        match (&self.target, s.workload) {
            (Target::Partition(p), Workload::Queue) => *p == s.partition,
            (Target::Key(k), Workload::Register { partitions }) => {
                i64::from(workloads::register::partition_for_key(k, partitions)) == s.partition
            }
            _ => false,
        }
    }
}

/// The stretches the history's plans declare.
fn stretches(events: &[Event]) -> Vec<Stretch> {
    events
        .iter()
        .filter(|e| e.process == Process::Nemesis && e.f == "plan")
        .filter_map(|e| {
            let a = e.value.get("available")?;
            let workload = match a.get("workload")?.as_str()? {
                "queue" => Workload::Queue,
                "register" => Workload::Register {
                    partitions: u32::try_from(a.get("partitions")?.as_u64()?)
                        .ok()
                        .filter(|&n| n > 0)?,
                },
                _ => return None,
            };
            let ms = |k: &str| a.get(k).and_then(Value::as_u64).map(|m| m * 1_000_000);
            Some(Stretch {
                plan: e.index,
                workload,
                partition: a.get("partition")?.as_i64()?,
                from: e.time + ms("from_ms")?,
                to: e.time + ms("to_ms")?,
            })
        })
        .collect()
}

/// Every write of the history, paired by process (a write never completed ends
/// with the history).
fn writes(events: &[Event]) -> Vec<Write> {
    let mut open: BTreeMap<u64, usize> = BTreeMap::new();
    let mut all = Vec::new();
    for e in events {
        let Process::Client(p) = e.process else {
            continue;
        };
        if e.kind == EventType::Invoke {
            open.remove(&p);
            let (f, target) = if let Some(f) = QUEUE_WRITES.iter().find(|f| **f == e.f) {
                let Some(partition) = e.value.get("partition").and_then(Value::as_i64) else {
                    continue;
                };
                (*f, Target::Partition(partition))
            } else if let Some(f) = REGISTER_WRITES.iter().find(|f| **f == e.f) {
                let Some(key) = e.value.get("key").and_then(Value::as_str) else {
                    continue;
                };
                if super::contract::probe(None, e).is_some() {
                    // A probe of the contract, refused as it must be: no write.
                    continue;
                }
                (*f, Target::Key(key.to_string()))
            } else {
                continue;
            };
            open.insert(p, all.len());
            all.push(Write {
                process: p,
                f,
                invoke_index: e.index,
                invoke: e.time,
                target,
                complete_index: None,
                complete: None,
                ended: None,
            });
        } else if let Some(i) = open.remove(&p) {
            let s = &mut all[i];
            s.complete_index = Some(e.index);
            s.complete = Some(e.time);
            s.ended = Some(e.kind);
        }
    }
    all
}

/// The `availability` verdict of a history, or None when it has nothing to say: no
/// plan declared a stretch it could judge, every kind of operation the workloads
/// ask of the system was answered ok at least once, and every partition of the
/// register answered a final read ([`super::final_reads`]).
pub fn judge(events: &[Event]) -> Option<CheckerResult> {
    let (judged, mut anomalies) = judge_stretches(events);
    anomalies.extend(never_answered(events));
    anomalies.extend(super::final_reads::unanswered(events));
    if judged == 0 && anomalies.is_empty() {
        return None;
    }
    let mut result = CheckerResult::from_anomalies(anomalies);
    result.stats = BTreeMap::from([("stretches-judged".to_string(), judged)]);
    Some(result)
}

/// The stretches the plans promised that can be judged: how many, and an anomaly
/// for each in which no write was acknowledged while one waited.
fn judge_stretches(events: &[Event]) -> (u64, Vec<Anomaly>) {
    let stretches = stretches(events);
    if stretches.is_empty() {
        return (0, Vec::new());
    }
    let end = events.last().map_or(0, |e| e.time);
    let others: Vec<u64> = events
        .iter()
        .filter(|e| e.process == Process::Nemesis && e.f != "plan")
        .map(|e| e.time)
        .collect();
    let writes = writes(events);
    let (mut judged, mut anomalies) = (0u64, Vec::new());
    for s in stretches {
        let quiet = !others.iter().any(|&t| t > s.from && t < s.to);
        if !quiet || end < s.to {
            continue;
        }
        judged += 1;
        let to_it: Vec<&Write> = writes.iter().filter(|x| x.to(&s)).collect();
        let acked = to_it
            .iter()
            .any(|x| x.ok() && x.complete.is_some_and(|c| c >= s.from && c <= s.to));
        let waited: Vec<&&Write> = to_it
            .iter()
            .filter(|x| {
                let until = x.complete.unwrap_or(end).min(s.to);
                until.saturating_sub(x.invoke.max(s.from)) >= WAITED_NS
            })
            .collect();
        if !acked && !waited.is_empty() {
            anomalies.push(anomaly(&s, &waited));
        }
    }
    (judged, anomalies)
}

/// Whether a failed compare-and-set was refused by its precondition (the value, or
/// a Maelstrom key that does not exist): the system did evaluate it.
fn refused_by_precondition(e: &Event) -> bool {
    e.f == "cas"
        && e.error.as_deref().is_some_and(|m| {
            let m = m.to_ascii_lowercase();
            m.contains("precondition") || m.contains("key-does-not-exist")
        })
}

/// Operations whose every invocation in the run went unanswered or refused: a
/// system that never once answers a kind of request its clients kept asking loses
/// nothing and misreads nothing, and serves nothing (Jepsen's stats checker fails
/// such a history too). Only kinds asked at least [`MIN_ASKED`] times: a handful of
/// refusals may be the faults' doing.
fn never_answered(events: &[Event]) -> Vec<Anomaly> {
    let mut counts: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for e in events {
        let Process::Client(_) = e.process else {
            continue;
        };
        let Some(f) = ANSWERED.iter().find(|f| **f == e.f) else {
            continue;
        };
        if super::contract::probe(None, e).is_some() {
            continue;
        }
        let (asked, ok) = counts.entry(f).or_default();
        match e.kind {
            EventType::Invoke => *asked += 1,
            EventType::Ok => *ok += 1,
            EventType::Fail if refused_by_precondition(e) => *ok += 1,
            _ => {}
        }
    }
    counts
        .into_iter()
        .filter(|&(_, (asked, ok))| asked >= MIN_ASKED && ok == 0)
        .map(|(f, (asked, _))| {
            Anomaly::new(
                AnomalyKind::Unavailable,
                format!(
                    "not one of the run's {asked} {f} operations was answered ok{}: the system \
                     under test never served them",
                    if f == "cas" {
                        " or refused by its precondition"
                    } else {
                        ""
                    }
                ),
            )
        })
        .collect()
}

/// Add the `availability` verdict of `events` to `results` (if a plan declared a
/// stretch it can judge), folding the run's validity again.
pub fn add_verdict(results: &mut Results, events: &[Event]) {
    if let Some(verdict) = judge(events) {
        results.insert(CHECKER, verdict);
    }
}

fn anomaly(s: &Stretch, waited: &[&&Write]) -> Anomaly {
    let secs = |t: u64| t as f64 / 1e9;
    let (topic, writes) = match s.workload {
        Workload::Queue => ("queue", "send"),
        Workload::Register { .. } => ("register", "write"),
    };
    let message = format!(
        "partition {} of the {topic} acknowledged no {writes} from {:.3} s to {:.3} s into the \
         run, where the plan at index {} promised it would take writes; {} waited there",
        s.partition,
        secs(s.from),
        secs(s.to),
        s.plan,
        waited.len()
    );
    let mut a = Anomaly::new(AnomalyKind::Unavailable, message);
    a.partition = Some(s.partition);
    a.ops = waited
        .iter()
        .take(6)
        .map(|x| OpRef {
            invoke: x.invoke_index,
            complete: x.complete_index,
            process: x.process,
            f: x.f.to_string(),
            text: format!(
                "{} to {} → {}",
                x.f,
                match &x.target {
                    Target::Partition(p) => format!("partition {p}"),
                    Target::Key(k) => format!("key {k}"),
                },
                match (x.ended, x.complete) {
                    (Some(kind), Some(c)) => format!("{kind} {:.3} s into the run", secs(c)),
                    _ => "never ended".to_string(),
                }
            ),
        })
        .collect();
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use checker::verdict::Validity;
    use serde_json::json;

    /// An event `ms` into the run (indices are set by [`ordered`]).
    fn ev(ms: u64, process: Process, kind: EventType, f: &str, value: Value) -> Event {
        Event {
            index: 0,
            time: ms * 1_000_000,
            process,
            kind,
            f: f.to_string(),
            value,
            error: None,
        }
    }

    /// A nemesis mark or fault `ms` into the run.
    fn nemesis(ms: u64, f: &str, value: Value) -> Event {
        ev(ms, Process::Nemesis, EventType::Info, f, value)
    }

    /// The events in time order, indexed.
    fn ordered(mut events: Vec<Event>) -> Vec<Event> {
        events.sort_by_key(|e| e.time);
        for (i, e) in events.iter_mut().enumerate() {
            e.index = i as u64;
        }
        events
    }

    /// A plan at 1 s promising `workload`'s partition 0 from 4 s to 7 s, its cut at
    /// once, a heal at 8 s, and a poll at 10 s, the run's end.
    fn around(workload: Value) -> Vec<Event> {
        let mut available = json!({"partition": 0, "from_ms": 3000, "to_ms": 6000});
        for (k, v) in workload.as_object().unwrap() {
            available[k] = v.clone();
        }
        vec![
            nemesis(1000, "plan", json!({"available": available})),
            nemesis(1001, "start", json!({"shape": "cut-follower"})),
            nemesis(8000, "stop", json!({"shape": "cut-follower"})),
            ev(
                10_000,
                Process::Client(99),
                EventType::Invoke,
                "poll",
                json!({}),
            ),
        ]
    }

    /// [`around`] the queue, with sends to partition 0: (process, invoked, ended, how).
    fn history(sends: &[(u64, u64, u64, EventType)]) -> Vec<Event> {
        let mut events = around(json!({"workload": "queue"}));
        for &(p, from, to, kind) in sends {
            let v = json!({"partition": 0, "value": p});
            events.push(ev(
                from,
                Process::Client(p),
                EventType::Invoke,
                "send",
                v.clone(),
            ));
            events.push(ev(to, Process::Client(p), kind, "send", v));
        }
        ordered(events)
    }

    #[test]
    fn a_partition_that_acknowledges_in_the_stretch_is_available() {
        let h = history(&[
            (1, 2000, 4500, EventType::Info),
            (2, 4600, 4610, EventType::Ok),
        ]);
        let r = judge(&h).expect("a stretch judged");
        assert_eq!(r.valid, Validity::Valid, "{:?}", r.anomalies);
    }

    #[test]
    fn sends_that_wait_through_the_stretch_unacknowledged_are_unavailable() {
        let h = history(&[
            (1, 2000, 5000, EventType::Info),
            (2, 5000, 8500, EventType::Ok),
        ]);
        let r = judge(&h).expect("a stretch judged");
        assert_eq!(r.valid, Validity::Invalid);
        assert_eq!(r.anomalies[0].kind, AnomalyKind::Unavailable);
        assert_eq!(r.anomalies[0].ops.len(), 2);
    }

    #[test]
    fn the_registers_writes_are_placed_by_key() {
        let partition = |k: &str| workloads::register::partition_for_key(k, 2);
        let keys = ["k0", "k1", "k2", "k3"];
        let k_in = *keys.iter().find(|k| partition(k) == 0).unwrap();
        let k_out = *keys.iter().find(|k| partition(k) == 1).unwrap();
        let mut h = around(json!({"workload": "register", "partitions": 2}));
        let (w, c) = (Process::Client(1), Process::Client(2));
        let write = json!({"key": k_in, "value": 1});
        let cas = json!({"key": k_out, "value": [1, 2]});
        h.push(ev(2000, w, EventType::Invoke, "write", write.clone()));
        h.push(ev(5000, c, EventType::Invoke, "cas", cas.clone()));
        h.push(ev(5001, c, EventType::Ok, "cas", cas));
        // The other partition's write does not count: unavailable.
        let r = judge(&ordered(h.clone())).expect("a stretch judged");
        assert_eq!(r.valid, Validity::Invalid, "{:?}", r.anomalies);
        assert!(r.anomalies[0].message.contains("register"));
        // One to a key of partition 0 acknowledged in the stretch: available.
        h.push(ev(5002, w, EventType::Ok, "write", write));
        assert_eq!(judge(&ordered(h)).unwrap().valid, Validity::Valid);
    }

    #[test]
    fn a_kind_of_operation_never_answered_ok_is_unavailable() {
        let read = |ms: u64, p: u64, kind: EventType| {
            ev(ms, Process::Client(p), kind, "read", json!({"key": "k1"}))
        };
        let mut h: Vec<Event> = (0..MIN_ASKED)
            .flat_map(|p| {
                [
                    read(p * 10, p, EventType::Invoke),
                    read(p * 10 + 5, p, EventType::Info),
                ]
            })
            .collect();
        let r = judge(&ordered(h.clone())).expect("a verdict");
        assert_eq!(r.valid, Validity::Invalid);
        assert!(
            r.anomalies[0].message.contains("20 read operations"),
            "{:?}",
            r.anomalies
        );
        // One answered: served.
        h.push(read(1000, 99, EventType::Invoke));
        h.push(read(1001, 99, EventType::Ok));
        assert!(judge(&ordered(h)).is_none());
        // Fewer asked than the bound: the faults' doing, maybe.
        let h: Vec<Event> = (0..MIN_ASKED - 1)
            .flat_map(|p| {
                [
                    read(p * 10, p, EventType::Invoke),
                    read(p * 10 + 5, p, EventType::Fail),
                ]
            })
            .collect();
        assert!(judge(&ordered(h)).is_none());
    }

    /// A compare-and-set that only ever fails its precondition was served; one
    /// refused every time for another reason was not.
    #[test]
    fn a_compare_and_set_never_evaluated_is_unavailable() {
        let cas = |p: u64, error: &str| {
            let v = json!({"key": "k1", "value": [1, 2]});
            let mut done = ev(
                p * 10 + 5,
                Process::Client(p),
                EventType::Fail,
                "cas",
                v.clone(),
            );
            done.error = Some(error.to_string());
            [
                ev(p * 10, Process::Client(p), EventType::Invoke, "cas", v),
                done,
            ]
        };
        let refused: Vec<Event> = (0..MIN_ASKED)
            .flat_map(|p| cas(p, "INVALID_REQUEST: `if_value` needs exactly one record"))
            .collect();
        let r = judge(&ordered(refused.clone())).expect("a verdict");
        assert_eq!(r.valid, Validity::Invalid);
        assert!(
            r.anomalies[0].message.contains("20 cas operations"),
            "{:?}",
            r.anomalies
        );
        let mut h = refused;
        h.extend(cas(99, "PRECONDITION_FAILED: key `k1` holds 3, not 1"));
        assert!(judge(&ordered(h)).is_none());
        let maelstrom: Vec<Event> = (0..MIN_ASKED)
            .flat_map(|p| cas(p, "error 22 (precondition-failed): expected 1"))
            .collect();
        assert!(judge(&ordered(maelstrom)).is_none());
    }

    #[test]
    fn a_stretch_nobody_wrote_in_or_where_another_fault_came_is_not_judged() {
        // Nobody waited a second in it: nothing asked, nothing judged wrong.
        let h = history(&[(1, 6500, 6900, EventType::Info)]);
        assert_eq!(judge(&h).unwrap().valid, Validity::Valid);
        // A kill inside the stretch: the promise was for the cut alone.
        let mut h = history(&[(1, 2000, 8500, EventType::Info)]);
        h.push(nemesis(5000, "kill", json!(3)));
        assert!(judge(&ordered(h)).is_none());
        // No plan declared any stretch.
        let h: Vec<Event> = history(&[(1, 2000, 8500, EventType::Info)])
            .into_iter()
            .filter(|e| e.f != "plan")
            .collect();
        assert!(judge(&h).is_none());
    }
}
