//! Planted bugs (`broker node --bug NAME`, docs/selftest.md): known ways a
//! replicated log goes wrong, planted on purpose so `watermark selftest` can show the
//! harness catches each of them. Every planted deviation in the broker reads
//! `if bugs.NAME { /* PLANTED BUG */ … }`; without `--bug` all flags are false and
//! the broker follows its rules unchanged.
//!
//! `hw-truncation` is no flag here: it is `--truncation hw`. `abort` breaks no
//! replication rule: it is test-only, a broker that crashes on its own
//! ([`Bugs::count_produce`]), so the harness's crash detection can be tested over
//! real processes.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::cli::Bug;

/// `--bug abort`: the produce request at which the node aborts.
pub const ABORT_AT_PRODUCE: u64 = 100;

/// Produce requests this process received (counted under `--bug abort` only).
static PRODUCE_REQUESTS: AtomicU64 = AtomicU64::new(0);

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
    /// The leader's HW follows the most advanced ISR follower instead of the least:
    /// a record counts as committed once any one follower has it.
    pub hw_any_follower: bool,
    /// Consumers and the register view read up to the leader's LEO, past the HW:
    /// records no follower may have yet are served as committed.
    pub read_past_hw: bool,
    /// acks=all is answered once the HW reaches the last record's offset instead of
    /// passing it: the HW covers every record but the last.
    pub ack_off_by_one: bool,
    /// acks=all is judged by the HW alone, without checking that this replica still
    /// leads in the epoch the record was written in: a deposed leader, now a follower,
    /// acknowledges a write once its follower HW passes the offset the write had in
    /// its truncated log.
    pub ack_ignores_epoch: bool,
    /// OffsetsForLeaderEpoch answers the leader's LEO instead of where the asked
    /// epoch ends, so a diverged follower keeps its suffix.
    pub epoch_end_at_leo: bool,
    /// Test-only: the process aborts (SIGABRT) at its [`ABORT_AT_PRODUCE`]-th
    /// produce request, whatever that request's outcome.
    pub abort: bool,
    /// An append that fails on disk (ENOSPC, EIO) is not taken back: its frames stay
    /// queued and reach the file with the next append, at offsets it takes again.
    pub append_undo_lost: bool,
    /// A follower settling its log with the leader (KIP-101) cuts one record past
    /// the end the leader gave for its epoch: a diverged follower keeps the first
    /// record of its unreplicated suffix.
    pub truncate_past_epoch_end: bool,
    /// The controller's clean election takes the first live replica, in the ISR or
    /// not: a follower that lags out of the ISR may lead without what was committed.
    pub elect_out_of_isr: bool,
    /// The controller elects a dead leader's successor without bumping the leader
    /// epoch: the deposed leader and the new one write in the same epoch, and no
    /// fencing or epoch truncation tells their records apart.
    pub no_epoch_bump: bool,
    /// A follower rejoins the ISR as soon as it fetches in the leader's epoch, not
    /// once it has caught up to the HW: an ISR member may lack committed records.
    pub isr_expand_early: bool,
    /// The controller completes a reassignment as soon as it starts: the replicas it
    /// removes leave AR and the ISR while the adding ones, counted in the ISR, have
    /// not caught up yet.
    pub reassign_remove_early: bool,
    /// A new active controller reloads each reassignment in progress from its adding
    /// replicas alone, as the full AR: the other replicas are dropped, and a leader
    /// among them is replaced by an adding replica that has not caught up.
    pub reassign_forget_on_failover: bool,
}

impl Bugs {
    /// The rule flags for `--bug` (none for `hw-truncation`, which is a truncation mode).
    pub fn planted(bug: Option<Bug>) -> Bugs {
        let mut b = Bugs::default();
        match bug {
            None | Some(Bug::HwTruncation) => {}
            Some(Bug::AckBeforeReplicate) => b.ack_before_replicate = true,
            Some(Bug::IsrUnchecked) => b.isr_unchecked = true,
            Some(Bug::StaleRead) => b.stale_read = true,
            Some(Bug::NoEpochFence) => b.no_epoch_fence = true,
            Some(Bug::HwAnyFollower) => b.hw_any_follower = true,
            Some(Bug::ReadPastHw) => b.read_past_hw = true,
            Some(Bug::AckOffByOne) => b.ack_off_by_one = true,
            Some(Bug::AckIgnoresEpoch) => b.ack_ignores_epoch = true,
            Some(Bug::EpochEndAtLeo) => b.epoch_end_at_leo = true,
            Some(Bug::Abort) => b.abort = true,
            Some(Bug::AppendUndoLost) => b.append_undo_lost = true,
            Some(Bug::TruncatePastEpochEnd) => b.truncate_past_epoch_end = true,
            Some(Bug::ElectOutOfIsr) => b.elect_out_of_isr = true,
            Some(Bug::NoEpochBump) => b.no_epoch_bump = true,
            Some(Bug::IsrExpandEarly) => b.isr_expand_early = true,
            Some(Bug::ReassignRemoveEarly) => b.reassign_remove_early = true,
            Some(Bug::ReassignForgetOnFailover) => b.reassign_forget_on_failover = true,
        }
        b
    }

    /// Count a produce request. PLANTED BUG (abort): under `--bug abort` the
    /// [`ABORT_AT_PRODUCE`]-th one, counted from this process's start, says so on
    /// stderr and aborts the process — deterministic in the requests it receives.
    pub fn count_produce(&self) {
        if !self.abort {
            return;
        }
        let n = PRODUCE_REQUESTS.fetch_add(1, Ordering::SeqCst) + 1;
        if n == ABORT_AT_PRODUCE {
            eprintln!(
                "PLANTED BUG (abort): aborting at produce request {n} (--bug abort, test-only)"
            );
            no_core_dump();
            std::process::abort();
        }
    }
}

/// A planted abort leaves no core file behind (in the working directory of
/// whoever started the broker).
fn no_core_dump() {
    let none = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit with a valid pointer to a local rlimit.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &none);
    }
}
