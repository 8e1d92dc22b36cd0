//! The controller's admin tasks as real processes: a broker the cluster was not
//! started with joins by heartbeat and serves partitions; every broker's metadata
//! covers the whole cluster. Every wait is bounded; every process dies with the
//! cluster, also on panic.

use crate::support::{Cluster, Opts, ids, partition_in};
use serde_json::{Value, json};

/// Produce `values` with acks=all to `topic`-`p`'s leader (as the controller says);
/// (offset, value) of each, all acknowledged.
async fn produce_all(c: &Cluster, topic: &str, p: u32, values: &[Value]) -> Vec<(u64, Value)> {
    let mut acked = Vec::new();
    for v in values {
        let leader = c
            .wait_for("a leader", || async {
                let s = c.controller_partition(topic, p).await?;
                s["leader"].as_i64().filter(|l| *l > 0)
            })
            .await as i32;
        let (status, body) = c.produce(leader, topic, p, "all", v.clone()).await;
        assert_eq!(status, 200, "{body}");
        acked.push((body["base_offset"].as_u64().unwrap(), v.clone()));
    }
    acked
}

/// The records `topic`-`p`'s leader serves from offset 0, once it serves `n` or more.
async fn read_all(c: &Cluster, topic: &str, p: u32, n: usize) -> Vec<(u64, Value)> {
    c.wait_for("the leader to serve every record", || async {
        let s = c.controller_partition(topic, p).await?;
        let leader = s["leader"].as_i64().filter(|l| *l > 0)? as i32;
        let path = format!("/v1/topics/{topic}/partitions/{p}/records?offset=0&max_records=1000");
        let (status, body) = c.get(&c.addr(leader), &path).await;
        let records: Vec<(u64, Value)> = body["records"]
            .as_array()?
            .iter()
            .map(|r| (r["offset"].as_u64().unwrap(), r["value"].clone()))
            .collect();
        (status == 200 && records.len() >= n).then_some(records)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_the_cluster_was_not_started_with_joins_and_leads_a_partition() {
    let mut c = Cluster::start(Opts::default());
    c.wait_registered().await;
    c.join(4, &[]);
    c.wait_registered().await;
    let addr4 = c.addr(4);
    // Partition 3 of a first topic on brokers 1-4 is [4, 1]: broker 4 leads it, and
    // broker 1, which has no --peers entry for 4, fetches from the address 4
    // registered with.
    c.create_topic("t", 4, 2, 2).await;
    let s = c.controller_partition("t", 3).await.unwrap();
    assert_eq!(
        (ids(&s["replicas"]), &s["leader"]),
        (vec![1, 4], &json!(4)),
        "{s}"
    );
    let acked = produce_all(&c, "t", 3, &[json!("a"), json!("b"), json!("c")]).await;
    assert_eq!(read_all(&c, "t", 3, 3).await, acked);
    // Every broker's metadata — the voters' and the joined one's, which is no voter —
    // names 4 with its address and shows every partition.
    c.wait_for(
        "every broker's metadata to show the whole cluster",
        || async {
            for id in 1..=4 {
                let md = c.metadata_of(id).await?;
                let b4 = md["brokers"]
                    .as_array()?
                    .iter()
                    .find(|b| b["id"] == 4)?
                    .clone();
                let all = (0..4).all(|p| partition_in(&md, "t", p).is_some());
                if b4["address"] != json!(addr4) || b4["alive"] != true || !all {
                    return None;
                }
            }
            Some(())
        },
    )
    .await;
    let md = c.metadata_of(4).await.unwrap();
    assert_eq!(md["controller_id"], c.controller().await.0);
    let p3 = partition_in(&md, "t", 3).unwrap();
    assert_eq!((&p3["osr"], &p3["leader"]), (&json!([]), &json!(4)), "{p3}");
}

/// A node's whole local log: (offset, leader epoch, value) of each record.
async fn local_log(c: &Cluster, id: i32, topic: &str, p: u32) -> Option<Vec<(u64, i64, Value)>> {
    let (status, v) = c.get(&c.addr(id), &format!("/debug/log/{topic}/{p}")).await;
    if status != 200 {
        return None;
    }
    let records = v["records"].as_array()?.iter();
    let entries = records.map(|r| {
        let o = r["offset"].as_u64().unwrap();
        (o, r["leader_epoch"].as_i64().unwrap(), r["value"].clone())
    });
    Some(entries.collect())
}

/// Wait until the controller shows `topic`-`p` on exactly `replicas` (in that
/// order), no reassignment in progress, every one in the ISR; its state.
async fn settled_on(c: &Cluster, topic: &str, p: u32, replicas: &[i32]) -> Value {
    c.wait_for(&format!("{topic}-{p} on {replicas:?}"), || async {
        let s = c.controller_partition(topic, p).await?;
        let done = s["replicas"] == json!(replicas)
            && s["adding"] == json!([])
            && s["removing"] == json!([])
            && ids(&s["isr"]) == ids(&json!(replicas));
        done.then_some(s)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reassignment_moves_a_partition_off_its_leader_and_the_old_replicas_delete_theirs() {
    let c = Cluster::start(Opts {
        nodes: 4,
        ..Opts::default()
    });
    c.create_topic("t", 1, 2, 2).await;
    let s = c.controller_partition("t", 0).await.unwrap();
    assert_eq!((&s["replicas"], &s["leader"]), (&json!([1, 2]), &json!(1)));
    let values: Vec<Value> = (0..5).map(|i| json!(i)).collect();
    let mut acked = produce_all(&c, "t", 0, &values).await;

    // Only the active controller takes it; any other broker names it.
    let path = "/v1/topics/t/partitions/0/reassign";
    let (active, _) = c.controller().await;
    let other = (1..=4).find(|&id| id != active).unwrap();
    let (status, body) = c
        .post(&c.addr(other), path, &json!({"replicas": [3, 4]}))
        .await;
    assert_eq!(
        (status, &body["error"], &body["controller_id"]),
        (421, &json!("NOT_CONTROLLER"), &json!(active))
    );
    let (status, body) = c.post_controller(path, &json!({"replicas": [3, 4]})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (&body["topic"], &body["partition"]),
        (&json!("t"), &json!(0))
    );
    assert_eq!(
        (&body["replicas"], &body["adding"], &body["removing"]),
        (&json!([3, 4, 1, 2]), &json!([3, 4]), &json!([1, 2])),
        "{body}"
    );
    let s = settled_on(&c, "t", 0, &[3, 4]).await;
    assert_eq!(s["leader"], 3, "{s}");
    assert!(
        s["leader_epoch"].as_i64() > Some(0),
        "leadership moved: {s}"
    );
    assert_eq!(
        read_all(&c, "t", 0, 5).await,
        acked,
        "every acknowledged record is there"
    );
    acked.extend(produce_all(&c, "t", 0, &[json!(5)]).await);

    // The removed replicas stopped and deleted theirs.
    for id in [1, 2] {
        c.wait_for(&format!("broker {id} to delete its replica"), || async {
            let gone = c.debug_partition(id, "t", 0).await.is_none();
            let dir = c.dir.path().join(format!("node{id}/t-0"));
            (gone && !dir.exists()).then_some(())
        })
        .await;
    }
    // Both new replicas hold the same log, the committed one at least.
    let (l3, l4) = c
        .wait_for("the new replicas' logs to agree", || async {
            let (l3, l4) = (
                local_log(&c, 3, "t", 0).await?,
                local_log(&c, 4, "t", 0).await?,
            );
            (l3 == l4 && l3.len() == acked.len()).then_some((l3, l4))
        })
        .await;
    assert_eq!(l3, l4);
    let values: Vec<(u64, Value)> = l3.into_iter().map(|(o, _, v)| (o, v)).collect();
    assert_eq!(values, acked);
    // No reassignment is left to cancel.
    let resp = c
        .http
        .delete(format!("http://{}{path}", c.controller_addr().await))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 409);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "NO_REASSIGNMENT_IN_PROGRESS", "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_partitions_are_created_where_topic_creation_would_put_them_and_served() {
    let c = Cluster::start(Opts::default());
    c.create_topic("q", 1, 1, 1).await;
    for id in [2, 3] {
        assert!(
            c.debug_partition(id, "q", 0).await.is_none(),
            "{id} hosts nothing of q"
        );
    }
    let (active, _) = c.controller().await;
    let other = (1..=3).find(|&id| id != active).unwrap();
    let path = "/v1/topics/q/partitions";
    let (status, body) = c.post(&c.addr(other), path, &json!({"count": 3})).await;
    assert_eq!(
        (status, &body["controller_id"]),
        (421, &json!(active)),
        "{body}"
    );
    let (status, body) = c.post_controller(path, &json!({"count": 3})).await;
    assert_eq!(status, 200, "{body}");
    let replicas: Vec<&Value> = body["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["replicas"])
        .collect();
    assert_eq!(replicas, [&json!([1]), &json!([2]), &json!([3])], "{body}");
    // Brokers 2 and 3 open the partitions they now lead, and serve them.
    for (id, p) in [(2, 1), (3, 2)] {
        c.wait_for(&format!("broker {id} to lead q-{p}"), || async {
            let d = c.debug_partition(id, "q", p).await?;
            (d["role"] == "leader").then_some(())
        })
        .await;
        let acked = produce_all(&c, "q", p, &[json!(format!("p{p}"))]).await;
        assert_eq!(read_all(&c, "q", p, 1).await, acked);
    }
    // A count that does not grow the topic is refused; every broker shows all three.
    let (status, body) = c.post_controller(path, &json!({"count": 3})).await;
    assert_eq!(
        (status, &body["error"]),
        (400, &json!("INVALID_PARTITIONS")),
        "{body}"
    );
    c.wait_for("every broker to show three partitions", || async {
        for id in 1..=3 {
            let md = c.metadata_of(id).await?;
            partition_in(&md, "q", 2)?;
        }
        Some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decommissioned_broker_hands_its_replicas_to_a_joined_one_and_can_be_stopped() {
    let mut c = Cluster::start(Opts::default());
    c.create_topic("t", 2, 2, 2).await;
    let mut acked = produce_all(&c, "t", 0, &[json!("a"), json!("b")]).await;
    c.join(4, &[]);
    c.wait_registered().await;
    // Broker 1 leads t-0 on [1, 2]; broker 4, which holds nothing, takes its place.
    let (status, body) = c
        .post_controller("/v1/brokers/1/decommission", &json!({}))
        .await;
    assert_eq!((status, &body["id"]), (200, &json!(1)), "{body}");
    assert!(
        body["status"] == "decommissioning" || body["status"] == "decommissioned",
        "{body}"
    );
    let s = settled_on(&c, "t", 0, &[4, 2]).await;
    assert_eq!(s["leader"], 4, "{s}");
    c.wait_for("broker 1 decommissioned", || async {
        let md = c.metadata_of(c.controller().await.0).await?;
        let b = md["brokers"]
            .as_array()?
            .iter()
            .find(|b| b["id"] == 1)?
            .clone();
        (b["status"] == "decommissioned").then_some(())
    })
    .await;
    c.wait_for("broker 1 to host nothing", || async {
        let (_, d) = c.get(&c.addr(1), "/debug/partitions").await;
        d["partitions"].as_array()?.is_empty().then_some(())
    })
    .await;
    assert!(!c.dir.path().join("node1/t-0").exists());
    // Stopped, it is missed by nobody: everything acknowledged is on t-0's replicas.
    assert!(c.node(1).terminate(), "a clean stop");
    acked.extend(produce_all(&c, "t", 0, &[json!("c")]).await);
    assert_eq!(read_all(&c, "t", 0, 3).await, acked);
    let logs = c
        .wait_for("t-0's replicas to agree", || async {
            let (l4, l2) = (
                local_log(&c, 4, "t", 0).await?,
                local_log(&c, 2, "t", 0).await?,
            );
            (l4 == l2 && l4.len() == 3).then_some(l4)
        })
        .await;
    let values: Vec<(u64, Value)> = logs.into_iter().map(|(o, _, v)| (o, v)).collect();
    assert_eq!(values, acked);
    // It takes nothing new: a reassignment naming it is refused.
    let (status, body) = c
        .post_controller(
            "/v1/topics/t/partitions/1/reassign",
            &json!({"replicas": [1, 3]}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("decommissioned"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_removed_while_its_broker_was_down_is_set_aside_when_it_returns() {
    let mut c = Cluster::start(Opts::default());
    c.create_topic("t", 1, 2, 1).await;
    let acked = produce_all(&c, "t", 0, &[json!("a")]).await;
    c.node(1).kill();
    c.wait_for("broker 2 to lead t-0", || async {
        let s = c.controller_partition("t", 0).await?;
        (s["leader"] == 2).then_some(())
    })
    .await;
    let (status, body) = c
        .post_controller(
            "/v1/topics/t/partitions/0/reassign",
            &json!({"replicas": [2, 3]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    settled_on(&c, "t", 0, &[2, 3]).await;
    // Back, broker 1 hears t-0 no longer names it: its directory is set aside, never
    // opened; nothing of t-0 is lost.
    c.node(1).restart();
    let node1 = c.dir.path().join("node1");
    let stray = c
        .wait_for("broker 1 to set its t-0 aside", || async {
            let names = std::fs::read_dir(&node1).ok()?;
            let names: Vec<String> = names
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect();
            let stray = names.iter().find(|n| n.starts_with("t-0.stray-"))?.clone();
            (!names.iter().any(|n| n == "t-0")).then_some(stray)
        })
        .await;
    assert!(
        node1.join(&stray).join("log").is_dir(),
        "{stray} keeps the old log"
    );
    assert!(c.debug_partition(1, "t", 0).await.is_none());
    assert_eq!(read_all(&c, "t", 0, 1).await, acked);
}
