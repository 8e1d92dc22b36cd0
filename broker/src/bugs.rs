//! Planted bugs (`broker node --bug NAME`, docs/selftest.md): known ways a
//! replicated log goes wrong, planted on purpose so `watermark selftest` can show the
//! harness catches each of them. Every planted deviation in the broker reads
//! `if bugs.NAME { /* PLANTED BUG */ … }`; without `--bug` all flags are false and
//! the broker follows its rules unchanged.
//!
//! `hw-truncation` is no flag here: it is `--truncation hw`.

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
    /// An append that fails on disk (ENOSPC, EIO) is not taken back: its frames stay
    /// queued and reach the file with the next append, at offsets it takes again.
    pub append_undo_lost: bool,
}
