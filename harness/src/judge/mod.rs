//! How a run's history is judged: by the checker of each workload the run ran, each
//! on its own operations. `watermark run` judges its history this way at its end and
//! `watermark check` judges a run folder the same way, so the two always agree.
//! Beside the checkers stand the harness's own verdicts, each from marks the
//! history carries: [`crashes`], [`protocol`] errors, [`availability`] where a
//! plan promised a partition would take writes or the healed cluster left the
//! register's [`final_reads`] unanswered, and the broker's refusals its API's
//! [`contract`] does not allow.
//!
//! A single workload's history goes to its checker whole. A mixed campaign's history
//! holds both workloads' operations, told apart by their names (docs/history.md): the
//! queue's (`send`, `poll`, `final-poll`) go to the queue analysis with the final logs
//! of the topic `queue`, the register's (`read`, `write`, `cas`) to linearizability
//! per key. Each view keeps the nemesis's events and the events' own indices, so an
//! anomaly names the operations by their place in the whole history.
//!
//! The replicas' final logs are judged for divergence topic by topic: the queue's
//! by the queue analysis, the register's beside its linearizability (a replica
//! that kept a deposed leader's record, or a record its failed append left, holds
//! a write no read may ever see — the register's reads go to the leader alone).

pub(crate) mod availability;
pub(crate) mod contract;
pub(crate) mod crashes;
pub(crate) mod final_reads;
pub(crate) mod protocol;

use std::borrow::Cow;
use std::collections::BTreeMap;

use checker::check::{CheckError, Model};
use checker::format::Format;
use checker::history::{Event, Process};
use checker::linear::Options;
use checker::queue::ReplicaLog;
use checker::verdict::Results;

use crate::options::WorkloadKind;

/// Add the harness's own verdicts of `events` to `results` — crashes (noted only,
/// with `allow_crashes`), protocol errors, availability, the contract —, each present only when it
/// has something to say: one list for `run` (the broker's and `--bin`'s) and `check`,
/// so that they agree.
pub fn add_harness_verdicts(results: &mut Results, events: &[Event], allow_crashes: bool) {
    crashes::add_verdict(results, events, allow_crashes);
    protocol::add_verdict(results, events);
    availability::add_verdict(results, events);
    contract::add_verdict(results, events);
}

impl WorkloadKind {
    /// What a single workload's operations are checked as: the queue analysis, or
    /// each key of the register against the cas-register model. A mixed campaign
    /// has one of each ([`WorkloadKind::parts`]).
    /// lin-kv's operations have the register's shapes: the same model. The other
    /// Maelstrom workloads have checks of their own, no model.
    pub fn model(self) -> Option<Model> {
        match self {
            WorkloadKind::Queue => Some(Model::Queue),
            WorkloadKind::Register | WorkloadKind::LinKv => Some(Model::CasRegister),
            _ => None,
        }
    }

    /// The name of a single workload's checker, its key in results.json.
    pub fn checker(self) -> &'static str {
        match self {
            WorkloadKind::Register | WorkloadKind::LinKv => workloads::register::CHECKER,
            WorkloadKind::Queue | WorkloadKind::Mixed => workloads::queue::CHECKER,
            WorkloadKind::Echo => "echo",
            WorkloadKind::UniqueIds => "unique-ids",
            WorkloadKind::Broadcast => "broadcast",
            WorkloadKind::GCounter => "g-counter",
            WorkloadKind::Kafka => "kafka",
        }
    }

    /// The operations (`f`) of a single workload.
    fn operations(self) -> &'static [&'static str] {
        match self {
            WorkloadKind::Queue => &workloads::queue::OPERATIONS,
            WorkloadKind::Register => &workloads::register::OPERATIONS,
            WorkloadKind::Mixed => &[],
            _ => self.maelstrom().map_or(&[], |w| w.operations()),
        }
    }
}

/// Judge a Maelstrom workload's history (the nemesis's events, protocol errors
/// and crashes among it, are skipped by every check): lin-kv per key for
/// linearizability, as the register; the others by their own checks.
fn judge_maelstrom(
    kind: WorkloadKind,
    format: Format,
    events: &[Event],
    options: &Options,
) -> Result<Results, CheckError> {
    use checker::maelstrom as m;
    let check = match kind {
        WorkloadKind::Echo => m::echo::check,
        WorkloadKind::UniqueIds => m::unique_ids::check,
        WorkloadKind::Broadcast => m::broadcast::check,
        WorkloadKind::GCounter => m::g_counter::check,
        WorkloadKind::Kafka => m::kafka::check,
        _ => return checker::check::check(format, events, Model::CasRegister, &[], options),
    };
    Ok(Results::new(BTreeMap::from([(
        kind.checker().to_string(),
        check(events),
    )])))
}

/// Judge the history of a run of `kind`: each of its workloads by its own checker,
/// in one [`Results`] (one entry per checker).
pub fn judge(
    kind: WorkloadKind,
    format: Format,
    events: &[Event],
    replicas: &[ReplicaLog],
    options: &Options,
) -> Result<Results, CheckError> {
    if kind.maelstrom().is_some() {
        return judge_maelstrom(kind, format, events, options);
    }
    let mut checkers = BTreeMap::new();
    for &part in kind.parts() {
        let model = part.model().unwrap_or(Model::Queue);
        let r = judge_as(kind, model, format, events, replicas, options)?;
        checkers.extend(r.checkers);
    }
    Ok(Results::new(checkers))
}

/// Judge the history of a run of `kind` against `model` (`watermark check --model`):
/// a mixed campaign's queue operations for the queue analysis, its register
/// operations for any other model.
pub fn judge_as(
    kind: WorkloadKind,
    model: Model,
    format: Format,
    events: &[Event],
    replicas: &[ReplicaLog],
    options: &Options,
) -> Result<Results, CheckError> {
    // The view's operations, and the final logs of its topic.
    let (part, topic) = if model == Model::Queue {
        (WorkloadKind::Queue, workloads::queue::TOPIC)
    } else {
        (WorkloadKind::Register, workloads::register::TOPIC)
    };
    let events = view(kind, part, events);
    let replicas: Vec<ReplicaLog> = replicas
        .iter()
        .filter(|r| r.topic == topic)
        .cloned()
        .collect();
    checker::check::check(format, &events, model, &replicas, options)
}

/// The events of `part` in the history of a run of `kind`: all of them if the run
/// ran `part` alone; else the nemesis's and `part`'s operations.
pub fn view<'a>(kind: WorkloadKind, part: WorkloadKind, events: &'a [Event]) -> Cow<'a, [Event]> {
    if kind != WorkloadKind::Mixed {
        return Cow::Borrowed(events);
    }
    let ops = part.operations();
    Cow::Owned(
        events
            .iter()
            .filter(|e| e.process == Process::Nemesis || ops.contains(&e.f.as_str()))
            .cloned()
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use checker::history::EventType;
    use checker::verdict::{AnomalyKind, Validity};
    use serde_json::{Value, json};

    fn event(index: u64, process: u64, kind: EventType, f: &str, value: Value) -> Event {
        Event {
            index,
            time: index * 1000,
            process: Process::Client(process),
            kind,
            f: f.to_string(),
            value,
            error: None,
        }
    }

    /// A mixed history: a send acknowledged then lost (the final poll does not
    /// read it), and a register key read stale by another process.
    fn mixed_history(stale: bool) -> Vec<Event> {
        use EventType::*;
        let read = if stale { json!(null) } else { json!(5) };
        vec![
            event(0, 0, Invoke, "send", json!({"partition":0,"value":1})),
            event(1, 3, Invoke, "write", json!({"key":"k0","value":5})),
            event(
                2,
                0,
                Ok,
                "send",
                json!({"partition":0,"value":1,"offset":0}),
            ),
            event(3, 3, Ok, "write", json!({"key":"k0","value":5})),
            event(4, 4, Invoke, "read", json!({"key":"k0","value":null})),
            event(5, 4, Ok, "read", json!({"key":"k0","value":read})),
            event(
                6,
                6,
                Invoke,
                "final-poll",
                json!({"partition":0,"offset":0}),
            ),
            event(
                7,
                6,
                Ok,
                "final-poll",
                json!({"partition":0,"records":[],"high_watermark":0}),
            ),
        ]
    }

    #[test]
    fn a_mixed_history_is_judged_by_both_checkers_each_on_its_own_operations() {
        let r = judge(
            WorkloadKind::Mixed,
            Format::Jsonl,
            &mixed_history(true),
            &[],
            &Options::default(),
        )
        .unwrap();
        assert_eq!(r.valid, Validity::Invalid);
        let queue = &r.checkers["queue"];
        assert_eq!(queue.anomalies[0].kind, AnomalyKind::LostWrite);
        assert_eq!(queue.anomalies[0].ops[0].invoke, 0);
        let lin = &r.checkers["linearizable"];
        assert_eq!(lin.anomalies[0].kind, AnomalyKind::Nonlinearizable);
        // Indices are the whole history's.
        let op = &lin.anomalies[0].explanation.as_ref().unwrap().op;
        assert_eq!((op.invoke, op.complete), (4, Some(5)));

        let good = judge(
            WorkloadKind::Mixed,
            Format::Jsonl,
            &mixed_history(false),
            &[],
            &Options::default(),
        )
        .unwrap();
        assert_eq!(good.checkers["linearizable"].valid, Validity::Valid);
        assert_eq!(good.checkers["queue"].valid, Validity::Invalid);
    }

    #[test]
    fn a_model_picks_one_view_of_a_mixed_history_and_a_single_workload_is_whole() {
        let events = mixed_history(true);
        let lin = judge_as(
            WorkloadKind::Mixed,
            Model::CasRegister,
            Format::Jsonl,
            &events,
            &[],
            &Options::default(),
        )
        .unwrap();
        assert_eq!(lin.checkers.keys().collect::<Vec<_>>(), ["linearizable"]);
        assert_eq!(
            view(WorkloadKind::Mixed, WorkloadKind::Queue, &events).len(),
            4
        );
        assert_eq!(
            view(WorkloadKind::Queue, WorkloadKind::Queue, &events).len(),
            8
        );
        // The register's checker cannot read sends: a whole mixed history is no
        // register history.
        assert!(
            judge_as(
                WorkloadKind::Register,
                Model::CasRegister,
                Format::Jsonl,
                &events,
                &[],
                &Options::default()
            )
            .is_err()
        );
    }

    fn replica(node: &str, topic: &str, values: &[i64]) -> ReplicaLog {
        let hw = values.len() as i64;
        ReplicaLog::from_values(node, topic, 0, hw, values.iter().map(|v| json!(v)))
    }

    #[test]
    fn the_register_topics_replicas_are_judged_for_divergence_beside_its_reads() {
        // The register's reads are linearizable; its replicas hold different
        // committed records at offset 1: the register's checker says so.
        let replicas = [
            replica("1", "register", &[5, 6]),
            replica("2", "register", &[5, 7]),
            replica("1", "queue", &[1]),
            replica("2", "queue", &[1]),
        ];
        let r = judge(
            WorkloadKind::Mixed,
            Format::Jsonl,
            &mixed_history(false),
            &replicas,
            &Options::default(),
        )
        .unwrap();
        let lin = &r.checkers["linearizable"];
        assert_eq!(lin.valid, Validity::Invalid);
        assert_eq!(lin.anomalies.len(), 1);
        assert_eq!(lin.anomalies[0].kind, AnomalyKind::ReplicaDivergence);
        assert_eq!(lin.anomalies[0].offsets, [1]);
        assert!(lin.anomalies[0].message.starts_with("topic register"));
        // The queue's replicas agree, and its lost write is its own.
        let queue = &r.checkers["queue"];
        assert!(
            queue
                .anomalies
                .iter()
                .all(|a| a.kind != AnomalyKind::ReplicaDivergence)
        );
        // Replicas that agree change nothing.
        let agreeing = [
            replica("1", "register", &[5, 6]),
            replica("2", "register", &[5, 6]),
        ];
        let r = judge(
            WorkloadKind::Mixed,
            Format::Jsonl,
            &mixed_history(false),
            &agreeing,
            &Options::default(),
        )
        .unwrap();
        assert_eq!(r.checkers["linearizable"].valid, Validity::Valid);
    }
}
