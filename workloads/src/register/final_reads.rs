//! The final reads: once the cluster has healed and converged, every key the run
//! wrote is read once more, as the clients read (linearizably when they do), each
//! a `read` whose value says `"final": true` and the key's partition.
//!
//! Why: a register's checker sees a lost write only if someone reads the key after
//! it — a key's last write, lost, goes unseen unless the run reads the key again.
//! The final reads are those reads, for every key. And a healed, converged cluster
//! has no excuse not to answer them: a partition none of whose final reads was
//! answered is judged `unavailable` by the harness (a broker that makes every
//! linearizable read wait, or refuses it, loses nothing and misreads nothing —
//! no safety check sees it).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use checker::history::EventType;
use serde_json::json;

use super::{RegisterConfig, TOPIC, partition_for_key};
use crate::client::{Client, Outcome};
use crate::recorder::Recorder;
use crate::workload::all_done;

/// The field of a read's value that marks it final.
pub const FINAL_FIELD: &str = "final";

/// How long the final reads keep retrying one partition that answers none of them
/// before giving it up: a healed cluster answers at once, so this is many tries
/// (each bounded by the client's request timeout), and a partition that never
/// answers must not take the whole deadline from the others.
pub const PARTITION_STALL: Duration = Duration::from_secs(10);

/// How many process numbers the final reads of a topic of `partitions` take from
/// the first they are given: one per partition (a final read never ends in doubt,
/// so a process needs no successor).
pub fn processes(partitions: u32) -> u64 {
    u64::from(partitions.max(1))
}

/// The pause before a refused final read is tried again.
const RETRY_PAUSE: Duration = Duration::from_millis(200);

/// The keys the run's writes and compare-and-sets went to, shared by the workers
/// that write them and the final step that reads them.
#[derive(Debug, Clone, Default)]
pub struct Written(Arc<Mutex<BTreeSet<String>>>);

impl Written {
    /// Note that a write or compare-and-set went to `key` (whatever its outcome:
    /// one in doubt may have taken effect).
    pub fn insert(&self, key: &str) {
        let mut keys = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !keys.contains(key) {
            keys.insert(key.to_string());
        }
    }

    /// Every key written, by the partition it lives in among `partitions`.
    pub fn by_partition(&self, partitions: u32) -> BTreeMap<u32, Vec<String>> {
        let keys = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut by = BTreeMap::<u32, Vec<String>>::new();
        for k in keys.iter() {
            by.entry(partition_for_key(k, partitions))
                .or_default()
                .push(k.clone());
        }
        by
    }
}

/// Read every written key once more, each partition's keys in turn by process
/// `first_process + partition` (a read without an answer is recorded `fail`, as
/// the workers record theirs, so a process never ends in doubt), the partitions at
/// once, until `deadline`. A refused read is tried again after a pause; a partition
/// that answers nothing for [`PARTITION_STALL`] is given up. Err names every
/// partition whose keys were not all read.
pub async fn final_reads(
    config: &RegisterConfig,
    recorder: &dyn Recorder,
    first_process: u64,
    deadline: Instant,
) -> Result<(), String> {
    let partitions = config.written.by_partition(config.partitions);
    let reads = partitions.into_iter().map(|(partition, keys)| {
        let process = first_process + u64::from(partition);
        read_partition(config, recorder, process, partition, keys, deadline)
    });
    all_done(futures_util::future::join_all(reads).await)
}

/// The final reads of one partition's keys.
async fn read_partition(
    config: &RegisterConfig,
    recorder: &dyn Recorder,
    process: u64,
    partition: u32,
    keys: Vec<String>,
    deadline: Instant,
) -> Result<(), String> {
    let mut client = Client::new(config.client.clone(), config.seed ^ process)?;
    let total = keys.len();
    let mut answered = Instant::now();
    for (done, key) in keys.iter().enumerate() {
        loop {
            let unread = |why: String| {
                format!(
                    "the final reads of {TOPIC}-{partition} {why} ({done} of its {total} keys read)"
                )
            };
            if Instant::now() >= deadline {
                return Err(unread("did not finish in time".to_string()));
            }
            if answered.elapsed() >= PARTITION_STALL {
                return Err(unread(format!(
                    "got no answer for {PARTITION_STALL:?}; they moved on"
                )));
            }
            let invoke = json!({"key": key, "partition": partition, FINAL_FIELD: true});
            recorder.record(process, EventType::Invoke, "read", invoke.clone(), None);
            match client
                .read_key(TOPIC, partition, key, config.linearizable_reads)
                .await
            {
                Outcome::Ok(read) => {
                    let value = json!({
                        "key": key, "value": read.value, "partition": partition, FINAL_FIELD: true
                    });
                    recorder.record(process, EventType::Ok, "read", value, None);
                    answered = Instant::now();
                    break;
                }
                Outcome::Fail(e) | Outcome::Info(e) => {
                    recorder.record(process, EventType::Fail, "read", invoke, Some(e.message));
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_keys_are_kept_once_and_grouped_by_their_partition() {
        let w = Written::default();
        for k in ["k1", "k2", "k1", "k3", "k2"] {
            w.clone().insert(k);
        }
        let by = w.by_partition(3);
        let all: BTreeSet<&String> = by.values().flatten().collect();
        assert_eq!(all.len(), 3);
        for (p, keys) in &by {
            assert!(keys.iter().all(|k| partition_for_key(k, 3) == *p));
        }
        assert_eq!(w.by_partition(1).len(), 1);
    }
}
