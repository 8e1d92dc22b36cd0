//! The controller's admin tasks step by step on the pure state: new partitions
//! (CreatePartitions) and brokers joining by heartbeat.

use super::tests::{cluster, config, create, part};
use super::*;
use crate::protocol::{CreatePartitions, Heartbeat};

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
    let fx = join(&mut s, 4, "127.0.0.1:9004").unwrap();
    assert!(fx.dirty);
    assert!(
        fx.events[0].contains("broker 4: joins the cluster at 127.0.0.1:9004"),
        "{:?}",
        fx.events
    );
    let b = info(&s, 4);
    assert_eq!(
        (b.alive, b.address.as_deref()),
        (true, Some("127.0.0.1:9004"))
    );
    assert!(s.broker(4).unwrap().joined && !s.broker(1).unwrap().joined);
    // It takes replicas: new topics are placed on it too.
    create(&mut s, "q", 1, 4, 1);
    assert_eq!(part(&s, "q", 0).replicas, [1, 2, 3, 4]);
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
