//! The node's timers over its partitions' storage: the log flush policy's clock
//! (`--flush-ms`), the high-watermark checkpoints (Kafka writes them every few
//! seconds), the storage failures that last (the node leaves every ISR), and the
//! clean stop that flushes and checkpoints everything.

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
        let mut overdue = Vec::new();
        for part in manager.all() {
            if flush_ms.is_some() {
                if let Err(e) = part.flush_if_due(Instant::now()) {
                    manager.storage_error(&part, "flush", &e);
                }
            }
            // A failing partition is checkpointed every tick: the first write that
            // works ends its streak.
            if checkpoint || part.log_dir.failing().is_some() {
                manager.checkpoint(&part);
            }
            let timeout = ctx.config.storage_failure_timeout_ms;
            if let Some(f) = part.log_dir.take_overdue(ctx.now_ms(), timeout) {
                overdue.push(format!("{} ({})", part.name(), f.error));
            }
        }
        if !overdue.is_empty() {
            leave_every_isr(&manager, &overdue);
        }
    }
}

/// Storage has failed for longer than `--storage-failure-timeout-ms` on the
/// `failing` partitions: what this node holds in memory may not be on its disk, so it
/// presents a new broker epoch, as a restarted process would. The controller then
/// takes it out of every ISR and elects other leaders for its partitions (Kafka moves
/// leadership off a broker whose log dir went offline); it follows them, and rejoins
/// the ISRs once its disk takes writes again and it has caught up.
fn leave_every_isr(manager: &ReplicaManager, failing: &[String]) {
    let ctx = manager.ctx();
    let old = ctx.broker_epoch();
    let new = ctx.renew_broker_epoch();
    eprintln!(
        "node {}: storage failing for more than {} ms on {}: leaving every ISR \
         (broker epoch {old} -> {new}, as after a restart)",
        ctx.id,
        ctx.config.storage_failure_timeout_ms,
        failing.join(", ")
    );
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
