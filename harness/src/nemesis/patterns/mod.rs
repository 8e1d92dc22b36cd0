//! The replication package's fault patterns (docs/faults.md#the-replication-package),
//! one file each: every pattern is a small type implementing [`Pattern`] — the
//! transitions it aims at, its weight, where it fits, and its script: typed steps on
//! the roles read from the cluster at the moment it starts (the leader of a
//! partition, the follower the controller would elect next, the controller), with
//! durations drawn around the cluster's own timeouts ([`Timeouts`]) — some shorter,
//! some longer — and undoing everything it did before it ends.
//!
//! Adding a pattern is its file and one line of [`patterns!`] below.

use std::time::Duration;

use rand::seq::IndexedRandom;
use rand::{Rng, RngCore};
use serde_json::{Value, json};

use super::action::{Action, Script};
use super::coverage::Transition;
use crate::net::Grudge;
use crate::proc::Proc;
use crate::system::DiskMode;
use crate::system::view::PartitionView;

/// Every pattern: its module, and the type that implements it. Their order is the
/// order a round lists them in (and so part of what a seed draws).
macro_rules! patterns {
    ($($module:ident :: $pattern:ident),+ $(,)?) => {
        $(mod $module; pub use $module::$pattern;)+
        /// Every pattern of the package, in order.
        pub const ALL: &[&'static dyn Pattern] = &[$(&$pattern),+];
    };
}

patterns! {
    leader_kill::LeaderKill,
    leader_pause::LeaderPause,
    kip101::Kip101,
    follower_lag::FollowerLag,
    isolate_leader::IsolateLeader,
    partial_partition::PartialPartition,
    crash_all::CrashAll,
    kill_during_partition::KillDuringPartition,
    lose_unflushed::LoseUnflushed,
    controller_failover::ControllerFailover,
    leader_disk::LeaderDisk,
    reassign::Reassign,
}

/// The pattern of that name.
pub fn by_name(name: &str) -> Option<&'static dyn Pattern> {
    ALL.iter().copied().find(|p| p.name() == name)
}

/// A fault pattern of the replication package.
pub trait Pattern: Send + Sync {
    /// Its name in the history and the coverage (`leader-kill`).
    fn name(&self) -> &'static str;

    /// The transitions it is meant to reach (what the planner favours it for).
    fn targets(&self) -> &'static [Transition];

    /// Its weight before the coverage's, which orders a round (the patterns that
    /// open the most windows come first, so that a short campaign has them) and
    /// draws the round's plain pattern (docs/faults.md gives each one's reason).
    fn base_weight(&self) -> f64;

    /// How often it plays in each round: the patterns that open a window of their
    /// own once or twice; the plain ones, whose windows others open too, not at all
    /// (one of them joins each round, drawn by weight).
    fn per_round(&self) -> u32;

    /// Does it lead each round, played as soon as a partition suits it?
    fn leads_round(&self) -> bool {
        false
    }

    /// Does it move a partition's leadership when held past a session timeout (the
    /// campaign's first fault is one of them)?
    fn moves_leader(&self) -> bool {
        false
    }

    /// Does it aim at no partition (the controller's pattern)?
    fn role_free(&self) -> bool {
        false
    }

    /// Can it play at all in a cluster so set up?
    fn can_run(&self, settings: &PackageSettings) -> bool {
        let _ = settings;
        true
    }

    /// Can it run on a partition led with these followers, with this active
    /// controller? Most need one follower.
    fn fits(
        &self,
        settings: &PackageSettings,
        partition: Option<&PartitionView>,
        controller: Option<Proc>,
    ) -> bool {
        let _ = (settings, controller);
        partition.is_some_and(|p| !p.followers().is_empty())
    }

    /// Does its window open only with the leader and the follower it cuts or lags
    /// apart from the controller? A leader that is the controller too decides its
    /// own ISR (and drops the follower it cannot hear from), and a controller cut
    /// from the leader expires it within a session timeout.
    fn needs_controller_apart(&self) -> bool {
        false
    }

    /// How much it prefers a partition of `topic`.
    fn topic_weight(&self, topic: &str, settings: &PackageSettings) -> f64 {
        let _ = (topic, settings);
        1.0
    }

    /// Its roles and script where `aim` aims it.
    fn script(&self, aim: &Aim<'_>, rng: &mut dyn RngCore) -> (Roles, Script);
}

impl std::fmt::Debug for dyn Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq for dyn Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

/// How much `pattern` prefers `partition`, given the active controller: one that
/// needs the controller apart ([`Pattern::needs_controller_apart`]) prefers a
/// partition whose leader and next-in-line follower are not the controller ten to
/// one (with every broker a voter such partitions are common).
pub fn aim_weight(
    pattern: &dyn Pattern,
    partition: &PartitionView,
    controller: Option<Proc>,
) -> f64 {
    let Some(Proc::Node(c)) = controller else {
        return 1.0;
    };
    let next = partition.followers().first().copied();
    let apart =
        !pattern.needs_controller_apart() || (partition.leader != Some(c) && next != Some(c));
    if apart { 1.0 } else { 0.1 }
}

/// The timeouts of the cluster under test (docs/broker.md), which decide when a
/// fault changes something: a broker silent for longer than `session` is dead to
/// the controller; a follower behind for longer than `lag` leaves the ISR; an empty
/// follower fetch waits up to `fetch_wait` at the leader; a client gives up on a
/// request after `client`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub session: Duration,
    pub lag: Duration,
    pub fetch_wait: Duration,
    /// A node whose storage keeps failing this long leaves every ISR
    /// (`--storage-failure-timeout-ms`).
    pub storage: Duration,
    /// The longest a controller voter waits for a leader before it starts an
    /// election (the election timeout, up to 1.5×).
    pub election: Duration,
    /// The workload's request timeout: a client waiting on a leader that cannot
    /// answer gives up after this long and looks for the leader again.
    pub client: Duration,
}

impl Timeouts {
    /// The timeouts of brokers so set (the brokers' own defaults where not given).
    pub fn of_cluster(settings: &broker_config::Settings) -> Timeouts {
        let (r, c) = (&settings.replica, &settings.controller);
        Timeouts {
            session: c.session_timeout(),
            lag: r.replica_lag_time_max(),
            fetch_wait: r.replica_fetch_wait_max(),
            storage: r.storage_failure_timeout(),
            election: c.election_timeout().mul_f64(1.5),
            client: workloads::client::REQUEST_TIMEOUT,
        }
    }
}

/// What the package may do in this cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageSettings {
    pub timeouts: Timeouts,
    /// Every node id.
    pub nodes: Vec<i32>,
    /// A node's power can be cut (`lose-unflushed` plays): it loses what it did
    /// not fsync and its storage did not write back — its fault filesystem's
    /// power cut, or a kill of brokers run with `--simulate-page-cache`.
    pub power_cuts: bool,
    /// Crashing every node at once loses nothing acknowledged (its kills cut no
    /// power, or every record is flushed).
    pub crash_all_safe: bool,
    /// The controller is a process of its own, not one of the brokers.
    pub dedicated_controller: bool,
    /// Topics whose checker sees every acknowledged record lost, whatever comes
    /// after (the queue's: every acknowledged send must be polled), where a
    /// register's hides a lost write overwritten before anyone read it.
    pub lossless_topics: Vec<String>,
    /// Topics whose reads are linearizable: a deposed leader's read there is an
    /// anomaly its checker finds (the register's, read linearizably).
    pub linearizable_topics: Vec<String>,
    /// The system moves replicas on request (reassignment): `reassign` plays.
    pub reconfigurable: bool,
    /// The in-sync replicas an acks=all write needs (min.insync.replicas).
    pub min_insync: u32,
}

impl PackageSettings {
    /// Every process a partition may cut: the brokers (and a dedicated controller).
    pub fn procs(&self) -> Vec<Proc> {
        Proc::universe(&self.nodes, self.dedicated_controller)
    }
}

/// Where a pattern is aimed: the partition and its roles now, and the campaign's
/// state that shapes the script.
#[derive(Debug, Clone)]
pub struct Aim<'a> {
    pub settings: &'a PackageSettings,
    pub partition: Option<&'a PartitionView>,
    /// The active controller (a broker, unless the controller is dedicated).
    pub controller: Option<Proc>,
    /// Hold leader faults past a session timeout: leadership has not moved yet.
    pub move_leader: bool,
    /// The campaign's earlier plays of this pattern: a pattern with variants plays
    /// each of them in turn.
    pub turn: u32,
    /// The partition's leader (-1: none).
    pub leader: i32,
    /// The followers, in the order the controller would elect them.
    pub followers: Vec<i32>,
    /// The follower the controller would elect next (-1: none).
    pub next: i32,
    /// The follower elected next, mostly; sometimes another.
    pub aimed: i32,
}

impl<'a> Aim<'a> {
    /// Aim at `partition`; draws which follower is `aimed` at (every pattern draws
    /// it, so that the seed's stream does not depend on the pattern).
    pub fn new(
        settings: &'a PackageSettings,
        partition: Option<&'a PartitionView>,
        controller: Option<Proc>,
        move_leader: bool,
        turn: u32,
        rng: &mut dyn RngCore,
    ) -> Aim<'a> {
        let (leader, followers) = match partition {
            Some(p) => (p.leader.unwrap_or(-1), p.followers()),
            None => (-1, Vec::new()),
        };
        let next = followers.first().copied().unwrap_or(-1);
        let aimed = if followers.len() > 1 && rng.random_bool(0.25) {
            *followers[1..].choose(rng).expect("not empty")
        } else {
            next
        };
        Aim {
            settings,
            partition,
            controller,
            move_leader,
            turn,
            leader,
            followers,
            next,
            aimed,
        }
    }

    pub fn timeouts(&self) -> Timeouts {
        self.settings.timeouts
    }

    /// The roles every partition pattern records: the leader and its followers.
    pub fn roles(&self) -> Roles {
        Roles {
            leader: Some(self.leader),
            followers: self.followers.clone(),
            ..Roles::default()
        }
    }

    /// How long a leader fault holds: past a session timeout while leadership must
    /// move, else shorter or longer.
    pub fn hold(&self, rng: &mut dyn RngCore) -> Duration {
        let session = self.timeouts().session;
        if self.move_leader {
            longer(rng, session)
        } else {
            around(rng, session)
        }
    }

    /// How much later a partition's election comes when `p`, going down, is the
    /// active controller: a new one must be elected first (up to the Raft election
    /// timeout), whose grace then runs as the session timeout would.
    pub fn takeover(&self, p: Proc) -> Duration {
        if self.controller == Some(p) {
            self.timeouts().election
        } else {
            Duration::ZERO
        }
    }

    /// The partition aimed at, by name (empty without one).
    pub fn topic(&self) -> String {
        self.partition.map_or_else(String::new, |p| p.topic.clone())
    }

    pub fn partition_number(&self) -> u32 {
        self.partition.map_or(0, |p| p.partition)
    }
}

/// The processes in each role of a pattern's play, and its variant: recorded in
/// its `plan`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roles {
    pub leader: Option<i32>,
    pub followers: Vec<i32>,
    /// The follower it cuts, lags, kills or slows.
    pub follower: Option<i32>,
    /// `partial-partition`: the follower cut from the leader, and the one it reaches.
    pub cut_from: Option<i32>,
    pub reaches: Option<i32>,
    pub controller: Option<Proc>,
    /// `lose-unflushed`: the node that loses its unflushed bytes.
    pub target: Option<i32>,
    /// `leader-disk`: how the disk fails.
    pub mode: Option<DiskMode>,
    pub variant: Option<&'static str>,
}

impl Roles {
    /// As the history records them: every role given, by name.
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        if let Some(l) = self.leader {
            m.insert("leader".into(), json!(l));
            m.insert("followers".into(), json!(self.followers));
        }
        let ids = [
            ("follower", self.follower),
            ("cut_from", self.cut_from),
            ("reaches", self.reaches),
            ("target", self.target),
        ];
        for (name, id) in ids {
            if let Some(id) = id {
                m.insert(name.into(), json!(id));
            }
        }
        if let Some(c) = self.controller {
            m.insert("controller".into(), c.to_json());
        }
        if let Some(mode) = self.mode {
            m.insert("mode".into(), json!(mode.as_str()));
        }
        if let Some(v) = self.variant {
            m.insert("variant".into(), json!(v));
        }
        Value::Object(m)
    }
}

/// Cut the links of `grudge`, named `shape`.
pub fn cut(shape: &str, grudge: &Grudge) -> Action {
    Action::Cut {
        shape: shape.to_string(),
        grudge: grudge.clone(),
    }
}

/// Restore them.
pub fn heal(shape: &str, grudge: &Grudge) -> Action {
    Action::Heal {
        shape: shape.to_string(),
        grudge: grudge.clone(),
    }
}

/// Both directions between two nodes.
pub fn pair(a: i32, b: i32) -> Grudge {
    let node = Proc::Node;
    Grudge {
        cut: vec![(node(a), node(b)), (node(b), node(a))],
    }
}

/// Well under `base`: the timeout does not fire.
pub fn shorter(rng: &mut dyn RngCore, base: Duration) -> Duration {
    base.mul_f64(rng.random_range(0.3..0.8))
}

/// Well past `base`: the timeout fires.
pub fn longer(rng: &mut dyn RngCore, base: Duration) -> Duration {
    base.mul_f64(rng.random_range(1.3..2.2))
}

/// Just past `base`: the timeout fires, and the fault ends soon after.
pub fn just_past(rng: &mut dyn RngCore, base: Duration) -> Duration {
    base.mul_f64(rng.random_range(1.1..1.5))
}

/// A [`Pattern::topic_weight`] that favours `topics`: `weight` for one of them, 1
/// for any other.
pub fn favour(topics: &[String], topic: &str, weight: f64) -> f64 {
    if topics.iter().any(|t| t == topic) {
        weight
    } else {
        1.0
    }
}

/// Shorter or longer than `base`, as a coin says.
pub fn around(rng: &mut dyn RngCore, base: Duration) -> Duration {
    if rng.random_bool(0.5) {
        shorter(rng, base)
    } else {
        longer(rng, base)
    }
}

/// Milliseconds drawn from `range`.
pub fn ms(rng: &mut dyn RngCore, range: std::ops::Range<u64>) -> Duration {
    Duration::from_millis(rng.random_range(range))
}

/// Milliseconds drawn from `range` log-uniformly: each decade as likely as the
/// next, so a race a few milliseconds after a change is drawn as often as one
/// hundreds of milliseconds on (a uniform draw would almost never hit the first).
pub fn ms_log(rng: &mut dyn RngCore, range: std::ops::Range<u64>) -> Duration {
    let (lo, hi) = ((range.start.max(1)) as f64, (range.end.max(2)) as f64);
    let x = rng.random_range(lo.ln()..hi.ln()).exp();
    Duration::from_millis((x as u64).clamp(range.start, range.end.saturating_sub(1)))
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    #[test]
    fn a_log_uniform_draw_stays_in_its_range_and_gives_each_decade_its_share() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let draws: Vec<u64> = (0..3000)
            .map(|_| ms_log(&mut rng, 1..1000).as_millis() as u64)
            .collect();
        assert!(draws.iter().all(|&d| (1..1000).contains(&d)));
        // 1–10, 10–100, 100–1000 ms: a third each (a uniform draw gives the first
        // one in a hundred).
        for (lo, hi) in [(1, 10), (10, 100), (100, 1000)] {
            let share = draws.iter().filter(|&&d| (lo..hi).contains(&d)).count() as f64 / 3000.0;
            assert!((0.25..0.42).contains(&share), "{lo}..{hi} ms: {share}");
        }
    }
}
