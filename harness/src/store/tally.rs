//! The running tally of a campaign: completed operations by outcome and the faults
//! in force, updated as the history records each event, read by the progress
//! display and the closing summary.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use checker::history::EventType;
use serde_json::Value;

/// Counts of completed operations and the faults currently in force, updated as
/// events are recorded.
#[derive(Debug, Default)]
pub struct Tally {
    ok: AtomicU64,
    fail: AtomicU64,
    info: AtomicU64,
    /// Labels of the faults in force, oldest first (e.g. `kill 2`).
    faults: Mutex<Vec<String>>,
}

impl Tally {
    /// Count one client event (invocations are not counted).
    pub fn count(&self, kind: EventType) {
        let counter = match kind {
            EventType::Invoke => return,
            EventType::Ok => &self.ok,
            EventType::Fail => &self.fail,
            EventType::Info => &self.info,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Follow a nemesis event (named as in docs/faults.md#in-the-history: `kill`,
    /// `pause`, `partition`, `crash-all`, `lose-unflushed`, `slow`, `flaky`,
    /// `throttle`, `disk` start a fault; `restart`, `resume`, `heal`, `stop-slow`, …,
    /// `disk-ok` end one).
    pub fn nemesis(&self, f: &str, value: &Value) {
        // A reconfiguration is done once asked: nothing stays in force.
        if matches!(f, "add-partitions" | "reassign" | "cancel-reassignment") {
            return;
        }
        let mut active = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        // Degraded links: named by the processes whose links they are.
        if let Some(procs) = value.get("procs") {
            let label = format!(
                "{} {}",
                f.strip_prefix("stop-").unwrap_or(f),
                targets(procs).join(",")
            );
            if f.starts_with("stop-") {
                if let Some(i) = active.iter().position(|l| *l == label) {
                    active.remove(i);
                }
            } else {
                active.push(label);
            }
            return;
        }
        match f {
            // e.g. `disk 2 enospc`, ended by the `disk-ok` of the same value.
            "disk" | "disk-ok" => {
                let label = format!(
                    "disk {} {}",
                    value["node"],
                    value["mode"].as_str().unwrap_or_default()
                );
                if f == "disk" {
                    active.push(label);
                } else if let Some(i) = active.iter().position(|l| *l == label) {
                    active.remove(i);
                }
            }
            "restart" | "resume" | "heal" => {
                let targets = targets(value);
                let mut sorted = targets.clone();
                sorted.sort();
                let ends = |label: &String| match f {
                    "heal" => match value.get("topology").and_then(Value::as_str) {
                        Some(topology) => *label == format!("partition {topology}"),
                        None => label.starts_with("partition"),
                    },
                    "resume" => *label == format!("pause {}", targets.join(",")),
                    _ => {
                        *label == format!("kill {}", targets.join(","))
                            || *label == format!("lose-unflushed {}", targets.join(","))
                            || *label == format!("crash-all {}", sorted.join(","))
                    }
                };
                if let Some(i) = active.iter().position(ends) {
                    active.remove(i);
                }
            }
            _ => {
                let what = match value.get("topology").and_then(Value::as_str) {
                    Some(topology) => topology.to_string(),
                    None => {
                        let mut t = targets(value);
                        if f == "crash-all" {
                            t.sort();
                        }
                        t.join(",")
                    }
                };
                active.push(format!("{f} {what}"));
            }
        }
    }

    /// (ok, fail, info).
    pub fn counts(&self) -> (u64, u64, u64) {
        (
            self.ok.load(Ordering::Relaxed),
            self.fail.load(Ordering::Relaxed),
            self.info.load(Ordering::Relaxed),
        )
    }

    /// The faults in force, e.g. `kill 2, partition isolate-leader`.
    pub fn faults(&self) -> String {
        let f = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_empty() {
            "none".to_string()
        } else {
            f.join(", ")
        }
    }
}

/// Acknowledged operations per second over a run: the busiest second's count and
/// the median second's (the load bursts' peak against the steady rate).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OkRates {
    pub peak: u64,
    pub median: u64,
}

impl OkRates {
    /// From the completion times (ns since the run started) of the `ok` operations.
    pub fn of(times: impl IntoIterator<Item = u64>) -> OkRates {
        let mut seconds: Vec<u64> = Vec::new();
        for t in times {
            let s = (t / 1_000_000_000) as usize;
            if s >= seconds.len() {
                seconds.resize(s + 1, 0);
            }
            seconds[s] += 1;
        }
        // The seconds before the first completion are the cluster's start.
        let first = seconds.iter().position(|&n| n > 0).unwrap_or(seconds.len());
        let mut busy = seconds.split_off(first);
        busy.sort_unstable();
        OkRates {
            peak: busy.last().copied().unwrap_or(0),
            median: busy.get(busy.len() / 2).copied().unwrap_or(0),
        }
    }

    /// For a summary: `peak 2410 ok/s, median 190 ok/s`.
    pub fn describe(&self) -> String {
        format!("peak {} ok/s, median {} ok/s", self.peak, self.median)
    }
}

/// A nemesis event's targets as text: node ids and `controller`.
fn targets(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        Value::Null => Vec::new(),
        other => vec![other.to_string()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tally_counts_completions_and_active_faults() {
        let t = Tally::default();
        for k in [
            EventType::Invoke,
            EventType::Ok,
            EventType::Ok,
            EventType::Info,
        ] {
            t.count(k);
        }
        assert_eq!(t.counts(), (2, 0, 1));
        t.nemesis("kill", &json!([2]));
        t.nemesis("pause", &json!(["controller"]));
        t.nemesis("crash-all", &json!([3, 1, 2]));
        t.nemesis(
            "partition",
            &json!({"topology": "isolate-leader", "grudge": {}}),
        );
        assert_eq!(
            t.faults(),
            "kill 2, pause controller, crash-all 1,2,3, partition isolate-leader"
        );
        t.nemesis("resume", &json!(["controller"]));
        t.nemesis("restart", &json!([2]));
        t.nemesis("restart", &json!([2, 3, 1]));
        assert_eq!(t.faults(), "partition isolate-leader");
        t.nemesis("heal", &json!({"topology": "isolate-leader", "grudge": {}}));
        assert_eq!(t.faults(), "none");
        let slow = json!({"procs": ["controller", 1], "delay_ms": 40, "jitter_ms": 5});
        t.nemesis("slow", &slow);
        t.nemesis("throttle", &json!({"procs": [2], "bytes_per_s": 9000}));
        assert_eq!(t.faults(), "slow controller,1, throttle 2");
        t.nemesis("stop-slow", &slow);
        assert_eq!(t.faults(), "throttle 2");
    }

    #[test]
    fn a_disk_ok_ends_the_disk_fault_of_its_node() {
        let t = Tally::default();
        let two = json!({"node": 2, "mode": "enospc", "for_ms": 9000});
        t.nemesis("disk", &two);
        t.nemesis("disk", &json!({"node": 3, "mode": "eio", "for_ms": 9000}));
        assert_eq!(t.faults(), "disk 2 enospc, disk 3 eio");
        t.nemesis("disk-ok", &two);
        assert_eq!(t.faults(), "disk 3 eio");
    }

    #[test]
    fn a_heal_ends_the_partition_of_its_topology() {
        let t = Tally::default();
        let cut = |topology: &str| json!({"topology": topology, "grudge": {}});
        t.nemesis("partition", &cut("one-way"));
        t.nemesis("partition", &cut("isolate-from-peers"));
        t.nemesis("heal", &cut("isolate-from-peers"));
        assert_eq!(t.faults(), "partition one-way");
        t.nemesis("heal", &json!(null));
        assert_eq!(t.faults(), "none");
    }
}

#[cfg(test)]
mod rate_tests {
    use super::*;

    #[test]
    fn the_busiest_and_the_median_second_of_the_acknowledged_operations() {
        let s = 1_000_000_000u64;
        // Nothing in second 0; 2 in second 1, 5 in second 2, 1 in second 4.
        let times = [
            s + 1,
            s + 2,
            2 * s,
            2 * s + 1,
            2 * s + 2,
            2 * s + 3,
            2 * s + 4,
            4 * s,
        ];
        let r = OkRates::of(times);
        assert_eq!((r.peak, r.median), (5, 2));
        assert_eq!(OkRates::of([]), OkRates::default());
    }
}
