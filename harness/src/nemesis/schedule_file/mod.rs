//! Fault schedules as data (`schedule.json`, `watermark run --schedule FILE`):
//! every campaign writes the faults it applied — each with its time from the
//! workload's start, its target as a role ([`Target`]: `leader of queue/0`,
//! `active-controller`) and as the process it was, how long it lasted, and the
//! decision that made it — and a run given a schedule plays exactly those faults,
//! resolving each role against the live cluster when its time comes. The format is
//! written to be read and written by hand (docs/faults.md, "Schedule files"):
//!
//! ```json
//! {"schedule": 1, "faults": [
//! {"at": 5, "fault": "kill", "target": "leader of queue/0", "for": 4},
//! {"at": 12, "fault": "partition", "isolate": "active-controller", "for": 6}
//! ]}
//! ```
//!
//! - `parse`: reading a file, every error naming its line and field;
//! - `record`: the schedule of a campaign, from the steps the interpreter applied;
//! - `source`: a file played as a schedule source.

mod parse;
mod record;
mod source;
mod target;

use std::time::Duration;

use serde_json::{Value, json};

use super::fault::Degradation;
use crate::system::DiskMode;
use crate::system::clock::ClockFault;

pub use parse::ScheduleError;
pub use record::Recorder;
pub use source::ScheduleSource;
pub use target::Target;

/// How long a reassignment waits (for one in progress to end, then to complete)
/// when its file does not say.
pub const REASSIGN_SETTLE: Duration = Duration::from_secs(3);

/// The version a schedule file states (`"schedule": 1`).
pub const VERSION: u64 = 1;

/// A schedule: the faults in the order they start, and optionally the seed and
/// length of the run it reproduces (what `watermark shrink` writes; `--seed` and
/// `--time-limit` take precedence).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScheduleFile {
    pub faults: Vec<Entry>,
    pub seed: Option<u64>,
    /// Seconds.
    pub time_limit: Option<f64>,
    /// Whether every kill also cuts its node's power, as in the run the schedule
    /// was recorded from (written by watermark). When absent: as soon as the
    /// schedule cuts a power itself (`lose-unflushed`, `torn-write`), as in a
    /// campaign whose fault list names them. Options that make every kill cut
    /// power (a flush policy under the replication package) do so regardless.
    pub kills_cut_power: Option<bool>,
}

/// One fault of a schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// When it starts, from the workload's start.
    pub at: Duration,
    /// How long until its end is applied (None: it has no end, or it lasts to the
    /// end of the run).
    pub lasts: Option<Duration>,
    pub fault: Spec,
    /// The processes its targets were when it was applied, in the order
    /// [`Spec::targets`] names them; with `plan`, a replay binds them (see
    /// [`source`]).
    pub process: Option<String>,
    /// The number of the decision (the `plan`) that made it: the faults of one plan
    /// strike the same process where the original did.
    pub plan: Option<u64>,
    /// Recorded, not played: the decision that made it (a pattern and its variant).
    pub trigger: Option<String>,
    /// The line of the file it was read from (0: made, not read).
    pub line: usize,
}

/// What a fault does, on targets named by role or id.
#[derive(Debug, Clone, PartialEq)]
pub enum Spec {
    Kill(Target),
    /// Kill `target` as soon as `follower` is in the ISR of the partition (or after
    /// `within`): a kill the replication package times by the cluster's state.
    KillOnceInIsr {
        target: Target,
        follower: Target,
        topic: String,
        partition: u32,
        within: Duration,
    },
    Pause(Target),
    /// SIGKILL of a node run with the page cache simulated: its unflushed bytes lost.
    LoseUnflushed(Target),
    /// The same, keeping a prefix of the last unsynced write (its length drawn from
    /// `seed`).
    TornWrite {
        target: Target,
        seed: u64,
    },
    /// A node killed and one of its files damaged as `seed` draws.
    Corrupt {
        target: Target,
        seed: u64,
    },
    /// Hold the process's answers to the clients.
    HoldAnswers(Target),
    /// Every node killed at once; at its end restarted in the order of `restarts`,
    /// each after its gap from the one before (the nodes it does not name last, at
    /// once). The roles are resolved when the crash starts, while there still is a
    /// leader to name: `crash-all`'s old leader comes back last, seconds after the
    /// others.
    CrashAll {
        restarts: Vec<(Target, Duration)>,
    },
    Partition {
        shape: String,
        links: Links,
    },
    Degrade {
        targets: Vec<Target>,
        between: bool,
        how: Degradation,
        seed: u64,
    },
    Disk {
        target: Target,
        mode: DiskMode,
    },
    /// A move of the partition to `replicas`, which waits up to `settle` for a move
    /// in progress to end before it asks and for itself to complete after (holding
    /// back the faults after it, as the pattern that made it did).
    Reassign {
        topic: String,
        partition: u32,
        replicas: Vec<i32>,
        settle: Duration,
        /// The partition's replicas before the move, by role (recorded): in a plan,
        /// they bind the node ids of `replicas` to the processes a replay finds in
        /// those roles.
        from: Vec<Target>,
        /// Kafka's reassignment throttle, in bytes/s, on the links between the
        /// leader and the replicas the move adds, until the fault's end.
        throttle: Option<u64>,
    },
    AddPartitions {
        topic: String,
        count: u32,
    },
    /// The partition's reassignment in progress cancelled (KIP-455): back to the
    /// replicas of before it.
    CancelReassignment {
        topic: String,
        partition: u32,
    },
    /// A process's wall clock set as `fault` says, true again at the end.
    Clock {
        target: Target,
        fault: ClockFault,
    },
}

/// The links a partition cuts.
#[derive(Debug, Clone, PartialEq)]
pub enum Links {
    /// Every link to and from the target.
    Isolate(Target),
    /// These directed links.
    Cut(Vec<(Target, Target)>),
}

impl Spec {
    /// Its name in the file (as in the history: `kill`, `partition`, `slow`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Spec::Kill(_) | Spec::KillOnceInIsr { .. } => "kill",
            Spec::Pause(_) => "pause",
            Spec::LoseUnflushed(_) => "lose-unflushed",
            Spec::TornWrite { .. } => "torn-write",
            Spec::Corrupt { .. } => "corrupt",
            Spec::HoldAnswers(_) => "hold-answers",
            Spec::CrashAll { .. } => "crash-all",
            Spec::Partition { .. } => "partition",
            Spec::Degrade { how, .. } => match how {
                Degradation::Slow { .. } => "slow",
                Degradation::Flaky { .. } => "flaky",
                Degradation::Throttle { .. } => "throttle",
            },
            Spec::Disk { .. } => "disk",
            Spec::Reassign { .. } => "reassign",
            Spec::AddPartitions { .. } => "add-partitions",
            Spec::CancelReassignment { .. } => "cancel-reassignment",
            Spec::Clock { fault, .. } => match fault {
                ClockFault::Offset { .. } => "clock-offset",
                ClockFault::Step { .. } => "clock-step",
                ClockFault::Strobe { .. } => "clock-strobe",
            },
        }
    }

    /// The partition its first target's role is of (a leader's, a follower's).
    pub fn partition(&self) -> Option<(&str, u32)> {
        fn role(t: &Target) -> Option<(&str, u32)> {
            match t {
                Target::LeaderOf { topic, partition }
                | Target::FollowerOf {
                    topic, partition, ..
                } => Some((topic.as_str(), *partition)),
                _ => None,
            }
        }
        match self {
            Spec::Kill(t)
            | Spec::Pause(t)
            | Spec::LoseUnflushed(t)
            | Spec::TornWrite { target: t, .. }
            | Spec::Corrupt { target: t, .. }
            | Spec::Clock { target: t, .. }
            | Spec::HoldAnswers(t)
            | Spec::Disk { target: t, .. }
            | Spec::Partition {
                links: Links::Isolate(t),
                ..
            } => role(t),
            Spec::Partition {
                links: Links::Cut(pairs),
                ..
            } => pairs.iter().find_map(|(a, b)| role(a).or(role(b))),
            Spec::Degrade { targets, .. } => targets.iter().find_map(role),
            Spec::CrashAll { restarts } => restarts.iter().find_map(|(t, _)| role(t)),
            Spec::Reassign {
                topic, partition, ..
            }
            | Spec::CancelReassignment { topic, partition }
            | Spec::KillOnceInIsr {
                topic, partition, ..
            } => Some((topic.as_str(), *partition)),
            Spec::AddPartitions { .. } => None,
        }
    }

    /// The processes it names, each once, in the order its `process` lists them:
    /// its target (a timed kill's, then the follower it waits on), its targets, a
    /// cut's processes as its pairs first name them, a reassignment's replicas
    /// before the move; none for a crash-all (its restarts are resolved together).
    pub fn targets(&self) -> Vec<&Target> {
        fn add<'a>(t: &'a Target, out: &mut Vec<&'a Target>) {
            if !out.contains(&t) {
                out.push(t);
            }
        }
        let mut out: Vec<&Target> = Vec::new();
        match self {
            Spec::Kill(t)
            | Spec::Pause(t)
            | Spec::LoseUnflushed(t)
            | Spec::HoldAnswers(t)
            | Spec::TornWrite { target: t, .. }
            | Spec::Corrupt { target: t, .. }
            | Spec::Clock { target: t, .. }
            | Spec::Disk { target: t, .. }
            | Spec::Partition {
                links: Links::Isolate(t),
                ..
            } => out.push(t),
            Spec::KillOnceInIsr {
                target, follower, ..
            } => {
                add(target, &mut out);
                add(follower, &mut out);
            }
            Spec::Partition {
                links: Links::Cut(pairs),
                ..
            } => {
                for (a, b) in pairs {
                    add(a, &mut out);
                    add(b, &mut out);
                }
            }
            Spec::Degrade { targets, .. } => targets.iter().for_each(|t| add(t, &mut out)),
            Spec::Reassign { from, .. } => from.iter().for_each(|t| add(t, &mut out)),
            Spec::CrashAll { .. }
            | Spec::AddPartitions { .. }
            | Spec::CancelReassignment { .. } => {}
        }
        out
    }

    /// How long its end takes after it begins: a crash-all's gaps between restarts.
    pub fn restarting(&self) -> Duration {
        match self {
            Spec::CrashAll { restarts } => restarts.iter().map(|(_, gap)| *gap).sum(),
            _ => Duration::ZERO,
        }
    }

    /// Its fields in the file, but for `fault`, in the order they are written.
    fn fields(&self) -> Vec<(&'static str, Value)> {
        let t = |t: &Target| json!(t.to_string());
        match self {
            Spec::Kill(x) | Spec::Pause(x) | Spec::LoseUnflushed(x) | Spec::HoldAnswers(x) => {
                vec![("target", t(x))]
            }
            Spec::TornWrite { target, seed } | Spec::Corrupt { target, seed } => {
                vec![("target", t(target)), ("seed", json!(seed))]
            }
            Spec::Clock { target, fault } => {
                let mut f = vec![
                    ("target", t(target)),
                    ("offset_ms", json!(fault.offset_ms())),
                ];
                if let ClockFault::Strobe { period_ms, .. } = fault {
                    f.push(("period_ms", json!(period_ms)));
                }
                f
            }
            Spec::KillOnceInIsr {
                target,
                follower,
                topic,
                partition,
                within,
            } => vec![
                ("target", t(target)),
                ("once_in_isr", t(follower)),
                ("of", json!(format!("{topic}/{partition}"))),
                ("within", seconds(*within)),
            ],
            Spec::CrashAll { restarts } if restarts.is_empty() => Vec::new(),
            Spec::CrashAll { restarts } => vec![(
                "restart",
                restarts
                    .iter()
                    .map(|(x, gap)| json!([t(x), seconds(*gap)]))
                    .collect(),
            )],
            Spec::Partition { shape, links } => {
                let links = match links {
                    Links::Isolate(x) => ("isolate", t(x)),
                    Links::Cut(pairs) => (
                        "cut",
                        pairs.iter().map(|(a, b)| json!([t(a), t(b)])).collect(),
                    ),
                };
                vec![links, ("shape", json!(shape))]
            }
            Spec::Degrade {
                targets,
                between,
                how,
                seed,
            } => {
                let mut v = vec![("targets", targets.iter().map(t).collect::<Value>())];
                if *between {
                    v.push(("between", json!(true)));
                }
                match *how {
                    Degradation::Slow {
                        delay_ms,
                        jitter_ms,
                    } => v.extend([
                        ("delay_ms", json!(delay_ms)),
                        ("jitter_ms", json!(jitter_ms)),
                    ]),
                    Degradation::Flaky {
                        reset_pct,
                        loss_pct,
                    } => v.extend([
                        ("reset_pct", json!(reset_pct)),
                        ("loss_pct", json!(loss_pct)),
                    ]),
                    Degradation::Throttle { bytes_per_s } => {
                        v.push(("bytes_per_s", json!(bytes_per_s)))
                    }
                }
                v.push(("seed", json!(seed)));
                v
            }
            Spec::Disk { target, mode } => {
                vec![("target", t(target)), ("mode", json!(mode.as_str()))]
            }
            Spec::Reassign {
                topic,
                partition,
                replicas,
                settle,
                from,
                throttle,
            } => {
                let mut v = vec![
                    ("partition", json!(format!("{topic}/{partition}"))),
                    ("replicas", json!(replicas)),
                    ("settle", seconds(*settle)),
                ];
                if let Some(b) = throttle {
                    v.push(("throttle_bytes_per_s", json!(b)));
                }
                if !from.is_empty() {
                    v.push(("from", from.iter().map(t).collect()));
                }
                v
            }
            Spec::AddPartitions { topic, count } => {
                vec![("topic", json!(topic)), ("count", json!(count))]
            }
            Spec::CancelReassignment { topic, partition } => {
                vec![("partition", json!(format!("{topic}/{partition}")))]
            }
        }
    }
}

/// Seconds as the file writes them: to the millisecond.
fn seconds(d: Duration) -> Value {
    json!((d.as_millis() as f64) / 1000.0)
}

impl Entry {
    /// Its fields in the order the file writes them: `at`, `fault`, what it
    /// does, `for`, then what was recorded.
    fn fields(&self) -> Vec<(&'static str, Value)> {
        let mut v = vec![
            ("at", seconds(self.at)),
            ("fault", json!(self.fault.name())),
        ];
        v.extend(self.fault.fields());
        if let Some(d) = self.lasts {
            v.push(("for", seconds(d)));
        }
        if let Some(p) = &self.process {
            v.push(("process", json!(p)));
        }
        if let Some(n) = self.plan {
            v.push(("plan", json!(n)));
        }
        if let Some(t) = &self.trigger {
            v.push(("trigger", json!(t)));
        }
        v
    }

    /// Its `process`, read: one process per target (None: not recorded, or not
    /// one a target).
    pub fn processes(&self) -> Option<Vec<crate::proc::Proc>> {
        let listed: Vec<crate::proc::Proc> = self
            .process
            .as_deref()?
            .split(',')
            .map(|p| match Target::parse(p).ok()? {
                Target::Node(id) => Some(crate::proc::Proc::Node(id)),
                Target::Controller => Some(crate::proc::Proc::Controller),
                _ => None,
            })
            .collect::<Option<_>>()?;
        (listed.len() == self.fault.targets().len()).then_some(listed)
    }

    /// The entry as one line of the file.
    pub fn to_line(&self) -> String {
        let fields: Vec<String> = self
            .fields()
            .into_iter()
            .map(|(k, v)| format!("{}: {v}", json!(k)))
            .collect();
        format!("{{{}}}", fields.join(", "))
    }
}

impl ScheduleFile {
    /// The file's text: one fault a line, so that a line number names a fault.
    pub fn to_text(&self) -> String {
        let mut out = format!("{{\"schedule\": {VERSION}, ");
        if let Some(seed) = self.seed {
            out.push_str(&format!("\"seed\": {seed}, "));
        }
        if let Some(t) = self.time_limit {
            out.push_str(&format!("\"time_limit\": {}, ", json!(t)));
        }
        if let Some(k) = self.kills_cut_power {
            out.push_str(&format!("\"kills_cut_power\": {k}, "));
        }
        out.push_str("\"faults\": [\n");
        for (i, e) in self.faults.iter().enumerate() {
            out.push_str(&e.to_line());
            out.push_str(if i + 1 < self.faults.len() {
                ",\n"
            } else {
                "\n"
            });
        }
        out.push_str("]}\n");
        out
    }

    /// Read a file's text (see [`parse`]).
    pub fn parse(text: &str) -> Result<ScheduleFile, ScheduleError> {
        parse::parse(text)
    }

    /// How long it runs: the last start or end (a crash-all's last restart).
    pub fn length(&self) -> Duration {
        self.faults
            .iter()
            .map(|e| e.at + e.lasts.unwrap_or_default() + e.fault.restarting())
            .max()
            .unwrap_or_default()
    }

    /// Whether some fault loses unflushed bytes (the brokers then simulate a page
    /// cache).
    pub fn loses_unflushed(&self) -> bool {
        self.faults
            .iter()
            .any(|e| matches!(e.fault, Spec::LoseUnflushed(_) | Spec::TornWrite { .. }))
    }

    /// Whether some fault works on a node's storage (a power cut, damage, a failing
    /// disk: the nodes then need their fault filesystems).
    pub fn touches_storage(&self) -> bool {
        self.loses_unflushed()
            || self
                .faults
                .iter()
                .any(|e| matches!(e.fault, Spec::Corrupt { .. } | Spec::Disk { .. }))
    }

    /// Whether some fault sets a clock (the processes then run under fake clocks).
    pub fn sets_clocks(&self) -> bool {
        self.faults
            .iter()
            .any(|e| matches!(e.fault, Spec::Clock { .. }))
    }
}
