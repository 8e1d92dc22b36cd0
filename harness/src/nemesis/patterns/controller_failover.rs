//! `controller-failover`: kill, stall or isolate the active controller.

use rand::{Rng, RngCore};

use super::{Aim, PackageSettings, Pattern, Roles, around, cut, heal};
use crate::nemesis::action::{Action, Script};
use crate::nemesis::coverage::Transition::{self, *};
use crate::net::Grudge;
use crate::proc::Proc;
use crate::system::view::PartitionView;

pub struct ControllerFailover;

impl Pattern for ControllerFailover {
    fn name(&self) -> &'static str {
        "controller-failover"
    }

    fn targets(&self) -> &'static [Transition] {
        &[Transition::ControllerFailover, Fenced]
    }

    /// The least: a controller fault mostly freezes the cluster's decisions rather
    /// than leaving a replica serving or electable.
    fn base_weight(&self) -> f64 {
        0.5
    }

    fn per_round(&self) -> u32 {
        0
    }

    fn role_free(&self) -> bool {
        true
    }

    fn fits(&self, _: &PackageSettings, _: Option<&PartitionView>, controller: Option<Proc>) -> bool {
        controller.is_some()
    }

    fn script(&self, aim: &Aim<'_>, rng: &mut dyn RngCore) -> (Roles, Script) {
        let c = aim.controller.expect("fits only with a known controller");
        let roles = Roles {
            controller: Some(c),
            ..Roles::default()
        };
        let held = around(rng, aim.timeouts().session);
        let zero = std::time::Duration::ZERO;
        let s = Script::default();
        let s = match rng.random_range(0..4) {
            0 | 1 => s.then(zero, Action::Kill(c)).then(held, Action::Restart(c)),
            2 => s.then(zero, Action::Pause(c)).then(held, Action::Resume(c)),
            _ => {
                let grudge = Grudge::isolate(c, &aim.settings.procs());
                s.then(zero, cut("isolate-controller", &grudge))
                    .then(held, heal("isolate-controller", &grudge))
            }
        };
        (roles, s)
    }
}
