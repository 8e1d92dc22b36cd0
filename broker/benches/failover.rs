//! Controller failover on a real cluster (three brokers, every one a controller voter,
//! the broker's default timings: election timeout 1000 ms, session timeout 3000 ms):
//!
//! 1. how long after a SIGKILL of the active controller another broker is the active
//!    controller under a higher epoch, over several rounds (the killed broker
//!    restarted and the cluster settled in between), against the election timeout;
//! 2. what that does to `acks=all` produce latency: 8 clients write to a partition
//!    (replication factor 3, min.insync.replicas 2) whose leader is not the controller,
//!    for a window before the kill and the same window after it; p50/p99/max of
//!    each, and the ratio of the p99s. The killed controller is a follower of that
//!    partition, so writes wait until the new controller drops it from the ISR.
//!
//! `cargo bench -p broker --bench failover` (BENCH_ROUNDS, default 5; BENCH_SECS, the
//! window, default 10). Under `cargo test --benches` it runs one short round.

#[path = "../tests/integration/support/mod.rs"]
mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::json;
use support::{Cluster, Opts};

const ELECTION_TIMEOUT_MS: u64 = 1000;

fn opts() -> Opts {
    Opts {
        session_timeout_ms: 3000,
        election_timeout_ms: ELECTION_TIMEOUT_MS,
        lag_ms: 10_000,
        ..Opts::default()
    }
}

/// Kill the active controller; how long until another broker is the active controller
/// under a higher epoch. The killed broker is restarted and back in every ISR after.
async fn one_failover(c: &mut Cluster) -> Duration {
    let (old, epoch) = c.controller().await;
    let killed = Instant::now();
    c.node(old).kill();
    let took = loop {
        if let Some((id, e)) = c.find_controller().await
            && id != old
            && e > epoch
        {
            break killed.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    c.node(old).restart();
    c.wait_for("the restarted broker back in the ISR", || async {
        let s = c.controller_partition("bench", 0).await?;
        (s["isr"].as_array()?.len() == 3).then_some(())
    })
    .await;
    // Let every voter's log catch up before the next kill: a voter whose log lags
    // cannot win an election, and openraft makes it wait 1.2 E before trying again.
    tokio::time::sleep(SETTLE).await;
    took
}

/// How long the cluster rests between rounds.
const SETTLE: Duration = Duration::from_secs(3);

/// One produce attempt: when it started (since `zero`), how long it took, whether
/// it was acknowledged.
type Sample = (Duration, Duration, bool);

/// 8 clients writing acks=all to `url` until `end`.
async fn produce_until(url: String, zero: Instant, end: Instant) -> Vec<Sample> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let samples = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for client in 0..8 {
        let (http, url, samples) = (http.clone(), url.clone(), samples.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while Instant::now() < end {
                let t0 = Instant::now();
                let body = json!({"records": [{"value": format!("c{client}-{n}")}]});
                n += 1;
                let ok = match http.post(&url).json(&body).send().await {
                    Ok(r) => r.status().is_success(),
                    Err(_) => false,
                };
                let sample = (t0 - zero, t0.elapsed(), ok);
                samples.lock().unwrap().push(sample);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    Arc::try_unwrap(samples).unwrap().into_inner().unwrap()
}

fn print_window(name: &str, samples: &[Sample]) -> u64 {
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    let mut errors = 0;
    for (_, took, ok) in samples {
        if *ok {
            let _ = hist.record(took.as_micros() as u64);
        } else {
            errors += 1;
        }
    }
    let ms = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "{name:<24} {:>6} acked  p50 {:>8.1} ms  p99 {:>8.1} ms  max {:>8.1} ms  ({errors} not acknowledged)",
        hist.len(),
        ms(0.5),
        ms(0.99),
        hist.max() as f64 / 1000.0
    );
    hist.value_at_quantile(0.99)
}

fn main() {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let rounds = env("BENCH_ROUNDS", if smoke { 1 } else { 5 });
    let window = Duration::from_secs(env("BENCH_SECS", if smoke { 2 } else { 10 }));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = Cluster::start(opts());
        c.create_topic("bench", 1, 3, 2).await;

        println!("3 brokers, all controller voters, election timeout {ELECTION_TIMEOUT_MS} ms");
        let mut times = Vec::new();
        for round in 1..=rounds {
            let took = one_failover(&mut c).await;
            println!("round {round}: a new active controller after {took:?}");
            times.push(took);
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let median = times[times.len() / 2];
        println!(
            "controller failover: min {:.0} ms, median {:.0} ms, max {:.0} ms ({:.2}x the election timeout at the median)",
            ms(times[0]),
            ms(median),
            ms(times[times.len() - 1]),
            ms(median) / ELECTION_TIMEOUT_MS as f64
        );

        // A partition leader that is not the controller, so only the controller fails.
        let (controller, _) = c.controller().await;
        let leader = loop {
            let leader = c
                .wait_for("a leader", || async {
                    let s = c.controller_partition("bench", 0).await?;
                    s["leader"].as_i64().filter(|l| *l > 0).map(|l| l as i32)
                })
                .await;
            if leader != controller {
                break leader;
            }
            // Move the leadership away: restart the leader (the controller's own node).
            c.node(leader).kill();
            c.wait_for("another leader", || async {
                let s = c.controller_partition("bench", 0).await?;
                (s["leader"].as_i64()? as i32 != leader).then_some(())
            })
            .await;
            c.node(leader).restart();
        };
        let (controller, epoch) = c.controller().await;
        let url = format!(
            "http://{}/v1/topics/bench/partitions/0/records?acks=all",
            c.addr(leader)
        );
        let zero = Instant::now();
        let kill_at = zero + window;
        let producing = tokio::spawn(produce_until(url, zero, kill_at + window));
        tokio::time::sleep_until(kill_at.into()).await;
        c.node(controller).kill();
        let samples = producing.await.unwrap();
        let took = c.controller().await;
        println!(
            "acks=all during a failover: leader {leader}, controller {controller} (epoch {epoch}) killed at {:?}; now broker {} (epoch {})",
            window, took.0, took.1
        );
        let (before, after): (Vec<Sample>, Vec<Sample>) =
            samples.into_iter().partition(|(at, _, _)| *at < window);
        let p99_before = print_window("before the kill", &before);
        let p99_after = print_window("after the kill", &after);
        println!(
            "p99 after/before: {:.1}",
            p99_after as f64 / p99_before.max(1) as f64
        );
        assert!(!before.is_empty() && !after.is_empty());
    });
}
