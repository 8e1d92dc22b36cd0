//! The mixed workload: the queue and the register in one campaign, so that one run
//! exercises both views of the broker — its log (lost, reordered or diverging
//! records) and its key-value registers read linearizably (stale reads) — under the
//! same faults.
//!
//! The campaign's `concurrency` workers are split between the two
//! ([`split_workers`]): the queue takes the first half (rounded up), the register the
//! rest. Worker `w` keeps its number whichever workload it runs, so process numbers
//! never collide (worker `w` is process `w`, then `w + concurrency`, … after each
//! `info`) and each worker draws from its own seeded stream; every worker aims at
//! `rate / concurrency` operations per second, so `rate` stays the campaign's total.
//! Each workload uses its own topic (`queue`, `register`), and the operations' names
//! (`send`/`poll`/`final-poll`, `read`/`write`/`cas`) tell them apart in the one
//! history, where each is judged by its own checker.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;

use crate::queue::{self, QueueConfig};
use crate::recorder::Recorder;
use crate::register::{self, RegisterConfig};
use crate::workload::{BoxFuture, Workload, all_done};

/// The topics of a mixed campaign: the queue's first (faults aimed at a partition's
/// leader read the queue's; both topics' partition `p` start with the same leader).
const TOPICS: [&str; 2] = [queue::TOPIC, register::TOPIC];

/// Which of `concurrency` workers run the queue and which the register: the queue
/// takes `ceil(concurrency / 2)`, the register the rest (none if `concurrency` is 1).
pub fn split_workers(concurrency: u32) -> (Range<u32>, Range<u32>) {
    let queue = concurrency.div_ceil(2);
    (0..queue, queue..concurrency)
}

/// The queue and the register, run side by side.
#[derive(Debug, Clone)]
pub struct Mixed {
    pub queue: QueueConfig,
    pub register: RegisterConfig,
}

impl Workload for Mixed {
    fn topics(&self) -> &'static [&'static str] {
        &TOPICS
    }

    fn lossless_topics(&self) -> &'static [&'static str] {
        self.queue.lossless_topics()
    }

    fn linearizable_topics(&self) -> &'static [&'static str] {
        self.register.linearizable_topics()
    }

    fn run(
        &self,
        recorder: Arc<dyn Recorder>,
        stop: watch::Receiver<bool>,
    ) -> BoxFuture<'static, ()> {
        let queue = self.queue.run(recorder.clone(), stop.clone());
        let register = self.register.run(recorder, stop);
        Box::pin(async move {
            tokio::join!(queue, register);
        })
    }

    /// The queue's final drain and the register's final reads, at once.
    fn final_step(&self) -> Option<&'static str> {
        Some("draining the queue, reading the register's keys once more (final reads)")
    }

    fn first_look_step(&self) -> Option<&'static str> {
        Some("reading the register's keys before the leaders move (final reads)")
    }

    /// The register's first look (its final reads); the queue has none.
    fn first_look<'a>(
        &'a self,
        recorder: &'a dyn Recorder,
        first_free_process: u64,
        deadline: Instant,
    ) -> BoxFuture<'a, Result<(), String>> {
        self.register
            .first_look(recorder, first_free_process, deadline)
    }

    /// The register's final reads take process numbers from `first_free_process`
    /// ([`register::final_reads::processes`]); the queue's drain takes those after
    /// them.
    fn finish<'a>(
        &'a self,
        recorder: &'a dyn Recorder,
        first_free_process: u64,
        deadline: Instant,
    ) -> BoxFuture<'a, Result<(), String>> {
        let drain_from =
            first_free_process + register::final_reads::processes(self.register.partitions);
        Box::pin(async move {
            let (reads, drain) = tokio::join!(
                self.register.finish(recorder, first_free_process, deadline),
                self.queue.finish(recorder, drain_from, deadline),
            );
            all_done([drain, reads])
        })
    }

    /// The queue's checker reads the final logs of the queue's topic, the register's
    /// those of its own (for divergence).
    fn judges_final_logs(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_are_split_between_the_two_and_cover_every_number_once() {
        assert_eq!(split_workers(6), (0..3, 3..6));
        assert_eq!(split_workers(7), (0..4, 4..7));
        assert_eq!(split_workers(2), (0..1, 1..2));
        assert_eq!(split_workers(1), (0..1, 1..1));
        for c in 1..50 {
            let (q, r) = split_workers(c);
            assert_eq!((q.start, q.end, r.end), (0, r.start, c));
        }
    }
}
