//! The active controller's clock over the brokers: when each last heartbeated, and
//! the grace period a new active controller gives them. Never replicated: only the
//! active controller counts silence, and what it concludes (a broker is dead) enters
//! the replicated state as a [`Command::Expire`](super::Command::Expire) once the
//! quorum commits it.

use std::collections::BTreeMap;

use super::Millis;
use crate::protocol::BrokerId;

/// Heartbeat times on the active controller's monotonic clock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sessions {
    /// When each broker's last heartbeat arrived (absent: not since the takeover).
    last_heartbeat: BTreeMap<BrokerId, Millis>,
    /// Brokers not heard from since the takeover are dead once this passes.
    grace_until: Millis,
    /// When each broker last registered, restarted or came back from the dead
    /// (absent: not since the takeover; a broker merely heard again after it did not
    /// come back).
    came_back: BTreeMap<BrokerId, Millis>,
}

impl Sessions {
    /// A new active controller at `now`: nobody heard from yet, one session timeout
    /// of grace for everyone.
    pub fn starting(now: Millis, session_timeout_ms: Millis) -> Sessions {
        Sessions {
            last_heartbeat: BTreeMap::new(),
            grace_until: now.saturating_add(session_timeout_ms),
            came_back: BTreeMap::new(),
        }
    }

    /// Broker `id` heartbeated at `now`.
    pub fn heard(&mut self, id: BrokerId, now: Millis) {
        self.last_heartbeat.insert(id, now);
    }

    /// Broker `id` registered, restarted or came back from the dead at `now`.
    pub fn came_back(&mut self, id: BrokerId, now: Millis) {
        self.came_back.insert(id, now);
    }

    /// Whether broker `id` came back less than `window` before `now`.
    pub fn came_back_within(&self, id: BrokerId, now: Millis, window: Millis) -> bool {
        self.came_back
            .get(&id)
            .is_some_and(|&since| now.saturating_sub(since) < window)
    }

    /// Why broker `id` counts as silent at `now` (None: it does not).
    pub fn silent(&self, id: BrokerId, now: Millis, timeout: Millis) -> Option<String> {
        match self.last_heartbeat.get(&id) {
            Some(&last) if now.saturating_sub(last) > timeout => Some(format!(
                "no heartbeat for {} ms, session timeout {timeout} ms",
                now - last
            )),
            Some(_) => None,
            None if now >= self.grace_until => Some(format!(
                "no heartbeat within {timeout} ms of the controller's takeover"
            )),
            None => None,
        }
    }

    /// The controller itself did not run from `from` to `now` (paused, or starved of
    /// CPU): that time does not count against any broker, since their heartbeats were
    /// waiting in the controller's own sockets.
    pub fn stalled(&mut self, from: Millis, now: Millis) {
        let gap = now.saturating_sub(from);
        for last in self.last_heartbeat.values_mut() {
            *last = last.saturating_add(gap).min(now);
        }
        self.grace_until = self.grace_until.max(from).saturating_add(gap);
    }
}
