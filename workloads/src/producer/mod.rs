//! The queue workload's producer: a `send`, retried as Kafka's producer retries.
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
//!
//! A send is a batch of values (one produce request), and a load burst's producer
//! has several batches in flight to one partition at once ([`Producer::send_group`],
//! at most [`MAX_IN_FLIGHT`]), as Kafka's producer does; `retry` says how a batch
//! behind others is retried.

mod retry;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::client::{Acks, Client, Failure, Outcome, ProducerStamp};
use crate::pacing::backoff;
use retry::{Group, OUT_OF_ORDER, send};

/// The most batches an idempotent producer has in flight to one partition at
/// once: Kafka's `max.in.flight.requests.per.connection` default, which its
/// brokers' deduplication (the last five batches of each producer) is sized for.
pub const MAX_IN_FLIGHT: usize = 5;

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

    /// Send `values` to `partition` of `topic` as one batch (`retry::send`), as
    /// an idempotent producer when the policy says so (the batch's records
    /// numbered from the partition's next sequence on).
    pub async fn send(
        &mut self,
        client: &mut Client,
        topic: &str,
        partition: u32,
        values: &[u64],
        stop: &watch::Receiver<bool>,
        jitter: impl FnMut() -> f64,
    ) -> Sent {
        let stamp = match self.stamp(client, partition, stop).await {
            Ok(stamp) => stamp,
            Err(sent) => return sent,
        };
        let policy = self.policy;
        let mut sent = send(
            client, topic, partition, values, policy, stamp, stop, jitter, None,
        )
        .await;
        sent.producer = stamp.map(|s| s.id);
        match (stamp, &sent.outcome) {
            (Some(s), Outcome::Ok(_)) => {
                self.next_sequence
                    .insert(partition, s.sequence + count(values));
            }
            // The partition expects another sequence, or a newer epoch fenced us:
            // start over with a new producer id.
            (Some(_), Outcome::Fail(f))
                if matches!(
                    f.code.as_deref(),
                    Some(OUT_OF_ORDER | "INVALID_PRODUCER_EPOCH")
                ) =>
            {
                self.forget();
            }
            // Given up in doubt: the batch may be in the log under its sequence,
            // which the next batch must not reuse (Kafka's producer resets its id
            // then too, KIP-360).
            (Some(_), Outcome::Info(_)) => self.forget(),
            _ => {}
        }
        sent
    }

    /// Send `batches` to `partition` of `topic` all at once, batch `j` through
    /// `clients[j]` (a connection of its own), numbered one after the other as an
    /// idempotent producer's batches in flight together are (at most
    /// [`MAX_IN_FLIGHT`]); each batch is retried as `retry` says, a refusal as
    /// out of sequence too while a batch before it is pending. `on_sent(j, sent)`
    /// is called as batch `j` ends. Unless every batch succeeds, the producer
    /// starts over with a new id, as Kafka's does when a batch in flight fails: the
    /// partition may expect any of their sequences next. `seed` draws the backoffs.
    #[allow(clippy::too_many_arguments)]
    pub async fn send_group(
        &mut self,
        clients: &mut [Client],
        topic: &str,
        partition: u32,
        batches: &[Vec<u64>],
        stop: &watch::Receiver<bool>,
        seed: u64,
        on_sent: impl Fn(usize, &Sent),
    ) -> Vec<Sent> {
        assert!(batches.len() <= clients.len().min(MAX_IN_FLIGHT));
        let Some(first) = clients.first_mut() else {
            return Vec::new();
        };
        let stamp = match self.stamp(first, partition, stop).await {
            Ok(stamp) => stamp,
            Err(sent) => {
                let failed: Vec<Sent> = batches.iter().map(|_| sent.clone()).collect();
                failed.iter().enumerate().for_each(|(j, s)| on_sent(j, s));
                return failed;
            }
        };
        let policy = self.policy;
        let group = Group::new(batches.len());
        let (group, on_sent) = (&group, &on_sent);
        let mut sequence = stamp.map_or(0, |s| s.sequence);
        let sends = clients
            .iter_mut()
            .zip(batches)
            .enumerate()
            .map(|(j, (client, batch))| {
                let stamp = stamp.map(|s| ProducerStamp { sequence, ..s });
                sequence += count(batch);
                let mut rng = ChaCha8Rng::seed_from_u64(seed ^ j as u64);
                async move {
                    let jitter = move || rng.random_range(0.5..1.5);
                    let mut sent = send(
                        client,
                        topic,
                        partition,
                        batch,
                        policy,
                        stamp,
                        stop,
                        jitter,
                        Some((group, j)),
                    )
                    .await;
                    sent.producer = stamp.map(|s| s.id);
                    // Recorded before the batches behind it may see it ended:
                    // their final refusals come after its completion.
                    on_sent(j, &sent);
                    group.ended(j);
                    sent
                }
            });
        let sent = futures_util::future::join_all(sends).await;
        let all_ok = sent.iter().all(|s| matches!(s.outcome, Outcome::Ok(_)));
        match stamp {
            Some(_) if all_ok => {
                self.next_sequence.insert(partition, sequence);
            }
            Some(_) => self.forget(),
            None => {}
        }
        sent
    }

    /// The stamp of the partition's next batch (None: not idempotent), the
    /// producer id asked for first if there is none; Err: the send that failed
    /// for want of one (nothing was sent).
    async fn stamp(
        &mut self,
        client: &mut Client,
        partition: u32,
        stop: &watch::Receiver<bool>,
    ) -> Result<Option<ProducerStamp>, Sent> {
        if !self.policy.idempotent {
            return Ok(None);
        }
        let (id, epoch) = match self.id {
            Some(known) => known,
            None => self.init_producer_id(client, stop).await?,
        };
        let sequence = self.next_sequence.get(&partition).copied().unwrap_or(0);
        Ok(Some(ProducerStamp {
            id,
            epoch,
            sequence,
        }))
    }

    /// A producer id from the cluster. Kafka's producer keeps asking, with backoff,
    /// until it gets one within its delivery timeout (its sends wait meanwhile), so
    /// a policy that retries refusals does too; otherwise the first failure fails
    /// the send (nothing was sent).
    async fn init_producer_id(
        &mut self,
        client: &mut Client,
        stop: &watch::Receiver<bool>,
    ) -> Result<(u64, u32), Sent> {
        let started = Instant::now();
        let mut tries = 0;
        loop {
            tries += 1;
            let e = match client.init_producer_id().await {
                Ok(got) => return Ok(*self.id.insert(got)),
                Err(e) => e,
            };
            let again = self.policy.retry_refusals
                && self.policy.may_retry(tries, started)
                && !*stop.borrow();
            if !again {
                let e = match tries {
                    1 => e,
                    n => format!("{e} (asked {n} times)"),
                };
                return Err(Sent {
                    outcome: Outcome::Fail(Failure::local(e)),
                    attempts: 1,
                    retried: Vec::new(),
                    producer: None,
                    leader_epoch: None,
                });
            }
            tokio::time::sleep(backoff(tries - 1, 1.0)).await;
        }
    }

    /// Start over with a new producer id.
    fn forget(&mut self) {
        self.id = None;
        self.next_sequence.clear();
    }
}

/// The records of a batch, as sequence numbers count them.
fn count(values: &[u64]) -> u32 {
    u32::try_from(values.len()).unwrap_or(u32::MAX)
}

/// How a send ended after all its attempts.
#[derive(Debug, Clone)]
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
    /// The epoch of the leader that answered the last attempt, when the answer
    /// carries it: the appending leader's (`ok`), the refusing one's (a refusal of
    /// an idempotent batch).
    pub leader_epoch: Option<i64>,
}

impl Sent {
    /// Add the attempts to a completion's value (nothing for a single attempt, so
    /// a run without retries records what it always did), and the idempotent
    /// producer's id with the answering leader's epoch (what judges a refusal as
    /// out of sequence: docs/anomalies.md).
    pub fn annotate(&self, mut value: Value) -> Value {
        if self.attempts > 1 {
            value["attempts"] = json!(self.attempts);
            value["retried"] = json!(self.retried);
        }
        if let Some(id) = self.producer {
            value["producer"] = json!(id);
            if let Some(epoch) = self.leader_epoch {
                value["leader_epoch"] = json!(epoch);
            }
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientConfig;
    use std::sync::atomic::{AtomicU32, Ordering};

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

    /// A cluster of a broker that is down and one that refuses InitProducerId
    /// `refusals` times before it answers; the times it was asked.
    async fn cluster(refusals: u32) -> (ClientConfig, std::sync::Arc<AtomicU32>) {
        use axum::http::StatusCode;
        let down = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let down = down.local_addr().unwrap();
        let asked = std::sync::Arc::new(AtomicU32::new(0));
        let count = asked.clone();
        let app = axum::Router::new().route(
            "/v1/producers",
            axum::routing::post(move || async move {
                match count.fetch_add(1, Ordering::SeqCst) < refusals {
                    true => (
                        StatusCode::SERVICE_UNAVAILABLE,
                        r#"{"error":"REQUEST_TIMED_OUT","message":"no quorum"}"#,
                    ),
                    false => (StatusCode::OK, r#"{"producer_id":7,"producer_epoch":2}"#),
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let up = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let nodes = std::collections::BTreeMap::from([(1, down), (2, up)]);
        (ClientConfig::new(nodes, None), asked)
    }

    #[tokio::test]
    async fn kafkas_default_producer_asks_for_its_id_again_and_elsewhere_until_it_gets_one() {
        let (config, asked) = cluster(2).await;
        let (_tx, stop) = watch::channel(false);
        let mut client = Client::new(config.clone(), 1).unwrap();
        let mut kafka = Producer::new(Policy::kafka_default());
        let got = kafka.init_producer_id(&mut client, &stop).await;
        assert_eq!(got.ok(), Some((7, 2)));
        assert_eq!(asked.load(Ordering::SeqCst), 3);
        // A producer that does not retry refusals gives the send up at the first.
        let (config, asked) = cluster(1).await;
        let mut client = Client::new(config, 1).unwrap();
        let once = Policy {
            idempotent: true,
            ..Policy::plain(Acks::All)
        };
        let Err(sent) = Producer::new(once)
            .init_producer_id(&mut client, &stop)
            .await
        else {
            panic!("an id after a refusal");
        };
        assert!(matches!(sent.outcome, Outcome::Fail(_)));
        // Asked once, or never if every broker it tried was the one down.
        assert!(asked.load(Ordering::SeqCst) <= 1);
    }

    #[test]
    fn an_idempotent_send_records_its_producer_and_the_answering_leaders_epoch() {
        let sent = |producer, leader_epoch| Sent {
            outcome: Outcome::Ok(Some(3)),
            attempts: 1,
            retried: Vec::new(),
            producer,
            leader_epoch,
        };
        let v = sent(Some(7), Some(4)).annotate(json!({"value": 1}));
        assert_eq!(v, json!({"value": 1, "producer": 7, "leader_epoch": 4}));
        // A plain send records what it always did.
        let v = sent(None, Some(4)).annotate(json!({"value": 1}));
        assert_eq!(v, json!({"value": 1}));
    }
}
