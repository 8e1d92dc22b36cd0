//! How a workload's worker paces itself, shared by every workload: Jepsen's stagger
//! between operations, Kafka's reconnect backoff while the cluster cannot be reached
//! (`reconnect.backoff.ms` 50 → `reconnect.backoff.max.ms` 1000), and how an
//! operation ended as far as pacing and process numbers care.
//!
//! The random draws come from a worker's [`Draws`], which its workload's generator
//! owns: the stagger shares the stream the generator draws operations from, so a
//! seed gives each worker one sequence of operations and pauses, and the backoff's
//! jitter has a stream of its own, so failures do not shift that sequence.

use std::future::Future;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::watch;

use crate::client::Failure;

/// First pause after the cluster could not be reached; doubles while it stays so.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(50);
const RECONNECT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// A worker's seeded randomness.
#[derive(Debug, Clone)]
pub struct Draws {
    /// The stream of operations (drawn by the workload's generator) and the stagger.
    pub ops: ChaCha8Rng,
    backoff: ChaCha8Rng,
    /// Mean pause between this worker's operations.
    mean_delay: Duration,
}

impl Draws {
    /// Worker `worker` of `concurrency`, which share `rate` operations per second.
    pub fn new(seed: u64, worker: u32, concurrency: u32, rate: f64) -> Draws {
        let mut ops = ChaCha8Rng::seed_from_u64(seed);
        ops.set_stream(u64::from(worker) + 1);
        let mut backoff = ChaCha8Rng::seed_from_u64(seed);
        backoff.set_stream((1 << 32) + u64::from(worker));
        let per_worker = (rate / f64::from(concurrency.max(1))).max(1e-3);
        Draws {
            ops,
            backoff,
            mean_delay: Duration::from_secs_f64(1.0 / per_worker),
        }
    }

    /// A pause drawn uniformly from [0, 2 × mean] (Jepsen's stagger).
    pub fn delay(&mut self) -> Duration {
        self.mean_delay.mul_f64(self.ops.random_range(0.0..2.0))
    }

    /// A factor in [0.5, 1.5) to spread backoffs.
    pub fn jitter(&mut self) -> f64 {
        self.backoff.random_range(0.5..1.5)
    }
}

/// How an operation ended, as far as the worker cares.
pub struct Ended {
    /// Unknown outcome of an operation that may have changed state: the process is
    /// done for (Jepsen), and the worker carries on under a new process number.
    pub crashed: bool,
    /// The client got no answer from the cluster (connection lost, timed out, no
    /// leader known), rather than a broker's error answer.
    pub unreachable: bool,
}

impl Ended {
    pub const OK: Ended = Ended {
        crashed: false,
        unreachable: false,
    };

    /// The worse of two endings (of operations run together): crashed if either
    /// is, unreachable if either was.
    pub fn worse(self, other: Ended) -> Ended {
        Ended {
            crashed: self.crashed || other.crashed,
            unreachable: self.unreachable || other.unreachable,
        }
    }

    /// An operation that failed with `f`; `crashed` when its outcome is unknown.
    pub fn failed(f: &Failure, crashed: bool) -> Ended {
        Ended {
            crashed,
            unreachable: f.code.is_none(),
        }
    }
}

/// The reconnect backoff after `streak` earlier pauses in a row: 50 ms doubling up
/// to 1 s, times `jitter` (a factor around 1). A producer's retries wait it too.
pub fn backoff(streak: u32, jitter: f64) -> Duration {
    RECONNECT_BACKOFF
        .saturating_mul(1 << streak.min(5))
        .min(RECONNECT_BACKOFF_MAX)
        .mul_f64(jitter)
}

/// When a worker's next operation is due.
pub struct Pacer {
    next_at: Instant,
    unreachable_streak: u32,
}

impl Pacer {
    /// The first operation is due after `first_delay`.
    pub fn new(first_delay: Duration) -> Pacer {
        Pacer {
            next_at: Instant::now() + first_delay,
            unreachable_streak: 0,
        }
    }

    /// Wait until the next operation is due; false once `stop` has turned true.
    pub async fn wait(&self, stop: &mut watch::Receiver<bool>) -> bool {
        let now = Instant::now();
        if self.next_at > now {
            let pause = tokio::time::sleep(self.next_at - now);
            tokio::select! {
                _ = pause => {}
                _ = stop.wait_for(|s| *s) => {}
            }
        }
        !*stop.borrow()
    }

    /// Schedule the operation after one that ended `ended`: `delay` (the stagger)
    /// after the previous one's slot, and no sooner than the backoff while the
    /// cluster cannot be reached. `jitter` (a factor around 1) is drawn only then.
    pub fn next(&mut self, ended: &Ended, delay: Duration, jitter: impl FnOnce() -> f64) {
        let pause = if ended.unreachable {
            let pause = backoff(self.unreachable_streak, jitter());
            self.unreachable_streak += 1;
            pause
        } else {
            self.unreachable_streak = 0;
            Duration::ZERO
        };
        self.next_at = (self.next_at + delay).max(Instant::now() + pause);
    }
}

/// Run `worker(w)` for every `w` of `workers` concurrently until every one returns.
pub async fn run_workers<F, Fut>(workers: std::ops::Range<u32>, worker: F)
where
    F: Fn(u32) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    let mut tasks = tokio::task::JoinSet::new();
    for w in workers {
        tasks.spawn(worker(w));
    }
    while tasks.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn due_in(p: &Pacer) -> Duration {
        p.next_at.saturating_duration_since(Instant::now())
    }

    #[test]
    fn backoff_doubles_while_unreachable_up_to_the_cap_and_resets_on_an_answer() {
        let unreachable = Ended {
            crashed: false,
            unreachable: true,
        };
        let mut p = Pacer::new(Duration::ZERO);
        p.next(&unreachable, Duration::ZERO, || 1.0);
        assert!(due_in(&p) <= RECONNECT_BACKOFF);
        assert!(due_in(&p) > RECONNECT_BACKOFF / 2);
        for _ in 0..10 {
            p.next(&unreachable, Duration::ZERO, || 1.0);
        }
        assert!(due_in(&p) <= RECONNECT_BACKOFF_MAX);
        assert!(due_in(&p) > RECONNECT_BACKOFF_MAX / 2);
        let mut drawn = false;
        let mut q = Pacer::new(Duration::ZERO);
        q.next(&Ended::OK, Duration::ZERO, || {
            drawn = true;
            1.0
        });
        assert!(!drawn, "no jitter is drawn without a backoff");
        assert_eq!(due_in(&q), Duration::ZERO);
        p.next(&Ended::OK, Duration::ZERO, || 1.0);
        assert_eq!(p.unreachable_streak, 0);
    }
}
