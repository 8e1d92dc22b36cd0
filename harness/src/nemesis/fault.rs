//! The faults of docs/faults.md: the kinds a user asks for with `--nemesis`, how a
//! degraded link is degraded, and the shape of every nemesis event in the history.

use clap::ValueEnum;
use serde::Serialize;
use serde_json::{Value, json};

use crate::names::by_name;
use crate::net::{Conditions, Flaky, Slow, Topology};
use crate::proc::Proc;

/// A fault the user can ask for with `--nemesis`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, ValueEnum)]
pub enum FaultKind {
    /// The default: fault patterns aimed at the replication protocol (the leader,
    /// the next-in-line follower, the controller), timed around the cluster's
    /// timeouts, favouring what the campaign has not exercised yet (on its own).
    Replication,
    /// SIGKILL a node or the controller, restart it later on the same data dir.
    Kill,
    /// SIGSTOP a node or the controller, SIGCONT it later.
    Pause,
    /// Cut the network in any of the shapes: isolate-one, isolate-leader,
    /// isolate-controller, halves, bridge; heal it later.
    Partition,
    /// Cut the leader of a random partition off from every other process.
    IsolateLeader,
    /// Cut the controller off from every node.
    IsolateController,
    /// SIGKILL every node at once, restart them in random order.
    CrashAll,
    /// SIGKILL a node and cut its power: what it wrote and did not fsync is lost
    /// (every kill then does so; with `--no-fault-fs`, through the brokers'
    /// `--simulate-page-cache`).
    LoseUnflushed,
    /// The same, keeping a prefix of the last write the node did not fsync (a torn
    /// write; with `--no-fault-fs`, as `lose-unflushed`).
    TornWrite,
    /// SIGKILL a node and, while it is down, damage one of its files (bits flipped,
    /// cut short, a range zeroed), drawn from the fault's seed; restart it later.
    Corrupt,
    /// Latency with jitter on every link to and from some processes (clients' too).
    Slow,
    /// Lost segments (stalled chunks) and connection resets on those links.
    Flaky,
    /// A bandwidth limit on those links.
    Throttle,
    /// Make a node's disk full (ENOSPC) or failing (EIO) for a while, through its
    /// fault filesystem (with `--no-fault-fs`, its `POST /debug/disk` switch), then
    /// make it work again.
    Disk,
    /// Move a partition of the workload's first topic to other replicas (reordered,
    /// one fewer, one more, one swapped), and back later.
    Reassign,
    /// Add a partition to the queue's topic (up to four in a campaign): its clients
    /// find it in the metadata.
    AddPartitions,
    /// Set a process's wall clock off by up to ±10 s (a skew between machines),
    /// true again later.
    ClockOffset,
    /// Step a process's wall clock forward or back by 1 min to 2 h (a bad time
    /// source), true again later.
    ClockStep,
    /// Flip a process's wall clock between true time and an offset of up to ±10 s,
    /// every 10–500 ms, for a while.
    ClockStrobe,
}

by_name!(FaultKind => "fault");

impl FaultKind {
    /// A fault worked on a node's storage: its fault filesystem (or, with
    /// `--no-fault-fs`, our broker's own switches).
    pub fn is_storage(self) -> bool {
        matches!(
            self,
            FaultKind::LoseUnflushed | FaultKind::TornWrite | FaultKind::Corrupt | FaultKind::Disk
        )
    }

    /// A fault of the processes' clocks (they then run under a fake clock).
    pub fn is_clock(self) -> bool {
        matches!(
            self,
            FaultKind::ClockOffset | FaultKind::ClockStep | FaultKind::ClockStrobe
        )
    }

    /// The partition shapes this kind draws from (empty for non-partition kinds).
    pub fn topologies(self) -> &'static [Topology] {
        match self {
            FaultKind::Partition => Topology::value_variants(),
            FaultKind::IsolateLeader => &[Topology::IsolateLeader],
            FaultKind::IsolateController => &[Topology::IsolateController],
            _ => &[],
        }
    }
}

/// Must the kills of nodes lose what was not fsynced (power cuts of the fault
/// filesystem, or brokers run with `--simulate-page-cache`)? `lose-unflushed`
/// must; so must the replication package when the brokers flush on a policy
/// (`--flush-messages`: it then plays `lose-unflushed` too). Without a flush policy
/// nothing is ever flushed, and a node losing its unflushed bytes would lose its
/// whole log.
pub fn needs_page_cache(kinds: &[FaultKind], flush_messages: Option<u64>) -> bool {
    kinds.contains(&FaultKind::LoseUnflushed)
        || kinds.contains(&FaultKind::TornWrite)
        || (kinds.contains(&FaultKind::Replication) && flush_messages.is_some())
}

/// How a `slow`, `flaky` or `throttle` fault degrades its links, as drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Degradation {
    Slow {
        delay_ms: u64,
        jitter_ms: u64,
    },
    /// Fractions in percent.
    Flaky {
        reset_pct: u32,
        loss_pct: u32,
    },
    Throttle {
        bytes_per_s: u64,
    },
}

impl Degradation {
    pub fn kind(self) -> FaultKind {
        match self {
            Degradation::Slow { .. } => FaultKind::Slow,
            Degradation::Flaky { .. } => FaultKind::Flaky,
            Degradation::Throttle { .. } => FaultKind::Throttle,
        }
    }

    /// Put this degradation on a link's conditions.
    pub fn apply(self, c: &mut Conditions) {
        let ms = std::time::Duration::from_millis;
        match self {
            Degradation::Slow {
                delay_ms,
                jitter_ms,
            } => {
                c.slow = Some(Slow {
                    delay: ms(delay_ms),
                    jitter: ms(jitter_ms),
                })
            }
            Degradation::Flaky {
                reset_pct,
                loss_pct,
            } => {
                c.flaky = Some(Flaky {
                    reset: f64::from(reset_pct) / 100.0,
                    loss: f64::from(loss_pct) / 100.0,
                })
            }
            Degradation::Throttle { bytes_per_s } => c.throttle = Some(bytes_per_s),
        }
    }

    /// Take this degradation off a link's conditions.
    pub fn clear(self, c: &mut Conditions) {
        match self {
            Degradation::Slow { .. } => c.slow = None,
            Degradation::Flaky { .. } => c.flaky = None,
            Degradation::Throttle { .. } => c.throttle = None,
        }
    }

    /// Its parameters, for the history.
    fn params(self) -> Value {
        match self {
            Degradation::Slow {
                delay_ms,
                jitter_ms,
            } => json!({"delay_ms": delay_ms, "jitter_ms": jitter_ms}),
            Degradation::Flaky {
                reset_pct,
                loss_pct,
            } => {
                json!({"reset": f64::from(reset_pct) / 100.0, "loss": f64::from(loss_pct) / 100.0})
            }
            Degradation::Throttle { bytes_per_s } => json!({"bytes_per_s": bytes_per_s}),
        }
    }

    /// The history event of a fault degrading `procs` this way: `slow`, `flaky` or
    /// `throttle` (`stop-…` at its end), the targets, the parameters and the seed.
    pub(super) fn event(self, procs: &[Proc], seed: u64, end: bool) -> NemesisEvent {
        let name = self.kind().to_string();
        let f = if end { format!("stop-{name}") } else { name };
        let mut value = self.params();
        value["procs"] = procs.iter().map(|p| p.to_json()).collect();
        value["seed"] = json!(seed);
        NemesisEvent::new(&f, value)
    }
}

/// A fault's start or end, for history.jsonl: `f` names it, `value` its targets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NemesisEvent {
    pub f: String,
    pub value: Value,
}

impl NemesisEvent {
    pub fn new(f: &str, value: Value) -> NemesisEvent {
        NemesisEvent { f: f.into(), value }
    }

    /// A decision of the nemesis (`plan`, or the `active-controller` a fault aimed
    /// at the controller found), or what a fault did (`power-cut`: what a killed
    /// process's storage lost): it starts or ends no fault itself.
    pub fn is_decision(&self) -> bool {
        matches!(
            self.f.as_str(),
            "plan" | "active-controller" | "power-cut" | "corrupted"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lose_unflushed_needs_the_page_cache_simulation() {
        use FaultKind::*;
        assert!(needs_page_cache(&[Kill, LoseUnflushed], None));
        assert!(!needs_page_cache(&[Kill], None));
        assert!(!needs_page_cache(&[Replication], None));
        assert!(!needs_page_cache(&[Kill], Some(1)));
        assert!(needs_page_cache(&[Replication], Some(100)));
    }

    #[test]
    fn degraded_links_record_their_targets_and_parameters() {
        let how = Degradation::Flaky {
            reset_pct: 2,
            loss_pct: 10,
        };
        let procs = [Proc::Controller, Proc::Node(2)];
        let e = how.event(&procs, 9, false);
        assert_eq!(e.f, "flaky");
        assert_eq!(
            e.value,
            json!({"procs": ["controller", 2], "reset": 0.02, "loss": 0.1, "seed": 9})
        );
        let end = how.event(&procs, 9, true);
        assert_eq!((end.f.as_str(), end.value), ("stop-flaky", e.value));
        let mut c = Conditions::default();
        Degradation::Slow {
            delay_ms: 50,
            jitter_ms: 10,
        }
        .apply(&mut c);
        Degradation::Throttle { bytes_per_s: 1000 }.apply(&mut c);
        assert_eq!(c.throttle, Some(1000));
        Degradation::Throttle { bytes_per_s: 1 }.clear(&mut c);
        assert_eq!(c.throttle, None);
        assert_eq!(
            c.slow.map(|s| s.delay),
            Some(std::time::Duration::from_millis(50))
        );
    }
}
