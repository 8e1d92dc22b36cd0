//! Unclean leader election end to end (real processes, a dedicated controller so
//! that the brokers' deaths leave the quorum in place): with every ISR member dead
//! and an out-of-sync replica alive, `--unclean-election` elects that replica with
//! an ISR of itself, says so (`leader_elected` with `clean: false`), and loses what
//! the ISR committed beyond its log; without it the partition stays offline (leader
//! -1) until an ISR member is back, and nothing acknowledged is lost.

use std::time::{Duration, Instant};

use crate::support::{Cluster, Opts, event_lines, ids};
use serde_json::{Value, json};

/// (leader, leader epoch, ISR) of t-0 as the controller says.
async fn view(c: &Cluster) -> Option<(i32, i64, Vec<i32>)> {
    let s = c.controller_partition("t", 0).await?;
    Some((
        s["leader"].as_i64()? as i32,
        s["leader_epoch"].as_i64()?,
        ids(&s["isr"]),
    ))
}

/// Produce `values` to t-0's leader with acks=all, each acknowledged.
async fn produce_all(c: &Cluster, values: &[&str]) -> Vec<Value> {
    let mut acked = Vec::new();
    for v in values {
        let (leader, _, _) = c
            .wait_for("a leader", || async { view(c).await.filter(|v| v.0 > 0) })
            .await;
        let (status, body) = c.produce(leader, "t", 0, "all", json!(v)).await;
        assert_eq!(status, 200, "{body}");
        acked.push(json!(v));
    }
    acked
}

/// The values t-0's leader serves, once it leads `leader` in a state the node
/// applied.
async fn served_by(c: &Cluster, leader: i32) -> Vec<Value> {
    c.wait_for(&format!("broker {leader} to serve t-0"), || async {
        let path = "/v1/topics/t/partitions/0/records?offset=0&max_records=1000";
        let (status, body) = c.get(&c.addr(leader), path).await;
        let records = body["records"].as_array()?;
        (status == 200).then(|| records.iter().map(|r| r["value"].clone()).collect())
    })
    .await
}

/// Start a cluster of three brokers and a dedicated controller; t-0 on [1, 2, 3]
/// with `a`, `b` committed everywhere, then broker 3 killed and `c`, `d` committed
/// by the ISR [1, 2] alone, then brokers 1 and 2 killed: the partition is offline.
/// Returns every acknowledged value.
async fn isr_dead_and_an_out_of_sync_replica_left(c: &mut Cluster) -> Vec<Value> {
    c.create_topic("t", 1, 3, 1).await;
    assert_eq!(view(c).await.unwrap().0, 1);
    let mut acked = produce_all(c, &["a", "b"]).await;
    c.wait_for("every replica to have a and b", || async {
        let d = c.debug_partition(3, "t", 0).await?;
        (d["log_end_offset"] == 2).then_some(())
    })
    .await;
    c.node(3).kill();
    c.wait_for("broker 3 out of the ISR", || async {
        view(c).await.filter(|v| v.2 == [1, 2])
    })
    .await;
    acked.extend(produce_all(c, &["c", "d"]).await);
    c.node(1).kill();
    c.node(2).kill();
    c.wait_for("t-0 offline", || async {
        view(c).await.filter(|v| v.0 == -1)
    })
    .await;
    acked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unclean_election_elects_the_live_out_of_sync_replica_and_says_so() {
    let unclean = vec!["--unclean-election".to_string()];
    let opts = Opts {
        node_args: unclean.clone(),
        controller_args: unclean,
        ..Opts::default()
    };
    let mut c = Cluster::start(opts.dedicated_controller());
    let acked = isr_dead_and_an_out_of_sync_replica_left(&mut c).await;
    let (_, offline_epoch, _) = view(&c).await.unwrap();
    c.node(3).restart();
    let (leader, epoch, isr) = c
        .wait_for("broker 3 elected", || async {
            view(&c).await.filter(|v| v.0 == 3)
        })
        .await;
    assert_eq!(
        (leader, isr),
        (3, vec![3]),
        "an unclean leader leads an ISR of itself"
    );
    assert!(epoch > offline_epoch);
    let told = event_lines(&c.dedicated().log())
        .into_iter()
        .find(|e| e["kind"] == "leader_elected" && e["leader"] == 3 && e["leader_epoch"] == epoch);
    let told = told.unwrap_or_else(|| panic!("no leader_elected event\n{}", c.logs()));
    assert_eq!(
        (&told["clean"], &told["previous_leader"]),
        (&json!(false), &Value::Null),
        "{told}"
    );
    assert!(
        c.logs().contains("UNCLEAN election"),
        "the controller's log says it too"
    );
    // What the ISR committed while 3 was away is gone: that is the price.
    assert_eq!(served_by(&c, 3).await, acked[..2].to_vec());
    assert_eq!(produce_all(&c, &["e"]).await, [json!("e")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_unclean_election_the_partition_waits_offline_for_an_isr_member() {
    let mut c = Cluster::start(Opts::default().dedicated_controller());
    let acked = isr_dead_and_an_out_of_sync_replica_left(&mut c).await;
    c.node(3).restart();
    c.wait_registered().await;
    // Three session timeouts with 3 alive: nobody is elected, 3 refuses writes.
    let watch = Instant::now();
    while watch.elapsed() < Duration::from_millis(3000) {
        let (leader, _, isr) = view(&c).await.unwrap();
        assert_eq!(leader, -1, "elected from outside the ISR {isr:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, body) = c.produce(3, "t", 0, "all", json!("x")).await;
    assert_eq!(
        (status, &body["error"]),
        (421, &json!("NOT_LEADER")),
        "{body}"
    );
    // An ISR member returns: it leads, and every acknowledged record is there.
    c.node(2).restart();
    let (leader, _, _) = c
        .wait_for("broker 2 elected", || async {
            view(&c).await.filter(|v| v.0 == 2)
        })
        .await;
    assert_eq!(served_by(&c, leader).await, acked);
    let clean = event_lines(&c.dedicated().log())
        .into_iter()
        .filter(|e| e["kind"] == "leader_elected")
        .all(|e| e["clean"] == true);
    assert!(clean, "every election was clean\n{}", c.dedicated().log());
    // Broker 3 catches up from it and rejoins the ISR.
    c.wait_for("broker 3 back in the ISR", || async {
        view(&c).await.filter(|v| v.2.contains(&3))
    })
    .await;
}
