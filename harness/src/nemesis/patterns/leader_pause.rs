//! `leader-pause`: SIGSTOP a partition's leader; it wakes up after about a session
//! timeout, perhaps no longer the leader.

use rand::RngCore;

use super::{Aim, Pattern, Roles};
use crate::nemesis::action::{Action, Script};
use crate::nemesis::coverage::Transition::{self, *};
use crate::proc::Proc;

pub struct LeaderPause;

impl Pattern for LeaderPause {
    fn name(&self) -> &'static str {
        "leader-pause"
    }

    fn targets(&self) -> &'static [Transition] {
        &[
            LeaderElection,
            Fenced,
            DeposedRead,
            TruncateEpoch,
            TruncateRecords,
        ]
    }

    /// A pause mostly freezes a replica rather than leaving one serving or
    /// electable: less than the patterns that open windows of their own.
    fn base_weight(&self) -> f64 {
        0.75
    }

    /// A plain pattern: it joins a round only when drawn.
    fn per_round(&self) -> u32 {
        0
    }

    fn moves_leader(&self) -> bool {
        true
    }

    fn script(&self, aim: &Aim<'_>, rng: &mut dyn RngCore) -> (Roles, Script) {
        let leader = Proc::Node(aim.leader);
        let s = Script::default()
            .then(std::time::Duration::ZERO, Action::Pause(leader))
            .then(aim.hold(rng), Action::Resume(leader));
        (aim.roles(), s)
    }
}
