//! Fault periods: the nemesis events of a history folded into intervals, so every
//! plot can shade the time a fault was in force.
//!
//! The nemesis records a fault as an event with `process: "nemesis"`, `f` naming
//! the fault and `value` its targets. Both common conventions are understood:
//! an `invoke` followed by its completion (the fault starts at the invocation), or
//! a lone `info` event (Jepsen's style). A fault ends at the event that undoes it:
//! `heal` (or `stop-partition`) ends partitions, `resume` ends pauses, `restart`
//! ends kills and crashes, `stop-slow`, `stop-flaky`, `stop-throttle` end degraded
//! links (`slow`, `flaky`, `throttle`; Jepsen's `fast` too), `disk-ok` ends a node's
//! failing disk (`disk`), `clock-reset` a process's clock fault (`clock-offset`,
//! `clock-step`, `clock-strobe`: labelled with the offset, so each process's clock
//! over time reads off the timeline); one naming the same targets is preferred, else every
//! open fault of that family ends. Faults still open at the end of the history run
//! to its end. Events that neither start nor end a fault become instant marks, but
//! for the nemesis's decisions (`plan`), which the report lists on their own.

use checker::history::{Event, EventType, Process};
use serde_json::Value;

/// What kind of fault: decides the shading colour and which event ends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Kill,
    Pause,
    Partition,
    /// Degraded links: `slow`, `flaky`, `throttle`.
    Network,
    /// A node's disk full or failing (`disk`, ended by `disk-ok`).
    Disk,
    /// A process's wall clock off (`clock-*`, ended by `clock-reset`).
    Clock,
}

impl Family {
    pub fn class(self) -> &'static str {
        match self {
            Family::Kill => "f-kill",
            Family::Pause => "f-pause",
            Family::Partition => "f-part",
            Family::Network => "f-net",
            Family::Disk => "f-disk",
            Family::Clock => "f-clock",
        }
    }
}

/// A fault in force from `start` to `end` (nanoseconds since the run started).
#[derive(Debug, Clone, PartialEq)]
pub struct FaultPeriod {
    pub family: Family,
    /// e.g. `kill [1]`.
    pub label: String,
    pub start: u64,
    pub end: u64,
    /// History index of the event that started it.
    pub index: u64,
    /// Still in force when the history ends.
    pub open: bool,
    f: String,
    /// The start event's value: whom the fault hit.
    pub targets: Value,
    /// Started by an invocation whose completion has not been seen yet.
    awaiting: bool,
}

/// A nemesis event that neither starts nor ends a fault.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultMark {
    pub time: u64,
    pub label: String,
    pub index: u64,
}

enum Role {
    Start(Family),
    End(Option<Family>),
    Mark,
    /// A decision of the nemesis (`plan`): shown in its own table, not as a fault.
    Decision,
}

fn role(f: &str) -> Role {
    let f = f.to_ascii_lowercase();
    let base = f.strip_prefix("start-").unwrap_or(&f);
    match f.as_str() {
        "plan" => return Role::Decision,
        "heal" | "stop-partition" | "heal-partition" => return Role::End(Some(Family::Partition)),
        "resume" | "cont" | "stop-pause" => return Role::End(Some(Family::Pause)),
        "restart" | "start" | "stop-kill" | "recover" | "restart-all" => {
            return Role::End(Some(Family::Kill));
        }
        "stop-slow" | "stop-flaky" | "stop-throttle" | "fast" => {
            return Role::End(Some(Family::Network));
        }
        "disk-ok" => return Role::End(Some(Family::Disk)),
        "clock-reset" => return Role::End(Some(Family::Clock)),
        "heal-all" | "stop" | "stop-all" | "end" | "heal-everything" => return Role::End(None),
        _ => {}
    }
    if base == "disk" {
        Role::Start(Family::Disk)
    } else if base.starts_with("clock-") {
        Role::Start(Family::Clock)
    } else if base.starts_with("kill")
        || base == "crash-all"
        || base.starts_with("lose-")
        || base == "torn-write"
        || base == "corrupt"
    {
        Role::Start(Family::Kill)
    } else if base == "slow" || base == "flaky" || base == "throttle" {
        Role::Start(Family::Network)
    } else if base.starts_with("pause") {
        Role::Start(Family::Pause)
    } else if base.starts_with("partition")
        || base.starts_with("isolate")
        || base == "halves"
        || base == "bridge"
    {
        Role::Start(Family::Partition)
    } else {
        Role::Mark
    }
}

/// A short label: the fault and its targets (a partition by its topology's name).
pub fn label(f: &str, value: &Value) -> String {
    let targets = match value {
        Value::Null => String::new(),
        Value::Object(m) if m.get("topology").is_some_and(Value::is_string) => {
            format!(" {}", m["topology"].as_str().unwrap_or_default())
        }
        // Degraded links: the processes whose links they are.
        Value::Object(m) if m.get("procs").is_some_and(Value::is_array) => {
            let procs: Vec<String> = m["procs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| p.as_str().map_or_else(|| p.to_string(), str::to_string))
                .collect();
            format!(" {}", procs.join(","))
        }
        // A clock fault: the process and its clock's offset.
        Value::Object(m) if m.contains_key("offset_ms") && m.contains_key("proc") => {
            let ms = m["offset_ms"].as_i64().unwrap_or(0);
            let p = &m["proc"];
            let p = p.as_str().map_or_else(|| p.to_string(), str::to_string);
            format!(" {p} {:+.3} s", ms as f64 / 1000.0)
        }
        // A crash: the process that died.
        Value::Object(m) if m.contains_key("node") => match &m["node"] {
            Value::String(s) => format!(" {s}"),
            n => format!(" node {n}"),
        },
        Value::String(s) => format!(" {s}"),
        v => format!(" {v}"),
    };
    let mut l = format!("{f}{targets}");
    if l.chars().count() > 48 {
        l = l.chars().take(47).collect::<String>() + "…";
    }
    l
}

/// Fold the nemesis events into fault periods and marks.
pub fn periods(events: &[Event], end_time: u64) -> (Vec<FaultPeriod>, Vec<FaultMark>) {
    let mut periods: Vec<FaultPeriod> = Vec::new();
    let mut marks = Vec::new();
    // Ends that were invoked and not yet completed: (f, targets, invoke time).
    let mut pending_ends: Vec<(String, Value, u64)> = Vec::new();
    for e in events.iter().filter(|e| e.process == Process::Nemesis) {
        match role(&e.f) {
            Role::Start(family) => {
                if e.kind != EventType::Invoke {
                    // The completion of a start we already opened?
                    if let Some(p) = periods
                        .iter_mut()
                        .rev()
                        .find(|p| p.open && p.awaiting && p.f == e.f)
                    {
                        p.awaiting = false;
                        if !e.value.is_null() && e.value != p.targets {
                            p.label = label(&e.f, &e.value);
                            p.targets = e.value.clone();
                        }
                        if e.kind == EventType::Fail {
                            p.label.push_str(" (failed)");
                        }
                        continue;
                    }
                }
                periods.push(FaultPeriod {
                    family,
                    label: label(&e.f, &e.value),
                    start: e.time,
                    end: end_time,
                    index: e.index,
                    open: true,
                    f: e.f.clone(),
                    targets: e.value.clone(),
                    awaiting: e.kind == EventType::Invoke,
                });
            }
            Role::End(family) => {
                if e.kind == EventType::Invoke {
                    pending_ends.push((e.f.clone(), e.value.clone(), e.time));
                    continue;
                }
                pending_ends.retain(|(f, _, _)| f != &e.f);
                close(&mut periods, family, &e.value, e.time);
            }
            Role::Decision => {}
            Role::Mark => {
                if e.kind == EventType::Invoke
                    || !marks
                        .iter()
                        .any(|m: &FaultMark| m.label == label(&e.f, &e.value))
                {
                    marks.push(FaultMark {
                        time: e.time,
                        label: label(&e.f, &e.value),
                        index: e.index,
                    });
                }
            }
        }
    }
    // An end invoked but never completed still ended its fault, as far as we know.
    for (f, targets, time) in pending_ends {
        if let Role::End(family) = role(&f) {
            close(&mut periods, family, &targets, time);
        }
    }
    (periods, marks)
}

fn close(periods: &mut [FaultPeriod], family: Option<Family>, targets: &Value, time: u64) {
    let in_family = |p: &FaultPeriod| p.open && family.is_none_or(|f| f == p.family);
    // A clock's reset names the process, not the offset it ends.
    let same = |p: &FaultPeriod| match family {
        Some(Family::Clock) => p.targets.get("proc") == targets.get("proc"),
        _ => &p.targets == targets,
    };
    let same_targets = !targets.is_null() && periods.iter().any(|p| in_family(p) && same(p));
    for p in periods.iter_mut() {
        if in_family(p) && (!same_targets || same(p)) {
            p.open = false;
            p.awaiting = false;
            p.end = time.max(p.start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nem(index: u64, time: u64, kind: EventType, f: &str, value: Value) -> Event {
        Event {
            index,
            time,
            process: Process::Nemesis,
            kind,
            f: f.into(),
            value,
            error: None,
        }
    }

    #[test]
    fn invoke_completion_pairs_make_one_period_ended_by_its_undo() {
        use EventType::*;
        let events = vec![
            nem(0, 10, Invoke, "kill", json!([1])),
            nem(1, 12, Ok, "kill", json!([1])),
            nem(2, 20, Invoke, "kill", json!([2])),
            nem(3, 21, Ok, "kill", json!([2])),
            nem(4, 30, Invoke, "restart", json!([1])),
            nem(5, 35, Ok, "restart", json!([1])),
            nem(6, 40, Info, "partition", json!({"isolate": [3]})),
            nem(7, 50, Info, "heal", Value::Null),
            nem(8, 60, Info, "pause", json!([2])),
            nem(9, 61, Info, "check-convergence", Value::Null),
            nem(
                10,
                70,
                Info,
                "partition",
                json!({"topology": "halves", "grudge": {}}),
            ),
            nem(
                11,
                80,
                Info,
                "heal",
                json!({"topology": "halves", "grudge": {}}),
            ),
        ];
        let (p, m) = periods(&events, 100);
        let spans: Vec<(&str, u64, u64, bool)> = p
            .iter()
            .map(|p| (p.label.as_str(), p.start, p.end, p.open))
            .collect();
        assert_eq!(
            spans,
            vec![
                ("kill [1]", 10, 35, false),
                ("kill [2]", 20, 100, true),
                ("partition {\"isolate\":[3]}", 40, 50, false),
                ("pause [2]", 60, 100, true),
                ("partition halves", 70, 80, false),
            ]
        );
        assert_eq!(p[0].family, Family::Kill);
        assert_eq!(p[2].family, Family::Partition);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].label, "check-convergence");
    }

    #[test]
    fn degraded_links_are_network_faults_ended_by_their_stop() {
        use EventType::*;
        let slow = json!({"procs": ["controller", 2], "delay_ms": 80, "jitter_ms": 10, "seed": 1});
        let flaky = json!({"procs": [1], "reset": 0.02, "loss": 0.1, "seed": 2});
        let events = vec![
            nem(0, 5, Info, "slow", slow.clone()),
            nem(1, 6, Info, "flaky", flaky.clone()),
            nem(2, 9, Info, "stop-slow", slow),
            nem(
                3,
                12,
                Info,
                "throttle",
                json!({"procs": [3], "bytes_per_s": 8192}),
            ),
        ];
        let (p, m) = periods(&events, 20);
        assert!(m.is_empty(), "{m:?}");
        let spans: Vec<(&str, Family, u64, u64)> = p
            .iter()
            .map(|p| (p.label.as_str(), p.family, p.start, p.end))
            .collect();
        assert_eq!(
            spans,
            vec![
                ("slow controller,2", Family::Network, 5, 9),
                ("flaky 1", Family::Network, 6, 20),
                ("throttle 3", Family::Network, 12, 20),
            ]
        );
    }

    #[test]
    fn decisions_are_neither_faults_nor_marks() {
        use EventType::*;
        let events = vec![
            nem(0, 5, Info, "plan", json!({"pattern": "leader-kill"})),
            nem(1, 6, Info, "kill", json!([2])),
            nem(2, 9, Info, "restart", json!([2])),
        ];
        let (p, m) = periods(&events, 20);
        assert_eq!(p.len(), 1);
        assert!(m.is_empty(), "{m:?}");
    }

    #[test]
    fn jepsen_start_stop_names_are_understood() {
        use EventType::*;
        let events = vec![
            nem(0, 5, Invoke, "start-partition", json!("majority")),
            nem(1, 6, Info, "start-partition", json!("majority")),
            nem(2, 9, Invoke, "stop-partition", Value::Null),
        ];
        let (p, _) = periods(&events, 20);
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].start, p[0].end, p[0].open), (5, 9, false));
        assert_eq!(p[0].family, Family::Partition);
    }

    #[test]
    fn clock_faults_show_each_process_offset_until_its_reset() {
        use EventType::*;
        let events = vec![
            nem(
                0,
                5,
                Info,
                "clock-step",
                json!({"proc": 3, "offset_ms": -1_741_074}),
            ),
            nem(
                1,
                6,
                Info,
                "clock-strobe",
                json!({"proc": 1, "offset_ms": 2500, "period_ms": 40}),
            ),
            nem(
                2,
                9,
                Info,
                "clock-reset",
                json!({"proc": 3, "fault": "clock-step", "offset_ms": 0}),
            ),
        ];
        let (p, m) = periods(&events, 20);
        assert!(m.is_empty(), "{m:?}");
        let got: Vec<_> = p
            .iter()
            .map(|p| (p.family, p.label.as_str(), p.start, p.end, p.open))
            .collect();
        assert_eq!(
            got,
            [
                (Family::Clock, "clock-step 3 -1741.074 s", 5, 9, false),
                (Family::Clock, "clock-strobe 1 +2.500 s", 6, 20, true),
            ]
        );
    }

    #[test]
    fn disk_faults_are_shaded_until_their_disk_ok() {
        use EventType::*;
        let two = json!({"node": 2, "mode": "enospc", "for_ms": 9000});
        let three = json!({"node": 3, "mode": "eio", "for_ms": 9000});
        let events = vec![
            nem(0, 5, Info, "disk", two.clone()),
            nem(1, 6, Info, "disk", three.clone()),
            nem(2, 9, Info, "disk-ok", two),
        ];
        let (p, m) = periods(&events, 20);
        assert!(m.is_empty(), "{m:?}");
        let got: Vec<_> = p
            .iter()
            .map(|p| (p.family, p.label.as_str(), p.start, p.end, p.open))
            .collect();
        assert_eq!(
            got,
            [
                (Family::Disk, "disk node 2", 5, 9, false),
                (Family::Disk, "disk node 3", 6, 20, true),
            ]
        );
        assert_eq!(p[0].family.class(), "f-disk");
    }
}
