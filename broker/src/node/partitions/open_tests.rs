//! Opening a partition whose files were damaged while the node was down (the
//! harness's `corrupt` fault), on real files: what can be recomputed is dropped and
//! recomputed, what cannot is refused with the file and the byte, and a log cut by
//! recovery is not opened while this broker is one of its ISR (see
//! [`Partition::open`]).

use std::fs;
use std::path::Path;

use super::partition::{EPOCHS_FILE, HW_FILE, Partition, RECOVERY_POINT_FILE};
use crate::bugs::Bugs;
use crate::damage::sweep;
use crate::disk::DiskFaults;
use crate::log::{Log, LogConfig, checkpoint};
use crate::protocol::TopicPartition;
use crate::value::rv;

fn tp() -> TopicPartition {
    TopicPartition {
        topic: "t".into(),
        partition: 0,
    }
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 300,
        ..LogConfig::default()
    }
}

/// Partition t-0 under `data_dir` with records 0..10 (epochs 1 from 0, 4 from 6), its
/// HW checkpointed at 8 and its epoch cache checkpointed with epoch 6 begun at LEO.
fn written(data_dir: &Path) {
    let dir = data_dir.join("t-0");
    let mut log = Log::open(&dir.join("log"), config()).unwrap();
    for i in 0..10u64 {
        let epoch = if i < 6 { 1 } else { 4 };
        log.append(epoch, vec![(None, rv!({"i": i}))]).unwrap();
    }
    drop(log);
    let faults = DiskFaults::default();
    checkpoint::write_high_watermark(&dir.join(HW_FILE), 8, &faults).unwrap();
    // Every record fsynced, as a flush policy of one record would have.
    checkpoint::write_recovery_point(&dir.join(RECOVERY_POINT_FILE), 10, &faults).unwrap();
    let epochs = [(1, 0), (4, 6), (6, 10)];
    checkpoint::write_epochs(&dir.join(EPOCHS_FILE), &epochs, &faults).unwrap();
}

fn open(data_dir: &Path) -> std::io::Result<(Partition, crate::replica::Effects)> {
    open_as(data_dir, false)
}

/// Open t-0, this broker named in its ISR or not.
fn open_as(data_dir: &Path, in_isr: bool) -> std::io::Result<(Partition, crate::replica::Effects)> {
    Partition::open(data_dir, tp(), 1, config(), 10_000, Bugs::default(), in_isr)
}

/// The segment files of t-0, in offset order.
fn segments(data_dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = fs::read_dir(data_dir.join("t-0/log"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[test]
fn a_whole_partition_opens_as_written() {
    let d = tempfile::tempdir().unwrap();
    written(d.path());
    let (part, effects) = open(d.path()).unwrap();
    let r = part.read();
    assert_eq!((r.log_end_offset(), r.high_watermark()), (10, 8));
    assert_eq!(r.epochs().entries(), [(1, 0), (4, 6), (6, 10)]);
    assert_eq!(effects.checkpoint_epochs, None, "nothing to rewrite");
}

/// The epoch cache is rebuilt from the log at every open; the checkpoint only adds an
/// epoch begun at LEO without records, which a follower drops at its first cut
/// anyway. A damaged one is dropped, the cache rebuilt from the records, and the file
/// rewritten — it used to keep the partition off this node for good.
#[test]
fn every_damage_to_the_epoch_checkpoint_is_dropped_and_the_cache_rebuilt() {
    let d = tempfile::tempdir().unwrap();
    written(d.path());
    let path = d.path().join("t-0").join(EPOCHS_FILE);
    let bytes = fs::read(&path).unwrap();
    for damage in sweep(bytes.len()) {
        if damage.first_change(&bytes).is_none() {
            continue;
        }
        fs::write(&path, damage.apply(&bytes)).unwrap();
        let (part, effects) = open(d.path()).unwrap_or_else(|e| panic!("{damage:?}: {e}"));
        let rebuilt = vec![(1, 0), (4, 6)];
        assert_eq!(part.read().epochs().entries(), rebuilt, "{damage:?}");
        assert_eq!(effects.checkpoint_epochs, Some(rebuilt), "{damage:?}");
    }
}

/// The HW checkpoint is advisory: a damaged one is dropped (the HW starts at 0).
#[test]
fn every_damage_to_the_hw_checkpoint_starts_the_hw_at_zero() {
    let d = tempfile::tempdir().unwrap();
    written(d.path());
    let path = d.path().join("t-0").join(HW_FILE);
    let bytes = fs::read(&path).unwrap();
    for damage in sweep(bytes.len()) {
        if damage.first_change(&bytes).is_none() {
            continue;
        }
        fs::write(&path, damage.apply(&bytes)).unwrap();
        let (part, _) = open(d.path()).unwrap_or_else(|e| panic!("{damage:?}: {e}"));
        assert_eq!(part.read().high_watermark(), 0, "{damage:?}");
        assert_eq!(
            *part.checkpointed_hw.lock().unwrap(),
            u64::MAX,
            "{damage:?}"
        );
    }
}

/// The recovery point is advisory too: a damaged one counts as none fsynced (the
/// log may be cut as far as a power cut would) and is rewritten.
#[test]
fn every_damage_to_the_recovery_point_counts_as_none_fsynced() {
    let d = tempfile::tempdir().unwrap();
    written(d.path());
    let path = d.path().join("t-0").join(RECOVERY_POINT_FILE);
    let bytes = fs::read(&path).unwrap();
    for damage in sweep(bytes.len()) {
        if damage.first_change(&bytes).is_none() {
            continue;
        }
        fs::write(&path, damage.apply(&bytes)).unwrap();
        let (part, _) = open_as(d.path(), true).unwrap_or_else(|e| panic!("{damage:?}: {e}"));
        let rewrite = *part.checkpointed_recovery_point.lock().unwrap();
        assert_eq!(rewrite, u64::MAX, "{damage:?}");
    }
}

/// A record damaged in the middle of the log (whole records after it): a replica
/// outside the ISR cuts it and re-fetches the rest; one in the ISR — the only
/// replica the controller may elect — refuses the log, untouched, naming the file
/// and the byte, rather than lead without records another replica holds.
#[test]
fn damage_mid_log_is_cut_outside_the_isr_and_refused_in_it() {
    let d = tempfile::tempdir().unwrap();
    written(d.path());
    let before = segments(d.path());
    assert!(before.len() >= 2, "{before:?}");
    let first = &before[0];
    let mut bytes = fs::read(first).unwrap();
    bytes[20] ^= 0x04; // inside the first record
    fs::write(first, &bytes).unwrap();
    let err = open_as(d.path(), true).err().expect("refused");
    let msg = err.to_string();
    for part in [
        "recovery would cut whole records",
        &format!("at byte 0 of {}", first.display()),
        "this broker is in the partition's ISR",
        "its files are left as they are",
    ] {
        assert!(msg.contains(part), "{part:?} not in: {msg}");
    }
    assert_eq!(fs::read(first).unwrap(), bytes, "untouched");
    assert_eq!(segments(d.path()), before, "untouched");
    // Out of the ISR, it is a follower that re-fetches what the cut loses.
    let (part, _) = open_as(d.path(), false).unwrap();
    let r = part.read();
    assert_eq!((r.log_end_offset(), r.high_watermark()), (0, 0));
}

/// A torn tail — what a crash leaves — is cut in the ISR too, as long as the log
/// still reaches its checkpointed HW (8) or, if lower, its recovery point: records
/// below both were committed and fsynced, and a log cut below them is refused;
/// records above the recovery point a power cut may take (Kafka's exposure without
/// a flush policy), and the log opens cut.
#[test]
fn in_the_isr_a_torn_tail_is_cut_unless_it_reaches_below_the_checkpointed_hw() {
    let d = tempfile::tempdir().unwrap();
    written(d.path());
    let last = segments(d.path()).pop().unwrap();
    let bytes = fs::read(&last).unwrap();
    fs::write(&last, &bytes[..bytes.len() - 3]).unwrap();
    let (part, _) = open_as(d.path(), true).unwrap();
    let r = part.read();
    assert_eq!((r.log_end_offset(), r.high_watermark()), (9, 8));
    drop(r);
    drop(part);
    // The last segment holds records 6 to 8 now: cut it to nothing.
    fs::write(&last, b"").unwrap();
    let err = open_as(d.path(), true).err().expect("refused");
    let msg = err.to_string();
    assert!(
        msg.contains("below 8, its checkpointed high watermark and recovery point"),
        "{msg}"
    );
    assert!(
        msg.contains("committed records it had fsynced are missing"),
        "{msg}"
    );
    // Only records 0 to 5 were ever fsynced: a power cut took the rest, and the log
    // opens with them, short of its HW, as Kafka's does.
    let rp = d.path().join("t-0").join(RECOVERY_POINT_FILE);
    checkpoint::write_recovery_point(&rp, 6, &DiskFaults::default()).unwrap();
    let (part, _) = open_as(d.path(), true).unwrap();
    assert_eq!(part.read().log_end_offset(), 6);
    drop(part);
    // A recovery point that does not read back counts as none fsynced.
    fs::write(&rp, b"0\n9\n").unwrap();
    let (part, _) = open_as(d.path(), true).unwrap();
    assert_eq!(part.read().log_end_offset(), 6);
    drop(part);
    let (part, _) = open_as(d.path(), false).unwrap();
    assert!(part.read().log_end_offset() < 8);
}
