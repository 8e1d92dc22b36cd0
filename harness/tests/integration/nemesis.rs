//! The nemesis against a real cluster: a seeded schedule of every fault kind runs,
//! reports each start and its end, and the cluster heals and converges afterwards.

use std::path::Path;
use std::time::Duration;

use clap::ValueEnum;

use broker_config::Settings;
use watermark::nemesis::{
    Coverage, FaultKind, FaultList, Interpreter, NemesisEvent, Planner, Source, needs_page_cache,
};
use watermark::system::System;
use watermark::system::broker::{Cluster, ClusterConfig};

/// The history names of the faults' starts and of their ends.
const STARTS: [&str; 14] = [
    "kill",
    "pause",
    "partition",
    "crash-all",
    "lose-unflushed",
    "torn-write",
    "corrupt",
    "disk",
    "clock-offset",
    "clock-step",
    "clock-strobe",
    "slow",
    "flaky",
    "throttle",
];
const ENDS: [&str; 8] = [
    "restart",
    "resume",
    "heal",
    "disk-ok",
    "clock-reset",
    "stop-slow",
    "stop-flaky",
    "stop-throttle",
];
/// Reconfigurations: done once asked (a reassignment's end moves it back).
const RECONFIGURATIONS: [&str; 2] = ["reassign", "add-partitions"];

/// Wait (bounded) until no process of the cluster under `dir` is left.
fn assert_nothing_left(dir: &Path) {
    crate::support::assert_no_process_left(dir.to_str().expect("a UTF-8 temp dir"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_kind_starts_ends_and_the_cluster_converges_afterwards() {
    let dir = tempfile::tempdir().unwrap();
    let kinds = FaultKind::value_variants();
    let config = ClusterConfig {
        broker_bin: crate::support::broker_bin(),
        nodes: 3,
        root: dir.path().to_path_buf(),
        settings: page_cache(needs_page_cache(kinds, None)),
        dedicated_controller: false,
        start_timeout: Duration::from_secs(60),
        fault_fs: false,
        power_cut_on_kill: false,
        clocks: true,
    };
    let mut cluster = Cluster::start(config).await.unwrap();
    cluster.create_topic("queue", 2, 3, 2).await.unwrap();

    let planner = Planner::new(7, kinds, &cluster.node_ids(), 2, Duration::from_millis(700));
    let mut list = FaultList::new(planner, "queue");
    let mut events: Vec<NemesisEvent> = Vec::new();
    let mut record = |e| events.push(e);
    Interpreter::new(&mut cluster, &["queue"], Coverage::new(0), &mut record)
        .play(&mut list, Duration::from_secs(15))
        .await
        .unwrap();
    // Shown when the test fails (or with --nocapture).
    println!(
        "nemesis events: {}",
        serde_json::to_string(&events).unwrap()
    );
    assert!(
        list.planner().active().is_empty(),
        "play ends every fault it started"
    );

    let (starts, ends) = (STARTS, ENDS);
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
    // Besides starts and ends, the marks naming the active controller a fault
    // aimed at the controller found.
    for e in events.iter().filter(|e| !e.is_decision()) {
        assert!(
            starts.contains(&e.f.as_str())
                || ends.contains(&e.f.as_str())
                || RECONFIGURATIONS.contains(&e.f.as_str()),
            "{e:?}"
        );
        assert!(!e.value.is_null(), "{e:?}");
        assert!(e.value.get("refused").is_none(), "refused: {e:?}");
    }

    cluster.heal_all().await.unwrap();
    cluster
        .wait_converged(Duration::from_secs(120))
        .await
        .unwrap();
    cluster
        .final_logs(&mut |id, text| {
            let path = dir.path().join(id.to_string()).join("final-log.jsonl");
            Ok(std::fs::write(path, text)?)
        })
        .await
        .unwrap();
    cluster.shutdown().await.unwrap();
    assert_nothing_left(dir.path());
}

/// A node's disk mode, as its `GET /debug/disk` answers it.
async fn disk_mode(cluster: &Cluster, id: i32) -> String {
    let addr = cluster
        .real_addr(watermark::proc::Proc::Node(id))
        .expect("running");
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let body: serde_json::Value = http
        .get(format!("http://{addr}/debug/disk"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["mode"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_fault_applies_to_the_real_cluster_and_its_end_undoes_it() {
    use rand::SeedableRng;
    use watermark::nemesis::{Degradation, Fault, Step, Taken};
    use watermark::net::Grudge;
    use watermark::net::Topology;
    use watermark::proc::Proc;
    use watermark::system::DiskMode;

    let dir = tempfile::tempdir().unwrap();
    let config = ClusterConfig {
        broker_bin: crate::support::broker_bin(),
        nodes: 3,
        root: dir.path().to_path_buf(),
        settings: page_cache(true),
        dedicated_controller: false,
        start_timeout: Duration::from_secs(60),
        fault_fs: false,
        power_cut_on_kill: false,
        clocks: false,
    };
    let mut cluster = Cluster::start(config).await.unwrap();
    cluster.create_topic("queue", 2, 3, 2).await.unwrap();
    let all = cluster.procs();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let partition = |topology, grudge| Fault::Partition {
        topology,
        grudge,
        partition: 0,
    };
    let faults = vec![
        Fault::Kill(Proc::Node(1)),
        Fault::Kill(Proc::Controller),
        Fault::Pause(Proc::Node(2)),
        Fault::Pause(Proc::Controller),
        Fault::LoseUnflushed(3),
        Fault::Corrupt { node: 1, seed: 3 },
        Fault::CrashAll(vec![2, 3, 1]),
        Fault::Disk {
            node: 2,
            mode: DiskMode::Eio,
            for_ms: 60_000,
        },
        partition(Topology::Halves, Topology::Halves.draw(&all, &mut rng)),
        partition(Topology::Bridge, Topology::Bridge.draw(&all, &mut rng)),
        partition(
            Topology::IsolateController,
            Grudge::isolate(Proc::Controller, &all),
        ),
        // Resolved by the nemesis from the controller's metadata.
        partition(Topology::IsolateLeader, Grudge::none()),
        Fault::Degrade {
            procs: vec![Proc::Node(1)],
            how: Degradation::Slow {
                delay_ms: 50,
                jitter_ms: 10,
            },
            seed: 1,
        },
        Fault::Degrade {
            procs: vec![Proc::Node(1), Proc::Node(2)],
            how: Degradation::Flaky {
                reset_pct: 5,
                loss_pct: 20,
            },
            seed: 2,
        },
        Fault::Degrade {
            procs: vec![Proc::Node(3)],
            how: Degradation::Throttle {
                bytes_per_s: 16 * 1024,
            },
            seed: 3,
        },
    ];
    for mut fault in faults {
        let mut events = Vec::new();
        let mut record = |e| events.push(e);
        let mut nemesis = Interpreter::new(&mut cluster, &["queue"], Coverage::new(0), &mut record);
        let Taken::Applied(started) = nemesis.apply(fault.start("queue", "queue")).await.unwrap()
        else {
            panic!("{fault:?} was not applied")
        };
        drop(nemesis);
        // A fault aimed at the controller hits the broker it runs in, named by a
        // mark before the fault's own event.
        let aimed_at_controller = matches!(
            fault,
            Fault::Kill(Proc::Controller)
                | Fault::Pause(Proc::Controller)
                | Fault::Partition {
                    topology: Topology::IsolateController,
                    ..
                }
        );
        if aimed_at_controller {
            let mark = events.remove(0);
            assert_eq!(mark.f, "active-controller", "{mark:?}");
            let id = mark.value["process"].as_i64().expect("a broker id") as i32;
            let c = Proc::Node(id);
            fault = match fault {
                Fault::Kill(_) => Fault::Kill(c),
                Fault::Pause(_) => Fault::Pause(c),
                _ => partition(Topology::IsolateController, Grudge::isolate(c, &all)),
            };
        }
        match &fault {
            Fault::Kill(p) => assert!(!cluster.is_running(*p)),
            Fault::Pause(p) => assert!(cluster.is_paused(*p)),
            Fault::LoseUnflushed(id)
            | Fault::TornWrite { node: id, .. }
            | Fault::Corrupt { node: id, .. } => {
                assert!(!cluster.is_running(Proc::Node(*id)))
            }
            Fault::Clock { .. } => unreachable!("no clock faults in this list"),
            Fault::CrashAll(ids) => {
                assert!(ids.iter().all(|&id| !cluster.is_running(Proc::Node(id))))
            }
            Fault::Partition {
                topology: Topology::IsolateLeader,
                ..
            } => {
                let view = cluster.roles(&["queue"]).await.unwrap();
                let leader = view.partitions[0].leader.unwrap();
                let cut = cluster.cut_links();
                assert_eq!(cut.len(), 4, "{cut:?}");
                assert!(
                    cut.iter()
                        .all(|(a, b)| *a == Proc::Node(leader) || *b == Proc::Node(leader))
                );
            }
            Fault::Disk { node, .. } => assert_eq!(disk_mode(&cluster, *node).await, "eio"),
            Fault::Partition { grudge, .. } => {
                let mut cut = cluster.cut_links();
                let mut want = grudge.cut.clone();
                cut.sort();
                want.sort();
                assert_eq!(cut, want);
            }
            // Every link to or from the processes (2 others each way), and their
            // clients' links; links between two others are left alone.
            Fault::Degrade { procs, .. } => {
                let want = if procs.len() == 1 { 4 + 1 } else { 6 + 2 };
                assert_eq!(cluster.degraded_links(), want, "{fault:?}");
            }
            // Reconfigurations play in the seeded schedule of every kind, above.
            Fault::Reassign { .. } | Fault::AddPartitions => unreachable!("not in this list"),
        }
        // The end of the fault as the planner hands it back (isolate-leader resolved).
        let end = match fault {
            Fault::Partition { topology, .. } => {
                let grudge = Grudge {
                    cut: cluster.cut_links(),
                };
                Fault::Partition {
                    topology,
                    grudge,
                    partition: 0,
                }
            }
            other => other,
        };
        let ended = end.end(Duration::from_millis(100), "queue");
        let mut record = |e| events.push(e);
        Interpreter::new(&mut cluster, &["queue"], Coverage::new(0), &mut record)
            .apply(Step::Act(ended.clone()))
            .await
            .unwrap();
        assert!(cluster.cut_links().is_empty());
        assert_eq!(cluster.degraded_links(), 0, "{end:?}");
        for id in cluster.node_ids() {
            assert_eq!(
                disk_mode(&cluster, id).await,
                "ok",
                "node {id} after {end:?}"
            );
        }
        for p in cluster.procs() {
            assert!(
                cluster.is_running(p) && !cluster.is_paused(p),
                "{p} after {end:?}"
            );
        }
        if let Fault::Corrupt { node, .. } = &end {
            // What the damage was, recorded right after the fault's start.
            let done = events.remove(1);
            assert_eq!(done.f, "corrupted", "{done:?}");
            assert_eq!(done.value["process"], *node);
            assert!(done.value["file"].is_string() && done.value["offset"].is_u64());
        }
        assert_eq!(events, vec![started.event(), ended.event()]);
        cluster
            .wait_converged(Duration::from_secs(120))
            .await
            .unwrap();
    }
    cluster.shutdown().await.unwrap();
    assert_nothing_left(dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replication_package_moves_a_leader_records_its_decisions_and_undoes_everything() {
    use watermark::nemesis::{Aimed, Package, Transition};

    let dir = tempfile::tempdir().unwrap();
    // A short lag time keeps the lag patterns short in a short test.
    let (mut cluster, settings) = package_cluster(dir.path(), 2000, 2).await;
    let planner = Aimed::new(11, settings, Transition::reachable(false, false));
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let mut package = Package::new(planner);
    let mut events: Vec<NemesisEvent> = Vec::new();
    let mut record = |e| events.push(e);
    let mut nemesis = Interpreter::new(&mut cluster, &["queue"], Coverage::new(since), &mut record);
    nemesis
        .play(&mut package, Duration::from_secs(15))
        .await
        .unwrap();
    let coverage = nemesis.into_coverage();
    println!(
        "nemesis events: {}",
        serde_json::to_string(&events).unwrap()
    );
    assert!(package.in_force().is_empty(), "{:?}", package.in_force());
    assert!(package.wind_down().is_empty());
    assert!(cluster.cut_links().is_empty());
    assert_eq!(cluster.degraded_links(), 0);
    for p in cluster.procs() {
        assert!(cluster.is_running(p) && !cluster.is_paused(p), "{p}");
    }
    assert_eq!(events[0].f, "plan", "{events:?}");
    assert!(
        events[0].value["why"]
            .as_str()
            .unwrap()
            .starts_with("first fault")
    );
    let (starts, ends) = (STARTS, ENDS);
    let count = |names: &[&str]| {
        events
            .iter()
            .filter(|e| names.contains(&e.f.as_str()))
            .count()
    };
    assert!(
        count(&starts) >= 1 && count(&starts) == count(&ends),
        "{events:?}"
    );
    // The first pattern moved a leader: the controller's leader epochs went up.
    assert!(coverage.leader_changed(), "{coverage:?}");
    cluster.heal_all().await.unwrap();
    converge_and_shut_down(cluster, dir.path()).await;
}

/// The package's steps that degrade links and time a kill by the cluster's state,
/// played on a real cluster: a leader killed while its successor is slowed, and a
/// follower cut past the lag time, throttled back in on the links to its leader
/// only, the leader killed once the controller shows it in the ISR (or after the
/// bound). Each is recorded as the fault lists record it, and undone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn degraded_links_and_a_kill_timed_by_the_isr_are_played_and_undone() {
    use rand::SeedableRng;
    use watermark::nemesis::patterns::{self, Aim};
    use watermark::nemesis::{Aimed, Package, Transition};

    let dir = tempfile::tempdir().unwrap();
    let (mut cluster, settings) = package_cluster(dir.path(), 1000, 1).await;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let mut events: Vec<NemesisEvent> = Vec::new();
    for pattern in [
        &patterns::LeaderKill as &dyn patterns::Pattern,
        &patterns::FollowerLag,
    ] {
        cluster
            .wait_converged(Duration::from_secs(60))
            .await
            .unwrap();
        let view = cluster
            .roles(&["queue"])
            .await
            .expect("a broker shows its roles");
        let partition = view
            .led()
            .first()
            .copied()
            .cloned()
            .expect("a led partition");
        let aim = Aim::new(
            &settings,
            Some(&partition),
            view.controller,
            false,
            0,
            &mut rng,
        );
        let (roles, script) = pattern.script(&aim, &mut rng);
        println!("{pattern:?}: {} {}", roles.to_json(), script.to_json());
        let planner = Aimed::new(3, settings.clone(), Transition::reachable(false, false));
        let mut once = Package::once(planner, script.steps);
        let mut record = |e| events.push(e);
        Interpreter::new(&mut cluster, &["queue"], Coverage::new(0), &mut record)
            .play(&mut once, Duration::from_secs(60))
            .await
            .unwrap();
        assert!(once.in_force().is_empty(), "{:?}", once.in_force());
        assert_eq!(cluster.degraded_links(), 0, "{pattern:?}");
        assert!(cluster.cut_links().is_empty(), "{pattern:?}");
        for p in cluster.procs() {
            assert!(cluster.is_running(p) && !cluster.is_paused(p), "{p}");
        }
    }
    println!("events: {}", serde_json::to_string(&events).unwrap());
    let names: Vec<&str> = events.iter().map(|e| e.f.as_str()).collect();
    for f in [
        "slow",
        "stop-slow",
        "throttle",
        "stop-throttle",
        "kill",
        "restart",
    ] {
        assert!(names.contains(&f), "{f} in {names:?}");
    }
    // The throttle is on the links between the follower and its leader only.
    let throttle = events.iter().find(|e| e.f == "throttle").unwrap();
    assert_eq!(throttle.value["links"].as_array().unwrap().len(), 2);
    assert_eq!(names.iter().filter(|f| **f == "kill").count(), 2);
    assert_eq!(names.iter().filter(|f| **f == "restart").count(), 2);
    converge_and_shut_down(cluster, dir.path()).await;
}

/// Three brokers electing their controller, a `queue` topic of `partitions`
/// partitions replicated 3 ways, `replica.lag.time.max.ms` `lag_ms`, and the
/// replication package's settings for them.
async fn package_cluster(
    root: &std::path::Path,
    lag_ms: u64,
    partitions: u32,
) -> (Cluster, watermark::nemesis::PackageSettings) {
    let mut settings = Settings::default();
    settings.replica.replica_lag_time_max_ms = Some(lag_ms);
    let config = ClusterConfig {
        broker_bin: crate::support::broker_bin(),
        nodes: 3,
        root: root.to_path_buf(),
        settings: settings.clone(),
        dedicated_controller: false,
        start_timeout: Duration::from_secs(60),
        fault_fs: false,
        power_cut_on_kill: false,
        clocks: false,
    };
    let cluster = Cluster::start(config).await.unwrap();
    cluster
        .create_topic("queue", partitions, 3, 2)
        .await
        .unwrap();
    let settings = watermark::nemesis::PackageSettings {
        timeouts: watermark::nemesis::Timeouts::of_cluster(&settings),
        nodes: cluster.node_ids(),
        power_cuts: false,
        crash_all_safe: true,
        dedicated_controller: false,
        lossless_topics: vec!["queue".into()],
        linearizable_topics: vec!["register".into()],
        reconfigurable: true,
        min_insync: 2,
    };
    (cluster, settings)
}

/// The cluster converges once the faults are undone, then shuts down, leaving no
/// process behind.
async fn converge_and_shut_down(cluster: Cluster, dir: &std::path::Path) {
    cluster
        .wait_converged(Duration::from_secs(120))
        .await
        .unwrap();
    cluster.shutdown().await.unwrap();
    assert_nothing_left(dir);
}

/// Brokers' settings with the page cache simulated, or not.
fn page_cache(simulated: bool) -> Settings {
    let mut s = Settings::default();
    s.replica.simulate_page_cache = simulated;
    s
}
