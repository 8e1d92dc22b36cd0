//! The broker's HTTP answers as the client reads them (docs/api.md), and the rule
//! that turns an error code into "certainly did not happen" or "unknown".
//!
//! The types are lenient on purpose: a client reads only the fields it needs, so a
//! broker that adds fields does not break it.

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// The most records one produce request may carry and one consume may ask for
/// (docs/api.md, "A request carries 1 to 10,000 records"): the workloads send and
/// ask for exactly this many now and then, so that a limit off by one refuses a
/// request the contract allows — and, more rarely, one more, which the broker must
/// refuse.
pub const MAX_RECORDS: u32 = 10_000;

/// `GET /v1/metadata` (the controller's view, or a node's).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Metadata {
    /// The active controller's broker id as the answering broker knows it (-1 or
    /// absent: none known).
    #[serde(default)]
    pub controller_id: Option<i32>,
    #[serde(default)]
    pub controller_epoch: i64,
    #[serde(default)]
    pub brokers: Vec<BrokerInfo>,
    #[serde(default)]
    pub topics: Vec<TopicMetadata>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct BrokerInfo {
    pub id: i32,
    #[serde(default)]
    pub alive: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TopicMetadata {
    pub name: String,
    #[serde(default)]
    pub partitions: Vec<PartitionMetadata>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PartitionMetadata {
    pub partition: u32,
    /// `-1` when no eligible replica is alive.
    pub leader: i32,
    #[serde(default)]
    pub leader_epoch: i64,
    #[serde(default)]
    pub isr: Vec<i32>,
    #[serde(default)]
    pub replicas: Vec<i32>,
    /// A reassignment in progress: the replicas it adds, and those it removes.
    #[serde(default)]
    pub adding: Vec<i32>,
    #[serde(default)]
    pub removing: Vec<i32>,
}

impl Metadata {
    pub fn partition(&self, topic: &str, partition: u32) -> Option<&PartitionMetadata> {
        self.topics
            .iter()
            .find(|t| t.name == topic)?
            .partitions
            .iter()
            .find(|p| p.partition == partition)
    }

    /// How many partitions `topic` has (0: none known).
    pub fn partition_count(&self, topic: &str) -> u32 {
        self.topics
            .iter()
            .find(|t| t.name == topic)
            .map_or(0, |t| t.partitions.len() as u32)
    }

    /// Every (topic, partition), in metadata order.
    pub fn partitions(&self) -> impl Iterator<Item = (&str, &PartitionMetadata)> {
        self.topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(move |p| (t.name.as_str(), p)))
    }
}

/// `200` answer of a produce.
#[derive(Debug, Clone, Deserialize)]
pub struct Produced {
    /// `null` with `acks=0` (the broker answered before appending).
    pub base_offset: Option<u64>,
    /// The epoch of the leader that appended it (absent with `acks=0`).
    #[serde(default)]
    pub leader_epoch: Option<i64>,
}

/// `200` answer of a fetch.
#[derive(Debug, Clone, Deserialize)]
pub struct Fetched {
    pub high_watermark: u64,
    #[serde(default)]
    pub records: Vec<FetchedRecord>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FetchedRecord {
    pub offset: u64,
    #[serde(default, deserialize_with = "exact")]
    pub value: Value,
}

/// A record value read exactly: an integer of any size stays that integer (held as
/// the checker holds it, [`checker::values`]), where serde_json would round one
/// beyond 64 bits to a float.
fn exact<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    let raw = Box::<RawValue>::deserialize(d)?;
    checker::format::read_json(raw.get()).map_err(serde::de::Error::custom)
}

/// `200` answer of a register-view read (`value` is null for a key never written;
/// the offset it was written at is not needed).
#[derive(Debug, Clone, Deserialize)]
pub struct KeyRead {
    #[serde(default, deserialize_with = "exact")]
    pub value: Value,
}

/// An error body: `{"error": CODE, "message": ..., extra fields}`.
#[derive(Debug, Clone, Deserialize)]
pub struct ErrorBody {
    pub error: String,
    #[serde(default)]
    pub message: String,
    /// `NOT_LEADER`: the leader the node knows of (`-1`: none).
    #[serde(default)]
    pub leader: Option<i32>,
    /// `OFFSET_OUT_OF_RANGE`: the partition's high watermark.
    #[serde(default)]
    pub high_watermark: Option<u64>,
    /// `FENCED_LEADER_EPOCH`: the current leader epoch; an idempotent producer's
    /// refusal: the epoch the refusing leader leads.
    #[serde(default)]
    pub leader_epoch: Option<i64>,
}

/// What an error code lets a client conclude about a write (docs/api.md's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Certainty {
    /// The request certainly had no effect.
    Definite,
    /// It may or may not have taken effect.
    Unknown,
}

/// Classify an error code (an idempotent producer's refusals append nothing). Only
/// `NOT_ENOUGH_REPLICAS_AFTER_APPEND` and
/// `REQUEST_TIMED_OUT` leave the outcome unknown; a code this client does not know
/// is treated as unknown too, since nothing says the write did not happen.
pub fn certainty(code: &str) -> Certainty {
    match code {
        "INVALID_REQUEST"
        | "UNKNOWN_TOPIC_OR_PARTITION"
        | "TOPIC_ALREADY_EXISTS"
        | "PRECONDITION_FAILED"
        | "PAYLOAD_TOO_LARGE"
        | "OFFSET_OUT_OF_RANGE"
        | "NOT_LEADER"
        | "NOT_CONTROLLER"
        | "FENCED_LEADER_EPOCH"
        | "NOT_ENOUGH_REPLICAS"
        | "OUT_OF_ORDER_SEQUENCE_NUMBER"
        | "INVALID_PRODUCER_EPOCH" => Certainty::Definite,
        _ => Certainty::Unknown,
    }
}

/// Whether a definite failure is worth another attempt elsewhere: the request
/// reached a node that does not (or no longer) lead the partition.
pub fn retriable(code: &str) -> bool {
    matches!(
        code,
        "NOT_LEADER" | "FENCED_LEADER_EPOCH" | "UNKNOWN_TOPIC_OR_PARTITION" | "NOT_CONTROLLER"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_two_codes_leave_a_write_unknown() {
        for code in [
            "INVALID_REQUEST",
            "NOT_LEADER",
            "FENCED_LEADER_EPOCH",
            "NOT_ENOUGH_REPLICAS",
            "OFFSET_OUT_OF_RANGE",
            "PRECONDITION_FAILED",
        ] {
            assert_eq!(certainty(code), Certainty::Definite, "{code}");
        }
        for code in [
            "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
            "REQUEST_TIMED_OUT",
            "SOMETHING_NEW",
        ] {
            assert_eq!(certainty(code), Certainty::Unknown, "{code}");
        }
    }

    #[test]
    fn metadata_parses_the_documented_shape() {
        let m: Metadata = serde_json::from_str(
            r#"{"controller_epoch":4,"brokers":[{"id":1,"alive":true}],
                "topics":[{"name":"queue","min_insync_replicas":2,"partitions":[
                  {"partition":0,"leader":1,"leader_epoch":3,"partition_epoch":7,
                   "isr":[1,3],"replicas":[1,2,3]}]}]}"#,
        )
        .unwrap();
        let p = m.partition("queue", 0).unwrap();
        assert_eq!((p.leader, p.leader_epoch), (1, 3));
        assert!(m.partition("queue", 1).is_none());
    }
}
