//! A scenario's script as data, and its source: a list of [`Instr`]s — fault
//! operations on the processes the script has found, bounded waits on what the
//! system shows, pauses, and branches on what was found — played in order. What a
//! wait finds is bound to a name (the leader and its followers once records are
//! committed, the new leader after a failover, a replica's log end), and later
//! instructions name their targets and numbers by those bindings, so a script says
//! "kill the leader it started with", not "kill node 2".
//!
//! The source is pure: the interpreter performs each step and hands back what it
//! found; the script decides the next step from its bindings alone.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::nemesis::action::Action;
use crate::nemesis::schedule::{Condition, Found, Next, Now, ReplicaTest, Source, Step, Taken};
use crate::net::Grudge;
use crate::proc::Proc;
use crate::system::ReplicaSeen;

/// One instruction of a script.
#[derive(Debug, Clone, PartialEq)]
pub enum Instr {
    /// Wait, at most `within`, for `until`; bind what it finds to `bind`. Not found,
    /// the name stays unbound — or, with `or_fail`, the script fails saying so.
    Await {
        until: Cond,
        within: Duration,
        bind: Option<String>,
        or_fail: Option<String>,
    },
    /// A fault operation.
    Do(Op),
    /// Let time pass.
    Sleep(Duration),
    /// These instructions only if every name is bound.
    IfBound(Vec<String>, Vec<Instr>),
    /// These instructions only if the two name different processes.
    IfDiffer(Ref, Ref, Vec<Instr>),
    /// The first instructions if `cond` holds now, else the others.
    If(Cond, Vec<Instr>, Vec<Instr>),
    /// Nothing: a note for who reads the script.
    Note(String),
    /// Fail unless the partition found under the name has this many replicas.
    Replicas {
        name: String,
        at_least: usize,
        or_fail: String,
    },
}

/// A fault operation on the processes `Ref`s name.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// SIGKILL every node at once.
    CrashAll,
    Kill(Ref),
    /// SIGKILL a node run with `--simulate-page-cache`: its unflushed bytes are lost.
    LoseUnflushed(Ref),
    Pause(Ref),
    Resume(Ref),
    /// Restart each of them, in order, recorded as one `restart`.
    Restart(Ref),
    /// Restart it if it is down (else nothing, and nothing recorded).
    RestartIfDown(Ref),
    Cut(String, Links),
    Heal(String, Links),
    HoldAnswers(Ref),
    ReleaseAnswers(Ref),
}

/// Links a script cuts or heals.
#[derive(Debug, Clone, PartialEq)]
pub enum Links {
    /// The one direction from the first to the second.
    OneWay(Ref, Ref),
    /// Both directions between the node and every other node.
    FromPeers(Ref),
    /// Both directions between the two.
    Between(Ref, Ref),
}

/// Processes a script names; written in a file as `start`, `followers of start`,
/// `follower 0 of start`, `all but followers of start`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Ref {
    /// The process bound to a name: a leader found, a new leader, the controller.
    Is(String),
    /// The followers of the partition found under the name (replicas but the
    /// leader, in replica order), or one of them.
    Followers(String),
    Follower(String, usize),
    /// Every node but the partition's followers found under the name.
    AllButFollowers(String),
}

/// A condition with its targets and numbers named.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    /// The script's partition has a leader whose HW covers this many records
    /// (found: the leader, its replica's state, the partition's replicas).
    Committed(u64),
    /// Led by another process than `from` (found: the new leader); `running`: one
    /// that runs; `above_epoch_of`: named by a controller of a higher epoch than the
    /// controller bound to that name.
    LeaderMoved {
        from: Ref,
        running: bool,
        above_epoch_of: Option<String>,
    },
    /// A replica's state passes the test (found: the state).
    Replica(Ref, Test),
    IsrWithout(Ref),
    /// The active controller (found: it, and its epoch), marked as the target of `fault`.
    ActiveController {
        fault: String,
    },
    Down(Ref),
    RunningAtMost(usize),
    /// No more than half the nodes run (no majority of controller voters).
    NoMajorityRunning,
    /// The controller is a process of its own (decided by the script alone).
    DedicatedController,
}

/// A test of a replica's state.
#[derive(Debug, Clone, PartialEq)]
pub enum Test {
    Any,
    LeoAtLeast(Num),
    HwAtLeast(Num),
    PendingAtLeast(u64),
    UnflushedAtLeast(u64),
    LeaderIs(Ref),
}

/// A number from the bindings: the log end offset of the replica state bound to a
/// name (0 if unbound), plus a constant.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Num {
    pub leo_of: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub plus: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl std::fmt::Display for Ref {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ref::Is(name) => write!(f, "{name}"),
            Ref::Followers(name) => write!(f, "followers of {name}"),
            Ref::Follower(name, i) => write!(f, "follower {i} of {name}"),
            Ref::AllButFollowers(name) => write!(f, "all but followers of {name}"),
        }
    }
}

impl From<Ref> for String {
    fn from(r: Ref) -> String {
        r.to_string()
    }
}

impl TryFrom<String> for Ref {
    type Error = String;

    fn try_from(text: String) -> Result<Ref, String> {
        let name = |n: &str| {
            let ok = !n.is_empty() && !n.contains(' ');
            ok.then(|| n.to_string()).ok_or_else(|| {
                format!(
                    "`{text}` names no process: write a name a step bound (`start`), \
                     `followers of NAME`, `follower K of NAME` or `all but followers of NAME`"
                )
            })
        };
        if let Some(rest) = text.strip_prefix("all but followers of ") {
            return Ok(Ref::AllButFollowers(name(rest)?));
        }
        if let Some(rest) = text.strip_prefix("followers of ") {
            return Ok(Ref::Followers(name(rest)?));
        }
        if let Some(rest) = text.strip_prefix("follower ")
            && let Some((k, of)) = rest.split_once(" of ")
        {
            let k = k
                .parse()
                .map_err(|_| format!("`{text}`: `{k}` is not a follower's index (0, 1, …)"))?;
            return Ok(Ref::Follower(name(of)?, k));
        }
        Ok(Ref::Is(name(&text)?))
    }
}

/// What a name is bound to.
#[derive(Debug, Clone, PartialEq)]
enum Bound {
    Partition {
        leader: i32,
        seen: ReplicaSeen,
        replicas: Vec<i32>,
    },
    Process(Proc),
    Controller(Proc, i64),
    Replica(ReplicaSeen),
}

/// What the last step handed out waits to learn.
#[derive(Debug, Clone, PartialEq)]
enum Pending {
    Nothing,
    Bind(Option<String>, Option<String>),
    Branch(Vec<Instr>, Vec<Instr>),
}

/// A script played as a source.
#[derive(Debug)]
pub struct ScriptSource {
    topic: String,
    partition: u32,
    nodes: Vec<i32>,
    /// The controller is a process of its own.
    dedicated: bool,
    /// The instructions left: a stack of blocks, each the rest of a block.
    stack: Vec<std::vec::IntoIter<Instr>>,
    bound: BTreeMap<String, Bound>,
    pending: Pending,
    failed: Option<String>,
}

impl ScriptSource {
    /// `instrs` on partition `partition` of `topic`, in a cluster of `nodes` (with
    /// the controller a process of its own: `dedicated`).
    pub fn new(
        topic: &str,
        partition: u32,
        nodes: &[i32],
        dedicated: bool,
        instrs: Vec<Instr>,
    ) -> ScriptSource {
        ScriptSource {
            topic: topic.to_string(),
            partition,
            nodes: nodes.to_vec(),
            dedicated,
            stack: vec![instrs.into_iter()],
            bound: BTreeMap::new(),
            pending: Pending::Nothing,
            failed: None,
        }
    }

    fn next_instr(&mut self) -> Option<Instr> {
        while let Some(block) = self.stack.last_mut() {
            match block.next() {
                Some(i) => return Some(i),
                None => {
                    self.stack.pop();
                }
            }
        }
        None
    }

    /// The processes `r` names (none while its name is unbound).
    fn procs(&self, r: &Ref) -> Vec<Proc> {
        let followers = |name: &str| match self.bound.get(name) {
            Some(Bound::Partition {
                leader, replicas, ..
            }) => replicas.iter().copied().filter(|r| r != leader).collect(),
            _ => Vec::new(),
        };
        match r {
            Ref::Is(name) => match self.bound.get(name) {
                Some(Bound::Partition { leader, .. }) => vec![Proc::Node(*leader)],
                Some(Bound::Process(p) | Bound::Controller(p, _)) => vec![*p],
                _ => Vec::new(),
            },
            Ref::Followers(name) => followers(name).into_iter().map(Proc::Node).collect(),
            Ref::Follower(name, i) => followers(name)
                .get(*i)
                .map(|&id| vec![Proc::Node(id)])
                .unwrap_or_default(),
            Ref::AllButFollowers(name) => {
                let f = followers(name);
                self.nodes
                    .iter()
                    .filter(|id| !f.contains(id))
                    .map(|&id| Proc::Node(id))
                    .collect()
            }
        }
    }

    fn one(&self, r: &Ref) -> Proc {
        self.procs(r).first().copied().unwrap_or(Proc::Node(-1))
    }

    fn node(&self, r: &Ref) -> i32 {
        match self.one(r) {
            Proc::Node(id) => id,
            Proc::Controller => -1,
        }
    }

    fn num(&self, n: &Num) -> u64 {
        let leo = match self.bound.get(&n.leo_of) {
            Some(Bound::Replica(s)) => s.leo,
            Some(Bound::Partition { seen, .. }) => seen.leo,
            _ => 0,
        };
        leo + n.plus
    }

    fn links(&self, links: &Links) -> Grudge {
        match links {
            Links::OneWay(from, to) => Grudge {
                cut: vec![(self.one(from), self.one(to))],
            },
            Links::Between(a, b) => {
                let (a, b) = (self.one(a), self.one(b));
                Grudge {
                    cut: vec![(a, b), (b, a)],
                }
            }
            Links::FromPeers(r) => {
                let p = self.one(r);
                let peers: Vec<Proc> = self
                    .nodes
                    .iter()
                    .map(|&id| Proc::Node(id))
                    .filter(|&q| q != p)
                    .collect();
                Grudge::components(&[vec![p], peers])
            }
        }
    }

    /// The concrete condition `cond` is now.
    fn condition(&self, cond: &Cond) -> Condition {
        let (topic, partition) = (self.topic.clone(), self.partition);
        match cond {
            Cond::Committed(records) => Condition::Committed {
                topic,
                partition,
                records: *records,
            },
            Cond::LeaderMoved {
                from,
                running,
                above_epoch_of,
            } => Condition::LeaderMoved {
                topic,
                partition,
                from: self.node(from),
                running: *running,
                above_epoch: above_epoch_of
                    .as_ref()
                    .and_then(|name| match self.bound.get(name) {
                        Some(Bound::Controller(_, epoch)) => Some(*epoch),
                        _ => None,
                    }),
            },
            Cond::Replica(r, test) => Condition::Replica {
                node: self.node(r),
                topic,
                partition,
                test: match test {
                    Test::Any => ReplicaTest::Any,
                    Test::LeoAtLeast(n) => ReplicaTest::LeoAtLeast(self.num(n)),
                    Test::HwAtLeast(n) => ReplicaTest::HwAtLeast(self.num(n)),
                    Test::PendingAtLeast(n) => ReplicaTest::PendingAtLeast(*n),
                    Test::UnflushedAtLeast(n) => ReplicaTest::UnflushedAtLeast(*n),
                    Test::LeaderIs(r) => ReplicaTest::LeaderIs(self.node(r)),
                },
            },
            Cond::IsrWithout(r) => Condition::IsrWithout {
                topic,
                partition,
                node: self.node(r),
            },
            Cond::ActiveController { fault } => Condition::ActiveController {
                fault: fault.to_string(),
            },
            Cond::Down(r) => Condition::Down(self.one(r)),
            Cond::RunningAtMost(n) => Condition::RunningAtMost(*n),
            Cond::NoMajorityRunning => Condition::RunningAtMost(self.nodes.len() / 2),
            // Never asked of the system: `next` decides it from the script's own
            // knowledge; as a condition, one that holds now.
            Cond::DedicatedController => Condition::RunningAtMost(usize::MAX),
        }
    }

    /// The step of a fault operation (None: it names nobody, or nothing to do).
    fn action(&self, op: &Op) -> Option<Step> {
        let id = |p: Proc| match p {
            Proc::Node(id) => id,
            Proc::Controller => -1,
        };
        let act = |a: Action| Some(Step::Act(a));
        match op {
            Op::CrashAll => act(Action::CrashAll(self.nodes.clone())),
            Op::Kill(r) => act(Action::Kill(self.one(r))),
            Op::LoseUnflushed(r) => act(Action::LoseUnflushed(self.node(r))),
            Op::Pause(r) => act(Action::Pause(self.one(r))),
            Op::Resume(r) => act(Action::Resume(self.one(r))),
            Op::Restart(r) => match self.procs(r).as_slice() {
                [] => None,
                [p] => act(Action::Restart(*p)),
                many => act(Action::RestartEach(
                    many.iter().map(|&p| (Duration::ZERO, id(p))).collect(),
                )),
            },
            Op::RestartIfDown(r) => act(Action::Restart(self.one(r))),
            Op::Cut(shape, links) => act(Action::Cut {
                shape: shape.to_string(),
                grudge: self.links(links),
            }),
            Op::Heal(shape, links) => act(Action::Heal {
                shape: shape.to_string(),
                grudge: self.links(links),
            }),
            Op::HoldAnswers(r) => act(Action::HoldAnswers(self.one(r))),
            Op::ReleaseAnswers(r) => act(Action::ReleaseAnswers(self.one(r))),
        }
    }
}

impl Source for ScriptSource {
    fn to_the_end(&self) -> bool {
        true
    }

    fn next(&mut self, _: &Now<'_>) -> Next {
        if let Some(why) = self.failed.take() {
            return Next::Fail(why);
        }
        while let Some(instr) = self.next_instr() {
            match instr {
                // Decided by the script alone: nothing to ask the system.
                Instr::Await {
                    until: Cond::DedicatedController,
                    or_fail,
                    ..
                } => {
                    if let (false, Some(why)) = (self.dedicated, or_fail) {
                        return Next::Fail(why);
                    }
                }
                Instr::Await {
                    until,
                    within,
                    bind,
                    or_fail,
                } => {
                    self.pending = Pending::Bind(bind, or_fail);
                    let until = self.condition(&until);
                    return Next::Now(Step::Await { until, within });
                }
                Instr::Do(Op::RestartIfDown(r)) => {
                    let down = Instr::Do(Op::Restart(r.clone()));
                    self.stack
                        .push(vec![Instr::If(Cond::Down(r), vec![down], vec![])].into_iter());
                }
                Instr::Do(op) => {
                    if let Some(step) = self.action(&op) {
                        return Next::Now(step);
                    }
                }
                Instr::Sleep(d) => return Next::Wait(d),
                Instr::IfBound(names, then) => {
                    if names.iter().all(|n| self.bound.contains_key(n)) {
                        self.stack.push(then.into_iter());
                    }
                }
                Instr::IfDiffer(a, b, then) => {
                    if self.procs(&a) != self.procs(&b) {
                        self.stack.push(then.into_iter());
                    }
                }
                Instr::Note(_) => {}
                Instr::If(Cond::DedicatedController, then, otherwise) => {
                    let block = if self.dedicated { then } else { otherwise };
                    self.stack.push(block.into_iter());
                }
                Instr::If(cond, then, otherwise) => {
                    self.pending = Pending::Branch(then, otherwise);
                    let until = self.condition(&cond);
                    return Next::Now(Step::Await {
                        until,
                        within: Duration::ZERO,
                    });
                }
                Instr::Replicas {
                    name,
                    at_least,
                    or_fail,
                } => {
                    let n = match self.bound.get(&name) {
                        Some(Bound::Partition { replicas, .. }) => replicas.len(),
                        _ => 0,
                    };
                    if n < at_least {
                        return Next::Fail(or_fail);
                    }
                }
            }
        }
        Next::Done
    }

    fn taken(&mut self, taken: Taken) {
        let pending = std::mem::replace(&mut self.pending, Pending::Nothing);
        let Taken::Found(found) = taken else {
            return;
        };
        match pending {
            Pending::Branch(then, otherwise) => {
                let block = if found.is_some() { then } else { otherwise };
                self.stack.push(block.into_iter());
            }
            Pending::Bind(name, or_fail) => match (found, name) {
                (None, _) => self.failed = or_fail,
                (Some(f), Some(name)) => {
                    let bound = match f {
                        Found::Leader {
                            leader,
                            seen,
                            replicas,
                        } => Bound::Partition {
                            leader,
                            seen,
                            replicas,
                        },
                        Found::NewLeader(l) => Bound::Process(Proc::Node(l)),
                        Found::Replica(seen) => Bound::Replica(seen),
                        Found::Controller { process, epoch } => Bound::Controller(process, epoch),
                        Found::Holds => return,
                    };
                    self.bound.insert(name, bound);
                }
                (Some(_), None) => {}
            },
            Pending::Nothing => {}
        }
    }

    /// A script undoes what it did itself; the end of the run heals the rest.
    fn wind_down(&mut self) -> Vec<Step> {
        Vec::new()
    }
}
