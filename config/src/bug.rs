//! The planted bugs (`--bug NAME`): known ways a replicated log goes wrong, planted on
//! purpose so that `watermark selftest` can show the harness catches each. The list
//! is declared here once; the broker implements each deviation behind a
//! `PLANTED BUG` line (its `bugs` module), and the harness names them on its command
//! line, in run.json and in the self-test's tables. The rule each one breaks is in
//! docs/broker.md ("Planted bugs").

use std::fmt;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// A bug the brokers can plant, so that the harness can be seen to catch it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, ValueEnum, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Bug {
    /// Truncate a follower to its high watermark, as `--truncation hw` does.
    HwTruncation,
    /// Answer acks=all once the leader appended, before the ISR has the record.
    AckBeforeReplicate,
    /// Let the leader shrink its ISR on its own, without the controller.
    IsrUnchecked,
    /// Answer linearizable reads without the leadership check.
    StaleRead,
    /// Keep the records of epochs the new leader never wrote (no epoch fencing).
    NoEpochFence,
    /// Advance the high watermark once any one ISR follower has a record, not all.
    HwAnyFollower,
    /// Serve consumers and register reads past the high watermark.
    ReadPastHw,
    /// Answer acks=all once the high watermark reaches the record's offset (one early).
    AckOffByOne,
    /// Judge acks=all by the high watermark alone, even after losing leadership.
    AckIgnoresEpoch,
    /// Answer OffsetsForLeaderEpoch with the leader's LEO, not the epoch's end.
    EpochEndAtLeo,
    /// Leave a failed append (ENOSPC, EIO) queued: it reaches the disk with the next
    /// append at repeated offsets, and recovery keeps it over an acknowledged record.
    AppendUndoLost,
    /// Truncate a follower one record past the end its leader gave for the epoch.
    TruncatePastEpochEnd,
    /// Let the controller's clean election pick a live replica outside the ISR.
    ElectOutOfIsr,
    /// Elect a dead leader's successor without bumping the leader epoch.
    NoEpochBump,
    /// Let a follower rejoin the ISR before it has caught up to the high watermark.
    IsrExpandEarly,
    /// Test-only: each node aborts (SIGABRT) at its 100th produce request — a
    /// crashed broker, for the harness's crash detection.
    Abort,
    /// Complete a reassignment as soon as it starts: the removed replicas leave
    /// before the adding ones have caught up into the ISR.
    ReassignRemoveEarly,
    /// At a controller failover, reload a reassignment in progress from its adding
    /// replicas alone, as the whole replica set.
    ReassignForgetOnFailover,
    /// Count records as flushed after writing them, without the fsync the flush
    /// policy promises: they sit in the page cache, lost to a power cut.
    FlushSkipsFsync,
}

/// Where a bug is planted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// In the replicas of every broker (`broker node`).
    Node,
    /// In the controller's voters: the brokers, or a dedicated `broker controller`.
    Controller,
    /// A truncation rule: the same as `--truncation hw`.
    Truncation,
    /// No rule: a broker that crashes on its own, for the harness's own tests.
    Test,
}

impl Bug {
    /// Where the bug is planted.
    pub fn side(self) -> Side {
        match self {
            Bug::HwTruncation => Side::Truncation,
            Bug::ElectOutOfIsr
            | Bug::NoEpochBump
            | Bug::ReassignRemoveEarly
            | Bug::ReassignForgetOnFailover => Side::Controller,
            Bug::Abort => Side::Test,
            _ => Side::Node,
        }
    }
}

impl Bug {
    /// A flush policy the bug needs to show, when the campaign sets none: a bug in
    /// the flush path is never reached by brokers that never flush.
    pub fn flush_messages(self) -> Option<u64> {
        match self {
            Bug::FlushSkipsFsync => Some(1),
            _ => None,
        }
    }
}

impl fmt::Display for Bug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_possible_value() {
            Some(v) => f.write_str(v.get_name()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_and_serde_spell_every_bug_alike() {
        for bug in Bug::value_variants() {
            let name = bug.to_string();
            assert_eq!(serde_json::to_value(bug).unwrap(), name.as_str());
            assert_eq!(Bug::from_str(&name, false), Ok(*bug));
        }
        assert_eq!(Bug::AckOffByOne.to_string(), "ack-off-by-one");
        assert_eq!(Bug::ElectOutOfIsr.side(), Side::Controller);
    }
}
