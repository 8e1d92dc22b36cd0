//! The event lines (docs/broker.md, "Event lines") of real processes: a controller
//! and three nodes on loopback go through a failover, a restart that truncates, a
//! request to a follower and an ISR below min.insync.replicas, and each process's
//! stderr must tell those transitions as `EVENT {json}` lines.

use std::time::Duration;

use crate::support::{Cluster, DEDICATED_CONTROLLER, Opts, Proc, ids};
use serde_json::{Value, json};

/// Every event line of a process's stderr, parsed. A line that starts with `EVENT `
/// but is not one JSON object with the common fields fails the test.
fn events(proc: &Proc) -> Vec<Value> {
    proc.log()
        .lines()
        .filter_map(|l| l.strip_prefix("EVENT "))
        .map(|json| {
            let v: Value = serde_json::from_str(json)
                .unwrap_or_else(|e| panic!("event line `{json}` is not JSON: {e}"));
            assert!(
                v["ts_ms"].as_u64().is_some_and(|t| t > 1_600_000_000_000),
                "{v}"
            );
            assert!(v["node"].is_i64() && v["kind"].is_string(), "{v}");
            v
        })
        .collect()
}

/// The first event of `proc` of `kind` whose fields include `fields`.
fn find(proc: &Proc, kind: &str, fields: &Value) -> Option<Value> {
    events(proc).into_iter().find(|e| {
        e["kind"] == kind
            && fields
                .as_object()
                .expect("fields are an object")
                .iter()
                .all(|(k, v)| &e[k] == v)
    })
}

/// Wait until `proc` (named `who`) has told `kind` with `fields`; return that event.
async fn told(
    c: &Cluster,
    proc: impl Fn(&Cluster) -> &Proc,
    who: &str,
    kind: &str,
    fields: Value,
) -> Value {
    let what = format!("{who} to tell {kind} {fields}");
    c.wait_for(&what, || {
        let found = find(proc(c), kind, &fields);
        async move { found }
    })
    .await
}

/// (leader, leader epoch, ISR) as the controller says.
async fn controller_view(c: &Cluster) -> (i32, i64, Vec<i32>) {
    let s = c.controller_partition("t", 0).await.expect("partition t-0");
    (
        s["leader"].as_i64().unwrap() as i32,
        s["leader_epoch"].as_i64().unwrap(),
        ids(&s["isr"]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_and_a_restart_are_told_as_event_lines() {
    // A dedicated controller, so that killing a partition's leader leaves the
    // controller in place; its lines carry its own id. The session timeout leaves
    // room for the followers' pause below plus a heartbeat interval.
    let opts = Opts {
        session_timeout_ms: 2000,
        ..Opts::default()
    };
    let mut c = Cluster::start(opts.dedicated_controller());
    let (_, epoch) = c.controller().await;
    told(
        &c,
        |c| c.dedicated(),
        "the controller",
        "controller_epoch",
        json!({"node": DEDICATED_CONTROLLER, "epoch": epoch}),
    )
    .await;
    c.create_topic("t", 1, 3, 2).await;
    let (old, old_epoch, _) = controller_view(&c).await;
    let followers: Vec<i32> = (1..=3).filter(|id| *id != old).collect();
    for f in &followers {
        let fields = json!({"node": f, "topic": "t", "partition": 0, "leader_epoch": old_epoch});
        told(&c, |c| &c.nodes[f], "a follower", "become_follower", fields).await;
    }
    for v in 0..5 {
        let (status, body) = c.produce(old, "t", 0, "all", json!(v)).await;
        assert_eq!(status, 200, "{body}");
    }
    // One record only the leader gets: pause the followers, let their waiting fetches
    // expire, append with acks=1, kill the leader, resume them within the session
    // timeout.
    for f in &followers {
        c.nodes[f].signal(libc::SIGSTOP);
    }
    tokio::time::sleep(Duration::from_millis(900)).await;
    let (status, body) = c.produce(old, "t", 0, "1", json!("uncommitted")).await;
    assert_eq!(status, 200, "{body}");
    c.node(old).kill();
    for f in &followers {
        c.nodes[f].signal(libc::SIGCONT);
    }

    // The controller elects a follower, cleanly, and drops the old leader from the ISR.
    let elected = told(
        &c,
        |c| c.dedicated(),
        "the controller",
        "leader_elected",
        json!({"node": DEDICATED_CONTROLLER, "topic": "t", "partition": 0, "previous_leader": old, "clean": true}),
    )
    .await;
    let new = elected["leader"].as_i64().unwrap() as i32;
    let new_epoch = elected["leader_epoch"].as_i64().unwrap();
    assert!(
        followers.contains(&new) && new_epoch > old_epoch,
        "{elected}"
    );
    assert!(elected["recently_restarted"].is_boolean(), "{elected}");
    let shrink = told(
        &c,
        |c| c.dedicated(),
        "the controller",
        "isr_shrink",
        json!({"topic": "t", "partition": 0, "replicas": [old], "cause": "controller"}),
    )
    .await;
    assert_eq!(ids(&shrink["isr"]), followers, "{shrink}");
    let fields = json!({"node": new, "topic": "t", "partition": 0, "leader_epoch": new_epoch});
    told(
        &c,
        |c| &c.nodes[&new],
        "the new leader",
        "become_leader",
        fields,
    )
    .await;
    for v in 5..8 {
        let (status, body) = c.produce(new, "t", 0, "all", json!(v)).await;
        assert_eq!(status, 200, "{body}");
    }

    // The old leader restarts: it reopens its log of 6 records and, by the leader's
    // epoch end offset, cuts the one record it alone had.
    c.node(old).restart();
    let reopened = told(
        &c,
        |c| &c.nodes[&old],
        "the restarted node",
        "log_reopened",
        json!({"topic": "t", "partition": 0, "leo": 6}),
    )
    .await;
    assert!(
        reopened["hw"].as_u64().is_some_and(|hw| hw <= 5),
        "{reopened}"
    );
    let fields = json!({"topic": "t", "partition": 0, "to": 5, "records": 1, "rule": "epoch"});
    told(
        &c,
        |c| &c.nodes[&old],
        "the restarted node",
        "truncate",
        fields,
    )
    .await;
    // Caught up, it is proposed back into the ISR.
    let fields = json!({"topic": "t", "partition": 0, "replicas": [old], "cause": "caught_up"});
    told(
        &c,
        |c| c.dedicated(),
        "the controller",
        "isr_expand",
        fields,
    )
    .await;

    // A produce to a follower is fenced: it does not lead.
    let (status, body) = c.produce(old, "t", 0, "all", json!("misdirected")).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (421, Some("NOT_LEADER")),
        "{body}"
    );
    let fields = json!({"node": old, "api": "produce", "reason": "not_leader", "topic": "t"});
    told(&c, |c| &c.nodes[&old], "the follower", "fenced", fields).await;

    // Both followers die: the ISR is the leader alone, below min.insync.replicas 2.
    let others: Vec<i32> = (1..=3).filter(|id| *id != new).collect();
    for id in &others {
        c.node(*id).kill();
    }
    c.wait_for("the new leader alone in its ISR", || async {
        let d = c.debug_partition(new, "t", 0).await?;
        (ids(&d["isr"]) == vec![new]).then_some(())
    })
    .await;
    let (status, body) = c.produce(new, "t", 0, "all", json!("refused")).await;
    assert_eq!(status, 503, "{body}");
    let fields = json!({"topic": "t", "partition": 0, "isr_size": 1, "min_insync": 2});
    told(
        &c,
        |c| &c.nodes[&new],
        "the leader",
        "not_enough_replicas",
        fields,
    )
    .await;
}

/// Every `controller_epoch` line of the cluster's processes, as (node, epoch).
fn controller_epochs(c: &Cluster) -> Vec<(i64, i64)> {
    c.nodes
        .values()
        .flat_map(events)
        .filter(|e| e["kind"] == "controller_epoch")
        .map(|e| (e["node"].as_i64().unwrap(), e["epoch"].as_i64().unwrap()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_combined_mode_only_the_active_controller_tells_the_controller_events() {
    let mut c = Cluster::start(Opts::default());
    let (first, epoch) = c.controller().await;
    c.wait_for("the active controller's controller_epoch line", || {
        let found = controller_epochs(&c).contains(&(first as i64, epoch));
        async move { found.then_some(()) }
    })
    .await;
    c.create_topic("t", 1, 3, 2).await;
    c.wait_registered().await;

    // The active controller dies: another voter takes over under a higher epoch, and
    // the dead broker leaves the ISR (dropped by the controller, or proposed by the
    // leader first for its lag); each line once, by the active controller alone.
    c.node(first).kill();
    let (second, next_epoch) = c
        .wait_for("a new active controller", || async {
            let (id, e) = c.find_controller().await?;
            (id != first).then_some((id, e))
        })
        .await;
    assert!(next_epoch > epoch, "epoch {epoch} then {next_epoch}");
    c.wait_for("the new controller's controller_epoch line", || {
        let found = controller_epochs(&c).contains(&(second as i64, next_epoch));
        async move { found.then_some(()) }
    })
    .await;
    told(
        &c,
        |c| &c.nodes[&second],
        "the new controller",
        "isr_shrink",
        json!({"node": second, "topic": "t", "partition": 0, "replicas": [first]}),
    )
    .await;
    let epochs = controller_epochs(&c);
    let mut seen = epochs.iter().map(|(_, e)| *e).collect::<Vec<_>>();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), epochs.len(), "each epoch told once: {epochs:?}");
    let shrinks: Vec<Value> = c
        .nodes
        .values()
        .flat_map(events)
        .filter(|e| e["kind"] == "isr_shrink")
        .collect();
    assert_eq!(
        shrinks.len(),
        1,
        "told once, by the controller: {shrinks:?}"
    );
}
