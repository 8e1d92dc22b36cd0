//! The processes a schedule file names, by role or by id: `leader of queue/0`,
//! `follower of queue/0` (the first the controller would elect), `follower 2 of
//! queue/0`, `active-controller`, `node 3`, `controller` (the dedicated controller
//! process). A role is resolved against the cluster when the fault is applied, so a
//! replay strikes what mattered rather than whichever process held it before.

use std::fmt;

use crate::proc::Proc;
use crate::system::view::{ClusterView, PartitionView};

/// A process named in a schedule file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Node(i32),
    /// The dedicated controller process (`--dedicated-controller`).
    Controller,
    ActiveController,
    LeaderOf {
        topic: String,
        partition: u32,
    },
    /// The follower `index` (0: the first) in the order the controller would elect.
    FollowerOf {
        topic: String,
        partition: u32,
        index: usize,
    },
}

impl Target {
    /// Read a target's text.
    pub fn parse(text: &str) -> Result<Target, String> {
        let t = text.trim();
        let bad = || {
            format!(
                "`{text}` names no process: write `node N`, `controller`, `active-controller`, \
                 `leader of TOPIC/P`, `follower of TOPIC/P` or `follower K of TOPIC/P`"
            )
        };
        if t == "controller" {
            return Ok(Target::Controller);
        }
        if t == "active-controller" {
            return Ok(Target::ActiveController);
        }
        if let Some(id) = t.strip_prefix("node ").or(t.strip_prefix('n')) {
            return id.trim().parse().map(Target::Node).map_err(|_| bad());
        }
        if let Ok(id) = t.parse() {
            return Ok(Target::Node(id));
        }
        let (role, tp) = t.split_once(" of ").ok_or_else(bad)?;
        let (topic, partition) = partition_ref(tp).map_err(|e| format!("`{text}`: {e}"))?;
        match role.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["leader"] => Ok(Target::LeaderOf { topic, partition }),
            ["follower"] => Ok(Target::FollowerOf {
                topic,
                partition,
                index: 0,
            }),
            ["follower", k] => match k.parse::<usize>() {
                Ok(k) if k >= 1 => Ok(Target::FollowerOf {
                    topic,
                    partition,
                    index: k - 1,
                }),
                _ => Err(format!("`{text}`: a follower is counted from 1")),
            },
            _ => Err(bad()),
        }
    }

    /// The process this names in `view` now, among `procs` (None: none now — no
    /// leader, fewer followers, no controller answering, not in this cluster).
    pub fn resolve(&self, view: Option<&ClusterView>, procs: &[Proc]) -> Option<Proc> {
        let found = match self {
            Target::Node(id) => Proc::Node(*id),
            Target::Controller => Proc::Controller,
            Target::ActiveController => view?.controller?,
            Target::LeaderOf { topic, partition } => {
                Proc::Node(view?.partition(topic, *partition)?.leader?)
            }
            Target::FollowerOf {
                topic,
                partition,
                index,
            } => Proc::Node(
                *view?
                    .partition(topic, *partition)?
                    .followers()
                    .get(*index)?,
            ),
        };
        procs.contains(&found).then_some(found)
    }

    /// The role of a process a decision kills, pauses or isolates: the active
    /// controller if the decision struck it as that — even if it also led the
    /// decision's partition: a replay must fail the controller over —, else its
    /// role by [`Target::of`]. A fault that only touches the process (a link of it
    /// throttled, a reassignment's replicas) names it by `of`: its role in the
    /// partition.
    pub fn struck(
        p: Proc,
        view: Option<&ClusterView>,
        hint: Option<(&str, u32)>,
        aimed: Aimed,
    ) -> Target {
        match view {
            Some(v) if v.controller == Some(p) && aimed == Aimed::Controller => {
                Target::ActiveController
            }
            _ => Target::of(p, view, hint, aimed),
        }
    }

    /// The role `p` plays in `view`, as a replay should aim at it: the leader of the
    /// partition a decision named (`hint`), else the active controller if the
    /// decision aimed at it as that, else a follower of the hinted partition, else
    /// the process itself if the decision named it its follower (a replica a
    /// reassignment moved out of the partition: the moves name nodes too), else the
    /// active controller, else the leader of another partition, else a follower of
    /// the first partition it follows, else the process itself. A pattern names its
    /// processes by their roles in its partition: a follower it cut that happens to
    /// lead another partition, or to be the active controller, is replayed as that
    /// partition's follower, the one the pattern meant.
    pub fn of(
        p: Proc,
        view: Option<&ClusterView>,
        hint: Option<(&str, u32)>,
        aimed: Aimed,
    ) -> Target {
        let Some(view) = view else {
            return Target::fixed(p);
        };
        let hinted = hint.and_then(|(t, n)| view.partition(t, n));
        if let Some(h) = hinted
            && h.leader.map(Proc::Node) == Some(p)
        {
            return Target::LeaderOf {
                topic: h.topic.clone(),
                partition: h.partition,
            };
        }
        let controller = view.controller == Some(p);
        if controller && aimed == Aimed::Controller {
            return Target::ActiveController;
        }
        let Proc::Node(id) = p else {
            // A dedicated controller process follows no partition.
            return if controller {
                Target::ActiveController
            } else {
                Target::fixed(p)
            };
        };
        let follows = |q: &PartitionView| q.followers().iter().position(|&f| f == id);
        if let Some((h, index)) = hinted.and_then(|h| follows(h).map(|i| (h, i))) {
            return Target::FollowerOf {
                topic: h.topic.clone(),
                partition: h.partition,
                index,
            };
        }
        if aimed == Aimed::Follower {
            return Target::fixed(p);
        }
        if controller {
            return Target::ActiveController;
        }
        if let Some(q) = view
            .partitions
            .iter()
            .find(|q| q.leader.map(Proc::Node) == Some(p))
        {
            return Target::LeaderOf {
                topic: q.topic.clone(),
                partition: q.partition,
            };
        }
        let followed = view
            .partitions
            .iter()
            .find_map(|q| follows(q).map(|i| (q, i)));
        match followed {
            Some((q, index)) => Target::FollowerOf {
                topic: q.topic.clone(),
                partition: q.partition,
                index,
            },
            None => Target::fixed(p),
        }
    }

    fn fixed(p: Proc) -> Target {
        match p {
            Proc::Node(id) => Target::Node(id),
            Proc::Controller => Target::Controller,
        }
    }
}

/// What the decision that made a fault named its process: the active controller,
/// its follower, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aimed {
    Controller,
    Follower,
    Other,
}

/// `TOPIC/P`.
pub fn partition_ref(text: &str) -> Result<(String, u32), String> {
    let (topic, p) = text
        .trim()
        .rsplit_once('/')
        .ok_or_else(|| format!("`{text}` names no partition: write TOPIC/P, e.g. queue/0"))?;
    let partition = p
        .parse()
        .map_err(|_| format!("`{text}`: the partition `{p}` is not a number"))?;
    if topic.is_empty() {
        return Err(format!("`{text}`: no topic before the `/`"));
    }
    Ok((topic.to_string(), partition))
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Node(id) => write!(f, "node {id}"),
            Target::Controller => f.write_str("controller"),
            Target::ActiveController => f.write_str("active-controller"),
            Target::LeaderOf { topic, partition } => write!(f, "leader of {topic}/{partition}"),
            Target::FollowerOf {
                topic,
                partition,
                index: 0,
            } => write!(f, "follower of {topic}/{partition}"),
            Target::FollowerOf {
                topic,
                partition,
                index,
            } => write!(f, "follower {} of {topic}/{partition}", index + 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_read_back_as_they_are_written() {
        for text in [
            "node 3",
            "controller",
            "active-controller",
            "leader of queue/0",
            "follower of r/2",
            "follower 2 of queue/1",
        ] {
            assert_eq!(Target::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(Target::parse("n2").unwrap(), Target::Node(2));
        assert_eq!(Target::parse("2").unwrap(), Target::Node(2));
    }

    #[test]
    fn a_bad_target_says_what_can_be_written() {
        for text in [
            "leader",
            "leader of queue",
            "follower 0 of q/0",
            "boss of q/0",
            "nx",
        ] {
            let e = Target::parse(text).unwrap_err();
            assert!(e.contains(text), "{e}");
        }
    }
}
