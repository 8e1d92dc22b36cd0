//! The node's link to the controller's liveness tracking: a heartbeat every
//! [`HEARTBEAT_INTERVAL`] with this process's broker epoch (the first one registers
//! it; a new epoch tells the controller the broker restarted). Each answer carries the
//! controller's full view of this node's partitions and is applied like a
//! LeaderAndIsr push, so a lost push is repaired within one heartbeat.

use std::sync::Arc;
use std::time::Duration;

use super::partitions::ReplicaManager;
use crate::events::Api;
use crate::protocol::{Heartbeat, HeartbeatResponse};

/// How often a node heartbeats (the controller's session timeout is a few of these).
const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(200);
/// How long one heartbeat attempt may take: a paused or cut-off voter must not hold
/// the heartbeats back past a new controller's grace period.
const HEARTBEAT_TIMEOUT: Duration = Duration::from_millis(500);

/// Heartbeat forever.
pub async fn run(manager: Arc<ReplicaManager>) {
    let ctx = manager.ctx();
    let hb = Heartbeat {
        broker_id: ctx.id,
        broker_epoch: ctx.broker_epoch,
    };
    let mut failures = 0u32;
    loop {
        match ctx
            .controller_post_within::<_, HeartbeatResponse>(
                "/internal/heartbeat",
                &hb,
                HEARTBEAT_TIMEOUT,
            )
            .await
        {
            Ok(resp) => {
                failures = 0;
                let applied = manager.apply_controller(
                    Api::Heartbeat,
                    resp.controller_epoch,
                    resp.brokers,
                    resp.partitions,
                );
                if let Err(e) = applied {
                    eprintln!("node {}: heartbeat answer ignored: {e}", ctx.id);
                }
            }
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
