//! The queue workload's producer: one `send`, retried as Kafka's producer retries.
//! A send whose outcome is unknown — timed out, connection lost,
//! `REQUEST_TIMED_OUT`, `NOT_ENOUGH_REPLICAS_AFTER_APPEND` — is sent again after the
//! reconnect backoff and with the leader looked up afresh (the client forgets a
//! partition's leader after an ambiguous answer): up to `retries` more times, or,
//! as Kafka's producer does by default, until its delivery timeout.
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
//! it again — a duplicate is then the broker's doing. A send that ends `info` leaves
//! the producer unsure which sequence the partition expects next: the worker then
//! starts over as a new process, with a new producer id.
//!
//! Kafka's default producer (since 3.0: idempotent, `acks=all`, retries bounded
//! only by `delivery.timeout.ms`, [`Policy::kafka_default`]) also retries a
//! leader's definite refusal that a moment may cure (`NOT_ENOUGH_REPLICAS`,
//! `NOT_LEADER_OR_FOLLOWER`), where a producer given `retries` retries only unknown
//! outcomes.
//!
//! Once an attempt was ambiguous, the send can no longer end `fail`: a later
//! definite refusal (`NOT_LEADER`, ...) says only that *that* attempt did nothing,
//! so the send is retried again, or ends `info` when no attempt is left.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::api;
use std::collections::HashMap;

use crate::client::{Acks, Client, Failure, Outcome, ProducerStamp};
use crate::pacing::backoff;

/// Kafka's `delivery.timeout.ms` for the default producer, scaled to a campaign:
/// Kafka's 120 s would outlast most campaigns; 30 s outlasts every fault pattern's
/// hold, so a send retried through a failover still lands.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a send is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retries {
    /// This many attempts after the first (Kafka's `retries`).
    Count(u32),
    /// Any number, started within this long of the send (Kafka's
    /// `delivery.timeout.ms`, with `retries` at its default of unbounded).
    Within(Duration),
}

/// How a producer sends: Kafka's `acks`, `retries`, `enable.idempotence`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub acks: Acks,
    pub retries: Retries,
    /// Send as an idempotent producer.
    pub idempotent: bool,
    /// Retry a leader's definite retriable refusal too (`NOT_ENOUGH_REPLICAS`, a
    /// `NOT_LEADER_OR_FOLLOWER` the client's own leader lookups did not cure), as
    /// Kafka's client does; otherwise only unknown outcomes are retried.
    pub retry_refusals: bool,
}

/// The producers of a queue workload's workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Producers {
    /// Every worker's producer sends so (`--retries`, `--idempotent` given).
    All(Policy),
    /// The default: Kafka's default producer ([`Policy::kafka_default`]) on every
    /// third worker, the first included, and a plain one ([`Policy::plain`]) with
    /// `acks=all` on the others — the dedup paths run, and a duplicate stays the
    /// broker's doing whichever producer sent it. Plain producers are the majority:
    /// a retry can write a value a consumer read at a deposed leader again at the
    /// same offset, hiding what a value sent once shows.
    KafkaDefault,
}

impl Producers {
    /// The policy of the workload's `index`-th worker (from 0).
    pub fn policy(&self, index: u32) -> Policy {
        match self {
            Producers::All(p) => *p,
            Producers::KafkaDefault if index % 3 == 0 => Policy::kafka_default(),
            Producers::KafkaDefault => Policy::plain(Acks::All),
        }
    }
}

impl Policy {
    /// A producer that sends each value once: a send without an answer ends `info`,
    /// so a duplicate is always the broker's doing.
    pub fn plain(acks: Acks) -> Policy {
        Policy {
            acks,
            retries: Retries::Count(0),
            idempotent: false,
            retry_refusals: false,
        }
    }

    /// Kafka's default producer since 3.0: idempotent, `acks=all`, retrying
    /// unknown outcomes and retriable refusals until [`DELIVERY_TIMEOUT`].
    pub fn kafka_default() -> Policy {
        Policy {
            acks: Acks::All,
            retries: Retries::Within(DELIVERY_TIMEOUT),
            idempotent: true,
            retry_refusals: true,
        }
    }

    /// Is another attempt allowed after `attempts` of a send started at `started`?
    fn may_retry(&self, attempts: u32, started: Instant) -> bool {
        match self.retries {
            Retries::Count(n) => attempts <= n,
            Retries::Within(d) => started.elapsed() < d,
        }
    }
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

    /// Send `values` to `partition` of `topic` as one batch ([`send`]), as an
    /// idempotent producer when the policy says so (the batch's records numbered
    /// from the partition's next sequence on).
    pub async fn send(
        &mut self,
        client: &mut Client,
        topic: &str,
        partition: u32,
        values: &[u64],
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
                            producer: None,
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
        let mut sent = send(
            client,
            topic,
            partition,
            values,
            self.policy,
            stamp,
            stop,
            jitter,
        )
        .await;
        sent.producer = stamp.map(|s| s.id);
        match (stamp, &sent.outcome) {
            (Some(s), Outcome::Ok(_)) => {
                let n = u32::try_from(values.len()).unwrap_or(u32::MAX);
                self.next_sequence
                    .insert(partition, s.sequence.saturating_add(n));
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
    /// The idempotent producer's id that sent it (None: not idempotent).
    pub producer: Option<u64>,
}

impl Sent {
    /// Add the attempts to a completion's value (nothing for a single attempt, so
    /// a run without retries records what it always did), and the idempotent
    /// producer's id.
    pub fn annotate(&self, mut value: Value) -> Value {
        if self.attempts > 1 {
            value["attempts"] = json!(self.attempts);
            value["retried"] = json!(self.retried);
        }
        if let Some(id) = self.producer {
            value["producer"] = json!(id);
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

/// Send `values` to `partition` of `topic` in one batch, retrying an unknown outcome (and with
/// `policy.retry_refusals` a retriable refusal) as `policy.retries` allows, every
/// attempt with the same `stamp`. No retry starts once `stop` is true (the send
/// then ends with what it knows). `jitter` spreads the backoffs.
#[allow(clippy::too_many_arguments)]
async fn send(
    client: &mut Client,
    topic: &str,
    partition: u32,
    values: &[u64],
    policy: Policy,
    stamp: Option<ProducerStamp>,
    stop: &watch::Receiver<bool>,
    mut jitter: impl FnMut() -> f64,
) -> Sent {
    let started = Instant::now();
    let mut retried = Vec::new();
    let mut ambiguous = false;
    let mut attempt = 0;
    let values: Vec<Value> = values.iter().map(|v| json!(v)).collect();
    loop {
        attempt += 1;
        let failure = match client
            .produce_batch(topic, partition, &values, policy.acks, stamp)
            .await
        {
            Outcome::Ok(offset) => {
                return Sent {
                    outcome: Outcome::Ok(offset),
                    attempts: attempt,
                    retried,
                    producer: None,
                };
            }
            Outcome::Info(f) => {
                ambiguous = true;
                f
            }
            Outcome::Fail(f) if !ambiguous => {
                // Nothing was appended yet: the send may still fail definitely.
                let again = policy.retry_refusals
                    && worth_retrying(&f)
                    && policy.may_retry(attempt, started)
                    && !*stop.borrow();
                if !again {
                    return Sent {
                        outcome: Outcome::Fail(f),
                        attempts: attempt,
                        retried,
                        producer: None,
                    };
                }
                f
            }
            Outcome::Fail(f) => f,
        };
        if ambiguous
            && (!policy.may_retry(attempt, started) || *stop.borrow() || !worth_retrying(&failure))
        {
            return Sent {
                outcome: Outcome::Info(failure),
                attempts: attempt,
                retried,
                producer: None,
            };
        }
        retried.push(failure.message);
        let pause: Duration = backoff(attempt - 1, jitter());
        tokio::time::sleep(pause).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_default_producers_run_on_every_third_worker_beside_plain_ones() {
        let policies: Vec<Policy> = (0..4).map(|i| Producers::KafkaDefault.policy(i)).collect();
        assert_eq!(policies[0], Policy::kafka_default());
        assert_eq!(policies[3], Policy::kafka_default());
        assert_eq!(policies[1], Policy::plain(Acks::All));
        assert_eq!(policies[2], Policy::plain(Acks::All));
        assert!(policies[0].idempotent && policies[0].retry_refusals);
        assert_eq!(policies[0].acks, Acks::All);
        // A plain producer sends once: a duplicate is the broker's doing.
        assert_eq!(policies[1].retries, Retries::Count(0));
        assert!(!policies[1].idempotent);
        let given = Policy {
            retries: Retries::Count(5),
            ..Policy::plain(Acks::One)
        };
        assert!((0..3).all(|i| Producers::All(given).policy(i) == given));
    }

    #[test]
    fn retries_stop_at_their_count_or_their_delivery_timeout() {
        let now = Instant::now();
        let counted = Policy {
            retries: Retries::Count(2),
            ..Policy::plain(Acks::All)
        };
        assert!(counted.may_retry(1, now) && counted.may_retry(2, now));
        assert!(!counted.may_retry(3, now));
        assert!(!Policy::plain(Acks::All).may_retry(1, now));
        let kafka = Policy::kafka_default();
        assert!(kafka.may_retry(1000, now));
        let long_ago = now.checked_sub(DELIVERY_TIMEOUT + Duration::from_secs(1));
        if let Some(then) = long_ago {
            assert!(!kafka.may_retry(1, then));
        }
    }

    #[test]
    fn refusals_a_moment_may_cure_are_worth_retrying_and_others_are_not() {
        let code = |c: &str| Failure {
            code: Some(c.to_string()),
            ..Failure::local("refused")
        };
        assert!(worth_retrying(&Failure::local("connection refused")));
        assert!(worth_retrying(&code("NOT_ENOUGH_REPLICAS")));
        assert!(worth_retrying(&code("NOT_LEADER")));
        assert!(!worth_retrying(&code("OUT_OF_ORDER_SEQUENCE_NUMBER")));
        assert!(!worth_retrying(&code("INVALID_PRODUCER_EPOCH")));
    }
}
