//! The client against real HTTP servers that answer as brokers do: it follows
//! `NOT_LEADER` hints, retries only definite failures, and never turns an ambiguous
//! attempt into a success.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use serde_json::{Value, json};
use workloads::client::{Acks, Client, ClientConfig, Outcome};

/// What a fake node answers to a produce: the n-th call gets `answers[n]` (the last
/// one repeats), optionally after a delay.
#[derive(Clone)]
struct Node {
    answers: Arc<Vec<(u16, Value)>>,
    delay: Duration,
    calls: Arc<AtomicUsize>,
}

async fn produce(State(node): State<Node>) -> (StatusCode, Json<Value>) {
    let n = node.calls.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(node.delay).await;
    let (status, body) = node.answers[n.min(node.answers.len() - 1)].clone();
    (StatusCode::from_u16(status).unwrap(), Json(body))
}

async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

async fn node(answers: Vec<(u16, Value)>, delay: Duration) -> (SocketAddr, Arc<AtomicUsize>) {
    let state = Node {
        answers: Arc::new(answers),
        delay,
        calls: Arc::new(AtomicUsize::new(0)),
    };
    let calls = state.calls.clone();
    let router = Router::new()
        .route("/v1/topics/{t}/partitions/{p}/records", post(produce))
        .with_state(state);
    (serve(router).await, calls)
}

/// A controller whose metadata names `leader` for queue-0.
async fn controller(leader: i32) -> SocketAddr {
    let meta = json!({"controller_epoch": 1, "brokers": [],
        "topics": [{"name": "queue", "partitions": [
            {"partition": 0, "leader": leader, "leader_epoch": 1, "isr": [1, 2], "replicas": [1, 2]}]}]});
    serve(Router::new().route("/v1/metadata", get(move || async move { Json(meta) }))).await
}

fn client(nodes: &[(i32, SocketAddr)], controller: SocketAddr) -> Client {
    let mut config = ClientConfig::new(
        nodes.iter().copied().collect::<BTreeMap<_, _>>(),
        Some(controller),
    );
    config.request_timeout = Duration::from_millis(500);
    Client::new(config, 1).unwrap()
}

fn ok(offset: u64) -> (u16, Value) {
    (200, json!({"base_offset": offset, "leader_epoch": 1}))
}

#[tokio::test]
async fn follows_the_not_leader_hint() {
    let (n1, c1) = node(
        vec![(
            421,
            json!({"error": "NOT_LEADER", "message": "", "leader": 2}),
        )],
        Duration::ZERO,
    )
    .await;
    let (n2, c2) = node(vec![ok(7)], Duration::ZERO).await;
    let mut c = client(&[(1, n1), (2, n2)], controller(1).await);
    assert_eq!(
        c.produce("queue", 0, json!(5), Acks::All).await,
        Outcome::Ok(Some(7))
    );
    assert_eq!(
        (c1.load(Ordering::SeqCst), c2.load(Ordering::SeqCst)),
        (1, 1)
    );
}

#[tokio::test]
async fn an_ambiguous_error_ends_info_without_retry() {
    for (status, code) in [
        (504, "REQUEST_TIMED_OUT"),
        (503, "NOT_ENOUGH_REPLICAS_AFTER_APPEND"),
        (503, "KAFKA_STORAGE_ERROR"),
    ] {
        let (n1, c1) = node(
            vec![
                (status, json!({"error": code, "message": "", "isr": [1]})),
                ok(3),
            ],
            Duration::ZERO,
        )
        .await;
        let mut c = client(&[(1, n1)], controller(1).await);
        match c.produce("queue", 0, json!(5), Acks::All).await {
            Outcome::Info(f) => assert_eq!(f.code.as_deref(), Some(code)),
            other => panic!("{code}: expected info, got {other:?}"),
        }
        assert_eq!(c1.load(Ordering::SeqCst), 1, "{code} was retried");
    }
}

#[tokio::test]
async fn a_definite_refusal_fails() {
    let (n1, c1) = node(
        vec![(
            503,
            json!({"error": "NOT_ENOUGH_REPLICAS", "message": "", "isr": [1]}),
        )],
        Duration::ZERO,
    )
    .await;
    let mut c = client(&[(1, n1)], controller(1).await);
    match c.produce("queue", 0, json!(5), Acks::All).await {
        Outcome::Fail(f) => assert_eq!(f.code.as_deref(), Some("NOT_ENOUGH_REPLICAS")),
        other => panic!("expected fail, got {other:?}"),
    }
    assert_eq!(c1.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_client_timeout_is_info() {
    let (n1, _) = node(vec![ok(1)], Duration::from_secs(3)).await;
    let mut c = client(&[(1, n1)], controller(1).await);
    assert!(matches!(
        c.produce("queue", 0, json!(5), Acks::All).await,
        Outcome::Info(_)
    ));
}

#[tokio::test]
async fn a_refused_connection_fails() {
    // Node 1's port is closed: no attempt was ever sent, so however many times the
    // client tries, the write certainly did not happen.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let mut c = client(&[(1, dead)], controller(1).await);
    assert!(matches!(
        c.produce("queue", 0, json!(5), Acks::All).await,
        Outcome::Fail(_)
    ));
}

/// Integers beyond 64 bits go to the broker and come back exactly: bodies carry the
/// bare digits, answers are read without rounding (serde_json made
/// 123456789012345678901234567890 into 1.2345678901234568e+29).
#[tokio::test]
async fn values_of_any_size_travel_exactly() {
    const BIG: &str = "123456789012345678901234567890";
    let bodies: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let seen = bodies.clone();
    let answer = |text: String| {
        axum::response::Response::builder()
            .header("content-type", "application/json")
            .body(axum::body::Body::from(text))
            .unwrap()
    };
    let router = Router::new()
        .route(
            "/v1/topics/{t}/partitions/{p}/records",
            post(move |body: String| {
                let seen = seen.clone();
                async move {
                    seen.lock().unwrap().push(body);
                    Json(json!({"base_offset": 0, "leader_epoch": 1}))
                }
            })
            .get(move || async move {
                answer(format!(
                    r#"{{"high_watermark":1,"records":[{{"offset":0,"value":{{"n":{BIG}}}}}]}}"#
                ))
            }),
        )
        .route(
            "/v1/topics/{t}/keys/{k}",
            get(move || async move {
                answer(format!(
                    r#"{{"key":"k","value":{BIG},"partition":0,"offset":0}}"#
                ))
            }),
        );
    let n1 = serve(router).await;
    let mut c = client(&[(1, n1)], controller(1).await);
    let big = checker::format::read_json(BIG).unwrap();
    let canonical = checker::values::canonical;
    match c.fetch("queue", 0, 0, 10).await {
        Outcome::Ok(f) => assert_eq!(canonical(&f.records[0].value), format!(r#"{{"n":{BIG}}}"#)),
        other => panic!("{other:?}"),
    }
    match c.read_key("queue", 0, "k", false).await {
        Outcome::Ok(r) => assert_eq!(canonical(&r.value), BIG),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        c.produce("queue", 0, big.clone(), Acks::All).await,
        Outcome::Ok(_)
    ));
    assert!(matches!(
        c.write_key("queue", 0, "k", big.clone(), Some(big), 1)
            .await,
        Outcome::Ok(_)
    ));
    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies[0], format!(r#"{{"records":[{{"value":{BIG}}}]}}"#));
    assert_eq!(
        bodies[1],
        format!(r#"{{"records":[{{"key":"k","value":{BIG}}}],"if_value":{BIG}}}"#)
    );
}
