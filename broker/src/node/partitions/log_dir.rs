//! Whether a partition's storage works — Kafka's log dir failure handling, per
//! partition. Every write the node makes for the partition (appends, truncations,
//! flushes, checkpoints) reports here: a failure starts a streak, the next write that
//! works ends it. While a streak lasts the partition acknowledges nothing (its leader
//! refuses produces, its waiting `acks=all` writes answer `KAFKA_STORAGE_ERROR`);
//! once a streak outlasts `--storage-failure-timeout-ms`, the node leaves every ISR
//! (see `housekeeping`), as a Kafka broker whose log dir went offline does.

use std::sync::Mutex;

/// A streak of storage failures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failing {
    /// When the first failure of the streak happened (node clock, ms).
    pub since_ms: u64,
    /// The latest failure, for messages.
    pub error: String,
    /// The node already left the ISRs for this streak.
    pub reported: bool,
}

/// One partition's storage health.
#[derive(Debug, Default)]
pub struct LogDirHealth {
    failing: Mutex<Option<Failing>>,
}

impl LogDirHealth {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Failing>> {
        self.failing.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A storage operation failed with `error` at `now_ms`; true if this starts a
    /// streak.
    pub fn failed(&self, now_ms: u64, error: String) -> bool {
        let mut f = self.lock();
        match f.as_mut() {
            Some(streak) => {
                streak.error = error;
                false
            }
            None => {
                *f = Some(Failing {
                    since_ms: now_ms,
                    error,
                    reported: false,
                });
                true
            }
        }
    }

    /// A storage write worked: the streak it ends, if any.
    pub fn recovered(&self) -> Option<Failing> {
        self.lock().take()
    }

    /// The streak in progress, if any.
    pub fn failing(&self) -> Option<Failing> {
        self.lock().clone()
    }

    /// The streak in progress if it began more than `timeout_ms` before `now_ms` and
    /// was not reported yet; it counts as reported from now on.
    pub fn take_overdue(&self, now_ms: u64, timeout_ms: u64) -> Option<Failing> {
        let mut f = self.lock();
        let streak = f.as_mut()?;
        if streak.reported || now_ms.saturating_sub(streak.since_ms) <= timeout_ms {
            return None;
        }
        streak.reported = true;
        Some(streak.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streak_starts_once_is_overdue_once_and_ends_with_a_write_that_works() {
        let h = LogDirHealth::default();
        assert_eq!(h.failing(), None);
        assert!(h.failed(100, "full".into()));
        assert!(!h.failed(150, "still full".into()));
        assert_eq!(h.failing().unwrap().since_ms, 100);
        assert_eq!(h.failing().unwrap().error, "still full");
        assert_eq!(h.take_overdue(1100, 1000), None, "not past the timeout yet");
        let overdue = h.take_overdue(1101, 1000).unwrap();
        assert!(overdue.reported);
        assert_eq!(h.take_overdue(5000, 1000), None, "reported once");
        assert_eq!(h.recovered().unwrap().since_ms, 100);
        assert_eq!(h.recovered(), None);
        assert!(h.failed(6000, "full again".into()), "a new streak");
        assert!(h.take_overdue(7001, 1000).is_some());
    }
}
