//! One batch's attempts: the retry loop every send runs, alone or as one of an
//! idempotent producer's batches in flight together ([`super::Producer::send_group`]).
//!
//! A batch in flight behind others of the same producer and partition may reach
//! the leader before an earlier one (each request has its own connection), or a
//! new leader that lacks an earlier one still being retried: the leader then
//! refuses it as out of sequence. As Kafka's producer does, such a refusal is
//! retried when an earlier batch of the group was still pending as the attempt
//! was sent, as soon as one of those ends (not after a backoff: it has most
//! likely landed a moment later) — only a refusal of an attempt sent after they
//! had all ended (and their completions were recorded) is the leader's final
//! word, whatever the retry policy and even once the run stops.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::{Notify, watch};

use crate::api;
use crate::client::{Client, Failure, Outcome, ProducerStamp};
use crate::pacing::backoff;

use super::{Policy, Sent};

/// The error code of a refusal of an idempotent batch that is not the next one.
pub(super) const OUT_OF_ORDER: &str = "OUT_OF_ORDER_SEQUENCE_NUMBER";

/// How the batches in flight before one have ended, as far as it cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Earlier {
    /// One of them is still being sent (a refusal as out of sequence may be cured
    /// once it lands).
    Pending,
    /// All of them ended (or there were none).
    Ended,
}

/// The state of each batch of a group, shared by the batches' loops: a batch
/// asks whether those before it are still pending, and waits for one to end.
#[derive(Debug)]
pub struct Group {
    /// Per batch: still being sent.
    pending: Vec<AtomicBool>,
    /// Told whenever a batch ends.
    moved: Notify,
}

impl Group {
    pub fn new(batches: usize) -> Group {
        Group {
            pending: (0..batches).map(|_| AtomicBool::new(true)).collect(),
            moved: Notify::new(),
        }
    }

    /// Batch `j` has ended, whatever its outcome.
    pub fn ended(&self, j: usize) {
        self.pending[j].store(false, Ordering::Release);
        self.moved.notify_waiters();
    }

    /// Until a batch before `j` ends (at once if none is pending), or `at_most`
    /// has passed.
    async fn one_before_ends(&self, j: usize, at_most: Duration) {
        let moved = self.moved.notified();
        tokio::pin!(moved);
        // Registered before looking, so an end in between is not missed.
        moved.as_mut().enable();
        if self.before(j) == Earlier::Pending {
            let _ = tokio::time::timeout(at_most, moved).await;
        }
    }

    /// The batches before `j`.
    pub fn before(&self, j: usize) -> Earlier {
        if self.pending[..j].iter().any(|p| p.load(Ordering::Acquire)) {
            Earlier::Pending
        } else {
            Earlier::Ended
        }
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

/// Whether `f` may be cured by an earlier batch still in flight landing first.
fn waits_on_earlier(f: &Failure, earlier: Earlier) -> bool {
    earlier == Earlier::Pending && f.code.as_deref() == Some(OUT_OF_ORDER)
}

/// Send `values` to `partition` of `topic` in one batch, retrying an unknown
/// outcome (and with `policy.retry_refusals` a retriable refusal) as
/// `policy.retries` allows, every attempt with the same `stamp`; as batch `j` of
/// a `group`, a refusal as out of sequence while a batch before it is pending too,
/// as soon as one of them ends (it has landed, or never will). No retry starts
/// once `stop` is true (the send then ends with what it knows), but for the
/// latter. `jitter` spreads the backoffs.
#[allow(clippy::too_many_arguments)]
pub async fn send(
    client: &mut Client,
    topic: &str,
    partition: u32,
    values: &[u64],
    policy: Policy,
    stamp: Option<ProducerStamp>,
    stop: &watch::Receiver<bool>,
    mut jitter: impl FnMut() -> f64,
    group: Option<(&Group, usize)>,
) -> Sent {
    let earlier = || group.map_or(Earlier::Ended, |(g, j)| g.before(j));
    let started = Instant::now();
    let mut retried = Vec::new();
    let mut ambiguous = false;
    let mut attempt = 0;
    let values: Vec<Value> = values.iter().map(|v| json!(v)).collect();
    loop {
        attempt += 1;
        // As the attempt leaves: a refusal is cured by a batch that was pending
        // then, even if it has landed by the time the answer is read.
        let behind = earlier();
        let failure = match client
            .produce_batch(topic, partition, &values, policy.acks, stamp)
            .await
        {
            Outcome::Ok(p) => {
                return Sent {
                    outcome: Outcome::Ok(p.base_offset),
                    attempts: attempt,
                    retried,
                    producer: None,
                    leader_epoch: p.leader_epoch,
                };
            }
            Outcome::Info(f) => {
                ambiguous = true;
                f
            }
            Outcome::Fail(f) => f,
        };
        let waits = waits_on_earlier(&failure, behind);
        let may_retry = policy.may_retry(attempt, started) && !*stop.borrow();
        // Nothing appended yet, the send may still fail definitely. A refusal a
        // batch still ahead of it may cure is always sent again (those batches
        // end too, within their own retries), so a refusal as out of sequence that
        // ends a send answered an attempt sent once every batch ahead had ended.
        let again = if ambiguous {
            may_retry && (worth_retrying(&failure) || waits)
        } else {
            waits || (policy.retry_refusals && worth_retrying(&failure) && may_retry)
        };
        if !again {
            return Sent {
                leader_epoch: failure.leader_epoch,
                outcome: match ambiguous {
                    true => Outcome::Info(failure),
                    false => Outcome::Fail(failure),
                },
                attempts: attempt,
                retried,
                producer: None,
            };
        }
        retried.push(failure.message);
        let pause: Duration = backoff(attempt - 1, jitter());
        match group {
            // Cured once a batch ahead lands: wait for that, not a backoff.
            Some((g, j)) if waits => g.one_before_ends(j, pause).await,
            _ => tokio::time::sleep(pause).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_a_moment_may_cure_are_worth_retrying_and_others_are_not() {
        let code = |c: &str| Failure {
            code: Some(c.to_string()),
            ..Failure::local("refused")
        };
        assert!(worth_retrying(&Failure::local("connection refused")));
        assert!(worth_retrying(&code("NOT_ENOUGH_REPLICAS")));
        assert!(worth_retrying(&code("NOT_LEADER")));
        assert!(!worth_retrying(&code(OUT_OF_ORDER)));
        assert!(!worth_retrying(&code("INVALID_PRODUCER_EPOCH")));
        // Out of sequence is cured only by an earlier batch still in flight.
        assert!(waits_on_earlier(&code(OUT_OF_ORDER), Earlier::Pending));
        assert!(!waits_on_earlier(&code(OUT_OF_ORDER), Earlier::Ended));
        assert!(!waits_on_earlier(
            &code("INVALID_PRODUCER_EPOCH"),
            Earlier::Pending
        ));
    }

    #[test]
    fn a_batch_waits_on_those_before_it_only() {
        let g = Group::new(3);
        assert_eq!(g.before(0), Earlier::Ended);
        assert_eq!(g.before(2), Earlier::Pending);
        g.ended(0);
        assert_eq!(g.before(1), Earlier::Ended);
        assert_eq!(g.before(2), Earlier::Pending);
        g.ended(1);
        assert_eq!(g.before(2), Earlier::Ended);
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_batch_waits_for_one_ahead_to_end_not_for_its_backoff() {
        let g = std::sync::Arc::new(Group::new(2));
        let long = Duration::from_secs(60);
        // Batch 0 ends 10 ms on: batch 1 stops waiting then, not a minute on.
        let ahead = g.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            ahead.ended(0);
        });
        let start = tokio::time::Instant::now();
        g.one_before_ends(1, long).await;
        assert_eq!(start.elapsed(), Duration::from_millis(10));
        // None pending: at once; still pending with none ending: the bound.
        g.one_before_ends(1, long).await;
        assert_eq!(start.elapsed(), Duration::from_millis(10));
        let g = Group::new(2);
        g.one_before_ends(1, Duration::from_millis(50)).await;
        assert_eq!(start.elapsed(), Duration::from_millis(60));
    }
}
