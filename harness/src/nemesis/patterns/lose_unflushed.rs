//! `lose-unflushed`: SIGKILL a node and cut its power, so that it loses what it did
//! not fsync and its storage had not written back (a power cut of its fault
//! filesystem, which writes back what stayed unsynced for half a minute as the
//! kernel does; or, with `--no-fault-fs`, brokers simulating their page cache under
//! a flush policy); one time in two the power cut tears the last write
//! (`torn-write`: a prefix of it survives).
//!
//! One time in two it opens the window of KIP-903 (and of KIP-966's unclean
//! recovery): the follower the controller elects next loses its tail, comes back
//! within a session timeout, and the leader dies before it caught up. A controller
//! that keeps a restarted replica in the ISR elects it without the records it lost.

use rand::{Rng, RngCore};

use super::{Aim, PackageSettings, Pattern, Roles, around, longer, ms, shorter};
use crate::nemesis::action::{Action, Script};
use crate::nemesis::coverage::Transition::{self, *};
use crate::proc::Proc;
use crate::system::view::PartitionView;

pub struct LoseUnflushed;

/// Cut `node`'s power, tearing its last write one time in two.
fn power_cut(node: i32, rng: &mut dyn RngCore) -> Action {
    if rng.random_bool(0.5) {
        Action::TornWrite {
            node,
            seed: rng.random(),
        }
    } else {
        Action::LoseUnflushed(node)
    }
}

impl Pattern for LoseUnflushed {
    fn name(&self) -> &'static str {
        "lose-unflushed"
    }

    fn targets(&self) -> &'static [Transition] {
        &[
            TruncateEpoch,
            TruncateRecords,
            IsrShrinkController,
            RestartedLeader,
        ]
    }

    fn base_weight(&self) -> f64 {
        1.0
    }

    fn per_round(&self) -> u32 {
        1
    }

    /// The only pattern that loses one replica's recent writes (what a restarted
    /// replica may claim, and KIP-903's window): drawn by weight among a round of
    /// a dozen, it did not play in three campaigns of a minute out of three.
    fn leads_round(&self) -> bool {
        true
    }

    fn can_run(&self, settings: &PackageSettings) -> bool {
        settings.power_cuts
    }

    fn fits(&self, settings: &PackageSettings, p: Option<&PartitionView>, _: Option<Proc>) -> bool {
        settings.power_cuts && p.is_some_and(|p| !p.followers().is_empty())
    }

    fn script(&self, aim: &Aim<'_>, rng: &mut dyn RngCore) -> (Roles, Script) {
        let mut roles = aim.roles();
        let t = aim.timeouts();
        if rng.random_bool(0.5) {
            // The follower elected next, back within a session timeout (the
            // controller may learn of its restart only from its new broker epoch),
            // and the leader dead before it refetched what it lost: killed while
            // the follower is down, which is restarted within 0.2 s after, to no
            // leader to fetch from. (Killed just after its restart instead, the
            // follower had refetched what it lost within 67–71 ms in two of the
            // three campaigns that drew that order; `kip101` runs that race.)
            let aimed = aim.next;
            roles.target = Some(aimed);
            roles.follower = Some(aimed);
            roles.variant = Some("then-kill-leader");
            let s = Script::default()
                .then(std::time::Duration::ZERO, power_cut(aimed, rng))
                .then(shorter(rng, t.session), Action::Kill(Proc::Node(aim.leader)))
                .then(ms(rng, 0..200), Action::Restart(Proc::Node(aimed)));
            // Back once the election happened (after a new controller's, when the
            // leader was the controller too).
            let down = longer(rng, t.session) + aim.takeover(Proc::Node(aim.leader));
            return (roles, s.then(down, Action::Restart(Proc::Node(aim.leader))));
        }
        let target = if rng.random_bool(0.6) {
            aim.aimed
        } else {
            aim.leader
        };
        roles.target = Some(target);
        let s = Script::default()
            .then(std::time::Duration::ZERO, power_cut(target, rng))
            .then(around(rng, t.session), Action::Restart(Proc::Node(target)));
        (roles, s)
    }
}
