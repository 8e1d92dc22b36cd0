//! The state machine over the log: commands apply in log order, the same on every
//! voter; snapshots carry the state to another voter and across restarts; the
//! controller epoch follows the terms of the entries.

use openraft::{CommittedLeaderId, Membership};
use tokio::sync::mpsc::UnboundedReceiver;

use super::*;
use crate::controller::state::{Applied, Command, Config};
use crate::error::{ApiError, Code};
use crate::events::{Api, Event, FenceReason};
use crate::protocol::{AlterPartition, CreateTopic, Heartbeat, TopicPartition};

/// Voter 1's state machine, and where the effects of its own entries go.
fn machine(dir: &Path) -> (StateMachine, UnboundedReceiver<(i32, Effects)>) {
    let config = Config {
        session_timeout_ms: 1000,
        unclean_election: false,
        leader_imbalance_check_interval_ms: 0,
        bugs: crate::bugs::Bugs::default(),
    };
    let state = ControllerState::new(config, &[1, 2, 3]);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    (
        StateMachine::open(
            dir,
            1,
            Arc::new(Mutex::new(state)),
            tx,
            &DiskFaults::default(),
        )
        .unwrap(),
        rx,
    )
}

fn entry_of(
    leader: u64,
    term: u64,
    index: u64,
    payload: EntryPayload<TypeConfig>,
) -> Entry<TypeConfig> {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(term, leader), index),
        payload,
    }
}

fn entry(term: u64, index: u64, payload: EntryPayload<TypeConfig>) -> Entry<TypeConfig> {
    entry_of(1, term, index, payload)
}

fn shrink(partition_epoch: i32) -> Command {
    Command::AlterPartition(AlterPartition {
        broker_id: 1,
        broker_epoch: 11,
        topic: "q".into(),
        partition: 0,
        leader_epoch: 0,
        partition_epoch,
        new_isr: vec![1, 2],
        new_isr_epochs: Vec::new(),
    })
}

/// Three brokers register and a topic is created in term 1; in term 2 the leader
/// shrinks the ISR, then sends the same proposal again (a retry).
fn log() -> Vec<Entry<TypeConfig>> {
    let members = Membership::new(vec![[1u64, 2, 3].into()], ());
    let mut entries = vec![
        entry(1, 0, EntryPayload::Membership(members)),
        entry(1, 1, EntryPayload::Blank),
    ];
    for id in 1..=3 {
        let hb = Heartbeat {
            broker_id: id,
            broker_epoch: 10 + id as u64,
            address: None,
        };
        entries.push(entry(
            1,
            1 + id as u64,
            EntryPayload::Normal(Command::Heartbeat(hb)),
        ));
    }
    let topic = CreateTopic {
        name: "q".into(),
        partitions: 1,
        replication_factor: 3,
        min_insync_replicas: 2,
    };
    entries.push(entry(
        1,
        5,
        EntryPayload::Normal(Command::CreateTopic(topic)),
    ));
    entries.push(entry(2, 6, EntryPayload::Blank));
    entries.push(entry(2, 7, EntryPayload::Normal(shrink(0))));
    entries.push(entry(2, 8, EntryPayload::Normal(shrink(0))));
    entries
}

fn outcome(reply: &Reply) -> Result<Applied, ApiError> {
    match reply.outcome.clone().expect("a command's reply") {
        Ok(a) => Ok(a),
        Err(body) => Err(ApiError::from_body(&body).expect("an error body")),
    }
}

#[tokio::test]
async fn commands_apply_in_log_order_to_the_same_state_on_every_voter() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let ((mut one, mut announced), (mut other, _)) = (machine(d1.path()), machine(d2.path()));
    let replies = one.apply(log()).await.unwrap();
    // The other voter gets the same entries in several batches.
    let mut other_replies = Vec::new();
    for e in log() {
        other_replies.extend(other.apply(vec![e]).await.unwrap());
    }
    assert_eq!(replies, other_replies);
    assert_eq!(one.lock().durable(), other.lock().durable());

    let Applied::Partition(p) = outcome(&replies[7]).unwrap() else {
        panic!("{:?}", replies[7]);
    };
    assert_eq!((p.isr.clone(), p.partition_epoch), (vec![1, 2], 1));
    // The retry was current when sent but is stale at its place in the log.
    let err = outcome(&replies[8]).unwrap_err();
    assert_eq!(err.code, Code::FencedLeaderEpoch, "{err}");
    // Voter 1 led both terms: the effects of its entries are announced in log order
    // (registrations, the creation, the shrink; for the fenced retry, only its event
    // line: nothing to push or log).
    let mut effects = Vec::new();
    while let Ok(e) = announced.try_recv() {
        effects.push(e);
    }
    assert_eq!(effects.len(), 6, "{effects:?}");
    assert_eq!(effects[4].0, 2);
    assert_eq!(effects[4].1.pushes[&3], vec![p]);
    let fenced = &effects[5].1;
    assert!(fenced.pushes.is_empty() && fenced.events.is_empty() && !fenced.dirty);
    assert_eq!(
        fenced.transitions,
        [Event::fenced(
            Api::AlterPartition,
            FenceReason::StalePartitionEpoch,
            &TopicPartition {
                topic: "q".into(),
                partition: 0
            }
        )]
    );
    assert_eq!(one.lock().controller_epoch(), 2);
    let (applied, membership) = one.applied_state().await.unwrap();
    assert_eq!(applied, Some(log()[8].log_id));
    assert_eq!(membership.voter_ids().collect::<Vec<_>>(), vec![1, 2, 3]);
}

#[tokio::test]
async fn the_same_commands_in_another_order_decide_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let (mut sm, _) = machine(dir.path());
    let mut entries = log();
    // The topic does not exist yet when the first proposal applies: refused, not
    // queued; the retry, now the first after the creation, is the one accepted.
    entries.swap(5, 7);
    let replies = sm.apply(entries).await.unwrap();
    assert_eq!(
        outcome(&replies[5]).unwrap_err().code,
        Code::UnknownTopicOrPartition
    );
    assert!(outcome(&replies[8]).is_ok());
    assert_eq!(sm.lock().partition("q", 0).unwrap().partition_epoch, 1);
}

#[tokio::test]
async fn a_snapshot_restores_the_state_on_another_voter_and_after_a_restart() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut sm, _) = machine(d1.path());
    sm.apply(log()).await.unwrap();
    let snapshot = sm
        .get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();
    assert_eq!(snapshot.meta.last_log_id, Some(log()[8].log_id));

    let (mut other, _) = machine(d2.path());
    other
        .install_snapshot(&snapshot.meta, snapshot.snapshot.clone())
        .await
        .unwrap();
    assert_eq!(other.lock().durable(), sm.lock().durable());
    assert_eq!(
        other.applied_state().await.unwrap(),
        sm.applied_state().await.unwrap()
    );

    // A restarted voter starts from its snapshot file.
    let (mut restarted, _) = machine(d1.path());
    assert_eq!(restarted.lock().durable(), sm.lock().durable());
    assert_eq!(restarted.lock().controller_epoch(), 2);
    assert_eq!(
        restarted.applied_state().await.unwrap().0,
        Some(log()[8].log_id)
    );
    let current = restarted.get_current_snapshot().await.unwrap().unwrap();
    assert_eq!(current.meta, snapshot.meta);
}

#[tokio::test]
async fn the_controller_epoch_is_the_latest_term_applied() {
    let dir = tempfile::tempdir().unwrap();
    let (mut sm, mut announced) = machine(dir.path());
    sm.apply(vec![entry(4, 0, EntryPayload::Blank)])
        .await
        .unwrap();
    let hb = Heartbeat {
        broker_id: 2,
        broker_epoch: 5,
        address: None,
    };
    // Voter 2 led term 4: its entry's effects are not voter 1's to carry out.
    let replies = sm
        .apply(vec![entry_of(
            2,
            4,
            1,
            EntryPayload::Normal(Command::Heartbeat(hb)),
        )])
        .await
        .unwrap();
    assert!(announced.try_recv().is_err());
    let Applied::Heartbeat(resp) = outcome(&replies[0]).unwrap() else {
        panic!("{replies:?}");
    };
    assert_eq!(resp.controller_epoch, 4);
}

#[test]
fn a_corrupt_snapshot_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(SNAPSHOT_FILE), b"{\"meta\":").unwrap();
    let config = Config {
        session_timeout_ms: 1000,
        unclean_election: false,
        leader_imbalance_check_interval_ms: 0,
        bugs: crate::bugs::Bugs::default(),
    };
    let state = Arc::new(Mutex::new(ControllerState::new(config, &[1, 2, 3])));
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let err = StateMachine::open(dir.path(), 1, state, tx, &DiskFaults::default())
        .err()
        .expect("corrupt");
    assert!(err.contains(SNAPSHOT_FILE), "{err}");
}

/// Every damage to the snapshot file while the voter is down refuses the start,
/// naming the file: a flipped digit used to read back as other metadata (another
/// leader epoch, ISR or broker), which this voter would then have served and voted
/// with.
#[tokio::test]
async fn every_damage_to_the_snapshot_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let (mut sm, _) = machine(dir.path());
    sm.apply(log()).await.unwrap();
    let whole = sm.lock().durable();
    sm.get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();
    let path = dir.path().join(SNAPSHOT_FILE);
    let bytes = std::fs::read(&path).unwrap();
    let mut cases = 0;
    for damage in crate::damage::sweep(bytes.len()) {
        if damage.first_change(&bytes).is_none() {
            continue;
        }
        std::fs::write(&path, damage.apply(&bytes)).unwrap();
        let state = Arc::new(Mutex::new(ControllerState::new(
            Config {
                session_timeout_ms: 1000,
                unclean_election: false,
                leader_imbalance_check_interval_ms: 0,
                bugs: crate::bugs::Bugs::default(),
            },
            &[1, 2, 3],
        )));
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        match StateMachine::open(dir.path(), 1, state.clone(), tx, &DiskFaults::default()) {
            Ok(_) => panic!(
                "{damage:?}: opened, the state {}",
                match state.lock().unwrap().durable() == whole {
                    true => "unchanged",
                    false => "changed",
                }
            ),
            Err(e) => assert!(e.contains(&path.display().to_string()), "{damage:?}: {e}"),
        }
        cases += 1;
    }
    assert!(cases > 1000, "{cases}");
}
