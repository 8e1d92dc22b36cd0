//! How long a report takes for big runs: loading a run folder (parsing
//! history.jsonl and results.json) and rendering report.html, for synthetic queue
//! runs of 10k and 100k operations (the report tests' fixture generator, with
//! faults and planted lost writes). The page's size is printed too.
//!
//! Run: `cargo bench -p watermark --bench report`.

#[path = "../tests/integration/report_fixtures/mod.rs"]
mod report_fixtures;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use report_fixtures::{Plant, queue_run};
use watermark::report::{folder, page};

const SIZES: [usize; 2] = [10_000, 100_000];

fn main() {
    for ops in SIZES {
        let data = folder::load(&run_dir(ops)).unwrap();
        eprintln!(
            "report.html for {ops} operations: {} bytes",
            page::render(&data).len()
        );
    }
    divan::main();
}

/// One run folder per size, made once.
fn run_dir(ops: usize) -> PathBuf {
    static DIRS: OnceLock<Mutex<HashMap<usize, tempfile::TempDir>>> = OnceLock::new();
    let mut dirs = DIRS.get_or_init(Default::default).lock().unwrap();
    let tmp = dirs.entry(ops).or_insert_with(|| {
        let tmp = tempfile::tempdir().unwrap();
        queue_run(&tmp.path().join("run"), 11, 12, ops, Plant::TruncatedTail);
        tmp
    });
    tmp.path().join("run")
}

#[divan::bench(args = SIZES, sample_count = 5)]
fn load_run_folder(bencher: divan::Bencher, ops: usize) {
    let dir = run_dir(ops);
    bencher.bench(|| folder::load(&dir).unwrap());
}

#[divan::bench(args = SIZES, sample_count = 5)]
fn render_html(bencher: divan::Bencher, ops: usize) {
    let data = folder::load(&run_dir(ops)).unwrap();
    bencher.bench(|| page::render(&data));
}
