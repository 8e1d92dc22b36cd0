//! Kafka's purgatory: requests that cannot be answered yet wait here until their
//! condition holds or their deadline passes — an empty follower FETCH until data is
//! appended (up to `replica.fetch.wait.max.ms`), an `acks=all` produce until the high
//! watermark covers its records.
//!
//! One purgatory per partition. Whoever changes the partition calls
//! [`Purgatory::wake`] (the HW, the role, the epoch or the ISR moved: every waiter)
//! or, when only the log grew, [`Purgatory::wake_fetches`] (only the waiters for
//! records: under load a leader appends thousands of times a second, and waking
//! every produce waiting for the HW at each append would only make it look again).
//! Every waiter then re-checks its own condition under the partition lock. A waiter
//! marks the versions it has seen before checking, so a wake between its check and
//! its sleep is never lost.

use tokio::sync::watch;
use tokio::time::Instant;

/// What a waiter waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waits {
    /// A change of the partition's state (the HW, the role, the epoch, the ISR).
    State,
    /// That, or records appended to the log.
    StateOrRecords,
}

/// Waiters of one partition.
#[derive(Debug)]
pub struct Purgatory {
    state: watch::Sender<u64>,
    records: watch::Sender<u64>,
}

impl Default for Purgatory {
    fn default() -> Self {
        Purgatory::new()
    }
}

impl Purgatory {
    /// No waiters yet.
    pub fn new() -> Self {
        Purgatory {
            state: watch::Sender::new(0),
            records: watch::Sender::new(0),
        }
    }

    /// Something changed: every waiter re-checks its condition.
    pub fn wake(&self) {
        self.state.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Only the log grew: the waiters for records re-check theirs.
    pub fn wake_fetches(&self) {
        self.records.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Wait until `check` gives a value, re-checking after every wake of what it
    /// `waits` for, or until `deadline` (then `check` runs one last time).
    pub async fn wait_until<T>(
        &self,
        deadline: Instant,
        waits: Waits,
        mut check: impl FnMut() -> Option<T>,
    ) -> Option<T> {
        let mut state = self.state.subscribe();
        let mut records = self.records.subscribe();
        loop {
            state.borrow_and_update();
            records.borrow_and_update();
            if let Some(t) = check() {
                return Some(t);
            }
            let woken = async {
                match waits {
                    Waits::State => state.changed().await,
                    Waits::StateOrRecords => tokio::select! {
                        r = state.changed() => r,
                        r = records.changed() => r,
                    },
                }
            };
            match tokio::time::timeout_at(deadline, woken).await {
                Ok(Ok(())) => continue,
                _ => return check(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    use super::*;

    /// The answer of a waiter that must end `why`, within a bound far past it.
    async fn joined<T>(waiter: tokio::task::JoinHandle<T>, why: &str) -> T {
        tokio::time::timeout(Duration::from_secs(30), waiter)
            .await
            .expect(why)
            .unwrap()
    }

    #[tokio::test]
    async fn a_wake_completes_a_waiter_before_its_deadline() {
        let p = Arc::new(Purgatory::new());
        let value = Arc::new(AtomicU64::new(0));
        let (p2, v2) = (p.clone(), value.clone());
        let waiter = tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(60);
            p2.wait_until(deadline, Waits::State, || {
                let v = v2.load(Ordering::SeqCst);
                (v > 0).then_some(v)
            })
            .await
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        value.store(7, Ordering::SeqCst);
        p.wake();
        let got = joined(waiter, "woken long before its deadline").await;
        assert_eq!(got, Some(7));
    }

    #[tokio::test]
    async fn without_a_wake_the_deadline_ends_the_wait() {
        let p = Purgatory::new();
        let deadline = Instant::now() + Duration::from_millis(50);
        let got: Option<()> = p.wait_until(deadline, Waits::State, || None).await;
        assert_eq!(got, None);
        assert!(Instant::now() >= deadline);
    }

    #[tokio::test]
    async fn records_wake_the_fetches_only_and_a_state_change_wakes_everyone() {
        let p = Arc::new(Purgatory::new());
        let checks = Arc::new(AtomicU64::new(0));
        let waiter = |waits| {
            let (p, checks) = (p.clone(), checks.clone());
            tokio::spawn(async move {
                let deadline = Instant::now() + Duration::from_secs(60);
                let mut seen = 0;
                p.wait_until(deadline, waits, || {
                    checks.fetch_add(1, Ordering::SeqCst);
                    seen += 1;
                    // Answers at its second look: the first wake it gets.
                    (seen > 1).then_some(waits)
                })
                .await
            })
        };
        let (fetch, produce) = (waiter(Waits::StateOrRecords), waiter(Waits::State));
        tokio::time::sleep(Duration::from_millis(20)).await;
        p.wake_fetches();
        let got = joined(fetch, "records wake a fetch").await;
        assert_eq!(got, Some(Waits::StateOrRecords));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(
            checks.load(Ordering::SeqCst),
            3,
            "the produce did not look again"
        );
        p.wake();
        let got = joined(produce, "a state change wakes a produce").await;
        assert_eq!(got, Some(Waits::State));
    }
}
