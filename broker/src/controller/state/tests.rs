//! The controller's rules, step by step, on the pure state machine.

use super::preferred::PreferredElection;
use super::*;
use crate::bugs::Bug;
use crate::events::{Api, FenceReason};
use crate::protocol::{AlterPartition, ConfirmLeadership, CreateTopic, Heartbeat, IsrMemberEpoch};

pub(super) const TIMEOUT: Millis = 1000;

pub(super) fn config(unclean: bool) -> Config {
    Config {
        session_timeout_ms: TIMEOUT,
        unclean_election: unclean,
        leader_imbalance_check_interval_ms: 0,
        bugs: crate::bugs::Bugs::default(),
    }
}

/// A fresh controller as [`cluster`] makes it, with `bugs` planted.
pub(super) fn planted_cluster(n: i32, bugs: crate::bugs::Bugs) -> ControllerState {
    let ids: Vec<BrokerId> = (1..=n).collect();
    let config = Config {
        bugs,
        ..config(false)
    };
    let (mut s, _) = start(config, &ids, Durable::default(), 0).expect("a fresh start");
    for id in ids {
        beat(&mut s, id, epoch_of(id), 0);
    }
    s
}

pub(super) fn epoch_of(id: BrokerId) -> u64 {
    100 + id as u64
}

/// A fresh controller with brokers 1..=n, every one registered at time 0.
pub(super) fn cluster(n: i32, unclean: bool) -> ControllerState {
    let ids: Vec<BrokerId> = (1..=n).collect();
    let (mut s, effects) =
        start(config(unclean), &ids, Durable::default(), 0).expect("a fresh start");
    assert_eq!(s.controller_epoch(), 1);
    assert!(effects.events[0].contains("active controller"));
    for id in ids {
        beat(&mut s, id, epoch_of(id), 0);
    }
    s
}

pub(super) fn beat(
    s: &mut ControllerState,
    id: BrokerId,
    broker_epoch: u64,
    now: Millis,
) -> Effects {
    let (resp, effects) = s
        .heartbeat(
            &Heartbeat {
                broker_id: id,
                broker_epoch,
                address: None,
            },
            now,
        )
        .expect("heartbeat accepted");
    assert!(resp.partitions.iter().all(|p| p.replicas.contains(&id)));
    effects
}

pub(super) fn create(
    s: &mut ControllerState,
    name: &str,
    partitions: u32,
    rf: u32,
    min_isr: u32,
) -> Effects {
    let req = CreateTopic {
        name: name.into(),
        partitions,
        replication_factor: rf,
        min_insync_replicas: min_isr,
    };
    s.create_topic(&req).expect("topic created").1
}

pub(super) fn part(s: &ControllerState, topic: &str, p: u32) -> PartitionState {
    s.partition(topic, p).expect("partition exists").clone()
}

/// Everyone but `silent` heartbeats at `now`; then the clock ticks at `now`.
pub(super) fn all_beat_but(s: &mut ControllerState, silent: &[BrokerId], now: Millis) -> Effects {
    let ids: Vec<BrokerId> = s.brokers.keys().copied().collect();
    for id in ids {
        if !silent.contains(&id) {
            beat(s, id, epoch_of(id), now);
        }
    }
    s.tick(now)
}

/// Broker `id` heartbeats a last time at `from` and then falls silent (brokers in
/// `down` stay silent throughout); returns the effects of its death.
pub(super) fn kill(
    s: &mut ControllerState,
    id: BrokerId,
    down: &[BrokerId],
    from: Millis,
) -> Effects {
    let mut silent = down.to_vec();
    all_beat_but(s, &silent, from);
    silent.push(id);
    assert!(all_beat_but(s, &silent, from + TIMEOUT).events.is_empty());
    let effects = all_beat_but(s, &silent, from + TIMEOUT + 1);
    assert_eq!(s.broker(id).unwrap().liveness, Liveness::Dead);
    effects
}

pub(super) fn alter(
    s: &mut ControllerState,
    leader: BrokerId,
    p: &PartitionState,
    new_isr: &[BrokerId],
) -> Result<(PartitionState, Effects), ApiError> {
    let (answer, effects) = s.alter_partition(&AlterPartition {
        broker_id: leader,
        broker_epoch: epoch_of(leader),
        topic: p.topic.clone(),
        partition: p.partition,
        leader_epoch: p.leader_epoch,
        partition_epoch: p.partition_epoch,
        new_isr: new_isr.to_vec(),
        new_isr_epochs: Vec::new(),
    });
    answer.map(|p| (p, effects))
}

pub(super) fn state(
    leader: BrokerId,
    le: i32,
    pe: i32,
    isr: &[BrokerId],
) -> (BrokerId, i32, i32, Vec<BrokerId>) {
    (leader, le, pe, isr.to_vec())
}

pub(super) fn view(p: &PartitionState) -> (BrokerId, i32, i32, Vec<BrokerId>) {
    (p.leader, p.leader_epoch, p.partition_epoch, p.isr.clone())
}

#[test]
fn create_topic_assigns_round_robin_and_elects_the_first_live_replica() {
    let mut s = cluster(3, false);
    let effects = create(&mut s, "queue", 3, 3, 2);
    assert_eq!(part(&s, "queue", 0).replicas, vec![1, 2, 3]);
    assert_eq!(part(&s, "queue", 1).replicas, vec![2, 3, 1]);
    assert_eq!(part(&s, "queue", 2).replicas, vec![3, 1, 2]);
    assert_eq!(view(&part(&s, "queue", 0)), state(1, 0, 0, &[1, 2, 3]));
    assert_eq!(view(&part(&s, "queue", 1)), state(2, 0, 0, &[2, 3, 1]));
    assert_eq!(part(&s, "queue", 1).min_insync_replicas, 2);
    assert!(effects.dirty);
    for b in 1..=3 {
        assert_eq!(
            effects.pushes[&b].len(),
            3,
            "broker {b} hears of every partition"
        );
    }
    let meta = s.topic_metadata("queue").unwrap();
    assert_eq!(meta.partitions.len(), 3);
    assert_eq!(meta.min_insync_replicas, 2);
}

#[test]
fn create_topic_skips_dead_brokers_for_leader_and_isr() {
    let mut s = cluster(3, false);
    kill(&mut s, 1, &[], 0);
    create(&mut s, "q", 1, 3, 1);
    let p = part(&s, "q", 0);
    assert_eq!(p.replicas, vec![1, 2, 3]);
    assert_eq!(view(&p), state(2, 0, 0, &[2, 3]));
}

#[test]
fn create_topic_validates_its_request() {
    let mut s = cluster(3, false);
    let cases = [
        ("", 1, 1, 1),
        ("a/b", 1, 1, 1),
        ("..", 1, 1, 1),
        ("q", 0, 1, 1),
        ("q", 1, 0, 1),
        ("q", 1, 4, 1),
        ("q", 1, 2, 0),
        ("q", 1, 2, 3),
    ];
    for (name, partitions, rf, min_isr) in cases {
        let req = CreateTopic {
            name: name.into(),
            partitions,
            replication_factor: rf,
            min_insync_replicas: min_isr,
        };
        let err = s.create_topic(&req).unwrap_err();
        assert_eq!(err.code, Code::InvalidRequest, "{req:?}: {err}");
    }
    assert!(s.metadata().topics.is_empty());
    create(&mut s, "q.ok_1-2", 1, 3, 3);
    let req = CreateTopic {
        name: "q.ok_1-2".into(),
        partitions: 5,
        replication_factor: 1,
        min_insync_replicas: 1,
    };
    assert_eq!(
        s.create_topic(&req).unwrap_err().code,
        Code::TopicAlreadyExists
    );
    assert_eq!(s.metadata().topics[0].partitions.len(), 1);
}

#[test]
fn a_leader_silent_past_the_session_timeout_is_replaced_by_the_next_isr_member() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 2);
    // The ISR is [1,3]: broker 2 comes first in replica order but is not eligible.
    let p = part(&s, "q", 0);
    alter(&mut s, 1, &p, &[1, 3]).unwrap();
    assert_eq!(view(&part(&s, "q", 0)), state(1, 0, 1, &[1, 3]));

    // Silent for exactly the session timeout: still alive.
    all_beat_but(&mut s, &[1], 500);
    assert!(all_beat_but(&mut s, &[1], TIMEOUT).events.is_empty());
    assert_eq!(s.broker(1).unwrap().liveness, Liveness::Alive);
    // One millisecond more: dead, and broker 3 leads with bumped epochs.
    let effects = all_beat_but(&mut s, &[1], TIMEOUT + 1);
    assert_eq!(view(&part(&s, "q", 0)), state(3, 1, 2, &[3]));
    assert!(effects.dirty);
    assert_eq!(
        effects.pushes.keys().copied().collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(effects.pushes[&3], vec![part(&s, "q", 0)]);
    assert!(
        effects.events.iter().any(|e| e.contains("leader 1 -> 3")),
        "{:?}",
        effects.events
    );
    assert!(!s.metadata().brokers[0].alive);
}

#[test]
fn a_dead_follower_leaves_the_isr_with_the_partition_epoch_bumped() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 2);
    kill(&mut s, 3, &[], 0);
    assert_eq!(view(&part(&s, "q", 0)), state(1, 0, 1, &[1, 2]));
    // Its death is handled once.
    assert!(all_beat_but(&mut s, &[3], 5000).events.is_empty());
    assert_eq!(part(&s, "q", 0).partition_epoch, 1);
}

#[test]
fn the_last_isr_member_dying_takes_the_partition_offline_until_it_returns() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 1);
    kill(&mut s, 3, &[], 0);
    kill(&mut s, 2, &[3], 2000);
    assert_eq!(view(&part(&s, "q", 0)), state(1, 0, 2, &[1]));
    kill(&mut s, 1, &[3, 2], 4000);
    // Leader -1, the ISR keeps its last member (Kafka), leader epoch bumped.
    assert_eq!(view(&part(&s, "q", 0)), state(NO_LEADER, 1, 3, &[1]));
    assert_eq!(s.metadata().topics[0].partitions[0].leader, -1);

    // Broker 2 returns: not in the ISR, so a clean election cannot pick it.
    let effects = beat(&mut s, 2, epoch_of(2), 6000);
    assert!(effects.pushes.is_empty());
    assert_eq!(part(&s, "q", 0).leader, NO_LEADER);
    // Broker 1 returns (same process, e.g. it was paused): it leads again.
    let effects = beat(&mut s, 1, epoch_of(1), 6100);
    assert_eq!(view(&part(&s, "q", 0)), state(1, 2, 4, &[1]));
    assert_eq!(effects.pushes[&2], vec![part(&s, "q", 0)]);
}

#[test]
fn unclean_election_picks_a_live_out_of_sync_replica() {
    let mut s = cluster(3, true);
    create(&mut s, "q", 1, 3, 1);
    let p = part(&s, "q", 0);
    alter(&mut s, 1, &p, &[1]).unwrap();
    // The only ISR member dies while 2 and 3 are alive: 2 leads at once, alone.
    let effects = kill(&mut s, 1, &[], 0);
    assert_eq!(view(&part(&s, "q", 0)), state(2, 1, 2, &[2]));
    assert!(
        effects.events.iter().any(|e| e.contains("UNCLEAN")),
        "{:?}",
        effects.events
    );
}

#[test]
fn unclean_election_brings_an_offline_partition_back_with_any_replica() {
    let mut s = cluster(3, true);
    create(&mut s, "q", 1, 3, 1);
    kill(&mut s, 3, &[], 0);
    kill(&mut s, 2, &[3], 2000);
    kill(&mut s, 1, &[3, 2], 4000);
    assert_eq!(view(&part(&s, "q", 0)), state(NO_LEADER, 1, 3, &[1]));
    beat(&mut s, 3, epoch_of(3), 6000);
    assert_eq!(view(&part(&s, "q", 0)), state(3, 2, 4, &[3]));
}

#[test]
fn without_unclean_election_an_out_of_sync_replica_never_leads() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 1);
    let p = part(&s, "q", 0);
    alter(&mut s, 1, &p, &[1]).unwrap();
    kill(&mut s, 1, &[], 0);
    assert_eq!(view(&part(&s, "q", 0)), state(NO_LEADER, 1, 2, &[1]));
}

#[test]
fn alter_partition_is_fenced_unless_from_the_current_leader_with_current_epochs() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 2);
    let p0 = part(&s, "q", 0);
    let (p1, effects) = alter(&mut s, 1, &p0, &[1, 2]).unwrap();
    assert_eq!(view(&p1), state(1, 0, 1, &[1, 2]));
    assert_eq!(effects.pushes.len(), 3);

    // The same proposal again carries a stale partition epoch.
    let err = alter(&mut s, 1, &p0, &[1]).unwrap_err();
    assert_eq!(err.code, Code::FencedLeaderEpoch);
    assert_eq!(err.extra["partition_epoch"], 1);
    assert_eq!(err.extra["leader_epoch"], 0);
    assert_eq!(err.extra["leader"], 1);
    // A follower cannot propose.
    assert_eq!(
        alter(&mut s, 2, &p1, &[2]).unwrap_err().code,
        Code::FencedLeaderEpoch
    );
    // A stale leader epoch is fenced.
    let mut stale = p1.clone();
    stale.leader_epoch = -1;
    assert_eq!(
        alter(&mut s, 1, &stale, &[1]).unwrap_err().code,
        Code::FencedLeaderEpoch
    );
    // A previous incarnation of the leader (other broker epoch) is fenced.
    let mut req = AlterPartition {
        broker_id: 1,
        broker_epoch: 1,
        topic: "q".into(),
        partition: 0,
        leader_epoch: 0,
        partition_epoch: 1,
        new_isr: vec![1],
        new_isr_epochs: Vec::new(),
    };
    assert_eq!(
        s.alter_partition(&req).0.unwrap_err().code,
        Code::FencedLeaderEpoch
    );
    req.partition = 9;
    assert_eq!(
        s.alter_partition(&req).0.unwrap_err().code,
        Code::UnknownTopicOrPartition
    );
    assert_eq!(view(&part(&s, "q", 0)), state(1, 0, 1, &[1, 2]));
}

#[test]
fn alter_partition_checks_the_proposed_isr() {
    let mut s = cluster(4, false);
    create(&mut s, "q", 1, 3, 1);
    let p = part(&s, "q", 0);
    assert_eq!(p.replicas, vec![1, 2, 3]);
    for bad in [&[2, 3][..], &[1, 4], &[1, 1, 2], &[]] {
        let err = alter(&mut s, 1, &p, bad).unwrap_err();
        assert_eq!(err.code, Code::InvalidRequest, "{bad:?}");
    }
    // Shrink, then let broker 3 die: adding it back is refused (KIP-841), adding the
    // live broker 2 back is accepted, in replica order.
    alter(&mut s, 1, &p, &[1]).unwrap();
    kill(&mut s, 3, &[], 0);
    let p = part(&s, "q", 0);
    assert_eq!(p.partition_epoch, 1, "3 was not in the ISR any more");
    let err = alter(&mut s, 1, &p, &[1, 3]).unwrap_err();
    assert_eq!(err.code, Code::InvalidRequest);
    assert!(err.message.contains("not alive"), "{err}");
    let (p, _) = alter(&mut s, 1, &p, &[2, 1]).unwrap();
    assert_eq!(view(&p), state(1, 0, 2, &[1, 2]));
    // An unchanged ISR is accepted without a new epoch.
    let (same, effects) = alter(&mut s, 1, &p, &[1, 2]).unwrap();
    assert_eq!(same, p);
    assert!(!effects.dirty && effects.pushes.is_empty());
}

#[test]
fn a_new_broker_epoch_is_a_restart_handled_as_failure_then_startup() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 2, 3, 2);
    // Broker 1 leads q-0 and follows q-1; it restarts and heartbeats at once,
    // before any session timeout.
    let effects = beat(&mut s, 1, 999, 10);
    assert_eq!(view(&part(&s, "q", 0)), state(2, 1, 1, &[2, 3]));
    assert_eq!(view(&part(&s, "q", 1)), state(2, 0, 1, &[2, 3]));
    assert!(effects.dirty);
    assert!(
        effects.events[0].contains("restarted"),
        "{:?}",
        effects.events
    );
    assert_eq!(s.broker(1).unwrap().broker_epoch, Some(999));
    assert_eq!(s.broker(1).unwrap().liveness, Liveness::Alive);
    // The same epoch again is just a heartbeat.
    assert_eq!(beat(&mut s, 1, 999, 20), Effects::default());
}

/// Broker epochs come from the wall clock: a broker restarted while its clock is
/// stepped back presents a smaller epoch than the one before. That is a restart all
/// the same (epochs are compared for equality, never for order): it leaves every ISR.
#[test]
fn a_smaller_broker_epoch_after_a_clock_step_back_is_a_restart_too() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 2, 3, 2);
    let before = s.broker(1).unwrap().broker_epoch.unwrap();
    let effects = beat(&mut s, 1, before - 1, 10);
    assert!(
        effects.events[0].contains("restarted"),
        "{:?}",
        effects.events
    );
    assert_eq!(view(&part(&s, "q", 0)), state(2, 1, 1, &[2, 3]));
    assert_eq!(s.broker(1).unwrap().broker_epoch, Some(before - 1));
}

#[test]
fn a_restarted_sole_isr_leader_leads_again_under_a_new_leader_epoch() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 1);
    let p = part(&s, "q", 0);
    alter(&mut s, 1, &p, &[1]).unwrap();
    // Failure (offline, ISR kept as [1]) then startup (1 is eligible again): two new
    // leader epochs, so the restarted process cannot be confused with the old one.
    beat(&mut s, 1, 999, 10);
    assert_eq!(view(&part(&s, "q", 0)), state(1, 2, 3, &[1]));
}

#[test]
fn confirm_leadership_answers_only_the_live_current_leader() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 2);
    let confirm = |s: &ControllerState, broker_id, leader_epoch| {
        s.confirm_leadership(&ConfirmLeadership {
            broker_id,
            topic: "q".into(),
            partition: 0,
            leader_epoch,
        })
    };
    assert_eq!(confirm(&s, 1, 0).unwrap(), part(&s, "q", 0));
    let err = confirm(&s, 2, 0).unwrap_err();
    assert_eq!(
        (err.code, err.extra["leader"].clone()),
        (Code::NotLeader, 1.into())
    );
    kill(&mut s, 1, &[], 0);
    let err = confirm(&s, 1, 0).unwrap_err();
    assert_eq!(err.code, Code::NotLeader);
    assert_eq!(err.extra["leader"], 2);
    assert_eq!(err.extra["leader_epoch"], 1);
    assert!(confirm(&s, 2, 0).is_err(), "the old leader epoch is stale");
    assert!(confirm(&s, 2, 1).is_ok());
}

#[test]
fn heartbeats_from_unknown_brokers_are_refused_and_answers_hold_own_partitions() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 3, 1, 1);
    let err = s
        .heartbeat(
            &Heartbeat {
                broker_id: 7,
                broker_epoch: 1,
                address: None,
            },
            5,
        )
        .unwrap_err();
    assert_eq!(err.code, Code::InvalidRequest);
    let (resp, _) = s
        .heartbeat(
            &Heartbeat {
                broker_id: 2,
                broker_epoch: epoch_of(2),
                address: None,
            },
            5,
        )
        .unwrap();
    assert_eq!(resp.controller_epoch, 1);
    assert_eq!(resp.brokers.len(), 3);
    assert_eq!(resp.partitions, vec![part(&s, "q", 1)]);
    // And every other partition of the cluster, for the broker's metadata.
    assert_eq!(
        resp.other_partitions,
        vec![part(&s, "q", 0), part(&s, "q", 2)]
    );
}

#[test]
fn topics_created_before_any_broker_registers_start_with_every_replica_in_sync() {
    let (mut s, _) = start(config(false), &[1, 2, 3], Durable::default(), 0).unwrap();
    create(&mut s, "early", 1, 3, 2);
    assert_eq!(view(&part(&s, "early", 0)), state(1, 0, 0, &[1, 2, 3]));
    // Brokers 1 and 2 register in the grace period; 3 never does and is dropped.
    beat(&mut s, 1, 11, 100);
    beat(&mut s, 2, 12, 200);
    assert!(s.tick(TIMEOUT - 1).events.is_empty());
    s.tick(TIMEOUT);
    assert_eq!(s.broker(3).unwrap().liveness, Liveness::Dead);
    assert_eq!(view(&part(&s, "early", 0)), state(1, 0, 1, &[1, 2]));
}

#[test]
fn a_topic_whose_replicas_are_all_dead_starts_offline_and_comes_up_with_them() {
    let (mut s, _) = start(config(false), &[1, 2], Durable::default(), 0).unwrap();
    s.tick(TIMEOUT);
    create(&mut s, "q", 1, 2, 1);
    assert_eq!(view(&part(&s, "q", 0)), state(NO_LEADER, 0, 0, &[1, 2]));
    beat(&mut s, 2, 12, TIMEOUT + 5);
    assert_eq!(view(&part(&s, "q", 0)), state(2, 1, 1, &[2]));
}

#[test]
fn a_restarted_controller_bumps_its_epoch_and_gives_brokers_a_grace_period() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 3, 3, 2);
    let durable = s.durable();
    assert_eq!(durable.brokers.len(), 3);

    let (mut s, effects) = start(config(false), &[1, 2, 3], durable, 0).unwrap();
    assert_eq!(s.controller_epoch(), 2);
    assert_eq!(s.metadata().topics[0].partitions.len(), 3);
    assert_eq!(
        effects.pushes[&1].len(),
        3,
        "every partition is pushed again"
    );
    assert!(
        s.metadata().brokers.iter().all(|b| b.alive),
        "liveness is replicated: alive until silent past the grace period"
    );
    // Nobody is declared dead within the grace period.
    assert!(s.tick(TIMEOUT - 1).events.is_empty());
    // Broker 1 comes back with the same process: nothing moves.
    assert!(!beat(&mut s, 1, epoch_of(1), 100).dirty);
    // Broker 2 restarted while the controller was down: it leaves the ISRs and
    // gives up q-1, which it led.
    // Broker 3 has not been heard from yet, but is still alive: it is elected.
    beat(&mut s, 2, 555, 200);
    assert_eq!(view(&part(&s, "q", 1)), state(3, 1, 1, &[3, 1]));
    // Broker 3 never comes back: dead at the end of the grace period.
    s.tick(TIMEOUT);
    assert_eq!(view(&part(&s, "q", 0)), state(1, 0, 2, &[1]));
    assert_eq!(view(&part(&s, "q", 1)), state(1, 2, 2, &[1]));
    assert_eq!(view(&part(&s, "q", 2)), state(1, 1, 2, &[1]));
}

#[test]
fn unclean_election_waits_for_isr_members_never_heard_from() {
    let restart = || {
        // Broker 3 has not registered yet: it is pending, in the ISR of a new topic.
        let (mut s, _) = start(config(true), &[1, 2, 3], Durable::default(), 0).unwrap();
        beat(&mut s, 1, epoch_of(1), 0);
        beat(&mut s, 2, epoch_of(2), 10);
        create(&mut s, "q", 1, 3, 1);
        let p = part(&s, "q", 0);
        alter(&mut s, 1, &p, &[1, 3]).unwrap();
        // The leader restarts: 3, the other ISR member, may still come back, so 2 is
        // not elected uncleanly yet.
        beat(&mut s, 1, 999, 20);
        assert_eq!(view(&part(&s, "q", 0)), state(NO_LEADER, 1, 2, &[3]));
        s
    };
    // 3 comes back in time: a clean election.
    let mut s1 = restart();
    beat(&mut s1, 3, epoch_of(3), 30);
    assert_eq!(view(&part(&s1, "q", 0)), state(3, 2, 3, &[3]));
    // 3 never comes back: at the end of the grace period, 1 (first live replica) leads.
    let mut s2 = restart();
    beat(&mut s2, 1, 999, TIMEOUT - 10);
    beat(&mut s2, 2, epoch_of(2), TIMEOUT - 10);
    let effects = s2.tick(TIMEOUT);
    assert_eq!(view(&part(&s2, "q", 0)), state(1, 2, 3, &[1]));
    assert!(
        effects.events.iter().any(|e| e.contains("UNCLEAN")),
        "{:?}",
        effects.events
    );
}

#[test]
fn time_the_controller_did_not_run_does_not_count_against_brokers() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 2);
    all_beat_but(&mut s, &[], 100);
    beat(&mut s, 1, epoch_of(1), 400);
    // Paused from 500 to 10_000; broker 2's heartbeat, queued meanwhile, comes first.
    beat(&mut s, 2, epoch_of(2), 10_000);
    assert!(s.stalled(500, 10_000).events[0].contains("did not run"));
    // Each broker keeps the time it had left: 3 (heard at 100) until 10_600, 1 until 10_900.
    assert!(s.tick(10_600).events.is_empty());
    let effects = s.tick(10_601);
    assert_eq!(
        effects.events[0],
        "broker 3: dead (no heartbeat for 1001 ms, session timeout 1000 ms)"
    );
    assert_eq!(s.broker(1).unwrap().liveness, Liveness::Alive);
    s.tick(10_901);
    assert_eq!(s.broker(1).unwrap().liveness, Liveness::Dead);
    assert_eq!(s.broker(2).unwrap().liveness, Liveness::Alive);
    assert_eq!(view(&part(&s, "q", 0)), state(2, 1, 2, &[2]));
}

#[test]
fn brokers_dying_in_the_same_tick_are_all_dead_before_any_election() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 2);
    let effects = s.tick(TIMEOUT + 1);
    // Broker 1's partition is not handed to 2 and then 3 on their way out.
    assert_eq!(view(&part(&s, "q", 0)), state(NO_LEADER, 1, 2, &[3]));
    assert_eq!(effects.pushes[&1], vec![part(&s, "q", 0)]);
    assert!(
        effects.events.iter().all(|e| !e.contains("-> 2")),
        "{:?}",
        effects.events
    );
}

#[test]
fn persisted_state_naming_unknown_brokers_is_refused() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 2);
    let err = start(config(false), &[1, 2], s.durable(), 0).unwrap_err();
    assert!(err.contains("[1, 2, 3]"), "{err}");
}

#[test]
fn an_isr_member_proposed_with_a_broker_epoch_it_no_longer_has_is_refused() {
    // KIP-903: the leader saw broker 3 catch up in its previous process.
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 1);
    let p = part(&s, "q", 0);
    let (p, _) = alter(&mut s, 1, &p, &[1, 2]).unwrap();
    // Broker 3 restarts: it is alive, under a new broker epoch.
    beat(&mut s, 3, 777, 10);
    let propose = |s: &mut ControllerState, epoch_of_3: u64| {
        let (answer, effects) = s.alter_partition(&AlterPartition {
            broker_id: 1,
            broker_epoch: epoch_of(1),
            topic: p.topic.clone(),
            partition: p.partition,
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            new_isr: vec![1, 2, 3],
            new_isr_epochs: vec![
                IsrMemberEpoch {
                    broker_id: 2,
                    broker_epoch: epoch_of(2),
                },
                IsrMemberEpoch {
                    broker_id: 3,
                    broker_epoch: epoch_of_3,
                },
            ],
        });
        answer.map(|p| (p, effects))
    };
    let err = propose(&mut s, epoch_of(3)).unwrap_err();
    assert_eq!(err.code, Code::InvalidRequest, "{err}");
    assert!(err.to_string().contains("broker 3"), "{err}");
    assert_eq!(part(&s, "q", 0).isr, vec![1, 2], "nothing changed");
    // Once the leader saw the new process fetch, it may be added.
    let (next, _) = propose(&mut s, 777).unwrap();
    assert_eq!(next.isr, vec![1, 2, 3]);
}

// ---- event lines: what the transitions tell ----

fn elected(
    leader: BrokerId,
    leader_epoch: i32,
    clean: bool,
    recently_restarted: bool,
    previous_leader: Option<BrokerId>,
) -> Event {
    Event::LeaderElected {
        topic: "q".into(),
        partition: 0,
        leader,
        leader_epoch,
        clean,
        recently_restarted,
        previous_leader,
    }
}

fn isr_event(shrink: bool, replicas: &[BrokerId], isr: &[BrokerId], cause: IsrCause) -> Event {
    let (topic, partition, replicas, isr) = ("q".into(), 0, replicas.to_vec(), isr.to_vec());
    match shrink {
        true => Event::IsrShrink {
            topic,
            partition,
            replicas,
            isr,
            cause,
        },
        false => Event::IsrExpand {
            topic,
            partition,
            replicas,
            isr,
            cause,
        },
    }
}

#[test]
fn a_start_tells_the_new_controller_epoch() {
    let (_, effects) = start(config(false), &[1], Durable::default(), 0).unwrap();
    assert_eq!(effects.transitions, [Event::ControllerEpoch { epoch: 1 }]);
}

#[test]
fn a_failover_tells_a_clean_election_and_the_isr_shrink_by_the_controller() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 2);
    let effects = kill(&mut s, 1, &[], 5000);
    assert_eq!(
        effects.transitions,
        [
            elected(2, 1, true, false, Some(1)),
            isr_event(true, &[1], &[2, 3], IsrCause::Controller),
        ]
    );
}

#[test]
fn an_unclean_election_and_a_just_restarted_leader_are_told_as_such() {
    let mut s = cluster(3, true);
    create(&mut s, "q", 1, 3, 1);
    let p = part(&s, "q", 0);
    alter(&mut s, 1, &p, &[1]).unwrap();
    let effects = kill(&mut s, 1, &[], 5000);
    assert_eq!(
        effects.transitions,
        [
            elected(2, 1, false, false, Some(1)),
            isr_event(true, &[1], &[2], IsrCause::Controller),
            isr_event(false, &[2], &[2], IsrCause::Controller),
        ]
    );

    // The sole ISR member restarts: it goes offline (nobody elected), then leads
    // again as a broker that came back just now.
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 1);
    let p = part(&s, "q", 0);
    alter(&mut s, 1, &p, &[1]).unwrap();
    let effects = beat(&mut s, 1, 999, 5000);
    assert_eq!(effects.transitions, [elected(1, 2, true, true, None)]);
}

#[test]
fn alter_partition_tells_lag_shrinks_caught_up_expansions_and_fenced_proposals() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 2);
    let p = part(&s, "q", 0);
    let (p, effects) = alter(&mut s, 1, &p, &[1, 3]).unwrap();
    assert_eq!(
        effects.transitions,
        [isr_event(true, &[2], &[1, 3], IsrCause::Lag)]
    );
    let (p, effects) = alter(&mut s, 1, &p, &[1, 2, 3]).unwrap();
    assert_eq!(
        effects.transitions,
        [isr_event(false, &[2], &[1, 2, 3], IsrCause::CaughtUp)]
    );
    let mut stale = p.clone();
    stale.partition_epoch -= 1;
    let fenced = |reason| Event::Fenced {
        api: Api::AlterPartition,
        reason,
        topic: Some("q".into()),
        partition: Some(0),
    };
    let (_, effects) = s.alter_partition(&AlterPartition {
        broker_id: 1,
        broker_epoch: epoch_of(1),
        topic: "q".into(),
        partition: 0,
        leader_epoch: stale.leader_epoch,
        partition_epoch: stale.partition_epoch,
        new_isr: vec![1, 2],
        new_isr_epochs: Vec::new(),
    });
    assert_eq!(
        effects.transitions,
        [fenced(FenceReason::StalePartitionEpoch)]
    );
    assert!(!effects.dirty);
    let err = alter(&mut s, 2, &p, &[2, 3]).unwrap_err();
    assert_eq!(err.code, Code::FencedLeaderEpoch);
}

/// Auto leader rebalance: a partition whose leadership moved away goes back to its
/// preferred replica once that one is alive and back in the ISR — not before, not
/// while another election already moved it on, and never while it leads already.
#[test]
fn leadership_goes_back_to_the_preferred_replica_once_it_is_in_the_isr() {
    let mut s = cluster(3, false);
    create(&mut s, "queue", 2, 3, 2);
    assert_eq!(
        s.preferred_decision(),
        None,
        "every partition led by its first replica"
    );
    // Broker 1, preferred leader of partition 0, dies: 2 leads, 1 leaves the ISR.
    kill(&mut s, 1, &[], 0);
    assert_eq!(view(&part(&s, "queue", 0)), state(2, 1, 1, &[2, 3]));
    assert_eq!(s.preferred_decision(), None, "broker 1 is dead");
    // Back, but not yet in the ISR: nothing to do yet.
    beat(&mut s, 1, epoch_of(1) + 10, 5000);
    assert_eq!(s.preferred_decision(), None, "broker 1 is not in the ISR");
    // Its leader takes it back into the ISR: the check hands partition 0 back.
    let p = part(&s, "queue", 0);
    let mut s2 = s.clone();
    alter(&mut s, 2, &p, &[2, 3, 1]).expect("expansion accepted");
    let decided = s.preferred_decision().expect("partition 0 to hand back");
    let Command::ElectPreferred { partitions } = &decided else {
        panic!("{decided:?}");
    };
    assert_eq!(
        partitions,
        &vec![PreferredElection {
            topic: "queue".into(),
            partition: 0,
            leader_epoch: 1,
        }]
    );
    let (answer, effects) = s.apply(&decided);
    assert!(matches!(answer, Ok(Applied::Elected)), "{answer:?}");
    assert_eq!(view(&part(&s, "queue", 0)), state(1, 2, 3, &[1, 2, 3]));
    assert!(effects.dirty);
    for b in 1..=3 {
        assert_eq!(effects.pushes[&b][0].leader, 1, "broker {b} hears of it");
    }
    assert!(
        effects.transitions.iter().any(|e| matches!(
            e,
            crate::events::Event::LeaderElected {
                leader: 1,
                clean: true,
                previous_leader: Some(2),
                ..
            }
        )),
        "{:?}",
        effects.transitions
    );
    assert_eq!(s.preferred_decision(), None, "balanced again");
    // Applied again (a duplicate in the log), it changes nothing: the epoch moved.
    let (_, effects) = s.apply(&decided);
    assert!(!effects.dirty && effects.transitions.is_empty());
    // A decision overtaken by another change of the partition does not apply:
    // in `s2` the expansion came later than the decision.
    alter(&mut s2, 2, &p, &[2, 3, 1]).expect("expansion accepted");
    let stale = Command::ElectPreferred {
        partitions: vec![PreferredElection {
            topic: "queue".into(),
            partition: 0,
            leader_epoch: 0,
        }],
    };
    let (_, effects) = s2.apply(&stale);
    assert!(effects.transitions.is_empty());
    assert_eq!(part(&s2, "queue", 0).leader, 2);
}

/// Each topic starts its round robin one broker further than the last, so two
/// topics of two partitions on three brokers give every broker a preferred
/// leadership.
#[test]
fn each_topic_starts_its_round_robin_one_broker_further() {
    let mut s = cluster(3, false);
    create(&mut s, "queue", 2, 3, 2);
    create(&mut s, "register", 2, 3, 2);
    assert_eq!(part(&s, "queue", 0).replicas, vec![1, 2, 3]);
    assert_eq!(part(&s, "queue", 1).replicas, vec![2, 3, 1]);
    assert_eq!(part(&s, "register", 0).replicas, vec![2, 3, 1]);
    assert_eq!(part(&s, "register", 1).replicas, vec![3, 1, 2]);
    assert_eq!(part(&s, "register", 1).leader, 3);
}

#[test]
fn elect_out_of_isr_lets_a_lagging_replica_lead() {
    for bug in [false, true] {
        let bugs = Bugs::planted(bug.then_some(Bug::ElectOutOfIsr));
        let mut s = planted_cluster(3, bugs);
        create(&mut s, "q", 1, 3, 2);
        // Broker 2 fell out of the ISR (it lags); the leader dies.
        let p = part(&s, "q", 0);
        alter(&mut s, 1, &p, &[1, 3]).unwrap();
        kill(&mut s, 1, &[], 500);
        let expected = if bug {
            // PLANTED BUG (elect-out-of-isr): first live replica, 2, though it
            // holds none of what the ISR committed since it left; it leads an ISR
            // of itself, and 3 truncates what the old ISR committed to rejoin.
            state(2, 1, 2, &[2])
        } else {
            state(3, 1, 2, &[3])
        };
        assert_eq!(view(&part(&s, "q", 0)), expected, "bug {bug}");
    }
}

#[test]
fn no_epoch_bump_elects_the_successor_in_the_dead_leaders_epoch() {
    for bug in [false, true] {
        let bugs = Bugs::planted(bug.then_some(Bug::NoEpochBump));
        let mut s = planted_cluster(3, bugs);
        create(&mut s, "q", 1, 3, 2);
        kill(&mut s, 1, &[], 500);
        // PLANTED BUG (no-epoch-bump): leader 2 in epoch 0, the old leader's, so
        // the old leader's requests and records pass for the new one's.
        let epoch = if bug { 0 } else { 1 };
        assert_eq!(
            view(&part(&s, "q", 0)),
            state(2, epoch, 1, &[2, 3]),
            "bug {bug}"
        );
    }
}
