//! Planted bugs (`broker node --bug NAME`, docs/selftest.md): known ways a
//! replicated log goes wrong, planted on purpose so `watermark selftest` can show the
//! harness catches each of them. Every planted deviation in the broker reads
//! `if bugs.has(Bug::NAME) { /* PLANTED BUG */ … }`; without `--bug` none is planted
//! and the broker follows its rules unchanged. The list of bugs is declared in the
//! `broker-config` crate, which the harness shares.
//!
//! `hw-truncation` is no flag here: it is `--truncation hw`. `abort` breaks no
//! replication rule: it is test-only, a broker that crashes on its own
//! ([`Bugs::count_produce`]), so the harness's crash detection can be tested over
//! real processes.

use std::sync::atomic::{AtomicU64, Ordering};

pub use broker_config::Bug;

/// `--bug abort`: the produce request at which the node aborts.
pub const ABORT_AT_PRODUCE: u64 = 100;

/// Produce requests this process received (counted under `--bug abort` only).
static PRODUCE_REQUESTS: AtomicU64 = AtomicU64::new(0);

/// Which rule, if any, this broker breaks: each planted deviation reads
/// `if bugs.has(Bug::NAME) { /* PLANTED BUG */ … }`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bugs {
    planted: Option<Bug>,
}

impl Bugs {
    /// The bug `--bug` plants (`hw-truncation` is no flag: it is a truncation mode,
    /// and plants nothing here).
    pub fn planted(bug: Option<Bug>) -> Bugs {
        Bugs {
            planted: bug.filter(|&b| b != Bug::HwTruncation),
        }
    }

    /// Does this broker break `bug`'s rule?
    pub fn has(&self, bug: Bug) -> bool {
        self.planted == Some(bug)
    }

    /// Count a produce request. PLANTED BUG (abort): under `--bug abort` the
    /// [`ABORT_AT_PRODUCE`]-th one, counted from this process's start, says so on
    /// stderr and aborts the process — deterministic in the requests it receives.
    pub fn count_produce(&self) {
        if !self.has(Bug::Abort) {
            return;
        }
        let n = PRODUCE_REQUESTS.fetch_add(1, Ordering::SeqCst) + 1;
        if n == ABORT_AT_PRODUCE {
            eprintln!(
                "PLANTED BUG (abort): aborting at produce request {n} (--bug abort, test-only)"
            );
            no_core_dump();
            std::process::abort();
        }
    }
}

/// A planted abort leaves no core file behind (in the working directory of
/// whoever started the broker).
fn no_core_dump() {
    let none = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit with a valid pointer to a local rlimit.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &none);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn each_bug_plants_itself_alone() {
        assert_eq!(Bugs::planted(None), Bugs::default());
        assert_eq!(Bugs::planted(Some(Bug::HwTruncation)), Bugs::default());
        for &bug in Bug::value_variants() {
            let b = Bugs::planted(Some(bug));
            for &other in Bug::value_variants() {
                let planted = other == bug && bug != Bug::HwTruncation;
                assert_eq!(b.has(other), planted, "--bug {bug} and {other}");
            }
        }
    }
}
