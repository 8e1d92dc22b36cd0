//! The search at scale, each history checked by ours and by a baseline in the
//! same run (tests/support/families.rs generates them from fixed seeds):
//!
//! 1. The hard family: single-register cas histories of 150 and 200 operations,
//!    5 clients, 15% indeterminate, values 0–4, one late read corrupted (seeds
//!    1–30 of each size). The baseline is the plain Wing–Gong–Lowe search
//!    (`Options::plain`: Porcupine's algorithm on our engine — every operation
//!    searched, an indeterminate one returning after every event, no pruning).
//!    Both get the same memory budget (1 GiB); ours a 60 s time limit, the
//!    baseline `BASELINE_SECS` (default 30, Porcupine's figure in the issue of
//!    its hard cases). Per history: the verdict, the time, the peak heap the
//!    check allocated and its peak resident memory (benches/support/heap.rs;
//!    measured alike for both), the memo entries.
//! 2. The unique-value path: a 100,000-operation read/write history with unique
//!    written values (`UNIQUE_OPS`), linearizable and with one read corrupted,
//!    read from its history.jsonl text and checked as `watermark check` does;
//!    the baseline with a 10 s limit.
//!
//! Run: `cargo bench -p checker --bench families` (`FAMILY_SEEDS=1-5` for fewer).
//! A `--bench` mode of its own rather than divan: each history is one
//! measurement, and the baseline's runs take up to its time limit.

#[path = "../tests/support/families.rs"]
mod families;
#[path = "support/heap.rs"]
mod heap;

use std::time::{Duration, Instant};

use checker::check::{Model, check};
use checker::format::{self, Format};
use checker::history::Event;
use checker::linear::{self, ModelKind, Options};
use checker::verdict::Validity;

#[global_allocator]
static ALLOC: heap::Counting = heap::Counting;

const GIB: usize = 1 << 30;

/// One check's measurements.
struct Run {
    valid: Validity,
    secs: f64,
    memory: heap::Memory,
    entries: u64,
}

fn measure(events: &[Event], options: &Options) -> Run {
    let start = Instant::now();
    let (r, memory) = heap::measure(|| {
        linear::check(events, ModelKind::CasRegister, options).expect("a register history")
    });
    Run {
        valid: r.valid,
        secs: start.elapsed().as_secs_f64(),
        memory,
        entries: r.stats.get("memo-entries").copied().unwrap_or(0),
    }
}

fn env_secs(name: &str, default: u64) -> Duration {
    Duration::from_secs(
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default),
    )
}

fn seeds() -> Vec<u64> {
    let spec = std::env::var("FAMILY_SEEDS").unwrap_or_default();
    match spec.split_once('-').map(|(a, b)| (a.parse(), b.parse())) {
        Some((Ok(a), Ok(b))) => (a..=b).collect(),
        _ => families::SEEDS.collect(),
    }
}

fn cell(r: &Run) -> String {
    format!(
        "{:<8} {:>8.3}s {:>8.1} {:>8.1} {:>9}",
        r.valid.to_string(),
        r.secs,
        heap::mib(r.memory.heap),
        heap::mib(r.memory.rss),
        r.entries
    )
}

/// Summary of one side over a size: decided, slowest, largest peak, median time.
fn summary(runs: &[&Run]) -> String {
    let decided = runs.iter().filter(|r| r.valid != Validity::Unknown).count();
    let mut secs: Vec<f64> = runs.iter().map(|r| r.secs).collect();
    secs.sort_by(f64::total_cmp);
    let heap = runs.iter().map(|r| r.memory.heap).max().unwrap_or(0);
    let rss = runs.iter().map(|r| r.memory.rss).max().unwrap_or(0);
    format!(
        "decided {decided}/{}, median {:.3}s, slowest {:.3}s, largest peak heap {:.1} MiB, largest peak RSS {:.1} MiB",
        runs.len(),
        secs.get(secs.len() / 2).copied().unwrap_or(0.0),
        secs.last().copied().unwrap_or(0.0),
        heap::mib(heap),
        heap::mib(rss),
    )
}

fn hard_family() {
    let ours = Options {
        time_limit: Some(Duration::from_secs(60)),
        max_memory: GIB,
        threads: 1,
        ..Options::default()
    };
    let baseline = Options {
        time_limit: Some(env_secs("BASELINE_SECS", 30)),
        plain: true,
        ..ours.clone()
    };
    println!("The hard family (ours | baseline: plain WGL, as Porcupine)");
    println!("(peak heap and peak RSS in MiB; memo: entries)");
    println!(
        "{:>4} {:>4}  {:<8} {:>9} {:>8} {:>8} {:>9} | {:<8} {:>9} {:>8} {:>8} {:>9}",
        "ops",
        "seed",
        "ours",
        "time",
        "heap",
        "rss",
        "memo",
        "baseline",
        "time",
        "heap",
        "rss",
        "memo"
    );
    for ops in [150, 200] {
        let mut runs = Vec::new();
        for seed in seeds() {
            let h = families::hard(families::shape(ops), seed);
            let (a, b) = (measure(&h, &ours), measure(&h, &baseline));
            let disagree =
                a.valid != b.valid && a.valid != Validity::Unknown && b.valid != Validity::Unknown;
            println!(
                "{ops:>4} {seed:>4}  {} | {}{}",
                cell(&a),
                cell(&b),
                if disagree { "  VERDICTS DIFFER" } else { "" }
            );
            runs.push((a, b));
        }
        let ours: Vec<&Run> = runs.iter().map(|(a, _)| a).collect();
        let base: Vec<&Run> = runs.iter().map(|(_, b)| b).collect();
        let both = runs
            .iter()
            .filter(|(a, b)| a.valid != Validity::Unknown && b.valid != Validity::Unknown);
        let agree = both.clone().filter(|(a, b)| a.valid == b.valid).count();
        println!("{ops} ops, ours:     {}", summary(&ours));
        println!("{ops} ops, baseline: {}", summary(&base));
        println!(
            "{ops} ops: same verdict on {agree} of the {} decided by both\n",
            both.count()
        );
    }
}

fn unique_values() {
    let ops = std::env::var("UNIQUE_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    println!("The unique-value path: {ops} operations on one key, read from history.jsonl");
    for corrupt in [false, true] {
        let events = families::unique(ops, 1, corrupt);
        let text: String = events.iter().map(|e| e.to_json_line() + "\n").collect();
        let options = Options {
            time_limit: Some(Duration::from_secs(60)),
            max_memory: GIB,
            ..Options::default()
        };
        let start = Instant::now();
        let ((verdict, parse_secs), memory) = heap::measure(|| {
            let parsed = format::parse(&text, Format::Jsonl).expect("our own history");
            let parse_secs = start.elapsed().as_secs_f64();
            let r = check(
                Format::Jsonl,
                &parsed.events,
                Model::CasRegister,
                &[],
                &options,
            )
            .expect("a register history");
            (r.valid, parse_secs)
        });
        let total = start.elapsed().as_secs_f64();
        let base = measure(
            &events,
            &Options {
                time_limit: Some(Duration::from_secs(10)),
                plain: true,
                ..options.clone()
            },
        );
        println!(
            "  {}: ours {verdict} in {total:.2}s (parse {parse_secs:.2}s, check {:.2}s), peak heap {:.0} MiB, peak RSS {:.0} MiB; \
             baseline {} after {:.1}s, peak heap {:.0} MiB, peak RSS {:.0} MiB",
            if corrupt {
                "one read corrupted"
            } else {
                "linearizable"
            },
            total - parse_secs,
            heap::mib(memory.heap),
            heap::mib(memory.rss),
            base.valid,
            base.secs,
            heap::mib(base.memory.heap),
            heap::mib(base.memory.rss),
        );
    }
}

fn main() {
    hard_family();
    unique_values();
}
