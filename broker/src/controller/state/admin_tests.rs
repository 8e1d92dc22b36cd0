//! The controller's admin tasks step by step on the pure state: brokers joining by
//! heartbeat.

use super::tests::{cluster, config, create, part};
use super::*;
use crate::protocol::Heartbeat;

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
