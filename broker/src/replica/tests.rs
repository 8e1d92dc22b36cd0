//! The replica's rules step by step, as a Kafka engineer draws them: every FETCH,
//! every answer and every clock tick is an explicit line, no sockets, no sleeps.

use std::collections::BTreeMap;

use super::mem::MemLog;
use super::*;
use crate::bugs::Bug;
use crate::protocol::FetchResponse;
use crate::value::rv;

const LAG: u64 = 1000;

/// A log entry as the tests compare them: (offset, leader epoch, value).
type Entry = (u64, i32, i64);

pub(super) fn state(
    leader: BrokerId,
    epoch: i32,
    pepoch: i32,
    isr: &[BrokerId],
    replicas: &[BrokerId],
) -> PartitionState {
    PartitionState {
        topic: "t".into(),
        partition: 0,
        leader,
        leader_epoch: epoch,
        partition_epoch: pepoch,
        isr: isr.to_vec(),
        replicas: replicas.to_vec(),
        min_insync_replicas: 2,
        adding: Vec::new(),
        removing: Vec::new(),
    }
}

/// A few replicas of one partition, and the moves that connect them.
pub(super) struct Brokers {
    r: BTreeMap<BrokerId, Replica<MemLog>>,
    mode: Truncation,
    /// Each broker's process, as its fetches name it (bumped by a restart).
    broker_epochs: BTreeMap<BrokerId, u64>,
}

impl Brokers {
    pub(super) fn new(ids: &[BrokerId], mode: Truncation) -> Self {
        let r = ids
            .iter()
            .map(|&id| {
                (
                    id,
                    Replica::open(id, MemLog::default(), &[], 0, LAG).unwrap().0,
                )
            })
            .collect();
        let broker_epochs = ids.iter().map(|&id| (id, 1)).collect();
        Brokers {
            r,
            mode,
            broker_epochs,
        }
    }

    pub(super) fn get(&mut self, id: BrokerId) -> &mut Replica<MemLog> {
        self.r.get_mut(&id).unwrap()
    }

    /// The controller tells every listed broker the same state.
    pub(super) fn tell(&mut self, to: &[BrokerId], s: PartitionState, now: u64) {
        let mode = self.mode;
        for id in to {
            let (_, fx) = self.get(*id).apply_state(s.clone(), mode, now);
            assert!(fx.warnings.is_empty(), "{:?}", fx.warnings);
        }
    }

    pub(super) fn produce(&mut self, leader: BrokerId, value: i64, now: u64) -> Appended {
        self.get(leader)
            .append_as_leader(vec![(None, rv!(value))], true, now)
            .0
            .unwrap()
    }

    /// One FETCH round trip follower → leader; returns the answer's HW.
    pub(super) fn fetch(&mut self, follower: BrokerId, leader: BrokerId, now: u64) -> u64 {
        let req = self.fetch_request(follower);
        let resp = self.get(leader).fetch_as_leader(&req, now).0.unwrap();
        let hw = resp.high_watermark;
        self.get(follower).apply_fetch_response(resp).0.unwrap();
        hw
    }

    /// A FETCH whose answer never arrives (the follower dies first).
    pub(super) fn fetch_lost(&mut self, follower: BrokerId, leader: BrokerId, now: u64) {
        let req = self.fetch_request(follower);
        self.get(leader).fetch_as_leader(&req, now).0.unwrap();
    }

    pub(super) fn fetch_request(&mut self, follower: BrokerId) -> FetchRequest {
        let broker_epoch = self.broker_epochs[&follower];
        let f = self.get(follower);
        FetchRequest {
            replica_id: follower,
            broker_epoch,
            fetch_offset: f.log_end_offset(),
            leader_epoch: f.leader_epoch(),
            max_records: 100,
        }
    }

    /// Run the follower's truncation against the leader (OffsetsForLeaderEpoch rounds).
    pub(super) fn settle(&mut self, follower: BrokerId, leader: BrokerId) -> usize {
        let mut rounds = 0;
        while let Some(epoch) = self.get(follower).truncation_epoch().0.unwrap() {
            let answer = self.get(leader).end_offset_for(epoch);
            rounds += 1;
            if self.get(follower).apply_epoch_end_offset(answer).0.unwrap() {
                break;
            }
            assert!(rounds < 10, "truncation does not converge");
        }
        rounds
    }

    /// A broker restarts: its log survives up to `kept` records (the rest was not
    /// flushed), with its checkpointed HW and epochs.
    pub(super) fn restart(&mut self, id: BrokerId, kept: usize) {
        let old = self.r.remove(&id).unwrap();
        *self.broker_epochs.get_mut(&id).unwrap() += 1;
        let hw = old.high_watermark();
        let epochs = old.epochs().entries().to_vec();
        let mut log = old.log().clone();
        log.records.truncate(kept);
        self.r
            .insert(id, Replica::open(id, log, &epochs, hw, LAG).unwrap().0);
    }

    pub(super) fn values(&mut self, id: BrokerId) -> Vec<Entry> {
        self.get(id)
            .log()
            .records
            .iter()
            .map(|r| {
                (
                    r.offset,
                    r.leader_epoch,
                    r.value.to_value().as_i64().unwrap(),
                )
            })
            .collect()
    }
}

// ---- HW and LEO ----

#[test]
fn hw_advances_only_when_the_next_fetch_carries_the_new_offset() {
    let mut b = Brokers::new(&[1, 2, 3], Truncation::Epoch);
    b.tell(&[1, 2, 3], state(1, 1, 1, &[1, 2, 3], &[1, 2, 3]), 0);
    // The new leader knows no follower's LEO yet: HW stays at 0.
    assert_eq!(b.get(1).high_watermark(), 0);

    let a = b.produce(1, 100, 10);
    assert_eq!((a.base_offset, a.end_offset), (0, 1));
    assert_eq!(b.get(1).log_end_offset(), 1);
    assert_eq!(b.get(1).high_watermark(), 0, "no follower has it yet");
    assert_eq!(
        b.get(1).ack_status(a.end_offset, a.leader_epoch),
        AckStatus::Pending
    );

    // Follower 2 fetches at 0: it gets the record, but its fetch offset says LEO 0.
    assert_eq!(b.fetch(2, 1, 20), 0);
    assert_eq!(
        (b.get(2).log_end_offset(), b.get(2).high_watermark()),
        (1, 0)
    );
    assert_eq!(b.get(1).high_watermark(), 0);
    // Follower 3 the same.
    assert_eq!(b.fetch(3, 1, 21), 0);
    assert_eq!(
        (b.get(3).log_end_offset(), b.get(3).high_watermark()),
        (1, 0)
    );
    assert_eq!(b.get(1).high_watermark(), 0);

    // Follower 2's next fetch carries offset 1: the leader knows 2 has it; 3 still at 0.
    assert_eq!(b.fetch(2, 1, 30), 0);
    assert_eq!(b.get(1).follower(2).unwrap().log_end_offset, Some(1));
    assert_eq!(
        b.get(1).high_watermark(),
        0,
        "min LEO over ISR is still 0 (broker 3)"
    );
    // Follower 3's next fetch carries offset 1: now every ISR member has it → HW 1,
    // and 3 learns it in this very answer.
    assert_eq!(b.fetch(3, 1, 31), 1);
    assert_eq!(b.get(1).high_watermark(), 1);
    assert_eq!(
        b.get(1).ack_status(a.end_offset, a.leader_epoch),
        AckStatus::Committed
    );
    assert_eq!(b.get(3).high_watermark(), 1);
    // Follower 2 learns HW 1 only one FETCH later.
    assert_eq!(b.get(2).high_watermark(), 0);
    assert_eq!(b.fetch(2, 1, 40), 1);
    assert_eq!(b.get(2).high_watermark(), 1);
}

#[test]
fn follower_hw_is_min_of_its_leo_and_the_leaders_hw() {
    let mut b = Brokers::new(&[1, 2], Truncation::Epoch);
    b.tell(&[1, 2], state(1, 1, 1, &[1, 2], &[1, 2]), 0);
    for v in 0..5 {
        b.produce(1, v, 1);
    }
    b.fetch(2, 1, 2);
    b.fetch(2, 1, 3);
    assert_eq!(b.get(1).high_watermark(), 5);
    // The leader commits more, the follower fetches only two records of it.
    for v in 5..10 {
        b.produce(1, v, 4);
    }
    b.fetch(2, 1, 5); // five new records arrive (LEO 10); HW answer still 5
    assert_eq!(b.get(2).high_watermark(), 5);
    let req = FetchRequest {
        replica_id: 2,
        broker_epoch: 0,
        fetch_offset: 10,
        leader_epoch: 1,
        max_records: 2,
    };
    let resp = b.get(1).fetch_as_leader(&req, 6).0.unwrap();
    assert_eq!(resp.high_watermark, 10);
    b.get(2).apply_fetch_response(resp).0.unwrap();
    assert_eq!(b.get(2).high_watermark(), 10);
    // A follower short of the leader's HW caps it at its own LEO.
    b.get(2).log_mut().records.truncate(7);
    let resp = FetchResponse {
        leader_epoch: 1,
        high_watermark: 10,
        log_end_offset: 10,
        records: vec![],
    };
    b.get(2).apply_fetch_response(resp).0.unwrap();
    assert_eq!(b.get(2).high_watermark(), 7);
}

#[test]
fn leader_hw_never_moves_back() {
    let mut b = Brokers::new(&[1, 2], Truncation::Epoch);
    b.tell(&[1, 2], state(1, 1, 1, &[1, 2], &[1, 2]), 0);
    b.produce(1, 1, 0);
    b.fetch(2, 1, 1);
    b.fetch(2, 1, 2);
    assert_eq!(b.get(1).high_watermark(), 1);
    // A stale fetch at offset 0 (a delayed duplicate) does not move HW back.
    let req = FetchRequest {
        replica_id: 2,
        broker_epoch: 0,
        fetch_offset: 0,
        leader_epoch: 1,
        max_records: 10,
    };
    b.get(1).fetch_as_leader(&req, 3).0.unwrap();
    assert_eq!(b.get(1).high_watermark(), 1);
}

// ---- acks, min.insync, ISR ----

#[test]
fn acks_all_needs_min_insync_before_appending() {
    let mut b = Brokers::new(&[1, 2, 3], Truncation::Epoch);
    b.tell(&[1, 2, 3], state(1, 1, 1, &[1], &[1, 2, 3]), 0);
    let err = b
        .get(1)
        .append_as_leader(vec![(None, rv!(1))], true, 0)
        .0
        .unwrap_err();
    assert!(matches!(
        err,
        ReplicaError::NotEnoughReplicas { ref isr, min_insync: 2 } if isr == &[1]
    ));
    assert_eq!(b.get(1).log_end_offset(), 0, "nothing appended");
    // acks=1 does not check the ISR, and with ISR = {leader} HW follows LEO at once.
    let a = b
        .get(1)
        .append_as_leader(vec![(None, rv!(1))], false, 0)
        .0
        .unwrap();
    assert_eq!(b.get(1).high_watermark(), 1);
    assert_eq!(
        b.get(1).ack_status(a.end_offset, 1),
        AckStatus::CommittedBelowMinIsr
    );
}

#[test]
fn lagging_follower_is_proposed_out_and_rejoins_once_caught_up() {
    let mut b = Brokers::new(&[1, 2, 3], Truncation::Epoch);
    b.tell(&[1, 2, 3], state(1, 1, 1, &[1, 2, 3], &[1, 2, 3]), 0);
    b.fetch(2, 1, 0);
    b.fetch(3, 1, 0);
    // Broker 3 stops fetching (SIGSTOP) at t=0; broker 2 keeps up.
    let a = b.produce(1, 7, 100);
    b.fetch(2, 1, 200);
    b.fetch(2, 1, 300);
    assert_eq!(b.get(1).high_watermark(), 0, "broker 3 holds HW back");
    assert_eq!(b.get(1).isr_proposal(900), None, "within the lag time");
    b.fetch(2, 1, 1001);
    assert_eq!(b.get(1).isr_proposal(1001), Some(vec![1, 2]));
    b.fetch(2, 1, 1900);
    b.get(1).set_pending_isr(vec![1, 2]);
    assert_eq!(b.get(1).isr_proposal(1002), None, "one proposal in flight");
    // Not applied until the controller accepts: HW still waits for broker 3.
    assert!(!b.get(1).maybe_advance_hw(1002));
    assert_eq!(b.get(1).ack_status(a.end_offset, 1), AckStatus::Pending);
    // The controller accepts (partition epoch 2): HW moves, the write commits.
    let t = b
        .get(1)
        .apply_state(state(1, 1, 2, &[1, 2], &[1, 2, 3]), Truncation::Epoch, 1003)
        .0;
    assert_eq!(t, Transition::IsrUpdated);
    assert_eq!(b.get(1).high_watermark(), 1);
    assert_eq!(b.get(1).ack_status(a.end_offset, 1), AckStatus::Committed);

    // Broker 3 resumes: its first fetch (offset 1... it has 0 records) is below HW.
    b.fetch(3, 1, 2000);
    assert_eq!(b.get(3).log_end_offset(), 1);
    assert_eq!(b.get(1).isr_proposal(2000), None, "fetch offset 0 < HW 1");
    b.fetch(3, 1, 2001);
    assert_eq!(b.get(1).isr_proposal(2001), Some(vec![1, 2, 3]));
}

#[test]
fn a_follower_that_keeps_fetching_but_never_reaches_leo_falls_out() {
    let mut b = Brokers::new(&[1, 2], Truncation::Epoch);
    b.tell(&[1, 2], state(1, 1, 1, &[1, 2], &[1, 2]), 0);
    // Every fetch reaches what the leader had at the previous fetch: still caught up.
    let mut t = 0;
    for v in 0..5 {
        b.produce(1, v, t);
        b.fetch(2, 1, t + 1);
        t += 400;
    }
    assert_eq!(b.get(1).isr_proposal(t), None);
    // Now the follower only gets one record per fetch while the leader writes three.
    for v in 0..10 {
        b.produce(1, v, t);
        b.produce(1, v, t);
        b.produce(1, v, t);
        let req = b.fetch_request(2);
        let req = FetchRequest {
            max_records: 1,
            ..req
        };
        let resp = b.get(1).fetch_as_leader(&req, t + 1).0.unwrap();
        b.get(2).apply_fetch_response(resp).0.unwrap();
        t += 400;
    }
    assert_eq!(b.get(1).isr_proposal(t), Some(vec![1]));
}

#[test]
fn a_follower_the_controller_drops_no_longer_holds_hw_back() {
    let mut b = Brokers::new(&[1, 2, 3], Truncation::Epoch);
    b.tell(&[1, 2, 3], state(1, 1, 1, &[1, 2, 3], &[1, 2, 3]), 0);
    b.fetch(2, 1, 0);
    b.fetch(3, 1, 0);
    // Broker 3 dies right after a fetch: it was caught up at t=0.
    let a = b.produce(1, 5, 10);
    b.fetch(2, 1, 20);
    b.fetch(2, 1, 30);
    assert_eq!(b.get(1).high_watermark(), 0);
    // The controller declares it dead and drops it from the ISR well within the lag
    // time: HW must not keep waiting for it as a replica "caught up" to rejoin.
    b.tell(&[1], state(1, 1, 2, &[1, 2], &[1, 2, 3]), 100);
    assert_eq!(b.get(1).high_watermark(), 1);
    assert_eq!(b.get(1).ack_status(a.end_offset, 1), AckStatus::Committed);
    // Once it is back and caught up, HW waits for it again (it is about to rejoin).
    b.fetch(3, 1, 200);
    b.fetch(3, 1, 210);
    b.produce(1, 6, 220);
    b.fetch(2, 1, 230);
    b.fetch(2, 1, 240);
    assert_eq!(
        b.get(1).high_watermark(),
        1,
        "waits for broker 3, caught up at 210"
    );
    // Its fetch offset (1) has reached HW (1): the leader proposes it back.
    assert_eq!(b.get(1).isr_proposal(240), Some(vec![1, 2, 3]));
}

// ---- fencing ----

#[test]
fn stale_epochs_are_fenced_both_ways() {
    let mut b = Brokers::new(&[1, 2], Truncation::Epoch);
    b.tell(&[1, 2], state(1, 5, 1, &[1, 2], &[1, 2]), 0);
    for epoch in [4, 6] {
        let req = FetchRequest {
            replica_id: 2,
            broker_epoch: 0,
            fetch_offset: 0,
            leader_epoch: epoch,
            max_records: 1,
        };
        let err = b.get(1).fetch_as_leader(&req, 0).0.unwrap_err();
        assert!(
            matches!(err, ReplicaError::FencedLeaderEpoch { requested, current: 5 } if requested == epoch),
            "{err:?}"
        );
    }
    // A controller message older than what we know is ignored.
    let t = b
        .get(1)
        .apply_state(state(2, 4, 9, &[2], &[1, 2]), Truncation::Epoch, 0)
        .0;
    assert_eq!(t, Transition::Ignored);
    assert_eq!(b.get(1).role(), Role::Leader);
    let t = b
        .get(1)
        .apply_state(state(1, 5, 1, &[1], &[1, 2]), Truncation::Epoch, 0)
        .0;
    assert_eq!(t, Transition::Ignored, "same partition epoch is not newer");
    // A follower rejects an answer from a different leader epoch.
    let resp = FetchResponse {
        leader_epoch: 4,
        high_watermark: 0,
        log_end_offset: 0,
        records: vec![],
    };
    assert!(b.get(2).apply_fetch_response(resp).0.is_err());
}

#[test]
fn a_replaced_leader_cannot_ack() {
    let mut b = Brokers::new(&[1, 2, 3], Truncation::Epoch);
    b.tell(&[1, 2, 3], state(1, 1, 1, &[1, 2, 3], &[1, 2, 3]), 0);
    b.fetch(2, 1, 0);
    b.fetch(3, 1, 0);
    // Broker 1 is cut off; the controller elects 2 (epoch 2); 1 hears nothing.
    b.tell(&[2, 3], state(2, 2, 2, &[2, 3], &[1, 2, 3]), 10);
    let a = b.produce(1, 42, 20);
    // Followers now fetch from 2 with epoch 2; broker 1 fences them if they come.
    let req = b.fetch_request(3);
    assert!(matches!(
        b.get(1).fetch_as_leader(&req, 30).0,
        Err(ReplicaError::FencedLeaderEpoch { .. })
    ));
    // Its ISR can shrink only through the controller, which rejects epoch 1: HW stays.
    assert_eq!(b.get(1).isr_proposal(5000), Some(vec![1]));
    assert_eq!(
        b.get(1).ack_status(a.end_offset, a.leader_epoch),
        AckStatus::Pending
    );
    // Once it hears of epoch 2, the waiting write is no longer its to acknowledge.
    b.tell(&[1], state(2, 2, 2, &[2, 3], &[1, 2, 3]), 5001);
    assert_eq!(
        b.get(1).ack_status(a.end_offset, a.leader_epoch),
        AckStatus::LeadershipLost
    );
    let err = b
        .get(1)
        .append_as_leader(vec![(None, rv!(1))], true, 5002)
        .0
        .unwrap_err();
    assert!(matches!(err, ReplicaError::NotLeader { leader: 2 }));
}

// ---- truncation: KIP-101 and KIP-279 ----

/// KIP-101 scenario 1: the follower restarts and truncates to a stale HW, then the
/// leader dies and the follower is elected: a committed record survives only under
/// epoch truncation.
fn kip101_data_loss(mode: Truncation) -> Vec<Entry> {
    let (a, bb) = (1, 2);
    let mut b = Brokers::new(&[a, bb], mode);
    b.tell(&[a, bb], state(a, 1, 1, &[a, bb], &[a, bb]), 0);
    b.produce(a, 10, 0); // m0
    b.fetch(bb, a, 1);
    b.fetch(bb, a, 2); // HW 1 everywhere
    let m1 = b.produce(a, 11, 3);
    b.fetch(bb, a, 4); // B has m1, B's HW = 1
    b.fetch_lost(bb, a, 5); // A's HW = 2: m1 is committed and acknowledged...
    assert_eq!(b.get(a).ack_status(m1.end_offset, 1), AckStatus::Committed);
    assert_eq!(b.get(bb).high_watermark(), 1, "...but B never heard");
    // B restarts (nothing lost from its log) and becomes A's follower again.
    b.restart(bb, 2);
    b.tell(&[a, bb], state(a, 1, 2, &[a, bb], &[a, bb]), 6);
    b.settle(bb, a);
    // A dies before B fetches again; B is elected.
    b.tell(&[bb], state(bb, 2, 3, &[bb], &[a, bb]), 7);
    b.values(bb)
}

#[test]
fn kip101_data_loss_under_hw_truncation() {
    assert_eq!(
        kip101_data_loss(Truncation::Hw),
        vec![(0, 1, 10)],
        "m1 is lost"
    );
}

#[test]
fn kip101_no_data_loss_under_epoch_truncation() {
    assert_eq!(
        kip101_data_loss(Truncation::Epoch),
        vec![(0, 1, 10), (1, 1, 11)]
    );
}

/// KIP-101 scenario 2: both crash, B loses its unflushed m1, comes back first as
/// leader and writes m2 at offset 1; then A comes back as B's follower.
fn kip101_divergence(mode: Truncation) -> (Vec<Entry>, Vec<Entry>) {
    let (a, bb) = (1, 2);
    let mut b = Brokers::new(&[a, bb], mode);
    b.tell(&[a, bb], state(a, 1, 1, &[a, bb], &[a, bb]), 0);
    b.produce(a, 10, 0);
    b.produce(a, 11, 0);
    b.fetch(bb, a, 1);
    b.fetch(bb, a, 2); // A: HW 2; B: both records, HW 2
    assert_eq!(b.get(a).high_watermark(), 2);
    // Power failure: A keeps both, B keeps only m0.
    b.restart(a, 2);
    b.restart(bb, 1);
    // B is back first and leads epoch 2 alone; writes m2 at offset 1.
    b.tell(&[bb], state(bb, 2, 2, &[bb], &[a, bb]), 10);
    b.get(bb)
        .append_as_leader(vec![(None, rv!(12))], false, 11)
        .0
        .unwrap();
    // A comes back as B's follower, truncates by its rule, then catches up.
    b.tell(&[a], state(bb, 2, 2, &[bb], &[a, bb]), 12);
    b.settle(a, bb);
    b.fetch(a, bb, 13);
    b.fetch(a, bb, 14);
    (b.values(a), b.values(bb))
}

#[test]
fn kip101_divergence_under_hw_truncation() {
    let (a, b) = kip101_divergence(Truncation::Hw);
    assert_eq!(a, vec![(0, 1, 10), (1, 1, 11)]);
    assert_eq!(
        b,
        vec![(0, 1, 10), (1, 2, 12)],
        "offset 1 differs: diverged"
    );
}

#[test]
fn kip101_agreement_under_epoch_truncation() {
    let (a, b) = kip101_divergence(Truncation::Epoch);
    assert_eq!(a, b);
    assert_eq!(b, vec![(0, 1, 10), (1, 2, 12)]);
}

/// KIP-279: leadership moves A → B → A before A truncates. B asks A for the end of
/// epoch 2, which A never had; A must answer the largest epoch ≤ 2 it has (1) and where
/// it ends, else B keeps its epoch-2 record at an offset where A has another.
#[test]
fn kip279_fast_failover_logs_agree() {
    let (a, bb) = (1, 2);
    let mut b = led_by(a, bb);
    b.produce(a, 10, 0);
    b.fetch(bb, a, 1);
    b.fetch(bb, a, 2);
    b.produce(a, 11, 3); // m1 at offset 1, epoch 1: only on A
    // A → B (epoch 2): B writes m2 at offset 1. A becomes follower but does not get to
    // truncate before leadership moves back.
    b.tell(&[a, bb], state(bb, 2, 2, &[a, bb], &[a, bb]), 4);
    b.get(bb)
        .append_as_leader(vec![(None, rv!(12))], false, 5)
        .0
        .unwrap();
    // B → A (epoch 3).
    b.tell(&[a, bb], state(a, 3, 3, &[a, bb], &[a, bb]), 6);
    assert_eq!(b.get(a).epochs().entries(), &[(1, 0), (3, 2)]);
    assert_eq!(b.get(bb).epochs().entries(), &[(1, 0), (2, 1)]);
    assert_eq!(b.get(a).end_offset_for(2), Some((1, 2)), "KIP-279 answer");
    let rounds = b.settle(bb, a);
    assert_eq!(rounds, 1);
    assert_eq!(b.get(bb).log_end_offset(), 1, "B drops m2");
    b.fetch(bb, a, 7);
    assert_eq!(b.values(a), b.values(bb));
    assert_eq!(b.values(bb), vec![(0, 1, 10), (1, 1, 11)]);
}

/// A follower that has an epoch the leader never had truncates in two rounds.
#[test]
fn truncation_repeats_when_the_leader_answers_an_epoch_we_lack() {
    let (a, bb) = (1, 2);
    let mut b = Brokers::new(&[a, bb], Truncation::Epoch);
    // A: epochs 1 (offsets 0-1), 2 (2-3). B: epochs 1 (0-1), 3 (2-4) — B led epoch 3
    // alone, and A led epoch 2 without B.
    let rec = |o: u64, e: i32| Record {
        offset: o,
        leader_epoch: e,
        producer: None,
        key: None,
        value: rv!(o as i64 * 10 + e as i64),
    };
    let la = MemLog {
        records: vec![rec(0, 1), rec(1, 1), rec(2, 2), rec(3, 2)],
        ..MemLog::default()
    };
    let lb = MemLog {
        records: vec![rec(0, 1), rec(1, 1), rec(2, 3), rec(3, 3), rec(4, 3)],
        ..MemLog::default()
    };
    b.r.insert(a, Replica::open(a, la, &[], 2, LAG).unwrap().0);
    b.r.insert(bb, Replica::open(bb, lb, &[], 2, LAG).unwrap().0);
    assert_eq!(
        b.get(bb).epochs().entries(),
        &[(1, 0), (3, 2)],
        "rebuilt from the log"
    );
    b.tell(&[a, bb], state(a, 4, 1, &[a], &[a, bb]), 0);
    // Round 1: B asks for 3; A answers (2, 4); B lacks 2 → cut to the end of its
    // epoch 1 (offset 2). Round 2: B asks for 1; A answers (1, 2) → done at 2.
    assert_eq!(b.settle(bb, a), 2);
    assert_eq!(b.get(bb).log_end_offset(), 2);
    b.fetch(bb, a, 1);
    assert_eq!(b.values(a), b.values(bb));
}

/// A follower whose latest epoch starts at its LEO (it led that epoch and wrote
/// nothing), under a leader that never had that epoch: the leader answers an older
/// epoch of its own that ends past our LEO, we lack that one too, and the cut lands at
/// our LEO. The cut must still drop the empty epoch from our cache, as Kafka's
/// truncation does even when the target is at or past LEO; otherwise we ask about
/// the same epoch again, get the same answer, and never fetch.
#[test]
fn an_empty_epoch_the_leader_lacks_is_dropped_though_the_cut_is_at_leo() {
    let (a, bb) = (1, 2);
    let mut b = Brokers::new(&[a, bb], Truncation::Epoch);
    let rec = |o: u64, e: i32| Record {
        offset: o,
        leader_epoch: e,
        producer: None,
        key: None,
        value: rv!(o as i64 * 10 + e as i64),
    };
    // A: epoch 1 (0-1), then it led epoch 2 (offset 2) without B.
    let la = MemLog {
        records: vec![rec(0, 1), rec(1, 1), rec(2, 2)],
        ..MemLog::default()
    };
    // B: epoch 1 (0-1), then it led epoch 3 and wrote nothing: epoch 3 starts at LEO 2.
    let lb = MemLog {
        records: vec![rec(0, 1), rec(1, 1)],
        ..MemLog::default()
    };
    b.r.insert(a, Replica::open(a, la, &[], 2, LAG).unwrap().0);
    b.r.insert(
        bb,
        Replica::open(bb, lb, &[(1, 0), (3, 2)], 2, LAG).unwrap().0,
    );
    assert_eq!(b.get(bb).epochs().entries(), &[(1, 0), (3, 2)]);
    // A leads epoch 4 (it starts at A's LEO 3).
    b.tell(&[a, bb], state(a, 4, 1, &[a], &[a, bb]), 0);
    // Round 1: B asks for 3; A answers (2, 3); B lacks 2, its epochs below 2 end at
    // 2 = its LEO: nothing to cut from the log, but epoch 3 goes. Round 2: B asks
    // for 1; A answers (1, 2): done.
    assert_eq!(b.settle(bb, a), 2);
    assert_eq!(b.get(bb).epochs().entries(), &[(1, 0)]);
    b.fetch(bb, a, 1);
    assert_eq!(b.values(a), b.values(bb));
}

#[test]
fn open_rebuilds_epochs_from_the_log_and_keeps_an_empty_leader_epoch() {
    let mut log = MemLog::default();
    log.append(1, vec![(None, rv!(1)), (None, rv!(2))]).unwrap();
    log.append(3, vec![(None, rv!(3))]).unwrap();
    // Checkpoint: stale (misses epoch 3), plus epoch 5 started at LEO with no records
    // yet, plus an entry past LEO that was lost with unflushed records.
    let r = Replica::open(1, log.clone(), &[(1, 0), (5, 3)], 9, LAG)
        .unwrap()
        .0;
    assert_eq!(r.epochs().entries(), &[(1, 0), (3, 2), (5, 3)]);
    assert_eq!(r.high_watermark(), 3, "HW capped at LEO");
    let r = Replica::open(1, log, &[(1, 0), (3, 2), (4, 7)], 1, LAG)
        .unwrap()
        .0;
    assert_eq!(r.epochs().entries(), &[(1, 0), (3, 2)]);
}

#[test]
fn offline_when_no_leader() {
    let mut b = Brokers::new(&[1, 2], Truncation::Epoch);
    b.tell(&[1, 2], state(1, 1, 1, &[1, 2], &[1, 2]), 0);
    let t = b
        .get(2)
        .apply_state(state(-1, 2, 2, &[1], &[1, 2]), Truncation::Epoch, 1)
        .0;
    assert_eq!(t, Transition::BecameOffline);
    assert_eq!(b.get(2).role(), Role::Offline);
}

#[test]
fn undefined_epoch_answer_falls_back_to_the_high_watermark() {
    let (a, bb) = (1, 2);
    let mut b = Brokers::new(&[a, bb], Truncation::Epoch);
    let rec = |o: u64, e: i32| Record {
        offset: o,
        leader_epoch: e,
        producer: None,
        key: None,
        value: rv!(o as i64),
    };
    let lb = MemLog {
        records: vec![rec(0, 5), rec(1, 5), rec(2, 5)],
        ..MemLog::default()
    };
    b.r.insert(bb, Replica::open(bb, lb, &[], 1, LAG).unwrap().0);
    b.tell(&[a, bb], state(a, 6, 1, &[a], &[a, bb]), 0);
    // The leader knows no epoch ≤ 5 (its cache holds only its own epoch 6, which
    // starts at 0): it answers (5, 0), and the follower keeps nothing.
    assert_eq!(b.get(a).end_offset_for(5), Some((5, 0)));
    // Kafka's UNDEFINED (no answer possible) makes the follower fall back to its HW.
    assert_eq!(b.get(bb).truncation_epoch().0.unwrap(), Some(5));
    assert!(b.get(bb).apply_epoch_end_offset(None).0.unwrap());
    assert_eq!(b.get(bb).log_end_offset(), 1);
    assert!(!b.get(bb).is_truncating());
}

// ---- planted bugs (`--bug`): each changes exactly the rule it names ----

fn planted(ids: &[BrokerId], bugs: Bugs) -> Brokers {
    let mut b = Brokers::new(ids, Truncation::Epoch);
    for id in ids {
        b.get(*id).plant(bugs);
    }
    b
}

#[test]
fn ack_before_replicate_acks_what_only_the_leader_has() {
    for bug in [false, true] {
        let mut b = planted(
            &[1, 2],
            Bugs::planted(bug.then_some(Bug::AckBeforeReplicate)),
        );
        b.tell(&[1, 2], state(1, 1, 1, &[1, 2], &[1, 2]), 0);
        let a = b.produce(1, 5, 1);
        let expected = if bug {
            AckStatus::Committed
        } else {
            AckStatus::Pending
        };
        assert_eq!(b.get(1).ack_status(a.end_offset, 1), expected, "bug {bug}");
        // The HW rule itself is untouched: nothing is committed in the HW sense.
        assert_eq!(b.get(1).high_watermark(), 0);
        // A deposed leader still cannot ack.
        b.tell(&[1], state(2, 2, 2, &[2], &[1, 2]), 2);
        assert_eq!(
            b.get(1).ack_status(a.end_offset, 1),
            AckStatus::LeadershipLost
        );
    }
}

#[test]
fn isr_unchecked_lets_the_leader_shrink_its_isr_alone() {
    for bug in [false, true] {
        let mut b = planted(&[1, 2, 3], Bugs::planted(bug.then_some(Bug::IsrUnchecked)));
        b.tell(&[1, 2, 3], state(1, 1, 1, &[1, 2, 3], &[1, 2, 3]), 0);
        let a = b.produce(1, 7, 10);
        // Both followers stop fetching (the leader is cut off); past the lag time the
        // leader wants an ISR of itself.
        assert_eq!(b.get(1).isr_proposal(LAG + 100), Some(vec![1]));
        assert_eq!(b.get(1).shrink_isr_unchecked(&[1], LAG + 100).0, bug);
        if bug {
            assert_eq!(b.get(1).isr(), [1]);
            assert_eq!(b.get(1).state().unwrap().partition_epoch, 1);
            assert_eq!(b.get(1).high_watermark(), 1, "HW waits for no one");
            // Below min.insync the ack is refused, as the rule says; the bug is only
            // that the controller never agreed to the smaller ISR.
            assert_eq!(
                b.get(1).ack_status(a.end_offset, 1),
                AckStatus::CommittedBelowMinIsr
            );
        } else {
            assert_eq!(b.get(1).isr(), [1, 2, 3]);
            assert_eq!(b.get(1).high_watermark(), 0);
        }
        // Not a leader: nothing to change, bug or not; and never an expansion.
        assert!(!b.get(2).shrink_isr_unchecked(&[2], LAG + 100).0);
        assert!(!b.get(1).shrink_isr_unchecked(&[1, 2, 3], LAG + 100).0);
    }
}

/// Leader 1 of epoch 1 commits record 10 with follower 2, then appends `suffix`
/// that no one else gets and is deposed: 2 leads epoch 2 and writes `new`. The
/// deposed leader has not settled its log with the new leader yet.
fn deposed_leader_with_suffix(bugs: Bugs, suffix: &[i64], new: &[i64]) -> Brokers {
    let mut b = planted(&[1, 2], bugs);
    b.tell(&[1, 2], state(1, 1, 1, &[1, 2], &[1, 2]), 0);
    b.produce(1, 10, 0);
    b.fetch(2, 1, 1);
    b.fetch(2, 1, 2);
    for &v in suffix {
        b.produce(1, v, 3);
    }
    b.tell(&[1, 2], state(2, 2, 2, &[1, 2], &[1, 2]), 4);
    for &v in new {
        b.produce(2, v, 5);
    }
    b
}

#[test]
fn no_epoch_fence_keeps_a_deposed_leaders_records() {
    for bug in [false, true] {
        let bugs = Bugs::planted(bug.then_some(Bug::NoEpochFence));
        let mut b = deposed_leader_with_suffix(bugs, &[11], &[20]);
        b.settle(1, 2);
        let kept = b.values(1);
        if bug {
            assert_eq!(kept, [(0, 1, 10), (1, 1, 11)], "the stale record stays");
        } else {
            assert_eq!(kept, [(0, 1, 10)], "fenced: cut at the end of epoch 1");
        }
    }
}

// ---- ISR proposals across lost answers and restarts ----

#[test]
fn restarted_follower_dropped_from_the_isr_must_fetch_again_before_it_is_proposed_back() {
    let mut b = Brokers::new(&[1, 2, 3], Truncation::Epoch);
    b.tell(&[1, 2, 3], state(1, 1, 1, &[1, 2, 3], &[1, 2, 3]), 0);
    for v in 0..10 {
        b.produce(1, v, 10);
    }
    for _ in 0..2 {
        b.fetch(2, 1, 20);
        b.fetch(3, 1, 20);
    }
    assert_eq!(b.get(1).high_watermark(), 10);
    // Broker 3 restarts having lost 5 unflushed records; the controller drops it.
    b.restart(3, 5);
    b.tell(&[1, 2], state(1, 1, 2, &[1, 2], &[1, 2, 3]), 30);
    // What its previous process reported is forgotten: it is not proposed back.
    assert_eq!(b.get(1).follower(3).unwrap().log_end_offset, None);
    assert_eq!(b.get(1).isr_proposal(40), None);
    // The new process fetches from its real LEO 5 < HW 10: still not eligible.
    b.tell(&[3], state(1, 1, 2, &[1, 2], &[1, 2, 3]), 40);
    b.settle(3, 1);
    assert_eq!(b.get(3).log_end_offset(), 5);
    b.fetch(3, 1, 50);
    assert_eq!(b.get(1).isr_proposal(50), None, "LEO 5 is below HW 10");
    // Once it reports the HW it is proposed, and the HW never passed a member's LEO.
    b.fetch(3, 1, 60);
    assert_eq!(b.get(3).log_end_offset(), 10);
    assert_eq!(b.get(1).isr_proposal(60), Some(vec![1, 2, 3]));
}

#[test]
fn a_fetch_from_a_new_process_of_a_follower_forgets_the_previous_ones_progress() {
    let mut b = Brokers::new(&[1, 2, 3], Truncation::Epoch);
    // 3 is out of the ISR and catching up.
    b.tell(&[1, 2, 3], state(1, 1, 1, &[1, 2], &[1, 2, 3]), 0);
    for v in 0..10 {
        b.produce(1, v, 10);
    }
    b.fetch(2, 1, 20);
    b.fetch(3, 1, 20);
    b.fetch(3, 1, 30);
    let f = *b.get(1).follower(3).unwrap();
    assert_eq!((f.broker_epoch, f.log_end_offset), (Some(1), Some(10)));
    assert!(f.isr_eligible && f.last_caught_up_ms == 30);
    // It restarts (broker epoch 2) with 5 records left, before the controller noticed.
    b.restart(3, 5);
    b.tell(&[3], state(1, 1, 1, &[1, 2], &[1, 2, 3]), 40);
    b.settle(3, 1);
    b.fetch_lost(3, 1, 50);
    let f = *b.get(1).follower(3).unwrap();
    assert_eq!((f.broker_epoch, f.log_end_offset), (Some(2), Some(5)));
    assert!(
        !f.isr_eligible && f.last_caught_up_ms == 0,
        "caught-up state of the previous process kept: {f:?}"
    );
}

#[test]
fn a_lost_alter_partition_answer_keeps_the_expansion_until_the_controller_state_arrives() {
    let mut b = Brokers::new(&[1, 2, 3], Truncation::Epoch);
    // 3 is out of the ISR (it was restarted earlier; not eligible).
    b.tell(&[1, 2, 3], state(1, 1, 1, &[1, 2], &[1, 2, 3]), 0);
    for v in 0..10 {
        b.produce(1, v, 10);
    }
    b.fetch(2, 1, 20);
    b.fetch(2, 1, 20);
    assert_eq!(b.get(1).high_watermark(), 10);
    b.fetch(3, 1, 20); // 3 gets 0..10
    for v in 10..20 {
        b.produce(1, v, 25);
    }
    b.fetch(3, 1, 30); // 3 reports LEO 10 >= HW 10, < LEO 20: not eligible
    let p = b.get(1).isr_proposal(35);
    assert_eq!(p, Some(vec![1, 2, 3]));
    let sent = b.get(1).set_pending_isr(vec![1, 2, 3]);
    assert_eq!((sent.leader_epoch, sent.partition_epoch), (1, 1));
    // The controller applied it, but the answer was lost (and the retry fenced): the
    // proposal stays, so the HW waits for 3.
    b.fetch(2, 1, 40);
    b.fetch(2, 1, 40);
    assert_eq!(b.get(1).high_watermark(), 10, "HW passed 3's LEO 10");
    assert_eq!(b.get(1).isr_proposal(40), None, "still in flight");
    // The controller's state arrives (push or heartbeat answer) and replaces it.
    b.tell(&[1, 2, 3], state(1, 1, 2, &[1, 2, 3], &[1, 2, 3]), 45);
    assert_eq!(b.get(1).pending_isr(), None);
    assert!(!b.get(1).is_pending(&sent));
    assert_eq!(b.get(1).high_watermark(), 10);
    b.fetch(3, 1, 50);
    b.fetch(2, 1, 50);
    assert_eq!(b.get(1).high_watermark(), 20, "every ISR member has 20");
}

#[test]
fn a_rejected_proposal_is_dropped_and_the_hw_stops_waiting_for_it() {
    let mut b = Brokers::new(&[1, 2, 3], Truncation::Epoch);
    b.tell(&[1, 2, 3], state(1, 1, 1, &[1, 2], &[1, 2, 3]), 0);
    for v in 0..10 {
        b.produce(1, v, 10);
    }
    b.fetch(2, 1, 20);
    b.fetch(2, 1, 20);
    b.fetch(3, 1, 20);
    for v in 10..20 {
        b.produce(1, v, 25);
    }
    b.fetch(3, 1, 30); // LEO 10 = HW, behind the leader's 20: proposable, not eligible
    let sent = b.get(1).set_pending_isr(vec![1, 2, 3]);
    b.fetch(2, 1, 40);
    b.fetch(2, 1, 40);
    assert_eq!(b.get(1).high_watermark(), 10, "waits for 3 while pending");
    assert!(b.get(1).clear_pending_isr(&sent).0, "a definite refusal");
    assert!(b.get(1).maybe_advance_hw(40));
    assert_eq!(b.get(1).high_watermark(), 20);
}

#[test]
fn a_late_answer_to_an_older_proposal_leaves_the_current_one_in_flight() {
    let mut b = Brokers::new(&[1, 2, 3], Truncation::Epoch);
    b.tell(&[1, 2, 3], state(1, 1, 1, &[1, 2], &[1, 2, 3]), 0);
    let old = b.get(1).set_pending_isr(vec![1, 2, 3]);
    // Leadership moves away and back (leader epoch 3): the old proposal is gone.
    b.tell(&[1, 2, 3], state(2, 2, 2, &[1, 2], &[1, 2, 3]), 10);
    b.tell(&[1, 2, 3], state(1, 3, 3, &[1, 2], &[1, 2, 3]), 20);
    assert_eq!(b.get(1).pending_isr(), None);
    let current = b.get(1).set_pending_isr(vec![1, 2, 3]);
    assert_eq!((current.leader_epoch, current.partition_epoch), (3, 3));
    // The old task's refusal (or timeout) arrives now: it must not clear ours.
    assert!(!b.get(1).clear_pending_isr(&old).0);
    assert_eq!(b.get(1).pending_isr(), Some(&[1, 2, 3][..]));
    assert!(b.get(1).is_pending(&current));
    // Same ISR under the same leader epoch but an older partition epoch: not ours either.
    let stale_pe = PendingIsr {
        partition_epoch: 1,
        ..current.clone()
    };
    assert!(!b.get(1).clear_pending_isr(&stale_pe).0);
    assert!(b.get(1).clear_pending_isr(&current).0);
    assert_eq!(b.get(1).pending_isr(), None);
}

// ---- effects: what the node must do after each event ----

#[test]
fn role_changes_start_and_stop_the_fetch_task_and_wake_the_waiters() {
    let mut b = Brokers::new(&[1, 2], Truncation::Epoch);
    let (t, fx) = b
        .get(2)
        .apply_state(state(1, 3, 1, &[1, 2], &[1, 2]), Truncation::Epoch, 0);
    assert_eq!(t, Transition::BecameFollower { leader: 1 });
    let start = FetchTask::Start {
        leader: 1,
        leader_epoch: 3,
    };
    assert_eq!(fx.fetch_task, Some(start));
    assert!(fx.wake);
    assert_eq!(
        fx.checkpoint_epochs, None,
        "an empty follower learns no epoch"
    );
    // The same state again changes nothing, so there is nothing to do.
    let (t, fx) = b
        .get(2)
        .apply_state(state(1, 3, 1, &[1, 2], &[1, 2]), Truncation::Epoch, 1);
    assert_eq!((t, fx), (Transition::Ignored, Effects::default()));
    // An ISR change keeps the fetch task.
    let (t, fx) = b
        .get(2)
        .apply_state(state(1, 3, 2, &[1], &[1, 2]), Truncation::Epoch, 2);
    assert_eq!(t, Transition::IsrUpdated);
    assert_eq!(fx.fetch_task, None);
    assert!(fx.wake);
    // Leading stops it, and the new epoch's start is checkpointed at once.
    let (t, fx) = b
        .get(2)
        .apply_state(state(2, 4, 3, &[2], &[1, 2]), Truncation::Epoch, 3);
    assert_eq!(t, Transition::BecameLeader);
    assert_eq!(fx.fetch_task, Some(FetchTask::Stop));
    assert_eq!(fx.checkpoint_epochs, Some(vec![(4, 0)]));
    let (t, fx) = b
        .get(2)
        .apply_state(state(-1, 5, 4, &[2], &[1, 2]), Truncation::Epoch, 4);
    assert_eq!(t, Transition::BecameOffline);
    assert_eq!(fx.fetch_task, Some(FetchTask::Stop));
}

#[test]
fn every_change_of_the_epoch_cache_is_an_epoch_checkpoint() {
    let mut b = Brokers::new(&[1, 2], Truncation::Epoch);
    b.tell(&[1, 2], state(1, 1, 1, &[1, 2], &[1, 2]), 0);
    // Appends in the leader's epoch add nothing: it was checkpointed on election.
    let (_, fx) = b.get(1).append_as_leader(vec![(None, rv!(1))], false, 1);
    assert_eq!(fx.checkpoint_epochs, None);
    // The HW (ISR [1, 2]) has not moved: the FETCHes waiting for records look
    // again, not the produces waiting for the HW.
    assert!(fx.appended && !fx.wake);
    // The follower learns epoch 1 from the records it fetches.
    let req = b.fetch_request(2);
    let resp = b.get(1).fetch_as_leader(&req, 2).0.unwrap();
    let (_, fx) = b.get(2).apply_fetch_response(resp);
    assert_eq!(fx.checkpoint_epochs, Some(vec![(1, 0)]));
    // Truncation below an epoch's start drops it from the cache.
    let (_, fx) = b.get(2).truncate_to_leader_end(0);
    assert_eq!(fx.checkpoint_epochs, Some(vec![]));
    // Reopening over a checkpoint that matches the log needs no new checkpoint; over
    // one that does not, the rebuilt cache is checkpointed.
    let log = b.get(1).log().clone();
    let (_, fx) = Replica::open(1, log.clone(), &[(1, 0)], 1, LAG).unwrap();
    assert_eq!(fx.checkpoint_epochs, None);
    let (_, fx) = Replica::open(1, log, &[(0, 0)], 1, LAG).unwrap();
    assert_eq!(fx.checkpoint_epochs, Some(vec![(1, 0)]));
}

#[test]
fn a_fetch_that_moves_the_hw_wakes_the_waiting_produces() {
    let mut b = Brokers::new(&[1, 2], Truncation::Epoch);
    b.tell(&[1, 2], state(1, 1, 1, &[1, 2], &[1, 2]), 0);
    b.produce(1, 7, 1);
    b.fetch(2, 1, 2);
    let req = b.fetch_request(2);
    let (_, fx) = b.get(1).fetch_as_leader(&req, 3);
    assert!(fx.hw_moved && fx.wake);
    // The next fetch at the same offset moves nothing.
    let (_, fx) = b.get(1).fetch_as_leader(&req, 4);
    assert_eq!(fx, Effects::default());
}

#[test]
fn a_failed_hw_truncation_stays_pending_and_is_retried_before_fetching() {
    let mut b = Brokers::new(&[1, 2], Truncation::Hw);
    b.tell(&[1, 2], state(2, 1, 1, &[1, 2], &[1, 2]), 0);
    for v in 0..3 {
        b.produce(2, v, 1);
    }
    // Broker 2 (HW 0, LEO 3) becomes follower; its disk refuses the truncation.
    b.get(2).log_mut().broken_truncate = true;
    let (t, fx) = b
        .get(2)
        .apply_state(state(1, 2, 2, &[1, 2], &[1, 2]), Truncation::Hw, 3);
    assert_eq!(t, Transition::BecameFollower { leader: 1 });
    assert!(matches!(fx.fetch_task, Some(FetchTask::Start { .. })));
    assert_eq!(fx.warnings.len(), 1, "{:?}", fx.warnings);
    assert!(b.get(2).is_truncating());
    assert_eq!(b.get(2).log_end_offset(), 3);
    // The fetch task's first step retries it: still failing, then done.
    assert!(b.get(2).truncation_epoch().0.is_err());
    b.get(2).log_mut().broken_truncate = false;
    let (next, fx) = b.get(2).truncation_epoch();
    assert_eq!(next.unwrap(), None, "settled: fetch");
    assert!(fx.wake);
    assert_eq!(b.get(2).log_end_offset(), 0);
    assert!(!b.get(2).is_truncating());
}

#[test]
fn propose_isr_makes_the_proposal_pending_with_the_members_broker_epochs() {
    let mut b = Brokers::new(&[1, 2, 3], Truncation::Epoch);
    b.tell(&[1, 2, 3], state(1, 1, 1, &[1, 2], &[1, 2, 3]), 0);
    b.fetch(2, 1, 10);
    b.fetch(3, 1, 10);
    let (change, _) = b.get(1).propose_isr(20);
    let pending = PendingIsr {
        leader_epoch: 1,
        partition_epoch: 1,
        isr: vec![1, 2, 3],
    };
    assert_eq!(
        change,
        Some(IsrChange::Propose {
            pending: pending.clone(),
            member_epochs: vec![(2, 1), (3, 1)],
        })
    );
    assert!(b.get(1).is_pending(&pending));
    assert_eq!(b.get(1).propose_isr(30).0, None, "one proposal in flight");
}

#[test]
fn propose_isr_with_isr_unchecked_shrinks_on_the_spot() {
    let mut b = planted(&[1, 2], Bugs::planted(Some(Bug::IsrUnchecked)));
    b.tell(&[1, 2], state(1, 1, 1, &[1, 2], &[1, 2]), 0);
    let (change, fx) = b.get(1).propose_isr(LAG + 1);
    assert_eq!(
        change,
        Some(IsrChange::ShrunkUnchecked {
            from: vec![1, 2],
            to: vec![1],
        })
    );
    assert!(fx.wake);
    assert_eq!(b.get(1).pending_isr(), None, "nothing sent");
    assert_eq!(b.get(1).isr(), [1]);
}

// ---- what the node's event lines are made of ----

#[test]
fn every_cut_of_a_followers_log_is_told_with_its_rule_and_record_count() {
    for mode in [Truncation::Epoch, Truncation::Hw] {
        let mut b = Brokers::new(&[1, 2], mode);
        b.tell(&[1, 2], state(1, 1, 1, &[1, 2], &[1, 2]), 0);
        b.produce(1, 10, 0);
        b.fetch(2, 1, 1);
        b.fetch(2, 1, 2);
        // Two records only the leader has; then it is deposed.
        b.produce(1, 11, 3);
        b.produce(1, 12, 3);
        let (_, fx) = b
            .get(1)
            .apply_state(state(2, 2, 2, &[1, 2], &[1, 2]), mode, 4);
        let told = |to, records| Truncated {
            to,
            records,
            rule: mode,
        };
        match mode {
            // Pre-0.11: cut at the local HW at once.
            Truncation::Hw => assert_eq!(fx.truncations, [told(1, 2)]),
            Truncation::Epoch => {
                assert_eq!(fx.truncations, []);
                let epoch = b.get(1).truncation_epoch().0.unwrap().unwrap();
                let answer = b.get(2).end_offset_for(epoch);
                let (done, fx) = b.get(1).apply_epoch_end_offset(answer);
                assert!(done.unwrap());
                assert_eq!(fx.truncations, [told(1, 2)]);
            }
        }
        // The other follower of the new leader had nothing to cut: its settlement
        // is told all the same, with no record removed.
        b.tell(&[1, 2], state(1, 3, 3, &[1, 2], &[1, 2]), 5);
        let fx = match mode {
            Truncation::Hw => {
                let (_, fx) = b
                    .get(2)
                    .apply_state(state(1, 4, 4, &[1, 2], &[1, 2]), mode, 6);
                fx
            }
            Truncation::Epoch => {
                let _ = b
                    .get(2)
                    .apply_state(state(1, 4, 4, &[1, 2], &[1, 2]), mode, 6);
                let epoch = b.get(2).truncation_epoch().0.unwrap().unwrap();
                let answer = b.get(1).end_offset_for(epoch);
                b.get(2).apply_epoch_end_offset(answer).1
            }
        };
        let leo = b.get(2).log_end_offset();
        assert_eq!(fx.truncations, [told(leo, 0)], "{mode:?}");
        // Pre-0.11's out-of-range cut is told only when it removes something.
        assert_eq!(b.get(2).truncate_to_leader_end(leo + 5).1.truncations, []);
        assert_eq!(
            b.get(2).truncate_to_leader_end(0).1.truncations,
            [told(0, leo)]
        );
    }
}

// ---- more planted bugs: each test shows the rule with and without its bug ----

#[test]
fn hw_any_follower_commits_what_one_follower_of_two_has() {
    for bug in [false, true] {
        let mut b = planted(&[1, 2, 3], Bugs::planted(bug.then_some(Bug::HwAnyFollower)));
        b.tell(&[1, 2, 3], state(1, 1, 1, &[1, 2, 3], &[1, 2, 3]), 0);
        // Both followers have fetched once (LEO 0); then only follower 2 keeps up.
        b.fetch(3, 1, 1);
        let a = b.produce(1, 7, 2);
        b.fetch(2, 1, 3);
        b.fetch(2, 1, 4);
        assert_eq!(b.get(1).follower(3).unwrap().log_end_offset, Some(0));
        if bug {
            assert_eq!(b.get(1).high_watermark(), 1, "committed without follower 3");
            assert_eq!(b.get(1).ack_status(a.end_offset, 1), AckStatus::Committed);
        } else {
            assert_eq!(b.get(1).high_watermark(), 0, "follower 3 lacks offset 0");
            assert_eq!(b.get(1).ack_status(a.end_offset, 1), AckStatus::Pending);
        }
        // A leader that no follower has fetched from yet still waits, bug or not.
        b.tell(&[1, 2, 3], state(2, 2, 2, &[1, 2, 3], &[1, 2, 3]), 5);
        b.produce(2, 8, 6);
        assert!(!b.get(2).maybe_advance_hw(7));
    }
}

#[test]
fn read_past_hw_serves_records_no_follower_has() {
    for bug in [false, true] {
        let mut b = planted(&[1, 2], Bugs::planted(bug.then_some(Bug::ReadPastHw)));
        b.tell(&[1, 2], state(1, 1, 1, &[1, 2], &[1, 2]), 0);
        b.produce(1, 1, 1);
        b.fetch(2, 1, 2);
        b.fetch(2, 1, 3);
        // A second record only the leader has.
        b.produce(1, 2, 4);
        assert_eq!(b.get(1).high_watermark(), 1);
        let expected = if bug { 2 } else { 1 };
        assert_eq!(b.get(1).read_limit(), expected, "bug {bug}");
    }
}

#[test]
fn ack_off_by_one_acks_a_record_the_hw_does_not_cover() {
    for bug in [false, true] {
        let mut b = planted(&[1, 2], Bugs::planted(bug.then_some(Bug::AckOffByOne)));
        b.tell(&[1, 2], state(1, 1, 1, &[1, 2], &[1, 2]), 0);
        b.fetch(2, 1, 1);
        // The first record (offset 0) is in the leader's log only: HW 0.
        let first = b.produce(1, 1, 2);
        assert_eq!((first.base_offset, first.end_offset), (0, 1));
        assert_eq!(b.get(1).high_watermark(), 0);
        let expected = if bug {
            AckStatus::Committed
        } else {
            AckStatus::Pending
        };
        assert_eq!(
            b.get(1).ack_status(first.end_offset, 1),
            expected,
            "bug {bug}"
        );
        // Once the HW passes it, both agree; the next record is again acked early
        // only with the bug.
        b.fetch(2, 1, 3);
        b.fetch(2, 1, 4);
        assert_eq!(
            b.get(1).ack_status(first.end_offset, 1),
            AckStatus::Committed
        );
        let second = b.produce(1, 2, 5);
        assert_eq!(
            b.get(1).ack_status(second.end_offset, 1),
            expected,
            "bug {bug}"
        );
    }
}

#[test]
fn ack_ignores_epoch_acks_a_write_a_deposed_leader_truncated() {
    for bug in [false, true] {
        let mut b = planted(&[1, 2], Bugs::planted(bug.then_some(Bug::AckIgnoresEpoch)));
        b.tell(&[1, 2], state(1, 1, 1, &[1, 2], &[1, 2]), 0);
        b.produce(1, 10, 1);
        b.fetch(2, 1, 2);
        b.fetch(2, 1, 3);
        // Leader 1 appends a write no follower gets (it waits for acks=all), and is
        // deposed; the new leader writes its own record at that offset.
        let pending = b.produce(1, 11, 4);
        b.tell(&[1, 2], state(2, 2, 2, &[1, 2], &[1, 2]), 5);
        b.produce(2, 20, 6);
        b.settle(1, 2);
        b.fetch(1, 2, 7);
        b.fetch(1, 2, 8);
        assert_eq!(b.values(1), [(0, 1, 10), (1, 2, 20)], "the write was cut");
        assert_eq!(b.get(1).high_watermark(), 2);
        let expected = if bug {
            AckStatus::Committed
        } else {
            AckStatus::LeadershipLost
        };
        assert_eq!(
            b.get(1).ack_status(pending.end_offset, 1),
            expected,
            "bug {bug}"
        );
    }
}

#[test]
fn epoch_end_at_leo_lets_a_diverged_follower_keep_its_suffix() {
    for bug in [false, true] {
        let bugs = Bugs::planted(bug.then_some(Bug::EpochEndAtLeo));
        // The new leader writes two records of epoch 2, so its log is longer than
        // the old leader's.
        let mut b = deposed_leader_with_suffix(bugs, &[11], &[20, 21]);
        let leader_answer = b.get(2).end_offset_for(1);
        b.settle(1, 2);
        if bug {
            assert_eq!(leader_answer, Some((1, 3)), "the leader's LEO");
            assert_eq!(
                b.values(1),
                [(0, 1, 10), (1, 1, 11)],
                "the stale record stays"
            );
            // It then fetches the leader's records after it: the logs diverge.
            b.fetch(1, 2, 6);
            assert_eq!(b.values(1)[1], (1, 1, 11));
            assert_eq!(b.values(2)[1], (1, 2, 20));
        } else {
            assert_eq!(leader_answer, Some((1, 1)), "epoch 1 ends at 1");
            assert_eq!(b.values(1), [(0, 1, 10)], "cut at the end of epoch 1");
        }
    }
}

#[test]
fn truncate_past_epoch_end_keeps_the_first_record_of_a_diverged_suffix() {
    for bug in [false, true] {
        let bugs = Bugs::planted(bug.then_some(Bug::TruncatePastEpochEnd));
        // Two records no one else gets; the new leader writes its own.
        let mut b = deposed_leader_with_suffix(bugs, &[11, 12], &[20]);
        assert_eq!(
            b.get(2).end_offset_for(1),
            Some((1, 1)),
            "epoch 1 ends at 1"
        );
        b.settle(1, 2);
        if bug {
            // PLANTED BUG (truncate-past-epoch-end): cut at 2, not 1.
            assert_eq!(b.values(1), [(0, 1, 10), (1, 1, 11)], "one record kept");
            // The deposed leader's record sits where the new leader's is: diverged.
            b.fetch(1, 2, 6);
            assert_eq!(b.values(1)[1], (1, 1, 11));
            assert_eq!(b.values(2)[1], (1, 2, 20));
        } else {
            assert_eq!(b.values(1), [(0, 1, 10)], "cut at the end of epoch 1");
        }
    }
}

#[test]
fn isr_expand_early_takes_back_a_follower_that_lacks_committed_records() {
    for bug in [false, true] {
        let mut b = planted(
            &[1, 2, 3],
            Bugs::planted(bug.then_some(Bug::IsrExpandEarly)),
        );
        // Follower 3 is out of the ISR; 1 and 2 commit two records without it.
        b.tell(&[1, 2, 3], state(1, 1, 1, &[1, 2], &[1, 2, 3]), 0);
        b.produce(1, 10, 0);
        b.produce(1, 11, 0);
        b.fetch(2, 1, 1);
        b.fetch(2, 1, 2);
        assert_eq!(b.get(1).high_watermark(), 2);
        // 3 fetches from offset 0: behind the HW.
        let mut req = b.fetch_request(3);
        req.fetch_offset = 0;
        b.get(1).fetch_as_leader(&req, 3).0.unwrap();
        let proposal = b.get(1).isr_proposal(4);
        if bug {
            // PLANTED BUG (isr-expand-early): back in the ISR with nothing.
            assert_eq!(proposal, Some(vec![1, 2, 3]));
        } else {
            assert_eq!(proposal, None, "not until it has caught up to the HW");
        }
    }
}

/// A follower whose disk refuses the fetched records appends nothing: its LEO, HW
/// and epoch cache stay as they were (no checkpoint of an epoch it holds no record
/// of), so its next FETCH asks for the same records again.
#[test]
fn a_failed_follower_append_changes_nothing() {
    let mut b = Brokers::new(&[1, 2], Truncation::Epoch);
    b.tell(&[1, 2], state(1, 1, 1, &[1, 2], &[1, 2]), 0);
    b.produce(1, 1, 1);
    b.fetch(2, 1, 2);
    b.fetch(2, 1, 3);
    // A new leader epoch: the next records carry epoch 2, unknown to the follower.
    b.tell(&[1, 2], state(1, 2, 2, &[1, 2], &[1, 2]), 4);
    b.settle(2, 1);
    b.produce(1, 2, 5);
    let before = (
        b.get(2).log_end_offset(),
        b.get(2).high_watermark(),
        b.get(2).epochs().clone(),
    );
    b.get(2).log_mut().broken_append = true;
    let req = b.fetch_request(2);
    let resp = b.get(1).fetch_as_leader(&req, 6).0.unwrap();
    assert_eq!(resp.records.len(), 1);
    let (result, fx) = b.get(2).apply_fetch_response(resp);
    assert!(matches!(result, Err(ReplicaError::Io(_))), "{result:?}");
    assert_eq!(fx.checkpoint_epochs, None, "{fx:?}");
    let after = (
        b.get(2).log_end_offset(),
        b.get(2).high_watermark(),
        b.get(2).epochs().clone(),
    );
    assert_eq!(after, before);
    // The disk is back: the same FETCH brings the record and its epoch.
    b.get(2).log_mut().broken_append = false;
    b.fetch(2, 1, 7);
    assert_eq!(b.get(2).log_end_offset(), 2);
    assert_eq!(b.get(2).epochs().entries(), [(1, 0), (2, 1)]);
}

// ---- the idempotent producer ----

fn stamp(sequence: u32) -> crate::log::ProducerStamp {
    crate::log::ProducerStamp::batch(1, 0, sequence, 1).unwrap()
}

/// Producer 1's batch of `values`, its first sequence `sequence`.
fn produce_batch(
    b: &mut Brokers,
    leader: BrokerId,
    values: std::ops::Range<i64>,
    sequence: u32,
) -> Result<Appended, ReplicaError> {
    let entries: Vec<_> = values.map(|v| (None, rv!(v))).collect();
    let stamp = crate::log::ProducerStamp::batch(1, 0, sequence, entries.len()).unwrap();
    b.get(leader).append_idempotent(entries, stamp, true, 0).0
}

#[test]
fn a_batch_is_fetched_whole_past_the_fetch_limit() {
    let (a, bb) = (1, 2);
    let mut b = led_by(a, bb);
    b.produce(a, 5, 0);
    produce_batch(&mut b, a, 10..20, 0).unwrap();
    // A fetch of at most 4 records from offset 0 ends inside the batch: it is
    // extended to the batch's end, never splitting it.
    let req = FetchRequest {
        max_records: 4,
        ..b.fetch_request(bb)
    };
    let resp = b.get(a).fetch_as_leader(&req, 1).0.unwrap();
    assert_eq!(resp.records.len(), 11);
    b.get(bb).apply_fetch_response(resp).0.unwrap();
    // B, elected, holds the batch whole: its retry is a duplicate, nothing lost.
    b.tell(&[a, bb], state(bb, 2, 2, &[bb], &[a, bb]), 2);
    let retry = produce_batch(&mut b, bb, 10..20, 0).unwrap();
    assert_eq!((retry.base_offset, retry.end_offset), (1, 11));
    assert_eq!(b.get(bb).log_end_offset(), 11);
}

#[test]
fn a_batch_torn_by_a_crash_is_cut_when_the_log_opens() {
    let (a, bb) = (1, 2);
    let mut b = led_by(a, bb);
    b.produce(a, 5, 0);
    produce_batch(&mut b, a, 10..12, 0).unwrap();
    produce_batch(&mut b, a, 20..30, 2).unwrap();
    // Restarted with 6 of the second batch's 10 records: they are cut, and its
    // retry is the next batch again, written whole.
    b.restart(a, 9);
    assert_eq!(b.get(a).log_end_offset(), 3);
    b.tell(&[a, bb], state(a, 2, 2, &[a, bb], &[a, bb]), 1);
    let retry = produce_batch(&mut b, a, 20..30, 2).unwrap();
    assert_eq!((retry.base_offset, retry.end_offset), (3, 13));
    assert_eq!(b.get(a).log_end_offset(), 13);
    // A log ending with a whole batch keeps it.
    b.restart(a, 13);
    assert_eq!(b.get(a).log_end_offset(), 13);
}

#[test]
fn a_torn_batch_longer_than_a_read_window_is_cut_whole() {
    let (a, bb) = (1, 2);
    let mut b = led_by(a, bb);
    produce_batch(&mut b, a, 0..9000, 0).unwrap();
    // 8,500 of its 9,000 records survive: the walk back to its start spans
    // windows; the log, this batch alone, is left empty.
    b.restart(a, 8500);
    assert_eq!(b.get(a).log_end_offset(), 0);
    // After another producer's record, the same.
    let mut b = led_by(a, bb);
    b.produce(a, 5, 0);
    produce_batch(&mut b, a, 0..9000, 0).unwrap();
    b.restart(a, 1 + 4097);
    assert_eq!(b.get(a).log_end_offset(), 1);
}

/// Two brokers under epoch truncation, `a` leading epoch 1 with `bb` in its ISR.
fn led_by(a: BrokerId, bb: BrokerId) -> Brokers {
    let mut b = Brokers::new(&[a, bb], Truncation::Epoch);
    b.tell(&[a, bb], state(a, 1, 1, &[a, bb], &[a, bb]), 0);
    b
}

fn produce_idempotent(
    b: &mut Brokers,
    leader: BrokerId,
    value: i64,
    sequence: u32,
) -> Result<Appended, ReplicaError> {
    b.get(leader)
        .append_idempotent(vec![(None, rv!(value))], stamp(sequence), true, 0)
        .0
}

#[test]
fn a_retried_batch_is_answered_with_its_offset_not_appended_again() {
    let (a, bb) = (1, 2);
    let mut b = led_by(a, bb);
    b.produce(a, 5, 0);
    assert_eq!(produce_idempotent(&mut b, a, 10, 0).unwrap().base_offset, 1);
    assert_eq!(produce_idempotent(&mut b, a, 11, 1).unwrap().base_offset, 2);
    let retry = produce_idempotent(&mut b, a, 10, 0).unwrap();
    assert_eq!((retry.base_offset, retry.end_offset), (1, 2));
    assert_eq!(
        b.get(a).log_end_offset(),
        3,
        "nothing appended by the retry"
    );
    assert!(matches!(
        produce_idempotent(&mut b, a, 13, 3),
        Err(ReplicaError::Sequence {
            error: SequenceError::OutOfOrder {
                expected: 2,
                got: 3
            },
            leader_epoch: 1,
        })
    ));
    assert_eq!(b.get(a).log_end_offset(), 3);
}

#[test]
fn a_new_leader_knows_the_batches_replicated_to_it() {
    let (a, bb) = (1, 2);
    let mut b = led_by(a, bb);
    produce_idempotent(&mut b, a, 10, 0).unwrap();
    b.fetch(bb, a, 1);
    // The answer to the producer is lost; leadership moves to B; the retry goes there.
    b.tell(&[a, bb], state(bb, 2, 2, &[a, bb], &[a, bb]), 2);
    let retry = produce_idempotent(&mut b, bb, 10, 0).unwrap();
    assert_eq!(retry.base_offset, 0);
    assert_eq!(b.get(bb).log_end_offset(), 1);
    assert_eq!(
        produce_idempotent(&mut b, bb, 11, 1).unwrap().base_offset,
        1
    );
}

#[test]
fn producer_state_survives_a_restart_and_follows_a_truncation() {
    let (a, bb) = (1, 2);
    let mut b = led_by(a, bb);
    produce_idempotent(&mut b, a, 10, 0).unwrap();
    produce_idempotent(&mut b, a, 11, 1).unwrap();
    // Restarted with its whole log: the state is read back from the records.
    b.restart(a, 2);
    b.tell(&[a, bb], state(a, 2, 2, &[a, bb], &[a, bb]), 1);
    assert_eq!(produce_idempotent(&mut b, a, 11, 1).unwrap().base_offset, 1);
    // Restarted having lost the second record: sequence 1 is the next one again.
    b.restart(a, 1);
    b.tell(&[a, bb], state(a, 3, 3, &[a, bb], &[a, bb]), 2);
    assert_eq!(produce_idempotent(&mut b, a, 11, 1).unwrap().base_offset, 1);
    assert_eq!(b.get(a).log_end_offset(), 2);
}

#[test]
fn a_truncated_follower_forgets_the_batches_it_cut() {
    let (a, bb) = (1, 2);
    let mut b = Brokers::new(&[a, bb], Truncation::Hw);
    b.tell(&[a, bb], state(a, 1, 1, &[a, bb], &[a, bb]), 0);
    produce_idempotent(&mut b, a, 10, 0).unwrap();
    b.fetch(bb, a, 1);
    b.fetch(bb, a, 2); // B's HW covers offset 0
    produce_idempotent(&mut b, a, 11, 1).unwrap();
    b.fetch(bb, a, 3); // B holds offset 1, uncommitted
    // B becomes follower again (new epoch) and, under hw truncation, cuts to its HW.
    b.tell(&[a, bb], state(a, 2, 2, &[a, bb], &[a, bb]), 4);
    assert_eq!(b.get(bb).log_end_offset(), 1);
    // Leading now, B takes sequence 1 as new: its record of it was cut.
    b.tell(&[a, bb], state(bb, 3, 3, &[bb], &[a, bb]), 5);
    let again = b
        .get(bb)
        .append_idempotent(vec![(None, rv!(11))], stamp(1), false, 6)
        .0
        .unwrap();
    assert_eq!(again.base_offset, 1);
}
