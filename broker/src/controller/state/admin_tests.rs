//! The controller's other admin tasks step by step on the pure state: new
//! partitions (CreatePartitions), brokers joining by heartbeat, and decommission.

use super::tests::{alter, beat, cluster, config, create, kill, part};
use super::*;
use crate::protocol::{AlterReassignment, CreatePartitions, Heartbeat};

fn grow(
    s: &mut ControllerState,
    topic: &str,
    count: u32,
) -> Result<(TopicMetadata, Effects), ApiError> {
    s.create_partitions(&CreatePartitions {
        topic: topic.into(),
        count,
    })
}

/// Broker `id` heartbeats from `address`, as a broker started with `--peers` of the
/// others would: it joins if the controller does not know it.
fn join(s: &mut ControllerState, id: BrokerId, address: &str) -> Result<Effects, ApiError> {
    let hb = Heartbeat {
        broker_id: id,
        broker_epoch: 100 + id as u64,
        address: Some(address.into()),
    };
    s.heartbeat(&hb, 0).map(|(_, fx)| fx)
}

/// Every partition's leader proposes every replica of its AR into the ISR (they all
/// caught up), so reassignments in progress complete.
fn all_caught_up(s: &mut ControllerState) {
    let moving: Vec<PartitionState> = s
        .partitions
        .values()
        .filter(|p| p.reassigning())
        .cloned()
        .collect();
    for p in moving {
        alter(s, p.leader, &p, &p.replicas).expect("expansion accepted");
    }
}

fn info(s: &ControllerState, id: BrokerId) -> BrokerInfo {
    s.brokers_info()
        .into_iter()
        .find(|b| b.id == id)
        .expect("a broker")
}

#[test]
fn new_partitions_are_placed_as_topic_creation_places_them() {
    let mut s = cluster(4, false);
    create(&mut s, "first", 1, 1, 1);
    create(&mut s, "q", 1, 2, 2);
    let (meta, fx) = grow(&mut s, "q", 3).unwrap();
    assert_eq!(meta.partitions.len(), 3);
    // The same as a topic created with three partitions second.
    let mut t = cluster(4, false);
    create(&mut t, "first", 1, 1, 1);
    create(&mut t, "q", 3, 2, 2);
    for p in 0..3 {
        assert_eq!(part(&s, "q", p), part(&t, "q", p), "q-{p}");
    }
    assert_eq!(part(&s, "q", 2).replicas, [4, 1]);
    assert_eq!(part(&s, "q", 2).min_insync_replicas, 2);
    // Each new replica is told (so its broker opens the partition); q-0's are not.
    assert!(fx.dirty);
    assert_eq!(
        fx.pushes[&4]
            .iter()
            .map(|p| p.partition)
            .collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(
        fx.pushes[&3]
            .iter()
            .map(|p| p.partition)
            .collect::<Vec<_>>(),
        [1]
    );
    assert!(!fx.pushes.contains_key(&2));
}

#[test]
fn a_partition_count_that_does_not_grow_the_topic_is_refused() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 2, 3, 2);
    for count in [0, 1, 2] {
        let err = grow(&mut s, "q", count).unwrap_err();
        assert_eq!(err.code, Code::InvalidPartitions, "{count}: {err}");
        assert!(err.message.contains("has 2 partitions"), "{err}");
    }
    assert_eq!(
        grow(&mut s, "nope", 3).unwrap_err().code,
        Code::UnknownTopicOrPartition
    );
    assert_eq!(
        s.metadata().topics[0].partitions.len(),
        2,
        "nothing changed"
    );
}

#[test]
fn an_unknown_broker_joins_with_its_address_and_then_takes_replicas() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 2, 1);
    let fx = join(&mut s, 4, "127.0.0.1:9004").unwrap();
    assert!(fx.dirty);
    assert!(
        fx.events[0].contains("broker 4: joins the cluster at 127.0.0.1:9004"),
        "{:?}",
        fx.events
    );
    let b = info(&s, 4);
    assert_eq!(
        (b.alive, b.address.as_deref(), b.status),
        (true, Some("127.0.0.1:9004"), BrokerStatus::Active)
    );
    assert!(s.broker(4).unwrap().joined && !s.broker(1).unwrap().joined);
    // It takes replicas: a reassignment may add it, new partitions may be put on it.
    let (p, _) = s
        .alter_reassignment(&AlterReassignment {
            topic: "q".into(),
            partition: 0,
            replicas: Some(vec![1, 4]),
        })
        .unwrap();
    assert_eq!(p.adding, [4]);
    let (meta, _) = grow(&mut s, "q", 4).unwrap();
    assert!(
        meta.partitions.iter().any(|p| p.replicas.contains(&4)),
        "{meta:?}"
    );
    // A heartbeat from a new address is a change; the same one again is not.
    assert!(join(&mut s, 4, "127.0.0.1:9104").unwrap().dirty);
    assert_eq!(info(&s, 4).address.as_deref(), Some("127.0.0.1:9104"));
    assert!(!join(&mut s, 4, "127.0.0.1:9104").unwrap().dirty);
}

#[test]
fn an_unknown_broker_without_an_address_cannot_join() {
    let mut s = cluster(3, false);
    let hb = Heartbeat {
        broker_id: 4,
        broker_epoch: 1,
        address: None,
    };
    let err = s.heartbeat(&hb, 0).unwrap_err();
    assert_eq!(err.code, Code::InvalidRequest);
    assert!(err.message.contains("no address to join with"), "{err}");
    assert!(s.broker(4).is_none());
}

#[test]
fn a_snapshot_with_joined_brokers_restores_on_voters_started_without_them() {
    let mut s = cluster(3, false);
    join(&mut s, 4, "127.0.0.1:9004").unwrap();
    let (restored, _) = start(config(false), &[1, 2, 3], s.durable(), 0).unwrap();
    assert_eq!(
        info(&restored, 4).address.as_deref(),
        Some("127.0.0.1:9004")
    );
    assert_eq!(restored.configured, [1, 2, 3]);
    // A configured broker missing, or one the voters were not started with that did
    // not join, is still refused.
    assert!(start(config(false), &[1, 2, 3, 5], s.durable(), 0).is_err());
    let mut durable = s.durable();
    durable.brokers.get_mut(&4).unwrap().joined = false;
    let err = start(config(false), &[1, 2, 3], durable, 0).unwrap_err();
    assert!(err.contains("[1, 2, 3, 4]"), "{err}");
}

#[test]
fn decommission_moves_every_replica_to_the_least_loaded_brokers_then_marks_it_done() {
    let mut s = cluster(4, false);
    create(&mut s, "q", 2, 2, 1);
    assert_eq!(
        (part(&s, "q", 0).replicas, part(&s, "q", 1).replicas),
        (vec![1, 2], vec![2, 3])
    );
    let (b, fx) = s.decommission(2).unwrap();
    assert_eq!(b.status, BrokerStatus::Decommissioning);
    // 4 holds nothing and takes q-0's replica of 2; then 1 and 4 hold one each and
    // q-1 (on 2, 3) takes the lowest id of them, 1.
    assert_eq!(
        (part(&s, "q", 0).target(), part(&s, "q", 0).removing.clone()),
        (vec![1, 4], vec![2])
    );
    assert_eq!(
        (part(&s, "q", 1).target(), part(&s, "q", 1).removing.clone()),
        (vec![1, 3], vec![2])
    );
    assert!(
        fx.events.iter().any(|e| e.contains("decommissioning")),
        "{:?}",
        fx.events
    );
    // Nothing new goes to it meanwhile.
    let err = s
        .alter_reassignment(&AlterReassignment {
            topic: "q".into(),
            partition: 0,
            replicas: Some(vec![1, 2, 4]),
        })
        .unwrap_err();
    assert_eq!(err.code, Code::ReassignmentInProgress);
    all_caught_up(&mut s);
    // It leads nothing and hosts nothing: decommissioned, left out of placement.
    assert!(
        s.partitions
            .values()
            .all(|p| !p.replicas.contains(&2) && p.leader != 2)
    );
    assert_eq!(info(&s, 2).status, BrokerStatus::Decommissioned);
    assert_eq!(s.placement(), [1, 3, 4]);
    create(&mut s, "r", 3, 3, 1);
    assert!(s.partitions.values().all(|p| !p.replicas.contains(&2)));
    // Asking again answers the same; a reassignment may not name it.
    assert_eq!(
        s.decommission(2).unwrap().0.status,
        BrokerStatus::Decommissioned
    );
    let err = s
        .alter_reassignment(&AlterReassignment {
            topic: "q".into(),
            partition: 0,
            replicas: Some(vec![1, 2]),
        })
        .unwrap_err();
    assert!(err.message.contains("broker 2 is decommissioned"), "{err}");
}

#[test]
fn decommission_is_refused_whole_when_a_replica_has_nowhere_to_go() {
    let mut s = cluster(3, false);
    create(&mut s, "q", 1, 3, 2);
    let err = s.decommission(3).unwrap_err();
    assert!(
        err.message.contains("no live broker outside [1, 2, 3]"),
        "{err}"
    );
    assert_eq!(info(&s, 3).status, BrokerStatus::Active);
    assert!(!part(&s, "q", 0).reassigning());
    // A dead broker takes nothing either.
    let mut s = cluster(4, false);
    create(&mut s, "q", 1, 3, 2);
    kill(&mut s, 4, &[], 0);
    assert!(s.decommission(1).is_err());
    beat(&mut s, 4, 999, 5000);
    assert_eq!(
        s.decommission(1).unwrap().0.status,
        BrokerStatus::Decommissioning
    );
    assert!(s.decommission(99).is_err());
}
