//! The idempotent producer over real processes: a producer id from the controller,
//! then a retried batch answered with its first offset — by a new leader after the
//! old one was killed, and by a leader restarted with every node — and a gap in the
//! sequence refused. The sequence rules step by step are unit-tested in
//! src/replica/producers.rs and src/replica/tests.rs.

use crate::support::{Cluster, Opts};
use serde_json::{Value, json};

/// (leader, leader epoch) of partition 0 of `topic` once a leader knows it leads.
async fn leader(c: &Cluster, topic: &str, not: Option<i32>) -> (i32, i64) {
    c.wait_for("a leader that knows it leads", || async move {
        let s = c.controller_partition(topic, 0).await?;
        let (l, e) = (s["leader"].as_i64()? as i32, s["leader_epoch"].as_i64()?);
        if l < 0 || Some(l) == not {
            return None;
        }
        let d = c.debug_partition(l, topic, 0).await?;
        (d["role"] == "leader" && d["leader_epoch"] == e).then_some((l, e))
    })
    .await
}

/// An idempotent produce of one record; (status, body).
async fn produce(c: &Cluster, node: i32, producer: &Value, seq: u32, value: &str) -> (u16, Value) {
    let body = json!({
        "records": [{"value": value}],
        "producer": {"id": producer["producer_id"], "epoch": producer["producer_epoch"],
                     "sequence": seq},
    });
    c.post(
        &c.addr(node),
        "/v1/topics/t/partitions/0/records?acks=all",
        &body,
    )
    .await
}

/// Produce until the leader answers (an election may still be settling).
async fn produce_ok(c: &Cluster, node: i32, producer: &Value, seq: u32, value: &str) -> u64 {
    c.wait_for("an acks=all answer", || async {
        let (status, body) = produce(c, node, producer, seq, value).await;
        (status == 200).then(|| body["base_offset"].as_u64().unwrap())
    })
    .await
}

/// Every value of the committed log, read from `node`.
async fn values(c: &Cluster, node: i32) -> Vec<Value> {
    let (status, body) = c
        .get(
            &c.addr(node),
            "/v1/topics/t/partitions/0/records?offset=0&max_records=1000",
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"].clone())
        .collect()
}

async fn init_producer(c: &Cluster) -> Value {
    let (status, producer) = c.post_controller("/v1/producers", &json!({})).await;
    assert_eq!(status, 200, "{producer}");
    assert!(producer["producer_id"].as_u64().is_some(), "{producer}");
    producer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_leader_answers_a_retry_with_the_first_offset() {
    let mut c = Cluster::start(Opts {
        session_timeout_ms: 3000,
        ..Opts::default()
    });
    c.create_topic("t", 1, 3, 2).await;
    let producer = init_producer(&c).await;
    let other = init_producer(&c).await;
    assert_ne!(producer["producer_id"], other["producer_id"]);
    let (old, _) = leader(&c, "t", None).await;
    assert_eq!(produce_ok(&c, old, &producer, 0, "a").await, 0);
    assert_eq!(produce_ok(&c, old, &producer, 1, "b").await, 1);
    // The same batch again, to the same leader: its offset, nothing appended.
    assert_eq!(produce_ok(&c, old, &producer, 1, "b").await, 1);
    // The answer "was lost": the leader dies, the producer retries at the new one.
    c.node(old).kill();
    let (new, new_epoch) = leader(&c, "t", Some(old)).await;
    assert_eq!(produce_ok(&c, new, &producer, 1, "b").await, 1);
    // A gap is refused; the next sequence is appended.
    let (status, body) = produce(&c, new, &producer, 3, "d").await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "OUT_OF_ORDER_SEQUENCE_NUMBER", "{body}");
    assert_eq!(body["expected_sequence"], 2, "{body}");
    assert_eq!(
        body["leader_epoch"], new_epoch,
        "the refusing leader's epoch: {body}"
    );
    assert_eq!(produce_ok(&c, new, &producer, 2, "c").await, 2);
    assert_eq!(values(&c, new).await, [json!("a"), json!("b"), json!("c")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_state_survives_a_restart_of_every_node() {
    let mut c = Cluster::start(Opts {
        session_timeout_ms: 3000,
        ..Opts::default()
    });
    c.create_topic("t", 1, 3, 2).await;
    let producer = init_producer(&c).await;
    let (l, _) = leader(&c, "t", None).await;
    for (seq, v) in ["a", "b", "c"].iter().enumerate() {
        assert_eq!(
            produce_ok(&c, l, &producer, seq as u32, v).await,
            seq as u64
        );
    }
    for id in 1..=3 {
        c.node(id).kill();
    }
    for id in 1..=3 {
        c.node(id).restart();
    }
    let (l, _) = leader(&c, "t", None).await;
    // Read back from the log: the retry of sequence 2 is known, 3 is next.
    assert_eq!(produce_ok(&c, l, &producer, 2, "c").await, 2);
    assert_eq!(produce_ok(&c, l, &producer, 3, "d").await, 3);
    assert_eq!(
        values(&c, l).await,
        [json!("a"), json!("b"), json!("c"), json!("d")]
    );
}
