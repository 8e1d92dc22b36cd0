//! The handover at the end of a campaign: once the healed cluster has converged, and
//! before the workload's final step (the register's final reads, the queue's
//! drain), partitions of the workload's topics are handed to another in-sync
//! replica, the way an operator moves leadership: a reassignment that changes only
//! the order of the replicas (the next in-sync replica first), and the controller's
//! preferred-replica election, which follows within its
//! `--leader-imbalance-check-interval-ms`.
//!
//! Half the partitions of each topic are handed over — every other one, from the
//! first or the second as the seed says —, the others keep the leader the faults
//! left (made their preferred replica, so that the imbalance check leaves them
//! there). Why: the final step then asks both kinds of leader. One handed over leads
//! an epoch no client has written in — a state the faults meet only by chance (a
//! failover while no client writes to that partition): its high watermark sits at
//! the epoch's start, its log ends with the previous leader's records; a broker
//! must answer reads and fetches there from what the previous leader committed,
//! and one that waits for a record of its own epoch, or answers from its
//! follower-days high watermark, shows it in the final step. One not handed over
//! leads an epoch it has written in, as every leader during the run did. And the
//! records the last epochs wrote must survive one more election.
//!
//! Each decision is a `handover` event of the nemesis in the history (`to` equal to
//! `from` for a leader kept); a partition not led as decided in time is noted (the
//! end of the run stays complete: nothing is lost by it, and the final step runs
//! all the same).

use std::time::Duration;

use checker::history::EventType;
use serde_json::json;
use tokio::time::Instant;

use crate::options::Resolved;
use crate::store::History;
use crate::system::view::PartitionView;
use crate::system::{Reconfiguration, System};

/// How often the handover looks whether leadership has moved.
const POLL: Duration = Duration::from_millis(100);
/// How long past one imbalance check the handover waits for the elections.
const MARGIN: Duration = Duration::from_secs(5);

/// The longest imbalance-check interval a campaign waits for: with a longer one (the
/// broker's default is five minutes) the run does without the handover.
const LONGEST_INTERVAL: Duration = Duration::from_secs(30);

/// The next in-sync replica after `p`'s leader, in replica order, cyclically (None:
/// no leader, or no other replica in the ISR).
fn next_in_sync(p: &PartitionView) -> Option<i32> {
    let leader = p.leader?;
    let at = p.replicas.iter().position(|&r| r == leader)?;
    let n = p.replicas.len();
    (1..n)
        .map(|k| p.replicas[(at + k) % n])
        .find(|r| p.isr.contains(r))
}

/// `replicas` rotated so that `first` is the preferred replica, their cyclic order
/// kept.
fn preferring(replicas: &[i32], first: i32) -> Vec<i32> {
    let mut r = replicas.to_vec();
    if let Some(at) = r.iter().position(|&x| x == first) {
        r.rotate_left(at);
    }
    r
}

/// A campaign's handover: the controller's imbalance-check interval it waits for,
/// the seed that picks the half handed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handover {
    interval: Duration,
    seed: u64,
}

impl Handover {
    /// The handover of a run (None: a scenario's script, or the preferred-replica
    /// election off or slower than [`LONGEST_INTERVAL`]).
    pub fn of(args: &Resolved) -> Option<Handover> {
        let ms = args.broker.controller.leader_imbalance_check_interval_ms?;
        let interval = Duration::from_millis(ms);
        (args.script.is_none() && ms > 0 && interval <= LONGEST_INTERVAL).then_some(Handover {
            interval,
            seed: args.seed,
        })
    }
}

/// Whether partition `partition` is among the half [`hand_over`] hands over with
/// `seed`: every other one, from the first or the second.
fn handed_over(partition: u32, seed: u64) -> bool {
    u64::from(partition % 2) == seed % 2
}

/// Hand half the partitions of `topics` ([`handed_over`]) to another in-sync replica,
/// make each of the others' leader its preferred replica (so that the imbalance
/// check leaves it where it is), and wait, at most one interval of the controller's
/// imbalance check and a margin, until each is led as decided. Err: what did not go
/// through (each decision taken is in the history either way).
pub async fn hand_over<S: System>(
    system: &mut S,
    topics: &[&str],
    handover: Handover,
    history: &History,
) -> Result<(), String> {
    let Handover { interval, seed } = handover;
    let view = system
        .roles(topics)
        .await
        .filter(|v| !v.partitions.is_empty())
        .ok_or("handover: the controller showed no partitions")?;
    let mut problems = Vec::new();
    let mut awaited: Vec<(String, u32, i32)> = Vec::new();
    for p in &view.partitions {
        let name = format!("{}-{}", p.topic, p.partition);
        let Some(leader) = p.leader else {
            problems.push(format!("{name}: no leader"));
            continue;
        };
        let to = if handed_over(p.partition, seed) {
            match next_in_sync(p) {
                Some(r) => r,
                None => {
                    problems.push(format!("{name}: no other in-sync replica to hand it to"));
                    continue;
                }
            }
        } else {
            leader
        };
        let replicas = preferring(&p.replicas, to);
        if replicas != p.replicas {
            let change = Reconfiguration::Reassign {
                topic: p.topic.clone(),
                partition: p.partition,
                replicas: replicas.clone(),
                from: p.replicas.clone(),
            };
            if let Err(e) = system.reconfigure(&change).await {
                problems.push(format!("{name}: refused: {e}"));
                continue;
            }
        }
        history.nemesis(
            EventType::Info,
            "handover",
            json!({"topic": p.topic, "partition": p.partition, "from": leader, "to": to,
                   "replicas": replicas}),
        );
        awaited.push((p.topic.clone(), p.partition, to));
    }
    let deadline = Instant::now() + interval + MARGIN;
    while !awaited.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(POLL).await;
        if let Some(v) = system.roles(topics).await {
            awaited.retain(|(t, n, to)| v.partition(t, *n).is_none_or(|p| p.leader != Some(*to)));
        }
    }
    for (t, n, to) in awaited {
        problems.push(format!(
            "{t}-{n}: not led by replica {to} within {:.0} s",
            (interval + MARGIN).as_secs_f64()
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("handover: {}", problems.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partition(leader: Option<i32>, replicas: &[i32], isr: &[i32]) -> PartitionView {
        PartitionView {
            topic: "register".into(),
            partition: 0,
            leader,
            leader_epoch: 3,
            isr: isr.to_vec(),
            replicas: replicas.to_vec(),
            adding: Vec::new(),
            removing: Vec::new(),
        }
    }

    /// The next in-sync replica after the leader, cyclically.
    #[test]
    fn leadership_goes_to_the_next_in_sync_replica() {
        let next = |leader, isr: &[i32]| next_in_sync(&partition(leader, &[1, 2, 3], isr));
        assert_eq!(next(Some(1), &[1, 2, 3]), Some(2));
        assert_eq!(next(Some(3), &[1, 2, 3]), Some(1));
        // Replica 2 is out of the ISR: 3 is next.
        assert_eq!(next(Some(1), &[1, 3]), Some(3));
        assert_eq!(next(Some(2), &[1, 2, 3]), Some(3));
        assert_eq!(next(Some(1), &[1]), None);
        assert_eq!(next(None, &[1, 2, 3]), None);
        assert_eq!(next_in_sync(&partition(Some(1), &[1], &[1])), None);
    }

    /// The replicas keep their cyclic order, the one asked for first.
    #[test]
    fn the_replicas_are_rotated_to_the_preferred_one() {
        assert_eq!(preferring(&[1, 2, 3], 2), [2, 3, 1]);
        assert_eq!(preferring(&[1, 2, 3], 1), [1, 2, 3]);
        assert_eq!(preferring(&[3, 1, 2], 2), [2, 3, 1]);
        assert_eq!(preferring(&[1, 2, 3], 7), [1, 2, 3]);
    }

    /// Every other partition, from the first or the second as the seed says.
    #[test]
    fn half_the_partitions_are_handed_over() {
        let picked = |seed| (0..5).filter(|&p| handed_over(p, seed)).collect::<Vec<_>>();
        assert_eq!(picked(0), [0, 2, 4]);
        assert_eq!(picked(7), [1, 3]);
        assert_eq!(picked(u64::MAX), [1, 3]);
    }
}
