//! A partition log whose files were damaged while the broker was down (the harness's
//! `corrupt` fault), every case of [`crate::damage::sweep`] on every segment: the log
//! opens holding exactly the records before the first damaged byte, never a changed
//! record, and the cut is on disk (a second open finds nothing to cut).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::tests::segment_files;
use super::*;
use crate::damage::{Damage, sweep};
use crate::value::rv;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 300,
        ..LogConfig::default()
    }
}

/// A log of 12 records over several segments: its records and each segment's bytes.
fn written(dir: &Path) -> (Vec<Record>, BTreeMap<PathBuf, Vec<u8>>) {
    let mut log = Log::open(dir, config()).unwrap();
    for i in 0..12u64 {
        let entries = vec![(Some(format!("k{i}")), rv!({"i": i, "pad": "xy".repeat(8)}))];
        log.append(1 + (i / 5) as i32, entries).unwrap();
    }
    let records = log.read(0, usize::MAX, u64::MAX).unwrap();
    drop(log);
    let files = segment_files(dir)
        .into_iter()
        .map(|p| {
            let bytes = fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    (records, files)
}

/// How many records of the log lie wholly before byte `at` of segment `file`.
fn records_before(files: &BTreeMap<PathBuf, Vec<u8>>, file: &Path, at: usize) -> usize {
    let mut count = 0;
    for (path, bytes) in files {
        let mut pos = 0;
        while pos < bytes.len() {
            let (_, n) = frame::decode(&bytes[pos..]).unwrap();
            if path == file && pos + n > at {
                return count;
            }
            pos += n;
            count += 1;
        }
        if path == file {
            return count;
        }
    }
    count
}

#[test]
fn every_damage_to_a_segment_cuts_the_log_at_the_last_good_record() {
    let original = tempfile::tempdir().unwrap();
    let (records, files) = written(original.path());
    assert!(files.len() >= 3, "{} segments", files.len());
    let mut cases = 0;
    for (victim, bytes) in &files {
        let name = victim.file_name().unwrap();
        for damage in sweep(bytes.len()) {
            let Some(first) = damage.first_change(bytes) else {
                continue;
            };
            cases += 1;
            let dir = tempfile::tempdir().unwrap();
            for (path, b) in &files {
                let b = match path == victim {
                    true => damage.apply(b),
                    false => b.clone(),
                };
                fs::write(dir.path().join(path.file_name().unwrap()), b).unwrap();
            }
            let case = format!("{name:?} {damage:?}");
            let log = Log::open(dir.path(), config()).unwrap_or_else(|e| panic!("{case}: {e}"));
            let kept = records_before(&files, victim, first);
            let got = log.read(0, usize::MAX, u64::MAX).unwrap();
            assert_eq!(got, records[..kept], "{case}");
            drop(log);
            let again = Log::open(dir.path(), config()).unwrap();
            assert_eq!(again.log_end_offset(), kept as u64, "{case}: reopened");
        }
    }
    assert!(cases > 2000, "{cases} cases");
}

/// Damage that changes nothing the log reads (a zeroed run over zero bytes) is no
/// damage: the sweep's no-op cases open the whole log.
#[test]
fn a_no_op_damage_keeps_every_record() {
    let original = tempfile::tempdir().unwrap();
    let (records, files) = written(original.path());
    let (victim, bytes) = files.iter().next().unwrap();
    // The length field's high bytes are zero.
    let noop = Damage::Zero { from: 2, len: 2 };
    assert_eq!(noop.first_change(bytes), None);
    fs::write(victim, noop.apply(bytes)).unwrap();
    let log = Log::open(original.path(), config()).unwrap();
    assert_eq!(log.read(0, usize::MAX, u64::MAX).unwrap(), records);
}

/// Every damage to a checkpoint reads back as the value written or as an error
/// naming the file (`InvalidData`): never as another value.
#[test]
fn every_damage_to_a_checkpoint_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let faults = DiskFaults::default();
    let hw_path = dir.path().join("high-watermark");
    checkpoint::write_high_watermark(&hw_path, 1234, &faults).unwrap();
    let epochs_path = dir.path().join("leader-epoch-checkpoint");
    let epochs = vec![(0, 0), (3, 17), (12, 905)];
    checkpoint::write_epochs(&epochs_path, &epochs, &faults).unwrap();
    for path in [&hw_path, &epochs_path] {
        let bytes = fs::read(path).unwrap();
        for damage in sweep(bytes.len()) {
            if damage.first_change(&bytes).is_none() {
                continue;
            }
            fs::write(path, damage.apply(&bytes)).unwrap();
            let case = format!("{:?} {damage:?}", path.file_name().unwrap());
            let err = match path == &hw_path {
                true => match checkpoint::read_high_watermark(path) {
                    Ok(hw) => panic!("{case}: read as {hw}"),
                    Err(e) => e,
                },
                false => match checkpoint::read_epochs(path) {
                    Ok(got) => panic!("{case}: read as {got:?}"),
                    Err(e) => e,
                },
            };
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{case}: {err}");
            assert!(
                err.to_string().contains(&path.display().to_string()),
                "{case}: {err}"
            );
        }
        fs::write(path, &bytes).unwrap();
    }
}

/// The byte ranges of the frames in `bytes`.
fn frame_ranges(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let (_, n) = frame::decode(&bytes[pos..]).unwrap();
        ranges.push(pos..pos + n);
        pos += n;
    }
    ranges
}

/// Every file of `files` written to `dir`, `victim`'s as `damaged`.
fn lay_out(dir: &Path, files: &BTreeMap<PathBuf, Vec<u8>>, victim: &Path, damaged: &[u8]) {
    for (path, b) in files {
        let b = if path == victim { damaged } else { b };
        fs::write(dir.join(path.file_name().unwrap()), b).unwrap();
    }
}

/// Under `Recovery::KeepCommitted` (the replica is in the ISR) every damage that
/// would cut a whole record — one the damage left intact, later in its file or in a
/// later segment — is refused with the files left as they are; a torn tail (nothing
/// whole past the cut) is cut as always.
#[test]
fn an_isr_member_refuses_every_cut_of_whole_records_and_cuts_torn_tails() {
    let original = tempfile::tempdir().unwrap();
    let (records, files) = written(original.path());
    let paths: Vec<&PathBuf> = files.keys().collect();
    let (mut refused, mut cut) = (0, 0);
    for (i, (victim, bytes)) in files.iter().enumerate() {
        for damage in sweep(bytes.len()) {
            let Some(first) = damage.first_change(bytes) else {
                continue;
            };
            let damaged = damage.apply(bytes);
            // Whole records past the cut: an untouched frame after the first damaged
            // one, or any later segment.
            let untouched_after = frame_ranges(bytes)
                .into_iter()
                .any(|r| r.start > first && damaged.get(r.clone()) == Some(&bytes[r.clone()]));
            let expect_refusal = untouched_after || i + 1 < paths.len();
            let dir = tempfile::tempdir().unwrap();
            lay_out(dir.path(), &files, victim, &damaged);
            let case = format!("{:?} {damage:?}", victim.file_name().unwrap());
            match Log::open_with(dir.path(), config(), Recovery::KeepCommitted(0)) {
                Ok(log) => {
                    assert!(!expect_refusal, "{case}: opened");
                    let kept = records_before(&files, victim, first);
                    assert_eq!(log.read(0, usize::MAX, u64::MAX).unwrap(), records[..kept]);
                    cut += 1;
                }
                Err(e) => {
                    assert!(expect_refusal, "{case}: {e}");
                    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{case}: {e}");
                    let msg = e.to_string();
                    assert!(msg.contains("would cut whole records"), "{case}: {msg}");
                    let name = victim.file_name().unwrap().to_string_lossy();
                    assert!(
                        msg.contains(&*name) && msg.contains("at byte"),
                        "{case}: {msg}"
                    );
                    for (path, b) in &files {
                        let now = fs::read(dir.path().join(path.file_name().unwrap())).unwrap();
                        let want = if path == victim { &damaged } else { b };
                        assert_eq!(&now, want, "{case}: {path:?} was touched");
                    }
                    refused += 1;
                }
            }
        }
    }
    assert!(refused > 1000 && cut > 300, "{refused} refused, {cut} cut");
}

/// Under `Recovery::KeepCommitted(hw)` a log that ends below `hw` — cut short at a
/// record boundary, or torn below it — misses committed records: refused, saying
/// where it ends, untouched.
#[test]
fn an_isr_member_refuses_a_log_ending_below_its_checkpointed_high_watermark() {
    let original = tempfile::tempdir().unwrap();
    let (records, files) = written(original.path());
    let (last, bytes) = files.iter().next_back().unwrap();
    let ranges = frame_ranges(bytes);
    let first_of_last = records.len() - ranges.len();
    // Cut at the boundary before the last segment's second record, then mid-record.
    for (len, torn) in [(ranges[1].start, false), (ranges[1].start + 3, true)] {
        let dir = tempfile::tempdir().unwrap();
        lay_out(dir.path(), &files, last, &bytes[..len]);
        let end = first_of_last + 1;
        let log = Log::open_with(dir.path(), config(), Recovery::KeepCommitted(end as u64));
        assert_eq!(
            log.unwrap().log_end_offset(),
            end as u64,
            "{len}: reaches {end}"
        );
        lay_out(dir.path(), &files, last, &bytes[..len]);
        let refused = Log::open_with(
            dir.path(),
            config(),
            Recovery::KeepCommitted(end as u64 + 1),
        );
        let msg = refused.err().unwrap().to_string();
        let name = last.file_name().unwrap().to_string_lossy();
        for part in [
            format!("the log ends at offset {end}"),
            format!("{name}, byte {}", ranges[1].start),
            format!("below {}, its checkpointed high watermark", end + 1),
        ] {
            assert!(msg.contains(&part), "{part:?} not in: {msg}");
        }
        assert_eq!(msg.contains("torn record"), torn, "{msg}");
        let now = fs::read(dir.path().join(last.file_name().unwrap())).unwrap();
        assert_eq!(now.len(), len, "untouched");
    }
}
