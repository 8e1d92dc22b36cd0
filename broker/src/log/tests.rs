//! Unit tests of the log on real files in a temp directory: appends, reads, rolling,
//! truncation, recovery from torn and corrupt files, and the flush policy.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::value::rv;

fn config(segment_bytes: u64) -> LogConfig {
    LogConfig {
        segment_bytes,
        ..LogConfig::default()
    }
}

fn entries(range: std::ops::Range<u64>) -> Vec<(Option<String>, RecordValue)> {
    range
        .map(|i| {
            (
                Some(format!("k{}", i % 3)),
                rv!({"i": i, "pad": "x".repeat(20)}),
            )
        })
        .collect()
}

fn all(log: &Log) -> Vec<Record> {
    log.read(0, usize::MAX, u64::MAX).unwrap()
}

fn offsets(records: &[Record]) -> Vec<u64> {
    records.iter().map(|r| r.offset).collect()
}

/// Segment files in offset order.
pub(super) fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    files.sort();
    files
}

/// Bytes of `path` truncated by `n`.
fn chop(path: &Path, n: u64) {
    let len = fs::metadata(path).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len - n)
        .unwrap();
}

fn flip(path: &Path, at_from_end: usize) {
    let mut bytes = fs::read(path).unwrap();
    let i = bytes.len() - at_from_end;
    bytes[i] ^= 0x20;
    fs::write(path, bytes).unwrap();
}

#[test]
fn append_read_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::open(dir.path(), LogConfig::default()).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (0, 0));
    assert_eq!(log.append(1, entries(0..3)).unwrap(), 0);
    assert_eq!(log.append(2, vec![(None, rv!(null))]).unwrap(), 3);
    assert_eq!(log.append(2, vec![]).unwrap(), 4);
    assert_eq!(log.log_end_offset(), 4);
    let records = all(&log);
    assert_eq!(offsets(&records), vec![0, 1, 2, 3]);
    assert_eq!(records[1].key.as_deref(), Some("k1"));
    assert_eq!(records[1].value.to_value()["i"], json!(1));
    assert_eq!(records[3].leader_epoch, 2);
    assert_eq!(records[3].key, None);

    assert_eq!(offsets(&log.read(1, 2, u64::MAX).unwrap()), vec![1, 2]);
    assert_eq!(offsets(&log.read(1, 10, 3).unwrap()), vec![1, 2]);
    assert!(log.read(3, 10, 3).unwrap().is_empty(), "limit is exclusive");
    assert!(log.read(4, 10, u64::MAX).unwrap().is_empty());
    assert!(log.read(u64::MAX, 10, u64::MAX).unwrap().is_empty());
    assert!(log.read(0, 0, u64::MAX).unwrap().is_empty());

    drop(log);
    let log = Log::open(dir.path(), LogConfig::default()).unwrap();
    assert_eq!(all(&log), records);
    assert_eq!(
        log.flushed_offset(),
        4,
        "recovered records are fsynced at open"
    );
}

#[test]
fn replicated_appends_must_continue_at_leo() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::open(dir.path(), LogConfig::default()).unwrap();
    log.append(1, entries(0..2)).unwrap();
    let rec = |offset| Record {
        offset,
        leader_epoch: 3,
        producer: None,
        key: None,
        value: rv!(offset),
    };
    for bad in [vec![rec(1)], vec![rec(3)], vec![rec(2), rec(4)]] {
        let err = log.append_replicated(bad).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("was expected"), "{err}");
        assert_eq!(log.log_end_offset(), 2);
    }
    log.append_replicated(vec![rec(2), rec(3)]).unwrap();
    log.append_replicated(vec![]).unwrap();
    assert_eq!(all(&log)[2..], [rec(2), rec(3)]);
}

#[test]
fn segments_roll_and_are_named_by_base_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::open(dir.path(), config(300)).unwrap();
    for i in 0..20 {
        log.append(1, entries(i..i + 1)).unwrap();
    }
    log.append(1, entries(20..40)).unwrap();
    let files = segment_files(dir.path());
    assert!(files.len() > 5, "{files:?}");
    let records = all(&log);
    drop(log);
    let log = Log::open(dir.path(), config(300)).unwrap();
    assert_eq!(all(&log), records);
    assert_eq!(offsets(&records), (0..40).collect::<Vec<_>>());
    assert_eq!(log.segments.len(), files.len());
    for (segment, file) in log.segments.iter().zip(&files) {
        assert_eq!(&segment.path, file);
        let name = file.file_name().unwrap().to_str().unwrap();
        assert_eq!(name, format!("{:020}.log", segment.base));
        let bytes = fs::read(file).unwrap();
        assert!(bytes.len() <= 300, "{name} has {} bytes", bytes.len());
        let (first, _) = frame::decode(&bytes).unwrap();
        assert_eq!(first.offset, segment.base, "{name}");
    }
}

#[test]
fn truncate_across_segments_then_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::open(dir.path(), config(300)).unwrap();
    log.append(1, entries(0..40)).unwrap();
    let before = all(&log);
    let segments = segment_files(dir.path()).len();
    log.truncate_to(50).unwrap();
    log.truncate_to(40).unwrap();
    assert_eq!(
        log.log_end_offset(),
        40,
        "truncating at or past LEO is a no-op"
    );
    log.truncate_to(7).unwrap();
    assert_eq!(log.log_end_offset(), 7);
    assert_eq!(all(&log), before[..7]);
    let remaining = segment_files(dir.path()).len();
    assert!(
        remaining < segments,
        "{remaining} of {segments} segments left"
    );
    drop(log);

    let mut log = Log::open(dir.path(), config(300)).unwrap();
    assert_eq!(all(&log), before[..7]);
    assert_eq!(log.append(2, entries(7..9)).unwrap(), 7);
    assert_eq!(all(&log)[7].leader_epoch, 2);
    log.truncate_to(0).unwrap();
    assert_eq!(log.log_end_offset(), 0);
    drop(log);
    let log = Log::open(dir.path(), config(300)).unwrap();
    assert_eq!(log.log_end_offset(), 0);
    assert_eq!(segment_files(dir.path()).len(), 1);
}

/// Write `n` records (small segments), returning them.
fn filled(dir: &Path, n: u64) -> Vec<Record> {
    let mut log = Log::open(dir, config(300)).unwrap();
    log.append(1, entries(0..n)).unwrap();
    all(&log)
}

#[test]
fn torn_tail_is_cut_at_reopen() {
    for cut in [1, 5, 9, 30] {
        let dir = tempfile::tempdir().unwrap();
        let before = filled(dir.path(), 20);
        let last = segment_files(dir.path()).pop().unwrap();
        chop(&last, cut);
        let mut log = Log::open(dir.path(), config(300)).unwrap();
        assert_eq!(all(&log), before[..19], "cut {cut} bytes");
        // The cut is on disk: appending and reopening gives a clean log.
        log.append(2, entries(19..21)).unwrap();
        drop(log);
        let log = Log::open(dir.path(), config(300)).unwrap();
        assert_eq!(offsets(&all(&log)), (0..21).collect::<Vec<_>>());
    }
}

#[test]
fn flipped_byte_in_last_record_is_cut_at_reopen() {
    for at in [1, 10, 40] {
        let dir = tempfile::tempdir().unwrap();
        let before = filled(dir.path(), 20);
        let last = segment_files(dir.path()).pop().unwrap();
        flip(&last, at);
        let log = Log::open(dir.path(), config(300)).unwrap();
        assert_eq!(all(&log), before[..19], "byte {at} from the end");
    }
}

#[test]
fn corrupt_record_in_the_middle_cuts_there() {
    let dir = tempfile::tempdir().unwrap();
    let before = filled(dir.path(), 40);
    let files = segment_files(dir.path());
    assert!(files.len() >= 3);
    // Flip a byte in the last record of the second segment.
    let second = &files[1];
    let first_of_third: u64 = files[2]
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    flip(second, 3);
    let log = Log::open(dir.path(), config(300)).unwrap();
    let cut_at = first_of_third - 1;
    assert_eq!(all(&log), before[..cut_at as usize]);
    assert_eq!(
        segment_files(dir.path()),
        files[..2],
        "later segments deleted"
    );
}

#[test]
fn segment_out_of_sequence_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let before = filled(dir.path(), 40);
    let files = segment_files(dir.path());
    // Lose a middle segment: everything after it no longer follows on.
    fs::remove_file(&files[1]).unwrap();
    let log = Log::open(dir.path(), config(300)).unwrap();
    let end = log.log_end_offset();
    assert_eq!(all(&log), before[..end as usize]);
    assert_eq!(segment_files(dir.path()), files[..1]);
}

#[test]
fn record_with_wrong_offset_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::open(dir.path(), config(300)).unwrap();
    log.append(1, entries(0..3)).unwrap();
    drop(log);
    // A valid frame, but for offset 7 where 3 is expected.
    let mut frame = Vec::new();
    let stray = Record {
        offset: 7,
        leader_epoch: 1,
        producer: None,
        key: None,
        value: rv!(7),
    };
    frame::encode(&stray, &mut frame).unwrap();
    let file = segment_files(dir.path()).pop().unwrap();
    let mut bytes = fs::read(&file).unwrap();
    bytes.extend_from_slice(&frame);
    fs::write(&file, bytes).unwrap();
    let log = Log::open(dir.path(), config(300)).unwrap();
    assert_eq!(log.log_end_offset(), 3);
}

/// A valid frame whose offset repeats is no crash's doing: the log refuses to open,
/// saying where, instead of keeping the first of two records that claim one offset.
#[test]
fn a_repeated_offset_is_refused_not_guessed() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::open(dir.path(), config(300)).unwrap();
    log.append(1, entries(0..3)).unwrap();
    drop(log);
    let stray = Record {
        offset: 1,
        leader_epoch: 1,
        key: None,
        value: rv!("again"),
        producer: None,
    };
    let mut frame = Vec::new();
    frame::encode(&stray, &mut frame).unwrap();
    let file = segment_files(dir.path()).pop().unwrap();
    let mut bytes = fs::read(&file).unwrap();
    let at = bytes.len();
    bytes.extend_from_slice(&frame);
    fs::write(&file, &bytes).unwrap();
    let err = Log::open(dir.path(), config(300)).err().unwrap();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    let msg = err.to_string();
    for part in [
        &file.display().to_string(),
        &format!("holds offset 1 at byte {at}, after offset 2"),
        "refusing to open",
    ] {
        assert!(msg.contains(part), "{part:?} not in: {msg}");
    }
    assert_eq!(fs::read(&file).unwrap(), bytes, "nothing was cut");
    // The planted bug guesses: it cuts at the repeat.
    let guessing = LogConfig {
        append_undo_lost: true,
        ..config(300)
    };
    assert_eq!(Log::open(dir.path(), guessing).unwrap().log_end_offset(), 3);
}

/// A segment that starts inside the one before it is refused the same way.
#[test]
fn overlapping_segments_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let before = filled(dir.path(), 10);
    let files = segment_files(dir.path());
    assert!(files.len() >= 2);
    let second: u64 = files[1]
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    // A copy of the second segment's records under an earlier name.
    let copy = dir.path().join(format!("{:020}.log", second - 1));
    let mut log = Log::open(dir.path(), config(300)).unwrap();
    assert_eq!(all(&log), before);
    log.truncate_to(second).unwrap();
    drop(log);
    let mut bytes = Vec::new();
    for r in &before[(second - 1) as usize..] {
        frame::encode(r, &mut bytes).unwrap();
    }
    fs::write(&copy, bytes).unwrap();
    let err = Log::open(dir.path(), config(300)).err().unwrap();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
    assert!(
        err.to_string().contains("inside the segment before it"),
        "{err}"
    );
}

#[test]
fn stray_files_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("leader-epoch-checkpoint"), "0\n0\n").unwrap();
    fs::write(dir.path().join("00000000000000000000.log.tmp"), "junk").unwrap();
    let before = filled(dir.path(), 5);
    let log = Log::open(dir.path(), config(300)).unwrap();
    assert_eq!(all(&log), before);
    assert!(dir.path().join("leader-epoch-checkpoint").exists());
    assert!(dir.path().join("00000000000000000000.log.tmp").exists());
}

#[test]
fn open_reports_unreadable_segments_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("00000000000000000000.log");
    fs::create_dir(&path).unwrap();
    let err = Log::open(dir.path(), LogConfig::default()).err().unwrap();
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[test]
fn flush_by_count() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        flush_messages: Some(3),
        ..LogConfig::default()
    };
    let mut log = Log::open(dir.path(), cfg).unwrap();
    log.append(1, entries(0..2)).unwrap();
    assert_eq!(log.flushed_offset(), 0);
    log.append(1, entries(2..3)).unwrap();
    assert_eq!(log.flushed_offset(), 3);
    log.append(1, entries(3..8)).unwrap();
    assert_eq!(log.flushed_offset(), 8);
    log.append(1, entries(8..9)).unwrap();
    assert_eq!(log.flushed_offset(), 8);
    log.truncate_to(5).unwrap();
    assert_eq!(log.flushed_offset(), 5);
    log.flush().unwrap();
    assert_eq!(log.flushed_offset(), 5);
}

#[test]
fn flush_by_time() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        flush_ms: Some(1000),
        ..LogConfig::default()
    };
    let mut log = Log::open(dir.path(), cfg).unwrap();
    let now = Instant::now();
    log.flush_if_due(now + Duration::from_secs(5)).unwrap();
    log.append(1, entries(0..2)).unwrap();
    let appended = Instant::now();
    log.flush_if_due(appended).unwrap();
    assert_eq!(log.flushed_offset(), 0);
    log.flush_if_due(appended + Duration::from_millis(1500))
        .unwrap();
    assert_eq!(log.flushed_offset(), 2);
}

#[test]
fn default_policy_never_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::open(dir.path(), LogConfig::default()).unwrap();
    log.append(1, entries(0..100)).unwrap();
    log.flush_if_due(Instant::now() + Duration::from_secs(3600))
        .unwrap();
    assert_eq!(log.flushed_offset(), 0);
    log.flush().unwrap();
    assert_eq!(log.flushed_offset(), 100);
}

#[test]
fn page_cache_simulation_holds_unflushed_bytes_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        simulate_page_cache: true,
        segment_bytes: 300,
        ..LogConfig::default()
    };
    let mut log = Log::open(dir.path(), cfg.clone()).unwrap();
    log.append(1, entries(0..10)).unwrap();
    let on_disk = || -> u64 {
        segment_files(dir.path())
            .iter()
            .map(|f| fs::metadata(f).unwrap().len())
            .sum()
    };
    assert_eq!(on_disk(), 0);
    log.flush().unwrap();
    let flushed_bytes = on_disk();
    assert!(flushed_bytes > 0);
    log.append(1, entries(10..25)).unwrap();
    assert_eq!(on_disk(), flushed_bytes);
    assert_eq!(offsets(&all(&log)), (0..25).collect::<Vec<_>>());
    log.crash();
    let mut log = Log::open(dir.path(), cfg.clone()).unwrap();
    assert_eq!(offsets(&all(&log)), (0..10).collect::<Vec<_>>());

    // A clean close is not a power cut: the "page cache" reaches the file.
    log.append(2, entries(10..12)).unwrap();
    drop(log);
    let log = Log::open(dir.path(), cfg).unwrap();
    assert_eq!(offsets(&all(&log)), (0..12).collect::<Vec<_>>());
}

#[test]
fn without_simulation_appends_reach_the_file_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::open(dir.path(), LogConfig::default()).unwrap();
    log.append(1, entries(0..10)).unwrap();
    log.crash();
    let log = Log::open(dir.path(), LogConfig::default()).unwrap();
    assert_eq!(log.log_end_offset(), 10);
}

#[test]
fn truncating_unflushed_simulated_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        simulate_page_cache: true,
        segment_bytes: 300,
        ..LogConfig::default()
    };
    let mut log = Log::open(dir.path(), cfg.clone()).unwrap();
    log.append(1, entries(0..10)).unwrap();
    log.flush().unwrap();
    log.append(1, entries(10..20)).unwrap();
    log.truncate_to(15).unwrap();
    log.flush().unwrap();
    log.truncate_to(5).unwrap();
    log.append(2, entries(5..7)).unwrap();
    assert_eq!(log.flushed_offset(), 5);
    log.crash();
    let log = Log::open(dir.path(), cfg).unwrap();
    assert_eq!(offsets(&all(&log)), (0..5).collect::<Vec<_>>());
}
