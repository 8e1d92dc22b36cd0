//! When is a healed cluster done recovering? Before the final drain and log dump, every
//! partition must have a leader, a full ISR, and every replica caught up (HW = LEO,
//! equal across replicas) — otherwise the final logs would show replication still in
//! flight rather than what the cluster kept. A pure judgement over the controller's
//! metadata and each node's `/debug/partitions`.

use std::collections::BTreeMap;

use std::time::{Duration, Instant};

use workloads::api::PartitionMetadata;

use super::api::{DebugPartitions, Metadata};
use super::{Cluster, POLL};
use crate::error::HarnessError;
use crate::proc::Proc;

/// Ok if converged; else every reason it is not, e.g.
/// `queue-0: replica 2 has HW 40 < LEO 45`.
pub fn check(
    nodes: &[i32],
    meta: &Metadata,
    replicas: &BTreeMap<i32, Result<DebugPartitions, String>>,
) -> Result<(), String> {
    let mut problems = Vec::new();
    for id in nodes {
        if !meta.brokers.iter().any(|b| b.id == *id && b.alive) {
            problems.push(format!(
                "node {id} is not alive in the controller's metadata"
            ));
        }
    }
    for (topic, p) in meta.partitions() {
        partition(&mut problems, topic, p, replicas);
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// What keeps one partition from having converged, added to `problems`: no
/// leader, an ISR short of the replicas, a replica not caught up or not in step
/// with the controller, replicas whose ends differ.
fn partition(
    problems: &mut Vec<String>,
    topic: &str,
    p: &PartitionMetadata,
    replicas: &BTreeMap<i32, Result<DebugPartitions, String>>,
) {
    let name = format!("{topic}-{}", p.partition);
    if p.leader < 0 {
        problems.push(format!("{name}: no leader"));
    }
    let mut isr = p.isr.clone();
    isr.sort();
    let mut all = p.replicas.clone();
    all.sort();
    if isr != all {
        problems.push(format!(
            "{name}: ISR {:?} is not all replicas {:?}",
            p.isr, p.replicas
        ));
    }
    let mut ends = Vec::new();
    for &r in &p.replicas {
        if let Some(end) = replica(problems, &name, topic, p, r, replicas) {
            ends.push(end);
        }
    }
    if ends
        .windows(2)
        .any(|w| (w[0].1, w[0].2) != (w[1].1, w[1].2))
    {
        let each: Vec<String> = ends
            .iter()
            .map(|(r, leo, hw)| format!("{r} at LEO {leo} HW {hw}"))
            .collect();
        problems.push(format!("{name}: replicas differ: {}", each.join(", ")));
    }
}

/// What keeps replica `r` of partition `p` (called `name`) from having
/// converged, added to `problems`; its LEO and HW if it holds the partition.
fn replica(
    problems: &mut Vec<String>,
    name: &str,
    topic: &str,
    p: &PartitionMetadata,
    r: i32,
    replicas: &BTreeMap<i32, Result<DebugPartitions, String>>,
) -> Option<(i32, u64, u64)> {
    let state = match replicas.get(&r) {
        Some(Ok(debug)) => debug
            .partitions
            .iter()
            .find(|s| s.topic == topic && s.partition == p.partition),
        Some(Err(e)) => {
            problems.push(format!("{name}: replica {r} cannot be read: {e}"));
            return None;
        }
        None => {
            problems.push(format!("{name}: replica {r} is not a node of this cluster"));
            return None;
        }
    };
    let Some(s) = state else {
        problems.push(format!("{name}: replica {r} does not hold the partition"));
        return None;
    };
    if s.leader_epoch != p.leader_epoch {
        problems.push(format!(
            "{name}: replica {r} is at leader epoch {}, the controller at {}",
            s.leader_epoch, p.leader_epoch
        ));
    }
    let role = if r == p.leader { "leader" } else { "follower" };
    if s.role != role {
        problems.push(format!("{name}: replica {r} is {}, not {role}", s.role));
    }
    if s.high_watermark != s.log_end_offset {
        problems.push(format!(
            "{name}: replica {r} has HW {} != LEO {}",
            s.high_watermark, s.log_end_offset
        ));
    }
    Some((r, s.log_end_offset, s.high_watermark))
}

/// How long the healed cluster may show the same reasons for not having converged
/// before the wait gives up early: nothing in it moves (a partition whose only
/// in-sync replica lost its log stays so for good), and the rest of the timeout
/// would only delay the verdict. A cluster still recovering changes what it
/// reports well within this (a follower's LEO, a leader elected, an ISR grown).
const STALL: Duration = Duration::from_secs(20);

/// How long the same reasons have been seen, look after look: a new reason, or a
/// change in one (a follower's LEO moved), starts the count again.
#[derive(Default)]
struct Unchanged {
    last: Option<(String, Instant)>,
}

impl Unchanged {
    /// `why` seen at `now`: for how long it has been seen unchanged.
    fn seen(&mut self, why: String, now: Instant) -> Duration {
        let since = match &self.last {
            Some((before, since)) if *before == why => *since,
            _ => now,
        };
        self.last = Some((why, since));
        now - since
    }
}

impl Cluster {
    /// Wait until every partition has a full ISR, a leader, and HW = LEO on every
    /// replica (read from the nodes' /debug/partitions), at most `timeout`, and at
    /// most [`STALL`] while what keeps it from converging stays the same; Err says
    /// what did not converge.
    pub(super) async fn await_convergence(&self, timeout: Duration) -> crate::error::Result<()> {
        let start = Instant::now();
        let mut unchanged = Unchanged::default();
        loop {
            let why = match self.convergence().await {
                Ok(()) => return Ok(()),
                Err(why) => why,
            };
            let now = Instant::now();
            if now - start >= timeout {
                return Err(HarnessError::new(format!(
                    "the cluster did not converge within {timeout:?}: {why}"
                )));
            }
            let same = unchanged.seen(why.clone(), now);
            if same >= STALL {
                return Err(HarnessError::new(format!(
                    "the cluster stopped changing: the same for {same:.0?}, {:.0?} into the wait: {why}",
                    now - start
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// One look at the cluster: Ok if converged, else what is not.
    async fn convergence(&self) -> std::result::Result<(), String> {
        let meta = self.metadata().await.map_err(|e| e.to_string())?;
        let mut replicas = BTreeMap::new();
        for id in self.node_ids() {
            let state = match self.real_addr(Proc::Node(id)) {
                None => Err(format!("node {id} is not running")),
                Some(addr) => self
                    .admin
                    .debug_partitions(addr)
                    .await
                    .map_err(|e| format!("node {id}: {e}")),
            };
            replicas.insert(id, state);
        }
        check(&self.node_ids(), &meta, &replicas)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::broker::api::ReplicaState;
    use workloads::api::{BrokerInfo, PartitionMetadata, TopicMetadata};

    fn meta(leader: i32, isr: Vec<i32>) -> Metadata {
        Metadata {
            controller_id: Some(1),
            controller_epoch: 1,
            brokers: (1..=3).map(|id| BrokerInfo { id, alive: true }).collect(),
            topics: vec![TopicMetadata {
                name: "queue".into(),
                partitions: vec![PartitionMetadata {
                    partition: 0,
                    leader,
                    leader_epoch: 4,
                    isr,
                    replicas: vec![1, 2, 3],
                    adding: vec![],
                    removing: vec![],
                }],
            }],
        }
    }

    fn replica(id: i32, leader: i32, leo: u64, hw: u64) -> (i32, Result<DebugPartitions, String>) {
        let role = if id == leader { "leader" } else { "follower" };
        let state = ReplicaState {
            topic: "queue".into(),
            partition: 0,
            role: role.into(),
            leader,
            leader_epoch: 4,
            isr: vec![1, 2, 3],
            replicas: vec![1, 2, 3],
            log_end_offset: leo,
            high_watermark: hw,
            flushed_offset: hw,
        };
        (
            id,
            Ok(DebugPartitions {
                broker: id,
                partitions: vec![state],
            }),
        )
    }

    /// The count starts again whenever what is reported changes.
    #[test]
    fn only_the_same_reasons_count_as_unchanged() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut u = Unchanged::default();
        assert_eq!(u.seen("a: LEO 4".into(), at(0)), Duration::ZERO);
        assert_eq!(u.seen("a: LEO 4".into(), at(5)), Duration::from_secs(5));
        assert_eq!(u.seen("a: LEO 9".into(), at(7)), Duration::ZERO);
        assert_eq!(u.seen("a: LEO 9".into(), at(30)), Duration::from_secs(23));
    }

    #[test]
    fn a_caught_up_cluster_has_converged() {
        let replicas = [
            replica(1, 1, 9, 9),
            replica(2, 1, 9, 9),
            replica(3, 1, 9, 9),
        ]
        .into();
        assert_eq!(
            check(&[1, 2, 3], &meta(1, vec![1, 3, 2]), &replicas),
            Ok(())
        );
    }

    #[test]
    fn every_reason_is_named() {
        let mut replicas: BTreeMap<_, _> = [
            replica(1, 1, 9, 9),
            replica(2, 1, 9, 7),
            replica(3, 1, 5, 5),
        ]
        .into();
        let err = check(&[1, 2, 3], &meta(1, vec![1, 2]), &replicas).unwrap_err();
        assert!(
            err.contains("queue-0: ISR [1, 2] is not all replicas [1, 2, 3]"),
            "{err}"
        );
        assert!(
            err.contains("queue-0: replica 2 has HW 7 != LEO 9"),
            "{err}"
        );
        assert!(
            err.contains("replicas differ: 1 at LEO 9 HW 9, 2 at LEO 9 HW 7, 3 at LEO 5 HW 5"),
            "{err}"
        );

        replicas.insert(3, Err("timed out".into()));
        let err = check(&[1, 2, 3], &meta(-1, vec![1, 2, 3]), &replicas).unwrap_err();
        assert!(err.contains("queue-0: no leader"), "{err}");
        assert!(err.contains("replica 3 cannot be read: timed out"), "{err}");
        assert!(err.contains("replica 1 is leader, not follower"), "{err}");
    }
}
