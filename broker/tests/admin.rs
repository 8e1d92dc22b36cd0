//! The controller's admin tasks as real processes: a broker the cluster was not
//! started with joins by heartbeat and serves partitions; every broker's metadata
//! covers the whole cluster. Every wait is bounded; every process dies with the
//! cluster, also on panic.

mod support;

use serde_json::{Value, json};
use support::{Cluster, Opts, ids, partition_in};

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
    assert_eq!((ids(&s["replicas"]), &s["leader"]), (vec![1, 4], &json!(4)), "{s}");
    let acked = produce_all(&c, "t", 3, &[json!("a"), json!("b"), json!("c")]).await;
    assert_eq!(read_all(&c, "t", 3, 3).await, acked);
    // Every broker's metadata — the voters' and the joined one's, which is no voter —
    // names 4 with its address and shows every partition.
    c.wait_for("every broker's metadata to show the whole cluster", || async {
        for id in 1..=4 {
            let md = c.metadata_of(id).await?;
            let b4 = md["brokers"].as_array()?.iter().find(|b| b["id"] == 4)?.clone();
            let all = (0..4).all(|p| partition_in(&md, "t", p).is_some());
            if b4["address"] != json!(addr4) || b4["alive"] != true || !all {
                return None;
            }
        }
        Some(())
    })
    .await;
    let md = c.metadata_of(4).await.unwrap();
    assert_eq!(md["controller_id"], c.controller().await.0);
    let p3 = partition_in(&md, "t", 3).unwrap();
    assert_eq!((&p3["osr"], &p3["leader"]), (&json!([]), &json!(4)), "{p3}");
}
