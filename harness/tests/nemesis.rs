//! The nemesis against a real cluster: a seeded schedule of every fault kind runs,
//! reports each start and its end, and the cluster heals and converges afterwards.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use watermark::cluster::{Cluster, ClusterConfig};
use watermark::nemesis::{FaultKind, Nemesis, NemesisEvent, Planner, node_args};

/// The broker binary beside this test binary, built first so it is never stale.
fn broker_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "-p", "broker", "--bin", "broker", "--target-dir"])
        .arg(profile_dir.parent().unwrap())
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .status()
        .expect("run cargo build -p broker");
    assert!(status.success(), "cargo build -p broker failed");
    profile_dir.join("broker")
}

fn processes_under(dir: &Path) -> Vec<String> {
    let out = std::process::Command::new("pgrep")
        .args(["-a", "-f"])
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_kind_starts_ends_and_the_cluster_converges_afterwards() {
    let dir = tempfile::tempdir().unwrap();
    let kinds = FaultKind::ALL;
    let config = ClusterConfig {
        broker_bin: broker_bin(),
        nodes: 3,
        root: dir.path().to_path_buf(),
        node_args: node_args(&kinds),
        controller_args: vec![],
        start_timeout: Duration::from_secs(60),
    };
    let mut cluster = Cluster::start(config).await.unwrap();
    cluster.create_topic("queue", 2, 3, 2).await.unwrap();

    let planner = Planner::new(
        7,
        &kinds,
        &cluster.node_ids(),
        2,
        Duration::from_millis(700),
    );
    let mut nemesis = Nemesis::new(planner, "queue");
    let mut events: Vec<NemesisEvent> = Vec::new();
    nemesis
        .run(&mut cluster, Duration::from_secs(15), &mut |e| {
            events.push(e)
        })
        .await
        .unwrap();
    // Shown when the test fails (or with --nocapture).
    println!(
        "nemesis events: {}",
        serde_json::to_string(&events).unwrap()
    );
    assert!(
        nemesis.planner().active().is_empty(),
        "run ends every fault it started"
    );

    let starts = ["kill", "pause", "partition", "crash-all", "lose-unflushed"];
    let ends = ["restart", "resume", "heal"];
    let started = events
        .iter()
        .filter(|e| starts.contains(&e.f.as_str()))
        .count();
    let ended = events
        .iter()
        .filter(|e| ends.contains(&e.f.as_str()))
        .count();
    assert!(
        started >= 4,
        "a 15 s schedule at 0.7 s steps starts faults: {events:?}"
    );
    assert_eq!(started, ended, "every start has its end: {events:?}");
    for e in &events {
        assert!(
            starts.contains(&e.f.as_str()) || ends.contains(&e.f.as_str()),
            "{e:?}"
        );
        assert!(!e.value.is_null(), "{e:?}");
    }

    cluster.heal_all().await.unwrap();
    cluster
        .wait_converged(Duration::from_secs(120))
        .await
        .unwrap();
    cluster.dump_logs().await.unwrap();
    cluster.shutdown().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !processes_under(dir.path()).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(processes_under(dir.path()), Vec::<String>::new());
}
