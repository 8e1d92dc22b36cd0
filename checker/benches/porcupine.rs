//! The checker on Porcupine's reference histories, beside Porcupine v1.3.0's own
//! figures (tests/data/porcupine/README.md). Parsing is excluded, as in Porcupine's
//! benchmarks. After divan's table, a summary prints our median and fastest of 20
//! runs, Porcupine's figure, the ratio of medians, and the peak heap a check
//! allocated (benches/support/heap.rs). The heap is counted in separate runs:
//! counting costs two shared atomic updates per allocation, which would slow the
//! timed runs.
//!
//! Run: `cargo bench -p checker --bench porcupine`.

#[path = "support/heap.rs"]
mod heap;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use checker::format::{self, Format};
use checker::history::Event;
use checker::linear::{self, ModelKind, Options};
use checker::verdict::Validity;

#[global_allocator]
static ALLOC: heap::Counting = heap::Counting;

fn load(path: &str) -> (Format, Vec<Event>) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/porcupine")
        .join(path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let fmt = format::detect(&text).expect("a known format");
    (
        fmt,
        format::parse(&text, fmt)
            .expect("a parsable history")
            .events,
    )
}

/// A benchmark case: histories, model, and Porcupine's reference time.
struct Case {
    name: &'static str,
    histories: Vec<Vec<Event>>,
    kind: ModelKind,
    porcupine: Duration,
    expect: Validity,
}

fn cases() -> Vec<Case> {
    let jepsen = (0..50)
        .map(|i| load(&format!("jepsen/etcd_{i:03}.log")).1)
        .collect();
    let kv = |f: &str| vec![load(f).1];
    vec![
        Case {
            name: "jepsen-all-50",
            histories: jepsen,
            kind: ModelKind::CasRegister,
            porcupine: Duration::from_millis(200),
            expect: Validity::Invalid,
        },
        Case {
            name: "kv-c50-ok",
            histories: kv("kv/c50-ok.txt"),
            kind: ModelKind::Kv,
            porcupine: Duration::from_millis(96),
            expect: Validity::Valid,
        },
        Case {
            name: "kv-c50-bad",
            histories: kv("kv/c50-bad.txt"),
            kind: ModelKind::Kv,
            porcupine: Duration::from_millis(15),
            expect: Validity::Invalid,
        },
        Case {
            name: "kv-c10-ok-unsplit",
            histories: kv("kv/c10-ok.txt"),
            kind: ModelKind::KvUnsplit,
            porcupine: Duration::from_millis(1500),
            expect: Validity::Valid,
        },
    ]
}

fn options(kind: ModelKind) -> Options {
    Options {
        failed_cas_observes: kind == ModelKind::CasRegister,
        ..Options::default()
    }
}

/// Check every history of a case; the fold of their verdicts.
fn run(case: &Case) -> Validity {
    let opts = options(case.kind);
    case.histories
        .iter()
        .map(|h| {
            linear::check(h, case.kind, &opts)
                .expect("a checkable history")
                .valid
        })
        .fold(Validity::Valid, Validity::and)
}

#[divan::bench(args = ["jepsen-all-50", "kv-c50-ok", "kv-c50-bad", "kv-c10-ok-unsplit"], sample_count = 10)]
fn check(bencher: divan::Bencher, name: &str) {
    let case = cases()
        .into_iter()
        .find(|c| c.name == name)
        .expect("a case");
    bencher.bench_local(|| divan::black_box(run(&case)));
}

fn main() {
    divan::main();
    println!();
    println!(
        "{:<20} {:>10} {:>10} {:>14} {:>8} {:>12}  verdict",
        "case", "median", "fastest", "porcupine 1.3", "ratio", "peak heap"
    );
    for case in cases() {
        let mut times = Vec::new();
        let mut peak = 0;
        let mut verdict = Validity::Unknown;
        for _ in 0..20 {
            let t = Instant::now();
            verdict = run(&case);
            times.push(t.elapsed());
        }
        for _ in 0..3 {
            peak = peak.max(heap::measure(|| run(&case)).1.heap);
        }
        times.sort();
        let (median, fastest) = (times[times.len() / 2], times[0]);
        let ok = if verdict == case.expect {
            "as expected"
        } else {
            "WRONG"
        };
        println!(
            "{:<20} {:>8.1}ms {:>8.1}ms {:>12.1}ms {:>7.2}x {:>9.1}MiB  {verdict} ({ok})",
            case.name,
            median.as_secs_f64() * 1e3,
            fastest.as_secs_f64() * 1e3,
            case.porcupine.as_secs_f64() * 1e3,
            median.as_secs_f64() / case.porcupine.as_secs_f64(),
            heap::mib(peak),
        );
    }
}
