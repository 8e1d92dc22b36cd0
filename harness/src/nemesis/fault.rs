//! The faults of docs/faults.md: the kinds a user asks for with `--nemesis`, a fault
//! with its targets drawn, and the history events of its start and end.

use serde::Serialize;
use serde_json::{Value, json};

use crate::net::{Grudge, Topology};
use crate::proc::Proc;

/// A fault the user can ask for with `--nemesis`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// SIGKILL a node or the controller, restart it later on the same data dir.
    Kill,
    /// SIGSTOP a node or the controller, SIGCONT it later.
    Pause,
    /// Any partition topology: isolate-one, isolate-leader, isolate-controller, halves, bridge.
    Partition,
    /// Only the isolate-leader topology.
    IsolateLeader,
    /// Only the isolate-controller topology.
    IsolateController,
    /// SIGKILL every node at once, restart them in random order.
    CrashAll,
    /// SIGKILL a node run with `--simulate-page-cache`: its unflushed bytes are lost.
    LoseUnflushed,
}

impl FaultKind {
    pub const ALL: [FaultKind; 7] = [
        FaultKind::Kill,
        FaultKind::Pause,
        FaultKind::Partition,
        FaultKind::IsolateLeader,
        FaultKind::IsolateController,
        FaultKind::CrashAll,
        FaultKind::LoseUnflushed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Pause => "pause",
            FaultKind::Partition => "partition",
            FaultKind::IsolateLeader => "isolate-leader",
            FaultKind::IsolateController => "isolate-controller",
            FaultKind::CrashAll => "crash-all",
            FaultKind::LoseUnflushed => "lose-unflushed",
        }
    }

    /// The partition shapes this kind draws from (empty for non-partition kinds).
    pub fn topologies(self) -> &'static [Topology] {
        match self {
            FaultKind::Partition => &Topology::ALL,
            FaultKind::IsolateLeader => &[Topology::IsolateLeader],
            FaultKind::IsolateController => &[Topology::IsolateController],
            _ => &[],
        }
    }
}

/// Parse `--nemesis`: a comma-separated list of fault names, or `none`.
pub fn parse_nemesis(list: &str) -> std::result::Result<Vec<FaultKind>, String> {
    let names: Vec<&str> = list.split(',').map(str::trim).collect();
    if names == ["none"] {
        return Ok(Vec::new());
    }
    let mut kinds = Vec::new();
    for name in names {
        if name == "none" {
            return Err(format!(
                "`none` cannot be combined with other faults in `{list}`"
            ));
        }
        let kind = FaultKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "unknown fault `{name}` in --nemesis `{list}`; known faults: {}, or none",
                    known.join(", ")
                )
            })?;
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Ok(kinds)
}

/// Extra `broker node` arguments the faults need: `lose-unflushed` needs every node
/// run with `--simulate-page-cache`.
pub fn node_args(kinds: &[FaultKind]) -> Vec<String> {
    if kinds.contains(&FaultKind::LoseUnflushed) {
        vec!["--simulate-page-cache".into()]
    } else {
        Vec::new()
    }
}

/// A fault with its targets drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    Kill(Proc),
    Pause(Proc),
    LoseUnflushed(i32),
    /// Every node, and the order they are restarted in.
    CrashAll(Vec<i32>),
    /// A partition; for isolate-leader the grudge is empty until the leader of
    /// `partition` is read from the controller.
    Partition {
        topology: Topology,
        grudge: Grudge,
        partition: u32,
    },
}

impl Fault {
    /// Processes this fault takes down (killed or paused).
    pub(super) fn down(&self) -> Vec<Proc> {
        match self {
            Fault::Kill(p) | Fault::Pause(p) => vec![*p],
            Fault::LoseUnflushed(id) => vec![Proc::Node(*id)],
            Fault::CrashAll(ids) => ids.iter().map(|&id| Proc::Node(id)).collect(),
            Fault::Partition { .. } => Vec::new(),
        }
    }

    /// Faults that must be alone.
    pub(super) fn exclusive(&self) -> bool {
        matches!(self, Fault::CrashAll(_) | Fault::Partition { .. })
    }

    /// The history event of its start.
    pub fn start_event(&self) -> NemesisEvent {
        match self {
            Fault::Kill(p) => NemesisEvent::new("kill", json!([p.to_json()])),
            Fault::Pause(p) => NemesisEvent::new("pause", json!([p.to_json()])),
            Fault::LoseUnflushed(id) => NemesisEvent::new("lose-unflushed", json!([id])),
            Fault::CrashAll(ids) => {
                let mut sorted = ids.clone();
                sorted.sort();
                NemesisEvent::new("crash-all", json!(sorted))
            }
            Fault::Partition {
                topology, grudge, ..
            } => NemesisEvent::new(
                "partition",
                json!({"topology": topology.name(), "grudge": grudge.to_json()}),
            ),
        }
    }

    /// The history event of its end.
    pub fn end_event(&self) -> NemesisEvent {
        match self {
            Fault::Kill(p) => NemesisEvent::new("restart", json!([p.to_json()])),
            Fault::Pause(p) => NemesisEvent::new("resume", json!([p.to_json()])),
            Fault::LoseUnflushed(id) => NemesisEvent::new("restart", json!([id])),
            Fault::CrashAll(order) => NemesisEvent::new("restart", json!(order)),
            Fault::Partition {
                topology, grudge, ..
            } => NemesisEvent::new(
                "heal",
                json!({"topology": topology.name(), "grudge": grudge.to_json()}),
            ),
        }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_unknown_ones_are_refused_clearly() {
        use FaultKind::*;
        assert_eq!(
            parse_nemesis("kill,pause,partition"),
            Ok(vec![Kill, Pause, Partition])
        );
        assert_eq!(
            parse_nemesis(" crash-all , kill,kill"),
            Ok(vec![CrashAll, Kill])
        );
        assert_eq!(parse_nemesis("none"), Ok(vec![]));
        let err = parse_nemesis("kill,explode").unwrap_err();
        assert!(
            err.contains("unknown fault `explode`") && err.contains("lose-unflushed"),
            "{err}"
        );
        assert!(parse_nemesis("none,kill").unwrap_err().contains("`none`"));
        assert!(parse_nemesis("").is_err());
        assert_eq!(
            node_args(&[Kill, LoseUnflushed]),
            vec!["--simulate-page-cache"]
        );
        assert!(node_args(&[Kill]).is_empty());
    }

    #[test]
    fn events_name_the_fault_and_its_targets() {
        let e = Fault::Kill(Proc::Node(2)).start_event();
        assert_eq!((e.f.as_str(), e.value), ("kill", json!([2])));
        let e = Fault::Pause(Proc::Controller).end_event();
        assert_eq!((e.f.as_str(), e.value), ("resume", json!(["controller"])));
        let e = Fault::CrashAll(vec![3, 1, 2]).end_event();
        assert_eq!((e.f.as_str(), e.value), ("restart", json!([3, 1, 2])));
        let grudge = Grudge::isolate(
            Proc::Node(1),
            &[Proc::Controller, Proc::Node(1), Proc::Node(2)],
        );
        let fault = Fault::Partition {
            topology: Topology::IsolateOne,
            grudge,
            partition: 0,
        };
        let e = fault.start_event();
        assert_eq!(e.f, "partition");
        assert_eq!(e.value["topology"], "isolate-one");
        assert_eq!(e.value["grudge"]["1"], json!(["controller", 2]));
        assert_eq!(fault.end_event().f, "heal");
    }
}
