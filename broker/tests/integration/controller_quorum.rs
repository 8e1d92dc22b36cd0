//! The controller quorum as real processes: every broker runs a voter; the active
//! controller is killed, paused, cut off from its majority, restarted with the rest;
//! voters start with a corrupt Raft log or a voter set that does not match. Every wait
//! is bounded; the failover times measured here are printed, not asserted (the
//! benchmark `failover` measures them).

use std::time::{Duration, Instant};

use crate::support::{Cluster, Opts, ids, partition_in, run_to_exit};
use serde_json::{Value, json};

/// (leader, leader epoch, ISR) of a partition, as the active controller says.
async fn view(c: &Cluster, topic: &str, p: u32) -> (i32, i64, Vec<i32>) {
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

/// Produce `values` with acks=all to the partition's leader; their offsets.
async fn produce_all(c: &Cluster, topic: &str, values: &[Value]) -> Vec<(u64, Value)> {
    let mut acked = Vec::new();
    for v in values {
        let (leader, _, _) = view(c, topic, 0).await;
        let (status, body) = c.produce(leader, topic, 0, "all", v.clone()).await;
        assert_eq!(status, 200, "{body}");
        acked.push((body["base_offset"].as_u64().unwrap(), v.clone()));
    }
    acked
}

/// Wait until the partition's leader serves every record of `acked` at its offset.
async fn assert_all_there(c: &Cluster, topic: &str, acked: &[(u64, Value)]) {
    let records = c
        .wait_for("the leader to serve every acknowledged record", || async {
            let s = c.controller_partition(topic, 0).await?;
            let leader = s["leader"].as_i64().filter(|l| *l > 0)? as i32;
            let path = format!("/v1/topics/{topic}/partitions/0/records?offset=0&max_records=1000");
            let (status, body) = c.get(&c.addr(leader), &path).await;
            let records = body["records"].as_array()?.clone();
            let last = acked.iter().map(|(o, _)| *o as usize).max().unwrap_or(0);
            (status == 200 && records.len() > last).then_some(records)
        })
        .await;
    for (offset, value) in acked {
        let r = &records[*offset as usize];
        assert_eq!(
            (&r["offset"], &r["value"]),
            (&json!(offset), value),
            "acknowledged record lost"
        );
    }
}

/// Whether the active controller's metadata says broker `id` is alive.
async fn alive(c: &Cluster, id: i32) -> Option<bool> {
    let (active, _) = c.find_controller().await?;
    let md = c.metadata_of(active).await?;
    let b = md["brokers"]
        .as_array()?
        .iter()
        .find(|b| b["id"] == id)?
        .clone();
    b["alive"].as_bool()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_are_created_once_and_bad_requests_get_json_errors() {
    let c = Cluster::start(Opts::default());
    c.wait_registered().await;
    let topics = "/v1/topics";
    let body = |name: &str, partitions: u32, rf: u32| {
        json!({"name": name, "partitions": partitions, "replication_factor": rf,
               "min_insync_replicas": 1})
    };
    let (status, answer) = c.post_controller(topics, &body("queue", 2, 3)).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["partitions"][0]["replicas"], json!([1, 2, 3]));
    assert_eq!(answer["partitions"][1]["replicas"], json!([2, 3, 1]));
    let (status, answer) = c.post_controller(topics, &body("queue", 1, 1)).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (409, Some("TOPIC_ALREADY_EXISTS"))
    );

    let (active, epoch) = c.controller().await;
    assert!(epoch >= 1);
    let addr = c.addr(active);
    let bad: [(&str, Value); 4] = [
        (
            "wrong type",
            json!({"name": "x", "partitions": "two", "replication_factor": 1, "min_insync_replicas": 1}),
        ),
        (
            "unknown field",
            json!({"name": "x", "partitions": 1, "replication_factor": 1, "min_insync_replicas": 1, "acks": 1}),
        ),
        ("rf > brokers", body("x", 1, 4)),
        ("bad name", body("a b", 1, 1)),
    ];
    for (what, b) in bad {
        let (status, answer) = c.post(&addr, topics, &b).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (400, Some("INVALID_REQUEST")),
            "{what}: {answer}"
        );
    }
    let internal = [
        (
            "heartbeat",
            json!({"broker_id": 9, "broker_epoch": 1}),
            400,
            "INVALID_REQUEST",
        ),
        (
            "alter-partition",
            json!({"broker_id": 1}),
            400,
            "INVALID_REQUEST",
        ),
        (
            "alter-partition",
            json!({"broker_id": 1, "broker_epoch": 1, "topic": "nope", "partition": 0,
                                   "leader_epoch": 0, "partition_epoch": 0, "new_isr": [1]}),
            404,
            "UNKNOWN_TOPIC_OR_PARTITION",
        ),
        (
            "confirm-leadership",
            json!({"broker_id": 2, "topic": "queue", "partition": 0, "leader_epoch": 0}),
            421,
            "NOT_LEADER",
        ),
        (
            "raft/vote",
            json!({"from": 1, "quorum": {}, "rpc": {}}),
            400,
            "INVALID_REQUEST",
        ),
    ];
    for (route, b, want_status, want_code) in internal {
        let (status, answer) = c.post(&addr, &format!("/internal/{route}"), &b).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (want_status, Some(want_code)),
            "{route} {b}: {answer}"
        );
    }
    // A voter that is not the active controller names the one that is.
    let other = (1..=3).find(|&id| id != active).unwrap();
    let (status, answer) = c.post(&c.addr(other), topics, &body("y", 1, 1)).await;
    assert_eq!(
        (status, &answer["error"], &answer["controller_id"]),
        (421, &json!("NOT_CONTROLLER"), &json!(active))
    );
    let md = c.metadata_of(other).await.unwrap();
    assert_eq!(
        (&md["controller_id"], md["topics"].as_array().map(Vec::len)),
        (&json!(active), Some(1))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_controller_is_replaced_by_another_broker_under_a_higher_epoch() {
    let mut c = Cluster::start(Opts::default());
    c.create_topic("t", 1, 3, 2).await;
    let acked = produce_all(&c, "t", &[json!(0), json!(1), json!(2)]).await;
    let (old, old_epoch) = c.controller().await;

    let killed = Instant::now();
    c.node(old).kill();
    let (new, new_epoch) = c
        .wait_for("another broker to take over as controller", || async {
            let (id, epoch) = c.find_controller().await?;
            (id != old && epoch > old_epoch).then_some((id, epoch))
        })
        .await;
    eprintln!(
        "controller failover: {:?} (election timeout 500 ms); broker {old} epoch {old_epoch} -> broker {new} epoch {new_epoch}",
        killed.elapsed()
    );
    // The new controller carries on: it declares the killed broker dead, the
    // partition has a live leader, acks=all works, nothing acknowledged is lost.
    c.wait_for("the killed broker declared dead", || async {
        (!alive(&c, old).await?).then_some(())
    })
    .await;
    let (leader, _, isr) = view(&c, "t", 0).await;
    assert!(leader != old && !isr.contains(&old), "{leader} {isr:?}");
    let more = produce_all(&c, "t", &[json!(3)]).await;
    assert_all_there(&c, "t", &[acked, more].concat()).await;
    let md = c.metadata_of(new).await.unwrap();
    assert_eq!(md["controller_epoch"], new_epoch);

    // Back, it registers with the new controller and rejoins the ISR.
    c.node(old).restart();
    c.wait_for("the restarted broker back in the ISR", || async {
        (view(&c, "t", 0).await.2.len() == 3).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_controller_is_replaced_and_changes_nothing_when_it_resumes() {
    let c = Cluster::start(Opts::default());
    c.create_topic("t", 1, 3, 2).await;
    let acked = produce_all(&c, "t", &[json!(0), json!(1)]).await;
    let (old, old_epoch) = c.controller().await;

    let paused = Instant::now();
    c.nodes[&old].signal(libc::SIGSTOP);
    let (new, new_epoch) = c
        .wait_for("another broker to take over as controller", || async {
            let (id, epoch) = c.find_controller().await?;
            (id != old && epoch > old_epoch).then_some((id, epoch))
        })
        .await;
    eprintln!(
        "controller takeover from a paused one: {:?}",
        paused.elapsed()
    );
    c.wait_for("the paused broker declared dead", || async {
        (!alive(&c, old).await?).then_some(())
    })
    .await;
    let more = produce_all(&c, "t", &[json!(2)]).await;
    let (leader, leader_epoch, _) = view(&c, "t", 0).await;
    let before = c.nodes[&old].log().len();

    // It wakes up believing it is still the controller, with its old term.
    c.nodes[&old].signal(libc::SIGCONT);
    let watch = Instant::now();
    while watch.elapsed() < Duration::from_secs(3) {
        for id in 1..=3 {
            let Some(md) = c.metadata_of(id).await else {
                continue;
            };
            let epoch = md["controller_epoch"].as_i64().unwrap_or(0);
            // The woken voter's own copy of the state may lag for a moment; nobody
            // takes it for the controller meanwhile, itself included.
            assert!(
                id == old || epoch >= new_epoch,
                "broker {id} went back to controller epoch {epoch}: {md}"
            );
            assert!(
                md["controller_id"] != old || epoch > new_epoch,
                "broker {id} names the deposed controller: {md}"
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // It decided nothing under its old epoch: no broker declared dead, no partition
    // changed (unless it legitimately became controller again, in a later term).
    let woke = c.nodes[&old].log()[before..].to_string();
    for line in woke.lines() {
        if line.contains("active controller") {
            assert!(
                !line.contains(&format!("controller epoch {old_epoch}:")),
                "{woke}"
            );
            break;
        }
        assert!(
            !line.contains(": dead (") && !line.starts_with("partition "),
            "the woken controller acted: {line}\n{woke}"
        );
    }
    // The partition kept its leader and leader epoch; the woken broker is back.
    let (now_leader, now_epoch, _) = view(&c, "t", 0).await;
    assert_eq!((now_leader, now_epoch), (leader, leader_epoch));
    c.wait_for("the woken broker alive again", || async {
        alive(&c, old).await?.then_some(())
    })
    .await;
    assert_all_there(&c, "t", &[acked, more].concat()).await;
    let _ = new;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_majority_of_voters_nothing_is_elected_and_no_acknowledged_write_is_lost() {
    let mut c = Cluster::start(Opts::default());
    c.create_topic("t", 1, 3, 2).await;
    let acked = produce_all(&c, "t", &[json!(0), json!(1), json!(2)]).await;
    let (leader, epoch, _) = view(&c, "t", 0).await;
    let f: Vec<i32> = (1..=3).filter(|&id| id != leader).collect();

    // Two of three voters paused: no controller. The ISR cannot shrink, so an
    // acks=all write is not acknowledged; it fails cleanly, with an answer that
    // says its outcome is unknown.
    for id in &f {
        c.nodes[id].signal(libc::SIGSTOP);
    }
    let (status, body) = c.produce(leader, "t", 0, "all", json!("unknown")).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (504, Some("REQUEST_TIMED_OUT")),
        "{body}"
    );
    let (status, body) = c
        .post(
            &c.addr(leader),
            "/v1/topics",
            &json!({"name": "u", "partitions": 1,
                "replication_factor": 1, "min_insync_replicas": 1}),
        )
        .await;
    assert!(
        matches!(
            (status, body["error"].as_str()),
            (421, Some("NOT_CONTROLLER")) | (504, Some("REQUEST_TIMED_OUT"))
        ),
        "{body}"
    );
    let d = c.debug_partition(leader, "t", 0).await.unwrap();
    assert_eq!(
        (&d["role"], &d["leader_epoch"]),
        (&json!("leader"), &json!(epoch)),
        "{d}"
    );
    for id in &f {
        c.nodes[id].signal(libc::SIGCONT);
    }
    c.wait_for("a controller and a full ISR again", || async {
        (view(&c, "t", 0).await.2.len() == 3).then_some(())
    })
    .await;
    let more = produce_all(&c, "t", &[json!(3)]).await;
    let acked = [acked, more].concat();

    // The leader dies and one more voter is paused: the last one cannot elect
    // anybody, so for several session timeouts it stays a follower of the dead leader.
    let (leader, epoch, _) = view(&c, "t", 0).await;
    let f: Vec<i32> = (1..=3).filter(|&id| id != leader).collect();
    c.node(leader).kill();
    c.nodes[&f[0]].signal(libc::SIGSTOP);
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let d = c.debug_partition(f[1], "t", 0).await.unwrap();
    assert_eq!(
        (&d["leader"], &d["leader_epoch"]),
        (&json!(leader), &json!(epoch)),
        "no election: {d}"
    );
    assert!(
        c.find_controller().await.is_none(),
        "no controller without a majority"
    );

    // The paused voter returns: a quorum again, a clean election, nothing lost.
    c.nodes[&f[0]].signal(libc::SIGCONT);
    let (new_leader, new_epoch, _) = c
        .wait_for("a new leader", || async {
            let v = view(&c, "t", 0).await;
            (f.contains(&v.0) && v.1 > epoch).then_some(v)
        })
        .await;
    assert!(new_epoch > epoch && new_leader != leader);
    assert_all_there(&c, "t", &acked).await;
    c.node(leader).restart();
    c.wait_for("the old leader back in the ISR", || async {
        (view(&c, "t", 0).await.2.len() == 3).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn voters_restarted_together_recover_the_controller_state() {
    let mut c = Cluster::start(Opts::default());
    c.create_topic("t", 2, 3, 2).await;
    let acked = produce_all(&c, "t", &[json!(0), json!(1), json!(2)]).await;
    let (_, epoch) = c.controller().await;
    for id in 1..=3 {
        c.node(id).kill();
    }
    for id in 1..=3 {
        c.node(id).restart();
    }
    let (_, new_epoch) = c.controller().await;
    // A voter that led before the crash may resume its own term (openraft restores a
    // leadership its vote recorded): the epoch never goes back.
    assert!(new_epoch >= epoch, "{new_epoch} after {epoch}");
    c.wait_for(
        "every broker registered and both partitions led",
        || async {
            let (id, _) = c.find_controller().await?;
            let md = c.metadata_of(id).await?;
            let alive = md["brokers"].as_array()?.iter().all(|b| b["alive"] == true);
            let led = (0..2)
                .all(|p| partition_in(&md, "t", p).is_some_and(|s| s["leader"].as_i64() > Some(0)));
            (alive && led).then_some(())
        },
    )
    .await;
    assert_all_there(&c, "t", &acked).await;
    // Restarted brokers rejoin the ISR once caught up (KIP-380).
    c.wait_for("a full ISR again", || async {
        (view(&c, "t", 0).await.2.len() == 3).then_some(())
    })
    .await;
    let more = produce_all(&c, "t", &[json!(3)]).await;
    assert_eq!(more[0].0, 3);
    let (status, body) = c
        .post_controller(
            "/v1/topics",
            &json!({"name": "t", "partitions": 1,
                "replication_factor": 1, "min_insync_replicas": 1}),
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("TOPIC_ALREADY_EXISTS")),
        "the topic survived"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_raft_log_stops_that_broker_and_no_other() {
    let mut c = Cluster::start(Opts::default());
    c.create_topic("t", 1, 3, 2).await;
    let acked = produce_all(&c, "t", &[json!(0)]).await;
    let victim = 3;
    c.node(victim).kill();
    let log = c.dir.path().join(format!("node{victim}/raft/log"));
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[8 + 5] ^= 0x20; // inside the first entry, followed by others
    std::fs::write(&log, &bytes).unwrap();

    c.node(victim).restart();
    let code = c.node(victim).wait_exit_code(Duration::from_secs(30));
    let text = c.nodes[&victim].log();
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("corrupt at byte 0") && text.contains("raft/log"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(&log).unwrap(),
        bytes,
        "its log is left as it was"
    );
    // The others carry on without it.
    c.wait_for("the broker declared dead", || async {
        (!alive(&c, victim).await?).then_some(())
    })
    .await;
    let more = produce_all(&c, "t", &[json!(1)]).await;
    assert_all_there(&c, "t", &[acked, more].concat()).await;
}

/// Two voters' disks fail (EIO) while the active controller commits a change: their
/// Raft log writes fail, which stops a voter's Raft core for good — the quorum
/// would have no majority left. Each voter re-opens itself from disk once its disk
/// works again, and the quorum carries on: a topic is created, a record produced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn voters_whose_disk_failed_reopen_from_disk_and_the_quorum_carries_on() {
    let c = Cluster::start(Opts::default());
    c.create_topic("t", 1, 3, 2).await;
    let acked = produce_all(&c, "t", &[json!(0)]).await;
    let (active, _) = c.controller().await;
    let others: Vec<i32> = (1..=3).filter(|&id| id != active).collect();
    for &id in &others {
        c.disk(id, "eio", None).await;
    }
    // A change the controller must replicate: the followers cannot write it.
    let (status, body) = c
        .post(
            &c.addr(active),
            "/v1/topics",
            &json!({"name": "u", "partitions": 1, "replication_factor": 3,
                    "min_insync_replicas": 2}),
        )
        .await;
    assert_ne!(status, 201, "no majority could have written it: {body}");
    c.wait_for("both followers' Raft voters stopped", || async {
        let stopped = |id: &i32| c.nodes[id].log().contains("the Raft voter stopped");
        others.iter().all(stopped).then_some(())
    })
    .await;
    for &id in &others {
        c.disk(id, "ok", None).await;
    }
    c.wait_for("both voters re-opened from disk", || async {
        let back = |id: &i32| c.nodes[id].log().contains("Raft voter is re-opened");
        others.iter().all(back).then_some(())
    })
    .await;
    c.create_topic("v", 1, 3, 2).await;
    // Their partitions' storage failed too (they left t-0's ISR): back in it, the
    // partition takes acks=all writes again.
    // (Leadership may still move: to the preferred replica, say.)
    let offset = c
        .wait_for("t-0's ISR whole again, and a record produced", || async {
            let s = c.controller_partition("t", 0).await?;
            let leader = s["leader"].as_i64().filter(|&l| l > 0)? as i32;
            if ids(&s["isr"]).len() < 3 {
                return None;
            }
            let (status, body) = c.produce(leader, "t", 0, "all", json!(1)).await;
            (status == 200)
                .then(|| body["base_offset"].as_u64())
                .flatten()
        })
        .await;
    assert_all_there(&c, "t", &[acked, vec![(offset, json!(1))]].concat()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn voter_sets_that_do_not_match_are_refused() {
    // A voter that is not a broker: refused at once.
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<String> = [
        "node",
        "--id",
        "1",
        "--listen",
        "127.0.0.1:0",
        "--peers",
        "2=127.0.0.1:9",
        "--controller-voters",
        "1,7",
        "--data-dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([dir.path().display().to_string()])
    .collect();
    let (code, stderr) = run_to_exit(&args);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("--controller-voters names 7"), "{stderr}");

    let mut c = Cluster::start(Opts::default());
    c.create_topic("t", 1, 3, 2).await;
    let set_voters = |args: &mut Vec<String>| {
        args.retain(|a| a != "--controller-voters" && a != "1,3");
        args.extend(["--controller-voters".to_string(), "1,3".to_string()]);
    };
    // Restarted with other voters than its Raft log holds: refused.
    c.node(3).restart_with(set_voters);
    let code = c.node(3).wait_exit_code(Duration::from_secs(30));
    let text = c.nodes[&3].log();
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("holds a controller quorum of voters"),
        "{text}"
    );
    // A fresh broker with other voters: the quorum refuses its Raft RPCs, and it
    // exits rather than form a quorum of its own.
    std::fs::remove_dir_all(c.dir.path().join("node3")).unwrap();
    c.node(3).restart_with(|_| {});
    let code = c.node(3).wait_exit_code(Duration::from_secs(30));
    let text = c.nodes[&3].log();
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("runs a controller quorum with"), "{text}");
    // The others carry on.
    c.wait_for("broker 3 declared dead", || async {
        (!alive(&c, 3).await?).then_some(())
    })
    .await;
    produce_all(&c, "t", &[json!(1)]).await;
}

/// InitProducerId from the active controller: the id, after retries over a takeover.
async fn producer_id(c: &Cluster) -> u64 {
    let (status, body) = c.post_controller("/v1/producers", &json!({})).await;
    assert_eq!(status, 200, "{body}");
    body["producer_id"].as_u64().expect("a producer id")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_ids_stay_unique_across_a_failover_and_a_restart_of_every_voter() {
    let mut c = Cluster::start(Opts::default());
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..3 {
        assert!(seen.insert(producer_id(&c).await), "{seen:?}");
    }
    // The active controller dies: its successor carries on from the committed ids.
    let (first, _) = c.controller().await;
    c.node(first).kill();
    c.wait_for("another active controller", || async {
        c.find_controller().await.filter(|(id, _)| *id != first)
    })
    .await;
    for _ in 0..3 {
        assert!(seen.insert(producer_id(&c).await), "{seen:?}");
    }
    c.node(first).restart();
    // Every voter restarts at once (the term need not rise): still no id twice.
    for id in 1..=3 {
        c.node(id).kill();
    }
    for id in 1..=3 {
        c.node(id).restart();
    }
    for _ in 0..3 {
        assert!(seen.insert(producer_id(&c).await), "{seen:?}");
    }
}

/// Auto leader rebalance: the broker a failure took a partition from gets it back
/// once it has caught up into the ISR, in a new leader epoch, and nothing
/// acknowledged under either leader is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preferred_replica_back_in_the_isr_leads_its_partition_again() {
    let mut c = Cluster::start(Opts {
        node_args: vec!["--leader-imbalance-check-interval-ms".into(), "300".into()],
        ..Opts::default()
    });
    c.create_topic("t", 1, 3, 2).await;
    let (preferred, epoch, _) = view(&c, "t", 0).await;
    let mut acked = produce_all(&c, "t", &[json!(0), json!(1)]).await;

    c.node(preferred).kill();
    let (other, moved_epoch) = c
        .wait_for("another leader", || async {
            let (leader, e, _) = view(&c, "t", 0).await;
            (leader > 0 && leader != preferred).then_some((leader, e))
        })
        .await;
    assert!(moved_epoch > epoch);
    acked.extend(produce_all(&c, "t", &[json!(2), json!(3)]).await);

    c.node(preferred).restart();
    let back_epoch = c
        .wait_for("the preferred replica leading again", || async {
            let (leader, e, isr) = view(&c, "t", 0).await;
            (leader == preferred && isr.len() == 3).then_some(e)
        })
        .await;
    assert!(back_epoch > moved_epoch, "{back_epoch} after {moved_epoch}");
    acked.extend(produce_all(&c, "t", &[json!(4)]).await);
    assert_all_there(&c, "t", &acked).await;
    assert!(
        c.logs().contains(&format!(
            "preferred replica {preferred} back in the ISR (was led by {other})"
        )),
        "the controller says why"
    );
}
