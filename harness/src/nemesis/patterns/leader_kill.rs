//! `leader-kill`: SIGKILL a partition's leader and restart it after about a session
//! timeout; in turn with the follower the controller elects next on slow links, so
//! that it lags the old leader at the failover.

use rand::{Rng, RngCore};

use super::{Aim, Pattern, Roles, longer, ms};
use crate::nemesis::action::{Action, Script};
use crate::nemesis::coverage::Transition::{self, *};
use crate::nemesis::fault::Degradation;
use crate::proc::Proc;

pub struct LeaderKill;

impl Pattern for LeaderKill {
    fn name(&self) -> &'static str {
        "leader-kill"
    }

    fn targets(&self) -> &'static [Transition] {
        &[LeaderElection, IsrShrinkController, IsrExpand, TruncateEpoch]
    }

    fn base_weight(&self) -> f64 {
        1.5
    }

    /// Once, for its first variant: a successor lagging at the failover.
    fn per_round(&self) -> u32 {
        1
    }

    fn moves_leader(&self) -> bool {
        true
    }

    fn script(&self, aim: &Aim<'_>, rng: &mut dyn RngCore) -> (Roles, Script) {
        let t = aim.timeouts();
        let leader = Proc::Node(aim.leader);
        let mut roles = aim.roles();
        let s = Script::default();
        let zero = std::time::Duration::ZERO;
        if aim.turn % 2 != 0 {
            roles.variant = Some("plain");
            let s = s
                .then(zero, Action::Kill(leader))
                .then(aim.hold(rng), Action::Restart(leader));
            return (roles, s);
        }
        // The follower elected next on slow links, then the leader killed: the new
        // leader lags the old one at the failover (its HW most), and its followers'
        // fetches and its clients reach it late — the rules of a new leader's HW,
        // reads and acks, before its followers have caught up.
        roles.variant = Some("slow-successor");
        roles.follower = Some(aim.next);
        let delay_ms = rng.random_range(100..=250);
        let how = Degradation::Slow {
            delay_ms,
            jitter_ms: rng.random_range(0..=delay_ms / 4),
        };
        let slow = Action::Degrade {
            procs: vec![Proc::Node(aim.next)],
            between: false,
            how,
            seed: rng.random(),
        };
        let restore = slow.undo().expect("a degradation is undone");
        let s = s
            .then(zero, slow)
            .then(ms(rng, 500..1500), Action::Kill(leader))
            .then(
                longer(rng, t.session) + aim.takeover(leader),
                Action::Restart(leader),
            )
            .then(ms(rng, 300..1000), restore);
        (roles, s)
    }
}
