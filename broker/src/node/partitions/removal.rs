//! StopReplica with deletion: a partition state newer than the replica's own that
//! no longer names this broker among the replicas (a reassignment completed or was
//! cancelled without it) stops the replica and deletes its directory.
//!
//! The replica applies the state like any other (it becomes offline: its fetch task
//! stops, its waiting `acks=all` writes answer that leadership was lost), then it
//! leaves the hosted partitions and its directory is renamed aside and deleted, all
//! under the partitions' lock, so a later state naming this broker again opens a
//! fresh replica (which catches up from the leader like any new one). A directory
//! this node does not host (it was removed while this process was down) is renamed
//! `<topic>-<partition>.stray-<ns>` and left for the operator, as Kafka marks stray
//! logs: nothing is opened from it again.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use super::{Partition, ReplicaManager};
use crate::events::Event;
use crate::protocol::{PartitionState, TopicPartition};
use crate::replica::{Effects, Transition};

impl ReplicaManager {
    /// `state` does not name this broker: stop and delete its replica, if it hosts
    /// one older than `state`; else, if `state` is news to this node (`fresh`: the
    /// first it hears of the partition since it started, or a change), set a stray
    /// directory of it aside. Every heartbeat answer names every partition: the
    /// ones this node neither hosts nor hears news of cost a lookup.
    pub(super) fn stop_replica(&self, state: PartitionState, fresh: bool) {
        let tp = TopicPartition {
            topic: state.topic.clone(),
            partition: state.partition,
        };
        if self.get(&tp).is_none() {
            if fresh {
                self.set_stray_aside(&tp);
            }
            return;
        }
        let ctx = self.ctx();
        let mut map = self.partitions.write().unwrap_or_else(|p| p.into_inner());
        let Some(part) = map.get(&tp).cloned() else {
            return;
        };
        let (truncation, now) = (ctx.config.truncation, ctx.now_ms());
        let stopped = self.update(&part, |r| {
            if part.removed.load(Ordering::SeqCst) {
                return (None, Effects::default());
            }
            let (t, fx) = r.apply_state(state, truncation, now);
            if t == Transition::Ignored {
                return (None, fx);
            }
            part.removed.store(true, Ordering::SeqCst);
            (Some((r.leader_epoch(), r.log_end_offset())), fx)
        });
        let Some((leader_epoch, leo)) = stopped else {
            return;
        };
        map.remove(&tp);
        let aside = rename_aside(&part.dir, "deleted");
        drop(map);
        match aside.and_then(|d| std::fs::remove_dir_all(&d).map(|()| d)) {
            Ok(_) => eprintln!(
                "node {}: {}: no longer a replica (leader epoch {leader_epoch}): stopped, \
                 directory deleted (LEO was {leo})",
                ctx.id,
                part.name()
            ),
            Err(e) => eprintln!(
                "node {}: {}: no longer a replica: stopped, but deleting {} failed: {e}",
                ctx.id,
                part.name(),
                part.dir.display()
            ),
        }
        self.emit(&Event::ReplicaDeleted {
            topic: tp.topic,
            partition: tp.partition,
            leader_epoch,
            leo,
        });
    }

    /// A directory of a partition this node does not host nor replicate any more
    /// (removed while it was down): renamed aside, never opened again.
    fn set_stray_aside(&self, tp: &TopicPartition) {
        let dir = Partition::dir_in(&self.ctx().config.data_dir, tp);
        if !dir.is_dir() {
            return;
        }
        // Under the partitions' lock, as opening is: a newer state naming this node,
        // applied meanwhile, opens the directory instead.
        let map = self.partitions.write().unwrap_or_else(|p| p.into_inner());
        let named = {
            let v = self.view.lock().unwrap_or_else(|p| p.into_inner());
            v.partitions
                .get(tp)
                .is_some_and(|s| s.replicas.contains(&self.ctx().id))
        };
        if map.contains_key(tp) || named {
            return;
        }
        let renamed = rename_aside(&dir, "stray");
        drop(map);
        match renamed {
            Ok(to) => eprintln!(
                "node {}: {}-{}: not a replica any more; its directory is stray, renamed {}",
                self.ctx().id,
                tp.topic,
                tp.partition,
                to.display()
            ),
            Err(e) => eprintln!(
                "node {}: {}-{}: cannot set the stray directory {} aside: {e}",
                self.ctx().id,
                tp.topic,
                tp.partition,
                dir.display()
            ),
        }
    }
}

/// Rename `dir` to `dir.<what>-<unix ns>` beside it.
fn rename_aside(dir: &Path, what: &str) -> std::io::Result<PathBuf> {
    let ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{what}-{ns}"));
    let to = dir.with_file_name(name);
    std::fs::rename(dir, &to)?;
    Ok(to)
}
