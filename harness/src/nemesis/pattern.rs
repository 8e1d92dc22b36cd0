//! The replication package's fault patterns (docs/faults.md#the-replication-package):
//! each aimed at roles read from the cluster at the moment it starts (the leader
//! of a partition, the follower the controller would elect next, the controller),
//! each opening a window where a replication rule matters, with durations drawn
//! around the cluster's own timeouts — some shorter, some longer — and each undoing
//! everything it did before it ends.

use std::time::Duration;

use clap::ValueEnum;
use rand::Rng;
use rand::seq::{IndexedRandom, SliceRandom};
use serde_json::{Value, json};

use super::action::{Action, Script};
use super::coverage::Transition;
use super::fault::{Degradation, DiskMode};
use super::view::{PartitionView, Timeouts};
use crate::names::by_name;
use crate::net::Grudge;
use crate::proc::Proc;

/// A fault pattern of the replication package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, ValueEnum)]
pub enum Pattern {
    /// SIGKILL a partition's leader; restart it after about a session timeout (in
    /// turn with the follower elected next on slow links: it lags at the failover).
    LeaderKill,
    /// SIGSTOP a partition's leader; it wakes up after about a session timeout,
    /// perhaps no longer leader.
    LeaderPause,
    /// KIP-101: restart a follower and kill the leader before it caught up.
    Kip101,
    /// Cut a follower from its leader (not from the controller) for about the lag time
    /// (in turn healed on a throttled link, the leader killed while it catches up).
    FollowerLag,
    /// Cut the leader from the controller and every replica; clients still reach it.
    IsolateLeader,
    /// Cut the leader from the controller and the next-in-line follower while it
    /// still reaches the other (or stall the controller and kill the leader).
    PartialPartition,
    /// SIGKILL every node; restart them quickly one by one, the old leader last.
    CrashAll,
    /// Cut the next-in-line follower from the leader, then kill the leader.
    KillDuringPartition,
    /// SIGKILL a node that loses its unflushed bytes (`--flush-messages` runs only).
    LoseUnflushed,
    /// Kill, stall or isolate the controller.
    ControllerFailover,
    /// Make the leader's disk full or failing for moments, each shorter than the
    /// storage failure timeout (sometimes one longer); then kill it and restart it.
    LeaderDisk,
}

by_name!(Pattern => "pattern");

/// What the package may do in this cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub timeouts: Timeouts,
    /// Every node id.
    pub nodes: Vec<i32>,
    /// Nodes run with `--simulate-page-cache`: a kill loses unflushed bytes.
    pub page_cache: bool,
    /// Crashing every node at once loses nothing acknowledged (no page cache
    /// simulated, or every record flushed).
    pub crash_all_safe: bool,
    /// The controller is a process of its own, not one of the brokers.
    pub dedicated_controller: bool,
}

impl Settings {
    /// Every process a partition may cut: the brokers (and a dedicated controller).
    fn procs(&self) -> Vec<Proc> {
        Proc::universe(&self.nodes, self.dedicated_controller)
    }
}

impl Pattern {
    /// The transitions this pattern is meant to reach (what the planner favours it for).
    pub fn targets(self) -> &'static [Transition] {
        use Transition::*;
        match self {
            Pattern::LeaderKill => &[
                LeaderElection,
                IsrShrinkController,
                IsrExpand,
                TruncateEpoch,
            ],
            Pattern::LeaderPause => &[LeaderElection, Fenced, TruncateEpoch, TruncateRecords],
            Pattern::Kip101 => &[
                RestartedLeader,
                LeaderElection,
                TruncateEpoch,
                TruncateHw,
                TruncateRecords,
            ],
            Pattern::FollowerLag => &[IsrShrinkLag, IsrExpand, LeaderElection],
            Pattern::IsolateLeader => &[LeaderElection, Fenced, TruncateEpoch, TruncateRecords],
            Pattern::PartialPartition => &[IsrShrinkLag, NotEnoughReplicas, Fenced, LeaderElection],
            Pattern::CrashAll => &[
                RestartedLeader,
                LeaderElection,
                TruncateEpoch,
                TruncateHw,
                NotEnoughReplicas,
            ],
            Pattern::KillDuringPartition => {
                &[LeaderElection, TruncateEpoch, TruncateRecords, IsrShrinkLag]
            }
            Pattern::LoseUnflushed => &[TruncateEpoch, TruncateRecords, IsrShrinkController],
            Pattern::ControllerFailover => &[ControllerFailover, Fenced],
            Pattern::LeaderDisk => &[
                StorageFailure,
                IsrShrinkController,
                LeaderElection,
                TruncateEpoch,
                TruncateRecords,
            ],
        }
    }

    /// The pattern's weight before the coverage's, which orders a round (the
    /// patterns that open the most windows come first, so that a short campaign
    /// has them) and draws its plain pattern: a follower catching up on a throttled
    /// link as the leader dies (the ISR's expansion rule, which no other pattern
    /// reaches, and the election's, whose next in line is then out of the ISR)
    /// weighs most, so that it comes early; a leader isolated while clients still
    /// reach it (reads and acks from a deposed leader, its unreplicated suffix, its
    /// truncation when it rejoins), a leader killed while the follower elected next
    /// lags behind (the HW and ISR rules that decide whether an acknowledged record
    /// is on it) and a leader whose disk fails under load (the only pattern that
    /// makes appends fail) next to it; a crash of every node (replicas that come
    /// back behind, elected as the last of their ISR) next; a partial partition and
    /// a leader killed while the follower elected next lags on slow links then; a
    /// follower back behind as the leader dies (KIP-101) and a lost page cache
    /// once; the plain pause or controller fault, which mostly freeze a replica
    /// rather than leave one serving or electable, less. (`follower-lag` also
    /// leads each round, [`Pattern::leads_round`]: its weight counts while no
    /// partition suits it.)
    pub fn base_weight(self) -> f64 {
        match self {
            Pattern::FollowerLag => 4.0,
            Pattern::IsolateLeader | Pattern::KillDuringPartition | Pattern::LeaderDisk => 3.0,
            Pattern::CrashAll => 2.0,
            Pattern::PartialPartition | Pattern::LeaderKill => 1.5,
            Pattern::Kip101 | Pattern::LoseUnflushed => 1.0,
            Pattern::LeaderPause => 0.75,
            Pattern::ControllerFailover => 0.5,
        }
    }

    /// How often the pattern plays in each round of the package: the two that open
    /// the most windows twice, one variant after the other; every other pattern
    /// that opens a window of its own once (`leader-kill` and `follower-lag` for
    /// their first variants: a successor lagging at the failover, a follower
    /// catching up as the leader dies); the plain ones (a pause, a controller
    /// fault, KIP-101's restart), whose windows the others open too, not at all —
    /// one of them joins each round, drawn by weight. `kip101` is one of them: a
    /// controller that takes a restarted broker out of every ISR (KIP-841) never
    /// elects the follower it brings back, and `crash-all` opens KIP-101's window
    /// where every ISR member restarts.
    pub fn per_round(self) -> u32 {
        match self {
            Pattern::IsolateLeader | Pattern::KillDuringPartition => 2,
            Pattern::PartialPartition
            | Pattern::CrashAll
            | Pattern::LoseUnflushed
            | Pattern::LeaderDisk
            | Pattern::LeaderKill
            | Pattern::FollowerLag => 1,
            Pattern::LeaderPause | Pattern::Kip101 | Pattern::ControllerFailover => 0,
        }
    }

    /// The pattern that leads each round, played as soon as a partition suits it
    /// (after the campaign's first fault has moved a leader): `follower-lag`,
    /// whose catch-up-then-kill opens the one window no other pattern opens (a
    /// follower back in the ISR, or next in line outside it, without what the
    /// leader acknowledged), so that no seed leaves it to the end of a round a
    /// minute does not finish.
    pub fn leads_round(self) -> bool {
        self == Pattern::FollowerLag
    }

    /// Patterns that move a partition's leadership when held past a session timeout:
    /// the campaign's first fault is one of them.
    pub fn moves_leader(self) -> bool {
        matches!(
            self,
            Pattern::LeaderKill | Pattern::LeaderPause | Pattern::IsolateLeader | Pattern::Kip101
        )
    }

    /// Can this pattern run in this cluster, on a partition led with these followers,
    /// with this active controller?
    pub fn fits(
        self,
        settings: &Settings,
        partition: Option<&PartitionView>,
        controller: Option<Proc>,
    ) -> bool {
        let followers = partition.map_or(0, |p| p.followers().len());
        match self {
            Pattern::CrashAll => settings.crash_all_safe,
            Pattern::ControllerFailover => controller.is_some(),
            Pattern::LoseUnflushed => settings.page_cache && followers >= 1,
            Pattern::PartialPartition => followers >= 2,
            _ => followers >= 1,
        }
    }

    /// How much this pattern prefers `partition`, given the active controller: a
    /// pattern that cuts the leader from a follower, or lags the follower the
    /// controller would elect next, opens its window only when the controller is
    /// apart from them — a leader that is the controller too decides its own ISR
    /// (and drops the follower it cannot hear from), and a controller cut from the
    /// leader expires it within a session timeout. With every broker a voter such
    /// partitions are common; others are preferred ten to one. A leader isolated
    /// from everyone is deposed whether or not it was the controller (the others
    /// elect a new one first, which the hold allows for), so `isolate-leader` takes
    /// any leader.
    pub fn aim_weight(self, partition: &PartitionView, controller: Option<Proc>) -> f64 {
        let Some(Proc::Node(c)) = controller else {
            return 1.0;
        };
        let next = partition.followers().first().copied();
        let apart = match self {
            // The follower cut off must reach the controller (else it expires and
            // leaves the ISR by the controller's hand), and so must the leader.
            Pattern::PartialPartition | Pattern::KillDuringPartition | Pattern::FollowerLag => {
                partition.leader != Some(c) && next != Some(c)
            }
            _ => true,
        };
        if apart { 1.0 } else { 0.1 }
    }

    /// How much this pattern prefers a partition of `topic`: a follower that
    /// rejoined the ISR, or was elected, without records the leader acknowledged
    /// loses them, which the queue's checker finds whatever comes after (every
    /// acknowledged send must be polled) while a register hides a lost write
    /// overwritten before anyone read it — so `follower-lag` aims at the queue's
    /// partitions three to one.
    pub fn topic_weight(self, topic: &str) -> f64 {
        match self {
            Pattern::FollowerLag if topic == workloads::queue::TOPIC => 3.0,
            _ => 1.0,
        }
    }

    /// The pattern's roles and script on `partition` (None for the role-free
    /// patterns), `controller` the active controller (a broker, unless the
    /// controller is dedicated); `move_leader` holds leader faults past a session
    /// timeout; `turn` counts the campaign's earlier plays of this pattern, so
    /// that a pattern with variants plays each of them in turn.
    pub fn script(
        self,
        settings: &Settings,
        partition: Option<&PartitionView>,
        controller: Option<Proc>,
        move_leader: bool,
        turn: u32,
        rng: &mut impl Rng,
    ) -> (Value, Script) {
        let t = settings.timeouts;
        let ms = Duration::from_millis;
        let node = Proc::Node;
        let zero = Duration::ZERO;
        let (leader, followers) = match partition {
            Some(p) => (p.leader.unwrap_or(-1), p.followers()),
            None => (-1, Vec::new()),
        };
        let hold = |rng: &mut _| {
            if move_leader {
                longer(rng, t.session)
            } else {
                around(rng, t.session)
            }
        };
        // How much later a partition's election comes when `p`, going down, is the
        // active controller: a new one must be elected first (up to the Raft
        // election timeout), whose grace then runs as the session timeout would.
        let takeover = |p: Proc| {
            if controller == Some(p) {
                t.election
            } else {
                zero
            }
        };
        // The follower the controller would elect next, mostly; sometimes another.
        let next = followers.first().copied().unwrap_or(-1);
        let aimed = if followers.len() > 1 && rng.random_bool(0.25) {
            *followers[1..].choose(rng).expect("not empty")
        } else {
            next
        };
        let pair = |a: i32, b: i32| Grudge {
            cut: vec![(node(a), node(b)), (node(b), node(a))],
        };
        let mut roles = json!({"leader": leader, "followers": followers});
        let s = Script::default();
        let script = match self {
            Pattern::LeaderKill if turn % 2 == 0 => {
                // The follower elected next on slow links, then the leader killed: the
                // new leader lags the old one at the failover (its HW most), and its
                // followers' fetches and its clients reach it late — the rules of a
                // new leader's HW, reads and acks, before its followers have caught up.
                roles["variant"] = json!("slow-successor");
                roles["follower"] = json!(next);
                let delay_ms = rng.random_range(100..=250);
                let how = Degradation::Slow {
                    delay_ms,
                    jitter_ms: rng.random_range(0..=delay_ms / 4),
                };
                let slow = Action::Degrade {
                    procs: vec![node(next)],
                    between: false,
                    how,
                    seed: rng.random(),
                };
                let restore = slow.undo().expect("a degradation is undone");
                s.then(zero, slow)
                    .then(ms(rng.random_range(500..1500)), Action::Kill(node(leader)))
                    .then(
                        longer(rng, t.session) + takeover(node(leader)),
                        Action::Restart(node(leader)),
                    )
                    .then(ms(rng.random_range(300..1000)), restore)
            }
            Pattern::LeaderKill => {
                roles["variant"] = json!("plain");
                s.then(zero, Action::Kill(node(leader)))
                    .then(hold(rng), Action::Restart(node(leader)))
            }
            Pattern::LeaderPause => s
                .then(zero, Action::Pause(node(leader)))
                .then(hold(rng), Action::Resume(node(leader))),
            Pattern::Kip101 => {
                // Always the follower the controller elects next: the window opens
                // only if the one that came back behind is elected.
                let aimed = next;
                roles["follower"] = json!(aimed);
                // Back within a session timeout: the controller may not notice.
                let down = shorter(rng, t.session);
                let s = s.then(zero, Action::Kill(node(aimed)));
                // Mostly the leader first: the follower then comes back to no leader
                // to fetch from, and cannot catch up before the election. Restarted
                // first, it must lose a race with its own first fetch.
                let s = if rng.random_bool(0.33) {
                    roles["variant"] = json!("restart-then-kill-leader");
                    let race = t.fetch_wait.mul_f64(rng.random_range(0.0..0.5));
                    s.then(down, Action::Restart(node(aimed)))
                        .then(race, Action::Kill(node(leader)))
                } else {
                    roles["variant"] = json!("kill-leader-then-restart");
                    s.then(down, Action::Kill(node(leader)))
                        .then(ms(rng.random_range(0..200)), Action::Restart(node(aimed)))
                };
                // Back only once the election happened: when the leader was the
                // controller too, that waits for a new controller and its grace.
                let down = longer(rng, t.session) + takeover(node(leader));
                s.then(down, Action::Restart(node(leader)))
            }
            Pattern::FollowerLag if turn % 2 == 0 => {
                // Out of the ISR past the lag time, then back on a throttled link:
                // it catches up slowly, and the leader dies meanwhile. Only the ISR
                // the controller agreed to may elect: a follower must not rejoin it
                // before it has everything the HW covers.
                roles["variant"] = json!("catch-up-then-kill-leader");
                roles["follower"] = json!(next);
                // Cut well past the lag time and the clients' request timeout (the
                // writes sent as the cut began wait for it until the shrink, and
                // time out): after the shrink, the leader commits and acknowledges
                // for seconds without it, which it must then fetch — a KiB or two a
                // second, so hundreds of records take seconds, on the links
                // between the two only (its heartbeats to the controller, and its
                // fetches from other leaders, go at full speed). The leader
                // dies as soon as the controller shows the follower back in the ISR
                // (which it may be only once it has everything the HW covers), or
                // after a second or so of catching up, whichever comes first — and
                // the path between them goes down with it, so that what the leader
                // had already sent is not delivered after its death: the follower
                // holds what it had caught up when the controller elects.
                let grudge = pair(leader, next);
                let throttle = Action::Degrade {
                    procs: vec![node(next), node(leader)],
                    between: true,
                    how: Degradation::Throttle {
                        bytes_per_s: rng.random_range(2..=8) * 256,
                    },
                    seed: rng.random(),
                };
                let restore = throttle.undo().expect("a degradation is undone");
                s.then(zero, cut("cut-follower", &grudge))
                    .then(
                        t.lag.max(t.client) + t.client.mul_f64(rng.random_range(1.0..1.7)),
                        throttle,
                    )
                    .then(zero, heal("cut-follower", &grudge))
                    .then(
                        ms(rng.random_range(50..150)),
                        Action::KillOnceInIsr {
                            leader,
                            follower: next,
                            topic: partition.map_or_else(String::new, |p| p.topic.clone()),
                            partition: partition.map_or(0, |p| p.partition),
                            within: ms(rng.random_range(800..1500)),
                        },
                    )
                    .then(zero, cut("cut-follower", &grudge))
                    .then(
                        just_past(rng, t.session) + takeover(node(leader)),
                        heal("cut-follower", &grudge),
                    )
                    .then(zero, Action::Restart(node(leader)))
                    .then(ms(rng.random_range(300..1000)), restore)
            }
            Pattern::FollowerLag => {
                roles["variant"] = json!("lag");
                roles["follower"] = json!(next);
                // Past the lag time, but not by much: the shrink comes once the
                // lag time is over, and the rest of the hold only idles.
                let held = if rng.random_bool(0.67) {
                    just_past(rng, t.lag)
                } else {
                    shorter(rng, t.lag)
                };
                let grudge = pair(leader, next);
                s.then(zero, cut("cut-follower", &grudge))
                    .then(held, heal("cut-follower", &grudge))
            }
            Pattern::IsolateLeader => {
                // Past a session timeout (and a controller takeover, when it is
                // the controller), so another leader is elected while clients still
                // reach this one: in turn just past it (the deposed leader rejoins
                // while writes sent to it still wait for their acks) and past the
                // clients' request timeout too, so that the clients whose writes to
                // it timed out have moved to the new leader and written there while
                // others still read from, and write to, the deposed one — by one to
                // two more request timeouts, as a write that reached it late (a
                // client still finding leaders, say) times out late too. (A leader
                // stopped for less than a session timeout: `leader-pause`.)
                let elected = t.session + takeover(node(leader));
                let held = if turn % 2 == 0 {
                    roles["variant"] = json!("just-past-session");
                    just_past(rng, elected)
                } else {
                    roles["variant"] = json!("past-client-timeout");
                    elected.max(t.client) + t.client.mul_f64(rng.random_range(1.0..2.0))
                };
                let grudge = Grudge::isolate(node(leader), &settings.procs());
                s.then(zero, cut("isolate-leader", &grudge))
                    .then(held, heal("isolate-leader", &grudge))
            }
            Pattern::PartialPartition => {
                let (far, near) = (next, followers[1]);
                roles["cut_from"] = json!(far);
                roles["reaches"] = json!(near);
                roles["controller"] = json!(controller.map(Proc::to_json));
                let held = t.lag.mul_f64(rng.random_range(0.5..1.8));
                // The controller may be one of the partition's replicas (every
                // broker is a voter): stalling it is only the variant's point when
                // it is neither the leader nor the follower cut off — and when it is
                // the other follower, stopping it would stop the leader's acks too:
                // the leader is then killed with the controller running, which
                // elects from the ISR it agreed to all the same.
                let stallable = controller.filter(|&c| c != node(leader) && c != node(far));
                let stalled = stallable.filter(|_| rng.random_bool(0.5));
                if let Some(c) = stalled {
                    let grudge = pair(leader, far);
                    let s = if c == node(near) {
                        roles["variant"] = json!("kill-past-lag-time");
                        s.then(zero, cut("cut-follower", &grudge))
                            .then(held.max(t.lag.mul_f64(1.1)), Action::Kill(node(leader)))
                    } else {
                        // A controller stopped counts no time against anyone:
                        // nothing is elected, and no ISR change accepted, until it
                        // resumes and finds the leader dead — or, when it is one
                        // voter of several, until the others elect one that does.
                        roles["variant"] = json!("stalled-controller");
                        s.then(zero, Action::Pause(c))
                            .then(zero, cut("cut-follower", &grudge))
                            .then(held.max(t.lag.mul_f64(1.1)), Action::Kill(node(leader)))
                            .then(ms(rng.random_range(100..500)), Action::Resume(c))
                    };
                    s.then(zero, heal("cut-follower", &grudge))
                        .then(longer(rng, t.session), Action::Restart(node(leader)))
                } else {
                    roles["variant"] = json!("cut-from-controller");
                    let mut grudge = pair(leader, far);
                    // Cut from the controller too, unless it is the leader itself, the
                    // follower already cut, or the follower the leader must still reach.
                    if let Some(c) = controller
                        .filter(|&c| c != node(leader) && c != node(far) && c != node(near))
                    {
                        grudge.cut.push((node(leader), c));
                        grudge.cut.push((c, node(leader)));
                    }
                    s.then(zero, cut("partial-partition", &grudge))
                        .then(held, heal("partial-partition", &grudge))
                }
            }
            Pattern::CrashAll => {
                let mut order = settings.nodes.clone();
                order.shuffle(rng);
                // In turn: KIP-101's first scenario, the followers back first;
                // then every node in an order drawn.
                if leader >= 0 && turn % 2 == 0 {
                    order.retain(|&id| id != leader);
                    order.push(leader);
                    roles["variant"] = json!("old-leader-last");
                } else {
                    roles["variant"] = json!("any-order");
                }
                let last_is_leader = roles["variant"] == "old-leader-last";
                let restarts = order
                    .iter()
                    .enumerate()
                    .map(|(i, &id)| {
                        let gap = match i {
                            0 => zero,
                            // The controller went down with every broker: with the
                            // brokers as voters, the old leader stays down until a
                            // new controller is elected and its grace is over, so
                            // that it elects one of the followers back first.
                            _ if last_is_leader
                                && id == leader
                                && !settings.dedicated_controller =>
                            {
                                t.election + longer(rng, t.session)
                            }
                            _ if rng.random_bool(0.5) => shorter(rng, t.fetch_wait),
                            _ => shorter(rng, t.session),
                        };
                        (gap, id)
                    })
                    .collect();
                s.then(zero, Action::CrashAll(settings.nodes.clone())).then(
                    ms(rng.random_range(100..1000)),
                    Action::RestartEach(restarts),
                )
            }
            Pattern::KillDuringPartition => {
                roles["follower"] = json!(next);
                let grudge = pair(leader, next);
                // Within the lag time the follower is still in the ISR (the HW
                // waits for it); past it, the leader has asked the controller to
                // drop it, and the controller elects from the ISR it agreed to.
                // Each in turn: they decide different rules.
                let lagging = if turn % 2 == 0 {
                    roles["variant"] = json!("within-lag-time");
                    t.lag.mul_f64(rng.random_range(0.2..0.9))
                } else {
                    roles["variant"] = json!("past-lag-time");
                    just_past(rng, t.lag)
                };
                // The leader stays down until the controller (a new one, if it was
                // the controller) has elected another.
                let down = just_past(rng, t.session) + takeover(node(leader));
                s.then(zero, cut("cut-follower", &grudge))
                    .then(lagging, Action::Kill(node(leader)))
                    .then(down, heal("cut-follower", &grudge))
                    .then(ms(rng.random_range(0..500)), Action::Restart(node(leader)))
            }
            Pattern::LoseUnflushed => {
                let target = if rng.random_bool(0.6) { aimed } else { leader };
                roles["target"] = json!(target);
                s.then(zero, Action::LoseUnflushed(target))
                    .then(around(rng, t.session), Action::Restart(node(target)))
            }
            Pattern::LeaderDisk => {
                let mode = if rng.random_bool(0.5) {
                    DiskMode::Enospc
                } else {
                    DiskMode::Eio
                };
                roles["mode"] = json!(mode.as_str());
                // A disk that fails and recovers two or three times, each over before
                // the storage failure timeout: the leader keeps leading and appends
                // again on the disk that failed it. Each failure stalls the clients
                // (a follower's failed fetches hold back the HW of every partition it
                // follows), and each recovery lets them send again, some of it to this
                // leader at the next failure. Three times in ten a last failure then
                // lasts past the timeout: the leader leaves every ISR and its
                // leadership moves.
                let bound = |d: Duration| (d * 2).as_millis() as u64;
                let node = leader;
                let mut s = s;
                for i in 0..rng.random_range(2..=3) {
                    let within = t.storage.mul_f64(rng.random_range(0.2..0.5));
                    let for_ms = bound(within);
                    let gap = if i == 0 {
                        zero
                    } else {
                        ms(rng.random_range(150..500))
                    };
                    s = s
                        .then(gap, Action::Disk { node, mode, for_ms })
                        .then(within, Action::DiskOk { node, mode, for_ms });
                }
                if rng.random_bool(0.3) {
                    roles["variant"] = json!("within-then-past-storage-timeout");
                    let past = just_past(rng, t.storage);
                    let for_ms = bound(past);
                    s = s
                        .then(
                            ms(rng.random_range(200..1000)),
                            Action::Disk { node, mode, for_ms },
                        )
                        .then(past, Action::DiskOk { node, mode, for_ms });
                } else {
                    roles["variant"] = json!("within-storage-timeout");
                }
                s.then(
                    ms(rng.random_range(300..2000)),
                    Action::Kill(Proc::Node(leader)),
                )
                // Back soon: the restart's recovery is what the pattern is after.
                .then(shorter(rng, t.session), Action::Restart(Proc::Node(leader)))
            }
            Pattern::ControllerFailover => {
                let c = controller.expect("fits only with a known controller");
                roles = json!({"controller": c.to_json()});
                let held = around(rng, t.session);
                match rng.random_range(0..4) {
                    0 | 1 => s.then(zero, Action::Kill(c)).then(held, Action::Restart(c)),
                    2 => s.then(zero, Action::Pause(c)).then(held, Action::Resume(c)),
                    _ => {
                        let grudge = Grudge::isolate(c, &settings.procs());
                        s.then(zero, cut("isolate-controller", &grudge))
                            .then(held, heal("isolate-controller", &grudge))
                    }
                }
            }
        };
        (roles, script)
    }
}

fn cut(shape: &'static str, grudge: &Grudge) -> Action {
    Action::Cut {
        shape,
        grudge: grudge.clone(),
    }
}

fn heal(shape: &'static str, grudge: &Grudge) -> Action {
    Action::Heal {
        shape,
        grudge: grudge.clone(),
    }
}

/// Well under `base`: the timeout does not fire.
pub fn shorter(rng: &mut impl Rng, base: Duration) -> Duration {
    base.mul_f64(rng.random_range(0.3..0.8))
}

/// Well past `base`: the timeout fires.
pub fn longer(rng: &mut impl Rng, base: Duration) -> Duration {
    base.mul_f64(rng.random_range(1.3..2.2))
}

/// Just past `base`: the timeout fires, and the fault ends soon after.
pub fn just_past(rng: &mut impl Rng, base: Duration) -> Duration {
    base.mul_f64(rng.random_range(1.1..1.5))
}

/// Shorter or longer than `base`, as a coin says.
pub fn around(rng: &mut impl Rng, base: Duration) -> Duration {
    if rng.random_bool(0.5) {
        shorter(rng, base)
    } else {
        longer(rng, base)
    }
}
