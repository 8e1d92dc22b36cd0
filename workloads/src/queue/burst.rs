//! Load bursts: the queue workload's rate varies over a campaign. Between steady
//! phases at the campaign's rate come bursts in which extra producers send as fast
//! as the cluster answers, each with up to [`MAX_IN_FLIGHT`] batches of up to
//! [`MAX_BATCH`] values in flight to one partition, as Kafka's producer has them.
//! So the leader's log grows by many records between two fetches: followers'
//! fetches and consumers' polls carry many records, produce requests carry several
//! (an idempotent producer's numbered from its sequence on, its batches arriving
//! in any order), the purgatory holds many produce requests, and the paths only a
//! busy partition reaches run.
//!
//! Each burst opens, on the first burst producer, with one batch of the API's
//! maximum of records ([`MAX_RECORDS`], a bulk batch): the largest append, FETCH
//! and purgatory entry the contract allows, and a request a limit off by one
//! refuses. The second burst's bulk batch holds one record more: a request the
//! broker must refuse as invalid.
//!
//! When the bursts come is drawn from the seed ([`Bursts`]): the first a few
//! seconds in, then one every 8–20 s, each 2–5 s long. Burst producers are
//! producers like the workload's own (Kafka's default producer on every third one,
//! as [`crate::producer::Producers`] says) with process numbers and values of their
//! own, far above the workers': a burst's sends are recorded as any other.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::watch;

use super::sends::{complete_batch, ended, invoke_batch};
use super::{QueueConfig, TOPIC};
use crate::api::MAX_RECORDS;
use crate::client::Client;
use crate::pacing::{Draws, Ended, Pacer};
use crate::producer::{MAX_IN_FLIGHT, Producer, Sent};
use crate::recorder::Recorder;

/// The first process number of the burst producers ([`process`]).
pub const PROCESS_BASE: u64 = 1 << 20;

/// The most values a burst producer sends in one batch (one produce request), as
/// Kafka's producer batches the records that accumulate while a request is out:
/// the size is drawn from 1 to this for each request.
pub const MAX_BATCH: u32 = 8;

/// The values a burst producer has in flight at most: [`MAX_IN_FLIGHT`] batches
/// of [`MAX_BATCH`]. Batch `j`'s `k`-th value is slot `j × MAX_BATCH + k`.
pub const SLOTS: u32 = MAX_IN_FLIGHT as u32 * MAX_BATCH;

/// The process of slot `slot` (of [`SLOTS`]) of burst producer `b` of `n` in its
/// `generation` (which moves on after each `info`): each value in flight is an
/// operation of its own, so a producer has a process per slot —
/// `PROCESS_BASE + SLOTS × (b + n × generation) + slot`.
pub fn process(b: u32, n: u32, generation: u64, slot: u32) -> u64 {
    let producer = u64::from(b) + u64::from(n.max(1)) * generation;
    PROCESS_BASE + u64::from(SLOTS) * producer + u64::from(slot)
}

/// The first process number of the bulk batches' values ([`bulk_process`]), far
/// above every burst producer's slots.
pub const BULK_PROCESS_BASE: u64 = 1 << 40;

/// The process of value `k` of burst producer `b`'s (of `n`) `bulk`-th bulk batch:
/// each value is an operation of its own, and each bulk batch has processes of its
/// own, as its values may end in doubt.
pub fn bulk_process(b: u32, n: u32, bulk: u64, k: u32) -> u64 {
    let batch = u64::from(b) + u64::from(n.max(1)) * bulk;
    BULK_PROCESS_BASE + u64::from(MAX_RECORDS + 1) * batch + u64::from(k)
}

/// The size of the `bulk`-th bulk batch (from 0): the API's maximum, but the
/// second's, one record over it.
pub fn bulk_size(bulk: u64) -> u32 {
    match bulk {
        1 => MAX_RECORDS + 1,
        _ => MAX_RECORDS,
    }
}

/// The first value burst producers send: producer `b` of `n` sends
/// `VALUE_BASE + b`, `VALUE_BASE + b + n`, … — unique across the run.
pub const VALUE_BASE: u64 = 1 << 40;

/// When the bursts come, from the workload's start: a seeded, endless sequence.
#[derive(Debug, Clone)]
pub struct Bursts {
    rng: ChaCha8Rng,
    /// The end of the last burst drawn.
    end: Duration,
}

impl Bursts {
    pub fn new(seed: u64) -> Bursts {
        Bursts {
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6275_7273_7473),
            end: Duration::ZERO,
        }
    }

    /// The next burst: its start and end from the workload's start.
    pub fn next_burst(&mut self) -> (Duration, Duration) {
        let gap = if self.end.is_zero() {
            self.rng.random_range(4_000..8_000)
        } else {
            self.rng.random_range(8_000..20_000)
        };
        let start = self.end + Duration::from_millis(gap);
        self.end = start + Duration::from_millis(self.rng.random_range(2_000..5_000));
        (start, self.end)
    }
}

/// The burst a producer is in or waits for, against the workload's start.
#[derive(Debug)]
pub struct Schedule {
    started: Instant,
    bursts: Bursts,
    current: (Duration, Duration),
    /// The start of the last burst [`Schedule::opens_burst`] said yes to.
    opened: Option<Duration>,
}

impl Schedule {
    pub fn new(seed: u64, started: Instant) -> Schedule {
        let mut bursts = Bursts::new(seed);
        let current = bursts.next_burst();
        Schedule {
            started,
            bursts,
            current,
            opened: None,
        }
    }

    /// Whether this is the first time it is asked during the burst on now (or the
    /// next one): the first group of a burst.
    pub fn opens_burst(&mut self) -> bool {
        let start = self.current.0;
        self.opened.replace(start) != Some(start)
    }

    /// How long until the next burst starts (zero: one is on now).
    pub fn until_burst(&mut self) -> Duration {
        let now = self.started.elapsed();
        while now >= self.current.1 {
            self.current = self.bursts.next_burst();
        }
        self.current.0.saturating_sub(now)
    }
}

/// Burst producer `b`: during each load burst ([`Schedule`]) it sends
/// groups of 1 to [`MAX_IN_FLIGHT`] batches at once to a partition drawn from its
/// own stream, each batch of 1 to [`MAX_BATCH`] values over a connection of
/// its own (the counts drawn per group), one group after the other; between bursts
/// it waits. Each value is its own operation, of its own process (its slot in the
/// group, [`process`]). Returns the last generation it reached.
pub(super) async fn burst_producer(
    config: QueueConfig,
    b: u32,
    recorder: std::sync::Arc<dyn Recorder>,
    mut stop: watch::Receiver<bool>,
    partitions: Arc<AtomicU32>,
    started: Instant,
) -> u64 {
    let n = u64::from(config.burst_producers.max(1));
    let mut schedule = Schedule::new(config.seed, started);
    // Moves on after each `info`, with every slot's process.
    let mut generation = 0u64;
    let client_seed = config.seed ^ 0x6275_7273_7400_0000;
    let connect = |generation| -> Option<Vec<Client>> {
        (0..MAX_IN_FLIGHT as u32)
            .map(|j| {
                let slot = j * MAX_BATCH;
                let process = process(b, config.burst_producers, generation, slot);
                Client::new(config.client.clone(), client_seed ^ process).ok()
            })
            .collect()
    };
    let Some(mut clients) = connect(generation) else {
        return generation;
    };
    let policy = config.producers.policy(b);
    let mut producer = Producer::new(policy);
    let mut draws = Draws::new(config.seed ^ 0x0062_7572_7374, b, 1, 1.0);
    let mut pacer = Pacer::new(Duration::ZERO);
    let mut sends = 0u64;
    let mut bulks = 0u64;
    loop {
        let wait = schedule.until_burst();
        if !wait.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.wait_for(|s| *s) => {}
            }
        }
        if !pacer.wait(&mut stop).await {
            return generation;
        }
        let partition = draws
            .ops
            .random_range(0..partitions.load(Ordering::Relaxed).max(1));
        let in_flight = draws.ops.random_range(1..=MAX_IN_FLIGHT as u32);
        // Drawn even when a bulk batch replaces them, so that the seed's stream of
        // groups is the same whatever the bursts' timing.
        let sizes: Vec<u32> = (0..in_flight)
            .map(|_| draws.ops.random_range(1..=MAX_BATCH))
            .collect();
        // The first producer opens each burst with a bulk batch, alone.
        let bulk = (b == 0 && schedule.opens_burst()).then(|| {
            bulks += 1;
            bulks - 1
        });
        let sizes = match bulk {
            Some(i) => vec![bulk_size(i)],
            None => sizes,
        };
        let group: Vec<Vec<(u64, u64)>> = (0u32..)
            .zip(&sizes)
            .map(|(j, &size)| {
                (0..size)
                    .map(|k| {
                        let process = match bulk {
                            Some(i) => bulk_process(b, config.burst_producers, i, k),
                            None => {
                                process(b, config.burst_producers, generation, j * MAX_BATCH + k)
                            }
                        };
                        let value = VALUE_BASE + u64::from(b) + n * sends;
                        sends += 1;
                        (process, value)
                    })
                    .collect()
            })
            .collect();
        let values: Vec<Vec<u64>> = group
            .iter()
            .map(|batch| batch.iter().map(|&(_, v)| v).collect())
            .collect();
        group
            .iter()
            .for_each(|batch| invoke_batch(&*recorder, batch, partition));
        let seed = draws.ops.random();
        let complete = |j: usize, sent: &Sent| {
            complete_batch(&*recorder, &group[j], partition, sent);
        };
        let sent = producer
            .send_group(
                &mut clients,
                TOPIC,
                partition,
                &values,
                &stop,
                seed,
                complete,
            )
            .await;
        let ended = sent.iter().map(ended).fold(Ended::OK, Ended::worse);
        if ended.crashed {
            generation += 1;
            match connect(generation) {
                Some(c) => clients = c,
                None => return generation,
            }
            producer = Producer::new(policy);
        }
        pacer.next(&ended, Duration::ZERO, || draws.jitter());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_come_every_few_seconds_for_a_few_seconds_the_same_for_a_seed() {
        let mut a = Bursts::new(9);
        let mut b = Bursts::new(9);
        let mut last_end = Duration::ZERO;
        for i in 0..20 {
            let (start, end) = a.next_burst();
            assert_eq!((start, end), b.next_burst());
            let gap = start - last_end;
            let first = Duration::from_secs(4)..Duration::from_secs(8);
            let later = Duration::from_secs(8)..Duration::from_secs(20);
            assert!(if i == 0 { first } else { later }.contains(&gap), "{gap:?}");
            assert!((Duration::from_secs(2)..Duration::from_secs(5)).contains(&(end - start)));
            last_end = end;
        }
        assert_ne!(Bursts::new(10).next_burst(), Bursts::new(9).next_burst());
    }

    #[test]
    fn every_slot_of_every_producer_and_generation_is_a_process_of_its_own() {
        let mut seen = std::collections::HashSet::new();
        for generation in 0..4 {
            for b in 0..16 {
                for slot in 0..SLOTS {
                    let p = process(b, 16, generation, slot);
                    assert!(p >= PROCESS_BASE && seen.insert(p), "{p} twice");
                }
            }
        }
        assert_eq!(process(0, 16, 0, 0), PROCESS_BASE);
        let last_slot = process(15, 16, 1 << 30, SLOTS - 1);
        assert!(last_slot < bulk_process(0, 16, 0, 0));
        for bulk in 0..3 {
            for b in 0..4 {
                for k in [0, 1, MAX_RECORDS] {
                    assert!(seen.insert(bulk_process(b, 4, bulk, k)));
                }
            }
        }
    }

    #[test]
    fn the_second_bulk_batch_is_one_record_over_the_maximum() {
        let sizes: Vec<u32> = (0..4).map(bulk_size).collect();
        let most = MAX_RECORDS;
        assert_eq!(sizes, [most, most + 1, most, most]);
    }

    #[test]
    fn a_burst_is_opened_once() {
        let mut s = Schedule::new(1, Instant::now());
        assert!(s.opens_burst());
        assert!(!s.opens_burst());
        s.current = s.bursts.next_burst();
        assert!(s.opens_burst());
        assert!(!s.opens_burst());
    }

    #[test]
    fn a_schedule_says_how_long_until_the_burst_and_zero_during_it() {
        let long_ago = Instant::now().checked_sub(Duration::from_secs(3600));
        let Some(started) = long_ago else { return };
        let mut s = Schedule::new(1, started);
        // An hour in, the schedule has moved on to a burst around now.
        assert!(s.until_burst() < Duration::from_secs(20));
        let mut fresh = Schedule::new(1, Instant::now());
        let wait = fresh.until_burst();
        assert!((Duration::from_secs(3)..Duration::from_secs(8)).contains(&wait));
    }
}
