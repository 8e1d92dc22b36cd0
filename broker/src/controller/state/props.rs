//! Random event sequences against the controller's invariants: whatever brokers do
//! (heartbeat, restart, fall silent), whatever leaders propose (current or stale), and
//! however often the controller itself restarts, every partition stays well formed,
//! epochs only move forward, a dead broker never keeps leading, and without unclean
//! election a new leader always comes from the previous ISR.

use proptest::prelude::*;

use super::*;
use crate::events::{Event as Transition, IsrCause};
use crate::protocol::{AlterPartition, CreateTopic, Heartbeat};

const TIMEOUT: Millis = 1000;
const BROKERS: [BrokerId; 3] = [1, 2, 3];

#[derive(Debug, Clone)]
enum Event {
    /// Broker `id` heartbeats from process incarnation `incarnation`.
    Heartbeat {
        id: BrokerId,
        incarnation: u64,
    },
    /// Time passes, then the liveness ticker runs.
    Tick {
        ms: Millis,
    },
    /// Broker `from` proposes an ISR (drawn from a bitmask over the replicas),
    /// with the current epochs or stale ones.
    Alter {
        from: BrokerId,
        mask: u8,
        stale: bool,
        partition: u32,
    },
    Create {
        topic: u8,
        partitions: u32,
        rf: u32,
    },
    /// The controller restarts from its durable state.
    Restart,
    /// A reassignment of partition `partition` of the first topic to the brokers of
    /// the bitmask (none: a cancel).
    Reassign {
        partition: u32,
        mask: u8,
    },
    /// The active controller resumes the reassignments in progress (as at its
    /// takeover, or its periodic check).
    Resume {
        takeover: bool,
    },
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => (1..=3i32, 0..2u64).prop_map(|(id, incarnation)| Event::Heartbeat { id, incarnation }),
        3 => (0..1500u64).prop_map(|ms| Event::Tick { ms }),
        3 => (1..=3i32, 0..8u8, any::<bool>(), 0..3u32)
            .prop_map(|(from, mask, stale, partition)| Event::Alter { from, mask, stale, partition }),
        1 => (0..3u8, 1..=3u32, 1..=3u32)
            .prop_map(|(topic, partitions, rf)| Event::Create { topic, partitions, rf }),
        1 => Just(Event::Restart),
        2 => (0..3u32, 0..8u8).prop_map(|(partition, mask)| Event::Reassign { partition, mask }),
        1 => any::<bool>().prop_map(|takeover| Event::Resume { takeover }),
    ]
}

/// The well-formedness every state must have.
fn check_state(s: &ControllerState) -> Result<(), TestCaseError> {
    for p in s.partitions.values() {
        let name = format!("{}-{}", p.topic, p.partition);
        prop_assert!(!p.isr.is_empty(), "{name}: empty ISR");
        prop_assert!(
            p.isr.iter().all(|b| p.replicas.contains(b)),
            "{name}: ISR ⊄ replicas"
        );
        let mut isr = p.isr.clone();
        isr.dedup();
        prop_assert_eq!(isr.len(), p.isr.len(), "{}: ISR has duplicates", name);
        prop_assert!(
            p.adding
                .iter()
                .chain(&p.removing)
                .all(|b| p.replicas.contains(b)),
            "{name}: adding or removing outside AR"
        );
        prop_assert!(
            p.adding.iter().all(|b| !p.removing.contains(b)),
            "{name}: a replica both adding and removing"
        );
        if p.leader != NO_LEADER {
            prop_assert!(p.isr.contains(&p.leader), "{name}: leader outside the ISR");
            let live = |b: &BrokerId| s.brokers[b].liveness != Liveness::Dead;
            prop_assert!(live(&p.leader), "{name}: dead leader {}", p.leader);
            prop_assert!(
                p.isr.iter().all(live),
                "{name}: dead ISR member {:?}",
                p.isr
            );
        }
    }
    Ok(())
}

/// How a partition may move from one state to the next.
fn check_step(
    before: &BTreeMap<TopicPartition, PartitionState>,
    after: &ControllerState,
    effects: &Effects,
    unclean: bool,
) -> Result<(), TestCaseError> {
    for (tp, new) in &after.partitions {
        let Some(old) = before.get(tp) else { continue };
        prop_assert!(new.leader_epoch >= old.leader_epoch);
        prop_assert!(new.partition_epoch >= old.partition_epoch);
        if new.leader != old.leader {
            prop_assert!(
                new.leader_epoch > old.leader_epoch,
                "leader moved, same epoch"
            );
            // (A replica the leader proposed into the ISR in this step, caught up,
            // may lead at the end of it: the reassignment it completed moved the
            // leadership to it.)
            let joined = effects.transitions.iter().any(|t| {
                matches!(t, Transition::IsrExpand { topic, partition, replicas, cause, .. }
                    if *topic == tp.topic && *partition == tp.partition
                        && replicas.contains(&new.leader) && *cause == IsrCause::CaughtUp)
            });
            if !unclean && new.leader != NO_LEADER {
                prop_assert!(
                    old.isr.contains(&new.leader) || joined,
                    "clean election of {} outside the old ISR {:?}",
                    new.leader,
                    old.isr
                );
            }
        }
        check_transitions(tp, old, new, effects)?;
        if !unclean {
            check_removal(tp, old, new, effects)?;
        }
        if new != old {
            // (Leader and ISR may also come back the same under new epochs: a restarted
            // sole ISR member goes offline and is elected again in one step.)
            prop_assert!(
                new.partition_epoch > old.partition_epoch,
                "change without a new epoch"
            );
            prop_assert!(effects.dirty);
            for r in &new.replicas {
                let pushed = effects.pushes.get(r).and_then(|ps| {
                    ps.iter()
                        .find(|s| s.topic == new.topic && s.partition == new.partition)
                });
                prop_assert_eq!(pushed, Some(new), "replica {} not told", r);
            }
        }
    }
    Ok(())
}

/// Replicas leave AR only by a completed or cancelled reassignment, which takes
/// nobody into the ISR and never shrinks it below `min_insync_replicas` (or below
/// what it was, if it was smaller already). (Not with unclean election, which may
/// elect a replica out of the ISR in the same command.)
fn check_removal(
    tp: &TopicPartition,
    old: &PartitionState,
    new: &PartitionState,
    effects: &Effects,
) -> Result<(), TestCaseError> {
    let removed: Vec<BrokerId> = old
        .replicas
        .iter()
        .copied()
        .filter(|b| !new.replicas.contains(b))
        .collect();
    if removed.is_empty() {
        return Ok(());
    }
    // (A reassignment whose target is in the ISR completes in the command that
    // starts it.)
    prop_assert!(!new.reassigning(), "AR shrank before a reassignment ended");
    // Members the leader proposed in this step (caught up) before it completed.
    let proposed = |b: &BrokerId| {
        effects.transitions.iter().any(|t| {
            matches!(t, Transition::IsrExpand { topic, partition, replicas, cause, .. }
                if *topic == tp.topic && *partition == tp.partition
                    && replicas.contains(b) && *cause == IsrCause::CaughtUp)
        })
    };
    prop_assert!(
        new.isr.iter().all(|b| old.isr.contains(b) || proposed(b)),
        "a removal added {:?} to the ISR {:?}",
        new.isr,
        old.isr
    );
    let floor = (old.isr.len() as u32).min(new.min_insync_replicas) as usize;
    prop_assert!(
        new.isr.len() >= floor,
        "removal shrank the ISR {:?} to {:?}",
        old.isr,
        new.isr
    );
    Ok(())
}

/// The step's event lines tell its elections and ISR changes: a new leader epoch
/// with a leader is a `leader_elected` naming them, and every broker that left or
/// joined the ISR is in an `isr_shrink` or `isr_expand` of the partition.
fn check_transitions(
    tp: &TopicPartition,
    old: &PartitionState,
    new: &PartitionState,
    effects: &Effects,
) -> Result<(), TestCaseError> {
    let ours = |topic: &str, partition: u32| topic == tp.topic && partition == tp.partition;
    if new.leader_epoch > old.leader_epoch && new.leader != NO_LEADER {
        let told = effects.transitions.iter().any(|t| {
            matches!(t, Transition::LeaderElected { topic, partition, leader, leader_epoch, .. }
                if ours(topic, *partition) && *leader == new.leader
                    && *leader_epoch == new.leader_epoch)
        });
        prop_assert!(
            told,
            "election of {} not told: {:?}",
            new.leader,
            effects.transitions
        );
    }
    let listed = |b: BrokerId, shrink: bool| {
        effects.transitions.iter().any(|t| match t {
            Transition::IsrShrink {
                topic,
                partition,
                replicas,
                ..
            } if shrink => ours(topic, *partition) && replicas.contains(&b),
            Transition::IsrExpand {
                topic,
                partition,
                replicas,
                ..
            } if !shrink => ours(topic, *partition) && replicas.contains(&b),
            _ => false,
        })
    };
    for &b in old.isr.iter().filter(|b| !new.isr.contains(b)) {
        prop_assert!(listed(b, true), "{b} left the ISR untold");
    }
    for &b in new.isr.iter().filter(|b| !old.isr.contains(b)) {
        prop_assert!(listed(b, false), "{b} joined the ISR untold");
    }
    Ok(())
}

fn run(events: Vec<Event>, unclean: bool) -> Result<(), TestCaseError> {
    let config = Config {
        session_timeout_ms: TIMEOUT,
        unclean_election: unclean,
        leader_imbalance_check_interval_ms: 0,
        bugs: crate::bugs::Bugs::default(),
    };
    let mut now: Millis = 0;
    let (mut s, _) = start(config, &BROKERS, Durable::default(), now).unwrap();
    let mut last_epoch = s.controller_epoch();
    for ev in events {
        let before = s.partitions.clone();
        let effects = match ev {
            Event::Heartbeat { id, incarnation } => {
                let hb = Heartbeat {
                    broker_id: id,
                    broker_epoch: 10 * id as u64 + incarnation,
                    address: None,
                };
                let (resp, effects) = s.heartbeat(&hb, now).unwrap();
                let mine: Vec<_> = s
                    .partitions
                    .values()
                    .filter(|p| p.replicas.contains(&id))
                    .collect();
                prop_assert_eq!(resp.partitions.iter().collect::<Vec<_>>(), mine);
                prop_assert_eq!(s.broker(id).unwrap().liveness, Liveness::Alive);
                effects
            }
            Event::Tick { ms } => {
                now += ms;
                s.tick(now)
            }
            Event::Alter {
                from,
                mask,
                stale,
                partition,
            } => {
                let Some(p) = s
                    .partitions
                    .values()
                    .find(|p| p.partition == partition)
                    .cloned()
                else {
                    continue;
                };
                let new_isr: Vec<BrokerId> = p
                    .replicas
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| mask & (1 << i) != 0)
                    .map(|(_, &b)| b)
                    .collect();
                let req = AlterPartition {
                    broker_id: from,
                    broker_epoch: s.broker(from).unwrap().broker_epoch.unwrap_or(0),
                    topic: p.topic.clone(),
                    partition,
                    leader_epoch: p.leader_epoch,
                    partition_epoch: p.partition_epoch - i32::from(stale),
                    new_isr: new_isr.clone(),
                    new_isr_epochs: Vec::new(),
                };
                let (answer, effects) = s.alter_partition(&req);
                match answer {
                    Ok(state) => {
                        prop_assert!(!stale && from == p.leader);
                        // As proposed — but for the replicas a reassignment it
                        // completed removed.
                        let kept: Vec<BrokerId> = new_isr
                            .iter()
                            .copied()
                            .filter(|b| state.replicas.contains(b))
                            .collect();
                        prop_assert!(kept.iter().all(|b| state.isr.contains(b)));
                        prop_assert_eq!(state.isr.len(), kept.len());
                    }
                    Err(e) => {
                        prop_assert!(matches!(
                            e.code,
                            Code::FencedLeaderEpoch | Code::InvalidRequest
                        ));
                        if stale || from != p.leader {
                            prop_assert_eq!(e.code, Code::FencedLeaderEpoch);
                        }
                        // A fenced proposal is a fenced event, and changes nothing.
                        let fenced = effects
                            .transitions
                            .iter()
                            .any(|t| matches!(t, Transition::Fenced { .. }));
                        prop_assert_eq!(fenced, e.code == Code::FencedLeaderEpoch);
                        prop_assert!(!effects.dirty && effects.pushes.is_empty());
                    }
                }
                effects
            }
            Event::Create {
                topic,
                partitions,
                rf,
            } => {
                let req = CreateTopic {
                    name: format!("t{topic}"),
                    partitions,
                    replication_factor: rf,
                    min_insync_replicas: 1,
                };
                match s.create_topic(&req) {
                    Ok((_, effects)) => effects,
                    Err(e) => {
                        prop_assert_eq!(e.code, Code::TopicAlreadyExists);
                        Effects::default()
                    }
                }
            }
            Event::Reassign { partition, mask } => {
                let replicas = (mask != 0).then(|| {
                    BROKERS
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| mask & (1 << i) != 0)
                        .map(|(_, &b)| b)
                        .collect()
                });
                let Some(topic) = s.partitions.keys().next().map(|tp| tp.topic.clone()) else {
                    continue;
                };
                let req = crate::protocol::AlterReassignment {
                    topic,
                    partition,
                    replicas,
                };
                let (answer, effects) = s.apply(&Command::AlterReassignment(req));
                if answer.is_err() {
                    prop_assert!(!effects.dirty && effects.pushes.is_empty());
                }
                effects
            }
            Event::Resume { takeover } => match s.resume_decision(takeover) {
                Some(command) => s.apply(&command).1,
                None => Effects::default(),
            },
            Event::Restart => {
                let durable = s.durable();
                let (next, effects) = start(config, &BROKERS, durable, now).unwrap();
                prop_assert_eq!(&next.partitions, &s.partitions);
                prop_assert_eq!(next.controller_epoch(), last_epoch + 1);
                last_epoch = next.controller_epoch();
                s = next;
                effects
            }
        };
        check_state(&s)?;
        check_step(&before, &s, &effects, unclean)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn clean_elections_keep_every_invariant(events in prop::collection::vec(event(), 1..80)) {
        run(events, false)?;
    }

    #[test]
    fn unclean_elections_keep_partitions_well_formed(events in prop::collection::vec(event(), 1..80)) {
        run(events, true)?;
    }
}
