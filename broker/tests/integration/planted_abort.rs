//! The test-only planted bug `--bug abort`: a node aborts (SIGABRT) exactly at the
//! 100th produce request it receives, saying so on stderr — a broker that crashes
//! on its own, deterministically, for the harness's crash detection.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use crate::support::{Cluster, DEADLINE, Opts};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_aborts_at_its_100th_produce_request() {
    let mut c = Cluster::start(Opts {
        nodes: 1,
        node_args: vec!["--bug".into(), "abort".into()],
        ..Opts::default()
    });
    c.create_topic("t", 1, 1, 1).await;
    // Every request counts, whatever its outcome: 50 to a partition it does not
    // have, 49 accepted.
    for v in 0..50 {
        let (status, _) = c.produce(1, "t", 7, "1", json!(v)).await;
        assert_eq!(status, 404, "no partition 7");
    }
    for v in 0..49 {
        let (status, body) = c.produce(1, "t", 0, "1", json!(v)).await;
        assert_eq!(status, 200, "request {}: {body}", 51 + v);
    }
    assert!(
        c.node(1).wait_exit(Duration::from_millis(200)).is_none(),
        "alive after 99 requests"
    );
    let url = format!(
        "http://{}/v1/topics/t/partitions/0/records?acks=1",
        c.addr(1)
    );
    let answer = c
        .http
        .post(&url)
        .json(&json!({"records": [{"value": 100}]}))
        .send()
        .await;
    assert!(
        answer.is_err(),
        "the 100th request is never answered: {answer:?}"
    );
    let status = c
        .node(1)
        .wait_exit(DEADLINE)
        .expect("the node ended at its 100th produce request");
    assert_eq!(status.signal(), Some(libc::SIGABRT), "{status:?}");
    assert!(!status.core_dumped(), "a planted abort leaves no core file");
    let log = c.node(1).log();
    assert!(
        log.contains(
            "PLANTED BUG (abort): aborting at produce request 100 (--bug abort, test-only)"
        ),
        "{log}"
    );
}
