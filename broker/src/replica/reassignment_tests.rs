//! A reassignment as the replicas see it: under one leadership (same leader epoch)
//! AR grows and shrinks with the partition epoch. A replica added catches up before
//! the HW waits for it or it is proposed into the ISR; a replica removed is
//! forgotten by the leader and, told, stops — it is no longer a replica.

use super::tests::{Brokers, state};
use super::*;

/// `state`'s partition with AR `replicas` and a reassignment's `adding`/`removing`.
fn moving(
    pepoch: i32,
    isr: &[BrokerId],
    replicas: &[BrokerId],
    adding: &[BrokerId],
    removing: &[BrokerId],
) -> PartitionState {
    PartitionState {
        adding: adding.to_vec(),
        removing: removing.to_vec(),
        ..state(1, 0, pepoch, isr, replicas)
    }
}

#[test]
fn an_adding_replica_catches_up_before_it_counts_and_a_removed_one_stops() {
    let mut b = Brokers::new(&[1, 2, 3], Truncation::Epoch);
    b.tell(&[1, 2], state(1, 0, 0, &[1, 2], &[1, 2]), 0);
    for v in 0..3 {
        b.produce(1, v, 1);
        b.fetch(2, 1, 2);
    }
    b.fetch(2, 1, 3);
    assert_eq!(b.get(1).high_watermark(), 3);

    // Step 1: AR [1, 3, 2], 3 adding, 2 removing; the leadership stays.
    let s1 = moving(1, &[1, 2], &[1, 3, 2], &[3], &[2]);
    let (t, _) = b.get(1).apply_state(s1.clone(), Truncation::Epoch, 10);
    assert_eq!(t, Transition::IsrUpdated);
    assert_eq!(b.get(1).follower(3).map(|f| f.log_end_offset), Some(None));
    let (t, fx) = b.get(3).apply_state(s1.clone(), Truncation::Epoch, 10);
    assert_eq!(t, Transition::BecameFollower { leader: 1 });
    assert_eq!(
        fx.fetch_task,
        Some(FetchTask::Start {
            leader: 1,
            leader_epoch: 0
        })
    );
    b.tell(&[2], s1, 10);
    // The HW does not wait for 3, which has nothing yet.
    b.produce(1, 3, 11);
    b.fetch(2, 1, 12);
    b.fetch(2, 1, 13);
    assert_eq!(b.get(1).high_watermark(), 4);
    assert_eq!(
        b.get(1).propose_isr(13).0,
        None,
        "3 has not fetched: not proposed"
    );

    // Step 2: 3 fetches everything and is proposed into the ISR.
    b.fetch(3, 1, 14);
    b.fetch(3, 1, 15);
    assert_eq!(b.values(3), b.values(1));
    let Some(IsrChange::Propose { pending, .. }) = b.get(1).propose_isr(15).0 else {
        panic!("3 caught up: proposed");
    };
    assert_eq!(pending.isr, [1, 2, 3]);

    // Step 3: the controller completes: AR [1, 3], ISR [1, 3], same leader epoch.
    let s3 = moving(3, &[1, 3], &[1, 3], &[], &[]);
    let (t, _) = b.get(1).apply_state(s3.clone(), Truncation::Epoch, 20);
    assert_eq!(t, Transition::IsrUpdated);
    assert!(
        b.get(1).follower(2).is_none(),
        "the removed replica is forgotten"
    );
    let req = b.fetch_request(2);
    let refused = b.get(1).fetch_as_leader(&req, 21).0.unwrap_err();
    assert!(
        matches!(refused, ReplicaError::UnknownReplica { replica: 2 }),
        "{refused:?}"
    );
    // The removed replica, told, stops fetching though the leader epoch is the same.
    let (t, fx) = b.get(2).apply_state(s3.clone(), Truncation::Epoch, 20);
    assert_eq!(t, Transition::BecameOffline);
    assert_eq!(fx.fetch_task, Some(FetchTask::Stop));
    assert_eq!(b.get(2).role(), Role::Offline);
    // The HW goes on over the new ISR.
    b.produce(1, 4, 22);
    b.fetch(3, 1, 23);
    b.fetch(3, 1, 24);
    assert_eq!(b.get(1).high_watermark(), 5);
}

#[test]
fn a_removed_leader_with_a_pending_write_answers_leadership_lost() {
    let mut b = Brokers::new(&[1, 2, 3], Truncation::Epoch);
    b.tell(&[1, 2, 3], state(1, 0, 0, &[1, 2, 3], &[1, 2, 3]), 0);
    let w = b.produce(1, 7, 1);
    assert_eq!(
        b.get(1).ack_status(w.end_offset, w.leader_epoch),
        AckStatus::Pending
    );
    // Completed without 1: 2 leads in a new leader epoch, AR [2, 3].
    let done = state(2, 1, 2, &[2, 3], &[2, 3]);
    let (t, fx) = b.get(1).apply_state(done, Truncation::Epoch, 2);
    assert_eq!(t, Transition::BecameOffline);
    assert!(fx.wake);
    assert_eq!(
        b.get(1).ack_status(w.end_offset, w.leader_epoch),
        AckStatus::LeadershipLost
    );
}
