//! `crash-all`: SIGKILL every node; restart them quickly one by one — in turn the
//! old leader last (KIP-101's first scenario: the followers back first), then in an
//! order drawn.

use rand::seq::SliceRandom;
use rand::{Rng, RngCore};

use super::{Aim, PackageSettings, Pattern, Roles, longer, ms, shorter};
use crate::nemesis::action::{Action, Script};
use crate::nemesis::coverage::Transition::{self, *};
use crate::proc::Proc;
use crate::system::view::PartitionView;

pub struct CrashAll;

impl Pattern for CrashAll {
    fn name(&self) -> &'static str {
        "crash-all"
    }

    fn targets(&self) -> &'static [Transition] {
        &[
            RestartedLeader,
            LeaderElection,
            TruncateEpoch,
            TruncateHw,
            NotEnoughReplicas,
        ]
    }

    /// Replicas that come back behind, elected as the last of their ISR.
    fn base_weight(&self) -> f64 {
        2.0
    }

    fn per_round(&self) -> u32 {
        1
    }

    /// A power cut of every node at once is the one fault that tests what the
    /// brokers claim is on disk (every replica's unflushed tail lost together, on
    /// the fault filesystem) and opens KIP-101's window (every ISR member
    /// restarting). Drawn at its weight among a round of a dozen, it did not play
    /// in one campaign of a minute in five: it leads the round after
    /// `isolate-leader`.
    fn leads_round(&self) -> bool {
        true
    }

    fn can_run(&self, settings: &PackageSettings) -> bool {
        settings.crash_all_safe
    }

    fn fits(&self, settings: &PackageSettings, _: Option<&PartitionView>, _: Option<Proc>) -> bool {
        settings.crash_all_safe
    }

    fn script(&self, aim: &Aim<'_>, rng: &mut dyn RngCore) -> (Roles, Script) {
        let t = aim.timeouts();
        let settings = aim.settings;
        let leader = aim.leader;
        let mut roles = aim.roles();
        let mut order = settings.nodes.clone();
        order.shuffle(rng);
        let last_is_leader = leader >= 0 && aim.turn % 2 == 0;
        if last_is_leader {
            order.retain(|&id| id != leader);
            order.push(leader);
            roles.variant = Some("old-leader-last");
        } else {
            roles.variant = Some("any-order");
        }
        let restarts = order
            .iter()
            .enumerate()
            .map(|(i, &id)| {
                let gap = match i {
                    0 => std::time::Duration::ZERO,
                    // The controller went down with every broker: with the brokers as
                    // voters, the old leader stays down until a new controller is
                    // elected and its grace is over, so that it elects one of the
                    // followers back first.
                    _ if last_is_leader && id == leader && !settings.dedicated_controller => {
                        t.election + longer(rng, t.session)
                    }
                    _ if rng.random_bool(0.5) => shorter(rng, t.fetch_wait),
                    _ => shorter(rng, t.session),
                };
                (gap, id)
            })
            .collect();
        let s = Script::default()
            .then(
                std::time::Duration::ZERO,
                Action::CrashAll(settings.nodes.clone()),
            )
            .then(ms(rng, 100..1000), Action::RestartEach(restarts));
        (roles, s)
    }
}
