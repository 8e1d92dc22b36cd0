//! Planted bugs (`broker node --bug NAME`, SPEC §7): known ways a replicated log goes
//! wrong, planted on purpose so `watermark selftest` can show the harness catches
//! each of them. Every planted deviation in the broker reads
//! `if bugs.NAME { /* PLANTED BUG */ … }`; without `--bug` all flags are false and
//! the broker follows its rules unchanged.
//!
//! `hw-truncation` is no flag here: it is `--truncation hw` (see [`crate::cli`]).

use crate::cli::Bug;

/// Which rule, if any, this broker breaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bugs {
    /// acks=all is answered as soon as the leader appended, not once the ISR has it.
    pub ack_before_replicate: bool,
    /// The leader changes its ISR on its own instead of asking the controller, so a
    /// leader cut off from everyone shrinks the ISR to itself and keeps acknowledging.
    pub isr_unchecked: bool,
    /// Linearizable reads skip the leadership check with the controller.
    pub stale_read: bool,
    /// A replica that becomes follower keeps records of epochs its new leader never
    /// wrote: no fencing of the log by the new leader epoch (no truncation at all).
    pub no_epoch_fence: bool,
}

impl Bugs {
    /// The flags for `--bug` (none for `hw-truncation`, which is a truncation mode).
    pub fn from_cli(bug: Option<Bug>) -> Bugs {
        let mut b = Bugs::default();
        match bug {
            None | Some(Bug::HwTruncation) => {}
            Some(Bug::AckBeforeReplicate) => b.ack_before_replicate = true,
            Some(Bug::IsrUnchecked) => b.isr_unchecked = true,
            Some(Bug::StaleRead) => b.stale_read = true,
            Some(Bug::NoEpochFence) => b.no_epoch_fence = true,
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bug_sets_exactly_its_flag() {
        assert_eq!(Bugs::from_cli(None), Bugs::default());
        assert_eq!(Bugs::from_cli(Some(Bug::HwTruncation)), Bugs::default());
        let all = [
            Bug::AckBeforeReplicate,
            Bug::IsrUnchecked,
            Bug::StaleRead,
            Bug::NoEpochFence,
        ];
        for bug in all {
            let b = Bugs::from_cli(Some(bug));
            let set = [
                b.ack_before_replicate,
                b.isr_unchecked,
                b.stale_read,
                b.no_epoch_fence,
            ];
            assert_eq!(set.iter().filter(|x| **x).count(), 1, "{bug:?}: {b:?}");
        }
    }
}
