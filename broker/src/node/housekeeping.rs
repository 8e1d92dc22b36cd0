//! The node's timers over its partitions' storage: the log flush policy's clock
//! (`--flush-ms`), the high-watermark checkpoints (Kafka writes them every few
//! seconds), and the clean stop that flushes and checkpoints everything.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::partitions::ReplicaManager;

/// How often the high watermarks are checkpointed (Kafka: 5 s).
const HW_CHECKPOINT_INTERVAL: Duration = Duration::from_millis(500);

/// Run the timers forever.
pub async fn run(manager: Arc<ReplicaManager>) {
    let ctx = manager.ctx();
    let flush_ms = ctx.config.log.flush_ms;
    let tick = Duration::from_millis(flush_ms.unwrap_or(100).clamp(5, 100));
    let mut last_hw = Instant::now();
    loop {
        tokio::time::sleep(tick).await;
        let checkpoint = last_hw.elapsed() >= HW_CHECKPOINT_INTERVAL;
        if checkpoint {
            last_hw = Instant::now();
        }
        for part in manager.all() {
            if flush_ms.is_some() {
                if let Err(e) = part.flush_if_due(Instant::now()) {
                    eprintln!("node {}: {}: flush: {e}", ctx.id, part.name());
                }
            }
            if checkpoint {
                manager.checkpoint(&part);
            }
        }
    }
}

/// A clean stop, as Kafka's controlled shutdown leaves its logs: everything flushed
/// and the checkpoints written, so a restart loses nothing.
pub fn shut_down(manager: &ReplicaManager) {
    let id = manager.ctx().id;
    for part in manager.all() {
        if let Err(e) = part.flush() {
            eprintln!("node {id}: {}: flush: {e}", part.name());
        }
        manager.checkpoint(&part);
    }
}
