//! The queue analysis at campaign scale: queue histories generated from fixed
//! seeds (benches/support/queue_gen.rs) — a 50 MB and a 200 MB history of many
//! small polls, and one the size of a 30 s campaign at 3,000 operations a second
//! (~96,000 sends and polls, ~4.5 M polled records) — each checked two ways in the
//! same run:
//!
//! - **streaming** (what `watermark check` does): `check::read_history` reads the
//!   text line by line into the queue analysis's compact operations;
//! - **baseline**: the whole text in memory, parsed into events
//!   (`format::parse`), then checked (`check::check`), as before streaming.
//!
//! Per history: the verdict, the time, and the peak heap each way
//! (benches/support/heap.rs).
//!
//! Run: `cargo bench -p checker --bench queue_scale` (`QUEUE_SIZES=campaign` for
//! one). `cargo bench -p checker --bench queue_scale -- --write DIR` writes the
//! three histories to DIR instead, for measuring `watermark check` on them
//! (`/usr/bin/time -v watermark check DIR/queue-200mb.jsonl`).

#[path = "support/heap.rs"]
mod heap;
#[path = "support/queue_gen.rs"]
mod queue_gen;

use std::time::Instant;

use checker::check::{Model, check, read_history};
use checker::format::{self, Format};
use checker::linear::Options;
use queue_gen::{Shape, generate};

#[global_allocator]
static ALLOC: heap::Counting = heap::Counting;

/// The histories, by name.
fn shapes() -> Vec<(&'static str, Shape)> {
    let shape = |ops, records_per_poll| Shape {
        ops,
        records_per_poll,
        partitions: 2,
        concurrency: 32,
        seed: 7,
    };
    vec![
        ("50mb", shape(158_000, 7)),
        ("200mb", shape(633_000, 7)),
        ("campaign", shape(96_000, 90)),
    ]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--write") {
        let dir = std::path::PathBuf::from(args.get(i + 1).expect("--write DIR"));
        std::fs::create_dir_all(&dir).expect("create DIR");
        for (name, shape) in shapes() {
            let path = dir.join(format!("queue-{name}.jsonl"));
            let file = std::fs::File::create(&path).expect("create the history");
            let w = generate(shape, std::io::BufWriter::new(file));
            println!("{}: {w:?}", path.display());
        }
        return;
    }
    let only = std::env::var("QUEUE_SIZES").ok();
    println!(
        "{:<9} {:>7} {:>8} {:>9} | {:>9} {:>10} | {:>9} {:>10} | {:>6}",
        "history", "MB", "ops", "records", "stream s", "heap MiB", "base s", "heap MiB", "ratio"
    );
    for (name, shape) in shapes() {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|n| n == name))
        {
            continue;
        }
        let mut text = Vec::new();
        let w = generate(shape, &mut text);

        let start = Instant::now();
        let (streamed, mem_s) = heap::measure(|| {
            let h = read_history(&text[..], Format::Jsonl, Some(Model::Queue))
                .expect("a generated history reads");
            h.check(Model::Queue, &[], &Options::default())
                .expect("a generated history checks")
                .valid
        });
        let stream_secs = start.elapsed().as_secs_f64();

        let start = Instant::now();
        let (baseline, mem_b) = heap::measure(|| {
            let text = String::from_utf8(text.clone()).expect("UTF-8");
            let parsed = format::parse(&text, Format::Jsonl).expect("a generated history parses");
            check(
                Format::Jsonl,
                &parsed.events,
                Model::Queue,
                &[],
                &Options::default(),
            )
            .expect("a generated history checks")
            .valid
        });
        let base_secs = start.elapsed().as_secs_f64();
        assert_eq!(streamed, baseline, "{name}: the two ways disagree");

        let mib = |b: usize| b as f64 / (1 << 20) as f64;
        println!(
            "{:<9} {:>7.1} {:>8} {:>9} | {:>9.2} {:>10.0} | {:>9.2} {:>10.0} | {:>5.1}x   {streamed}",
            name,
            w.bytes as f64 / 1e6,
            w.sends + w.polls,
            w.records,
            stream_secs,
            mib(mem_s.heap),
            base_secs,
            mib(mem_b.heap),
            base_secs / stream_secs,
        );
    }
}
