//! The register workload (as Maelstrom's lin-kv): clients read, write and
//! compare-and-set keys of the broker's register view, each key a register in the
//! partition `crc32c(key) mod partitions`. The WGL checker judges each key against
//! the cas-register model (`linearizable`).
//!
//! Keys retire so the checker's work per key stays bounded: a worker draws keys from
//! a window of [`ACTIVE_KEYS`] keys and moves to the next window after
//! [`WRITES_PER_WINDOW`] writes and compare-and-sets of its own, so no key ever gets
//! more than `concurrency × WRITES_PER_WINDOW` writes. Every written value is unique
//! in the run (worker w writes w, w + c, w + 2c, ...).
//!
//! Each worker reads through one client and writes through another, as a Kafka
//! application has a consumer and a producer, each with its own cached metadata:
//! a client keeps sending to the node it believes leads a partition until an error
//! says otherwise. So a leader cut off from the cluster (but not from clients) is
//! still read from while a new leader takes writes — the stale reads that
//! `--linearizable-reads` prevents.
//!
//! Reads have no effect, so a read without an answer is recorded `fail` (as Jepsen's
//! etcd and lin-kv clients do); a write or cas without one is `info`, and the worker
//! carries on under a new process number with a fresh writing client.
//!
//! Once the cluster has healed, every key written is read once more
//! ([`final_reads`]): a key's last write, lost, is seen only by a read after it.

pub mod final_reads;

pub use final_reads::{FINAL_FIELD, Written};

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use checker::history::EventType;
use rand::Rng;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::client::{Client, ClientConfig, Outcome};
use crate::pacing::{Draws, Ended, Pacer, run_workers};
use crate::recorder::Recorder;
use crate::workload::{BoxFuture, Workload};

/// The topic the register workload uses.
pub const TOPIC: &str = "register";

/// The checker that judges this workload's operations, each key on its own against
/// the cas-register model (its key in results.json: the name `watermark check`
/// gives linearizability results).
pub const CHECKER: &str = "linearizable";

/// The operations (`f`) of this workload in a history.
pub const OPERATIONS: [&str; 3] = ["read", "write", "cas"];

/// Keys a worker draws from at a time.
pub const ACTIVE_KEYS: u64 = 6;
/// Writes (and cas) a worker makes before moving to the next window of keys.
pub const WRITES_PER_WINDOW: u64 = 8;
/// Shares of reads, writes and compare-and-sets, out of their sum.
const READ_WEIGHT: u32 = 2;
const WRITE_WEIGHT: u32 = 1;
const CAS_WEIGHT: u32 = 1;

/// One compare-and-set in this many is a probe of the API's contract ([`Probe`]).
pub const PROBE_EVERY: u64 = 32;

/// The field of a probe's invocation (and completion) that names its kind.
pub const PROBE_FIELD: &str = "probe";

/// A compare-and-set the API's contract refuses as an invalid request (docs/api.md:
/// `if_value` needs exactly one record with a key, sent to the key's partition),
/// sent now and then so that a broker accepting it is seen: its `ok` is a
/// `contract-violation` (the harness's `contract` verdict). Its invocation carries
/// [`PROBE_FIELD`]: the kind's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// The record twice: a conditional write of two records.
    TwoRecords,
    /// To a partition other than the key's, expecting the key unwritten there (as it
    /// is, so only the partition check can refuse it).
    OtherPartition,
}

impl Probe {
    const ALL: [Probe; 2] = [Probe::TwoRecords, Probe::OtherPartition];

    /// Its name in the history.
    pub fn name(self) -> &'static str {
        match self {
            Probe::TwoRecords => "two-records",
            Probe::OtherPartition => "other-partition",
        }
    }

    /// The kind a history names, if it is one.
    pub fn named(name: &str) -> Option<Probe> {
        Probe::ALL.into_iter().find(|p| p.name() == name)
    }

    /// What it asks that the contract refuses, in words.
    pub fn asks(self) -> &'static str {
        match self {
            Probe::TwoRecords => "`if_value` with two records",
            Probe::OtherPartition => "`if_value` sent to another partition than its key's",
        }
    }
}

/// The partition a key lives in: `crc32c(key) mod partitions` (docs/api.md).
pub fn partition_for_key(key: &str, partitions: u32) -> u32 {
    crc32c::crc32c(key.as_bytes()) % partitions.max(1)
}

/// How to run the register workload.
#[derive(Debug, Clone)]
pub struct RegisterConfig {
    pub partitions: u32,
    /// Number of concurrent workers of the campaign (of every workload it runs).
    pub concurrency: u32,
    /// The workers this workload runs, of `concurrency`: all of them (`0..concurrency`),
    /// or its share when the campaign also runs the queue.
    pub workers: std::ops::Range<u32>,
    /// Target operations per second over all `concurrency` workers (each worker
    /// aims at `rate / concurrency`).
    pub rate: f64,
    pub seed: u64,
    /// Read with `?linearizable=true`.
    pub linearizable_reads: bool,
    pub client: ClientConfig,
    /// The keys written so far (the final reads read them again).
    pub written: Written,
}

impl Workload for RegisterConfig {
    fn topics(&self) -> &'static [&'static str] {
        &[TOPIC]
    }

    fn linearizable_topics(&self) -> &'static [&'static str] {
        if self.linearizable_reads {
            &[TOPIC]
        } else {
            &[]
        }
    }

    fn run(
        &self,
        recorder: Arc<dyn Recorder>,
        stop: watch::Receiver<bool>,
    ) -> BoxFuture<'static, ()> {
        let config = self.clone();
        Box::pin(async move { run(&config, recorder, stop).await })
    }

    fn final_step(&self) -> Option<&'static str> {
        Some("reading every key written once more (final reads)")
    }

    fn first_look_step(&self) -> Option<&'static str> {
        Some("reading every key written before the leaders move (final reads)")
    }

    /// The final reads, before the leaders move (see [`Workload::first_look`]).
    fn first_look<'a>(
        &'a self,
        recorder: &'a dyn Recorder,
        first_free_process: u64,
        deadline: Instant,
    ) -> BoxFuture<'a, Result<(), String>> {
        self.finish(recorder, first_free_process, deadline)
    }

    /// The final reads, by processes `first_free_process` up to one per partition.
    fn finish<'a>(
        &'a self,
        recorder: &'a dyn Recorder,
        first_free_process: u64,
        deadline: Instant,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(final_reads::final_reads(
            self,
            recorder,
            first_free_process,
            deadline,
        ))
    }

    /// The register topic's final logs are compared for divergence (the harness's
    /// judge); the reads are judged on the history alone, so an incomplete end of
    /// the run leaves them as strong as ever.
    fn judges_final_logs(&self) -> bool {
        true
    }
}

/// One operation of the workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Read {
        key: String,
    },
    Write {
        key: String,
        value: u64,
    },
    /// A compare-and-set; with `probe`, one the contract refuses.
    Cas {
        key: String,
        expected: Value,
        new: u64,
        probe: Option<Probe>,
    },
}

impl Op {
    pub fn key(&self) -> &str {
        match self {
            Op::Read { key } | Op::Write { key, .. } | Op::Cas { key, .. } => key,
        }
    }

    /// The history's name and invocation value (docs/history.md).
    pub fn invocation(&self) -> (&'static str, Value) {
        match self {
            Op::Read { key } => ("read", json!({"key": key, "value": null})),
            Op::Write { key, value } => ("write", json!({"key": key, "value": value})),
            Op::Cas {
                key,
                expected,
                new,
                probe,
            } => {
                let mut v = json!({"key": key, "value": [expected, new]});
                if let Some(p) = probe {
                    v[PROBE_FIELD] = json!(p.name());
                }
                ("cas", v)
            }
        }
    }
}

/// A worker's seeded source of operations and pauses.
#[derive(Debug, Clone)]
pub struct Generator {
    /// The worker's operations and pauses.
    pub draws: Draws,
    worker: u32,
    concurrency: u32,
    /// Writes and cas drawn so far (they pick the window and the unique values).
    writes: u64,
    /// Compare-and-sets drawn so far (every [`PROBE_EVERY`]-th is a probe).
    cas: u64,
    /// Partitions of the topic: a probe to another partition needs two.
    partitions: u32,
}

impl Generator {
    pub fn new(seed: u64, worker: u32, concurrency: u32, rate: f64, partitions: u32) -> Self {
        Generator {
            draws: Draws::new(seed, worker, concurrency, rate),
            worker,
            concurrency: concurrency.max(1),
            writes: 0,
            cas: 0,
            partitions,
        }
    }

    /// The next operation; `known` is the value the worker last saw per key (the
    /// expected value of its compare-and-sets; a key it knows nothing of is
    /// expected unwritten).
    pub fn next_op(&mut self, known: &HashMap<String, Value>) -> Op {
        let window = self.writes / WRITES_PER_WINDOW;
        let slot = self.draws.ops.random_range(0..ACTIVE_KEYS);
        let key = format!("k{}", window * ACTIVE_KEYS + slot);
        let draw = self
            .draws
            .ops
            .random_range(0..READ_WEIGHT + WRITE_WEIGHT + CAS_WEIGHT);
        if draw < READ_WEIGHT {
            return Op::Read { key };
        }
        let value = u64::from(self.worker) + u64::from(self.concurrency) * self.writes;
        self.writes += 1;
        if draw < READ_WEIGHT + WRITE_WEIGHT {
            Op::Write { key, value }
        } else {
            // Probes take no draw of their own: the seed's other operations stay.
            self.cas += 1;
            let expected = known.get(&key).cloned().unwrap_or(Value::Null);
            let probe = match (self.cas % PROBE_EVERY, self.cas / PROBE_EVERY % 2) {
                (0, 1) if self.partitions > 1 => Some(Probe::OtherPartition),
                (0, _) => Some(Probe::TwoRecords),
                _ => None,
            };
            let expected = match probe {
                Some(Probe::OtherPartition) => Value::Null,
                _ => expected,
            };
            Op::Cas {
                key,
                expected,
                new: value,
                probe,
            }
        }
    }
}

/// Run the workers until `stop` turns true; operations in flight then complete
/// (bounded by the request timeout), so no invocation is left open.
pub async fn run(
    config: &RegisterConfig,
    recorder: Arc<dyn Recorder>,
    stop: watch::Receiver<bool>,
) {
    run_workers(config.workers.clone(), |w| {
        worker(config.clone(), w, recorder.clone(), stop.clone())
    })
    .await;
}

/// One worker; returns the last process number it used.
async fn worker(
    config: RegisterConfig,
    w: u32,
    recorder: Arc<dyn Recorder>,
    mut stop: watch::Receiver<bool>,
) -> u64 {
    let mut generator = Generator::new(
        config.seed,
        w,
        config.concurrency,
        config.rate,
        config.partitions,
    );
    let client_seed = config.seed ^ (u64::from(w) << 32);
    let mut process = u64::from(w);
    let mut clients = match (
        Client::new(config.client.clone(), !client_seed),
        Client::new(config.client.clone(), client_seed ^ process),
    ) {
        (Ok(reader), Ok(writer)) => Clients { reader, writer },
        _ => return process,
    };
    let mut known: HashMap<String, Value> = HashMap::new();
    let mut pacer = Pacer::new(generator.draws.delay());
    loop {
        if !pacer.wait(&mut stop).await {
            return process;
        }
        let op = generator.next_op(&known);
        let ended = perform(&mut clients, &config, &*recorder, process, &op, &mut known).await;
        if ended.crashed {
            // Jepsen: the old process is forever in doubt; carry on as a new one,
            // with a fresh writing client (no connections or leader cache carried
            // over). Reads were not in doubt: the reading client stays.
            process += u64::from(config.concurrency);
            match Client::new(config.client.clone(), client_seed ^ process) {
                Ok(c) => clients.writer = c,
                Err(_) => return process,
            }
        }
        let delay = generator.draws.delay();
        pacer.next(&ended, delay, || generator.draws.jitter());
    }
}

/// A worker's two clients: reads go through one, writes and cas through the other.
struct Clients {
    reader: Client,
    writer: Client,
}

/// Perform one operation and record its invocation and completion.
async fn perform(
    clients: &mut Clients,
    config: &RegisterConfig,
    recorder: &dyn Recorder,
    process: u64,
    op: &Op,
    known: &mut HashMap<String, Value>,
) -> Ended {
    let (f, invoke) = op.invocation();
    let key = op.key().to_string();
    let partition = partition_for_key(&key, config.partitions);
    if !matches!(op, Op::Read { .. }) {
        config.written.insert(&key);
    }
    recorder.record(process, EventType::Invoke, f, invoke.clone(), None);
    let outcome = match op {
        Op::Read { .. } => {
            match clients
                .reader
                .read_key(TOPIC, partition, &key, config.linearizable_reads)
                .await
            {
                Outcome::Ok(read) => {
                    known.insert(key.clone(), read.value.clone());
                    Outcome::Ok(json!({"key": key, "value": read.value}))
                }
                // A read changes nothing: one without an answer did not happen as
                // far as the register is concerned.
                Outcome::Fail(e) | Outcome::Info(e) => Outcome::Fail(e),
            }
        }
        Op::Write { value, .. } => clients
            .writer
            .write_key(TOPIC, partition, &key, json!(value), None, 1)
            .await
            .map(|_| {
                known.insert(key.clone(), json!(value));
                invoke.clone()
            }),
        Op::Cas {
            expected,
            new,
            probe,
            ..
        } => {
            let (partition, copies) = match probe {
                None => (partition, 1),
                Some(Probe::TwoRecords) => (partition, 2),
                Some(Probe::OtherPartition) => ((partition + 1) % config.partitions.max(1), 1),
            };
            let outcome = clients
                .writer
                .write_key(
                    TOPIC,
                    partition,
                    &key,
                    json!(new),
                    Some(expected.clone()),
                    copies,
                )
                .await;
            match (&outcome, probe) {
                (Outcome::Ok(_), None) => {
                    known.insert(key.clone(), json!(new));
                }
                // The value is not what we thought, or a probe was taken (the key
                // may hold `new`, or not): read it before the next cas. A probe
                // refused as the contract says leaves the key as it was.
                (Outcome::Ok(_), Some(_)) => {
                    known.remove(&key);
                }
                (Outcome::Fail(e), _) if e.code.as_deref() == Some("PRECONDITION_FAILED") => {
                    known.remove(&key);
                }
                _ => {}
            }
            outcome.map(|_| invoke.clone())
        }
    };
    match outcome {
        Outcome::Ok(v) => {
            recorder.record(process, EventType::Ok, f, v, None);
            Ended::OK
        }
        Outcome::Fail(e) => {
            let ended = Ended::failed(&e, false);
            recorder.record(process, EventType::Fail, f, invoke, Some(e.message));
            ended
        }
        Outcome::Info(e) => {
            let ended = Ended::failed(&e, true);
            recorder.record(process, EventType::Info, f, invoke, Some(e.message));
            ended
        }
    }
}

#[cfg(test)]
mod tests;
