//! The log on a disk that fails (the [`DiskFaults`] switch): an append that fails
//! leaves the log exactly as it was, in memory and in its files, so the next append
//! takes the same offsets and a reopened log holds each offset once.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use super::*;
use crate::disk::DiskMode;
use crate::value::rv;

/// Every segment file's name and bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn record(offset: u64, leader_epoch: i32, tag: &str) -> Record {
    Record {
        offset,
        leader_epoch,
        key: Some(format!("k{}", offset % 3)),
        value: rv!({"tag": tag, "offset": offset, "pad": "x".repeat(20)}),
        producer: None,
    }
}

fn entries_of(records: &[Record]) -> Vec<(Option<String>, RecordValue)> {
    records
        .iter()
        .map(|r| (r.key.clone(), r.value.clone()))
        .collect()
}

/// How the records reach the log.
#[derive(Debug, Clone, Copy)]
enum Way {
    /// A leader's append (offsets assigned by the log).
    Leader,
    /// A follower's append of fetched records.
    Replicated,
}

fn append(log: &mut Log, way: Way, records: &[Record]) -> io::Result<()> {
    match way {
        Way::Leader => {
            let base = log.append(records[0].leader_epoch, entries_of(records))?;
            assert_eq!(base, records[0].offset);
            Ok(())
        }
        Way::Replicated => log.append_replicated(records.to_vec()),
    }
}

fn all(log: &Log) -> Vec<Record> {
    log.read(0, usize::MAX, u64::MAX).unwrap()
}

/// Finding: the undo of a failed append returned early (the in-memory LEO had not
/// moved), so the failed frames stayed queued and reached the file with the next
/// append, at offsets the next append took again.
#[test]
fn a_failed_append_leaves_the_log_as_it_was_in_memory_and_on_disk() {
    for mode in [DiskMode::Enospc, DiskMode::Eio] {
        for way in [Way::Leader, Way::Replicated] {
            // 2 records stay in the active segment; 12 roll over to new ones.
            for failed_count in [2, 12] {
                for flush_messages in [None, Some(1)] {
                    let case = format!("{mode:?} {way:?} {failed_count} {flush_messages:?}");
                    let dir = tempfile::tempdir().unwrap();
                    let faults = DiskFaults::default();
                    let config = LogConfig {
                        segment_bytes: 300,
                        flush_messages,
                        faults: faults.clone(),
                        ..LogConfig::default()
                    };
                    let mut log = Log::open(dir.path(), config.clone()).unwrap();
                    let first: Vec<Record> = (0..5).map(|o| record(o, 1, "acked")).collect();
                    append(&mut log, way, &first).unwrap();
                    let before = files(dir.path());
                    let flushed = log.flushed_offset();

                    faults.set(mode, None);
                    let failed: Vec<Record> = (5..5 + failed_count)
                        .map(|o| record(o, 1, "failed"))
                        .collect();
                    let err = append(&mut log, way, &failed).unwrap_err();
                    assert!(err.to_string().contains("disk fault"), "{case}: {err}");
                    assert_eq!(log.log_end_offset(), 5, "{case}");
                    assert_eq!(all(&log), first, "{case}");
                    assert_eq!(log.flushed_offset(), flushed, "{case}");
                    assert_eq!(files(dir.path()), before, "{case}: the files changed");

                    // Space again: the next append takes offset 5, once.
                    faults.set(DiskMode::Ok, None);
                    let next = vec![record(5, 2, "next")];
                    append(&mut log, way, &next).unwrap();
                    let mut expected = first.clone();
                    expected.extend(next);
                    assert_eq!(all(&log), expected, "{case}");
                    drop(log);
                    let log = Log::open(dir.path(), config).unwrap();
                    assert_eq!(all(&log), expected, "{case}: after reopening");
                }
            }
        }
    }
}

/// A failed append followed by a power cut: the files hold what they held before.
#[test]
fn a_failed_append_then_a_crash_recovers_the_log_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let faults = DiskFaults::default();
    let config = LogConfig {
        segment_bytes: 300,
        faults: faults.clone(),
        ..LogConfig::default()
    };
    let mut log = Log::open(dir.path(), config.clone()).unwrap();
    let first: Vec<Record> = (0..4).map(|o| record(o, 1, "acked")).collect();
    append(&mut log, Way::Leader, &first).unwrap();
    faults.set(DiskMode::Enospc, None);
    let failed: Vec<Record> = (4..9).map(|o| record(o, 1, "failed")).collect();
    append(&mut log, Way::Leader, &failed).unwrap_err();
    log.crash();
    faults.set(DiskMode::Ok, None);
    let log = Log::open(dir.path(), config).unwrap();
    assert_eq!(all(&log), first);
}

/// Repeated failures queue nothing: a follower retrying the same fetched records
/// against a full disk does not grow the log's memory.
#[test]
fn repeated_failures_hold_no_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let faults = DiskFaults::default();
    let config = LogConfig {
        faults: faults.clone(),
        ..LogConfig::default()
    };
    let mut log = Log::open(dir.path(), config).unwrap();
    faults.set(DiskMode::Enospc, None);
    let batch: Vec<Record> = (0..50).map(|o| record(o, 1, "fetched")).collect();
    for _ in 0..20 {
        log.append_replicated(batch.clone()).unwrap_err();
    }
    let held: u64 = log.segments.iter().map(|s| s.size()).sum();
    assert_eq!(held, 0, "bytes held for failed appends");
    assert_eq!(log.segments.len(), 1);
    faults.set(DiskMode::Ok, None);
    log.append_replicated(batch.clone()).unwrap();
    assert_eq!(all(&log), batch);
}

/// `--bug append-undo-lost` plants the undo of old (by LEO, which had not moved):
/// the failed record takes the offset of the acknowledged one after a reopen.
#[test]
fn the_planted_bug_brings_the_duplicate_offset_back() {
    let dir = tempfile::tempdir().unwrap();
    let faults = DiskFaults::default();
    let config = LogConfig {
        segment_bytes: 300,
        faults: faults.clone(),
        append_undo_lost: true,
        ..LogConfig::default()
    };
    let mut log = Log::open(dir.path(), config.clone()).unwrap();
    let first: Vec<Record> = (0..5).map(|o| record(o, 1, "acked")).collect();
    append(&mut log, Way::Leader, &first).unwrap();
    faults.set(DiskMode::Enospc, None);
    let failed: Vec<Record> = (5..7).map(|o| record(o, 1, "failed")).collect();
    append(&mut log, Way::Leader, &failed).unwrap_err();
    faults.set(DiskMode::Ok, None);
    append(&mut log, Way::Leader, &[record(5, 2, "next")]).unwrap();
    drop(log);
    let log = Log::open(dir.path(), config).unwrap();
    let records = all(&log);
    assert_eq!(records[..5], first);
    assert_eq!(records[5], record(5, 1, "failed"), "{records:?}");
}
