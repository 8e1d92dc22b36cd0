//! Event lines (docs/broker.md, "Event lines"): one `EVENT {json}` line on stderr
//! per replication transition — an election, a role change, an ISR change, a
//! truncation, a fenced request, a `NOT_ENOUGH_REPLICAS` answer, a new controller
//! epoch, a log reopened — so whoever runs the brokers (the harness's fault coverage)
//! can tell which transitions a campaign exercised without parsing prose logs.
//!
//! The pure cores (`replica`, `controller::state`) only describe transitions in their
//! effects; the shells turn them into [`Event`]s and [`emit`] them. This module owns
//! the line's exact shape: `EVENT ` and one compact JSON object with `ts_ms` (unix
//! milliseconds), `node` (the id of the emitting process: a broker's, or a dedicated
//! controller's `--id`), `kind` and the kind's fields. The controller's events are
//! printed once, by the active controller as it carries out the effects of what the
//! quorum applied, never by every voter applying the log.

use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::protocol::{BrokerId, LeaderEpoch, TopicPartition};

/// Why an ISR changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IsrCause {
    /// The controller moved a broker it declared dead or restarted (or an election
    /// set the ISR).
    Controller,
    /// The leader found a follower not caught up for longer than the lag time.
    Lag,
    /// The leader found a replica caught up again.
    CaughtUp,
}

/// Which truncation rule the follower runs (`--truncation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TruncationRule {
    /// Leader-epoch end offsets (KIP-101/KIP-279).
    Epoch,
    /// The local high watermark (`--truncation hw`, pre-0.11 Kafka).
    Hw,
}

/// The request that was fenced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    Produce,
    Consume,
    Read,
    Fetch,
    OffsetsForLeaderEpoch,
    LeaderAndIsr,
    Heartbeat,
    AlterPartition,
    ConfirmLeadership,
}

/// A step of a partition reassignment (KIP-455).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReassignmentStep {
    /// The target replicas not in AR were added to it.
    Started,
    /// Every target replica was in the ISR: the removed ones left AR and the ISR
    /// (or the replicas were only reordered).
    Completed,
    /// Cancelled: back to the original replicas, the adding ones removed.
    Cancelled,
}

/// Why a request was fenced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FenceReason {
    /// The request's leader epoch is older than the receiver's.
    StaleLeaderEpoch,
    /// The request's leader epoch is newer than the receiver's (Kafka's
    /// UNKNOWN_LEADER_EPOCH): the receiver has not heard of it yet.
    UnknownLeaderEpoch,
    /// The request's partition epoch is older than the controller's.
    StalePartitionEpoch,
    /// A message from an older controller epoch.
    StaleControllerEpoch,
    /// A message meant for (or from) an earlier process of a broker.
    StaleBrokerEpoch,
    /// The receiver (or the sender, for the controller) does not lead the partition.
    NotLeader,
}

impl FenceReason {
    /// The reason a request naming leader epoch `asked` fails against `current`.
    pub fn leader_epoch(asked: LeaderEpoch, current: LeaderEpoch) -> FenceReason {
        if asked < current {
            FenceReason::StaleLeaderEpoch
        } else {
            FenceReason::UnknownLeaderEpoch
        }
    }
}

/// One replication transition (docs/broker.md lists each kind and its fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// Controller: a partition has a new leader.
    LeaderElected {
        topic: String,
        partition: u32,
        leader: BrokerId,
        leader_epoch: LeaderEpoch,
        /// Elected from the ISR (false: an unclean election).
        clean: bool,
        /// The new leader registered or came back less than a session timeout ago.
        recently_restarted: bool,
        /// The leader before (None: the partition was offline).
        previous_leader: Option<BrokerId>,
    },
    /// Node: this replica leads the partition from this leader epoch on.
    BecomeLeader {
        topic: String,
        partition: u32,
        leader_epoch: LeaderEpoch,
    },
    /// Node: this replica follows the partition's leader from this leader epoch on.
    BecomeFollower {
        topic: String,
        partition: u32,
        leader_epoch: LeaderEpoch,
    },
    /// The ISR lost `replicas`.
    IsrShrink {
        topic: String,
        partition: u32,
        replicas: Vec<BrokerId>,
        isr: Vec<BrokerId>,
        cause: IsrCause,
    },
    /// The ISR gained `replicas`.
    IsrExpand {
        topic: String,
        partition: u32,
        replicas: Vec<BrokerId>,
        isr: Vec<BrokerId>,
        cause: IsrCause,
    },
    /// Node: a follower cut its log at `to`, removing `records` records.
    Truncate {
        topic: String,
        partition: u32,
        to: u64,
        records: u64,
        rule: TruncationRule,
    },
    /// A request refused for a stale or wrong epoch, or for not leading.
    Fenced {
        api: Api,
        reason: FenceReason,
        #[serde(skip_serializing_if = "Option::is_none")]
        topic: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        partition: Option<u32>,
    },
    /// Node: an acks=all produce answered `NOT_ENOUGH_REPLICAS` (before appending) or,
    /// with `after_append`, `NOT_ENOUGH_REPLICAS_AFTER_APPEND`.
    NotEnoughReplicas {
        topic: String,
        partition: u32,
        isr_size: usize,
        min_insync: u32,
        after_append: bool,
    },
    /// Controller: a controller started, with this controller epoch.
    ControllerEpoch { epoch: i32 },
    /// Node: a partition's existing log was opened again (after a restart).
    LogReopened {
        topic: String,
        partition: u32,
        leo: u64,
        hw: u64,
    },
    /// Node: a write to a partition's storage failed, the first of a streak (nothing
    /// of the partition is acknowledged until a write works again).
    StorageFailure {
        topic: String,
        partition: u32,
        what: String,
    },
    /// Controller: a reassignment of the partition took a step; `replicas` is AR
    /// after it, `adding` and `removing` the reassignment's.
    Reassignment {
        topic: String,
        partition: u32,
        step: ReassignmentStep,
        replicas: Vec<BrokerId>,
        adding: Vec<BrokerId>,
        removing: Vec<BrokerId>,
    },
    /// Node: the controller no longer names this broker among the partition's
    /// replicas (a reassignment removed it): its replica stopped and its directory
    /// was deleted (StopReplica), at this log end offset.
    ReplicaDeleted {
        topic: String,
        partition: u32,
        leader_epoch: LeaderEpoch,
        leo: u64,
    },
}

impl Event {
    /// A fenced request about partition `tp`.
    pub fn fenced(api: Api, reason: FenceReason, tp: &TopicPartition) -> Event {
        Event::Fenced {
            api,
            reason,
            topic: Some(tp.topic.clone()),
            partition: Some(tp.partition),
        }
    }

    /// The ISR changes from `old` to `new`, for `cause` (a shrink, an expansion, both
    /// or neither), in that order.
    pub fn isr_changes(
        tp: &TopicPartition,
        old: &[BrokerId],
        new: &[BrokerId],
        shrink_cause: IsrCause,
        expand_cause: IsrCause,
    ) -> Vec<Event> {
        let removed: Vec<BrokerId> = old.iter().copied().filter(|b| !new.contains(b)).collect();
        let added: Vec<BrokerId> = new.iter().copied().filter(|b| !old.contains(b)).collect();
        let mut out = Vec::new();
        if !removed.is_empty() {
            out.push(Event::IsrShrink {
                topic: tp.topic.clone(),
                partition: tp.partition,
                replicas: removed,
                isr: new.to_vec(),
                cause: shrink_cause,
            });
        }
        if !added.is_empty() {
            out.push(Event::IsrExpand {
                topic: tp.topic.clone(),
                partition: tp.partition,
                replicas: added,
                isr: new.to_vec(),
                cause: expand_cause,
            });
        }
        out
    }
}

/// The line's JSON: the common fields first, then the event's.
#[derive(Serialize)]
struct Line<'a> {
    ts_ms: u64,
    node: BrokerId,
    #[serde(flatten)]
    event: &'a Event,
}

/// The event line (without its newline) of `event` on `node` at `ts_ms`.
pub fn line(node: BrokerId, ts_ms: u64, event: &Event) -> String {
    let json = serde_json::to_string(&Line { ts_ms, node, event })
        .expect("an event is plain data and always serializes");
    format!("EVENT {json}")
}

/// Write `event`'s line for `node` to stderr, now, in one write (lines of
/// concurrent tasks never interleave).
pub fn emit(node: BrokerId, event: &Event) {
    let ts_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut text = line(node, ts_ms, event);
    text.push('\n');
    // Nothing to do if stderr is gone.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp() -> TopicPartition {
        TopicPartition {
            topic: "t".into(),
            partition: 0,
        }
    }

    #[test]
    fn a_line_is_event_and_one_compact_json_object_common_fields_first() {
        let e = Event::Truncate {
            topic: "t".into(),
            partition: 0,
            to: 118,
            records: 3,
            rule: TruncationRule::Epoch,
        };
        assert_eq!(
            line(2, 1764561234567, &e),
            r#"EVENT {"ts_ms":1764561234567,"node":2,"kind":"truncate","topic":"t","partition":0,"to":118,"records":3,"rule":"epoch"}"#
        );
    }

    #[test]
    fn every_kind_is_spelled_as_documented() {
        let cases = [
            (
                Event::LeaderElected {
                    topic: "t".into(),
                    partition: 1,
                    leader: 3,
                    leader_epoch: 4,
                    clean: false,
                    recently_restarted: true,
                    previous_leader: None,
                },
                r#"{"ts_ms":5,"node":-1,"kind":"leader_elected","topic":"t","partition":1,"leader":3,"leader_epoch":4,"clean":false,"recently_restarted":true,"previous_leader":null}"#,
            ),
            (
                Event::BecomeFollower {
                    topic: "t".into(),
                    partition: 0,
                    leader_epoch: 2,
                },
                r#"{"ts_ms":5,"node":-1,"kind":"become_follower","topic":"t","partition":0,"leader_epoch":2}"#,
            ),
            (
                Event::fenced(Api::OffsetsForLeaderEpoch, FenceReason::NotLeader, &tp()),
                r#"{"ts_ms":5,"node":-1,"kind":"fenced","api":"offsets_for_leader_epoch","reason":"not_leader","topic":"t","partition":0}"#,
            ),
            (
                Event::Fenced {
                    api: Api::LeaderAndIsr,
                    reason: FenceReason::StaleControllerEpoch,
                    topic: None,
                    partition: None,
                },
                r#"{"ts_ms":5,"node":-1,"kind":"fenced","api":"leader_and_isr","reason":"stale_controller_epoch"}"#,
            ),
            (
                Event::NotEnoughReplicas {
                    topic: "t".into(),
                    partition: 0,
                    isr_size: 1,
                    min_insync: 2,
                    after_append: false,
                },
                r#"{"ts_ms":5,"node":-1,"kind":"not_enough_replicas","topic":"t","partition":0,"isr_size":1,"min_insync":2,"after_append":false}"#,
            ),
            (
                Event::ControllerEpoch { epoch: 7 },
                r#"{"ts_ms":5,"node":-1,"kind":"controller_epoch","epoch":7}"#,
            ),
            (
                Event::LogReopened {
                    topic: "t".into(),
                    partition: 0,
                    leo: 9,
                    hw: 8,
                },
                r#"{"ts_ms":5,"node":-1,"kind":"log_reopened","topic":"t","partition":0,"leo":9,"hw":8}"#,
            ),
            (
                Event::StorageFailure {
                    topic: "t".into(),
                    partition: 0,
                    what: "append: No space left on device (os error 28)".into(),
                },
                r#"{"ts_ms":5,"node":-1,"kind":"storage_failure","topic":"t","partition":0,"what":"append: No space left on device (os error 28)"}"#,
            ),
        ];
        for (event, json) in cases {
            assert_eq!(line(-1, 5, &event), format!("EVENT {json}"));
        }
    }

    #[test]
    fn an_isr_change_is_a_shrink_an_expansion_or_both() {
        let shrink = Event::isr_changes(
            &tp(),
            &[1, 2, 3],
            &[1, 3],
            IsrCause::Lag,
            IsrCause::CaughtUp,
        );
        assert_eq!(
            shrink,
            [Event::IsrShrink {
                topic: "t".into(),
                partition: 0,
                replicas: vec![2],
                isr: vec![1, 3],
                cause: IsrCause::Lag,
            }]
        );
        let both = Event::isr_changes(
            &tp(),
            &[1, 2],
            &[3],
            IsrCause::Controller,
            IsrCause::Controller,
        );
        assert!(
            matches!(&both[..], [Event::IsrShrink { replicas: r, .. }, Event::IsrExpand { replicas: a, .. }] if r == &[1, 2] && a == &[3])
        );
        assert!(
            Event::isr_changes(&tp(), &[1, 2], &[2, 1], IsrCause::Lag, IsrCause::CaughtUp)
                .is_empty()
        );
        let line = line(1, 0, &shrink[0]);
        assert!(
            line.contains(r#""kind":"isr_shrink""#) && line.contains(r#""cause":"lag""#),
            "{line}"
        );
    }
}
