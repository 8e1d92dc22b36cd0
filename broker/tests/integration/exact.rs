//! Values of any size are stored and returned exactly, over real processes: an
//! integer beyond 64 bits is produced, replicated, recovered after a SIGKILL and
//! read back digit for digit (it was rounded to `1.2345678901234568e+29`), and a
//! compare-and-set judges it exactly. The test client sends and reads raw text, so
//! nothing on its side rounds either.

use crate::support::{Cluster, Opts};

const BIG: &str = "123456789012345678901234567890";
const BIG_PLUS_ONE: &str = "123456789012345678901234567891";

/// POST a raw body; (status, raw answer).
async fn post_text(c: &Cluster, addr: &str, path: &str, body: String) -> (u16, String) {
    let resp = c
        .http
        .post(format!("http://{addr}{path}"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

async fn get_text(c: &Cluster, addr: &str, path: &str) -> (u16, String) {
    let resp = c
        .http
        .get(format!("http://{addr}{path}"))
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integers_beyond_64_bits_are_stored_and_returned_exactly() {
    let mut c = Cluster::start(Opts::default());
    c.create_topic("t", 1, 3, 2).await;
    let s = c.controller_partition("t", 0).await.unwrap();
    let leader = s["leader"].as_i64().unwrap() as i32;
    let follower = (1..=3).find(|&id| id != leader).unwrap();
    let records = "/v1/topics/t/partitions/0/records";
    let produce = |body: String| post_text(&c, &c.nodes[&leader].addr, records, body);
    let (status, body) = produce(format!(r#"{{"records":[{{"key":"k","value":{BIG}}}]}}"#)).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = produce(
        r#"{"records":[{"value": {"n": [1e2, -98765432109876543210987654321]} }]}"#.to_string(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let nested = r#"{"n":[100.0,-98765432109876543210987654321]}"#;

    // Consumed from the leader.
    let (status, body) = get_text(&c, &c.addr(leader), &format!("{records}?offset=0")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(&format!(r#""value":{BIG}"#)), "{body}");
    assert!(body.contains(nested), "{body}");
    // Read from the register view.
    let (status, body) =
        get_text(&c, &c.addr(leader), "/v1/topics/t/keys/k?linearizable=true").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(&format!(r#""value":{BIG}"#)), "{body}");
    // A compare-and-set judges the exact number: one off is a mismatch, answered
    // with the exact current value.
    let (status, body) = produce(format!(
        r#"{{"records":[{{"key":"k","value":1}}],"if_value":{BIG_PLUS_ONE}}}"#
    ))
    .await;
    assert_eq!(status, 412, "{body}");
    assert!(body.contains(&format!(r#""current":{BIG}"#)), "{body}");
    let (status, body) = produce(format!(
        r#"{{"records":[{{"key":"k","value":{BIG_PLUS_ONE}}}],"if_value":{BIG}}}"#
    ))
    .await;
    assert_eq!(status, 200, "{body}");

    // Replicated exactly, and recovered exactly from the follower's disk.
    let log_has_all = |body: &str| {
        body.contains(&format!(r#""value":{BIG}"#))
            && body.contains(nested)
            && body.contains(&format!(r#""value":{BIG_PLUS_ONE}"#))
    };
    c.wait_for("the follower to replicate the records exactly", || async {
        let (_, body) = get_text(&c, &c.addr(follower), "/debug/log/t/0").await;
        log_has_all(&body).then_some(())
    })
    .await;
    c.node(follower).kill();
    c.node(follower).restart();
    let body = c
        .wait_for("the restarted follower to host t-0 again", || async {
            let (status, body) = get_text(&c, &c.addr(follower), "/debug/log/t/0").await;
            (status == 200).then_some(body)
        })
        .await;
    assert!(log_has_all(&body), "after a restart: {body}");
}
