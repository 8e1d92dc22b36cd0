//! Partition reassignment (KIP-455) step by step on the pure state: the adding
//! replicas join the ISR before the removed ones leave, leadership moves only to a
//! target replica in the ISR, cancels revert, a new active controller resumes from
//! the replicated state at whichever step it was — and the two planted bugs'
//! deviations.

use super::tests::{
    TIMEOUT, alter, beat, cluster, config, create, epoch_of, kill, part, planted_cluster, state,
    view,
};
use super::*;
use crate::bugs::{Bug, Bugs};
use crate::events::ReassignmentStep;
use crate::protocol::AlterReassignment;

fn reassign(
    s: &mut ControllerState,
    replicas: Option<&[BrokerId]>,
) -> Result<(PartitionState, Effects), ApiError> {
    s.alter_reassignment(&AlterReassignment {
        topic: "q".into(),
        partition: 0,
        replicas: replicas.map(<[BrokerId]>::to_vec),
    })
}

fn to(s: &mut ControllerState, replicas: &[BrokerId]) -> (PartitionState, Effects) {
    reassign(s, Some(replicas)).expect("reassignment accepted")
}

/// The leader of q-0 proposes its ISR plus `b` (caught up), as AlterPartition does.
fn join(s: &mut ControllerState, b: BrokerId) -> (PartitionState, Effects) {
    let p = part(s, "q", 0);
    let mut isr = p.isr.clone();
    isr.push(b);
    alter(s, p.leader, &p, &isr).expect("expansion accepted")
}

/// (AR, adding, removing) of `p`.
fn ar(p: &PartitionState) -> (Vec<BrokerId>, Vec<BrokerId>, Vec<BrokerId>) {
    (p.replicas.clone(), p.adding.clone(), p.removing.clone())
}

fn ids(v: &[BrokerId]) -> Vec<BrokerId> {
    v.to_vec()
}

/// What `effects` push to broker `b` for q-0.
fn pushed(effects: &Effects, b: BrokerId) -> Option<&PartitionState> {
    effects.pushes.get(&b)?.iter().find(|s| s.topic == "q")
}

fn step(
    step: ReassignmentStep,
    replicas: &[BrokerId],
    adding: &[BrokerId],
    removing: &[BrokerId],
) -> Event {
    Event::Reassignment {
        topic: "q".into(),
        partition: 0,
        step,
        replicas: replicas.to_vec(),
        adding: adding.to_vec(),
        removing: removing.to_vec(),
    }
}

fn isr_change(shrink: bool, replicas: &[BrokerId], isr: &[BrokerId], cause: IsrCause) -> Event {
    let tp = TopicPartition {
        topic: "q".into(),
        partition: 0,
    };
    let (old, new): (Vec<BrokerId>, Vec<BrokerId>) = match shrink {
        true => (isr.iter().chain(replicas).copied().collect(), isr.to_vec()),
        false => (
            isr.iter()
                .copied()
                .filter(|b| !replicas.contains(b))
                .collect(),
            isr.to_vec(),
        ),
    };
    Event::isr_changes(&tp, &old, &new, cause, cause).remove(0)
}

#[test]
fn adding_replicas_join_the_isr_before_the_removed_ones_leave() {
    let mut s = cluster(4, false);
    create(&mut s, "q", 1, 3, 2);
    let (p, fx) = to(&mut s, &[1, 2, 4]);
    // Step 1: AR = target then the removed; the ISR is untouched.
    assert_eq!(ar(&p), (ids(&[1, 2, 4, 3]), ids(&[4]), ids(&[3])));
    assert_eq!(view(&p), state(1, 0, 1, &[1, 2, 3]));
    for b in 1..=4 {
        assert_eq!(pushed(&fx, b), Some(&p), "broker {b} hears of the new AR");
    }
    assert_eq!(
        fx.transitions,
        [step(ReassignmentStep::Started, &[1, 2, 4, 3], &[4], &[3])]
    );
    assert!(fx.dirty);
    // Step 2: nothing completes while 4 is not in the ISR; the periodic check agrees.
    assert!(s.resume_decision(false).is_none());
    assert_eq!(part(&s, "q", 0), p);
    // Step 3: the AlterPartition that adds 4 completes it in the same command.
    let (p, fx) = join(&mut s, 4);
    assert_eq!(ar(&p), (ids(&[1, 2, 4]), vec![], vec![]));
    assert_eq!(view(&p), state(1, 0, 3, &[1, 2, 4]));
    assert_eq!(
        part(&s, "q", 0),
        p,
        "the answer is the state after completion"
    );
    assert_eq!(
        pushed(&fx, 3),
        Some(&p),
        "the removed replica is told it is no longer one"
    );
    assert_eq!(
        fx.transitions,
        [
            isr_change(false, &[4], &[1, 2, 4, 3], IsrCause::CaughtUp),
            isr_change(true, &[3], &[1, 2, 4], IsrCause::Controller),
            step(ReassignmentStep::Completed, &[1, 2, 4], &[4], &[3]),
        ]
    );
}

#[test]
fn a_leader_outside_the_target_hands_over_to_a_target_replica_in_the_isr() {
    let mut s = cluster(4, false);
    create(&mut s, "q", 1, 3, 2);
    to(&mut s, &[2, 3, 4]);
    let (p, fx) = join(&mut s, 4);
    // Leadership moved to the first target replica (in the ISR), leader epoch bumped,
    // then the old leader left AR and the ISR.
    assert_eq!(ar(&p), (ids(&[2, 3, 4]), vec![], vec![]));
    assert_eq!(view(&p), state(2, 1, 4, &[2, 3, 4]));
    assert_eq!(pushed(&fx, 1), Some(&p));
    let elected = Event::LeaderElected {
        topic: "q".into(),
        partition: 0,
        leader: 2,
        leader_epoch: 1,
        clean: true,
        recently_restarted: false,
        previous_leader: Some(1),
    };
    assert!(fx.transitions.contains(&elected), "{:?}", fx.transitions);
}

#[test]
fn raising_the_replication_factor_waits_for_the_new_replica_to_catch_up() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 2, 2);
    let (p, _) = to(&mut s, &[1, 2, 3]);
    assert_eq!(ar(&p), (ids(&[1, 2, 3]), ids(&[3]), vec![]));
    assert_eq!(p.osr(), [3]);
    let (p, _) = join(&mut s, 3);
    assert_eq!(ar(&p), (ids(&[1, 2, 3]), vec![], vec![]));
    assert_eq!(view(&p), state(1, 0, 3, &[1, 2, 3]));
}

#[test]
fn lowering_the_replication_factor_waits_until_the_target_is_in_the_isr() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 1);
    // The whole target is in the ISR: done in the same command.
    let (p, fx) = to(&mut s, &[2, 3]);
    assert_eq!(ar(&p), (ids(&[2, 3]), vec![], vec![]));
    assert_eq!(view(&p), state(2, 1, 3, &[2, 3]));
    assert_eq!(pushed(&fx, 1), Some(&p));

    // A target replica out of the ISR: the removed one stays until it is back.
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 1);
    let p = part(&s, "q", 0);
    alter(&mut s, 1, &p, &[1, 3]).unwrap();
    let (p, _) = to(&mut s, &[1, 2]);
    assert_eq!(ar(&p), (ids(&[1, 2, 3]), vec![], ids(&[3])));
    assert_eq!(p.isr, [1, 3], "the ISR never shrinks by the removal before");
    let (p, _) = join(&mut s, 2);
    assert_eq!(ar(&p), (ids(&[1, 2]), vec![], vec![]));
    assert_eq!(p.isr, [1, 2]);
}

#[test]
fn reordering_the_replicas_only_changes_the_preferred_leader() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 2);
    let (p, fx) = to(&mut s, &[3, 1, 2]);
    assert_eq!(ar(&p), (ids(&[3, 1, 2]), vec![], vec![]));
    assert_eq!(view(&p), state(1, 0, 1, &[3, 1, 2]));
    assert_eq!(
        fx.transitions,
        [step(ReassignmentStep::Completed, &[3, 1, 2], &[], &[])]
    );
    let (same, fx) = to(&mut s, &[3, 1, 2]);
    assert_eq!(
        (same, fx.dirty),
        (p, false),
        "the same replicas again change nothing"
    );
}

#[test]
fn bad_targets_and_a_second_reassignment_are_refused() {
    let mut s = cluster(4, false);
    create(&mut s, "q", 1, 2, 2);
    kill(&mut s, 4, &[], 0);
    let refused = |s: &mut ControllerState, target: &[BrokerId], code: Code, says: &str| {
        let err = reassign(s, Some(target)).unwrap_err();
        assert_eq!(err.code, code, "{target:?}: {err}");
        assert!(err.message.contains(says), "{target:?}: {err}");
    };
    refused(&mut s, &[], Code::InvalidRequest, "at least one replica");
    refused(
        &mut s,
        &[3],
        Code::InvalidRequest,
        "min_insync_replicas (2)",
    );
    refused(&mut s, &[1, 1], Code::InvalidRequest, "named twice");
    refused(&mut s, &[1, 9], Code::InvalidRequest, "not a broker");
    refused(&mut s, &[1, 4], Code::InvalidRequest, "not alive");
    let err = s
        .alter_reassignment(&AlterReassignment {
            topic: "q".into(),
            partition: 5,
            replicas: Some(vec![1, 2]),
        })
        .unwrap_err();
    assert_eq!(err.code, Code::UnknownTopicOrPartition);
    assert_eq!(
        reassign(&mut s, None).unwrap_err().code,
        Code::NoReassignmentInProgress
    );
    to(&mut s, &[2, 3]);
    refused(
        &mut s,
        &[1, 2],
        Code::ReassignmentInProgress,
        "cancel it first",
    );
}

#[test]
fn cancelling_reverts_to_the_original_replicas_and_removes_the_adding_ones() {
    let mut s = cluster(4, false);
    create(&mut s, "q", 1, 2, 1);
    to(&mut s, &[3, 4]);
    join(&mut s, 3);
    let p = part(&s, "q", 0);
    assert_eq!(
        (ar(&p), p.isr.clone()),
        (
            (ids(&[3, 4, 1, 2]), ids(&[3, 4]), ids(&[1, 2])),
            ids(&[3, 1, 2])
        )
    );
    let (p, fx) = reassign(&mut s, None).unwrap();
    assert_eq!(ar(&p), (ids(&[1, 2]), vec![], vec![]));
    assert_eq!(view(&p), state(1, 0, 3, &[1, 2]));
    for b in [3, 4] {
        assert_eq!(
            pushed(&fx, b),
            Some(&p),
            "adding replica {b} is told to stop"
        );
    }
    assert_eq!(
        fx.transitions.last(),
        Some(&step(
            ReassignmentStep::Cancelled,
            &[1, 2],
            &[3, 4],
            &[1, 2]
        ))
    );
}

#[test]
fn cancelling_moves_leadership_off_an_adding_replica_that_leads() {
    let mut s = cluster(4, false);
    create(&mut s, "q", 1, 2, 1);
    to(&mut s, &[3, 4]);
    join(&mut s, 3);
    // The leader dies: the first live ISR member in AR order, adding replica 3, leads.
    kill(&mut s, 1, &[], 0);
    let p = part(&s, "q", 0);
    assert_eq!((p.leader, p.isr.clone()), (3, vec![3, 2]));
    let (p, _) = reassign(&mut s, None).unwrap();
    assert_eq!(ar(&p), (ids(&[1, 2]), vec![], vec![]));
    assert_eq!((p.leader, p.leader_epoch, p.isr.clone()), (2, 2, vec![2]));
}

#[test]
fn a_cancel_that_would_empty_the_isr_or_break_min_insync_is_refused() {
    // Every original replica gone from the ISR: cancelling would lose records.
    let mut s = cluster(4, false);
    create(&mut s, "q", 1, 2, 1);
    to(&mut s, &[3, 4]);
    join(&mut s, 3);
    kill(&mut s, 1, &[], 0);
    kill(&mut s, 2, &[1], 10 * TIMEOUT);
    let before = part(&s, "q", 0);
    assert_eq!(before.isr, [3]);
    let err = reassign(&mut s, None).unwrap_err();
    assert!(
        err.message.contains("no original replica is in the ISR"),
        "{err}"
    );
    assert_eq!(part(&s, "q", 0), before, "nothing changed");

    // The ISR would shrink below min.insync.replicas.
    let mut s = cluster(4, false);
    create(&mut s, "q", 1, 2, 2);
    to(&mut s, &[3, 4]);
    join(&mut s, 3);
    kill(&mut s, 2, &[], 0);
    assert_eq!(part(&s, "q", 0).isr, [3, 1]);
    let err = reassign(&mut s, None).unwrap_err();
    assert!(err.message.contains("below min_insync_replicas 2"), "{err}");
}

#[test]
fn completion_waits_for_a_live_target_replica_to_lead() {
    // Lowering to a replica in the ISR that is not the leader: leadership moves to
    // it and the others leave, at once.
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 2, 1);
    let (p, _) = to(&mut s, &[2]);
    assert_eq!(ar(&p), (ids(&[2]), vec![], vec![]));
    assert_eq!(view(&p), state(2, 1, 3, &[2]));
    // A target in the ISR with nobody alive to lead it (q-0 offline, its last ISR
    // member the target replica, dead, as a restored state may hold it) waits for
    // one, and completes once that replica is back and elected.
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 1);
    let mut durable = s.durable();
    let p = &mut durable.partitions[0];
    (p.replicas, p.removing, p.isr, p.leader) = (vec![3, 1, 2], vec![1, 2], vec![3], NO_LEADER);
    durable.brokers.get_mut(&3).unwrap().liveness = Liveness::Dead;
    let (mut s, _) = start(config(false), &[1, 2, 3], durable, 0).unwrap();
    let before = part(&s, "q", 0);
    assert!(
        s.resume_decision(false).is_none(),
        "3 is dead: nothing may complete"
    );
    let (_, fx) = s.apply(&s.resume_decision(true).unwrap());
    assert!(!fx.dirty);
    assert_eq!(part(&s, "q", 0), before);
    beat(&mut s, 3, 777, 10);
    let p = part(&s, "q", 0);
    assert_eq!(ar(&p), (ids(&[3]), vec![], vec![]));
    assert_eq!((p.leader, p.isr.clone()), (3, vec![3]));
}

#[test]
fn the_periodic_check_completes_what_no_isr_change_completed() {
    // A restored state holding a reassignment whose target is in the ISR and alive:
    // the check names it, and applying it completes it.
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 1);
    let mut durable = s.durable();
    let p = &mut durable.partitions[0];
    (p.replicas, p.removing) = (vec![2, 3, 1], vec![1]);
    let (mut s, _) = start(config(false), &[1, 2, 3], durable, 0).unwrap();
    let Some(Command::ResumeReassignments {
        partitions,
        takeover,
    }) = s.resume_decision(false)
    else {
        panic!("the check names q-0");
    };
    assert!(!takeover);
    let (answer, fx) = s.apply(&Command::ResumeReassignments {
        partitions,
        takeover,
    });
    assert!(answer.is_ok() && fx.dirty);
    let p = part(&s, "q", 0);
    assert_eq!(
        (ar(&p), p.leader, p.isr.clone()),
        ((ids(&[2, 3]), vec![], vec![]), 2, ids(&[2, 3]))
    );
    assert!(s.resume_decision(false).is_none());
}

/// A voter that applied the same commands takes over: its state holds the
/// reassignment exactly as the old controller's did, adding replicas as adding ones
/// (the failure of apache/kafka#7334), and it carries on from there.
#[test]
fn a_new_controller_resumes_a_reassignment_from_the_replicated_state() {
    let mut s = cluster(4, false);
    create(&mut s, "q", 1, 2, 2);
    let (p, _) = to(&mut s, &[2, 3]);
    assert_eq!(ar(&p), (ids(&[2, 3, 1]), ids(&[3]), ids(&[1])));
    // The active controller dies; the next one starts from the same state.
    let (mut next, fx) = start(config(false), &[1, 2, 3, 4], s.durable(), 10).unwrap();
    assert_eq!(part(&next, "q", 0), p);
    assert_eq!(
        pushed(&fx, 3),
        Some(&p),
        "the adding replica hears of it again"
    );
    // At takeover it resumes every reassignment in progress: 3 has not caught up, so
    // nothing moves.
    let resume = next
        .resume_decision(true)
        .expect("one reassignment in progress");
    let (_, fx) = next.apply(&resume);
    assert!(!fx.dirty);
    assert_eq!(part(&next, "q", 0), p);
    for b in 1..=4 {
        beat(&mut next, b, epoch_of(b), 20);
    }
    // The leader proposes 3 to the new controller: the reassignment completes.
    let (p, _) = join(&mut next, 3);
    assert_eq!(ar(&p), (ids(&[2, 3]), vec![], vec![]));
    assert_eq!(view(&p), state(2, 1, 4, &[2, 3]));
}

#[test]
fn reassign_remove_early_removes_the_old_replicas_before_the_new_ones_catch_up() {
    let bug = Bugs::planted(Some(Bug::ReassignRemoveEarly));
    let mut s = planted_cluster(4, bug);
    create(&mut s, "q", 1, 2, 2);
    let (p, fx) = to(&mut s, &[3, 4]);
    // Done at once: 3 and 4 have fetched nothing, yet they are the ISR, 3 leads,
    // and the replicas holding every committed record are told to delete theirs.
    assert_eq!(ar(&p), (ids(&[3, 4]), vec![], vec![]));
    assert_eq!(view(&p), state(3, 1, 3, &[3, 4]));
    assert_eq!(pushed(&fx, 1), Some(&p));
    // The rule: nothing leaves before the target is in the ISR.
    let mut s = cluster(4, false);
    create(&mut s, "q", 1, 2, 2);
    let (p, _) = to(&mut s, &[3, 4]);
    assert_eq!(
        (p.leader, p.isr.clone(), p.removing.clone()),
        (1, vec![1, 2], vec![1, 2])
    );
}

#[test]
fn reassign_forget_on_failover_reloads_the_adding_replicas_as_the_whole_assignment() {
    let bug = Bugs::planted(Some(Bug::ReassignForgetOnFailover));
    let mut s = planted_cluster(4, bug);
    create(&mut s, "q", 1, 2, 2);
    let (before, _) = to(&mut s, &[2, 3]);
    assert_eq!(
        ar(&before),
        (ids(&[2, 3, 1]), ids(&[3]), ids(&[1])),
        "correct until the failover"
    );
    let planted = Config {
        bugs: bug,
        ..config(false)
    };
    let (mut next, _) = start(planted, &[1, 2, 3, 4], s.durable(), 10).unwrap();
    let resume = next
        .resume_decision(true)
        .expect("one reassignment in progress");
    let (_, fx) = next.apply(&resume);
    // Reloaded from the adding replica alone: 3, which never fetched, leads an ISR
    // of itself, and 1 and 2 — every committed record — are told to delete theirs.
    let p = part(&next, "q", 0);
    assert_eq!(ar(&p), (ids(&[3]), vec![], vec![]));
    assert_eq!(view(&p), state(3, 1, 2, &[3]));
    for b in [1, 2] {
        assert_eq!(pushed(&fx, b), Some(&p));
    }
    // Without the bug the same takeover changes nothing.
    let (mut next, _) = start(config(false), &[1, 2, 3, 4], s.durable(), 10).unwrap();
    let resume = next.resume_decision(true).unwrap();
    assert!(next.apply(&resume).0.is_ok());
    assert_eq!(part(&next, "q", 0), before);
}
