//! The follower side of replication (Kafka's ReplicaFetcherManager and fetcher
//! threads): one task per partition this node follows, started and stopped by the
//! orders the replicas give ([`FetchOrder`]s, in the order they gave them).
//!
//! A task belongs to one (leader, leader epoch) and ends as soon as the replica moves
//! on. It first settles the log with the leader (`--truncation epoch`:
//! OffsetsForLeaderEpoch rounds, KIP-101/KIP-279; a pending `--truncation hw` cut),
//! then FETCHes from its LEO forever, applying each answer to the replica. Its calls
//! go over one kept connection to the leader ([`rpc::Connection`]), opened again
//! after a failed call. A round that moved nothing (a failed call, a storage error)
//! pauses before the next; while the partition's storage fails
//! (`partitions::log_dir`) the task only waits.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use super::partitions::{FetchOrders, NodeReplica, Partition, ReplicaManager};
use crate::error::Code;
use crate::protocol::{
    BrokerId, EpochEndOffset, Fetch, FetchResponse, LeaderEpoch, OffsetsForLeaderEpoch,
    TopicPartition,
};
use crate::replica::{Effects, FetchTask, ReplicaError, Role};
use crate::rpc::{self, CallError};

/// Pause after a round that moved nothing before the next one.
const BACKOFF: Duration = Duration::from_millis(100);
/// Timeout of an OffsetsForLeaderEpoch call.
const OFFSETS_TIMEOUT: Duration = Duration::from_secs(2);

/// Carry out the replicas' fetch orders until the node stops: one task per followed
/// partition, replaced when the replica follows anew, aborted when it stops following.
pub async fn run(manager: Arc<ReplicaManager>, mut orders: FetchOrders) {
    let mut tasks: HashMap<TopicPartition, JoinHandle<()>> = HashMap::new();
    while let Some(order) = orders.recv().await {
        if let Some(old) = tasks.remove(&order.part.tp) {
            old.abort();
        }
        if let FetchTask::Start {
            leader,
            leader_epoch,
        } = order.task
        {
            let tp = order.part.tp.clone();
            let task = Follower {
                manager: manager.clone(),
                part: order.part,
                leader,
                epoch: leader_epoch,
            };
            tasks.insert(tp, tokio::spawn(task.run()));
        }
    }
}

/// What the loop does after a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// The round moved the replica on: the next one starts at once.
    Continue,
    /// Nothing moved: pause before the next round.
    Backoff,
    /// The replica no longer follows this leader in this epoch: the task ends.
    Stop,
}

/// What the replica asks for next.
enum Step {
    /// Its truncation step failed (storage): pause.
    Backoff,
    /// Ask the leader where this epoch ends.
    Truncate(LeaderEpoch),
    /// FETCH from this offset.
    Fetch(u64),
}

/// One partition's fetch task.
struct Follower {
    /// The node's partitions (and, through them, its context).
    manager: Arc<ReplicaManager>,
    /// The partition it fetches.
    part: Arc<Partition>,
    /// Whom it fetches from…
    leader: BrokerId,
    /// …in which leader epoch.
    epoch: LeaderEpoch,
}

impl Follower {
    /// Settle the log, then fetch, until the replica moves on.
    async fn run(self) {
        let name = format!("node {}: {}", self.manager.ctx().id, self.part.name());
        let Some(addr) = self.leader_addr(&name).await else {
            return;
        };
        let ctx = self.manager.ctx();
        let mut leader = match rpc::Connection::new(&addr, ctx.auth.as_deref()) {
            Ok(conn) => conn,
            Err(e) => {
                eprintln!("{name}: leader {}: {e}", self.leader);
                return;
            }
        };
        let mut failures = 0u32;
        loop {
            // A replica whose storage fails does not fetch (as Kafka stops fetching
            // for an offline log dir): it could not append, and fetching at its old
            // LEO would make an idle partition's leader count it caught up.
            if self.part.log_dir.failing().is_some() {
                tokio::time::sleep(BACKOFF).await;
                continue;
            }
            let step = self.event(|r| {
                let (next, fx) = r.truncation_epoch();
                let step = match next {
                    Ok(Some(e)) => Step::Truncate(e),
                    Ok(None) => Step::Fetch(r.log_end_offset()),
                    Err(e) => {
                        self.manager.storage_error(&self.part, "truncation", &e);
                        Step::Backoff
                    }
                };
                (step, fx)
            });
            let next = match step {
                None => Next::Stop,
                Some(Step::Backoff) => Next::Backoff,
                Some(Step::Truncate(e)) => {
                    self.truncate(&name, &mut leader, e, &mut failures).await
                }
                Some(Step::Fetch(offset)) => {
                    self.fetch(&name, &mut leader, offset, &mut failures).await
                }
            };
            match next {
                Next::Continue => failures = 0,
                Next::Backoff => tokio::time::sleep(BACKOFF).await,
                Next::Stop => return,
            }
        }
    }

    /// Where the leader is: from `--peers`, or the address a joined broker registered
    /// with, waited for (a state naming it may come before the broker list does);
    /// None once the replica no longer follows it.
    async fn leader_addr(&self, name: &str) -> Option<String> {
        let mut waited = false;
        loop {
            if let Some(addr) = self.manager.ctx().peer_addr(self.leader) {
                return Some(addr);
            }
            if !waited {
                eprintln!(
                    "{name}: leader {} is not in --peers and has not registered an address \
                     yet; waiting for one",
                    self.leader
                );
                waited = true;
            }
            tokio::time::sleep(BACKOFF).await;
            self.event(|_| ((), Effects::default()))?;
        }
    }

    /// Run `event` on the replica if it still follows this leader in this epoch
    /// (None: it moved on).
    fn event<T>(&self, event: impl FnOnce(&mut NodeReplica) -> (T, Effects)) -> Option<T> {
        self.manager.update(&self.part, |r| {
            if r.role() != Role::Follower
                || r.leader_epoch() != self.epoch
                || r.leader() != self.leader
            {
                return (None, Effects::default());
            }
            let (answer, fx) = event(r);
            (Some(answer), fx)
        })
    }

    /// One OffsetsForLeaderEpoch round for our epoch `e`.
    async fn truncate(
        &self,
        name: &str,
        leader: &mut rpc::Connection,
        e: LeaderEpoch,
        failures: &mut u32,
    ) -> Next {
        let ctx = self.manager.ctx();
        let req = OffsetsForLeaderEpoch {
            topic: self.part.tp.topic.clone(),
            partition: self.part.tp.partition,
            replica_id: ctx.id,
            current_leader_epoch: self.epoch,
            leader_epoch: e,
        };
        let path = "/internal/offsets-for-leader-epoch";
        let answer: Result<EpochEndOffset, _> = leader.post(path, &req, OFFSETS_TIMEOUT).await;
        let a = match answer {
            Ok(a) => a,
            Err(err) => {
                note_failure(name, failures, &err);
                return Next::Backoff;
            }
        };
        let applied = self.event(|r| {
            let (before, epochs) = (r.log_end_offset(), r.epochs().clone());
            let (result, fx) = r.apply_epoch_end_offset(a.to_answer());
            let moved = r.log_end_offset() != before || *r.epochs() != epochs;
            ((before, r.log_end_offset(), moved, result), fx)
        });
        let Some((before, after, moved, result)) = applied else {
            return Next::Stop;
        };
        match &result {
            Ok(done) if after < before || *done => eprintln!(
                "{name}: epoch truncation: leader {} answered epoch {} ends at {} for our \
                 epoch {e}; LEO {before} -> {after}{}",
                self.leader,
                a.leader_epoch,
                a.end_offset,
                if *done { " (done)" } else { "" }
            ),
            Ok(_) if !moved => eprintln!(
                "{name}: epoch truncation: leader {} answered epoch {} ends at {} for our \
                 epoch {e}, which moves nothing; asking again after a pause",
                self.leader, a.leader_epoch, a.end_offset
            ),
            Ok(_) => {}
            Err(err) => self.manager.storage_error(&self.part, "truncating", err),
        }
        after_truncation(&result, moved)
    }

    /// One FETCH round from `offset`.
    async fn fetch(
        &self,
        name: &str,
        leader: &mut rpc::Connection,
        offset: u64,
        failures: &mut u32,
    ) -> Next {
        let ctx = self.manager.ctx();
        let req = Fetch {
            topic: self.part.tp.topic.clone(),
            partition: self.part.tp.partition,
            replica_id: ctx.id,
            broker_epoch: ctx.broker_epoch(),
            fetch_offset: offset,
            leader_epoch: self.epoch,
            max_records: ctx.config.replica.replica_fetch_max_records(),
        };
        // The leader may hold an empty FETCH in its purgatory this long.
        let timeout = ctx.config.replica.replica_fetch_wait_max() + Duration::from_secs(3);
        let answer: Result<FetchResponse, _> = leader.post("/internal/fetch", &req, timeout).await;
        match answer {
            Ok(resp) => {
                let applied = self.event(|r| {
                    let before = r.log_end_offset();
                    let (result, fx) = r.apply_fetch_response(resp);
                    ((result, r.log_end_offset() != before), fx)
                });
                match applied {
                    None => Next::Stop,
                    Some((Ok(()), appended)) => {
                        if appended {
                            self.manager.storage_ok(&self.part);
                        }
                        Next::Continue
                    }
                    Some((Err(ReplicaError::Io(e)), _)) => {
                        // Nothing was appended: the next round asks for the same
                        // records.
                        self.manager
                            .storage_error(&self.part, "appending fetched records", &e);
                        Next::Backoff
                    }
                    Some((Err(_), _)) => Next::Backoff,
                }
            }
            Err(CallError::Api(e)) if e.code == Code::OffsetOutOfRange => {
                // The leader's log ends below ours (pre-0.11 Kafka's handling): cut ours
                // to its end.
                let Some(leo) = e.extra.get("log_end_offset").and_then(|v| v.as_u64()) else {
                    return Next::Backoff;
                };
                let Some(result) = self.event(|r| r.truncate_to_leader_end(leo)) else {
                    return Next::Stop;
                };
                eprintln!(
                    "{name}: fetch offset {offset} is past leader's LEO {leo}: truncating to it"
                );
                if let Err(e) = result {
                    self.manager.storage_error(&self.part, "truncating", &e);
                }
                Next::Backoff
            }
            Err(err) => {
                note_failure(name, failures, &err);
                Next::Backoff
            }
        }
    }
}

/// After applying an OffsetsForLeaderEpoch answer (`moved`: it changed the log or
/// the epoch cache): whether to go on at once. An answer that settles nothing and
/// moves nothing would only be asked for again, and a storage error (logged by the
/// caller) would only strike again at once, so the next round waits.
fn after_truncation(result: &io::Result<bool>, moved: bool) -> Next {
    match result {
        Ok(true) => Next::Continue,
        Ok(false) if moved => Next::Continue,
        Ok(false) | Err(_) => Next::Backoff,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncation_round_that_moves_nothing_pauses_before_asking_again() {
        assert_eq!(
            after_truncation(&Ok(true), false),
            Next::Continue,
            "settled"
        );
        assert_eq!(
            after_truncation(&Ok(false), true),
            Next::Continue,
            "cut: ask on"
        );
        assert_eq!(after_truncation(&Ok(false), false), Next::Backoff);
    }

    /// A disk that keeps failing must not turn the fetch task into a busy loop of
    /// OffsetsForLeaderEpoch calls: a storage error pauses like a failed call.
    #[test]
    fn a_storage_error_while_truncating_pauses_before_the_next_round() {
        let failed = Err(io::Error::other("the disk refuses to truncate"));
        assert_eq!(after_truncation(&failed, false), Next::Backoff);
        assert_eq!(after_truncation(&failed, true), Next::Backoff);
    }
}
