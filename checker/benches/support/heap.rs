//! What a piece of work costs in memory, two ways:
//!
//! - **peak heap**: the most bytes it had allocated at once, above what was
//!   allocated before — counted by a global allocator switched on only around
//!   the work (counting costs two shared atomic updates per allocation). A
//!   `realloc` is the system's (in place, or by remapping, for large blocks) and
//!   counts its change in size, as in a production build.
//! - **peak RSS**: the most resident memory the process had while it ran, above
//!   its resident memory before (Linux: `VmHWM`, reset through
//!   `/proc/self/clear_refs`; 0 where unavailable). Pages allocated but never
//!   touched do not count.
//!
//! Shared by the benchmarks (`#[path]`-included); not each reads every figure.

#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

pub struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grew(by: isize) {
    if COUNTING.load(Ordering::Relaxed) {
        let live = LIVE.fetch_add(by, Ordering::Relaxed) + by;
        PEAK.fetch_max(live, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        grew(l.size() as isize);
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        grew(l.size() as isize);
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        grew(-(l.size() as isize));
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        grew(new_size as isize - l.size() as isize);
        unsafe { System.realloc(p, l, new_size) }
    }
}

/// The process's (current, peak) resident set in bytes, from /proc/self/status.
fn rss() -> Option<(usize, usize)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<usize> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb << 10)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// A piece of work's memory: peak heap and peak RSS, in bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    pub heap: usize,
    pub rss: usize,
}

/// Run `f`; its result and the memory it took.
pub fn measure<T>(f: impl FnOnce() -> T) -> (T, Memory) {
    // Writing 5 resets the peak resident set to the current one.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let before = rss().map_or(0, |(now, _)| now);
    LIVE.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    let out = f();
    COUNTING.store(false, Ordering::Relaxed);
    let rss = match rss() {
        Some((_, peak)) if reset => peak.saturating_sub(before),
        _ => 0,
    };
    let heap = PEAK.load(Ordering::Relaxed).max(0) as usize;
    (out, Memory { heap, rss })
}

pub fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}
