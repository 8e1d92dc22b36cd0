//! acks=all produce throughput and latency of a real cluster (three brokers, every one
//! a controller voter, the release binary), beside a bare axum echo handler measured in the same
//! run on the same machine, so the ratio says what replication costs over HTTP alone.
//!
//! The same produce as an idempotent producer (a producer id per client from the
//! controller, a sequence number per record) is measured in the same run too, and
//! its ratio to the plain produce printed: what the leader's sequence check and the
//! stamped records cost.
//!
//! `cargo bench -p broker --bench produce` (BENCH_SECS sets each measurement's length,
//! default 10; BENCH_ROUNDS how many times the three are measured in turn, default 3,
//! the ratios taken between their medians; BENCH_CLIENTS the concurrency, default 16).

#[path = "../tests/integration/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::routing::post;
use hdrhistogram::Histogram;
use serde_json::{Value, json};
use support::{Cluster, Opts};

struct Figures {
    ops: u64,
    errors: u64,
    secs: f64,
    hist: Histogram<u64>,
}

impl Figures {
    fn rate(&self) -> f64 {
        self.ops as f64 / self.secs
    }
    fn print(&self, name: &str) {
        println!(
            "{name:<32} {:>9.0} ops/s   p50 {:>7.3} ms   p99 {:>7.3} ms   ({} ops, {} errors, {:.1} s)",
            self.rate(),
            self.hist.value_at_quantile(0.50) as f64 / 1000.0,
            self.hist.value_at_quantile(0.99) as f64 / 1000.0,
            self.ops,
            self.errors,
            self.secs,
        );
    }
}

/// `clients` loops POSTing one single-record body to `url` for `secs` (after a warmup);
/// with `controller`, each as an idempotent producer with its own producer id.
async fn measure(url: String, clients: usize, secs: f64, controller: Option<String>) -> Figures {
    let http = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(clients)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let warmup = Duration::from_millis(1000);
    let start = Instant::now();
    let measure_from = start + warmup;
    let end = measure_from + Duration::from_secs_f64(secs);
    let mut tasks = Vec::new();
    for client in 0..clients {
        let (http, url, controller) = (http.clone(), url.clone(), controller.clone());
        tasks.push(tokio::spawn(async move {
            let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
            let (mut ops, mut errors, mut n) = (0u64, 0u64, 0u64);
            let producer = match &controller {
                Some(addr) => Some(init_producer_id(&http, addr).await),
                None => None,
            };
            let mut sequence = 0u64;
            loop {
                let t0 = Instant::now();
                if t0 >= end {
                    break;
                }
                let mut body = json!({"records": [{"value": format!("c{client}-{n}")}]});
                if let Some(id) = &producer {
                    body["producer"] = json!({"id": id, "epoch": 0, "sequence": sequence});
                }
                n += 1;
                let ok = match http.post(&url).json(&body).send().await {
                    Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                    Err(_) => false,
                };
                // A failed send is sent again with the same sequence number.
                if ok {
                    sequence += 1;
                }
                if t0 >= measure_from {
                    if ok {
                        ops += 1;
                        let _ = hist.record(t0.elapsed().as_micros() as u64);
                    } else {
                        errors += 1;
                    }
                }
            }
            (ops, errors, hist)
        }));
    }
    let mut all = Figures {
        ops: 0,
        errors: 0,
        secs,
        hist: Histogram::new_with_bounds(1, 60_000_000, 3).unwrap(),
    };
    for t in tasks {
        let (ops, errors, hist) = t.await.unwrap();
        all.ops += ops;
        all.errors += errors;
        all.hist.add(hist).unwrap();
    }
    all
}

/// A producer id from the controller's InitProducerId.
async fn init_producer_id(http: &reqwest::Client, controller: &str) -> Value {
    let r = http
        .post(format!("http://{controller}/v1/producers"))
        .send()
        .await
        .expect("InitProducerId");
    let answer: Value = r.json().await.expect("InitProducerId answer");
    answer["producer_id"].clone()
}

/// A bare axum handler that answers the body it gets, in its own runtime and thread
/// (as each broker has its own process).
fn start_echo() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap().to_string()).unwrap();
            let app = Router::new().route("/echo", post(|body: Bytes| async move { body }));
            axum::serve(listener, app).await.unwrap();
        });
    });
    rx.recv().unwrap()
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs it as a smoke test.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let secs: f64 = std::env::var("BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if smoke { 0.5 } else { 10.0 });
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(if smoke { 1 } else { 3 });
    let clients: usize = std::env::var("BENCH_CLIENTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let cluster = Cluster::start(Opts {
            session_timeout_ms: 3000,
            lag_ms: 10_000,
            ..Opts::default()
        });
        cluster.create_topic("bench", 1, 3, 2).await;
        let s = cluster.controller_partition("bench", 0).await.unwrap();
        let leader = s["leader"].as_i64().unwrap() as i32;
        let produce_url = format!(
            "http://{}/v1/topics/bench/partitions/0/records?acks=all",
            cluster.addr(leader)
        );
        let echo_url = format!("http://{}/echo", start_echo());

        println!(
            "{clients} clients, {secs} s each, {rounds} rounds, 3 nodes, replication factor 3, \
             min.insync.replicas 2"
        );
        let controller = Some(cluster.controller_addr().await);
        // Echo, produce and idempotent produce in turn, `rounds` times: what the
        // machine does meanwhile moves each round's figures together, and the medians
        // of the rounds are compared.
        let (mut echo, mut produce, mut idempotent) = (Vec::new(), Vec::new(), Vec::new());
        for round in 1..=rounds {
            let e = measure(echo_url.clone(), clients, secs, None).await;
            e.print(&format!("[{round}] axum echo"));
            let p = measure(produce_url.clone(), clients, secs, None).await;
            p.print(&format!("[{round}] produce acks=all"));
            let i = measure(produce_url.clone(), clients, secs, controller.clone()).await;
            i.print(&format!("[{round}] produce acks=all idempotent"));
            assert!(p.ops > 0, "no produce succeeded");
            assert!(i.ops > 0, "no idempotent produce succeeded");
            echo.push(e.rate());
            produce.push(p.rate());
            idempotent.push(i.rate());
        }
        let (echo, produce, idempotent) = (median(echo), median(produce), median(idempotent));
        println!(
            "medians: echo {echo:.0} ops/s, produce {produce:.0} ops/s, idempotent {idempotent:.0} ops/s"
        );
        println!("ratio produce/echo: {:.3}", produce / echo);
        println!("ratio idempotent/produce: {:.3}", idempotent / produce);

        let d = cluster.debug_partition(leader, "bench", 0).await.unwrap();
        let isr: Value = d["isr"].clone();
        println!(
            "leader {leader}: LEO {} HW {} ISR {isr}",
            d["log_end_offset"], d["high_watermark"]
        );
    });
}

/// The middle value (the mean of the two middle ones for an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
