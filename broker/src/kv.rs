//! The register view: a key → value map over a partition's log, for the register
//! workload. Each key keeps the history of its writes (offset, value), so the leader
//! can judge a conditional write against the newest value in log order (committed or
//! not, as Kafka's log order is the only order) and answer reads as of the high
//! watermark. [`KeyedLog`] wraps a log and keeps the view in step with every append
//! and truncation.

use std::collections::HashMap;
use std::io;

use crate::value::RecordValue;

use crate::log::Record;
use crate::replica::ReplicaLog;

/// The partition a key lives in: `crc32c(key) mod partitions` (docs/api.md).
pub fn partition_for_key(key: &str, partitions: u32) -> u32 {
    crc32c::crc32c(key.as_bytes()) % partitions.max(1)
}

/// A log plus the per-key history of its keyed records.
pub struct KeyedLog<L> {
    inner: L,
    keys: HashMap<String, Vec<(u64, RecordValue)>>,
    /// Keyed records in offset order, for truncation.
    order: Vec<(u64, String)>,
}

impl<L: ReplicaLog> KeyedLog<L> {
    /// Index every keyed record already in `inner`.
    pub fn open(inner: L) -> io::Result<Self> {
        let mut kl = KeyedLog {
            inner,
            keys: HashMap::new(),
            order: Vec::new(),
        };
        let leo = kl.inner.log_end_offset();
        let mut offset = kl.inner.log_start_offset();
        while offset < leo {
            let batch = kl.inner.read(offset, 4096, leo)?;
            let Some(last) = batch.last() else { break };
            offset = last.offset + 1;
            for r in &batch {
                kl.index(r.offset, r.key.as_deref(), &r.value);
            }
        }
        Ok(kl)
    }

    #[cfg(test)]
    pub fn inner(&self) -> &L {
        &self.inner
    }
    pub fn inner_mut(&mut self) -> &mut L {
        &mut self.inner
    }

    fn index(&mut self, offset: u64, key: Option<&str>, value: &RecordValue) {
        if let Some(k) = key {
            self.keys
                .entry(k.to_string())
                .or_default()
                .push((offset, value.clone()));
            self.order.push((offset, k.to_string()));
        }
    }

    /// The key's newest value in the log (None: never written).
    pub fn latest(&self, key: &str) -> Option<&(u64, RecordValue)> {
        self.keys.get(key).and_then(|h| h.last())
    }

    /// The key's value as of `below` (e.g. the HW): its last write at an offset < `below`.
    pub fn value_below(&self, key: &str, below: u64) -> Option<&(u64, RecordValue)> {
        self.keys
            .get(key)
            .and_then(|h| h.iter().rev().find(|(o, _)| *o < below))
    }
}

impl<L: ReplicaLog> ReplicaLog for KeyedLog<L> {
    fn log_end_offset(&self) -> u64 {
        self.inner.log_end_offset()
    }
    fn log_start_offset(&self) -> u64 {
        self.inner.log_start_offset()
    }
    fn flushed_offset(&self) -> u64 {
        self.inner.flushed_offset()
    }
    fn append(
        &mut self,
        leader_epoch: i32,
        entries: Vec<(Option<String>, RecordValue)>,
    ) -> io::Result<u64> {
        let keyed: Vec<(Option<String>, RecordValue)> = entries
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    if k.is_some() {
                        v.clone()
                    } else {
                        RecordValue::null()
                    },
                )
            })
            .collect();
        let base = self.inner.append(leader_epoch, entries)?;
        for (i, (k, v)) in keyed.into_iter().enumerate() {
            self.index(base + i as u64, k.as_deref(), &v);
        }
        Ok(base)
    }
    fn append_replicated(&mut self, records: Vec<Record>) -> io::Result<()> {
        let keyed: Vec<(u64, String, RecordValue)> = records
            .iter()
            .filter_map(|r| r.key.clone().map(|k| (r.offset, k, r.value.clone())))
            .collect();
        self.inner.append_replicated(records)?;
        for (o, k, v) in keyed {
            self.index(o, Some(&k), &v);
        }
        Ok(())
    }
    fn read(&self, offset: u64, max_records: usize, limit: u64) -> io::Result<Vec<Record>> {
        self.inner.read(offset, max_records, limit)
    }
    fn truncate_to(&mut self, offset: u64) -> io::Result<()> {
        self.inner.truncate_to(offset)?;
        while let Some((o, _)) = self.order.last() {
            if *o < offset {
                break;
            }
            let (_, k) = self.order.pop().expect("checked");
            if let Some(h) = self.keys.get_mut(&k) {
                h.pop();
                if h.is_empty() {
                    self.keys.remove(&k);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replica::mem::MemLog;
    use crate::value::rv;

    #[test]
    fn tracks_appends_truncation_and_reads_below_hw() {
        let mut kl = KeyedLog::open(MemLog::default()).unwrap();
        kl.append(1, vec![(Some("a".into()), rv!(1)), (None, rv!(9))])
            .unwrap();
        kl.append(1, vec![(Some("a".into()), rv!(2))]).unwrap();
        kl.append(1, vec![(Some("b".into()), rv!(3))]).unwrap();
        assert_eq!(kl.latest("a"), Some(&(2, rv!(2))));
        assert_eq!(kl.value_below("a", 2), Some(&(0, rv!(1))));
        assert_eq!(kl.value_below("a", 0), None);
        kl.truncate_to(2).unwrap();
        assert_eq!(kl.latest("a"), Some(&(0, rv!(1))));
        assert_eq!(kl.latest("b"), None);
        let rec = Record {
            offset: 2,
            leader_epoch: 2,
            producer: None,
            key: Some("b".into()),
            value: rv!(5),
        };
        kl.append_replicated(vec![rec]).unwrap();
        assert_eq!(kl.latest("b"), Some(&(2, rv!(5))));
        let reopened = KeyedLog::open(kl.inner().clone()).unwrap();
        assert_eq!(reopened.latest("b"), Some(&(2, rv!(5))));
        assert_eq!(reopened.latest("a"), Some(&(0, rv!(1))));
    }

    #[test]
    fn key_partition_is_crc32c_mod_partitions() {
        assert_eq!(partition_for_key("k1", 1), 0);
        let p = partition_for_key("k1", 2);
        assert_eq!(p, crc32c::crc32c(b"k1") % 2);
    }
}
