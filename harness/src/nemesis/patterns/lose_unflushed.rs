//! `lose-unflushed`: SIGKILL a node that loses its unflushed bytes (runs with a
//! flush policy only: a power cut of the node's fault filesystem, or the brokers
//! simulating their page cache); one time in two the power cut tears the last write
//! (`torn-write`: a prefix of it survives).

use rand::{Rng, RngCore};

use super::{Aim, PackageSettings, Pattern, Roles, around};
use crate::nemesis::action::{Action, Script};
use crate::nemesis::coverage::Transition::{self, *};
use crate::proc::Proc;
use crate::system::view::PartitionView;

pub struct LoseUnflushed;

impl Pattern for LoseUnflushed {
    fn name(&self) -> &'static str {
        "lose-unflushed"
    }

    fn targets(&self) -> &'static [Transition] {
        &[TruncateEpoch, TruncateRecords, IsrShrinkController]
    }

    fn base_weight(&self) -> f64 {
        1.0
    }

    fn per_round(&self) -> u32 {
        1
    }

    fn can_run(&self, settings: &PackageSettings) -> bool {
        settings.page_cache
    }

    fn fits(&self, settings: &PackageSettings, p: Option<&PartitionView>, _: Option<Proc>) -> bool {
        settings.page_cache && p.is_some_and(|p| !p.followers().is_empty())
    }

    fn script(&self, aim: &Aim<'_>, rng: &mut dyn RngCore) -> (Roles, Script) {
        let target = if rng.random_bool(0.6) {
            aim.aimed
        } else {
            aim.leader
        };
        let mut roles = aim.roles();
        roles.target = Some(target);
        let kill = if rng.random_bool(0.5) {
            Action::TornWrite {
                node: target,
                seed: rng.random(),
            }
        } else {
            Action::LoseUnflushed(target)
        };
        let s = Script::default()
            .then(std::time::Duration::ZERO, kill)
            .then(
                around(rng, aim.timeouts().session),
                Action::Restart(Proc::Node(target)),
            );
        (roles, s)
    }
}
