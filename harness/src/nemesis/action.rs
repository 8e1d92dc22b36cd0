//! The fault operations every schedule is made of: one signal to one process, one
//! set of links cut, degraded or restored, a node's storage failed or working again —
//! each with the one history event it is recorded as (`kill`/`restart`,
//! `pause`/`resume`, `partition`/`heal`, `lose-unflushed`, `crash-all`,
//! `slow`/`stop-slow`, `throttle`/`stop-throttle`, `disk`/`disk-ok`), whichever
//! source scheduled it, so the report and the progress line read them alike; and
//! the operation that undoes each. A [`Script`] is a pattern's list of them, each
//! after a delay from the previous.

use std::time::Duration;

use serde_json::{Value, json};

use super::fault::{Degradation, NemesisEvent};
use crate::net::Grudge;
use crate::proc::Proc;
use crate::system::clock::ClockFault;
use crate::system::{DiskMode, Reconfiguration};

/// One step of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// SIGKILL.
    Kill(Proc),
    /// SIGKILL the leader `leader` as soon as the controller's metadata shows
    /// `follower` in the ISR of `topic`-`partition`, or once `within` has passed:
    /// a kill timed by the cluster's state (recorded as a `kill` when it happens).
    KillOnceInIsr {
        leader: i32,
        follower: i32,
        topic: String,
        partition: u32,
        within: Duration,
    },
    /// SIGKILL a node run with `--simulate-page-cache`: its unflushed bytes are lost.
    LoseUnflushed(i32),
    /// The same, but the power cut keeps a prefix of the last write it did not
    /// fsync, its length drawn from `seed`: a torn write (the fault filesystem's; with
    /// `--no-fault-fs`, a plain `LoseUnflushed`).
    TornWrite { node: i32, seed: u64 },
    /// SIGKILL node `node` and damage one of its files as `seed` draws.
    Corrupt { node: i32, seed: u64 },
    /// SIGKILL every node at once.
    CrashAll(Vec<i32>),
    /// Start a killed process again on its data dir.
    Restart(Proc),
    /// Start killed nodes again one by one, each after its gap (recorded once, as
    /// the end of a crash-all, in restart order).
    RestartEach(Vec<(Duration, i32)>),
    /// SIGSTOP.
    Pause(Proc),
    /// SIGCONT.
    Resume(Proc),
    /// Cut the links of a grudge; `shape` names it in the history.
    Cut { shape: String, grudge: Grudge },
    /// Restore the links a `Cut` of the same shape cut.
    Heal { shape: String, grudge: Grudge },
    /// Hold every answer a process sends to the clients (a one-way cut of it →
    /// clients, recorded as the partition `leader-answers-to-clients`): their
    /// requests still reach it and take effect.
    HoldAnswers(Proc),
    /// Let its answers through again.
    ReleaseAnswers(Proc),
    /// Change the system's configuration (new partitions, a reassignment); with a
    /// `settle`, wait up to that long for a reassignment to complete. A pattern that
    /// moves replicas moves them back itself; what a reconfiguration leaves to undo
    /// is its `throttle`, lifted by the `Restore` of its degradation.
    Reconfigure {
        change: Reconfiguration,
        settle: Duration,
        throttle: Option<MoveThrottle>,
    },
    /// Make a node's disk fail in `mode` (the broker ends it by itself after
    /// `for_ms`, should the `DiskOk` not come).
    Disk {
        node: i32,
        mode: DiskMode,
        for_ms: u64,
    },
    /// Make the disk a `Disk` step failed work again (same fields, for the history).
    DiskOk {
        node: i32,
        mode: DiskMode,
        for_ms: u64,
    },
    /// Set `proc`'s wall clock as `fault` says.
    Clock { proc: Proc, fault: ClockFault },
    /// Its clock true again (the fault it ends, for the history).
    ClockReset { proc: Proc, fault: ClockFault },
    /// Degrade every link to and from `procs` (clients' included) — or, `between`,
    /// only the links among them — each link's draws seeded from `seed`.
    Degrade {
        procs: Vec<Proc>,
        between: bool,
        how: Degradation,
        seed: u64,
    },
    /// Take the degradation of a `Degrade` step (same fields) off those links.
    Restore {
        procs: Vec<Proc>,
        between: bool,
        how: Degradation,
        seed: u64,
    },
}

/// Kafka's reassignment throttle (`kafka-reassign-partitions --execute --throttle`):
/// the links between the partition's leader and the replicas a move adds slowed to
/// `bytes_per_s` from just before the move until it is lifted (as `--verify` lifts
/// it), so that a replica moved in takes the time to catch up that a partition of
/// real size would, rather than the milliseconds a test's log takes. One operator
/// step with the move, and one fault in a schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveThrottle {
    /// The leader and the replicas the move adds.
    pub procs: Vec<Proc>,
    pub bytes_per_s: u64,
    /// The degradation's seed (a throttle draws nothing from it).
    pub seed: u64,
}

impl MoveThrottle {
    /// How it degrades each of those links.
    pub fn how(&self) -> Degradation {
        Degradation::Throttle {
            bytes_per_s: self.bytes_per_s,
        }
    }

    /// The step that puts it on the links between its processes.
    pub fn degrade(&self) -> Action {
        Action::Degrade {
            procs: self.procs.clone(),
            between: true,
            how: self.how(),
            seed: self.seed,
        }
    }
}

/// A degradation's event, with the links it is on when only those `between` its
/// processes are (`"links": [[from, to], …]`).
fn degraded(mut e: NemesisEvent, procs: &[Proc], between: bool) -> NemesisEvent {
    if between {
        let links: Vec<Value> = procs
            .iter()
            .flat_map(|a| procs.iter().filter(move |b| *b != a).map(move |b| (a, b)))
            .map(|(a, b)| json!([a.to_json(), b.to_json()]))
            .collect();
        e.value["links"] = Value::Array(links);
    }
    e
}

/// A reconfiguration's event: `add-partitions` `{"topic","count"}`, `reassign`
/// `{"topic","partition","replicas"}`, `cancel-reassignment` `{"topic","partition"}`.
fn reconfiguration_event(change: &Reconfiguration) -> NemesisEvent {
    match change {
        Reconfiguration::AddPartitions { topic, count } => {
            NemesisEvent::new("add-partitions", json!({"topic": topic, "count": count}))
        }
        Reconfiguration::Reassign {
            topic,
            partition,
            replicas,
            from,
        } => NemesisEvent::new(
            "reassign",
            json!({"topic": topic, "partition": partition, "replicas": replicas, "from": from}),
        ),
        Reconfiguration::CancelReassignment { topic, partition } => NemesisEvent::new(
            "cancel-reassignment",
            json!({"topic": topic, "partition": partition}),
        ),
    }
}

/// A clock fault's event: `clock-offset`, `clock-step` `{"proc", "offset_ms"}`,
/// `clock-strobe` (with `period_ms`); its end `clock-reset`, with the same value and
/// `"offset_ms"` of the clock now, 0.
fn clock_event(p: Proc, fault: ClockFault, end: bool) -> NemesisEvent {
    let (name, mut value) = match fault {
        ClockFault::Offset { offset_ms } => ("clock-offset", json!({"offset_ms": offset_ms})),
        ClockFault::Step { offset_ms } => ("clock-step", json!({"offset_ms": offset_ms})),
        ClockFault::Strobe {
            offset_ms,
            period_ms,
        } => (
            "clock-strobe",
            json!({"offset_ms": offset_ms, "period_ms": period_ms}),
        ),
    };
    value["proc"] = p.to_json();
    if end {
        value["fault"] = json!(name);
        value["offset_ms"] = json!(0);
        return NemesisEvent::new("clock-reset", value);
    }
    NemesisEvent::new(name, value)
}

/// The value of a hold of `p`'s answers to the clients, and of its end.
fn held_answers(p: Proc) -> Value {
    json!({"topology": "leader-answers-to-clients", "cut": [[p.to_json(), "clients"]]})
}

fn ids(procs: impl IntoIterator<Item = Proc>) -> Value {
    Value::Array(procs.into_iter().map(Proc::to_json).collect())
}

impl Action {
    /// The history event of this step.
    pub fn event(&self) -> NemesisEvent {
        match self {
            Action::Kill(p) => NemesisEvent::new("kill", ids([*p])),
            Action::KillOnceInIsr { leader, .. } => {
                NemesisEvent::new("kill", ids([Proc::Node(*leader)]))
            }
            Action::LoseUnflushed(id) => NemesisEvent::new("lose-unflushed", json!([id])),
            Action::TornWrite { node, seed } => {
                NemesisEvent::new("torn-write", json!({"node": node, "seed": seed}))
            }
            Action::Corrupt { node, seed } => {
                NemesisEvent::new("corrupt", json!({"node": node, "seed": seed}))
            }
            Action::CrashAll(nodes) => {
                let mut sorted = nodes.clone();
                sorted.sort();
                NemesisEvent::new("crash-all", json!(sorted))
            }
            Action::Restart(p) => NemesisEvent::new("restart", ids([*p])),
            Action::RestartEach(order) => {
                let order: Vec<i32> = order.iter().map(|(_, id)| *id).collect();
                NemesisEvent::new("restart", json!(order))
            }
            Action::Pause(p) => NemesisEvent::new("pause", ids([*p])),
            Action::Resume(p) => NemesisEvent::new("resume", ids([*p])),
            Action::Cut { shape, grudge } => NemesisEvent::new(
                "partition",
                json!({"topology": shape, "grudge": grudge.to_json()}),
            ),
            Action::Heal { shape, grudge } => NemesisEvent::new(
                "heal",
                json!({"topology": shape, "grudge": grudge.to_json()}),
            ),
            Action::Disk { node, mode, for_ms } => NemesisEvent::new(
                "disk",
                json!({"node": node, "mode": mode.as_str(), "for_ms": for_ms}),
            ),
            Action::HoldAnswers(p) => NemesisEvent::new("partition", held_answers(*p)),
            Action::Reconfigure {
                change, throttle, ..
            } => {
                let mut e = reconfiguration_event(change);
                if let Some(t) = throttle {
                    e.value["throttle_bytes_per_s"] = json!(t.bytes_per_s);
                }
                e
            }
            Action::ReleaseAnswers(p) => NemesisEvent::new("heal", held_answers(*p)),
            Action::DiskOk { node, mode, for_ms } => NemesisEvent::new(
                "disk-ok",
                json!({"node": node, "mode": mode.as_str(), "for_ms": for_ms}),
            ),
            Action::Clock { proc, fault } => clock_event(*proc, *fault, false),
            Action::ClockReset { proc, fault } => clock_event(*proc, *fault, true),
            Action::Degrade {
                procs,
                between,
                how,
                seed,
            } => degraded(how.event(procs, *seed, false), procs, *between),
            Action::Restore {
                procs,
                between,
                how,
                seed,
            } => degraded(how.event(procs, *seed, true), procs, *between),
        }
    }

    /// The step that undoes this one, if it leaves something to undo.
    pub fn undo(&self) -> Option<Action> {
        match self {
            Action::Kill(p) => Some(Action::Restart(*p)),
            Action::KillOnceInIsr { leader, .. } => Some(Action::Restart(Proc::Node(*leader))),
            Action::LoseUnflushed(id)
            | Action::TornWrite { node: id, .. }
            | Action::Corrupt { node: id, .. } => Some(Action::Restart(Proc::Node(*id))),
            Action::CrashAll(nodes) => Some(Action::RestartEach(
                nodes.iter().map(|&id| (Duration::ZERO, id)).collect(),
            )),
            Action::Pause(p) => Some(Action::Resume(*p)),
            Action::Cut { shape, grudge } => Some(Action::Heal {
                shape: shape.clone(),
                grudge: grudge.clone(),
            }),
            Action::HoldAnswers(p) => Some(Action::ReleaseAnswers(*p)),
            Action::Disk { node, mode, for_ms } => Some(Action::DiskOk {
                node: *node,
                mode: *mode,
                for_ms: *for_ms,
            }),
            Action::Clock { proc, fault } => Some(Action::ClockReset {
                proc: *proc,
                fault: *fault,
            }),
            Action::Degrade {
                procs,
                between,
                how,
                seed,
            } => Some(Action::Restore {
                procs: procs.clone(),
                between: *between,
                how: *how,
                seed: *seed,
            }),
            Action::Reconfigure {
                throttle: Some(t), ..
            } => t.degrade().undo(),
            Action::Restart(_)
            | Action::ClockReset { .. }
            | Action::DiskOk { .. }
            | Action::Restore { .. }
            | Action::RestartEach(_)
            | Action::Resume(_)
            | Action::ReleaseAnswers(_)
            | Action::Reconfigure { .. }
            | Action::Heal { .. } => None,
        }
    }

    /// Does this step undo `earlier`?
    pub fn undoes(&self, earlier: &Action) -> bool {
        match (self, earlier) {
            (Action::Restart(p), Action::Kill(q)) => p == q,
            (Action::Restart(Proc::Node(id)), Action::KillOnceInIsr { leader, .. }) => id == leader,
            (Action::Restart(Proc::Node(id)), Action::LoseUnflushed(other))
            | (Action::Restart(Proc::Node(id)), Action::TornWrite { node: other, .. })
            | (Action::Restart(Proc::Node(id)), Action::Corrupt { node: other, .. }) => id == other,
            (Action::RestartEach(_), Action::CrashAll(_)) => true,
            (Action::Resume(p), Action::Pause(q)) => p == q,
            (Action::Heal { grudge, .. }, Action::Cut { grudge: cut, .. }) => grudge == cut,
            (Action::ReleaseAnswers(p), Action::HoldAnswers(q)) => p == q,
            (Action::DiskOk { node, .. }, Action::Disk { node: failed, .. }) => node == failed,
            (Action::ClockReset { proc, .. }, Action::Clock { proc: p, .. }) => proc == p,
            (
                Action::Restore {
                    procs,
                    between,
                    how,
                    ..
                },
                Action::Degrade {
                    procs: p,
                    between: b,
                    how: h,
                    ..
                },
            ) => procs == p && between == b && how.kind() == h.kind(),
            (
                Action::Restore { .. },
                Action::Reconfigure {
                    throttle: Some(t), ..
                },
            ) => self.undoes(&t.degrade()),
            _ => false,
        }
    }

    /// For the decision's record: `kill 2`, `partition isolate-leader`, ….
    pub fn describe(&self) -> String {
        if let Action::Reconfigure {
            change, throttle, ..
        } = self
        {
            let throttled = throttle.as_ref().map_or_else(String::new, |t| {
                format!(" throttled to {} B/s", t.bytes_per_s)
            });
            let said = match change {
                Reconfiguration::AddPartitions { topic, count } => {
                    format!("add-partitions {topic} to {count}")
                }
                Reconfiguration::Reassign {
                    topic,
                    partition,
                    replicas,
                    ..
                } => format!("reassign {topic}-{partition} to {replicas:?}"),
                Reconfiguration::CancelReassignment { topic, partition } => {
                    format!("cancel-reassignment {topic}-{partition}")
                }
            };
            return said + &throttled;
        }
        if let Action::KillOnceInIsr {
            leader,
            follower,
            topic,
            partition,
            within,
        } = self
        {
            return format!(
                "kill {leader} once {follower} is in the ISR of {topic}-{partition} (within {} ms)",
                within.as_millis()
            );
        }
        let e = self.event();
        // Each field read as optional: the events differ in shape.
        let field = |m: &serde_json::Map<String, Value>, key: &str| {
            m.get(key)
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                .map_or_else(String::new, |v| format!(" {v}"))
        };
        match &e.value {
            Value::Object(m) if m.contains_key("node") => {
                format!("{}{}{}", e.f, field(m, "node"), field(m, "mode"))
            }
            Value::Object(m) if m.contains_key("offset_ms") => {
                format!("{}{}{}", e.f, field(m, "proc"), field(m, "offset_ms"))
            }
            Value::Object(m) if m.contains_key("procs") => {
                let procs: Vec<String> = m["procs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                    .collect();
                format!("{} {}", e.f, procs.join(","))
            }
            Value::Object(m) => format!("{}{}", e.f, field(m, "topology")),
            Value::Array(items) => {
                let items: Vec<String> = items
                    .iter()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                    .collect();
                format!("{} {}", e.f, items.join(","))
            }
            v => format!("{} {v}", e.f),
        }
    }
}

/// A pattern's steps: each runs after its delay from the previous one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    pub steps: Vec<(Duration, Action)>,
    /// A stretch (from the script's start) in which, by the system's own contract,
    /// the partition aimed at must take acks=all writes despite what the script
    /// does: the plan declares it and the `availability` verdict judges it.
    pub available: Option<(Duration, Duration)>,
}

impl Script {
    /// Add a step `after` the previous one.
    pub fn then(mut self, after: Duration, action: Action) -> Script {
        self.steps.push((after, action));
        self
    }

    /// Declare that the partition must take writes from `from` to `to` after the
    /// script's start.
    pub fn available(mut self, from: Duration, to: Duration) -> Script {
        self.available = (from < to).then_some((from, to));
        self
    }

    /// How long the whole script takes at most (restart gaps, and the longest a
    /// kill timed by the cluster's state waits, included).
    pub fn length(&self) -> Duration {
        self.steps
            .iter()
            .map(|(after, a)| match a {
                Action::RestartEach(order) => *after + order.iter().map(|(g, _)| *g).sum(),
                Action::KillOnceInIsr { within, .. } => *after + *within,
                _ => *after,
            })
            .sum()
    }

    /// Every step undone by a later one: a script leaves nothing behind.
    pub fn leaves_nothing(&self) -> bool {
        self.steps.iter().enumerate().all(|(i, (_, a))| {
            a.undo().is_none() || self.steps[i + 1..].iter().any(|(_, b)| b.undoes(a))
        })
    }

    /// For the decision's record: each step with its time from the start.
    pub fn to_json(&self) -> Value {
        let mut at = Duration::ZERO;
        let steps: Vec<Value> = self
            .steps
            .iter()
            .map(|(after, a)| {
                at += *after;
                let mut step = json!({"at_ms": at.as_millis() as u64, "do": a.describe()});
                if let Action::RestartEach(order) = a {
                    let gaps: Vec<u64> = order.iter().map(|(g, _)| g.as_millis() as u64).collect();
                    step["gaps_ms"] = json!(gaps);
                    at += order.iter().map(|(g, _)| *g).sum::<Duration>();
                }
                step
            })
            .collect();
        Value::Array(steps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_recorded_under_the_fault_lists_names() {
        let ms = Duration::from_millis;
        let cut = Action::Cut {
            shape: "isolate-leader".into(),
            grudge: Grudge::isolate(
                Proc::Node(1),
                &[Proc::Controller, Proc::Node(1), Proc::Node(2)],
            ),
        };
        let script = Script::default()
            .then(ms(0), Action::Kill(Proc::Node(2)))
            .then(ms(100), cut.clone())
            .then(ms(200), Action::Restart(Proc::Node(2)))
            .then(ms(300), cut.undo().unwrap())
            .then(ms(0), Action::CrashAll(vec![3, 1, 2]))
            .then(
                ms(50),
                Action::RestartEach(vec![(ms(10), 2), (ms(20), 1), (ms(30), 3)]),
            );
        assert!(script.leaves_nothing());
        assert_eq!(script.length(), ms(710));
        let json = script.to_json();
        assert_eq!(json[1]["do"], "partition isolate-leader");
        assert_eq!(json[2], json!({"at_ms": 300, "do": "restart 2"}));
        assert_eq!(json[5]["do"], "restart 2,1,3");
        assert_eq!(json[5]["gaps_ms"], json!([10, 20, 30]));
        assert_eq!(
            Action::CrashAll(vec![3, 1, 2]).event().value,
            json!([1, 2, 3])
        );
        assert_eq!(
            Action::Pause(Proc::Controller).describe(),
            "pause controller"
        );
        let unhealed = Script::default().then(ms(0), cut);
        assert!(!unhealed.leaves_nothing());
    }

    #[test]
    fn a_kill_timed_by_the_isr_is_a_kill_undone_by_a_restart() {
        let kill = Action::KillOnceInIsr {
            leader: 1,
            follower: 2,
            topic: "queue".into(),
            partition: 0,
            within: Duration::from_millis(900),
        };
        assert_eq!(kill.event(), Action::Kill(Proc::Node(1)).event());
        assert_eq!(kill.undo(), Some(Action::Restart(Proc::Node(1))));
        assert!(Action::Restart(Proc::Node(1)).undoes(&kill));
        assert!(!Action::Restart(Proc::Node(2)).undoes(&kill));
        assert_eq!(
            kill.describe(),
            "kill 1 once 2 is in the ISR of queue-0 (within 900 ms)"
        );
        let script = Script::default()
            .then(Duration::from_millis(100), kill)
            .then(Duration::from_millis(50), Action::Restart(Proc::Node(1)));
        assert!(script.leaves_nothing());
        // The longest it may wait counts in the script's length.
        assert_eq!(script.length(), Duration::from_millis(1050));
    }

    /// Every action says what it does in one line, whatever its event's shape.
    #[test]
    fn the_storage_and_clock_actions_describe_themselves() {
        let clock = ClockFault::Step { offset_ms: -60_000 };
        for (action, said) in [
            (Action::TornWrite { node: 2, seed: 9 }, "torn-write 2"),
            (Action::Corrupt { node: 3, seed: 1 }, "corrupt 3"),
            (Action::LoseUnflushed(1), "lose-unflushed 1"),
            (
                Action::Clock {
                    proc: Proc::Node(1),
                    fault: clock,
                },
                "clock-step 1 -60000",
            ),
            (
                Action::ClockReset {
                    proc: Proc::Node(1),
                    fault: clock,
                },
                "clock-reset 1 0",
            ),
        ] {
            assert_eq!(action.describe(), said);
        }
    }

    #[test]
    fn a_degradation_is_recorded_as_the_fault_lists_record_it_and_undone() {
        let how = Degradation::Throttle { bytes_per_s: 4096 };
        let slow = Action::Degrade {
            procs: vec![Proc::Node(3)],
            between: false,
            how,
            seed: 7,
        };
        assert_eq!(slow.event().f, "throttle");
        assert_eq!(slow.describe(), "throttle 3");
        assert!(slow.event().value.get("links").is_none());
        let restore = slow.undo().expect("undone");
        assert_eq!(restore.event().f, "stop-throttle");
        assert!(restore.undoes(&slow));
        // Only the links between two processes: both ways, named.
        let path = Action::Degrade {
            procs: vec![Proc::Node(2), Proc::Node(1)],
            between: true,
            how,
            seed: 7,
        };
        assert_eq!(path.event().value["links"], json!([[2, 1], [1, 2]]));
        assert_eq!(path.event().value["procs"], json!([2, 1]));
        assert!(path.undo().unwrap().undoes(&path));
        assert!(!restore.undoes(&path));
    }
}
