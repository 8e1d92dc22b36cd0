//! The broker as real processes: a controller and three nodes on loopback, driven
//! over HTTP while the tests kill (SIGKILL) and pause (SIGSTOP/SIGCONT) them. Each
//! test shows one point of Kafka's replication protocol end to end; the step-by-step
//! rules are unit-tested on the replica state machine (src/replica/tests.rs).

use std::time::{Duration, Instant};

use crate::support::{Cluster, Opts, ids, partition_in};
use serde_json::{Value, json};

/// (leader, leader epoch, ISR) of a partition, as the active controller says (waiting
/// for one, during a takeover).
async fn controller_view(c: &Cluster, topic: &str, p: u32) -> (i32, i64, Vec<i32>) {
    let s = c
        .wait_for("the partition in the controller's metadata", || {
            c.controller_partition(topic, p)
        })
        .await;
    (
        s["leader"].as_i64().unwrap() as i32,
        s["leader_epoch"].as_i64().unwrap(),
        ids(&s["isr"]),
    )
}

/// The values of a node's whole local log, by offset.
async fn local_log(c: &Cluster, id: i32, topic: &str, p: u32) -> Option<Vec<(u64, Value)>> {
    let resp = c
        .http
        .get(format!("http://{}/debug/log/{topic}/{p}", c.addr(id)))
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .ok()?;
    let v: Value = resp.json().await.ok()?;
    Some(
        v["records"]
            .as_array()?
            .iter()
            .map(|r| (r["offset"].as_u64().unwrap(), r["value"].clone()))
            .collect(),
    )
}

/// Wait until a new leader (≠ `old`, epoch > `old_epoch`) leads and knows it.
async fn wait_new_leader(c: &Cluster, topic: &str, p: u32, old: i32, old_epoch: i64) -> (i32, i64) {
    c.wait_for("a new leader with a bumped epoch", || async move {
        let (leader, epoch, _) = controller_view(c, topic, p).await;
        if leader < 0 || leader == old || epoch <= old_epoch {
            return None;
        }
        let d = c.debug_partition(leader, topic, p).await?;
        (d["role"] == "leader" && d["leader_epoch"] == epoch).then_some((leader, epoch))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_and_nodes_agree_on_metadata() {
    let c = Cluster::start(Opts::default());
    c.create_topic("queue", 2, 3, 2).await;
    c.wait_for(
        "every node's metadata to equal the controller's",
        || async {
            let (_, cm) = c.get(&c.controller_addr().await, "/v1/metadata").await;
            for id in 1..=3 {
                let (status, nm) = c.get(&c.addr(id), "/v1/metadata").await;
                if status != 200 || nm != cm {
                    return None;
                }
            }
            Some(())
        },
    )
    .await;
    let (_, md) = c.get(&c.addr(2), "/v1/metadata").await;
    for p in 0..2 {
        let s = partition_in(&md, "queue", p).unwrap();
        assert_eq!(ids(&s["replicas"]), vec![1, 2, 3]);
        assert_eq!(ids(&s["isr"]), vec![1, 2, 3]);
        assert!(s["replicas"].as_array().unwrap().contains(&s["leader"]));
    }
    assert_eq!(md["brokers"].as_array().unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hw_and_leo_move_as_in_kafka() {
    let c = Cluster::start(Opts::default());
    c.create_topic("t", 1, 3, 2).await;
    let (leader, _, _) = controller_view(&c, "t", 0).await;
    let followers: Vec<i32> = (1..=3).filter(|id| *id != leader).collect();
    for v in 0..5 {
        let (status, body) = c.produce(leader, "t", 0, "all", json!(v)).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["base_offset"], v);
        // acks=all answered: HW covers the record, which needs every ISR follower's
        // fetch offset (its LEO, as the leader knows it) past it.
        let d = c.debug_partition(leader, "t", 0).await.unwrap();
        let hw = d["high_watermark"].as_u64().unwrap();
        assert!(hw > v as u64, "HW {hw} does not cover offset {v}: {d}");
        for f in &followers {
            let leo = d["followers"][f.to_string()]["log_end_offset"]
                .as_u64()
                .unwrap();
            assert!(leo >= hw, "HW {hw} is past follower {f}'s LEO {leo}: {d}");
        }
    }
    // Records appended with acks=1 replicate the same way; every replica ends with
    // LEO = HW = 8 once the followers have fetched once more.
    for v in 5..8 {
        let (status, _) = c.produce(leader, "t", 0, "1", json!(v)).await;
        assert_eq!(status, 200);
    }
    c.wait_for("every replica at LEO = HW = 8", || async {
        for id in 1..=3 {
            let d = c.debug_partition(id, "t", 0).await?;
            if d["log_end_offset"] != 8 || d["high_watermark"] != 8 {
                return None;
            }
        }
        Some(())
    })
    .await;
    // Consumers never see past HW, and get exactly what was produced.
    let (status, body) = c
        .get(
            &c.addr(leader),
            "/v1/topics/t/partitions/0/records?offset=0&max_records=100",
        )
        .await;
    assert_eq!(status, 200);
    let values: Vec<Value> = body["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"].clone())
        .collect();
    assert_eq!(values, (0..8).map(|v| json!(v)).collect::<Vec<_>>());
    // Followers do not serve consumers.
    let (status, body) = c
        .get(
            &c.addr(followers[0]),
            "/v1/topics/t/partitions/0/records?offset=0",
        )
        .await;
    assert_eq!((status, body["error"].as_str()), (421, Some("NOT_LEADER")));
    assert_eq!(body["leader"], leader);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_fetch_waits_in_purgatory_and_wakes_on_append() {
    let wait_ms = 20_000;
    let c = Cluster::start(Opts {
        fetch_wait_ms: wait_ms,
        ..Opts::default()
    });
    c.create_topic("t", 1, 3, 2).await;
    let (leader, epoch, _) = controller_view(&c, "t", 0).await;
    let follower = (1..=3).find(|id| *id != leader).unwrap();
    let leo = c.debug_partition(leader, "t", 0).await.unwrap()["log_end_offset"]
        .as_u64()
        .unwrap();
    let http = c.http.clone();
    let url = format!("http://{}/internal/fetch", c.addr(leader));
    let body = json!({"topic": "t", "partition": 0, "replica_id": follower,
                      "fetch_offset": leo, "leader_epoch": epoch, "max_records": 10});
    let fetch = tokio::spawn(async move {
        let resp = http
            .post(url)
            .json(&body)
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), resp.json::<Value>().await.unwrap())
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !fetch.is_finished(),
        "an empty fetch must wait in purgatory"
    );
    let produced = Instant::now();
    let (status, _) = c.produce(leader, "t", 0, "1", json!("wake")).await;
    assert_eq!(status, 200);
    let (status, resp) = tokio::time::timeout(Duration::from_secs(30), fetch)
        .await
        .unwrap()
        .unwrap();
    let waited = produced.elapsed();
    assert_eq!(status, 200, "{resp}");
    assert_eq!(resp["records"][0]["value"], "wake");
    assert!(
        waited < Duration::from_millis(wait_ms / 2),
        "the append must wake the fetch, not its {wait_ms} ms deadline (took {waited:?})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_followers_leave_the_isr_through_the_controller_and_rejoin() {
    // A session timeout far above the lag time: the ISR shrinks because the leader
    // proposes it (AlterPartition), not because the controller saw a broker die. The
    // controller is a dedicated process, so pausing two followers leaves it running.
    let c = Cluster::start(
        Opts {
            session_timeout_ms: 15_000,
            lag_ms: 1500,
            ..Opts::default()
        }
        .dedicated_controller(),
    );
    c.create_topic("t", 1, 3, 2).await;
    let (leader, _, _) = controller_view(&c, "t", 0).await;
    let f: Vec<i32> = (1..=3).filter(|id| *id != leader).collect();
    let (status, _) = c.produce(leader, "t", 0, "all", json!(0)).await;
    assert_eq!(status, 200);

    c.nodes[&f[0]].signal(libc::SIGSTOP);
    let expected = {
        let mut v = vec![leader, f[1]];
        v.sort();
        v
    };
    c.wait_for("the paused follower to leave the ISR", || {
        let expected = expected.clone();
        let c = &c;
        async move { (controller_view(c, "t", 0).await.2 == expected).then_some(()) }
    })
    .await;
    let (_, md) = c.get(&c.controller_addr().await, "/v1/metadata").await;
    let alive = md["brokers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == f[0])
        .unwrap()["alive"]
        .clone();
    assert_eq!(
        alive, true,
        "the ISR shrank through AlterPartition, not by liveness"
    );
    // 2 of 3 in the ISR, min.insync.replicas = 2: acks=all works.
    let (status, body) = c.produce(leader, "t", 0, "all", json!(1)).await;
    assert_eq!(status, 200, "{body}");

    c.nodes[&f[1]].signal(libc::SIGSTOP);
    c.wait_for("the second paused follower to leave the ISR", || async {
        (controller_view(&c, "t", 0).await.2 == vec![leader]).then_some(())
    })
    .await;
    let leo_before = c.debug_partition(leader, "t", 0).await.unwrap()["log_end_offset"].clone();
    let (status, body) = c.produce(leader, "t", 0, "all", json!(2)).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (503, Some("NOT_ENOUGH_REPLICAS")),
        "{body}"
    );
    assert_eq!(ids(&body["isr"]), vec![leader]);
    let leo_after = c.debug_partition(leader, "t", 0).await.unwrap()["log_end_offset"].clone();
    assert_eq!(
        leo_before, leo_after,
        "NOT_ENOUGH_REPLICAS is decided before appending"
    );

    c.nodes[&f[0]].signal(libc::SIGCONT);
    c.nodes[&f[1]].signal(libc::SIGCONT);
    c.wait_for("both followers to rejoin the ISR", || async {
        (controller_view(&c, "t", 0).await.2.len() == 3).then_some(())
    })
    .await;
    let (status, body) = c.produce(leader, "t", 0, "all", json!(3)).await;
    assert_eq!(status, 200, "{body}");
    c.wait_for("every replica caught up", || async {
        for id in 1..=3 {
            if local_log(&c, id, "t", 0).await?.len() != 3 {
                return None;
            }
        }
        Some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isr_expansion_whose_answer_is_lost_keeps_holding_the_hw() {
    // The controller applies an ISR expansion, but its answer never reaches the leader:
    // the controller is paused past the leader's 2 s call timeout. The controller's ISR
    // then has the new member, so the leader's HW must keep waiting for it (KIP-841's
    // maximal ISR), or a record it acknowledges may be missing from a future leader.
    // The controller is a dedicated process, its quorum's only voter.
    let c = Cluster::start(
        Opts {
            session_timeout_ms: 15_000,
            lag_ms: 1500,
            ..Opts::default()
        }
        .dedicated_controller(),
    );
    c.create_topic("t", 1, 3, 2).await;
    let (leader, _, _) = controller_view(&c, "t", 0).await;
    let f: Vec<i32> = (1..=3).filter(|id| *id != leader).collect();
    let (joiner, other) = (f[0], f[1]);
    let (status, _) = c.produce(leader, "t", 0, "all", json!(0)).await;
    assert_eq!(status, 200);
    c.nodes[&joiner].signal(libc::SIGSTOP);
    let mut expected = vec![leader, other];
    expected.sort();
    c.wait_for("the paused follower to leave the ISR", || {
        let expected = expected.clone();
        let c = &c;
        async move { (controller_view(c, "t", 0).await.2 == expected).then_some(()) }
    })
    .await;
    let (status, body) = c.produce(leader, "t", 0, "all", json!(1)).await;
    assert_eq!(status, 200, "{body}");

    // The controller stops; the follower catches up, so the leader proposes it back
    // (within 100 ms), and that AlterPartition waits on the paused controller.
    c.dedicated().signal(libc::SIGSTOP);
    c.nodes[&joiner].signal(libc::SIGCONT);
    c.wait_for("the leader to see the follower caught up", || async {
        let d = c.debug_partition(leader, "t", 0).await?;
        let leo = d["log_end_offset"].as_u64()?;
        (d["followers"][joiner.to_string()]["log_end_offset"].as_u64()? == leo).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    // The new member stops before the next record: only the leader and `other` get it.
    // The write comes late enough that the leader's calls (three of 2 s each, following
    // the controller list) give up before the write's own 5 s deadline.
    c.nodes[&joiner].signal(libc::SIGSTOP);
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let http = c.http.clone();
    let url = format!(
        "http://{}/v1/topics/t/partitions/0/records?acks=all",
        c.addr(leader)
    );
    let write = tokio::spawn(async move {
        let resp = http
            .post(url)
            .json(&json!({"records": [{"value": 2}]}))
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), resp.json::<Value>().await.unwrap())
    });
    // Past the leader's controller calls: the proposal got no answer.
    tokio::time::sleep(Duration::from_millis(4000)).await;
    if write.is_finished() {
        let (status, body) = write.await.unwrap();
        assert_ne!(
            status, 200,
            "acknowledged while the proposed member lacks the record: {body}"
        );
        // Timed out early on a slow machine: not acknowledged, which is all we ask.
        return;
    }
    // The controller resumes and applies the proposal it had queued: its ISR has the
    // member that lacks the record.
    c.dedicated().signal(libc::SIGCONT);
    c.wait_for("the controller to apply the expansion", || async {
        let log = c.dedicated().log();
        log.lines()
            .any(|l| {
                l.contains(&format!("(proposed by leader {leader})"))
                    && l.split("isr [")
                        .nth(1)
                        .and_then(|rest| rest.split(']').next())
                        .is_some_and(|isr| isr.split(',').count() == 3)
            })
            .then_some(())
    })
    .await;
    c.nodes[&joiner].signal(libc::SIGCONT);
    let (status, _) = write.await.unwrap();
    if status == 200 {
        // Acknowledged only once every member of the controller's ISR has it.
        let log = local_log(&c, joiner, "t", 0).await.unwrap_or_default();
        assert!(
            log.iter().any(|(_, v)| *v == json!(2))
                || !controller_view(&c, "t", 0).await.2.contains(&joiner),
            "{log:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_is_replaced_without_losing_acknowledged_records() {
    // The controller is a dedicated process, so it stays up when every replica is down.
    let mut c = Cluster::start(
        Opts {
            session_timeout_ms: 3000,
            ..Opts::default()
        }
        .dedicated_controller(),
    );
    c.create_topic("t", 1, 3, 2).await;
    let (old, old_epoch, _) = controller_view(&c, "t", 0).await;
    let mut acked = Vec::new();
    for v in 0..20 {
        let (status, body) = c.produce(old, "t", 0, "all", json!(v)).await;
        assert_eq!(status, 200, "{body}");
        acked.push((body["base_offset"].as_u64().unwrap(), json!(v)));
    }
    // One record the followers never get: pause them, let the fetches they left
    // waiting in the leader's purgatory expire (else the append would still answer
    // them), append with acks=1, kill the leader, resume them (well within the
    // session timeout).
    let f: Vec<i32> = (1..=3).filter(|id| *id != old).collect();
    for id in &f {
        c.nodes[id].signal(libc::SIGSTOP);
    }
    tokio::time::sleep(Duration::from_millis(900)).await;
    let (status, body) = c.produce(old, "t", 0, "1", json!("uncommitted")).await;
    assert_eq!(status, 200, "{body}");
    c.node(old).kill();
    for id in &f {
        c.nodes[id].signal(libc::SIGCONT);
    }

    let (new, new_epoch) = wait_new_leader(&c, "t", 0, old, old_epoch).await;
    assert!(f.contains(&new));
    // Every acknowledged record is on the new leader, at its offset.
    let log = c
        .wait_for(
            "the new leader to serve every acknowledged record",
            || async {
                let (status, body) = c
                    .get(
                        &c.addr(new),
                        "/v1/topics/t/partitions/0/records?offset=0&max_records=1000",
                    )
                    .await;
                let records: Vec<(u64, Value)> = body["records"]
                    .as_array()?
                    .iter()
                    .map(|r| (r["offset"].as_u64().unwrap(), r["value"].clone()))
                    .collect();
                (status == 200 && records.len() >= acked.len()).then_some(records)
            },
        )
        .await;
    for (o, v) in &acked {
        assert_eq!(
            &log[*o as usize],
            &(*o, v.clone()),
            "acknowledged record lost"
        );
    }
    // The new leader takes writes (ISR of two, min.insync.replicas 2).
    for v in 100..103 {
        let (status, body) = c.produce(new, "t", 0, "all", json!(v)).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["leader_epoch"], new_epoch);
    }
    // The old leader restarts, truncates its uncommitted record and catches up.
    c.node(old).restart();
    c.wait_for("the old leader to converge with the new one", || async {
        let d = c.debug_partition(old, "t", 0).await?;
        if d["role"] != "follower" {
            return None;
        }
        let ours = local_log(&c, old, "t", 0).await?;
        let theirs = local_log(&c, new, "t", 0).await?;
        (ours == theirs && ours.len() == 23).then_some(())
    })
    .await;
    let ours = local_log(&c, old, "t", 0).await.unwrap();
    assert!(
        !ours.iter().any(|(_, v)| v == "uncommitted"),
        "truncated: {ours:?}"
    );
    c.wait_for("the old leader back in the ISR", || async {
        (controller_view(&c, "t", 0).await.2.len() == 3).then_some(())
    })
    .await;
    // KIP-903: the leader knows the restarted follower by its new process's broker
    // epoch (what the AlterPartition that re-added it named).
    let restarted_epoch: u64 = c.nodes[&old]
        .log()
        .lines()
        .filter_map(|l| {
            l.split("broker epoch ")
                .nth(1)?
                .split(',')
                .next()?
                .parse()
                .ok()
        })
        .next_back()
        .expect("the node logs its broker epoch");
    let d = c.debug_partition(new, "t", 0).await.unwrap();
    assert_eq!(
        d["followers"][old.to_string()]["broker_epoch"].as_u64(),
        Some(restarted_epoch),
        "{d}"
    );

    // No live ISR member: the partition has no leader.
    for id in 1..=3 {
        c.node(id).kill();
    }
    c.wait_for("leader -1 with every replica dead", || async {
        (controller_view(&c, "t", 0).await.0 == -1).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_epochs_are_fenced_and_a_replaced_leader_cannot_ack() {
    let c = Cluster::start(Opts::default());
    c.create_topic("t", 1, 3, 2).await;
    let (old, old_epoch, _) = controller_view(&c, "t", 0).await;
    let (status, _) = c.produce(old, "t", 0, "all", json!("before")).await;
    assert_eq!(status, 200);
    let follower = (1..=3).find(|id| *id != old).unwrap();

    // A FETCH with a leader epoch other than the leader's is fenced, both ways.
    for epoch in [old_epoch - 1, old_epoch + 1] {
        let (status, body) = c
            .post(
                &c.addr(old),
                "/internal/fetch",
                &json!({"topic": "t", "partition": 0, "replica_id": follower,
                        "fetch_offset": 0, "leader_epoch": epoch, "max_records": 1}),
            )
            .await;
        assert_eq!(
            (status, body["error"].as_str()),
            (409, Some("FENCED_LEADER_EPOCH")),
            "{body}"
        );
        assert_eq!(body["leader_epoch"], old_epoch);
    }
    // A LeaderAndIsr from an older controller epoch is fenced.
    let (_, md) = c.get(&c.controller_addr().await, "/v1/metadata").await;
    let stale = md["controller_epoch"].as_i64().unwrap() - 1;
    let (status, body) = c
        .post(
            &c.addr(old),
            "/internal/leader-and-isr",
            &json!({"controller_epoch": stale, "brokers": [], "partitions": []}),
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("FENCED_LEADER_EPOCH")),
        "{body}"
    );
    assert_eq!(body["controller_epoch"], md["controller_epoch"]);
    // A LeaderAndIsr meant for an earlier process of the follower (a push sent before
    // it restarted, delivered late) is fenced by broker epoch, even from the current
    // controller: it must not make the follower leader at that push's epoch.
    let (status, body) = c
        .post(
            &c.addr(follower),
            "/internal/leader-and-isr",
            &json!({"controller_epoch": md["controller_epoch"], "broker_epoch": 1,
                    "brokers": md["brokers"],
                    "partitions": [{"topic": "t", "partition": 0, "leader": follower,
                                    "leader_epoch": old_epoch + 5, "partition_epoch": 99,
                                    "isr": [follower], "replicas": [1, 2, 3],
                                    "min_insync_replicas": 2}]}),
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("FENCED_LEADER_EPOCH")),
        "{body}"
    );
    assert!(
        body["broker_epoch"].as_u64().is_some_and(|e| e != 1),
        "{body}"
    );
    let seen = c.debug_partition(follower, "t", 0).await.unwrap();
    assert_eq!(
        (seen["role"].as_str(), seen["leader_epoch"].as_i64()),
        (Some("follower"), Some(old_epoch)),
        "{seen}"
    );

    // Pause the leader until the controller replaces it and both followers know.
    c.nodes[&old].signal(libc::SIGSTOP);
    let (new, new_epoch) = wait_new_leader(&c, "t", 0, old, old_epoch).await;
    c.wait_for("both followers on the new epoch", || async {
        for id in (1..=3).filter(|id| *id != old) {
            if c.debug_partition(id, "t", 0).await?["leader_epoch"] != new_epoch {
                return None;
            }
        }
        Some(())
    })
    .await;
    // A write sent to the old leader while it is paused; it resumes with its stale
    // view. Whatever it does first, it cannot acknowledge: nobody fetches from it
    // under its epoch, and its ISR can only shrink through the controller.
    let http = c.http.clone();
    let url = format!(
        "http://{}/v1/topics/t/partitions/0/records?acks=all",
        c.addr(old)
    );
    let write = tokio::spawn(async move {
        let resp = http
            .post(url)
            .json(&json!({"records": [{"value": "stale"}]}))
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), resp.json::<Value>().await.unwrap())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    c.nodes[&old].signal(libc::SIGCONT);
    let (status, body) = write.await.unwrap();
    assert!(
        matches!(
            body["error"].as_str(),
            Some("NOT_LEADER") | Some("REQUEST_TIMED_OUT")
        ),
        "a replaced leader answered {status} {body}"
    );
    c.wait_for("the old leader to converge with the new one", || async {
        let ours = local_log(&c, old, "t", 0).await?;
        let theirs = local_log(&c, new, "t", 0).await?;
        (ours == theirs).then_some(())
    })
    .await;
    let log = local_log(&c, new, "t", 0).await.unwrap();
    assert!(!log.iter().any(|(_, v)| v == "stale"), "{log:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_view_compare_and_set_and_linearizable_reads() {
    let c = Cluster::start(Opts::default());
    c.create_topic("reg", 1, 3, 2).await;
    let (old, old_epoch, _) = controller_view(&c, "reg", 0).await;
    let write = |id: i32, v: Value, if_value: Option<Value>| {
        let mut body = json!({"records": [{"key": "x", "value": v}]});
        if let Some(iv) = if_value {
            body["if_value"] = iv;
        }
        let c = &c;
        async move {
            c.post(
                &c.addr(id),
                "/v1/topics/reg/partitions/0/records?acks=all",
                &body,
            )
            .await
        }
    };
    let (status, body) = c.get(&c.addr(old), "/v1/topics/reg/keys/x").await;
    assert_eq!(
        (status, &body["value"], &body["offset"]),
        (200, &Value::Null, &Value::Null)
    );
    assert_eq!(write(old, json!(1), Some(Value::Null)).await.0, 200);
    let (status, body) = write(old, json!(2), Some(json!(7))).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (412, Some("PRECONDITION_FAILED"))
    );
    assert_eq!(body["current"], 1);
    assert_eq!(write(old, json!(2), Some(json!(1))).await.0, 200);
    let (status, body) = c
        .get(&c.addr(old), "/v1/topics/reg/keys/x?linearizable=true")
        .await;
    assert_eq!((status, &body["value"]), (200, &json!(2)), "{body}");
    let follower = (1..=3).find(|id| *id != old).unwrap();
    let (status, body) = c.get(&c.addr(follower), "/v1/topics/reg/keys/x").await;
    assert_eq!((status, body["error"].as_str()), (421, Some("NOT_LEADER")));

    // The leader is replaced while paused; the new leader has the acknowledged value.
    c.nodes[&old].signal(libc::SIGSTOP);
    let (new, _) = wait_new_leader(&c, "reg", 0, old, old_epoch).await;
    let (status, body) = c
        .wait_for("a linearizable read on the new leader", || async {
            let r = c
                .get(&c.addr(new), "/v1/topics/reg/keys/x?linearizable=true")
                .await;
            (r.0 == 200).then_some(r)
        })
        .await;
    assert_eq!((status, &body["value"]), (200, &json!(2)), "{body}");
    // The old leader, resumed, must not answer a linearizable read: NOT_LEADER, or,
    // while its own return makes the controller quorum elect again (a voter back
    // from a pause starts an election), REQUEST_TIMED_OUT.
    c.nodes[&old].signal(libc::SIGCONT);
    let (status, body) = c
        .get(&c.addr(old), "/v1/topics/reg/keys/x?linearizable=true")
        .await;
    assert!(
        matches!(
            (status, body["error"].as_str()),
            (421, Some("NOT_LEADER")) | (504, Some("REQUEST_TIMED_OUT"))
        ),
        "{body}"
    );
}

/// A broker that is not a controller voter finds the active controller by
/// `NOT_CONTROLLER` hints (a broker id), and a voter that is not the active
/// controller answers a controller call with that hint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_follow_not_controller_to_the_active_controller() {
    let c = Cluster::start(Opts {
        nodes: 4,
        controller_voters: Some(vec![1, 2, 3]),
        ..Opts::default()
    });
    let (active, _) = c.controller().await;
    // Alive means registered by heartbeats, which broker 4 (no voter) sends to the
    // controller it learns from the hints.
    c.wait_for(
        "every broker to heartbeat to the active controller",
        || async {
            let md = c.metadata_of(active).await?;
            let brokers = md["brokers"].as_array()?;
            (brokers.len() == 4 && brokers.iter().all(|b| b["alive"] == true)).then_some(())
        },
    )
    .await;
    let other = (1..=3).find(|&v| v != active).unwrap();
    let (status, body) = c
        .post(
            &c.addr(other),
            "/v1/topics",
            &json!({"name": "t", "partitions": 4, "replication_factor": 3,
                    "min_insync_replicas": 2}),
        )
        .await;
    assert_eq!(
        (status, &body["error"], &body["controller_id"]),
        (421, &json!("NOT_CONTROLLER"), &json!(active)),
        "{body}"
    );
    c.create_topic("t", 4, 3, 2).await;
    // Partition 3 lives on [4, 1, 2]: broker 4 leads it and acknowledges with acks=all.
    let (leader, _, _) = controller_view(&c, "t", 3).await;
    let (status, body) = c.produce(leader, "t", 3, "all", json!(1)).await;
    assert_eq!(status, 200, "{body}");
    let (_, md) = c.get(&c.addr(4), "/v1/metadata").await;
    assert_eq!(md["controller_id"], active, "{md}");
    let (status, body) = c
        .post(
            &c.addr(4),
            "/v1/topics",
            &json!({"name": "u", "partitions": 1,
                "replication_factor": 1, "min_insync_replicas": 1}),
        )
        .await;
    assert_eq!(
        (status, &body["error"], &body["controller_id"]),
        (421, &json!("NOT_CONTROLLER"), &json!(active)),
        "{body}"
    );
}
