//! `reassign`: move a partition's replicas while faults strike — Kafka's
//! reassignment (KIP-455), where its controller kept breaking (a reassignment
//! record deleted before it completed, adding replicas loaded as removing ones after
//! a failover). The last follower is taken out of the partition (it deletes its
//! replica) and added back first in replica order, to catch up from nothing on a
//! throttled link (Kafka's reassignment throttle); while it does, in turn the
//! leader dies (only the ISR may elect: the adding replica has none of the log) or
//! the active controller does (the new one must resume the reassignment from the
//! replicated state, adding replicas as adding). Half the time the move is then
//! cancelled, as an operator would (KIP-455's cancellation: back to the replicas and
//! ISR of before it). Then the partition is moved back to its replicas in their
//! first order.

use rand::{Rng, RngCore};

use super::{Aim, PackageSettings, favour, Pattern, Roles, just_past, ms, ms_log};
use crate::nemesis::action::{Action, MoveThrottle, Script};
use crate::nemesis::coverage::Transition::{self, *};
use crate::proc::Proc;
use crate::system::Reconfiguration;
use crate::system::view::PartitionView;

/// How long a step that moves replicas waits for the reassignment to complete.
const SHRINK_SETTLES: std::time::Duration = std::time::Duration::from_secs(3);
const BACK_SETTLES: std::time::Duration = std::time::Duration::from_secs(15);

pub struct Reassign;

impl Pattern for Reassign {
    fn name(&self) -> &'static str {
        "reassign"
    }

    fn targets(&self) -> &'static [Transition] {
        &[
            ReassignStarted,
            ReassignCompleted,
            ReassignResumed,
            LeaderElection,
        ]
    }

    fn base_weight(&self) -> f64 {
        2.5
    }

    /// Twice, one variant after the other: each opens its own window.
    fn per_round(&self) -> u32 {
        2
    }

    fn can_run(&self, settings: &PackageSettings) -> bool {
        settings.reconfigurable
    }

    /// Three replicas: one to move out and back, two to lead and elect.
    fn fits(&self, s: &PackageSettings, p: Option<&PartitionView>, _: Option<Proc>) -> bool {
        s.reconfigurable && p.is_some_and(|p| p.followers().len() >= 2 && p.adding.is_empty())
    }

    /// A replica elected without what was committed loses records that a lossless
    /// topic's checker sees whatever comes after, and a register's may not: the
    /// queue's partitions ten to one.
    fn topic_weight(&self, topic: &str, settings: &PackageSettings) -> f64 {
        favour(&settings.lossless_topics, topic, 10.0)
    }

    fn script(&self, aim: &Aim<'_>, rng: &mut dyn RngCore) -> (Roles, Script) {
        let t = aim.timeouts();
        let zero = std::time::Duration::ZERO;
        let (leader, first) = (aim.leader, aim.next);
        let moved = *aim.followers.last().expect("fits with two followers");
        let original = aim.partition.map_or_else(Vec::new, |p| p.replicas.clone());
        let mut roles = aim.roles();
        roles.follower = Some(moved);
        let reassign = |replicas: Vec<i32>, settle, throttle| Action::Reconfigure {
            change: Reconfiguration::Reassign {
                topic: aim.topic(),
                partition: aim.partition_number(),
                replicas,
                from: Vec::new(),
            },
            settle,
            throttle,
        };
        // The move back in is throttled, as Kafka's operators throttle theirs.
        let throttle = MoveThrottle {
            procs: vec![Proc::Node(moved), Proc::Node(leader)],
            bytes_per_s: rng.random_range(4..=16) * 256,
            seed: rng.random(),
        };
        let grow = reassign(vec![moved, leader, first], zero, Some(throttle));
        let restore = grow.undo().expect("a throttled move's throttle is lifted");
        // While the moved replica catches up, in turn: the leader dies (the controller
        // must elect from the ISR, which the adding replica is not in until it has
        // caught up), or the active controller does (the new one must resume the
        // reassignment with its adding replicas as adding).
        let leader_proc = Proc::Node(leader);
        let victim = match aim.controller {
            Some(c) if aim.turn % 2 == 1 => {
                roles.variant = Some("grow-then-controller-dies");
                roles.controller = Some(c);
                c
            }
            _ => {
                roles.variant = Some("grow-then-leader-dies");
                leader_proc
            }
        };
        let back_up = if victim == leader_proc {
            just_past(rng, t.session) + aim.takeover(victim)
        } else {
            just_past(rng, t.election)
        };
        // 1 ms to 1 s after the move, log-uniform: the instant the controller completes
        // it is a window of its own, before the leader's first ISR check. The leader
        // dies sooner if the controller shows the moved replica in the ISR (the move
        // completes) first: a replica counted in sync that instant is elected with
        // nothing of the log unless the leader lives to take it out again.
        let within = ms_log(rng, 1..1000);
        let (delay, kill) = if victim == leader_proc {
            let kill = Action::KillOnceInIsr {
                leader,
                follower: moved,
                topic: aim.topic(),
                partition: aim.partition_number(),
                within,
            };
            (zero, kill)
        } else {
            (within, Action::Kill(victim))
        };
        let mut s = Script::default()
            .then(zero, reassign(vec![leader, first], SHRINK_SETTLES, None))
            .then(zero, grow)
            .then(delay, kill)
            .then(back_up, Action::Restart(victim));
        // Half the time, the move is then cancelled (KIP-455), 1–4 s after the
        // restart (sooner, the restarted replica is rarely back in the ISR and the
        // cancel is refused for the ISR it would leave below min.insync.replicas): if
        // the moved replica is still catching up on the throttled link, the
        // controller must put back the replicas and ISR of before the move, the moved
        // replica out of both (it deletes its replica), and lead from an original
        // replica; if the move completed meanwhile — as it does whenever the leader
        // was killed the moment the moved replica joined the ISR — it refuses. The
        // partition's next election (the move back below, or a later pattern's)
        // shows a cancel that left a replica without the log in the ISR.
        if rng.random_bool(0.5) {
            let cancel = Action::Reconfigure {
                change: Reconfiguration::CancelReassignment {
                    topic: aim.topic(),
                    partition: aim.partition_number(),
                },
                settle: zero,
                throttle: None,
            };
            s = s.then(ms(rng, 1000..4000), cancel);
        }
        let s = s
            .then(ms(rng, 300..1000), restore)
            .then(ms(rng, 500..1500), reassign(original, BACK_SETTLES, None));
        (roles, s)
    }
}
