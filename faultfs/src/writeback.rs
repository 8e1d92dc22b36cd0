//! The kernel's writeback: what a process wrote and never fsynced still reaches the
//! disk once it has been dirty long enough (Linux writes back pages dirty for more
//! than `vm.dirty_expire_centisecs`, 30 s by default, each time its flusher wakes,
//! every `vm.dirty_writeback_centisecs`, 5 s). Without it a power cut of a process
//! that never fsyncs (Kafka's default: no flush policy, durability from
//! replication) would lose every byte it ever wrote; with it, the last half minute
//! or so — what a real power cut loses.
//!
//! [`Writeback`] is the bookkeeping alone: where the journal stood at each of the
//! flusher's wakeups, and which of those marks is old enough to be on disk. The
//! mount's flusher thread feeds it and applies what it answers.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::journal::Mark;

/// Where the journal stood at each wakeup of the flusher, oldest first, until old
/// enough to be written back.
#[derive(Debug)]
pub(crate) struct Writeback {
    /// How long a change stays dirty before the flusher writes it back.
    after: Duration,
    marks: VecDeque<(Instant, Mark)>,
}

impl Writeback {
    pub fn new(after: Duration) -> Writeback {
        Writeback {
            after,
            marks: VecDeque::new(),
        }
    }

    /// How often the flusher wakes: a sixth of the expiry (Linux's 5 s for 30 s),
    /// between 10 ms and 5 s.
    pub fn interval(&self) -> Duration {
        (self.after / 6).clamp(Duration::from_millis(10), Duration::from_secs(5))
    }

    /// The flusher wakes at `now` with the journal at `mark`: note it, and answer
    /// the newest mark noted `after` ago or earlier — every change before it has
    /// been dirty long enough and is on disk now (None: nothing is).
    pub fn wake(&mut self, now: Instant, mark: Mark) -> Option<Mark> {
        self.marks.push_back((now, mark));
        let mut due = None;
        while let Some(&(at, m)) = self.marks.front() {
            if now.saturating_duration_since(at) < self.after {
                break;
            }
            due = Some(m);
            self.marks.pop_front();
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_written_back_once_it_has_been_dirty_for_the_expiry() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut w = Writeback::new(s(30));
        assert_eq!(w.interval(), s(5));
        assert_eq!(w.wake(t0, Mark(10)), None, "nothing is old enough yet");
        assert_eq!(w.wake(t0 + s(5), Mark(20)), None);
        assert_eq!(w.wake(t0 + s(29), Mark(30)), None, "29 s is not 30");
        assert_eq!(
            w.wake(t0 + s(36), Mark(40)),
            Some(Mark(20)),
            "the marks of 0 s and 5 s are due: the newer one covers both"
        );
        assert_eq!(
            w.wake(t0 + s(37), Mark(45)),
            None,
            "nothing more is due yet"
        );
        assert_eq!(w.wake(t0 + s(70), Mark(50)), Some(Mark(45)));
    }

    #[test]
    fn the_flusher_wakes_often_enough_for_short_expiries_and_no_more_than_linux_for_long_ones() {
        let ms = Duration::from_millis;
        assert_eq!(Writeback::new(ms(30)).interval(), ms(10));
        assert_eq!(Writeback::new(ms(600)).interval(), ms(100));
        assert_eq!(Writeback::new(ms(600_000)).interval(), ms(5_000));
    }
}
