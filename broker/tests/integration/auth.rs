//! Internal requests are authenticated and fenced, over real processes: every
//! process of a cluster shares a cluster id and a secret; `/internal/*` (the
//! controller quorum's Raft RPCs too, and the disk fault switch) refuse requests
//! without them; and a LeaderAndIsr naming a
//! controller epoch the controller does not hold changes nothing, even with the
//! credentials.

use crate::support::{Cluster, Opts, ids};
use serde_json::{Value, json};

const CLUSTER_ID: &str = "c-test";
const SECRET: &str = "s3cret-for-tests";

/// A cluster whose processes share `CLUSTER_ID` and `SECRET` (and the secret file's
/// directory, kept alive with it).
fn secured() -> (Cluster, tempfile::TempDir) {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("secret");
    std::fs::write(&file, format!("{SECRET}\n")).unwrap();
    let args: Vec<String> = vec![
        "--cluster-id".into(),
        CLUSTER_ID.into(),
        "--secret-file".into(),
        file.to_str().unwrap().into(),
    ];
    let c = Cluster::start(Opts {
        node_args: args.clone(),
        controller_args: args,
        ..Opts::default()
    });
    (c, d)
}

/// POST `body` with the given credentials (id, secret); (status, JSON body).
async fn post_as(
    c: &Cluster,
    addr: &str,
    path: &str,
    creds: Option<(&str, &str)>,
    body: &Value,
) -> (u16, Value) {
    let mut req = c.http.post(format!("http://{addr}{path}")).json(body);
    if let Some((id, secret)) = creds {
        req = req
            .header("x-cluster-id", id)
            .header("authorization", format!("Bearer {secret}"));
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// t-0 as the controller sees it: (leader, leader epoch, ISR).
async fn controller_view(c: &Cluster) -> (i32, i64, Vec<i32>) {
    let s = c.controller_partition("t", 0).await.unwrap();
    (
        s["leader"].as_i64().unwrap() as i32,
        s["leader_epoch"].as_i64().unwrap(),
        ids(&s["isr"]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn internal_requests_without_the_cluster_credentials_are_refused() {
    let (c, _secret) = secured();
    c.create_topic("t", 1, 3, 2).await;
    let (leader, epoch, _) = controller_view(&c).await;
    // The processes authenticate each other: replication and acks=all work.
    let (status, body) = c.produce(leader, "t", 0, "all", json!(1)).await;
    assert_eq!(status, 200, "{body}");
    let follower = (1..=3).find(|&id| id != leader).unwrap();
    let fetch = json!({"topic": "t", "partition": 0, "replica_id": follower,
                       "fetch_offset": 0, "leader_epoch": epoch, "max_records": 10});
    let push = json!({"controller_epoch": 1, "brokers": [], "partitions": []});
    let heartbeat = json!({"broker_id": follower, "broker_epoch": 1});
    let node = c.addr(leader);
    // Any voter serves the controller's internal calls and the Raft RPCs (the
    // active controller, here).
    let controller = c.controller_addr().await;
    let raft = json!({"from": 1, "rpc": {}});
    let calls = [
        (&node, "/internal/fetch", &fetch),
        (&node, "/internal/leader-and-isr", &push),
        (&node, "/internal/offsets-for-leader-epoch", &fetch),
        (&node, "/debug/disk", &json!({"mode": "eio"})),
        (&controller, "/internal/heartbeat", &heartbeat),
        (&controller, "/internal/alter-partition", &heartbeat),
        (&controller, "/internal/confirm-leadership", &heartbeat),
        (&controller, "/internal/raft/append", &raft),
        (&controller, "/internal/raft/vote", &raft),
        (&controller, "/internal/raft/snapshot", &raft),
    ];
    for (addr, path, body) in calls {
        for (creds, status, code) in [
            (None, 401, "UNAUTHENTICATED"),
            (
                Some((CLUSTER_ID, "wrong")),
                403,
                "CLUSTER_AUTHORIZATION_FAILED",
            ),
            (
                Some(("other-cluster", SECRET)),
                403,
                "CLUSTER_AUTHORIZATION_FAILED",
            ),
        ] {
            let (got, answer) = post_as(&c, addr, path, creds, body).await;
            assert_eq!(
                (got, answer["error"].as_str()),
                (status, Some(code)),
                "{path} {creds:?}: {answer}"
            );
            assert!(answer["message"].is_string(), "{answer}");
        }
    }
    // Nothing of it took effect: the disk works, the data is there.
    let (status, body) = c.get(&node, "/debug/disk").await;
    assert_eq!((status, body["mode"].as_str()), (200, Some("ok")), "{body}");
    let (status, body) = c.produce(leader, "t", 0, "all", json!(2)).await;
    assert_eq!(status, 200, "{body}");
    // With the credentials, the same fetch is answered.
    let (status, body) = post_as(
        &c,
        &node,
        "/internal/fetch",
        Some((CLUSTER_ID, SECRET)),
        &fetch,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["records"].as_array().map(Vec::len), Some(2), "{body}");
}

/// Finding: one forged LeaderAndIsr with controller epoch 2147483647 was accepted, and
/// the node then ignored the real controller for good. Now a newer epoch is taken
/// only from the controller itself: the forgery is refused (even with the cluster's
/// credentials), and the node follows the real controller's next decisions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_controller_epoch_changes_nothing() {
    let (mut c, _secret) = secured();
    c.create_topic("t", 1, 3, 2).await;
    let (leader, epoch, isr) = controller_view(&c).await;
    let target = (1..=3).find(|&id| id != leader).unwrap();
    let (_, before) = c.get(&c.addr(target), "/v1/metadata").await;
    let forged = json!({
        "controller_epoch": i32::MAX,
        "brokers": [{"id": 1, "alive": true}, {"id": 2, "alive": true}, {"id": 3, "alive": true}],
        "partitions": [{"topic": "t", "partition": 0, "leader": target, "leader_epoch": 1000,
                        "partition_epoch": 1000, "isr": [target], "replicas": [1, 2, 3],
                        "min_insync_replicas": 1}],
    });
    let (status, body) = post_as(
        &c,
        &c.addr(target),
        "/internal/leader-and-isr",
        Some((CLUSTER_ID, SECRET)),
        &forged,
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "FENCED_LEADER_EPOCH", "{body}");
    assert_eq!(
        body["controller_epoch"], before["controller_epoch"],
        "{body}"
    );
    let (_, after) = c.get(&c.addr(target), "/v1/metadata").await;
    assert_eq!(after["controller_epoch"], before["controller_epoch"]);
    let d = c.debug_partition(target, "t", 0).await.unwrap();
    assert_eq!(
        (
            d["role"].as_str(),
            d["leader"].as_i64(),
            d["leader_epoch"].as_i64()
        ),
        (Some("follower"), Some(leader as i64), Some(epoch)),
        "{d}"
    );
    assert_eq!(ids(&d["isr"]), isr);
    // The real controller's next decision is followed: the leader dies, another
    // replica is elected, the target follows it (or leads) at the new epoch.
    // (The leader may have been the active controller too: then no controller
    // answers until the others elected one.)
    c.node(leader).kill();
    let (new, new_epoch) = c
        .wait_for("a new leader", || async {
            let s = c.controller_partition("t", 0).await?;
            let (l, e) = (s["leader"].as_i64()? as i32, s["leader_epoch"].as_i64()?);
            (l != leader && l > 0).then_some((l, e))
        })
        .await;
    c.wait_for("the target to follow the real controller", || async {
        let d = c.debug_partition(target, "t", 0).await?;
        (d["leader"] == new && d["leader_epoch"] == new_epoch).then_some(())
    })
    .await;
    let (status, body) = c.produce(new, "t", 0, "all", json!("after")).await;
    assert_eq!(status, 200, "{body}");
}
