//! Every Porcupine reference history gets its known verdict
//! (tests/data/porcupine/README.md).

use std::path::PathBuf;

use checker::check::{Model, check};
use checker::format::{self, Format};
use checker::linear::Options;
use checker::verdict::{Results, Validity};

fn data(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/porcupine")
        .join(path)
}

fn judge(path: &str) -> Results {
    let text = std::fs::read_to_string(data(path)).unwrap();
    let fmt = format::detect(&text).unwrap();
    let parsed = format::parse(&text, fmt).unwrap();
    let model = Model::infer(fmt, &parsed.events).unwrap();
    check(fmt, &parsed.events, model, &[], &Options::default()).unwrap()
}

const LINEARIZABLE: [usize; 10] = [2, 5, 7, 18, 25, 31, 38, 45, 48, 49];

#[test]
fn jepsen_etcd_histories() {
    for i in 0..50 {
        let name = format!("jepsen/etcd_{i:03}.log");
        assert_eq!(
            format::detect(&std::fs::read_to_string(data(&name)).unwrap()),
            Ok(Format::JepsenLog)
        );
        let r = judge(&name);
        let expected = if LINEARIZABLE.contains(&i) {
            Validity::Valid
        } else {
            Validity::Invalid
        };
        assert_eq!(r.valid, expected, "{name}");
        if expected == Validity::Invalid {
            let a = &r.checkers["linearizable"].anomalies[0];
            let e = a.explanation.as_ref().expect("an explanation");
            assert!(!e.states.is_empty(), "{name}");
        }
    }
}

#[test]
fn kv_histories() {
    for c in ["c01", "c10", "c50"] {
        for (suffix, expected) in [("ok", Validity::Valid), ("bad", Validity::Invalid)] {
            let name = format!("kv/{c}-{suffix}.txt");
            assert_eq!(judge(&name).valid, expected, "{name}");
        }
    }
}

fn events(path: &str) -> Vec<checker::history::Event> {
    let text = std::fs::read_to_string(data(path)).unwrap();
    format::parse(&text, format::detect(&text).unwrap())
        .unwrap()
        .events
}

#[test]
fn reported_keys_do_not_depend_on_threads() {
    use checker::linear::{ModelKind, check};
    let evs = events("kv/c50-bad.txt");
    let run = |threads| {
        let r = check(
            &evs,
            ModelKind::Kv,
            &Options {
                threads,
                ..Options::default()
            },
        )
        .unwrap();
        serde_json::to_string(&r).unwrap()
    };
    let one = run(1);
    assert!(one.contains("nonlinearizable"));
    assert_eq!(one, run(2));
    assert_eq!(one, run(4));
}

#[test]
fn budgets_end_in_unknown() {
    use checker::linear::{ModelKind, check};
    // The plain search needs about 180,000 memo entries for etcd_002 (the
    // pruned one a few hundred, too few to reach a budget).
    let evs = events("jepsen/etcd_002.log");
    let opts = Options {
        failed_cas_observes: true,
        max_memory: 64 << 10,
        plain: true,
        ..Options::default()
    };
    let r = check(&evs, ModelKind::CasRegister, &opts).unwrap();
    assert_eq!(r.valid, Validity::Unknown);
    assert!(
        r.reason.as_deref().unwrap_or("").contains("memory budget"),
        "{:?}",
        r.reason
    );
    let opts = Options {
        failed_cas_observes: true,
        time_limit: Some(std::time::Duration::from_nanos(1)),
        plain: true,
        ..Options::default()
    };
    let r = check(&evs, ModelKind::CasRegister, &opts).unwrap();
    assert_eq!(r.valid, Validity::Unknown);
    assert!(
        r.reason.as_deref().unwrap_or("").contains("time limit"),
        "{:?}",
        r.reason
    );
}
