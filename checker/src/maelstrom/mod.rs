//! Maelstrom's workload checkers, for systems tested through Maelstrom's
//! protocol (the `maelstrom` crate): what each workload's history must satisfy,
//! judged with our anomaly names (docs/anomalies.md) — the queue checker's where
//! the meaning is the same (`lost-write`, `duplicate`, `unexpected`, ...), new ones
//! where it is not (`echo-mismatch`, `duplicate-id`, `counter-out-of-range`,
//! `nonmonotonic-commit`). lin-kv needs none of its own: its history has the
//! register's shapes, and [`crate::linear`] judges it per key.
//!
//! Every check takes the whole history's events — other workloads' operations and
//! the nemesis's events are skipped — and returns a [`CheckerResult`]
//! (`check`); `try_check` returns instead a [`HistoryError`] for a history whose
//! values lack what docs/history.md ("The Maelstrom workloads") says they carry,
//! which `check` reports as an unknown verdict.
//!
//! [`CheckerResult`]: crate::verdict::CheckerResult

pub mod broadcast;
pub mod echo;
pub mod g_counter;
pub mod kafka;
mod reading;
pub mod unique_ids;

pub use reading::HistoryError;

#[cfg(test)]
mod tests {
    use super::reading::testing::Builder;
    use crate::history::EventType;
    use serde_json::{Value, json};

    /// Values of every shape, where the checks expect particular ones.
    fn odd_values() -> Vec<Value> {
        vec![
            Value::Null,
            json!(true),
            json!(-3),
            json!(1.5),
            json!("x"),
            json!([]),
            json!([[1]]),
            json!({}),
            json!({"node": 5, "echo": null, "id": {}, "message": [], "messages": {"a": 1}}),
            json!({"delta": "2", "value": [1], "key": 3, "msg": null, "offset": "0"}),
            json!({"offsets": {"a": "1"}, "msgs": {"a": [[0]]}, "keys": "a"}),
            json!({"offsets": {"a": 1}, "msgs": {"a": [["x", 1], [1, 2, 3]]}, "keys": [1]}),
            json!({"offsets": [], "msgs": [], "keys": [], "messages": [1, [2], {"3": 4}]}),
        ]
    }

    #[test]
    fn no_history_makes_a_check_panic() {
        let fs = [
            "echo",
            "generate",
            "broadcast",
            "read",
            "final-read",
            "add",
            "send",
            "poll",
            "final-poll",
            "commit_offsets",
            "list_committed_offsets",
        ];
        let values = odd_values();
        let checks: [fn(&[crate::history::Event]) -> crate::verdict::CheckerResult; 6] = [
            super::echo::check,
            super::unique_ids::check,
            super::broadcast::check,
            super::g_counter::check,
            super::g_counter::check_strict,
            super::kafka::check,
        ];
        for f in fs {
            for (i, invoke) in values.iter().enumerate() {
                for done in &values {
                    for kind in [EventType::Ok, EventType::Fail, EventType::Info] {
                        let mut b = Builder::default();
                        b.op(i as u64, f, invoke.clone(), kind, done.clone());
                        b.invoke(99, f, done.clone());
                        for check in checks {
                            let _ = check(&b.events);
                        }
                    }
                }
            }
        }
    }
}
