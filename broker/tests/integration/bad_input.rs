//! Bad input against a running node: malformed JSON, wrong types, unknown topics and
//! partitions, negative or huge offsets, oversized bodies, unknown routes. Each gets
//! a 4xx with a JSON error code; the process never dies and nothing acknowledged is
//! lost. A proptest throws generated bodies and query strings at the same routes.

use crate::support::{Cluster, Opts};
use proptest::prelude::*;
use serde_json::{Value, json};

const CODES: &[&str] = &[
    "INVALID_REQUEST",
    "UNKNOWN_TOPIC_OR_PARTITION",
    "TOPIC_ALREADY_EXISTS",
    "PRECONDITION_FAILED",
    "PAYLOAD_TOO_LARGE",
    "OFFSET_OUT_OF_RANGE",
    "NOT_LEADER",
    "NOT_CONTROLLER",
    "FENCED_LEADER_EPOCH",
    "NOT_ENOUGH_REPLICAS",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "REQUEST_TIMED_OUT",
    "KAFKA_STORAGE_ERROR",
    "UNAUTHENTICATED",
    "CLUSTER_AUTHORIZATION_FAILED",
    "OUT_OF_ORDER_SEQUENCE_NUMBER",
    "INVALID_PRODUCER_EPOCH",
];

/// Send raw bytes; (status, parsed JSON body or Null).
async fn raw(c: &Cluster, method: &str, addr: &str, path: &str, body: Vec<u8>) -> (u16, Value) {
    let url = format!("http://{addr}{path}");
    let req = match method {
        "GET" => c.http.get(url),
        "PUT" => c.http.put(url),
        _ => c.http.post(url),
    };
    let resp = req
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: no answer: {e}"));
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.unwrap_or_default();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// (what, method, path, body, expected status, expected code).
type Case = (
    &'static str,
    &'static str,
    String,
    Vec<u8>,
    u16,
    &'static str,
);

fn assert_error(what: &str, (status, body): &(u16, Value), want_status: u16, want_code: &str) {
    assert_eq!(*status, want_status, "{what}: {body}");
    assert_eq!(body["error"], want_code, "{what}: {body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{what}: {body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_4xx_json_errors_and_nothing_breaks() {
    let c = Cluster::start(Opts::default());
    c.create_topic("t", 1, 3, 2).await;
    let s = c.controller_partition("t", 0).await.unwrap();
    let leader = s["leader"].as_i64().unwrap() as i32;
    let a = c.addr(leader);
    let (status, body) = c.produce(leader, "t", 0, "all", json!("keep me")).await;
    assert_eq!(status, 200, "{body}");

    let records = "/v1/topics/t/partitions/0/records";
    let cases: Vec<Case> = vec![
        ("not JSON", "POST", records.into(), b"{not json".to_vec(), 400, "INVALID_REQUEST"),
        ("empty body", "POST", records.into(), vec![], 400, "INVALID_REQUEST"),
        ("records not an array", "POST", records.into(), br#"{"records":"x"}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("no records", "POST", records.into(), br#"{"records":[]}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("key of the wrong type", "POST", records.into(), br#"{"records":[{"key":5,"value":1}]}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("record without value", "POST", records.into(), br#"{"records":[{"key":"k"}]}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("unknown field", "POST", records.into(), br#"{"records":[{"value":1}],"x":1}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("if_value with two records", "POST", records.into(), br#"{"records":[{"key":"k","value":1},{"key":"k","value":2}],"if_value":null}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("if_value without key", "POST", records.into(), br#"{"records":[{"value":1}],"if_value":null}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("producer of the wrong shape", "POST", records.into(), br#"{"records":[{"value":1}],"producer":{"id":"x","epoch":0,"sequence":0}}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("producer without sequence", "POST", records.into(), br#"{"records":[{"value":1}],"producer":{"id":1,"epoch":0}}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("producer sequences past the last", "POST", records.into(), br#"{"records":[{"value":1},{"value":2}],"producer":{"id":1,"epoch":0,"sequence":4294967295}}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("producer with an unknown field", "POST", records.into(), br#"{"records":[{"value":1}],"producer":{"id":1,"epoch":0,"sequence":0,"records_after":0}}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("producer with if_value", "POST", records.into(), br#"{"records":[{"key":"k","value":1}],"if_value":null,"producer":{"id":1,"epoch":0,"sequence":0}}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("producer out of sequence", "POST", records.into(), br#"{"records":[{"value":1}],"producer":{"id":1,"epoch":0,"sequence":5}}"#.to_vec(), 409, "OUT_OF_ORDER_SEQUENCE_NUMBER"),
        ("bad acks", "POST", format!("{records}?acks=2"), br#"{"records":[{"value":1}]}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("unknown topic", "POST", "/v1/topics/nope/partitions/0/records".into(), br#"{"records":[{"value":1}]}"#.to_vec(), 404, "UNKNOWN_TOPIC_OR_PARTITION"),
        ("unknown partition", "POST", "/v1/topics/t/partitions/7/records".into(), br#"{"records":[{"value":1}]}"#.to_vec(), 404, "UNKNOWN_TOPIC_OR_PARTITION"),
        ("partition not a number", "POST", "/v1/topics/t/partitions/x/records".into(), br#"{"records":[{"value":1}]}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("negative partition", "GET", "/v1/topics/t/partitions/-1/records".into(), vec![], 400, "INVALID_REQUEST"),
        ("negative offset", "GET", format!("{records}?offset=-1"), vec![], 400, "INVALID_REQUEST"),
        ("offset past u64", "GET", format!("{records}?offset=99999999999999999999999"), vec![], 400, "INVALID_REQUEST"),
        ("huge offset", "GET", format!("{records}?offset=18446744073709551615"), vec![], 416, "OFFSET_OUT_OF_RANGE"),
        ("offset just past HW", "GET", format!("{records}?offset=2"), vec![], 416, "OFFSET_OUT_OF_RANGE"),
        ("max_records 0", "GET", format!("{records}?max_records=0"), vec![], 400, "INVALID_REQUEST"),
        ("max_records too many", "GET", format!("{records}?max_records=10001"), vec![], 400, "INVALID_REQUEST"),
        ("linearizable not a bool", "GET", "/v1/topics/t/keys/k?linearizable=maybe".into(), vec![], 400, "INVALID_REQUEST"),
        ("key of an unknown topic", "GET", "/v1/topics/nope/keys/k".into(), vec![], 404, "UNKNOWN_TOPIC_OR_PARTITION"),
        ("unknown route", "GET", "/v2/nothing".into(), vec![], 400, "INVALID_REQUEST"),
        ("wrong method", "PUT", records.into(), vec![], 400, "INVALID_REQUEST"),
        ("internal fetch, wrong types", "POST", "/internal/fetch".into(), br#"{"topic":1}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("internal fetch, negative offset", "POST", "/internal/fetch".into(), br#"{"topic":"t","partition":0,"replica_id":2,"fetch_offset":-5,"leader_epoch":0,"max_records":1}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("internal fetch, past LEO", "POST", "/internal/fetch".into(), serde_json::to_vec(&json!({"topic":"t","partition":0,"replica_id": if leader == 1 {2} else {1},"fetch_offset":1_000_000u64,"leader_epoch": s["leader_epoch"],"max_records":1})).unwrap(), 416, "OFFSET_OUT_OF_RANGE"),
        ("leader-and-isr, wrong types", "POST", "/internal/leader-and-isr".into(), br#"{"controller_epoch":"x"}"#.to_vec(), 400, "INVALID_REQUEST"),
        ("offsets-for-leader-epoch, garbage", "POST", "/internal/offsets-for-leader-epoch".into(), b"[1,2,3]".to_vec(), 400, "INVALID_REQUEST"),
    ];
    for (what, method, path, body, status, code) in cases {
        let got = raw(&c, method, &a, &path, body).await;
        assert_error(what, &got, status, code);
    }
    // Oversized body: 413. (Just over the 1 MiB limit: the whole body fits in the
    // socket buffers, so the client is done sending when the answer comes; with a much
    // bigger body the server answers and closes while the client still writes.)
    let big = format!(
        r#"{{"records":[{{"value":"{}"}}]}}"#,
        "x".repeat((1 << 20) + 1000)
    )
    .into_bytes();
    let got = raw(&c, "POST", &a, records, big).await;
    assert_error("oversized body", &got, 413, "PAYLOAD_TOO_LARGE");
    // A failed if_value says what the key holds.
    let got = raw(
        &c,
        "POST",
        &a,
        records,
        br#"{"records":[{"key":"k","value":2}],"if_value":1}"#.to_vec(),
    )
    .await;
    assert_error("if_value mismatch", &got, 412, "PRECONDITION_FAILED");
    assert_eq!(got.1["current"], Value::Null);

    // Still alive, and the acknowledged record is still there.
    let (status, body) = c.get(&a, &format!("{records}?offset=0")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["records"][0]["value"], "keep me");
}

/// JSON values of any shape, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-z0-9 ]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Request bodies: random bytes, random JSON, and near-misses of real bodies.
fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64),
        json_value().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        json_value().prop_map(|v| serde_json::to_vec(&json!({"records": v})).unwrap()),
        (
            json_value(),
            json_value(),
            proptest::option::of(json_value())
        )
            .prop_map(|(k, v, iv)| {
                let mut b = json!({"records": [{"key": k, "value": v}]});
                if let Some(iv) = iv {
                    b["if_value"] = iv;
                }
                serde_json::to_vec(&b).unwrap()
            }),
        (json_value(), any::<i64>(), any::<i64>()).prop_map(|(t, o, e)| {
            serde_json::to_vec(&json!({"topic": t, "partition": 0, "replica_id": 2,
                "fetch_offset": o, "leader_epoch": e, "max_records": 3}))
            .unwrap()
        }),
    ]
}

fn route() -> impl Strategy<Value = (&'static str, String)> {
    let query = "[a-z_=&0-9%-]{0,20}";
    prop_oneof![
        (query, "[0-9a-z-]{0,4}")
            .prop_map(|(q, p)| ("POST", format!("/v1/topics/t/partitions/{p}/records?{q}"))),
        query.prop_map(|q| ("GET", format!("/v1/topics/t/partitions/0/records?{q}"))),
        ("[a-zA-Z0-9%]{0,8}", query)
            .prop_map(|(k, q)| ("GET", format!("/v1/topics/t/keys/k{k}?{q}"))),
        Just(("POST", "/internal/fetch".to_string())),
        Just(("POST", "/internal/offsets-for-leader-epoch".to_string())),
    ]
}

#[test]
fn generated_requests_never_crash_a_node() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let c = rt.block_on(async {
        let c = Cluster::start(Opts::default());
        c.create_topic("t", 1, 3, 2).await;
        c
    });
    let leader = rt.block_on(async {
        c.controller_partition("t", 0).await.unwrap()["leader"]
            .as_i64()
            .unwrap() as i32
    });
    let addr = c.addr(leader);
    let config = ProptestConfig {
        cases: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |((method, path) in route(), body in body())| {
        let (status, answer) = rt.block_on(raw(&c, method, &addr, &path, body));
        prop_assert!(answer.is_object(), "{method} {path}: {status} without a JSON object body");
        if status != 200 {
            prop_assert!((400..600).contains(&status));
            let code = answer["error"].as_str().unwrap_or("");
            prop_assert!(CODES.contains(&code), "{method} {path}: {status} {answer}");
            prop_assert!(status < 500 || matches!(code, "NOT_ENOUGH_REPLICAS" | "REQUEST_TIMED_OUT" | "NOT_ENOUGH_REPLICAS_AFTER_APPEND"), "{answer}");
        }
    });
    // Every node still answers.
    rt.block_on(async {
        for id in 1..=3 {
            let (status, _) = c.get(&c.addr(id), "/debug/partitions").await;
            assert_eq!(status, 200, "node {id} stopped answering");
        }
    });
}

/// Send `request` as raw bytes on a fresh connection; (status, JSON body or Null).
fn raw_http(addr: &str, request: &[u8]) -> (u16, Value) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    // The server may answer and close before reading everything: ignore write errors.
    let _ = s.write_all(request);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_string();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// Finding: requests the HTTP layer cannot parse were answered 400/414/431 with an
/// empty body; now with the JSON error every other answer has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unparsable_requests_get_json_errors_from_the_http_layer_too() {
    let c = Cluster::start(Opts {
        nodes: 1,
        ..Opts::default().dedicated_controller()
    });
    let long_uri = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(70_000));
    let many_headers = format!(
        "GET /v1/metadata HTTP/1.1\r\n{}\r\n",
        (0..200)
            .map(|i| format!("X-H{i}: 1\r\n"))
            .collect::<String>()
    );
    // (Headers too large by their size get the same answer, but only once the
    // server's buffer fills before the request is complete, which depends on how
    // the bytes arrive: too many headers always do.)
    let cases: [(&str, Vec<u8>, u16); 4] = [
        ("garbage request line", b"GARBAGE\r\n\r\n".to_vec(), 400),
        (
            "bad header",
            b"GET / HTTP/1.1\r\nBad Header\r\n\r\n".to_vec(),
            400,
        ),
        ("URI too long", long_uri.into_bytes(), 414),
        ("too many headers", many_headers.into_bytes(), 431),
    ];
    for addr in [c.addr(1), c.dedicated().addr.clone()] {
        for (what, request, status) in &cases {
            let answer = tokio::task::block_in_place(|| raw_http(&addr, request));
            assert_error(what, &answer, *status, "INVALID_REQUEST");
        }
        // Ordinary answers pass untouched, bodies included.
        let (status, md) = c.get(&addr, "/v1/metadata").await;
        assert_eq!(status, 200, "{md}");
        assert!(md["brokers"].is_array(), "{md}");
    }
}
