//! The generated families (tests/support/families.rs) hold the pruned search and
//! the unique-value path to the plain Wing–Gong–Lowe search: wherever the plain
//! search decides within a small budget, the verdicts are the same; and every
//! history of the hard family is decided (timings are the benchmark's:
//! `cargo bench -p checker --bench families`).

#[path = "support/families.rs"]
mod families;

use std::time::Duration;

use checker::history::Event;
use checker::linear::{ModelKind, Options, check};
use checker::verdict::{CheckerResult, Validity};

fn ours(events: &[Event]) -> CheckerResult {
    let options = Options {
        threads: 1,
        time_limit: Some(Duration::from_secs(120)),
        ..Options::default()
    };
    check(events, ModelKind::CasRegister, &options).unwrap()
}

fn plain(events: &[Event]) -> Validity {
    let options = Options {
        threads: 1,
        plain: true,
        max_memory: 16 << 20,
        ..Options::default()
    };
    check(events, ModelKind::CasRegister, &options)
        .unwrap()
        .valid
}

/// Verdicts compared with the plain search, by the plain search's verdict
/// (valid, invalid).
fn compare(histories: impl IntoIterator<Item = (String, Vec<Event>)>) -> [usize; 2] {
    let mut compared = [0, 0];
    for (name, h) in histories {
        let r = ours(&h);
        assert_ne!(r.valid, Validity::Unknown, "{name}: {:?}", r.reason);
        let p = plain(&h);
        if p != Validity::Unknown {
            assert_eq!(r.valid, p, "{name}");
            compared[usize::from(p == Validity::Invalid)] += 1;
        }
    }
    compared
}

#[test]
fn the_hard_family_is_decided_and_agrees_with_the_plain_search() {
    let family = [150, 200].into_iter().flat_map(|ops| {
        families::SEEDS.map(move |seed| {
            let name = format!("{ops} ops, seed {seed}");
            (name, families::hard(families::shape(ops), seed))
        })
    });
    let compared = compare(family);
    assert!(compared[0] > 40, "{compared:?}");
    // Shorter histories of the same shape, where the plain search also proves
    // the violations within its budget: both verdicts are compared.
    let shorter = [60, 80, 100].into_iter().flat_map(|ops| {
        (1..=60).map(move |seed| {
            let name = format!("{ops} ops, seed {seed}");
            (name, families::hard(families::shape(ops), seed))
        })
    });
    let compared = compare(shorter);
    assert!(compared[0] > 100 && compared[1] > 20, "{compared:?}");
}

#[test]
fn unique_value_histories_are_decided_by_their_zones() {
    let h = families::unique(20_000, 7, false);
    let r = ours(&h);
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.reason);
    assert_eq!(r.stats["keys-unique-values"], 1);
    assert_eq!(r.stats["memo-entries"], 0);

    // The corrupted read is the one reported, explained on the operations that
    // conflict with it.
    let h = families::unique(20_000, 7, true);
    let r = ours(&h);
    assert_eq!(r.valid, Validity::Invalid);
    let a = &r.anomalies[0];
    assert!(
        a.message.contains("operations that conflict"),
        "{}",
        a.message
    );
    let e = a.explanation.as_ref().unwrap();
    assert!(e.prefix.len() < 20, "{}", e.prefix.len());
}

#[test]
fn unique_value_histories_agree_with_the_plain_search() {
    let histories = (1..=20).flat_map(|seed| {
        [false, true].map(|corrupt| {
            let name = format!("seed {seed}, corrupt {corrupt}");
            (name, families::unique(60, seed, corrupt))
        })
    });
    let compared = compare(histories);
    assert!(compared[0] > 15 && compared[1] > 15, "{compared:?}");
}
