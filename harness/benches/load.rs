//! The most acknowledged operations per second the harness drives into a cluster,
//! against the broker alone, measured in the same run on the same three brokers:
//! the load bursts of a campaign can reach no more than the first figure.
//!
//! - **broker alone**: closed-loop producers (`acks=all`, one send in flight each)
//!   straight to the brokers' own ports, nothing recorded;
//! - **through the harness**: the same producers as a campaign's burst producers
//!   run — through the link proxies every client byte passes, each send recorded as
//!   an invocation and a completion in a history file (`history.jsonl`), as Kafka's
//!   default producer (idempotent, retrying) on every other one.
//!
//! - **with batches in flight**: both again, each producer sending as a burst
//!   producer does at most — five batches of eight values at once, each over a
//!   connection of its own (through the harness: an idempotent producer's group,
//!   every value recorded as a send of its own) — counting acknowledged values;
//! - **broker alone on the fault filesystem**: the first measurement again, on a
//!   second cluster whose data dirs are fault filesystems (docs/faults.md): what
//!   FUSE and the journal of un-fsynced writes cost the broker.
//!
//! `cargo bench -p watermark --bench load` (BENCH_SECS sets each measurement's
//! length, default 10; BENCH_CLIENTS the producers, default 16 as
//! `--burst-producers`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::watch;
use watermark::proc::Proc;
use watermark::store::{History, HistoryFile, Tally};
use watermark::system::broker::{Cluster, ClusterConfig};
use workloads::client::{Acks, Client, ClientConfig, Outcome};
use workloads::producer::{MAX_IN_FLIGHT, Producer, Producers, Sent};
use workloads::queue::burst::MAX_BATCH;
use workloads::queue::{complete_batch, invoke_batch};
use workloads::recorder::Recorder;

/// The broker built in this profile (cargo bench builds release).
fn broker_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args([
            "build",
            "--release",
            "-p",
            "broker",
            "--bin",
            "broker",
            "--target-dir",
        ])
        .arg(profile_dir.parent().unwrap())
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .status()
        .expect("run cargo build -p broker");
    assert!(status.success(), "cargo build -p broker failed");
    profile_dir.join("broker")
}

fn env_or(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The measured window: from a second's warmup on, `secs` long.
fn window(secs: f64) -> (Instant, Instant) {
    let from = Instant::now() + Duration::from_secs(1);
    (from, from + Duration::from_secs_f64(secs))
}

/// The producers' acknowledged operations per second over `secs`, and their
/// failures.
async fn total(tasks: Vec<tokio::task::JoinHandle<(u64, u64)>>, secs: f64) -> (f64, u64) {
    let (mut ok, mut failed) = (0, 0);
    for t in tasks {
        let (o, f) = t.await.unwrap();
        ok += o;
        failed += f;
    }
    (ok as f64 / secs, failed)
}

/// `clients` producers for `secs` (after a second's warmup) on `nodes`; with a
/// `recorder`, each send recorded and sent as the campaign's producers send.
/// Returns the acknowledged sends per second and the sends that failed.
async fn measure(
    nodes: BTreeMap<i32, SocketAddr>,
    clients: u32,
    secs: f64,
    recorder: Option<Arc<dyn Recorder>>,
) -> (f64, u64) {
    let (from, end) = window(secs);
    let (_stop_tx, stop) = watch::channel(false);
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (nodes, recorder, stop) = (nodes.clone(), recorder.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let config = ClientConfig::new(nodes, None);
            let mut client = Client::new(config, u64::from(c)).unwrap();
            let mut producer = Producer::new(Producers::KafkaDefault.policy(c));
            let (mut ok, mut failed, mut n) = (0u64, 0u64, 0u64);
            loop {
                let now = Instant::now();
                if now >= end {
                    break;
                }
                let value = u64::from(c) + u64::from(clients) * n;
                n += 1;
                let partition = (n % 2) as u32;
                let done = match &recorder {
                    None => matches!(
                        client
                            .produce("queue", partition, json!(value), Acks::All)
                            .await,
                        Outcome::Ok(_)
                    ),
                    Some(r) => {
                        let batch = [(u64::from(c), value)];
                        invoke_batch(&**r, &batch, partition);
                        let sent = producer
                            .send(&mut client, "queue", partition, &[value], &stop, || 1.0)
                            .await;
                        complete_batch(&**r, &batch, partition, &sent);
                        matches!(sent.outcome, Outcome::Ok(_))
                    }
                };
                if now >= from {
                    if done {
                        ok += 1;
                    } else {
                        failed += 1;
                    }
                }
            }
            (ok, failed)
        }));
    }
    total(tasks, secs).await
}

/// As [`measure`], each producer sending groups of [`MAX_IN_FLIGHT`] batches of
/// [`MAX_BATCH`] values at once, one connection per batch; counts values.
async fn measure_batches(
    nodes: BTreeMap<i32, SocketAddr>,
    producers: u32,
    secs: f64,
    recorder: Option<Arc<dyn Recorder>>,
) -> (f64, u64) {
    let (from, end) = window(secs);
    let (_stop_tx, stop) = watch::channel(false);
    let slots = MAX_IN_FLIGHT as u64 * u64::from(MAX_BATCH);
    let mut tasks = Vec::new();
    for c in 0..producers {
        let (nodes, recorder, stop) = (nodes.clone(), recorder.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut clients: Vec<Client> = (0..MAX_IN_FLIGHT as u64)
                .map(|j| {
                    let config = ClientConfig::new(nodes.clone(), None);
                    Client::new(config, u64::from(c) * slots + j).unwrap()
                })
                .collect();
            let mut producer = Producer::new(Producers::KafkaDefault.policy(0));
            let (mut ok, mut failed, mut n) = (0u64, 0u64, 0u64);
            while Instant::now() < end {
                let partition = (n % 2) as u32;
                // Value `k` of batch `j`: slot `j * MAX_BATCH + k`, as a burst's.
                let group: Vec<Vec<(u64, u64)>> = (0..MAX_IN_FLIGHT as u64)
                    .map(|j| {
                        (0..u64::from(MAX_BATCH))
                            .map(|k| {
                                let slot = j * u64::from(MAX_BATCH) + k;
                                let value =
                                    (n * u64::from(producers) + u64::from(c)) * slots + slot;
                                (u64::from(c) * slots + slot, value)
                            })
                            .collect()
                    })
                    .collect();
                n += 1;
                let values: Vec<Vec<u64>> = group
                    .iter()
                    .map(|b| b.iter().map(|&(_, v)| v).collect())
                    .collect();
                let acked: Vec<bool> = match &recorder {
                    None => {
                        let sends = clients.iter_mut().zip(&values).map(|(client, batch)| {
                            let batch: Vec<serde_json::Value> =
                                batch.iter().map(|v| json!(v)).collect();
                            async move {
                                let out = client
                                    .produce_batch("queue", partition, &batch, Acks::All, None)
                                    .await;
                                matches!(out, Outcome::Ok(_))
                            }
                        });
                        futures_util::future::join_all(sends).await
                    }
                    Some(r) => {
                        for batch in &group {
                            invoke_batch(&**r, batch, partition);
                        }
                        let complete = |j: usize, sent: &Sent| {
                            complete_batch(&**r, &group[j], partition, sent);
                        };
                        let seed = n;
                        let sent = producer
                            .send_group(
                                &mut clients,
                                "queue",
                                partition,
                                &values,
                                &stop,
                                seed,
                                complete,
                            )
                            .await;
                        sent.iter()
                            .map(|s| matches!(s.outcome, Outcome::Ok(_)))
                            .collect()
                    }
                };
                if Instant::now() >= from {
                    for (done, batch) in acked.iter().zip(&values) {
                        let count = batch.len() as u64;
                        if *done {
                            ok += count;
                        } else {
                            failed += count;
                        }
                    }
                }
            }
            (ok, failed)
        }));
    }
    total(tasks, secs).await
}

/// Each node's own address, past the proxies.
fn own_addrs(cluster: &Cluster) -> BTreeMap<i32, SocketAddr> {
    cluster
        .node_ids()
        .into_iter()
        .map(|id| (id, cluster.real_addr(Proc::Node(id)).unwrap()))
        .collect()
}

fn main() {
    let secs = env_or("BENCH_SECS", 10.0);
    let clients = env_or("BENCH_CLIENTS", 16.0) as u32;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bin = broker_bin();
    let config = |root: &str, fault_fs: bool| ClusterConfig {
        broker_bin: bin.clone(),
        nodes: 3,
        root: dir.path().join(root),
        settings: Default::default(),
        dedicated_controller: false,
        start_timeout: Duration::from_secs(60),
        fault_fs,
        power_cut_on_kill: false,
        clocks: false,
    };
    rt.block_on(async {
        let cluster = Cluster::start(config("cluster", false)).await.unwrap();
        cluster.create_topic("queue", 2, 3, 2).await.unwrap();
        let direct = own_addrs(&cluster);
        let proxied = cluster.client_addrs();
        let file = HistoryFile::create(&dir.path().join("history.jsonl"), Instant::now()).unwrap();
        let history: Arc<dyn Recorder> = Arc::new(History::new(file, Arc::new(Tally::default())));
        println!(
            "{clients} producers, {secs} s each, 3 nodes, 2 partitions, replication factor 3, acks=all"
        );
        let (alone, alone_failed) = measure(direct, clients, secs, None).await;
        println!("broker alone          {alone:>9.0} ok/s   ({alone_failed} failed)");
        let (harness, harness_failed) = measure(proxied, clients, secs, Some(history)).await;
        println!("through the harness   {harness:>9.0} ok/s   ({harness_failed} failed)");
        println!("ratio harness/broker alone: {:.3}", harness / alone);
        let history = Arc::new(History::new(
            HistoryFile::create(&dir.path().join("batches.jsonl"), Instant::now()).unwrap(),
            Arc::new(Tally::default()),
        ));
        let (alone_b, alone_b_failed) = measure_batches(own_addrs(&cluster), clients, secs, None).await;
        println!("broker alone, batches {alone_b:>9.0} ok/s   ({alone_b_failed} failed)");
        let proxied = cluster.client_addrs();
        let (harness_b, harness_b_failed) = measure_batches(proxied, clients, secs, Some(history)).await;
        println!("through the harness, batches {harness_b:>9.0} ok/s   ({harness_b_failed} failed)");
        println!("ratio harness/broker alone, batches: {:.3}", harness_b / alone_b);
        drop(cluster);
        let cluster = Cluster::start(config("on-faultfs", true)).await.unwrap();
        cluster.create_topic("queue", 2, 3, 2).await.unwrap();
        let direct = own_addrs(&cluster);
        let (on_fs, on_fs_failed) = measure(direct, clients, secs, None).await;
        println!("broker on faultfs     {on_fs:>9.0} ok/s   ({on_fs_failed} failed)");
        println!("ratio faultfs/broker alone: {:.3}", on_fs / alone);
        drop(cluster);
    });
}
