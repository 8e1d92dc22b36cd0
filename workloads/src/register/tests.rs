//! Unit tests of the register workload: its generator's seeds, keys, values and
//! probes, the values its history records, and where keys live.

use super::*;

fn ops(seed: u64, worker: u32, n: usize) -> Vec<Op> {
    let mut g = Generator::new(seed, worker, 4, 200.0, 2);
    let known = HashMap::new();
    (0..n).map(|_| g.next_op(&known)).collect()
}

#[test]
fn a_seed_fixes_each_workers_operations() {
    assert_eq!(ops(7, 1, 200), ops(7, 1, 200));
    assert_ne!(ops(7, 1, 200), ops(8, 1, 200));
    assert_ne!(ops(7, 1, 200), ops(7, 2, 200));
}

#[test]
fn written_values_are_unique_across_workers() {
    let mut seen = std::collections::HashSet::new();
    for w in 0..4 {
        for op in ops(3, w, 500) {
            match op {
                Op::Write { value, .. } | Op::Cas { new: value, .. } => {
                    assert!(seen.insert(value), "value {value} written twice");
                }
                Op::Read { .. } => {}
            }
        }
    }
    assert!(seen.len() > 500);
}

#[test]
fn keys_retire_after_a_bounded_number_of_writes() {
    let concurrency = 4u32;
    let mut writes: HashMap<String, u64> = HashMap::new();
    let mut keys = std::collections::HashSet::new();
    for w in 0..concurrency {
        for op in ops(5, w, 2000) {
            keys.insert(op.key().to_string());
            if !matches!(op, Op::Read { .. }) {
                *writes.entry(op.key().to_string()).or_default() += 1;
            }
        }
    }
    let max = writes.values().copied().max().unwrap();
    assert!(max <= u64::from(concurrency) * WRITES_PER_WINDOW, "{max}");
    assert!(keys.len() > 100, "only {} keys", keys.len());
}

#[test]
fn cas_expects_the_last_value_seen() {
    let mut g = Generator::new(1, 0, 1, 100.0, 2);
    let known: HashMap<String, Value> = (0..ACTIVE_KEYS)
        .map(|k| (format!("k{k}"), json!(k * 10)))
        .collect();
    let mut cas = 0;
    for _ in 0..20 {
        if let Op::Cas {
            key,
            expected,
            probe: None,
            ..
        } = g.next_op(&known)
        {
            cas += 1;
            assert_eq!(Some(&expected), known.get(&key).or(Some(&Value::Null)));
        }
    }
    assert!(cas > 0);
}

#[test]
fn every_32nd_cas_is_a_probe_of_either_kind() {
    let known = HashMap::new();
    let mut probes = Vec::new();
    let mut g = Generator::new(9, 0, 1, 100.0, 2);
    let mut cas = 0;
    for _ in 0..2000 {
        match g.next_op(&known) {
            Op::Cas { probe: None, .. } => cas += 1,
            Op::Cas {
                probe: Some(probe),
                expected,
                ..
            } => {
                cas += 1;
                assert_eq!(cas % PROBE_EVERY, 0);
                if probe == Probe::OtherPartition {
                    assert_eq!(expected, Value::Null);
                }
                probes.push(probe);
            }
            _ => {}
        }
    }
    assert!(probes.contains(&Probe::TwoRecords), "{probes:?}");
    assert!(probes.contains(&Probe::OtherPartition), "{probes:?}");
    // One partition leaves nowhere else to send a cas: two records only.
    let mut one = Generator::new(9, 0, 1, 100.0, 1);
    let kinds: Vec<Probe> = (0..2000)
        .filter_map(|_| match one.next_op(&known) {
            Op::Cas { probe, .. } => probe,
            _ => None,
        })
        .collect();
    assert!(!kinds.is_empty() && kinds.iter().all(|&p| p == Probe::TwoRecords));
}

#[test]
fn history_values_follow_the_spec() {
    let read = Op::Read { key: "k1".into() };
    assert_eq!(
        read.invocation(),
        ("read", json!({"key": "k1", "value": null}))
    );
    let cas = Op::Cas {
        key: "k1".into(),
        expected: Value::Null,
        new: 4,
        probe: None,
    };
    assert_eq!(
        cas.invocation(),
        ("cas", json!({"key": "k1", "value": [null, 4]}))
    );
}

#[test]
fn keys_map_to_partitions_by_crc32c() {
    assert_eq!(partition_for_key("k1", 1), 0);
    assert_eq!(partition_for_key("k1", 3), crc32c::crc32c(b"k1") % 3);
}
