//! Property tests of the log against a model (a `Vec` of records and a flushed
//! offset), and of recovery against arbitrary damage to the files.
//!
//! A failing case is printed shrunk; `PROPTEST_RNG_SEED=N` replays a run's seed.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::value::rv;
use proptest::prelude::*;
use proptest::test_runner::Config;

use super::tests::segment_files;
use super::*;

#[derive(Debug, Clone)]
enum Op {
    Append {
        epoch: i32,
        n: u64,
    },
    AppendReplicated {
        epoch: i32,
        n: u64,
    },
    /// Replicated records that do not start at LEO (`skew` != 0): refused.
    AppendMisplaced {
        skew: i64,
    },
    Truncate {
        to: u64,
    },
    Flush,
    FlushWhenDue,
    Read {
        offset: u64,
        max: usize,
        limit: u64,
    },
    /// Close cleanly and open again.
    Reopen,
    /// Power cut: unflushed bytes held in memory are lost, then open again.
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..4i32, 0..6u64).prop_map(|(epoch, n)| Op::Append { epoch, n }),
        2 => (0..4i32, 1..6u64).prop_map(|(epoch, n)| Op::AppendReplicated { epoch, n }),
        1 => prop_oneof![-3..0i64, 1..4i64].prop_map(|skew| Op::AppendMisplaced { skew }),
        2 => (0..40u64).prop_map(|to| Op::Truncate { to }),
        1 => Just(Op::Flush),
        1 => Just(Op::FlushWhenDue),
        2 => (0..40u64, 0..8usize, 0..45u64)
            .prop_map(|(offset, max, limit)| Op::Read { offset, max, limit }),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
    ]
}

fn log_config() -> impl Strategy<Value = LogConfig> {
    (
        prop_oneof![Just(None), (1..5u64).prop_map(Some)],
        prop_oneof![Just(None), Just(Some(10u64))],
        any::<bool>(),
        prop_oneof![Just(90u64), Just(250), Just(0)],
    )
        .prop_map(
            |(flush_messages, flush_ms, simulate_page_cache, segment_bytes)| LogConfig {
                flush_messages,
                flush_ms,
                simulate_page_cache,
                segment_bytes,
                ..LogConfig::default()
            },
        )
}

fn record(offset: u64, epoch: i32) -> Record {
    Record {
        offset,
        leader_epoch: epoch,
        producer: None,
        key: (offset % 2 == 0).then(|| format!("key-{}", offset % 5)),
        value: rv!({"offset": offset, "text": "ü".repeat((offset % 7) as usize)}),
    }
}

/// What the log must hold.
struct Model {
    records: Vec<Record>,
    flushed: u64,
}

impl Model {
    fn leo(&self) -> u64 {
        self.records.len() as u64
    }

    fn appended(&mut self, new: Vec<Record>, config: &LogConfig) {
        self.records.extend(new);
        if let Some(n) = config.flush_messages {
            if self.leo() - self.flushed >= n.max(1) {
                self.flushed = self.leo();
            }
        }
    }
}

fn check(log: &Log, model: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(log.log_end_offset(), model.leo());
    prop_assert_eq!(log.log_start_offset(), 0);
    prop_assert_eq!(log.flushed_offset(), model.flushed);
    prop_assert_eq!(&log.read(0, usize::MAX, u64::MAX).unwrap(), &model.records);
    Ok(())
}

fn run(dir: &Path, config: LogConfig, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut log = Log::open(dir, config.clone()).unwrap();
    let mut model = Model {
        records: Vec::new(),
        flushed: 0,
    };
    for op in ops {
        match op {
            Op::Append { epoch, n } => {
                let entries: Vec<_> = (model.leo()..model.leo() + n)
                    .map(|o| {
                        let r = record(o, epoch);
                        (r.key, r.value)
                    })
                    .collect();
                let base = log.append(epoch, entries).unwrap();
                prop_assert_eq!(base, model.leo());
                let new = (base..base + n).map(|o| record(o, epoch)).collect();
                model.appended(new, &config);
            }
            Op::AppendReplicated { epoch, n } => {
                let new: Vec<_> = (model.leo()..model.leo() + n)
                    .map(|o| record(o, epoch))
                    .collect();
                log.append_replicated(new.clone()).unwrap();
                model.appended(new, &config);
            }
            Op::AppendMisplaced { skew } => {
                let first = model.leo().saturating_add_signed(skew);
                if first != model.leo() {
                    let err = log.append_replicated(vec![record(first, 9)]).unwrap_err();
                    prop_assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
                }
            }
            Op::Truncate { to } => {
                log.truncate_to(to).unwrap();
                if to < model.leo() {
                    model.records.truncate(to as usize);
                    model.flushed = model.flushed.min(to);
                }
            }
            Op::Flush => {
                log.flush().unwrap();
                model.flushed = model.leo();
            }
            Op::FlushWhenDue => {
                log.flush_if_due(Instant::now() + Duration::from_secs(3600))
                    .unwrap();
                if config.flush_ms.is_some() {
                    model.flushed = model.leo();
                }
            }
            Op::Read { offset, max, limit } => {
                let got = log.read(offset, max, limit).unwrap();
                let end = limit.min(model.leo());
                let expected: Vec<_> = (offset..end)
                    .take(max)
                    .map(|o| model.records[o as usize].clone())
                    .collect();
                prop_assert_eq!(got, expected);
            }
            Op::Reopen => {
                drop(log);
                log = Log::open(dir, config.clone()).unwrap();
                model.flushed = model.leo();
            }
            Op::Crash => {
                log.crash();
                log = Log::open(dir, config.clone()).unwrap();
                if config.simulate_page_cache {
                    model.records.truncate(model.flushed as usize);
                }
                model.flushed = model.leo();
            }
        }
        check(&log, &model)?;
    }
    drop(log);
    let log = Log::open(dir, config).unwrap();
    model.flushed = model.leo();
    check(&log, &model)
}

/// Damage done to the files of a log between two runs.
#[derive(Debug, Clone)]
enum Damage {
    /// XOR a byte (`at` is taken modulo the file's length).
    Flip {
        file: usize,
        at: usize,
        mask: u8,
    },
    /// Cut the file to `at` modulo its length.
    Cut {
        file: usize,
        at: usize,
    },
    /// Append bytes, as a write of garbage would.
    Garbage {
        file: usize,
        bytes: Vec<u8>,
    },
    Delete {
        file: usize,
    },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        4 => (any::<usize>(), any::<usize>(), 1..=255u8)
            .prop_map(|(file, at, mask)| Damage::Flip { file, at, mask }),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(file, at)| Damage::Cut { file, at }),
        1 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..40))
            .prop_map(|(file, bytes)| Damage::Garbage { file, bytes }),
        1 => any::<usize>().prop_map(|file| Damage::Delete { file }),
    ]
}

fn inflict(dir: &Path, damage: &Damage) {
    let files = segment_files(dir);
    if files.is_empty() {
        return;
    }
    let pick = |i: usize| &files[i % files.len()];
    match damage {
        Damage::Flip { file, at, mask } => {
            let path = pick(*file);
            let mut bytes = fs::read(path).unwrap();
            if !bytes.is_empty() {
                let i = at % bytes.len();
                bytes[i] ^= mask;
                fs::write(path, bytes).unwrap();
            }
        }
        Damage::Cut { file, at } => {
            let path = pick(*file);
            let mut bytes = fs::read(path).unwrap();
            if !bytes.is_empty() {
                bytes.truncate(at % bytes.len());
                fs::write(path, bytes).unwrap();
            }
        }
        Damage::Garbage { file, bytes: junk } => {
            let path = pick(*file);
            let mut bytes = fs::read(path).unwrap();
            bytes.extend_from_slice(junk);
            fs::write(path, bytes).unwrap();
        }
        Damage::Delete { file } => fs::remove_file(pick(*file)).unwrap(),
    }
}

proptest! {
    #![proptest_config(Config { cases: 96, failure_persistence: None, ..Config::default() })]

    #[test]
    fn log_behaves_like_a_vec(config in log_config(), ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        run(dir.path(), config, ops)?;
    }

    #[test]
    fn damaged_files_recover_to_a_prefix(
        n in 1..60u64,
        damages in proptest::collection::vec(damage(), 1..4),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig { segment_bytes: 200, ..LogConfig::default() };
        let original = {
            let mut log = Log::open(dir.path(), config.clone()).unwrap();
            for o in 0..n {
                let r = record(o, (o / 10) as i32);
                log.append(r.leader_epoch, vec![(r.key, r.value)]).unwrap();
            }
            log.read(0, usize::MAX, u64::MAX).unwrap()
        };
        for d in &damages {
            inflict(dir.path(), d);
        }
        let mut log = Log::open(dir.path(), config.clone()).unwrap();
        let kept = log.read(0, usize::MAX, u64::MAX).unwrap();
        prop_assert!(kept.len() <= original.len());
        prop_assert_eq!(&kept[..], &original[..kept.len()]);
        // Recovery left a clean log: it takes appends and reopens unchanged.
        let leo = log.log_end_offset();
        prop_assert_eq!(log.append(7, vec![(None, rv!("after"))]).unwrap(), leo);
        drop(log);
        let log = Log::open(dir.path(), config).unwrap();
        let again = log.read(0, usize::MAX, u64::MAX).unwrap();
        prop_assert_eq!(&again[..kept.len()], &kept[..]);
        prop_assert_eq!(again.len(), kept.len() + 1);
    }
}
