//! The partitions a failure was seen on: a queue anomaly names its partition, a
//! register anomaly its key, which lives in the partition `crc32c(key) mod
//! partitions`. The search tries alone the pattern a failure points at; the last
//! pattern to start before the witness is a poor pointer when the failure was first
//! witnessed after the schedule's last fault (the final reads of a register whose
//! records a failover lost a minute earlier): any pattern that came last would do.
//! The last one aimed at a partition the failure was seen on is a better one.

use std::path::Path;

use checker::verdict::Results;

use crate::commands::campaign_process::read_results;

/// The (topic, partition)s the anomalies of `kinds` in `results` were seen on, for
/// topics of `partitions` partitions; none for anomalies that name neither (a
/// Maelstrom system's).
pub fn failed_on(results: &Results, kinds: &[String], partitions: u32) -> Vec<(String, u32)> {
    let mut on: Vec<(String, u32)> = results
        .checkers
        .values()
        .flat_map(|c| &c.anomalies)
        .filter(|a| kinds.contains(&a.kind.to_string()))
        .filter_map(|a| match (&a.partition, &a.key) {
            (Some(p), _) => Some((workloads::queue::TOPIC.to_string(), u32::try_from(*p).ok()?)),
            (None, Some(key)) => {
                let key = key.as_str()?;
                let p = workloads::register::partition_for_key(key, partitions);
                Some((workloads::register::TOPIC.to_string(), p))
            }
            (None, None) => None,
        })
        .collect();
    on.sort();
    on.dedup();
    on
}

/// [`failed_on`] of the run in `run_dir` (none when its results cannot be read).
pub fn read(run_dir: &Path, kinds: &[String], partitions: u32) -> Vec<(String, u32)> {
    read_results(run_dir).map_or_else(Vec::new, |r| failed_on(&r, kinds, partitions))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_anomalies_name_their_partition_and_register_ones_their_keys_partition() {
        let results: Results = serde_json::from_value(serde_json::json!({
            "valid": false,
            "checkers": {
                "queue": {"valid": false, "anomalies": [
                    {"kind": "lost-write", "partition": 1, "message": "lost"},
                    {"kind": "duplicate", "partition": 0, "message": "twice"}
                ]},
                "linearizable": {"valid": false, "anomalies": [
                    {"kind": "nonlinearizable", "key": "k1", "message": "read → nil"}
                ]}
            }
        }))
        .unwrap();
        let kinds = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let k1 = workloads::register::partition_for_key("k1", 2);
        assert_eq!(
            failed_on(&results, &kinds(&["lost-write", "nonlinearizable"]), 2),
            vec![("queue".to_string(), 1), ("register".to_string(), k1)]
        );
        // Only the kinds being shrunk count.
        assert_eq!(
            failed_on(&results, &kinds(&["duplicate"]), 2),
            vec![("queue".to_string(), 0)]
        );
    }
}
