//! Files damaged while their process is down (what the harness's `corrupt` fault
//! does), end to end on real processes: a follower cuts a damaged segment and
//! re-fetches what it lost; the last member of an ISR, which the controller elects
//! as the only replica it may, refuses a damaged log rather than lead without
//! records the others hold; a controller voter whose Raft log lost an acknowledged
//! entry refuses to start. docs/broker.md, "Corruption on disk", states the rules.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::{Cluster, Opts, ids};
use serde_json::{Value, json};

/// (leader, ISR) of t-0 as the controller says.
async fn view(c: &Cluster) -> Option<(i32, Vec<i32>)> {
    let s = c.controller_partition("t", 0).await?;
    Some((s["leader"].as_i64()? as i32, ids(&s["isr"])))
}

/// Produce `values` to t-0's leader with acks=all, each acknowledged.
async fn produce_all(c: &Cluster, values: &[Value]) {
    for v in values {
        let (leader, _) = c
            .wait_for("a leader", || async { view(c).await.filter(|v| v.0 > 0) })
            .await;
        let (status, body) = c.produce(leader, "t", 0, "all", v.clone()).await;
        assert_eq!(status, 200, "{body}");
    }
}

/// The values of node `id`'s whole local log of t-0 (None: it does not host it).
async fn local_values(c: &Cluster, id: i32) -> Option<Vec<Value>> {
    let (status, v) = c.get(&c.addr(id), "/debug/log/t/0").await;
    let records = v["records"].as_array().filter(|_| status == 200)?;
    Some(records.iter().map(|r| r["value"].clone()).collect())
}

/// Node `id`'s first segment of t-0.
fn first_segment(c: &Cluster, id: i32) -> PathBuf {
    c.dir
        .path()
        .join(format!("node{id}/t-0/log/00000000000000000000.log"))
}

/// Flip a bit inside the first record of `segment`, whole records after it.
fn damage_first_record(segment: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(segment).unwrap();
    assert!(bytes.len() > 100, "{} bytes", bytes.len());
    bytes[20] ^= 0x10;
    std::fs::write(segment, &bytes).unwrap();
    bytes
}

fn values(range: std::ops::Range<u32>) -> Vec<Value> {
    range.map(|i| json!(format!("v{i}"))).collect()
}

/// A follower restarted with a record damaged in the middle of its log: out of the
/// ISR (its new broker epoch), it cuts the log at the damage, says where, re-fetches
/// the rest from the leader and rejoins the ISR with every record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_cuts_a_damaged_segment_and_fetches_it_again() {
    let mut c = Cluster::start(Opts::default());
    c.create_topic("t", 1, 3, 2).await;
    let acked = values(0..10);
    produce_all(&c, &acked).await;
    let (leader, _) = view(&c).await.unwrap();
    let follower = (1..=3).find(|&id| id != leader).unwrap();
    c.wait_for("the follower to hold every record", || async {
        (local_values(&c, follower).await? == acked).then_some(())
    })
    .await;
    c.node(follower).kill();
    let segment = first_segment(&c, follower);
    damage_first_record(&segment);
    c.node(follower).restart();
    c.wait_for("the follower back in the ISR with every record", || async {
        let (_, isr) = view(&c).await?;
        (isr.contains(&follower) && local_values(&c, follower).await? == acked).then_some(())
    })
    .await;
    let log = c.nodes[&follower].log();
    let cut = format!("at byte 0 of {}: cut", segment.display());
    assert!(
        log.contains("recovery: corrupt record (CRC") && log.contains(&cut),
        "{log}"
    );
    assert_eq!(local_values(&c, leader).await.unwrap(), acked);
}

/// The last member of the ISR restarts with a record damaged before others it holds:
/// the controller elects it (the only replica it may), and it refuses the log —
/// untouched, one line naming the file and the byte — instead of cutting it and
/// leading without records the other replicas hold, which would have made them cut
/// theirs to match. Nothing is lost; the partition waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_isr_member_refuses_a_damaged_log_and_the_others_keep_theirs() {
    let mut c = Cluster::start(Opts::default().dedicated_controller());
    c.create_topic("t", 1, 3, 1).await;
    let (leader, _) = view(&c).await.unwrap();
    let others: Vec<i32> = (1..=3).filter(|&id| id != leader).collect();
    let early = values(0..4);
    produce_all(&c, &early).await;
    for &id in &others {
        c.wait_for("every replica to hold the first records", || async {
            (local_values(&c, id).await? == early).then_some(())
        })
        .await;
    }
    for &id in &others {
        c.node(id).kill();
    }
    c.wait_for("the leader alone in the ISR", || async {
        view(&c).await.filter(|v| v.1 == [leader])
    })
    .await;
    produce_all(&c, &values(4..6)).await;
    c.node(leader).kill();
    c.wait_for("t-0 offline", || async {
        view(&c).await.filter(|v| v.0 == -1)
    })
    .await;
    let segment = first_segment(&c, leader);
    let damaged = damage_first_record(&segment);
    for &id in &others {
        c.node(id).restart();
    }
    c.wait_registered().await;
    c.node(leader).restart();
    c.wait_for("the last ISR member elected again", || async {
        view(&c).await.filter(|v| v.0 == leader)
    })
    .await;
    // Heartbeats (200 ms) and fetches go on meanwhile: give them time.
    let watch = Instant::now();
    while watch.elapsed() < Duration::from_millis(2500) {
        for &id in &others {
            assert_eq!(
                local_values(&c, id).await,
                Some(early.clone()),
                "{}",
                c.logs()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(local_values(&c, leader).await, None, "not hosted");
    assert_eq!(std::fs::read(&segment).unwrap(), damaged, "untouched");
    let log = c.nodes[&leader].log();
    let refusals: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("cannot open t-0"))
        .collect();
    assert_eq!(refusals.len(), 1, "{log}");
    for part in [
        "recovery would cut whole records",
        &format!("at byte 0 of {}", segment.display()),
        "this broker is in the partition's ISR",
    ] {
        assert!(
            refusals[0].contains(part),
            "{part:?} not in {}",
            refusals[0]
        );
    }
}

/// A voter whose Raft log was cut short — its last entry, acknowledged, torn off —
/// refuses to start: exit code 1, one line naming the log, the byte and the entry
/// it lost. It used to cut the entry off as a torn write and go on voting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voter_whose_raft_log_lost_an_acknowledged_entry_refuses_to_start() {
    let mut c = Cluster::start(Opts::default());
    c.create_topic("t", 1, 3, 2).await;
    produce_all(&c, &values(0..1)).await;
    let victim = 3;
    c.node(victim).kill();
    let raft = c.dir.path().join(format!("node{victim}/raft"));
    let log = raft.join("log");
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..bytes.len() - 3]).unwrap();
    c.node(victim).restart();
    let code = c.node(victim).wait_exit_code(Duration::from_secs(30));
    let text = c.nodes[&victim].log();
    assert_eq!(code, Some(1), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("broker: "))
        .unwrap_or("");
    for part in [
        format!(
            "broker: the controller's Raft log {} is corrupt at byte ",
            log.display()
        ),
        format!("{} says entries up to", raft.join("log-end.json").display()),
        "were written and acknowledged".into(),
    ] {
        assert!(line.contains(&part), "{part:?} not in {text}");
    }
    assert_eq!(
        std::fs::read(&log).unwrap().len(),
        bytes.len() - 3,
        "untouched"
    );
    // The others go on without it.
    produce_all(&c, &values(1..2)).await;
}
