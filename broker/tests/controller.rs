//! The controller as a real process: the test spawns `broker controller` and plays
//! the nodes itself over real HTTP (heartbeats, alter-partition, and a small server
//! per fake broker that records the LeaderAndIsr pushes it receives).

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use broker::protocol::{
    AlterPartition, ConfirmLeadership, Heartbeat, HeartbeatResponse, LeaderAndIsr, Metadata,
    PartitionState,
};
use serde_json::{Value, json};
use support::Proc;

const SESSION_TIMEOUT_MS: u64 = 3000;
/// Every wait in these tests ends by then, even on a loaded machine.
const DEADLINE: Duration = Duration::from_secs(30);

/// A running controller (the shared test `Proc`: its own process group, killed and
/// reaped when dropped, also on panic).
struct ControllerProc {
    proc: Proc,
    url: String,
}

impl ControllerProc {
    fn start(dir: &Path, brokers: &str) -> ControllerProc {
        let args = vec![
            "controller".to_string(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--data-dir".into(),
            dir.join("data").display().to_string(),
            "--brokers".into(),
            brokers.into(),
            "--session-timeout-ms".into(),
            SESSION_TIMEOUT_MS.to_string(),
        ];
        let proc = Proc::start(args, dir.join("controller.stderr"));
        let url = format!("http://{}", proc.addr);
        ControllerProc { proc, url }
    }

    fn log(&self) -> String {
        self.proc.log()
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

async fn post(url: &str, body: impl Into<reqwest::Body>) -> (u16, Value) {
    let resp = client()
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let status = resp.status().as_u16();
    let body = resp
        .json()
        .await
        .unwrap_or_else(|e| panic!("POST {url}: body is not JSON: {e}"));
    (status, body)
}

async fn post_json(url: &str, body: &Value) -> (u16, Value) {
    post(url, body.to_string()).await
}

async fn metadata(c: &ControllerProc) -> Metadata {
    let resp = client()
        .get(format!("{}/v1/metadata", c.url))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    resp.json().await.unwrap()
}

/// Poll `f` until it returns Some, or panic with the controller's log at the deadline.
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
    c: &ControllerProc,
    what: &str,
    mut f: impl FnMut() -> F,
) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f().await {
            return v;
        }
        if start.elapsed() > DEADLINE {
            panic!("timed out waiting for {what}; controller log:\n{}", c.log());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A fake node: an HTTP server recording the LeaderAndIsr pushes it gets.
struct FakeBroker {
    addr: String,
    pushes: Arc<Mutex<Vec<LeaderAndIsr>>>,
}

async fn fake_broker() -> FakeBroker {
    let pushes: Arc<Mutex<Vec<LeaderAndIsr>>> = Arc::default();
    let seen = pushes.clone();
    let app = axum::Router::new().route(
        "/internal/leader-and-isr",
        axum::routing::post(move |axum::Json(req): axum::Json<LeaderAndIsr>| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(req);
                axum::Json(json!({}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await });
    FakeBroker { addr, pushes }
}

/// Heartbeats for brokers 1..=3 every 200 ms, for those in `beating`.
fn heartbeat_loop(url: String, beating: Arc<Mutex<BTreeSet<i32>>>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let ids: Vec<i32> = beating.lock().unwrap().iter().copied().collect();
            for id in ids {
                let hb = Heartbeat {
                    broker_id: id,
                    broker_epoch: 1000 + id as u64,
                };
                let _ = client()
                    .post(format!("{url}/internal/heartbeat"))
                    .json(&hb)
                    .send()
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
}

fn topic_body(name: &str, partitions: u32, rf: u32, min_isr: u32) -> Value {
    json!({"name": name, "partitions": partitions, "replication_factor": rf,
           "min_insync_replicas": min_isr})
}

#[tokio::test]
async fn topics_are_created_once_and_bad_requests_get_json_errors() {
    let dir = tempfile::tempdir().unwrap();
    let c = ControllerProc::start(dir.path(), "1=127.0.0.1:1,2=127.0.0.1:2,3=127.0.0.1:3");
    let topics = format!("{}/v1/topics", c.url);

    let (status, body) = post_json(&topics, &topic_body("queue", 2, 3, 2)).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["name"], "queue");
    assert_eq!(body["min_insync_replicas"], 2);
    assert_eq!(body["partitions"][0]["replicas"], json!([1, 2, 3]));
    assert_eq!(body["partitions"][1]["replicas"], json!([2, 3, 1]));
    assert_eq!(body["partitions"][1]["leader"], 2);
    assert_eq!(body["partitions"][1]["leader_epoch"], 0);

    let meta = metadata(&c).await;
    assert_eq!(meta.controller_epoch, 1);
    assert_eq!(
        meta.brokers.iter().map(|b| b.id).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    let replicas: Vec<_> = meta.topics[0]
        .partitions
        .iter()
        .map(|p| p.replicas.clone())
        .collect();
    assert_eq!(replicas, vec![vec![1, 2, 3], vec![2, 3, 1]]);

    let (status, body) = post_json(&topics, &topic_body("queue", 1, 1, 1)).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("TOPIC_ALREADY_EXISTS"))
    );

    let bad: [(&str, String); 6] = [
        ("malformed", "{\"name\": \"x\",".into()),
        ("wrong type", r#"{"name":"x","partitions":"two","replication_factor":1,"min_insync_replicas":1}"#.into()),
        ("negative", r#"{"name":"x","partitions":-1,"replication_factor":1,"min_insync_replicas":1}"#.into()),
        ("unknown field", r#"{"name":"x","partitions":1,"replication_factor":1,"min_insync_replicas":1,"acks":1}"#.into()),
        ("rf > brokers", topic_body("x", 1, 4, 1).to_string()),
        ("bad name", topic_body("a b", 1, 1, 1).to_string()),
    ];
    for (what, body) in bad {
        let (status, answer) = post(&topics, body).await;
        assert_eq!(status, 400, "{what}: {answer}");
        assert_eq!(answer["error"], "INVALID_REQUEST", "{what}: {answer}");
        assert!(
            answer["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{what}"
        );
    }
    let (status, answer) = post(&topics, vec![b' '; 2 << 20]).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (413, Some("PAYLOAD_TOO_LARGE"))
    );
    let resp = client()
        .get(format!("{}/no/such/route", c.url))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    let answer: Value = resp.json().await.unwrap();
    assert!(answer["error"].is_string(), "{answer}");
    // The internal calls answer the same way.
    let internal = [
        (
            "heartbeat",
            json!({"broker_id": "one", "broker_epoch": 1}),
            400,
            "INVALID_REQUEST",
        ),
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
    ];
    for (route, body, want_status, want_code) in internal {
        let (status, answer) = post_json(&format!("{}/internal/{route}", c.url), &body).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (want_status, Some(want_code)),
            "{route} {body}: {answer}"
        );
    }
    // None of the bad requests created anything.
    assert_eq!(metadata(&c).await.topics.len(), 1);
}

#[tokio::test]
async fn a_silent_leader_is_replaced_by_the_next_isr_member_and_the_brokers_are_told() {
    let fakes = [
        fake_broker().await,
        fake_broker().await,
        fake_broker().await,
    ];
    let brokers = format!(
        "1={},2={},3={}",
        fakes[0].addr, fakes[1].addr, fakes[2].addr
    );
    let dir = tempfile::tempdir().unwrap();
    let c = ControllerProc::start(dir.path(), &brokers);
    let beating = Arc::new(Mutex::new(BTreeSet::from([1, 2, 3])));
    let beats = heartbeat_loop(c.url.clone(), beating.clone());
    eventually(&c, "three live brokers", || async {
        metadata(&c)
            .await
            .brokers
            .iter()
            .all(|b| b.alive)
            .then_some(())
    })
    .await;

    let (status, body) =
        post_json(&format!("{}/v1/topics", c.url), &topic_body("q", 1, 3, 2)).await;
    assert_eq!(status, 201, "{body}");
    // Every replica is told of the new partition.
    for f in &fakes {
        eventually(&c, "the creation push", || async {
            let pushes = f.pushes.lock().unwrap();
            pushes
                .iter()
                .any(|p| p.partitions.iter().any(|s| s.leader == 1))
                .then_some(())
        })
        .await;
    }

    // Broker 1, the leader, falls silent.
    beating.lock().unwrap().remove(&1);
    let silent_since = Instant::now();
    let p = eventually(&c, "a new leader", || async {
        let meta = metadata(&c).await;
        let p = meta.topics[0].partitions[0].clone();
        (p.leader != 1).then_some(p)
    })
    .await;
    assert!(silent_since.elapsed() >= Duration::from_millis(SESSION_TIMEOUT_MS - 300));
    assert_eq!(
        (p.leader, p.leader_epoch, p.isr.clone()),
        (2, 1, vec![2, 3])
    );
    assert_eq!(p.partition_epoch, 1);
    let meta = metadata(&c).await;
    assert!(!meta.brokers[0].alive && meta.brokers[1].alive && meta.brokers[2].alive);
    let pushed = eventually(&c, "the election push to broker 2", || async {
        let pushes = fakes[1].pushes.lock().unwrap();
        pushes
            .iter()
            .find(|p| p.partitions.iter().any(|s| s.leader == 2))
            .cloned()
    })
    .await;
    assert_eq!(pushed.controller_epoch, 1);
    assert_eq!(
        pushed.broker_epoch,
        Some(1002),
        "a push names its target's process"
    );
    assert_eq!(pushed.partitions[0].leader_epoch, 1);
    assert_eq!(pushed.partitions[0].isr, vec![2, 3]);

    // The heartbeat answer carries the same view.
    let hb = Heartbeat {
        broker_id: 3,
        broker_epoch: 1003,
    };
    let resp = client()
        .post(format!("{}/internal/heartbeat", c.url))
        .json(&hb)
        .send()
        .await
        .unwrap();
    let hb: HeartbeatResponse = resp.json().await.unwrap();
    assert_eq!(hb.partitions, pushed.partitions);

    // The new leader proposes an ISR with a stale partition epoch: fenced.
    let alter_url = format!("{}/internal/alter-partition", c.url);
    let mut alter = AlterPartition {
        broker_id: 2,
        broker_epoch: 1002,
        topic: "q".into(),
        partition: 0,
        leader_epoch: 1,
        partition_epoch: 0,
        new_isr: vec![2],
        new_isr_epochs: Vec::new(),
    };
    let (status, body) = post_json(&alter_url, &serde_json::to_value(&alter).unwrap()).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "FENCED_LEADER_EPOCH");
    assert_eq!(
        (
            body["leader_epoch"].clone(),
            body["partition_epoch"].clone()
        ),
        (json!(1), json!(1))
    );
    // With the current epochs it is accepted, and the partition epoch moves on.
    alter.partition_epoch = 1;
    let (status, body) = post_json(&alter_url, &serde_json::to_value(&alter).unwrap()).await;
    assert_eq!(status, 200, "{body}");
    let state: PartitionState = serde_json::from_value(body).unwrap();
    assert_eq!((state.isr.clone(), state.partition_epoch), (vec![2], 2));
    assert_eq!(metadata(&c).await.topics[0].partitions[0].isr, vec![2]);

    // The old leader cannot confirm its leadership any more.
    let confirm = ConfirmLeadership {
        broker_id: 1,
        topic: "q".into(),
        partition: 0,
        leader_epoch: 0,
    };
    let (status, body) = post_json(
        &format!("{}/internal/confirm-leadership", c.url),
        &serde_json::to_value(&confirm).unwrap(),
    )
    .await;
    assert_eq!((status, body["error"].as_str()), (421, Some("NOT_LEADER")));
    assert_eq!(body["leader"], 2);
    beats.abort();
}

#[tokio::test]
async fn the_state_survives_a_controller_restart_under_a_new_controller_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let brokers = "1=127.0.0.1:1,2=127.0.0.1:2,3=127.0.0.1:3";
    let before = {
        let c = ControllerProc::start(dir.path(), brokers);
        for id in 1..=3 {
            let hb = json!({"broker_id": id, "broker_epoch": 7});
            let (status, _) = post_json(&format!("{}/internal/heartbeat", c.url), &hb).await;
            assert_eq!(status, 200);
        }
        let (status, _) = post_json(
            &format!("{}/v1/topics", c.url),
            &topic_body("kept", 3, 2, 1),
        )
        .await;
        assert_eq!(status, 201);
        metadata(&c).await
    }; // SIGKILL
    let c = ControllerProc::start(dir.path(), brokers);
    let after = metadata(&c).await;
    assert_eq!(after.controller_epoch, before.controller_epoch + 1);
    assert_eq!(after.topics, before.topics);
    assert!(
        after.brokers.iter().all(|b| !b.alive),
        "alive only once heard from again"
    );
    let (status, body) = post_json(
        &format!("{}/v1/topics", c.url),
        &topic_body("kept", 1, 1, 1),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("TOPIC_ALREADY_EXISTS"))
    );

    // Broker epochs were kept too: broker 1 restarted while the controller was down,
    // so it gives up kept-0 (replicas [1,2]) to broker 2 and leaves its ISR.
    let hb_url = format!("{}/internal/heartbeat", c.url);
    let (status, _) = post_json(&hb_url, &json!({"broker_id": 2, "broker_epoch": 7})).await;
    assert_eq!(status, 200);
    let (status, answer) = post_json(&hb_url, &json!({"broker_id": 1, "broker_epoch": 8})).await;
    assert_eq!(status, 200);
    assert_eq!(answer["controller_epoch"], after.controller_epoch);
    let p0 = metadata(&c).await.topics[0].partitions[0].clone();
    assert_eq!((p0.leader, p0.leader_epoch, p0.isr), (2, 1, vec![2]));
}

#[tokio::test]
async fn a_paused_controller_does_not_declare_everyone_dead_when_it_resumes() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;

    let dir = tempfile::tempdir().unwrap();
    let c = ControllerProc::start(dir.path(), "1=127.0.0.1:1,2=127.0.0.1:2,3=127.0.0.1:3");
    let beating = Arc::new(Mutex::new(BTreeSet::from([1, 2, 3])));
    let beats = heartbeat_loop(c.url.clone(), beating);
    eventually(&c, "three live brokers", || async {
        metadata(&c)
            .await
            .brokers
            .iter()
            .all(|b| b.alive)
            .then_some(())
    })
    .await;
    let (status, _) = post_json(&format!("{}/v1/topics", c.url), &topic_body("q", 3, 3, 2)).await;
    assert_eq!(status, 201);

    let pid = Pid::from_raw(c.proc.pid());
    kill(pid, Signal::SIGSTOP).unwrap();
    tokio::time::sleep(Duration::from_millis(SESSION_TIMEOUT_MS + 2000)).await;
    kill(pid, Signal::SIGCONT).unwrap();
    eventually(&c, "the controller to notice its pause", || async {
        c.log().contains("did not run").then_some(())
    })
    .await;
    // A few heartbeat rounds later, still nobody has been declared dead.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let meta = metadata(&c).await;
    assert!(
        meta.brokers.iter().all(|b| b.alive),
        "{meta:?}\n{}",
        c.log()
    );
    assert!(
        meta.topics[0]
            .partitions
            .iter()
            .all(|p| p.leader_epoch == 0 && p.isr.len() == 3),
        "{meta:?}"
    );
    assert!(!c.log().contains("dead"), "{}", c.log());
    beats.abort();
}
