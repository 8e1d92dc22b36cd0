//! Clock faults from outside the process (docs/faults.md#clocks): each process of a
//! campaign with clock faults runs under libfaketime (`LD_PRELOAD`), reading its wall
//! clock's offset from a control file of its own that the harness rewrites — an
//! offset, a step, a clock strobing between two offsets — with no change to the
//! machine's clock. Only the wall clock (`CLOCK_REALTIME`) is faked, as an NTP step or
//! a wrong clock would move it: monotonic clocks, which timers and leases must use,
//! run true.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::error::{HarnessError, Result};
use crate::proc::Proc;

/// Where Debian and Ubuntu (package `libfaketime`), Fedora and a local build put it.
const LIBFAKETIME: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib64/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
];

/// How a clock fault sets a process's wall clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockFault {
    /// Off by `offset_ms` (a skew between machines: small).
    Offset { offset_ms: i64 },
    /// Stepped by `offset_ms`, forward or back (a bad time source: large).
    Step { offset_ms: i64 },
    /// Flipping between true time and `offset_ms` every `period_ms`.
    Strobe { offset_ms: i64, period_ms: u64 },
}

impl ClockFault {
    /// Its offset from true time (a strobe's other offset).
    pub fn offset_ms(self) -> i64 {
        match self {
            ClockFault::Offset { offset_ms }
            | ClockFault::Step { offset_ms }
            | ClockFault::Strobe { offset_ms, .. } => offset_ms,
        }
    }
}

/// libfaketime's path: `WATERMARK_LIBFAKETIME`, else where distributions install it.
pub fn libfaketime() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("WATERMARK_LIBFAKETIME") {
        return Ok(PathBuf::from(p));
    }
    LIBFAKETIME
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .ok_or_else(|| {
            HarnessError::new(
                "clock faults need libfaketime (apt install libfaketime), not found in \
                 /usr/lib/*/faketime/; or set WATERMARK_LIBFAKETIME to its libfaketime.so.1",
            )
        })
}

/// libfaketime's control-file text for an offset: `+1.250` seconds.
fn offset_text(offset_ms: i64) -> String {
    let sign = if offset_ms < 0 { '-' } else { '+' };
    let abs = offset_ms.unsigned_abs();
    format!("{sign}{}.{:03}\n", abs / 1000, abs % 1000)
}

/// Replace the file whole (libfaketime rereads it at every clock read: it must never
/// see it half written).
fn write(path: &Path, offset_ms: i64) -> Result<()> {
    let tmp = path.with_extension("next");
    std::fs::write(&tmp, offset_text(offset_ms))
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| HarnessError::new(format!("{}: {e}", path.display())))
}

/// The processes' control files, and the strobes running.
pub struct Clocks {
    lib: PathBuf,
    files: BTreeMap<Proc, PathBuf>,
    strobes: BTreeMap<Proc, JoinHandle<()>>,
}

impl Clocks {
    /// Clocks for `procs`, each control file `<root>/<proc>/clock` at true time.
    pub fn new(root: &Path, procs: &[Proc]) -> Result<Clocks> {
        Clocks::in_dirs(procs.iter().map(|&p| (p, root.join(p.key()))))
    }

    /// Clocks for the processes of `dirs`, each control file `clock` in its
    /// directory (created if need be), at true time.
    pub fn in_dirs(dirs: impl IntoIterator<Item = (Proc, PathBuf)>) -> Result<Clocks> {
        let lib = libfaketime()?;
        let mut files = BTreeMap::new();
        for (p, dir) in dirs {
            std::fs::create_dir_all(&dir)
                .map_err(|e| HarnessError::new(format!("{}: {e}", dir.display())))?;
            let file = dir.join("clock");
            write(&file, 0)?;
            files.insert(p, file);
        }
        Ok(Clocks {
            lib,
            files,
            strobes: BTreeMap::new(),
        })
    }

    /// The environment that puts `p` under its clock.
    pub fn env(&self, p: Proc) -> Vec<(OsString, OsString)> {
        let Some(file) = self.files.get(&p) else {
            return Vec::new();
        };
        vec![
            ("LD_PRELOAD".into(), self.lib.clone().into_os_string()),
            (
                "FAKETIME_TIMESTAMP_FILE".into(),
                file.clone().into_os_string(),
            ),
            // Reread at every clock read, so a change shows at once.
            ("FAKETIME_NO_CACHE".into(), "1".into()),
            ("FAKETIME_DONT_FAKE_MONOTONIC".into(), "1".into()),
        ]
    }

    /// Set `p`'s clock as `fault` says (None: true time again).
    pub fn set(&mut self, p: Proc, fault: Option<ClockFault>) -> Result<()> {
        let file = self
            .files
            .get(&p)
            .ok_or_else(|| HarnessError::new(format!("{p} runs with no fake clock")))?
            .clone();
        if let Some(strobe) = self.strobes.remove(&p) {
            strobe.abort();
        }
        match fault {
            None => write(&file, 0),
            Some(ClockFault::Offset { offset_ms } | ClockFault::Step { offset_ms }) => {
                write(&file, offset_ms)
            }
            Some(ClockFault::Strobe {
                offset_ms,
                period_ms,
            }) => {
                write(&file, offset_ms)?;
                let period = Duration::from_millis(period_ms.max(1));
                self.strobes.insert(
                    p,
                    tokio::spawn(async move {
                        let mut off = false;
                        loop {
                            tokio::time::sleep(period).await;
                            let _ = write(&file, if off { offset_ms } else { 0 });
                            off = !off;
                        }
                    }),
                );
                Ok(())
            }
        }
    }

    /// Every clock at true time.
    pub fn reset_all(&mut self) -> Result<()> {
        let procs: Vec<Proc> = self.files.keys().copied().collect();
        for p in procs {
            self.set(p, None)?;
        }
        Ok(())
    }
}

impl Drop for Clocks {
    fn drop(&mut self) {
        for strobe in self.strobes.values() {
            strobe.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_written_as_libfaketime_reads_them() {
        assert_eq!(offset_text(0), "+0.000\n");
        assert_eq!(offset_text(1250), "+1.250\n");
        assert_eq!(offset_text(-3_600_005), "-3600.005\n");
    }

    /// The seconds since the epoch a process under `p`'s clock reads.
    fn date(clocks: &Clocks, p: Proc) -> i64 {
        let out = std::process::Command::new("date")
            .arg("+%s")
            .envs(clocks.env(p))
            .output()
            .unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[tokio::test]
    async fn a_process_reads_the_clock_its_fault_sets_and_true_time_after() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (Proc::Node(1), Proc::Node(2));
        let mut clocks = Clocks::new(dir.path(), &[a, b]).unwrap();
        let now = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64
        };
        assert!((date(&clocks, a) - now()).abs() <= 2);
        let hour = 3_600_000;
        clocks
            .set(a, Some(ClockFault::Step { offset_ms: -hour }))
            .unwrap();
        assert!(
            (date(&clocks, a) - (now() - 3600)).abs() <= 2,
            "stepped back"
        );
        assert!((date(&clocks, b) - now()).abs() <= 2, "b's clock untouched");
        clocks.set(a, None).unwrap();
        assert!((date(&clocks, a) - now()).abs() <= 2, "true again");
        // A strobe flips the clock: both offsets are seen within a few periods.
        let fault = ClockFault::Strobe {
            offset_ms: hour,
            period_ms: 20,
        };
        clocks.set(b, Some(fault)).unwrap();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            seen.insert((date(&clocks, b) - now() + 1800).div_euclid(3600));
            if seen.len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(7)).await;
        }
        assert_eq!(seen.len(), 2, "true time and an hour on: {seen:?}");
        clocks.reset_all().unwrap();
        assert!((date(&clocks, b) - now()).abs() <= 2);
    }
}
