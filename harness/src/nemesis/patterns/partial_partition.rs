//! `partial-partition`: cut the leader from the controller and the next-in-line
//! follower while it still reaches the other — or stall the controller and kill the
//! leader past the lag time.

use rand::{Rng, RngCore};

use super::{Aim, PackageSettings, Pattern, Roles, cut, heal, longer, ms, pair};
use crate::nemesis::action::{Action, Script};
use crate::nemesis::coverage::Transition::{self, *};
use crate::proc::Proc;
use crate::system::view::PartitionView;

pub struct PartialPartition;

impl Pattern for PartialPartition {
    fn name(&self) -> &'static str {
        "partial-partition"
    }

    fn targets(&self) -> &'static [Transition] {
        &[IsrShrinkLag, NotEnoughReplicas, Fenced, LeaderElection]
    }

    fn base_weight(&self) -> f64 {
        1.5
    }

    fn per_round(&self) -> u32 {
        1
    }

    /// Two followers: one cut off, one still reached.
    fn fits(&self, _: &PackageSettings, p: Option<&PartitionView>, _: Option<Proc>) -> bool {
        p.is_some_and(|p| p.followers().len() >= 2)
    }

    fn needs_controller_apart(&self) -> bool {
        true
    }

    fn script(&self, aim: &Aim<'_>, rng: &mut dyn RngCore) -> (Roles, Script) {
        let t = aim.timeouts();
        let node = Proc::Node;
        let zero = std::time::Duration::ZERO;
        let (leader, far, near) = (aim.leader, aim.next, aim.followers[1]);
        let controller = aim.controller;
        let mut roles = aim.roles();
        roles.cut_from = Some(far);
        roles.reaches = Some(near);
        let held = t.lag.mul_f64(rng.random_range(0.5..1.8));
        // The controller may be one of the partition's replicas (every broker is a
        // voter): stalling it is only the variant's point when it is neither the
        // leader nor the follower cut off — and when it is the other follower,
        // stopping it would stop the leader's acks too: the leader is then killed
        // with the controller running, which elects from the ISR it agreed to all
        // the same. Only such a controller is named one: the leader or the follower
        // cut off is struck as that, whatever else it is.
        let stallable = controller.filter(|&c| c != node(leader) && c != node(far));
        roles.controller = stallable;
        let stalled = stallable.filter(|_| rng.random_bool(0.5));
        let s = Script::default();
        if let Some(c) = stalled {
            let grudge = pair(leader, far);
            let s = if c == node(near) {
                roles.variant = Some("kill-past-lag-time");
                s.then(zero, cut("cut-follower", &grudge))
                    .then(held.max(t.lag.mul_f64(1.1)), Action::Kill(node(leader)))
            } else {
                // A controller stopped counts no time against anyone: nothing is
                // elected, and no ISR change accepted, until it resumes and finds the
                // leader dead — or, when it is one voter of several, until the others
                // elect one that does.
                roles.variant = Some("stalled-controller");
                s.then(zero, Action::Pause(c))
                    .then(zero, cut("cut-follower", &grudge))
                    .then(held.max(t.lag.mul_f64(1.1)), Action::Kill(node(leader)))
                    .then(ms(rng, 100..500), Action::Resume(c))
            };
            let s = s
                .then(zero, heal("cut-follower", &grudge))
                .then(longer(rng, t.session), Action::Restart(node(leader)));
            return (roles, s);
        }
        roles.variant = Some("cut-from-controller");
        let mut grudge = pair(leader, far);
        // Cut from the controller too, unless it is the leader itself, the follower
        // already cut, or the follower the leader must still reach.
        if let Some(c) =
            controller.filter(|&c| c != node(leader) && c != node(far) && c != node(near))
        {
            grudge.cut.push((node(leader), c));
            grudge.cut.push((c, node(leader)));
        }
        let s = s
            .then(zero, cut("partial-partition", &grudge))
            .then(held, heal("partial-partition", &grudge));
        (roles, s)
    }
}
