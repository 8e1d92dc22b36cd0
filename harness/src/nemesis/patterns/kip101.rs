//! `kip101`: KIP-101's window: restart a follower and kill the leader before it
//! caught up.

use rand::{Rng, RngCore};

use super::{Aim, Pattern, Roles, longer, ms, shorter};
use crate::nemesis::action::{Action, Script};
use crate::nemesis::coverage::Transition::{self, *};
use crate::proc::Proc;

pub struct Kip101;

impl Pattern for Kip101 {
    fn name(&self) -> &'static str {
        "kip101"
    }

    fn targets(&self) -> &'static [Transition] {
        &[
            RestartedLeader,
            LeaderElection,
            TruncateEpoch,
            TruncateHw,
            TruncateRecords,
        ]
    }

    fn base_weight(&self) -> f64 {
        1.0
    }

    /// A plain pattern: a controller that takes a restarted broker out of every ISR
    /// (KIP-841) never elects the follower it brings back, and `crash-all` opens
    /// KIP-101's window where every ISR member restarts.
    fn per_round(&self) -> u32 {
        0
    }

    fn moves_leader(&self) -> bool {
        true
    }

    fn script(&self, aim: &Aim<'_>, rng: &mut dyn RngCore) -> (Roles, Script) {
        let t = aim.timeouts();
        let node = Proc::Node;
        // Always the follower the controller elects next: the window opens only if
        // the one that came back behind is elected.
        let aimed = aim.next;
        let mut roles = aim.roles();
        roles.follower = Some(aimed);
        // Back within a session timeout: the controller may not notice.
        let down = shorter(rng, t.session);
        let s = Script::default().then(std::time::Duration::ZERO, Action::Kill(node(aimed)));
        // Mostly the leader first: the follower then comes back to no leader to
        // fetch from, and cannot catch up before the election. Restarted first, it
        // must lose a race with its own first fetch.
        let s = if rng.random_bool(0.33) {
            roles.variant = Some("restart-then-kill-leader");
            let race = t.fetch_wait.mul_f64(rng.random_range(0.0..0.5));
            s.then(down, Action::Restart(node(aimed)))
                .then(race, Action::Kill(node(aim.leader)))
        } else {
            roles.variant = Some("kill-leader-then-restart");
            s.then(down, Action::Kill(node(aim.leader)))
                .then(ms(rng, 0..200), Action::Restart(node(aimed)))
        };
        // Back only once the election happened: when the leader was the controller
        // too, that waits for a new controller and its grace.
        let down = longer(rng, t.session) + aim.takeover(node(aim.leader));
        (roles, s.then(down, Action::Restart(node(aim.leader))))
    }
}
