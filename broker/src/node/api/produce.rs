//! Producing: acks 0/1/all, the min.insync check before append, conditional writes
//! (`if_value`) judged under the partition lock, and the acks=all wait in purgatory.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;
use tokio::time::Instant;

use super::{
    ACK_TIMEOUT, ApiResult, MAX_RECORDS, Shared, body_bytes, parse_partition, path, query, refused,
};
use crate::error::{ApiError, Code};
use crate::events::{Api, Event};
use crate::kv::partition_for_key;
use crate::log::ProducerStamp;
use crate::node::partitions::{NodeReplica, Partition, ReplicaManager};
use crate::node::purgatory::Waits;
use crate::replica::{AckStatus, Appended, Effects, ReplicaError, Role};
use crate::value::RecordValue;

/// A produce body, checked field by field for clear errors.
struct ProduceBody {
    entries: Vec<(Option<String>, RecordValue)>,
    /// `Some(x)` when `if_value` is present (x may be null).
    if_value: Option<RecordValue>,
    /// An idempotent producer's id, epoch and sequences (`producer`: the first
    /// record's; the batch's last follows from its length).
    producer: Option<ProducerStamp>,
}

/// A JSON object's fields, undecoded (None: not an object).
fn object(raw: &RawValue) -> Option<BTreeMap<String, &RawValue>> {
    raw.get()
        .starts_with('{')
        .then(|| serde_json::from_str(raw.get()).ok())
        .flatten()
}

/// Values are read as text and kept exactly ([`RecordValue`]): a number of any size
/// is stored digit for digit.
fn parse_produce(bytes: &[u8]) -> Result<ProduceBody, ApiError> {
    let not_json =
        |e: &dyn std::fmt::Display| ApiError::invalid(format!("request body is not JSON: {e}"));
    let text = std::str::from_utf8(bytes).map_err(|e| not_json(&e))?;
    let raw: &RawValue = serde_json::from_str(text).map_err(|e| not_json(&e))?;
    let Some(mut obj) = object(raw) else {
        return Err(ApiError::invalid(
            "request body must be an object: {\"records\": [{\"key\": k?, \"value\": v}]}",
        ));
    };
    let records = obj
        .remove("records")
        .ok_or_else(|| ApiError::invalid("request body has no `records`"))?;
    let if_value = obj.remove("if_value");
    let producer = obj.remove("producer");
    if let Some(k) = obj.keys().next() {
        return Err(ApiError::invalid(format!(
            "unknown field `{k}` in the request body (expected `records`, `if_value`, `producer`)"
        )));
    }
    let records: Vec<&RawValue> = match records.get().starts_with('[') {
        true => serde_json::from_str(records.get()).map_err(|e| not_json(&e))?,
        false => return Err(ApiError::invalid("`records` must be an array")),
    };
    if records.is_empty() || records.len() > MAX_RECORDS {
        return Err(ApiError::invalid(format!(
            "`records` must hold 1 to {MAX_RECORDS} records, got {}",
            records.len()
        )));
    }
    let mut entries = Vec::with_capacity(records.len());
    for (i, r) in records.into_iter().enumerate() {
        let Some(mut r) = object(r) else {
            return Err(ApiError::invalid(format!("records[{i}] must be an object")));
        };
        let value = r
            .remove("value")
            .ok_or_else(|| ApiError::invalid(format!("records[{i}] has no `value`")))?;
        let value = RecordValue::from_raw(value).map_err(|e| not_json(&e))?;
        let key = match r.remove("key") {
            None => None,
            Some(k) => serde_json::from_str::<Option<String>>(k.get()).map_err(|_| {
                ApiError::invalid(format!(
                    "records[{i}].key must be a string or null, got {}",
                    k.get()
                ))
            })?,
        };
        if let Some(k) = r.keys().next() {
            return Err(ApiError::invalid(format!(
                "unknown field `{k}` in records[{i}] (expected `key`, `value`)"
            )));
        }
        entries.push((key, value));
    }
    let if_value = if_value
        .map(RecordValue::from_raw)
        .transpose()
        .map_err(|e| not_json(&e))?;
    if if_value.is_some() && (entries.len() != 1 || entries[0].0.is_none()) {
        return Err(ApiError::invalid(
            "`if_value` needs exactly one record, with a key",
        ));
    }
    let producer = producer
        .map(|p| parse_producer(p, entries.len()))
        .transpose()?;
    if if_value.is_some() && producer.is_some() {
        return Err(ApiError::invalid(
            "`if_value` and `producer` cannot be combined",
        ));
    }
    Ok(ProduceBody {
        entries,
        if_value,
        producer,
    })
}

/// The `producer` field as sent: the first record's sequence.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProducerField {
    id: u64,
    epoch: u32,
    sequence: u32,
}

/// `producer`: `{"id": u64, "epoch": u32, "sequence": u32}` (the first record's) of a
/// batch of `records` records, whose last sequence must fit in a u32.
fn parse_producer(v: &RawValue, records: usize) -> Result<ProducerStamp, ApiError> {
    let p: ProducerField = serde_json::from_str(v.get()).map_err(|e| {
        ApiError::invalid(format!(
            "`producer` must be {{\"id\": n, \"epoch\": n, \"sequence\": n}}: {e}"
        ))
    })?;
    ProducerStamp::batch(p.id, p.epoch, p.sequence, records).ok_or_else(|| {
        ApiError::invalid(format!(
            "`producer.sequence` {} with {records} records runs past the last sequence {}",
            p.sequence,
            u32::MAX
        ))
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Acks {
    None,
    Leader,
    All,
}

pub(super) async fn produce(
    State(node): Shared,
    p: Result<Path<(String, String)>, PathRejection>,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    node.ctx().config.bugs.count_produce();
    let (topic, partition) = path(p)?;
    let partition = parse_partition(&partition)?;
    let q = query(q)?;
    let acks = parse_acks(&q)?;
    let body = parse_produce(&body_bytes(body)?)?;
    let part = node.require(&topic, partition)?;
    if body.if_value.is_some() {
        check_key_partition(&node, &topic, partition, &body.entries).await?;
    }
    if acks == Acks::None {
        let node = node.clone();
        tokio::spawn(async move {
            // acks=0: nobody waits for the outcome (the append's effects are carried
            // out all the same).
            let _ = append(&node, &part, body, false);
        });
        return Ok(Json(json!({"base_offset": null})).into_response());
    }
    let appended = append(&node, &part, body, acks == Acks::All)?;
    if acks == Acks::All {
        await_isr(&node, &part, &appended).await?;
    }
    Ok(Json(json!({
        "base_offset": appended.base_offset,
        "leader_epoch": appended.leader_epoch,
    }))
    .into_response())
}

/// `acks` of a produce request: all (the default, or -1), 1 or 0.
fn parse_acks(q: &HashMap<String, String>) -> Result<Acks, ApiError> {
    Ok(match q.get("acks").map(String::as_str) {
        None | Some("all") | Some("-1") => Acks::All,
        Some("1") => Acks::Leader,
        Some("0") => Acks::None,
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "`acks` must be 0, 1 or all, got `{other}`"
            )));
        }
    })
}

/// An `acks=all` produce's wait in the purgatory: until the ISR holds the append
/// (an error when storage fails, leadership is lost, the ISR shrank below
/// min.insync.replicas, or time runs out).
async fn await_isr(
    node: &ReplicaManager,
    part: &Partition,
    appended: &Appended,
) -> Result<(), ApiError> {
    let (topic, partition) = (&part.tp.topic, part.tp.partition);
    let deadline = Instant::now() + ACK_TIMEOUT;
    let status = part
        .purgatory
        .wait_until(deadline, Waits::State, || {
            if part.log_dir.failing().is_some() {
                // Its storage fails: no acknowledgement while it lasts.
                return Some(AckStatus::StorageFailing);
            }
            match part
                .read()
                .ack_status(appended.end_offset, appended.leader_epoch)
            {
                AckStatus::Pending => None,
                other => Some(other),
            }
        })
        .await;
    let name = format!("{topic}-{partition}");
    match status {
        Some(AckStatus::StorageFailing) => Err(storage_failing(part, appended.base_offset)),
        Some(AckStatus::Committed) => Ok(()),
        Some(AckStatus::CommittedBelowMinIsr) => {
            let (isr, min_insync) = {
                let r = part.read();
                let min = r.state().map_or(0, |s| s.min_insync_replicas);
                (r.isr().to_vec(), min)
            };
            node.emit(&Event::NotEnoughReplicas {
                topic: part.tp.topic.clone(),
                partition: part.tp.partition,
                isr_size: isr.len(),
                min_insync,
                after_append: true,
            });
            Err(ApiError::new(
                Code::NotEnoughReplicasAfterAppend,
                format!("{name}: written, but the ISR {isr:?} shrank below min.insync.replicas"),
            )
            .with("isr", isr))
        }
        Some(AckStatus::LeadershipLost) => Err(ApiError::new(
            Code::RequestTimedOut,
            format!(
                "{name}: leadership lost while waiting for the ISR; the write at offset \
                     {} may or may not survive",
                appended.base_offset
            ),
        )),
        Some(AckStatus::Pending) | None => Err(ApiError::new(
            Code::RequestTimedOut,
            format!(
                "{name}: the ISR did not replicate offset {} within {ACK_TIMEOUT:?}",
                appended.base_offset
            ),
        )),
    }
}

/// The leader's append, with the `if_value` check judged under the same lock. Refused
/// before appending while the partition's storage fails; a failed append is reported
/// to its health, one that works ends a streak.
fn append(
    node: &ReplicaManager,
    part: &Arc<Partition>,
    body: ProduceBody,
    acks_all: bool,
) -> Result<Appended, ApiError> {
    if let Some(f) = part.log_dir.failing() {
        return Err(ApiError::new(
            Code::KafkaStorageError,
            format!(
                "{}: storage failing ({}); nothing was written",
                part.name(),
                f.error
            ),
        ));
    }
    let now = node.ctx().now_ms();
    let result = node.update(part, |r| {
        if let Some(expected) = &body.if_value {
            if let Err(e) = check_if_value(node, part, r, &body.entries, expected) {
                return (Err(Err(e)), Effects::default());
            }
        }
        let (result, fx) = match body.producer {
            Some(producer) => r.append_idempotent(body.entries, producer, acks_all, now),
            None => r.append_as_leader(body.entries, acks_all, now),
        };
        (result.map_err(Ok), fx)
    });
    match result {
        Ok(appended) => {
            node.storage_ok(part);
            Ok(appended)
        }
        Err(Ok(ReplicaError::Io(e))) => {
            node.storage_error(part, "append", &e);
            Err(refused(node, part, Api::Produce, ReplicaError::Io(e)))
        }
        Err(Ok(e)) => Err(refused(node, part, Api::Produce, e)),
        Err(Err(e)) => Err(e),
    }
}

/// The answer to an `acks=all` write waiting while its partition's storage fails.
fn storage_failing(part: &Partition, base_offset: u64) -> ApiError {
    let why = part.log_dir.failing().map_or_else(String::new, |f| f.error);
    ApiError::new(
        Code::KafkaStorageError,
        format!(
            "{}: storage failing ({why}) while the write at offset {base_offset} waited \
             for the ISR; it may or may not survive",
            part.name()
        ),
    )
}

/// A conditional write is judged against the key's register (docs/api.md): it
/// must go to the key's partition, `crc32c(key) mod partitions`, or it would be
/// acknowledged yet invisible to the key's reads.
async fn check_key_partition(
    node: &ReplicaManager,
    topic: &str,
    partition: u32,
    entries: &[(Option<String>, RecordValue)],
) -> Result<(), ApiError> {
    let key = entries[0]
        .0
        .as_deref()
        .expect("checked: if_value has a key");
    let partitions = match node.ctx().topic_size(topic).await {
        Ok(Some(n)) => n,
        Ok(None) => {
            return Err(ApiError::new(
                Code::UnknownTopicOrPartition,
                format!("topic `{topic}` is unknown to the controller"),
            ));
        }
        Err(e) => {
            return Err(ApiError::new(
                Code::RequestTimedOut,
                format!(
                    "cannot learn how many partitions `{topic}` has, to check that key \
                     `{key}` lives in partition {partition}: {e}; nothing was written"
                ),
            ));
        }
    };
    let home = partition_for_key(key, partitions);
    if home != partition {
        return Err(ApiError::invalid(format!(
            "key `{key}` lives in partition {home} of `{topic}` (crc32c(key) mod \
             {partitions}), not {partition}: a conditional write (`if_value`) must go to \
             the key's partition"
        ))
        .with("partition", home));
    }
    Ok(())
}

/// The `if_value` condition: this replica leads, and the key's newest value in its
/// log is `expected`.
fn check_if_value(
    node: &ReplicaManager,
    part: &Partition,
    r: &NodeReplica,
    entries: &[(Option<String>, RecordValue)],
    expected: &RecordValue,
) -> Result<(), ApiError> {
    if r.role() != Role::Leader {
        let leader = r.leader();
        let e = ReplicaError::NotLeader { leader };
        return Err(refused(node, part, Api::Produce, e));
    }
    let key = entries[0]
        .0
        .as_deref()
        .expect("checked: if_value has a key");
    let current = r
        .log()
        .latest(key)
        .map_or(RecordValue::null(), |(_, v)| v.clone());
    if &current != expected {
        return Err(ApiError::new(
            Code::PreconditionFailed,
            format!("key `{key}` holds {current}, not {expected}"),
        )
        .with_exact("current", current));
    }
    Ok(())
}
