//! A partition reassignment across a controller failover, as real processes: four
//! brokers, every one a controller voter. The active controller is killed after the
//! adding replica entered AR and before it is in the ISR (it is paused meanwhile, so
//! it cannot catch up early); the new active controller resumes from the replicated
//! state and completes the reassignment once the replica has caught up. Every
//! acknowledged record is then served by the final leader and the final replicas'
//! logs are identical. Every wait is bounded; every process dies with the cluster,
//! also on panic.

use std::time::Instant;

use crate::support::{Cluster, Opts, ids, partition_in};
use serde_json::{Value, json};

/// t-0 as voter `id` says (waiting for it to answer). While a broker is paused
/// the test asks a voter it knows by id: finding the controller would wait for the
/// paused one's answer.
async fn state(c: &Cluster, id: i32) -> Value {
    c.wait_for("t-0 in the voter's metadata", || async {
        partition_in(&c.metadata_of(id).await?, "t", 0)
    })
    .await
}

/// Produce `values` to t-0's leader (as voter `id` says) with acks=all; each
/// acknowledged, at its offset.
async fn produce_all(c: &Cluster, id: i32, values: &[Value]) -> Vec<(u64, Value)> {
    let mut acked = Vec::new();
    for v in values {
        let leader = state(c, id).await["leader"].as_i64().unwrap() as i32;
        let (status, body) = c.produce(leader, "t", 0, "all", v.clone()).await;
        assert_eq!(status, 200, "{body}");
        acked.push((body["base_offset"].as_u64().unwrap(), v.clone()));
    }
    acked
}

/// Reassign t-0 to `replicas` and wait until it is done: exactly those replicas,
/// all in the ISR, nothing adding or removing. The final state.
async fn reassign(c: &Cluster, replicas: &[i32]) -> Value {
    let (status, body) = c
        .post_controller(
            "/v1/topics/t/partitions/0/reassign",
            &json!({ "replicas": replicas }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    settled(c, replicas).await
}

async fn settled(c: &Cluster, replicas: &[i32]) -> Value {
    c.wait_for(&format!("t-0 settled on {replicas:?}"), || async {
        let s = c.controller_partition("t", 0).await?;
        let done = s["replicas"] == json!(replicas)
            && s["adding"] == json!([])
            && s["removing"] == json!([])
            && ids(&s["isr"]) == ids(&json!(replicas));
        done.then_some(s)
    })
    .await
}

/// A node's committed log of t-0: (offset, leader epoch, value) below its HW.
async fn committed(c: &Cluster, id: i32) -> Option<(u64, Vec<(u64, i64, Value)>)> {
    let (status, v) = c.get(&c.addr(id), "/debug/log/t/0").await;
    let hw = v["high_watermark"].as_u64().filter(|_| status == 200)?;
    let records = v["records"].as_array()?.iter();
    let below = records.filter(|r| r["offset"].as_u64().is_some_and(|o| o < hw));
    let entries = below.map(|r| {
        let o = r["offset"].as_u64().unwrap();
        (o, r["leader_epoch"].as_i64().unwrap(), r["value"].clone())
    });
    Some((hw, entries.collect()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_controller_resumes_a_reassignment_the_old_one_left_half_done() {
    let started = Instant::now();
    // A session timeout that a paused broker keeps well within while the
    // reassignment is requested, on a loaded machine too.
    let mut c = Cluster::start(Opts {
        nodes: 4,
        session_timeout_ms: 3000,
        ..Opts::default()
    });
    c.create_topic("t", 1, 2, 2).await;
    let (old, old_epoch) = c.controller().await;
    let others: Vec<i32> = (1..=4).filter(|&id| id != old).collect();
    let (o1, o2, o3) = (others[0], others[1], others[2]);
    // t-0 off the controller's broker first: [o1, o2], led by o1.
    let s = reassign(&c, &[o1, o2]).await;
    assert_eq!(s["leader"], o1, "{s}");
    let mut acked = produce_all(&c, old, &[json!(0), json!(1), json!(2)]).await;

    // o3 paused: it can enter AR but cannot fetch, so it cannot be in the ISR.
    c.nodes[&o3].signal(libc::SIGSTOP);
    let path = "/v1/topics/t/partitions/0/reassign";
    let (status, body) = c
        .post(&c.addr(old), path, &json!({ "replicas": [o2, o3] }))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (&body["replicas"], &body["adding"], &body["removing"]),
        (&json!([o2, o3, o1]), &json!([o3]), &json!([o1])),
        "{body}"
    );
    acked.extend(produce_all(&c, old, &[json!(3), json!(4)]).await);
    // Every running voter holds the step it is at, adding replicas as adding.
    for id in [old, o1, o2] {
        c.wait_for(&format!("voter {id} to hold the reassignment"), || async {
            let s = partition_in(&c.metadata_of(id).await?, "t", 0)?;
            let held = s["adding"] == json!([o3]) && s["removing"] == json!([o1]);
            held.then_some(())
        })
        .await;
    }
    assert!(!ids(&state(&c, old).await["isr"]).contains(&o3));

    // The active controller dies between the steps; o3 comes back, so three of four
    // voters elect a new one, which must carry the reassignment on.
    c.node(old).kill();
    c.nodes[&o3].signal(libc::SIGCONT);
    let (new, new_epoch) = c
        .wait_for("a new active controller", || async {
            c.find_controller()
                .await
                .filter(|(id, e)| *id != old && *e > old_epoch)
        })
        .await;
    let s = settled(&c, &[o2, o3]).await;
    assert_eq!(
        s["leader"], o2,
        "leadership moved to a target replica in the ISR: {s}"
    );
    let log = c.nodes[&new].log();
    assert!(
        log.contains(&format!("controller epoch {new_epoch}: active controller")),
        "{log}"
    );
    assert!(
        log.contains("reassignment complete"),
        "the new controller completed it\n{log}"
    );

    // Nothing acknowledged is lost; writes go on; the final replicas agree.
    acked.extend(produce_all(&c, new, &[json!(5)]).await);
    let leader = s["leader"].as_i64().unwrap() as i32;
    let (_, body) = c
        .get(
            &c.addr(leader),
            "/v1/topics/t/partitions/0/records?offset=0",
        )
        .await;
    let served: Vec<(u64, Value)> = body["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["offset"].as_u64().unwrap(), r["value"].clone()))
        .collect();
    assert_eq!(served, acked, "every acknowledged record, at its offset");
    let logs = c
        .wait_for("o2 and o3 to commit the same log", || async {
            let (a, b) = (committed(&c, o2).await?, committed(&c, o3).await?);
            (a == b && a.0 as usize == acked.len()).then_some(a.1)
        })
        .await;
    let values: Vec<(u64, Value)> = logs.into_iter().map(|(o, _, v)| (o, v)).collect();
    assert_eq!(values, acked);
    // The removed replica stopped and deleted its copy.
    c.wait_for("o1 to delete its replica", || async {
        let gone = c.debug_partition(o1, "t", 0).await.is_none();
        (gone && !c.dir.path().join(format!("node{o1}/t-0")).exists()).then_some(())
    })
    .await;
    eprintln!(
        "controller {old} (epoch {old_epoch}) -> {new} (epoch {new_epoch}); test took {:?}",
        started.elapsed()
    );
}
