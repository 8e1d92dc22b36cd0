//! Storage through the process: with `--simulate-page-cache`, records not yet flushed
//! die with a SIGKILL like with a power cut, and flushed ones survive.

use crate::support::{Cluster, Opts, ids};
use serde_json::json;

/// Produce five records to a single-replica partition, stop its broker (SIGKILL, or
/// SIGTERM with `clean`), restart it: (LEO and flushed offset before the stop, LEO
/// after the restart).
async fn stop_and_restart(node_args: &[&str], clean: bool) -> ((u64, u64), u64) {
    let mut c = Cluster::start(Opts {
        node_args: node_args.iter().map(|s| s.to_string()).collect(),
        ..Opts::default()
    });
    c.create_topic("solo", 3, 1, 1).await;
    let s = c.controller_partition("solo", 0).await.unwrap();
    let host = ids(&s["replicas"])[0];
    let epoch = s["leader_epoch"].as_i64().unwrap();
    for v in 0..5 {
        let (status, body) = c.produce(host, "solo", 0, "1", json!(v)).await;
        assert_eq!(status, 200, "{body}");
    }
    let d = c.debug_partition(host, "solo", 0).await.unwrap();
    let before = (
        d["log_end_offset"].as_u64().unwrap(),
        d["flushed_offset"].as_u64().unwrap(),
    );
    if clean {
        assert!(c.node(host).terminate(), "a clean stop exits with success");
    } else {
        c.node(host).kill();
    }
    c.node(host).restart();
    let leo = c
        .wait_for(
            "the restarted broker to lead its partition again",
            || async {
                let d = c.debug_partition(host, "solo", 0).await?;
                (d["role"] == "leader" && d["leader_epoch"].as_i64()? > epoch)
                    .then(|| d["log_end_offset"].as_u64())
                    .flatten()
            },
        )
        .await;
    (before, leo)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unflushed_records_are_lost_on_sigkill_with_simulated_page_cache() {
    let (before, after) = stop_and_restart(&["--simulate-page-cache"], false).await;
    assert_eq!(before, (5, 0), "five records appended, none flushed");
    assert_eq!(after, 0, "the unflushed records died with the process");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flushed_records_survive_sigkill() {
    let (before, after) =
        stop_and_restart(&["--simulate-page-cache", "--flush-messages", "1"], false).await;
    assert_eq!(before, (5, 5));
    assert_eq!(after, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_stop_flushes_everything() {
    let (before, after) = stop_and_restart(&["--simulate-page-cache"], true).await;
    assert_eq!(before, (5, 0));
    assert_eq!(after, 5, "SIGTERM flushes the log before exiting");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_flush_timer_makes_records_durable() {
    let mut c = Cluster::start(Opts {
        node_args: vec![
            "--simulate-page-cache".into(),
            "--flush-ms".into(),
            "50".into(),
        ],
        ..Opts::default()
    });
    c.create_topic("solo", 3, 1, 1).await;
    let s = c.controller_partition("solo", 0).await.unwrap();
    let host = ids(&s["replicas"])[0];
    for v in 0..5 {
        // acks=0 answers before appending, without an offset.
        let (status, body) = c.produce(host, "solo", 0, "0", json!(v)).await;
        assert_eq!(
            (status, &body["base_offset"]),
            (200, &serde_json::Value::Null)
        );
    }
    c.wait_for("the flush timer to flush all five records", || async {
        let d = c.debug_partition(host, "solo", 0).await?;
        (d["log_end_offset"] == 5 && d["flushed_offset"] == 5).then_some(())
    })
    .await;
    c.node(host).kill();
    c.node(host).restart();
    c.wait_for("the five records after a SIGKILL", || async {
        let d = c.debug_partition(host, "solo", 0).await?;
        (d["role"] == "leader" && d["log_end_offset"] == 5).then_some(())
    })
    .await;
}

/// A follower that restarts starts from the high watermark it checkpointed (capped at
/// its LEO), as Kafka's does, not from 0: with its leader paused, no FETCH answer can
/// tell it the HW, yet it reports the checkpointed one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_follower_starts_from_its_checkpointed_high_watermark() {
    let mut c = Cluster::start(Opts::default());
    c.create_topic("t", 1, 3, 2).await;
    let s = c.controller_partition("t", 0).await.unwrap();
    let leader = s["leader"].as_i64().unwrap() as i32;
    let follower = ids(&s["replicas"])
        .into_iter()
        .find(|id| *id != leader)
        .unwrap();
    for v in 0..20 {
        let (status, body) = c.produce(leader, "t", 0, "all", json!(v)).await;
        assert_eq!(status, 200, "{body}");
    }
    let checkpoint = c
        .dir
        .path()
        .join(format!("node{follower}/t-0/high-watermark"));
    c.wait_for("the follower to checkpoint HW 20", || async {
        (std::fs::read_to_string(&checkpoint)
            .ok()?
            .starts_with("0\n20\ncrc32c "))
        .then_some(())
    })
    .await;
    c.node(follower).kill();
    c.nodes[&leader].signal(libc::SIGSTOP);
    c.node(follower).restart();
    let d = c
        .wait_for("the restarted follower to host its partition again", || {
            c.debug_partition(follower, "t", 0)
        })
        .await;
    c.nodes[&leader].signal(libc::SIGCONT);
    assert_eq!(d["log_end_offset"], 20, "{d}");
    assert_eq!(d["high_watermark"], 20, "{d}");
}

/// A cluster with a topic `t` (one partition, three replicas) holding records 0..5:
/// (cluster, leader, a follower).
async fn five_records() -> (Cluster, i32, i32) {
    let c = Cluster::start(Opts::default());
    c.create_topic("t", 1, 3, 2).await;
    let s = c.controller_partition("t", 0).await.unwrap();
    let leader = s["leader"].as_i64().unwrap() as i32;
    let follower = ids(&s["replicas"])
        .into_iter()
        .find(|id| *id != leader)
        .unwrap();
    for v in 0..5 {
        let (status, body) = c.produce(leader, "t", 0, "all", json!(v)).await;
        assert_eq!(status, 200, "{body}");
    }
    (c, leader, follower)
}

/// How many lines of `log` contain `needle`.
fn lines_with(log: &str, needle: &str) -> usize {
    log.lines().filter(|l| l.contains(needle)).count()
}

/// The HW checkpoint is advisory: a malformed one is ignored with one warning (it
/// kept the partition offline on that node for good, logging ~5 lines a second), and
/// the next checkpoint rewrites it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_high_watermark_checkpoint_is_ignored_with_one_warning() {
    let (mut c, _, follower) = five_records().await;
    assert!(c.node(follower).terminate());
    let checkpoint = c
        .dir
        .path()
        .join(format!("node{follower}/t-0/high-watermark"));
    std::fs::write(&checkpoint, "0\nnot a number\n").unwrap();
    c.node(follower).restart();
    c.wait_for(
        "the follower to rejoin the ISR with every record",
        || async {
            let s = c.controller_partition("t", 0).await?;
            let d = c.debug_partition(follower, "t", 0).await?;
            (ids(&s["isr"]).contains(&follower)
                && d["log_end_offset"] == 5
                && d["high_watermark"] == 5)
                .then_some(())
        },
    )
    .await;
    c.wait_for("the checkpoint to be rewritten", || async {
        (std::fs::read_to_string(&checkpoint)
            .ok()?
            .starts_with("0\n5\ncrc32c "))
        .then_some(())
    })
    .await;
    let log = c.nodes[&follower].log();
    assert_eq!(
        lines_with(&log, "malformed high-watermark checkpoint"),
        1,
        "{log}"
    );
    assert_eq!(lines_with(&log, "cannot open"), 0, "{log}");
}

/// A segment holding a repeated offset is refused, with one clear line, instead of
/// guessed at: the node does not host the partition (the others go on without it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segment_with_a_repeated_offset_is_refused_with_one_line() {
    let (mut c, leader, follower) = five_records().await;
    assert!(c.node(follower).terminate());
    let segment = c
        .dir
        .path()
        .join(format!("node{follower}/t-0/log/00000000000000000000.log"));
    // Repeat the last frame (offset 4): a valid record where 5 is due.
    let mut bytes = std::fs::read(&segment).unwrap();
    let mut pos = 0;
    let mut last = 0..0;
    while pos < bytes.len() {
        let len = u32::from_le_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
        last = pos..pos + 8 + len;
        pos += 8 + len;
    }
    let frame = bytes[last].to_vec();
    bytes.extend_from_slice(&frame);
    std::fs::write(&segment, &bytes).unwrap();
    c.node(follower).restart();
    // Heartbeats come every 200 ms, each naming the partition: give them time.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let log = c.nodes[&follower].log();
    assert_eq!(lines_with(&log, "cannot open t-0"), 1, "{log}");
    assert_eq!(lines_with(&log, "holds offset 4 at byte"), 1, "{log}");
    assert!(
        log.contains("refusing to open the log rather than guess"),
        "{log}"
    );
    assert!(c.debug_partition(follower, "t", 0).await.is_none());
    assert_eq!(std::fs::read(&segment).unwrap(), bytes, "nothing was cut");
    let (status, body) = c.produce(leader, "t", 0, "all", json!(5)).await;
    assert_eq!(status, 200, "{body}");
}
