//! Kafka's purgatory: requests that cannot be answered yet wait here until their
//! condition holds or their deadline passes — an empty follower FETCH until data is
//! appended (up to `replica.fetch.wait.max.ms`), an `acks=all` produce until the high
//! watermark covers its records.
//!
//! One purgatory per partition. Whoever changes the partition (append, HW move, role
//! change) calls [`Purgatory::wake`]; every waiter then re-checks its own condition
//! under the partition lock. A waiter marks the version it has seen before checking,
//! so a wake between its check and its sleep is never lost.

use tokio::sync::watch;
use tokio::time::Instant;

/// Waiters of one partition.
#[derive(Debug)]
pub struct Purgatory {
    version: watch::Sender<u64>,
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
            version: watch::Sender::new(0),
        }
    }

    /// Something changed: every waiter re-checks its condition.
    pub fn wake(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Wait until `check` gives a value, re-checking after every wake, or until
    /// `deadline` (then `check` runs one last time).
    pub async fn wait_until<T>(
        &self,
        deadline: Instant,
        mut check: impl FnMut() -> Option<T>,
    ) -> Option<T> {
        let mut rx = self.version.subscribe();
        loop {
            rx.borrow_and_update();
            if let Some(t) = check() {
                return Some(t);
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
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

    #[tokio::test]
    async fn a_wake_completes_a_waiter_before_its_deadline() {
        let p = Arc::new(Purgatory::new());
        let value = Arc::new(AtomicU64::new(0));
        let (p2, v2) = (p.clone(), value.clone());
        let waiter = tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(60);
            p2.wait_until(deadline, || {
                let v = v2.load(Ordering::SeqCst);
                (v > 0).then_some(v)
            })
            .await
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        value.store(7, Ordering::SeqCst);
        p.wake();
        let got = tokio::time::timeout(Duration::from_secs(30), waiter)
            .await
            .expect("woken long before its deadline")
            .unwrap();
        assert_eq!(got, Some(7));
    }

    #[tokio::test]
    async fn without_a_wake_the_deadline_ends_the_wait() {
        let p = Purgatory::new();
        let deadline = Instant::now() + Duration::from_millis(50);
        let got: Option<()> = p.wait_until(deadline, || None).await;
        assert_eq!(got, None);
        assert!(Instant::now() >= deadline);
    }
}
