//! The queue workload's producer: one `send`, retried as Kafka's producer retries
//! (`retries`). A send whose outcome is unknown — timed out, connection lost,
//! `REQUEST_TIMED_OUT`, `NOT_ENOUGH_REPLICAS_AFTER_APPEND` — is sent again, up to
//! `retries` more times, after the reconnect backoff and with the leader looked up
//! afresh (the client forgets a partition's leader after an ambiguous answer).
//!
//! This is what makes duplicates possible: the first attempt may have been appended
//! and replicated although its answer was lost, and the retry appends the value a
//! second time. The history keeps one operation per send (docs/history.md): its
//! completion says how many attempts it took and why the earlier ones were retried,
//! so a duplicate names the send whose retries wrote it twice.
//!
//! With `idempotent` (Kafka's `enable.idempotence`) the producer first asks the
//! controller for a producer id (InitProducerId) and numbers its records per
//! partition; every attempt of a send carries the same sequence number, so a leader
//! that already holds the record answers with its first offset instead of appending
//! it again. A send that ends `info` leaves the producer unsure which sequence the
//! partition expects next: the worker then starts over as a new process, with a new
//! producer id.
//!
//! Once an attempt was ambiguous, the send can no longer end `fail`: a later
//! definite refusal (`NOT_LEADER`, ...) says only that *that* attempt did nothing,
//! so the send is retried again, or ends `info` when no attempt is left.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::api;
use std::collections::HashMap;

use crate::client::{Acks, Client, Failure, Outcome, ProducerStamp};
use crate::pacing::backoff;

/// How a producer sends: Kafka's `acks` and `retries`.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub acks: Acks,
    /// Attempts after the first for a send whose outcome is unknown.
    pub retries: u32,
    /// Send as an idempotent producer.
    pub idempotent: bool,
}

/// A producer: its policy, and as an idempotent producer its id and next sequence
/// number per partition.
#[derive(Debug)]
pub struct Producer {
    policy: Policy,
    /// The producer id and epoch (None: not asked for yet).
    id: Option<(u64, u32)>,
    next_sequence: HashMap<u32, u32>,
}

impl Producer {
    pub fn new(policy: Policy) -> Producer {
        Producer {
            policy,
            id: None,
            next_sequence: HashMap::new(),
        }
    }

    /// Send `value` to `partition` of `topic` ([`send`]), as an idempotent producer
    /// when the policy says so.
    pub async fn send(
        &mut self,
        client: &mut Client,
        topic: &str,
        partition: u32,
        value: u64,
        stop: &watch::Receiver<bool>,
        jitter: impl FnMut() -> f64,
    ) -> Sent {
        let stamp = if self.policy.idempotent {
            let (id, epoch) = match self.id {
                Some(known) => known,
                None => match client.init_producer_id().await {
                    Ok(got) => *self.id.insert(got),
                    // Nothing was sent: the send certainly did not happen.
                    Err(e) => {
                        return Sent {
                            outcome: Outcome::Fail(Failure::local(e)),
                            attempts: 1,
                            retried: Vec::new(),
                        };
                    }
                },
            };
            let sequence = self.next_sequence.get(&partition).copied().unwrap_or(0);
            Some(ProducerStamp {
                id,
                epoch,
                sequence,
            })
        } else {
            None
        };
        let sent = send(
            client,
            topic,
            partition,
            value,
            self.policy,
            stamp,
            stop,
            jitter,
        )
        .await;
        match (stamp, &sent.outcome) {
            (Some(s), Outcome::Ok(_)) => {
                self.next_sequence.insert(partition, s.sequence + 1);
            }
            // The partition expects another sequence, or a newer epoch fenced us:
            // start over with a new producer id.
            (Some(_), Outcome::Fail(f))
                if matches!(
                    f.code.as_deref(),
                    Some("OUT_OF_ORDER_SEQUENCE_NUMBER" | "INVALID_PRODUCER_EPOCH")
                ) =>
            {
                self.id = None;
                self.next_sequence.clear();
            }
            _ => {}
        }
        sent
    }
}

/// How a send ended after all its attempts.
#[derive(Debug)]
pub struct Sent {
    /// The last attempt's outcome, `Fail` turned `Info` once an attempt was
    /// ambiguous.
    pub outcome: Outcome<Option<u64>>,
    /// Attempts made (1 without a retry).
    pub attempts: u32,
    /// Why each attempt before the last was retried.
    pub retried: Vec<String>,
}

impl Sent {
    /// Add the attempts to a completion's value (nothing for a single attempt, so
    /// a run without retries records what it always did).
    pub fn annotate(&self, mut value: Value) -> Value {
        if self.attempts > 1 {
            value["attempts"] = json!(self.attempts);
            value["retried"] = json!(self.retried);
        }
        value
    }
}

/// Whether a failure of an attempt, after an earlier ambiguous one, is worth
/// another attempt: no answer at all, or a leader's refusal that a new leader
/// or a moment may cure (Kafka's retriable errors).
fn worth_retrying(f: &Failure) -> bool {
    match f.code.as_deref() {
        None => true,
        Some(code) => api::retriable(code) || code == "NOT_ENOUGH_REPLICAS",
    }
}

/// Send `value` to `partition` of `topic`, retrying an unknown outcome up to
/// `policy.retries` times, every attempt with the same `stamp`. No retry starts once `stop` is true (the send then ends with
/// what it knows). `jitter` spreads the backoffs.
#[allow(clippy::too_many_arguments)]
async fn send(
    client: &mut Client,
    topic: &str,
    partition: u32,
    value: u64,
    policy: Policy,
    stamp: Option<ProducerStamp>,
    stop: &watch::Receiver<bool>,
    mut jitter: impl FnMut() -> f64,
) -> Sent {
    let mut retried = Vec::new();
    let mut ambiguous = false;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let failure = match client
            .produce_as(topic, partition, json!(value), policy.acks, stamp)
            .await
        {
            Outcome::Ok(offset) => {
                return Sent {
                    outcome: Outcome::Ok(offset),
                    attempts: attempt,
                    retried,
                };
            }
            Outcome::Info(f) => {
                ambiguous = true;
                f
            }
            Outcome::Fail(f) if !ambiguous => {
                return Sent {
                    outcome: Outcome::Fail(f),
                    attempts: attempt,
                    retried,
                };
            }
            Outcome::Fail(f) => f,
        };
        if attempt > policy.retries || *stop.borrow() || !worth_retrying(&failure) {
            return Sent {
                outcome: Outcome::Info(failure),
                attempts: attempt,
                retried,
            };
        }
        retried.push(failure.message);
        let pause: Duration = backoff(attempt - 1, jitter());
        tokio::time::sleep(pause).await;
    }
}
