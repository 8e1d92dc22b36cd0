//! The register view as real processes (a controller and three nodes on loopback):
//! compare-and-set is atomic — concurrent cas on one key serialise with the log's
//! appends, and each is judged against the leader's whole log in order, uncommitted
//! records included — and a linearizable read is answered only once the controller
//! confirms the leadership it was read under.

use std::collections::HashMap;
use std::time::Duration;

use crate::support::{Cluster, Opts};
use serde_json::{Value, json};

/// The controller's leader for a partition.
async fn leader(c: &Cluster, topic: &str, p: u32) -> i32 {
    c.controller_partition(topic, p)
        .await
        .and_then(|s| s["leader"].as_i64())
        .expect("a leader in the controller's metadata") as i32
}

/// A keyed write to partition 0 of `topic` on node `id`, conditional when
/// `if_value` is given.
async fn put(
    c: &Cluster,
    id: i32,
    topic: &str,
    acks: &str,
    key: &str,
    value: Value,
    if_value: Option<Value>,
) -> (u16, Value) {
    Node::of(c, id).put(topic, acks, key, value, if_value).await
}

/// One node as a task can hold it (the cluster itself stays with the test).
#[derive(Clone)]
struct Node {
    http: reqwest::Client,
    addr: String,
}

impl Node {
    fn of(c: &Cluster, id: i32) -> Node {
        Node {
            http: c.http.clone(),
            addr: c.addr(id),
        }
    }

    async fn put(
        &self,
        topic: &str,
        acks: &str,
        key: &str,
        value: Value,
        if_value: Option<Value>,
    ) -> (u16, Value) {
        let mut body = json!({"records": [{"key": key, "value": value}]});
        if let Some(iv) = if_value {
            body["if_value"] = iv;
        }
        let url = format!(
            "http://{}/v1/topics/{topic}/partitions/0/records?acks={acks}",
            self.addr
        );
        let resp = self
            .http
            .post(&url)
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {url}: {e}"));
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}

/// The values of `key` in a node's whole local log, in offset order.
async fn key_history(c: &Cluster, id: i32, topic: &str, key: &str) -> Vec<Value> {
    let (status, log) = c.get(&c.addr(id), &format!("/debug/log/{topic}/0")).await;
    assert_eq!(status, 200, "{log}");
    log["records"]
        .as_array()
        .expect("records")
        .iter()
        .filter(|r| r["key"] == key)
        .map(|r| r["value"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_compare_and_sets_on_one_key_serialise() {
    let c = Cluster::start(Opts::default());
    c.create_topic("reg", 1, 3, 2).await;
    let l = leader(&c, "reg", 0).await;

    // Many clients race to create the key: exactly one wins, every loser is told the
    // winner's value.
    let node = Node::of(&c, l);
    let racers = (0..16).map(|i| {
        let node = node.clone();
        async move {
            node.put("reg", "all", "x", json!(i), Some(Value::Null))
                .await
        }
    });
    let answers = join_all(racers).await;
    let winners: Vec<usize> = (0..answers.len())
        .filter(|&i| answers[i].0 == 200)
        .collect();
    assert_eq!(winners.len(), 1, "{answers:?}");
    let won = json!(winners[0]);
    for (status, body) in &answers {
        if *status != 200 {
            assert_eq!(body["error"], "PRECONDITION_FAILED", "{body}");
            assert_eq!(body["current"], won, "{body}");
        }
    }

    // Clients increment-by-replacing in a loop: each cas expects what it last saw.
    // Atomicity means every successful cas's new value directly follows its expected
    // value among the key's records, and no failed cas left a record.
    let mut tasks = Vec::new();
    for t in 0..6u64 {
        let node = node.clone();
        let first = won.clone();
        tasks.push(async move {
            let mut seen = first;
            let mut done = Vec::new();
            for round in 0..8u64 {
                let new = json!(1000 + t * 100 + round);
                let (status, body) = node
                    .put("reg", "all", "x", new.clone(), Some(seen.clone()))
                    .await;
                match status {
                    200 => {
                        done.push((seen.clone(), new.clone()));
                        seen = new;
                    }
                    412 => seen = body["current"].clone(),
                    _ => panic!("cas answered {status} {body}"),
                }
            }
            done
        });
    }
    let succeeded: Vec<(Value, Value)> = join_all(tasks).await.into_iter().flatten().collect();
    assert!(!succeeded.is_empty());
    let history = key_history(&c, l, "reg", "x").await;
    assert_eq!(history.len(), 1 + succeeded.len(), "{history:?}");
    let position: HashMap<String, usize> = history
        .iter()
        .enumerate()
        .map(|(i, v)| (v.to_string(), i))
        .collect();
    assert_eq!(position.len(), history.len(), "a value twice: {history:?}");
    for (expected, new) in &succeeded {
        let at = position[&new.to_string()];
        assert!(at > 0, "{new} has no predecessor in {history:?}");
        assert_eq!(
            &history[at - 1],
            expected,
            "cas {expected}→{new}: {history:?}"
        );
    }
    let (status, body) = c
        .get(&c.addr(l), "/v1/topics/reg/keys/x?linearizable=true")
        .await;
    assert_eq!(
        (status, &body["value"]),
        (200, history.last().unwrap()),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_and_set_sees_uncommitted_records_in_log_order() {
    // Paused followers stay in the ISR (long lag and session timeouts), so the
    // leader's high watermark cannot move while they are stopped.
    let c = Cluster::start(Opts {
        session_timeout_ms: 20_000,
        lag_ms: 20_000,
        ..Opts::default()
    });
    c.create_topic("reg", 1, 3, 2).await;
    let l = leader(&c, "reg", 0).await;
    assert_eq!(put(&c, l, "reg", "all", "x", json!(1), None).await.0, 200);
    let followers: Vec<i32> = (1..=3).filter(|id| *id != l).collect();
    for f in &followers {
        c.nodes[f].signal(libc::SIGSTOP);
    }
    // acks=1: appended at the leader, not committed.
    assert_eq!(put(&c, l, "reg", "1", "x", json!(2), None).await.0, 200);
    let (status, body) = c.get(&c.addr(l), "/v1/topics/reg/keys/x").await;
    assert_eq!(
        (status, &body["value"]),
        (200, &json!(1)),
        "reads stop at the HW: {body}"
    );
    // The cas is judged against the newest record, committed or not.
    let (status, body) = put(&c, l, "reg", "1", "x", json!(3), Some(json!(1))).await;
    assert_eq!((status, &body["current"]), (412, &json!(2)), "{body}");
    let (status, body) = put(&c, l, "reg", "1", "x", json!(3), Some(json!(2))).await;
    assert_eq!(status, 200, "{body}");
    for f in &followers {
        c.nodes[f].signal(libc::SIGCONT);
    }
    let value = c
        .wait_for("the HW to cover the cas", || async {
            let (status, body) = c
                .get(&c.addr(l), "/v1/topics/reg/keys/x?linearizable=true")
                .await;
            (status == 200 && body["value"] == 3).then_some(body["value"].clone())
        })
        .await;
    assert_eq!(value, 3);
    assert_eq!(
        key_history(&c, l, "reg", "x").await,
        vec![json!(1), json!(2), json!(3)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linearizable_read_waits_for_the_controller_to_confirm_leadership() {
    let c = Cluster::start(Opts::default().dedicated_controller());
    c.create_topic("reg", 1, 3, 2).await;
    let l = leader(&c, "reg", 0).await;
    assert_eq!(put(&c, l, "reg", "all", "x", json!(5), None).await.0, 200);
    let (status, body) = c
        .get(&c.addr(l), "/v1/topics/reg/keys/x?linearizable=true")
        .await;
    assert_eq!((status, &body["value"]), (200, &json!(5)), "{body}");

    // Without the controller the leader cannot confirm: a default read is still
    // answered from its HW; a linearizable one is not.
    c.dedicated().signal(libc::SIGSTOP);
    // The controller is stopped before the reads: it answers nothing now.
    let asked = c
        .http
        .get(format!("http://{}/v1/metadata", c.dedicated().addr))
        .timeout(Duration::from_secs(1))
        .send()
        .await;
    assert!(
        asked.is_err(),
        "the controller answered after SIGSTOP: {asked:?}"
    );
    let (status, body) = c.get(&c.addr(l), "/v1/topics/reg/keys/x").await;
    assert_eq!((status, &body["value"]), (200, &json!(5)), "{body}");
    let (status, body) = c
        .get(&c.addr(l), "/v1/topics/reg/keys/x?linearizable=true")
        .await;
    c.dedicated().signal(libc::SIGCONT);
    assert_eq!(
        (status, body["error"].as_str()),
        (504, Some("REQUEST_TIMED_OUT")),
        "{body}\n{}",
        c.logs()
    );
    // Back with the controller, whoever leads answers linearizably again.
    let value = c
        .wait_for(
            "a linearizable read after the controller returns",
            || async {
                for id in 1..=3 {
                    let r = c
                        .http
                        .get(format!(
                            "http://{}/v1/topics/reg/keys/x?linearizable=true",
                            c.addr(id)
                        ))
                        .timeout(Duration::from_secs(8))
                        .send()
                        .await
                        .ok()?;
                    if r.status().as_u16() == 200 {
                        return r.json::<Value>().await.ok().map(|b| b["value"].clone());
                    }
                }
                None
            },
        )
        .await;
    assert_eq!(value, 5);
}

/// Run every task at once on the runtime; their outputs in order.
async fn join_all<T: Send + 'static>(
    tasks: impl IntoIterator<Item = impl std::future::Future<Output = T> + Send + 'static>,
) -> Vec<T> {
    let handles: Vec<_> = tasks.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.expect("a task panicked"));
    }
    out
}

/// Finding: a conditional write sent to a partition that does not own its key was
/// acknowledged, yet the key's reads (served from the key's own partition) never saw
/// it. It is now refused, naming the key's partition; unconditional keyed writes to
/// any partition are still queue records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conditional_write_must_go_to_the_keys_partition() {
    let c = Cluster::start(Opts::default());
    c.create_topic("kv", 2, 3, 2).await;
    let key = (0..)
        .map(|i| format!("k{i}"))
        .find(|k| crc32c::crc32c(k.as_bytes()) % 2 == 1)
        .unwrap();
    let l0 = leader(&c, "kv", 0).await;
    let (status, body) = put(&c, l0, "kv", "all", &key, json!(1), Some(Value::Null)).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "INVALID_REQUEST", "{body}");
    assert_eq!(body["partition"], 1, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("lives in partition 1"),
        "{body}"
    );
    let (status, body) = put(&c, l0, "kv", "all", &key, json!(2), None).await;
    assert_eq!(
        status, 200,
        "an unconditional keyed write is a queue record: {body}"
    );
    // Sent to the key's partition, the same conditional write applies and is read.
    let l1 = leader(&c, "kv", 1).await;
    let (status, body) = c
        .post(
            &c.addr(l1),
            "/v1/topics/kv/partitions/1/records",
            &json!({"records": [{"key": key, "value": 1}], "if_value": null}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = c
        .get(&c.addr(l1), &format!("/v1/topics/kv/keys/{key}"))
        .await;
    assert_eq!((status, &body["value"]), (200, &json!(1)), "{body}");
}
