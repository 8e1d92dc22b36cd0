//! replica-divergence: two replicas of a partition hold different records at an
//! offset both hold below both their high watermarks. It is a property of the logs
//! alone, whatever the topic holds: the queue analysis judges the queue topic's
//! replicas with it, and [`replica_divergence`] any topic's — a register topic's,
//! whose records the queue analysis does not read.
//!
//! A replica that merely lags (a shorter log, a lower high watermark) does not
//! diverge; after KIP-101's divergence both replicas have committed their own,
//! different, records. One anomaly per partition, naming the first such offset.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::final_log::ReplicaLog;
use crate::verdict::{Anomaly, AnomalyKind};

/// How the records of the replicas are compared and shown: `values[i][j]` is
/// replica `i`'s `j`-th record (as [`ReplicaLog::records`] holds them), `show`
/// writes one for the message, `export` gives it for the anomaly's `values`.
pub(super) struct Compared<'a, V> {
    pub replicas: &'a [ReplicaLog],
    pub values: &'a [Vec<V>],
    pub show: &'a dyn Fn(V) -> String,
    pub export: &'a dyn Fn(V) -> Value,
}

/// The divergence of the replicas of each partition (see the module doc).
pub(super) fn diverged<V: Copy + PartialEq>(c: &Compared<'_, V>) -> Vec<Anomaly> {
    let mut by_partition: BTreeMap<(&str, i64), Vec<usize>> = BTreeMap::new();
    for (i, r) in c.replicas.iter().enumerate() {
        by_partition
            .entry((&r.topic, r.partition))
            .or_default()
            .push(i);
    }
    let mut anomalies = Vec::new();
    for ((topic, p), ids) in by_partition {
        let rs: Vec<&ReplicaLog> = ids.iter().map(|&i| &c.replicas[i]).collect();
        let maps: Vec<BTreeMap<i64, V>> = ids
            .iter()
            .map(|&i| {
                let r = &c.replicas[i];
                r.records
                    .iter()
                    .zip(&c.values[i])
                    .map(|((o, _), v)| (*o, *v))
                    .collect()
            })
            .collect();
        let mut offsets = BTreeSet::new();
        let mut first: Option<(i64, String, Vec<Value>)> = None;
        for i in 0..rs.len() {
            for j in i + 1..rs.len() {
                let below = rs[i].high_watermark.min(rs[j].high_watermark);
                for (o, x) in maps[i].range(..below) {
                    let Some(y) = maps[j].get(o) else { continue };
                    if x == y {
                        continue;
                    }
                    offsets.insert(*o);
                    if first.as_ref().is_none_or(|(f, _, _)| o < f) {
                        let text = format!(
                            "offset {o}: node {} has {}, node {} has {}",
                            rs[i].node,
                            (c.show)(*x),
                            rs[j].node,
                            (c.show)(*y)
                        );
                        first = Some((*o, text, vec![(c.export)(*x), (c.export)(*y)]));
                    }
                }
            }
        }
        if let Some((_, first, values)) = first {
            let mut x = Anomaly::new(
                AnomalyKind::ReplicaDivergence,
                format!(
                    "topic {topic}: replicas hold different committed records at {} offsets; first at {first}",
                    offsets.len()
                ),
            );
            x.partition = Some(p);
            x.offsets = offsets.into_iter().collect();
            x.values = values;
            anomalies.push(x);
        }
    }
    anomalies
}

/// replica-divergence among `replicas` of any topic, their records compared as
/// the final logs hold them.
pub fn replica_divergence(replicas: &[ReplicaLog]) -> Vec<Anomaly> {
    let values: Vec<Vec<&Value>> = replicas
        .iter()
        .map(|r| r.records.iter().map(|(_, v)| v).collect())
        .collect();
    diverged(&Compared {
        replicas,
        values: &values,
        show: &|v: &Value| v.to_string(),
        export: &|v: &Value| v.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn log(node: &str, topic: &str, hw: i64, values: &[i64]) -> ReplicaLog {
        ReplicaLog::from_values(node, topic, 0, hw, values.iter().map(|v| json!(v)))
    }

    #[test]
    fn committed_records_that_differ_diverge_and_a_lagging_replica_does_not() {
        let a = log("1", "register", 3, &[10, 11, 12]);
        let lagging = log("2", "register", 2, &[10, 11]);
        assert!(replica_divergence(&[a.clone(), lagging]).is_empty());
        // Past either HW a difference is not yet committed on both.
        let uncommitted = log("3", "register", 2, &[10, 11, 99]);
        assert!(replica_divergence(&[a.clone(), uncommitted]).is_empty());
        let diverged = log("3", "register", 3, &[10, 13, 99]);
        let found = replica_divergence(&[a, diverged]);
        assert_eq!(found.len(), 1);
        let x = &found[0];
        assert_eq!(x.kind, AnomalyKind::ReplicaDivergence);
        assert_eq!((x.partition, x.offsets.clone()), (Some(0), vec![1, 2]));
        assert_eq!(x.values, vec![json!(11), json!(13)]);
        assert!(x.message.starts_with("topic register: "), "{}", x.message);
        assert!(
            x.message.contains("node 1 has 11, node 3 has 13"),
            "{}",
            x.message
        );
    }

    #[test]
    fn partitions_and_topics_are_judged_apart() {
        let mut other = log("2", "register", 2, &[20, 21]);
        other.partition = 1;
        let q = log("1", "queue", 2, &[30, 31]);
        assert!(replica_divergence(&[log("1", "register", 2, &[10, 11]), other, q]).is_empty());
    }
}
