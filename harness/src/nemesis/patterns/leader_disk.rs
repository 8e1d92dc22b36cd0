//! `leader-disk`: make the leader's disk full or failing for moments, each shorter
//! than the storage failure timeout (sometimes one longer); then kill it and restart
//! it — the only pattern that makes appends fail.

use rand::{Rng, RngCore};

use super::{Aim, Pattern, Roles, just_past, ms, shorter};
use crate::nemesis::action::{Action, Script};
use crate::nemesis::coverage::Transition::{self, *};
use crate::proc::Proc;
use crate::system::DiskMode;

pub struct LeaderDisk;

impl Pattern for LeaderDisk {
    fn name(&self) -> &'static str {
        "leader-disk"
    }

    fn targets(&self) -> &'static [Transition] {
        &[
            StorageFailure,
            IsrShrinkController,
            LeaderElection,
            TruncateEpoch,
            TruncateRecords,
        ]
    }

    fn base_weight(&self) -> f64 {
        3.0
    }

    fn per_round(&self) -> u32 {
        1
    }

    fn script(&self, aim: &Aim<'_>, rng: &mut dyn RngCore) -> (Roles, Script) {
        let t = aim.timeouts();
        let mode = if rng.random_bool(0.5) {
            DiskMode::Enospc
        } else {
            DiskMode::Eio
        };
        let mut roles = aim.roles();
        roles.mode = Some(mode);
        // A disk that fails and recovers two or three times, each over before the
        // storage failure timeout: the leader keeps leading and appends again on the
        // disk that failed it. Each failure stalls the clients (a follower's failed
        // fetches hold back the HW of every partition it follows), and each recovery
        // lets them send again, some of it to this leader at the next failure. Three
        // times in ten a last failure then lasts past the timeout: the leader leaves
        // every ISR and its leadership moves.
        let bound = |d: std::time::Duration| (d * 2).as_millis() as u64;
        let node = aim.leader;
        let mut s = Script::default();
        for i in 0..rng.random_range(2..=3) {
            let within = t.storage.mul_f64(rng.random_range(0.2..0.5));
            let for_ms = bound(within);
            let gap = if i == 0 {
                std::time::Duration::ZERO
            } else {
                ms(rng, 150..500)
            };
            s = s
                .then(gap, Action::Disk { node, mode, for_ms })
                .then(within, Action::DiskOk { node, mode, for_ms });
        }
        if rng.random_bool(0.3) {
            roles.variant = Some("within-then-past-storage-timeout");
            let past = just_past(rng, t.storage);
            let for_ms = bound(past);
            s = s
                .then(ms(rng, 200..1000), Action::Disk { node, mode, for_ms })
                .then(past, Action::DiskOk { node, mode, for_ms });
        } else {
            roles.variant = Some("within-storage-timeout");
        }
        let s = s
            .then(ms(rng, 300..2000), Action::Kill(Proc::Node(node)))
            // Back soon: the restart's recovery is what the pattern is after.
            .then(shorter(rng, t.session), Action::Restart(Proc::Node(node)));
        (roles, s)
    }
}
