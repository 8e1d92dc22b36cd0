//! The broker's answers judged against its API's contract (docs/api.md): the
//! workloads build requests the contract allows — 1 to 10,000 records a produce,
//! 1 to 10,000 asked for a consume, an offset no further than the high watermark
//! —, now and then at exactly its limits, and rarely one over them, so an answer
//! the contract does not allow is the broker's own mistake whatever the faults
//! did. Nothing is lost by it, which is why no other check sees it: a producer
//! gives up on a record it could have written, a consumer asks again. Three
//! answers are judged, each a `contract-violation` anomaly of the verdict
//! `contract`:
//!
//! - `INVALID_REQUEST` answered to a request within the limits;
//! - `ok` answered to one over them: a send of a batch of more than 10,000 records
//!   (its completion's `batch`), a poll asking for more than 10,000 (its
//!   invocation's `max_records`), a compare-and-set the contract refuses (its
//!   invocation's `probe`: of two records, or to another partition than its key's);
//! - `OFFSET_OUT_OF_RANGE` answered to a poll at an offset no higher than the high
//!   watermark the refusal itself carries (a consume at the high watermark is
//!   answered with no records, only one above it refused).
//!
//! Like [`super::availability`], it reads the history alone, so `watermark check`
//! judges a run folder as the run did.

use std::collections::BTreeMap;

use checker::history::{Event, EventType, Process};
use checker::verdict::{Anomaly, AnomalyKind, CheckerResult, OpRef, Results};
use serde_json::Value;
use workloads::api::MAX_RECORDS;
use workloads::register::{PROBE_FIELD, Probe};

/// The name of the verdict in results.json.
pub const CHECKER: &str = "contract";

/// The reads whose refusal past the end is judged.
const READS: [&str; 2] = ["poll", "final-poll"];

/// Which answer the contract does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rule {
    /// `INVALID_REQUEST` to a request built within the documented limits.
    Invalid,
    /// `ok` to a request over them.
    OverTheLimits,
    /// `OFFSET_OUT_OF_RANGE` at an offset no higher than the refusal's own HW.
    NotPastTheEnd,
}

/// The first answer of a kind of operation against one rule, and how many there were.
struct Found<'a> {
    invoke: Option<&'a Event>,
    completion: &'a Event,
    count: u64,
}

/// Whether the verdict reads operations named `f`: the broker workloads' (so
/// `watermark check` keeps them: an `ok` read's value it may drop, never an
/// invocation's or a refusal's).
pub fn reads(f: &str) -> bool {
    workloads::queue::OPERATIONS.contains(&f) || workloads::register::OPERATIONS.contains(&f)
}

/// The `contract` verdict of a history, or None if no answer breaks the contract.
pub fn judge(events: &[Event]) -> Option<CheckerResult> {
    let mut open: BTreeMap<u64, &Event> = BTreeMap::new();
    let mut found: BTreeMap<(&str, Rule), Found> = BTreeMap::new();
    for e in events {
        let Process::Client(p) = e.process else {
            continue;
        };
        if e.kind == EventType::Invoke {
            open.insert(p, e);
            continue;
        }
        let invoke = open.remove(&p);
        let Some(rule) = broken(invoke, e) else {
            continue;
        };
        found
            .entry((e.f.as_str(), rule))
            .and_modify(|f| f.count += 1)
            .or_insert(Found {
                invoke,
                completion: e,
                count: 1,
            });
    }
    if found.is_empty() {
        return None;
    }
    let answers = found.values().map(|f| f.count).sum();
    let anomalies = found
        .iter()
        .map(|(&(f, rule), x)| anomaly(f, rule, x))
        .collect();
    let mut result = CheckerResult::from_anomalies(anomalies);
    result.stats = BTreeMap::from([("answers_against_contract".to_string(), answers)]);
    Some(result)
}

/// Add the `contract` verdict of `events` to `results` (if an answer breaks the
/// contract), folding the run's validity again.
pub fn add_verdict(results: &mut Results, events: &[Event]) {
    if let Some(verdict) = judge(events) {
        results.insert(CHECKER, verdict);
    }
}

/// Whether a request asked beyond the API's limits: a send of a batch over the
/// maximum of records (its completion's `batch`), a poll asking for none or more
/// than the maximum (its invocation's `max_records`), a compare-and-set probe.
fn over_the_limits(invoke: Option<&Event>, e: &Event) -> bool {
    let over = |v: &Value, field| {
        v.get(field)
            .and_then(Value::as_u64)
            .is_some_and(|n| n == 0 || n > u64::from(MAX_RECORDS))
    };
    over(&e.value, "batch")
        || invoke.is_some_and(|i| over(&i.value, "max_records"))
        || probe(invoke, e).is_some()
}

/// The kind of contract probe a compare-and-set was (its invocation's `probe`,
/// which its completion repeats), if it was one.
pub fn probe<'a>(invoke: Option<&'a Event>, e: &'a Event) -> Option<&'a str> {
    let of = |v: &'a Value| v.get(PROBE_FIELD).and_then(Value::as_str);
    invoke.and_then(|i| of(&i.value)).or_else(|| of(&e.value))
}

/// The rule a completion (of the invocation `invoke`) breaks, if any.
fn broken(invoke: Option<&Event>, e: &Event) -> Option<Rule> {
    if !reads(&e.f) {
        return None;
    }
    let over = over_the_limits(invoke, e);
    if e.kind == EventType::Ok {
        return over.then_some(Rule::OverTheLimits);
    }
    let error = e.error.as_deref()?;
    if error.starts_with("INVALID_REQUEST") {
        return (!over).then_some(Rule::Invalid);
    }
    let number = |field| e.value.get(field).and_then(Value::as_u64);
    let not_past = match (number("offset"), number("high_watermark")) {
        (Some(offset), Some(hw)) => offset <= hw,
        _ => false,
    };
    (e.kind == EventType::Fail
        && READS.contains(&e.f.as_str())
        && error.starts_with("OFFSET_OUT_OF_RANGE")
        && not_past)
        .then_some(Rule::NotPastTheEnd)
}

/// What an operation answered ok asked for: a send's completion (it carries the
/// batch's size), a poll's invocation (its answer holds the records read).
fn asked(x: &Found) -> Value {
    match (x.completion.value.get("batch"), x.invoke) {
        (None, Some(invoke)) => invoke.value.clone(),
        _ => x.completion.value.clone(),
    }
}

/// What a probe of `kind` asked, in words.
fn probe_text(kind: &str) -> String {
    Probe::named(kind).map_or_else(|| format!("the probe `{kind}`"), |p| p.asks().to_string())
}

fn anomaly(f: &str, rule: Rule, x: &Found) -> Anomaly {
    let e = x.completion;
    let error = e.error.as_deref().unwrap_or_default();
    let at = format!("{:.3} s into the run", e.time as f64 / 1e9);
    let times = match x.count {
        1 => String::new(),
        n => format!(" ({n} such answers to a `{f}`; the first shown)"),
    };
    let message = match rule {
        Rule::Invalid => format!(
            "a `{f}` the API's contract allows was refused as an invalid request {at}: \
             {error}{times}"
        ),
        Rule::OverTheLimits => match probe(x.invoke, e) {
            Some(kind) => format!(
                "a `{f}` the contract refuses ({}) was answered ok {at}, where it must be \
                 refused as an invalid request: {}{times}",
                probe_text(kind),
                asked(x)
            ),
            None => format!(
                "a `{f}` over the API's limit of {MAX_RECORDS} records was answered ok {at}, \
                 where the contract refuses it as an invalid request: {}{times}",
                asked(x)
            ),
        },
        Rule::NotPastTheEnd => format!(
            "a `{f}` at offset {} was refused as past the high watermark {at}, though \
             the refusal gives the high watermark as {}: an offset up to it is served \
             ({error}){times}",
            e.value["offset"], e.value["high_watermark"]
        ),
    };
    let mut a = Anomaly::new(AnomalyKind::ContractViolation, message);
    a.partition = e.value.get("partition").and_then(Value::as_i64);
    a.offsets
        .extend(e.value.get("offset").and_then(Value::as_i64));
    if let (Some(invoke), Process::Client(process)) = (x.invoke, e.process) {
        a.ops.push(OpRef {
            invoke: invoke.index,
            complete: Some(e.index),
            process,
            f: f.to_string(),
            text: match error {
                "" => format!("{f} {} → ok", asked(x)),
                _ => format!("{f} {} → {error}", e.value),
            },
        });
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use checker::verdict::Validity;
    use serde_json::json;

    fn event(index: u64, process: u64, kind: EventType, f: &str, value: Value) -> Event {
        Event {
            index,
            time: index * 1_000_000,
            process: Process::Client(process),
            kind,
            f: f.into(),
            value,
            error: None,
        }
    }

    fn refused(index: u64, process: u64, f: &str, value: Value, error: &str) -> [Event; 2] {
        let invoke = event(index, process, EventType::Invoke, f, value.clone());
        let mut fail = event(index + 1, process, EventType::Fail, f, value);
        fail.error = Some(error.into());
        [invoke, fail]
    }

    #[test]
    fn an_invalid_request_refusal_of_any_operation_breaks_the_contract() {
        let mut h = Vec::new();
        h.extend(refused(
            0,
            4,
            "send",
            json!({"partition": 1, "value": 9}),
            "INVALID_REQUEST: `records` must hold 1 to 10000 records, got 10000",
        ));
        h.extend(refused(
            2,
            5,
            "send",
            json!({"partition": 0, "value": 10}),
            "INVALID_REQUEST: `records` must hold 1 to 10000 records, got 10000",
        ));
        h.extend(refused(
            4,
            6,
            "poll",
            json!({"partition": 0, "offset": 3}),
            "INVALID_REQUEST: `max_records` must be 1 to 10000, got 10000",
        ));
        let r = judge(&h).unwrap();
        assert_eq!(r.valid, Validity::Invalid);
        assert_eq!(r.anomalies.len(), 2, "one per kind of operation");
        assert_eq!(r.stats["answers_against_contract"], 3);
        let send = r.anomalies.iter().find(|a| a.ops[0].f == "send").unwrap();
        assert_eq!(send.kind, AnomalyKind::ContractViolation);
        assert_eq!((send.ops[0].invoke, send.ops[0].complete), (0, Some(1)));
        assert_eq!(send.partition, Some(1));
        assert!(send.message.contains("2 such answers"), "{}", send.message);
    }

    #[test]
    fn a_cas_probe_must_be_refused_as_invalid() {
        for (kind, words) in [
            ("two-records", "with two records"),
            ("other-partition", "another partition"),
        ] {
            let probe = json!({"key": "k3", "value": [null, 17], "probe": kind});
            let refusal = refused(
                0,
                3,
                "cas",
                probe.clone(),
                "INVALID_REQUEST: `if_value` needs exactly one record, with a key",
            );
            assert!(judge(&refusal).is_none(), "{kind}: rightly refused");
            // Refused otherwise (the controller out of reach), nothing to judge.
            let timed_out = refused(0, 3, "cas", probe.clone(), "REQUEST_TIMED_OUT: …");
            assert!(judge(&timed_out).is_none(), "{kind}");
            let taken = [
                event(0, 3, EventType::Invoke, "cas", probe.clone()),
                event(1, 3, EventType::Ok, "cas", probe.clone()),
            ];
            let r = judge(&taken).unwrap();
            assert_eq!(r.valid, Validity::Invalid);
            let a = &r.anomalies[0];
            assert_eq!(a.kind, AnomalyKind::ContractViolation);
            assert!(a.message.contains(words), "{}", a.message);
            assert!(a.message.contains("answered ok"), "{}", a.message);
        }
        // A cas that is no probe is judged as before: refused as invalid, a violation.
        let plain = json!({"key": "k3", "value": [null, 17]});
        let refusal = refused(0, 3, "cas", plain, "INVALID_REQUEST: …");
        assert!(judge(&refusal).is_some());
    }

    #[test]
    fn a_request_over_the_limits_must_be_refused_and_may_be_as_invalid() {
        let over = json!({"partition": 0, "offset": 0, "max_records": MAX_RECORDS + 1});
        let refusal = refused(
            0,
            1,
            "poll",
            over.clone(),
            "INVALID_REQUEST: `max_records` must be 1 to 10000, got 10001",
        );
        assert!(judge(&refusal).is_none(), "rightly refused");
        let served = [
            event(0, 1, EventType::Invoke, "poll", over),
            event(
                1,
                1,
                EventType::Ok,
                "poll",
                json!({"partition": 0, "records": []}),
            ),
        ];
        let r = judge(&served).unwrap();
        let message = &r.anomalies[0].message;
        assert!(message.contains("answered ok"), "{message}");
        // The request, not the records its answer holds.
        assert!(message.contains("\"max_records\":10001"), "{message}");
        assert!(!message.contains("\"records\""), "{message}");
        // A send's batch is in its completion.
        let batch = |n: u32| json!({"partition": 0, "value": 5, "batch": n});
        let sent = [
            event(
                0,
                2,
                EventType::Invoke,
                "send",
                json!({"partition": 0, "value": 5}),
            ),
            event(1, 2, EventType::Ok, "send", batch(MAX_RECORDS + 1)),
        ];
        assert!(judge(&sent).is_some());
        let most = [
            event(
                0,
                2,
                EventType::Invoke,
                "send",
                json!({"partition": 0, "value": 5}),
            ),
            event(1, 2, EventType::Ok, "send", batch(MAX_RECORDS)),
        ];
        assert!(judge(&most).is_none());
    }

    #[test]
    fn out_of_range_is_a_violation_only_at_or_below_the_high_watermark_it_gives() {
        let at = |offset, hw| {
            refused(
                0,
                1,
                "poll",
                json!({"partition": 2, "offset": offset, "high_watermark": hw}),
                "OFFSET_OUT_OF_RANGE: queue-2: offset is past the high watermark",
            )
        };
        assert!(judge(&at(8, 7)).is_none(), "above the end: rightly refused");
        let r = judge(&at(7, 7)).unwrap();
        assert_eq!(r.anomalies[0].offsets, vec![7]);
        assert!(r.anomalies[0].message.contains("offset 7"));
        assert!(judge(&at(6, 7)).is_some());
        // Without the high watermark recorded nothing can be told.
        let bare = refused(
            0,
            1,
            "poll",
            json!({"partition": 2, "offset": 3}),
            "OFFSET_OUT_OF_RANGE: past the end",
        );
        assert!(judge(&bare).is_none());
    }

    #[test]
    fn other_refusals_and_other_operations_are_not_judged() {
        let mut h = Vec::new();
        h.extend(refused(
            0,
            1,
            "send",
            json!({"partition": 0, "value": 1}),
            "NOT_LEADER: this broker does not lead queue-0",
        ));
        h.extend(refused(
            2,
            2,
            "add",
            json!(3),
            "INVALID_REQUEST: a workload of another system",
        ));
        let mut ok = event(5, 3, EventType::Ok, "send", json!({"partition": 0}));
        ok.error = Some("INVALID_REQUEST".into());
        h.push(event(
            4,
            3,
            EventType::Invoke,
            "send",
            json!({"partition": 0}),
        ));
        h.push(ok);
        assert!(judge(&h).is_none());
        let mut results = Results::new(BTreeMap::new());
        add_verdict(&mut results, &h);
        assert!(results.checkers.is_empty());
    }
}
