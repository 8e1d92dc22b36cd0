//! An in-memory log for the replica's unit tests.

use std::io;

use crate::value::RecordValue;

use super::ReplicaLog;
use crate::log::Record;

#[derive(Debug, Default, Clone)]
pub struct MemLog {
    pub records: Vec<Record>,
    /// Refuse every truncation, as a failing disk would.
    pub broken_truncate: bool,
    /// Refuse every append (appending nothing), as a full disk would.
    pub broken_append: bool,
}

impl ReplicaLog for MemLog {
    fn log_end_offset(&self) -> u64 {
        self.records.len() as u64
    }
    fn log_start_offset(&self) -> u64 {
        0
    }
    fn flushed_offset(&self) -> u64 {
        self.records.len() as u64
    }
    fn append(
        &mut self,
        leader_epoch: i32,
        entries: Vec<(Option<String>, RecordValue)>,
    ) -> io::Result<u64> {
        if self.broken_append {
            return Err(io::Error::other("the disk is full"));
        }
        let base = self.records.len() as u64;
        for (i, (key, value)) in entries.into_iter().enumerate() {
            self.records.push(Record {
                offset: base + i as u64,
                leader_epoch,
                producer: None,
                key,
                value,
            });
        }
        Ok(base)
    }
    fn append_replicated(&mut self, records: Vec<Record>) -> io::Result<()> {
        if self.broken_append {
            return Err(io::Error::other("the disk is full"));
        }
        for r in records {
            if r.offset != self.records.len() as u64 {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, "gap"));
            }
            self.records.push(r);
        }
        Ok(())
    }
    fn read(&self, offset: u64, max_records: usize, limit: u64) -> io::Result<Vec<Record>> {
        Ok(self
            .records
            .iter()
            .filter(|r| r.offset >= offset && r.offset < limit)
            .take(max_records)
            .cloned()
            .collect())
    }
    fn truncate_to(&mut self, offset: u64) -> io::Result<()> {
        if self.broken_truncate {
            return Err(io::Error::other("the disk refuses to truncate"));
        }
        self.records.truncate(offset as usize);
        Ok(())
    }
}
