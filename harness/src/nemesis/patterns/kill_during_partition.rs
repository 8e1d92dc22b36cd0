//! `kill-during-partition`: cut the next-in-line follower from the leader, then kill
//! the leader — in turn within the lag time (the follower still in the ISR, the HW
//! waiting for it) and past it (the controller elects from the ISR it agreed to).

use rand::{Rng, RngCore};

use super::{Aim, Pattern, Roles, cut, heal, just_past, ms, pair};
use crate::nemesis::action::{Action, Script};
use crate::nemesis::coverage::Transition::{self, *};
use crate::proc::Proc;

pub struct KillDuringPartition;

impl Pattern for KillDuringPartition {
    fn name(&self) -> &'static str {
        "kill-during-partition"
    }

    fn targets(&self) -> &'static [Transition] {
        &[LeaderElection, TruncateEpoch, TruncateRecords, IsrShrinkLag]
    }

    fn base_weight(&self) -> f64 {
        3.0
    }

    /// Twice, one variant after the other.
    fn per_round(&self) -> u32 {
        2
    }

    fn needs_controller_apart(&self) -> bool {
        true
    }

    fn script(&self, aim: &Aim<'_>, rng: &mut dyn RngCore) -> (Roles, Script) {
        let t = aim.timeouts();
        let (leader, next) = (Proc::Node(aim.leader), aim.next);
        let mut roles = aim.roles();
        roles.follower = Some(next);
        let grudge = pair(aim.leader, next);
        let lagging = if aim.turn % 2 == 0 {
            roles.variant = Some("within-lag-time");
            t.lag.mul_f64(rng.random_range(0.2..0.9))
        } else {
            roles.variant = Some("past-lag-time");
            just_past(rng, t.lag)
        };
        // The leader stays down until the controller (a new one, if it was the
        // controller) has elected another.
        let down = just_past(rng, t.session) + aim.takeover(leader);
        let s = Script::default()
            .then(std::time::Duration::ZERO, cut("cut-follower", &grudge))
            .then(lagging, Action::Kill(leader))
            .then(down, heal("cut-follower", &grudge))
            .then(ms(rng, 0..500), Action::Restart(leader));
        (roles, s)
    }
}
