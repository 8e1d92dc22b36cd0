//! The queue workload (as in Jepsen's Kafka test): producers send unique integers to
//! the topic's partitions; consumers poll each partition sequentially from their own
//! position and now and then seek back; at the end every partition is drained from
//! offset 0 (`final-poll`). The `queue` checker judges the history.
//!
//! Each worker draws its operations from its own seeded stream, so a worker's
//! sequence of choices is reproducible from the seed. Worker `w` of `concurrency`
//! starts as process `w`; one whose operation ended `info` continues under a new
//! process number (process + concurrency), as in Jepsen: the old process may still
//! be "in flight" forever. A campaign that also runs the register gives the queue
//! only some of the `concurrency` workers ([`QueueConfig::workers`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rand::Rng;
use serde_json::json;
use tokio::sync::watch;

use checker::history::EventType;

use crate::api::MAX_RECORDS;
use crate::client::{Client, ClientConfig, Failure, Outcome};
use crate::pacing::{Draws, Ended, Pacer, run_workers};
pub use crate::producer::Producers;
use crate::producer::{Policy, Producer};
use crate::recorder::Recorder;
use crate::workload::{BoxFuture, Workload};

pub mod burst;
mod drain;
mod sends;

pub use drain::final_drain;
use drain::records_value;
use sends::record_send;
pub use sends::{complete_batch, invoke_batch};

/// The topic the queue workload writes.
pub const TOPIC: &str = "queue";

/// The checker that judges this workload's operations (its key in results.json).
pub const CHECKER: &str = "queue";

/// The operations (`f`) of this workload in a history.
pub const OPERATIONS: [&str; 3] = ["send", "poll", "final-poll"];

/// Records asked for per poll (but see [`MAX_POLL_PROBABILITY`]).
const POLL_MAX_RECORDS: u32 = 100;
/// How often a poll asks for the API's maximum of records instead.
const MAX_POLL_PROBABILITY: f64 = 0.125;
/// How often such a poll asks for one record more than the maximum: a request
/// the broker must refuse as invalid (one poll in 64).
const OVER_MAX_PROBABILITY: f64 = 0.125;
/// Records asked for per final-poll: the API's maximum.
const DRAIN_MAX_RECORDS: u32 = MAX_RECORDS;
/// How often a poll first seeks back to an earlier offset.
const SEEK_BACK_PROBABILITY: f64 = 0.05;
/// Share of operations that are sends (the rest are polls).
const SEND_PROBABILITY: f64 = 0.5;

/// How to run the queue workload.
#[derive(Debug, Clone)]
pub struct QueueConfig {
    pub partitions: u32,
    /// How each worker's producer sends.
    pub producers: Producers,
    /// Producers that send as fast as the cluster answers during the load bursts
    /// ([`burst`]; 0: no bursts).
    pub burst_producers: u32,
    /// Number of concurrent workers of the campaign (of every workload it runs).
    pub concurrency: u32,
    /// The workers this workload runs, of `concurrency`: all of them (`0..concurrency`),
    /// or its share when the campaign also runs the register.
    pub workers: std::ops::Range<u32>,
    /// Target operations per second over all `concurrency` workers (each worker
    /// aims at `rate / concurrency`).
    pub rate: f64,
    pub seed: u64,
    pub client: ClientConfig,
}

impl Workload for QueueConfig {
    fn topics(&self) -> &'static [&'static str] {
        &[TOPIC]
    }

    fn lossless_topics(&self) -> &'static [&'static str] {
        &[TOPIC]
    }

    fn run(
        &self,
        recorder: std::sync::Arc<dyn Recorder>,
        stop: watch::Receiver<bool>,
    ) -> BoxFuture<'static, ()> {
        let config = self.clone();
        Box::pin(async move { run(&config, recorder, stop).await })
    }

    fn final_step(&self) -> Option<&'static str> {
        Some("draining every partition (final-poll)")
    }

    fn finish<'a>(
        &'a self,
        recorder: &'a dyn Recorder,
        first_free_process: u64,
        deadline: Instant,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            final_drain(self, recorder, first_free_process, deadline)
                .await
                .map(|_| ())
        })
    }

    /// The queue analysis judges the history against the replicas' final logs.
    fn judges_final_logs(&self) -> bool {
        true
    }
}

/// One operation of the workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Send {
        partition: u32,
        value: u64,
    },
    Poll {
        partition: u32,
        offset: u64,
        /// Records asked for at most.
        max_records: u32,
    },
}

/// A worker's seeded source of operations and pauses.
#[derive(Debug, Clone)]
pub struct Generator {
    /// The worker's operations and pauses.
    pub draws: Draws,
    worker: u32,
    concurrency: u32,
    partitions: u32,
    sends: u64,
}

impl Generator {
    pub fn new(seed: u64, worker: u32, concurrency: u32, partitions: u32, rate: f64) -> Self {
        Generator {
            draws: Draws::new(seed, worker, concurrency, rate),
            worker,
            concurrency: concurrency.max(1),
            partitions: partitions.max(1),
            sends: 0,
        }
    }

    /// The topic has grown to `partitions` (more partitions are drawn from once
    /// known; never fewer).
    pub fn grow_to(&mut self, partitions: u32) {
        self.partitions = self.partitions.max(partitions);
    }

    /// The next operation; `offsets` is the worker's position in each partition.
    pub fn next_op(&mut self, offsets: &mut [u64]) -> Op {
        let partition = self.draws.ops.random_range(0..self.partitions);
        if self.draws.ops.random_bool(SEND_PROBABILITY) {
            // Unique across the run: worker w sends w, w + c, w + 2c, ...
            let value = u64::from(self.worker) + u64::from(self.concurrency) * self.sends;
            self.sends += 1;
            Op::Send { partition, value }
        } else {
            let pos = &mut offsets[partition as usize];
            if *pos > 0 && self.draws.ops.random_bool(SEEK_BACK_PROBABILITY) {
                *pos = self.draws.ops.random_range(0..=*pos);
            }
            let max_records = match self.draws.ops.random_bool(MAX_POLL_PROBABILITY) {
                true if self.draws.ops.random_bool(OVER_MAX_PROBABILITY) => MAX_RECORDS + 1,
                true => MAX_RECORDS,
                false => POLL_MAX_RECORDS,
            };
            Op::Poll {
                partition,
                offset: *pos,
                max_records,
            }
        }
    }
}

/// Run the workers until `stop` turns true. An operation in flight when it does is
/// allowed to complete (bounded by the request timeout), so no invocation is left
/// open.
pub async fn run(
    config: &QueueConfig,
    recorder: std::sync::Arc<dyn Recorder>,
    stop: watch::Receiver<bool>,
) {
    let partitions = Arc::new(AtomicU32::new(config.partitions));
    let watcher = tokio::spawn(watch_partitions(
        config.clone(),
        partitions.clone(),
        stop.clone(),
    ));
    let started = Instant::now();
    let workers = run_workers(config.workers.clone(), |w| {
        let partitions = partitions.clone();
        worker(
            config.clone(),
            w,
            recorder.clone(),
            stop.clone(),
            partitions,
        )
    });
    let bursts = run_workers(0..config.burst_producers, |b| {
        burst::burst_producer(
            config.clone(),
            b,
            recorder.clone(),
            stop.clone(),
            partitions.clone(),
            started,
        )
    });
    tokio::join!(workers, bursts);
    watcher.abort();
}

/// How often the workload looks for partitions added to its topic (a Kafka
/// client's metadata refresh).
const PARTITIONS_REFRESH: Duration = Duration::from_secs(1);

/// Keep `partitions` at the topic's partition count as the metadata shows it, so
/// the workers send to and poll partitions added while the campaign runs; never
/// fewer than it was.
async fn watch_partitions(
    config: QueueConfig,
    partitions: Arc<AtomicU32>,
    mut stop: watch::Receiver<bool>,
) {
    let Ok(mut client) = Client::new(config.client.clone(), config.seed ^ 0x7061_7274) else {
        return;
    };
    while !*stop.borrow() {
        if let Some(n) = client.partition_count(TOPIC).await {
            partitions.fetch_max(n, Ordering::Relaxed);
        }
        let _ = tokio::time::timeout(PARTITIONS_REFRESH, stop.changed()).await;
    }
}

/// One worker; returns the last process number it used.
async fn worker(
    config: QueueConfig,
    w: u32,
    recorder: std::sync::Arc<dyn Recorder>,
    mut stop: watch::Receiver<bool>,
    partitions: Arc<AtomicU32>,
) -> u64 {
    let mut generator = Generator::new(
        config.seed,
        w,
        config.concurrency,
        config.partitions,
        config.rate,
    );
    let client_seed = config.seed ^ (u64::from(w) << 32);
    let mut process = u64::from(w);
    let mut client = match Client::new(config.client.clone(), client_seed ^ process) {
        Ok(c) => c,
        Err(_) => return process,
    };
    let policy: Policy = config.producers.policy(w - config.workers.start);
    let mut producer = Producer::new(policy);
    let mut offsets = vec![0u64; config.partitions as usize];
    let mut pacer = Pacer::new(generator.draws.delay());
    loop {
        if !pacer.wait(&mut stop).await {
            return process;
        }
        let known = partitions.load(Ordering::Relaxed);
        if known as usize > offsets.len() {
            generator.grow_to(known);
            offsets.resize(known as usize, 0);
        }
        let op = generator.next_op(&mut offsets);
        let ended = match op {
            Op::Send { partition, value } => {
                let jitter = || generator.draws.jitter();
                let values = [value];
                let sent = producer.send(&mut client, TOPIC, partition, &values, &stop, jitter);
                record_send(&*recorder, process, partition, value, sent).await
            }
            Op::Poll {
                partition,
                offset,
                max_records,
            } => {
                poll(
                    &mut client,
                    &*recorder,
                    process,
                    partition,
                    offset,
                    max_records,
                    &mut offsets,
                )
                .await
            }
        };
        if ended.crashed {
            // Jepsen: the old process is forever in doubt; carry on as a new one
            // with a fresh client (no connections or leader cache carried over).
            process += u64::from(config.concurrency);
            match Client::new(config.client.clone(), client_seed ^ process) {
                Ok(c) => client = c,
                Err(_) => return process,
            }
            // And a new producer id: which sequence the partitions expect is unknown.
            producer = Producer::new(policy);
        }
        let delay = generator.draws.delay();
        pacer.next(&ended, delay, || generator.draws.jitter());
    }
}

/// Poll one partition from `offset` for up to `max_records`, advancing the
/// worker's position.
async fn poll(
    client: &mut Client,
    recorder: &dyn Recorder,
    process: u64,
    partition: u32,
    offset: u64,
    max_records: u32,
    offsets: &mut [u64],
) -> Ended {
    let invoke = json!({"partition": partition, "offset": offset, "max_records": max_records});
    recorder.record(process, EventType::Invoke, "poll", invoke.clone(), None);
    match client.fetch(TOPIC, partition, offset, max_records).await {
        Outcome::Ok(fetched) => {
            if let Some(last) = fetched.records.last() {
                offsets[partition as usize] = last.offset + 1;
            }
            recorder.record(
                process,
                EventType::Ok,
                "poll",
                records_value(partition, &fetched),
                None,
            );
            Ended::OK
        }
        Outcome::Fail(f) => {
            let ended = Ended::failed(&f, false);
            let refused = refusal_value(invoke, &f);
            if let Some(hw) = f.high_watermark {
                // Our position is past the end (the log was truncated, or a new
                // leader is behind): start again from its high watermark.
                offsets[partition as usize] = hw;
            }
            recorder.record(process, EventType::Fail, "poll", refused, Some(f.message));
            ended
        }
        Outcome::Info(f) => {
            let ended = Ended::failed(&f, true);
            recorder.record(process, EventType::Info, "poll", invoke, Some(f.message));
            ended
        }
    }
}

/// A failed poll's completion: its invocation, with the high watermark an
/// `OFFSET_OUT_OF_RANGE` refusal gave (docs/history.md), so that a refusal of an
/// offset the answer itself says is not past the end can be told.
pub(crate) fn refusal_value(mut invoke: serde_json::Value, f: &Failure) -> serde_json::Value {
    if let Some(hw) = f.high_watermark {
        invoke["high_watermark"] = json!(hw);
    }
    invoke
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(seed: u64, worker: u32, n: usize) -> Vec<Op> {
        let mut g = Generator::new(seed, worker, 4, 3, 200.0);
        let mut offsets = vec![0u64; 3];
        (0..n)
            .map(|_| {
                let op = g.next_op(&mut offsets);
                // Pretend every poll read ten records.
                if let Op::Poll {
                    partition, offset, ..
                } = op
                {
                    offsets[partition as usize] = offset + 10;
                }
                op
            })
            .collect()
    }

    #[test]
    fn a_seed_fixes_each_workers_operations() {
        assert_eq!(ops(7, 1, 200), ops(7, 1, 200));
        assert_ne!(ops(7, 1, 200), ops(8, 1, 200));
        assert_ne!(ops(7, 1, 200), ops(7, 2, 200));
    }

    #[test]
    fn sent_values_are_unique_across_workers() {
        let mut seen = std::collections::HashSet::new();
        for w in 0..4 {
            for op in ops(3, w, 500) {
                if let Op::Send { value, .. } = op {
                    assert!(seen.insert(value), "value {value} sent twice");
                }
            }
        }
        assert!(seen.len() > 500);
    }

    #[test]
    fn consumers_sometimes_seek_back() {
        let mut g = Generator::new(11, 0, 1, 1, 100.0);
        let mut offsets = vec![0u64];
        let (mut polls, mut seeks) = (0, 0);
        for _ in 0..2000 {
            let before = offsets[0];
            if let Op::Poll { offset, .. } = g.next_op(&mut offsets) {
                polls += 1;
                if offset < before {
                    seeks += 1;
                }
                offsets[0] = offset + 10;
            }
        }
        // About 5% of polls seek back; the bounds leave room for the seed's luck.
        assert!(
            seeks > polls / 50 && seeks < polls / 10,
            "{seeks} of {polls}"
        );
    }

    #[test]
    fn one_poll_in_eight_asks_for_the_api_maximum_and_some_for_one_more() {
        let mut g = Generator::new(5, 0, 1, 1, 100.0);
        let mut offsets = vec![0u64];
        let (mut polls, mut most, mut over) = (0, 0, 0);
        for _ in 0..8000 {
            if let Op::Poll { max_records, .. } = g.next_op(&mut offsets) {
                polls += 1;
                match max_records {
                    MAX_RECORDS => most += 1,
                    n if n == MAX_RECORDS + 1 => over += 1,
                    n => assert_eq!(n, POLL_MAX_RECORDS),
                }
            }
        }
        // 12.5 % of polls, one in eight of them one record over; the bounds leave
        // room for the seed's luck.
        let asked = most + over;
        assert!(
            asked > polls / 12 && asked < polls / 6,
            "{asked} of {polls}"
        );
        assert!(over > asked / 16 && over < asked / 4, "{over} of {asked}");
    }

    #[test]
    fn delays_average_to_the_rate() {
        let mut g = Generator::new(1, 0, 4, 2, 200.0);
        let total: Duration = (0..4000).map(|_| g.draws.delay()).sum();
        let mean = total.as_secs_f64() / 4000.0;
        // 200 ops/s over 4 workers: 50 ops/s each, 20 ms apart.
        assert!((mean - 0.020).abs() < 0.002, "mean delay {mean}");
    }
}
