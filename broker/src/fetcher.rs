//! The follower's fetch loop for one partition: settle the log with the leader first
//! (`--truncation epoch`: OffsetsForLeaderEpoch rounds, KIP-101/KIP-279), then FETCH
//! from its LEO forever, applying each answer to the replica. The task belongs to one
//! (leader, leader epoch); it ends as soon as the replica moves on.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::error::Code;
use crate::node::Node;
use crate::partition::Partition;
use crate::protocol::{BrokerId, EpochEndOffset, Fetch, LeaderEpoch, OffsetsForLeaderEpoch};
use crate::replica::{FetchResponse, ReplicaError, Role};
use crate::replica_manager::update;
use crate::rpc::{self, CallError};

/// Records per FETCH.
const MAX_RECORDS: usize = 1000;
/// Pause after a failed call before the next one.
const BACKOFF: Duration = Duration::from_millis(100);

/// Start fetching `part` from `leader` in `epoch`.
pub fn spawn(
    node: Arc<Node>,
    part: Arc<Partition>,
    leader: BrokerId,
    epoch: LeaderEpoch,
) -> JoinHandle<()> {
    tokio::spawn(run(node, part, leader, epoch))
}

enum Step {
    Backoff,
    Truncate(LeaderEpoch),
    Fetch(u64),
}

async fn run(node: Arc<Node>, part: Arc<Partition>, leader: BrokerId, epoch: LeaderEpoch) {
    let tp = part.tp.clone();
    let name = format!("node {}: {}-{}", node.id, tp.topic, tp.partition);
    let Some(addr) = node.peer_addr(leader) else {
        eprintln!("{name}: leader {leader} is not in --peers: cannot fetch");
        return;
    };
    let fetch_timeout =
        Duration::from_millis(node.args.replica_fetch_wait_max_ms) + Duration::from_secs(3);
    let mut failures = 0u32;
    loop {
        let step = update(&node, &part, |r| {
            if r.role() != Role::Follower || r.leader_epoch() != epoch || r.leader() != leader {
                return (None, Default::default());
            }
            let (next, fx) = r.truncation_epoch();
            let step = match next {
                Ok(Some(e)) => Step::Truncate(e),
                Ok(None) => Step::Fetch(r.log_end_offset()),
                Err(e) => {
                    eprintln!("{name}: truncation: {e}");
                    Step::Backoff
                }
            };
            (Some(step), fx)
        });
        let Some(step) = step else { return };
        let ok = match step {
            Step::Backoff => false,
            Step::Truncate(e) => {
                let req = OffsetsForLeaderEpoch {
                    topic: tp.topic.clone(),
                    partition: tp.partition,
                    replica_id: node.id,
                    current_leader_epoch: epoch,
                    leader_epoch: e,
                };
                let answer: Result<EpochEndOffset, _> = rpc::post(
                    &node.client,
                    &addr,
                    "/internal/offsets-for-leader-epoch",
                    &req,
                    Duration::from_secs(2),
                )
                .await;
                match answer {
                    Ok(a) => {
                        let applied = update(&node, &part, |r| {
                            if r.role() != Role::Follower || r.leader_epoch() != epoch {
                                return (None, Default::default());
                            }
                            let before = r.log_end_offset();
                            let (result, fx) = r.apply_epoch_end_offset(a.to_answer());
                            (Some((before, r.log_end_offset(), result)), fx)
                        });
                        let Some((before, after, result)) = applied else {
                            return;
                        };
                        match result {
                            Ok(done) => {
                                if after < before || done {
                                    eprintln!(
                                        "{name}: epoch truncation: leader {leader} answered \
                                         epoch {} ends at {} for our epoch {e}; LEO {before} -> \
                                         {after}{}",
                                        a.leader_epoch,
                                        a.end_offset,
                                        if done { " (done)" } else { "" }
                                    );
                                }
                            }
                            Err(err) => eprintln!("{name}: truncating: {err}"),
                        }
                        true
                    }
                    Err(err) => {
                        note_failure(&name, &mut failures, &err);
                        false
                    }
                }
            }
            Step::Fetch(offset) => {
                let req = Fetch {
                    topic: tp.topic.clone(),
                    partition: tp.partition,
                    replica_id: node.id,
                    broker_epoch: node.broker_epoch,
                    fetch_offset: offset,
                    leader_epoch: epoch,
                    max_records: MAX_RECORDS,
                };
                let answer: Result<FetchResponse, _> =
                    rpc::post(&node.client, &addr, "/internal/fetch", &req, fetch_timeout).await;
                match answer {
                    Ok(resp) => {
                        let result = update(&node, &part, |r| {
                            if r.role() != Role::Follower || r.leader_epoch() != epoch {
                                return (None, Default::default());
                            }
                            let (result, fx) = r.apply_fetch_response(resp);
                            (Some(result), fx)
                        });
                        let Some(result) = result else { return };
                        match result {
                            Ok(()) => true,
                            Err(ReplicaError::Io(e)) => {
                                eprintln!("{name}: appending fetched records: {e}");
                                false
                            }
                            Err(_) => false,
                        }
                    }
                    Err(CallError::Api(e)) if e.code == Code::OffsetOutOfRange => {
                        // The leader's log ends below ours (pre-0.11 Kafka's handling):
                        // cut ours to its end.
                        let leo = e.extra.get("log_end_offset").and_then(|v| v.as_u64());
                        if let Some(leo) = leo {
                            let result = update(&node, &part, |r| {
                                if r.role() != Role::Follower || r.leader_epoch() != epoch {
                                    return (None, Default::default());
                                }
                                let (result, fx) = r.truncate_to_leader_end(leo);
                                (Some(result), fx)
                            });
                            let Some(result) = result else { return };
                            eprintln!(
                                "{name}: fetch offset {offset} is past leader's LEO {leo}: \
                                 truncating to it"
                            );
                            if let Err(e) = result {
                                eprintln!("{name}: truncating: {e}");
                            }
                        }
                        false
                    }
                    Err(err) => {
                        note_failure(&name, &mut failures, &err);
                        false
                    }
                }
            }
        };
        if ok {
            failures = 0;
            part.purgatory.wake();
        } else {
            tokio::time::sleep(BACKOFF).await;
        }
    }
}

/// Log the first failure of a streak, then every 50th, so a dead leader does not
/// flood the log.
fn note_failure(name: &str, failures: &mut u32, err: &CallError) {
    if *failures % 50 == 0 {
        eprintln!("{name}: {err}");
    }
    *failures += 1;
}
