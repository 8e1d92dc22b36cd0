//! The node's link to the controller's liveness tracking: a heartbeat every
//! [`HEARTBEAT_INTERVAL`] with this process's broker epoch (the first one registers
//! it; a new epoch tells the controller the broker restarted), and the address other
//! brokers reach it at (a broker the voters were not started with joins so). Each
//! answer carries the controller's full view of this node's partitions and of every
//! other one (UpdateMetadata) and is applied like a LeaderAndIsr push, so a lost push
//! is repaired within one heartbeat, and the node's metadata covers the cluster.

use std::sync::Arc;
use std::time::Duration;

use super::partitions::ReplicaManager;
use crate::events::Api;
use crate::protocol::{Heartbeat, HeartbeatResponse};
use crate::rpc::CallError;

/// How often a node heartbeats (the controller's session timeout is a few of these).
const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(200);
/// How long one heartbeat attempt may take: a paused or cut-off voter must not hold
/// the heartbeats back past a new controller's grace period.
const HEARTBEAT_TIMEOUT: Duration = Duration::from_millis(500);

/// Heartbeat forever.
pub async fn run(manager: Arc<ReplicaManager>) {
    let ctx = manager.ctx();
    let mut failures = 0u32;
    loop {
        match beat(&manager).await {
            Ok(_) => failures = 0,
            Err(e) => {
                if failures % 25 == 0 {
                    eprintln!("node {}: heartbeat: {e}", ctx.id);
                }
                failures += 1;
            }
        }
        tokio::time::sleep(HEARTBEAT_INTERVAL).await;
    }
}

/// One heartbeat: its answer comes from the active controller this node dialed (the
/// one its own voter, if it is one, knows of, else a voter of `--controller-voters`,
/// following `NOT_CONTROLLER` hints), with the cluster's credentials, so it is the
/// one source a controller epoch is learnt from; the answer is applied. Returns the
/// answer's controller epoch.
pub async fn beat(manager: &ReplicaManager) -> Result<i32, CallError> {
    let ctx = manager.ctx();
    // Read afresh each time: a node whose storage failed renews it.
    let hb = Heartbeat {
        broker_id: ctx.id,
        broker_epoch: ctx.broker_epoch(),
        address: Some(ctx.advertised_addr.clone()),
    };
    let resp: HeartbeatResponse = ctx
        .controller_post_within("/internal/heartbeat", &hb, HEARTBEAT_TIMEOUT)
        .await?;
    let epoch = resp.controller_epoch;
    let mut states = resp.partitions;
    states.extend(resp.other_partitions);
    let applied = manager.apply_controller(Api::Heartbeat, epoch, resp.brokers, states);
    if let Err(e) = applied {
        eprintln!("node {}: heartbeat answer ignored: {e}", ctx.id);
    }
    Ok(epoch)
}
