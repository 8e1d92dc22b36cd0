//! Crashes: processes of the cluster that died without the harness killing them — a
//! panic, an abort, an exit, a signal the harness did not send. The supervisor
//! reports each [`Death`] as it reaps it; here it becomes a [`Crash`] of a named
//! process, with its end in words and what its log says about it, handed to whoever
//! took the cluster's [`CrashReports`] receiver (the run writes each into the
//! history). A process the nemesis killed is not a crash; one that died on its own
//! is, even if the nemesis restarts it afterwards.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::ExitStatusExt;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::supervisor::{Death, DeathSink};
use crate::proc::Proc;

/// A process of the cluster that died on its own.
#[derive(Debug, Clone)]
pub struct Crash {
    pub proc: Proc,
    pub death: Death,
}

impl Crash {
    /// How it ended, in words: `killed by SIGABRT`, `exited with code 101`.
    pub fn status(&self) -> String {
        let status = self.death.status;
        match (status.code(), status.signal()) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(sig)) => {
                let name = nix::sys::signal::Signal::try_from(sig)
                    .map_or_else(|_| format!("signal {sig}"), |s| s.as_str().to_string());
                let core = if status.core_dumped() {
                    " (core dumped)"
                } else {
                    ""
                };
                format!("killed by {name}{core}")
            }
            (None, None) => format!("ended ({status})"),
        }
    }

    /// Its log, as a run folder names it: `nodes/2/broker.log`.
    pub fn log_in_run(&self) -> String {
        format!("nodes/{}/broker.log", self.proc.key())
    }

    /// What the log of this start of the process says about its end (see [`quote`]).
    pub fn quote(&self) -> Option<String> {
        let mut file = std::fs::File::open(&self.death.log_path).ok()?;
        let len = file.metadata().ok()?.len();
        let from = self.death.log_from.max(len.saturating_sub(TAIL_BYTES));
        file.seek(SeekFrom::Start(from)).ok()?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).ok()?;
        quote(&String::from_utf8_lossy(&bytes))
    }

    /// The `value` of its `crash` event in the history (docs/history.md).
    pub fn to_json(&self) -> Value {
        json!({
            "node": self.proc.to_json(),
            "pid": self.death.pid,
            "status": self.status(),
            "log": self.log_in_run(),
            "message": self.quote(),
        })
    }
}

/// How much of the end of a log is read for its quote.
const TAIL_BYTES: u64 = 256 * 1024;
/// Lines quoted, at most, and characters per line.
const QUOTED_LINES: usize = 8;
const LINE_CHARS: usize = 300;

/// Words of the lines a dying process writes: Rust's panic and its fatal runtime
/// errors (an allocation failure, a stack overflow, a panic while panicking), and
/// an announced abort.
const FATAL: [&str; 5] = [
    "panicked at",
    "fatal runtime error",
    "memory allocation of",
    "has overflowed its stack",
    "aborting",
];

/// What a process's output says about its end: from its last fatal line (a panic,
/// its message, up to the backtrace hint; an abort it announced), else its last
/// lines; never the broker's replication `EVENT` lines. `None` if it said nothing.
pub fn quote(output: &str) -> Option<String> {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty() && !l.starts_with("EVENT ") && !l.starts_with("listening on "))
        .collect();
    let fatal = lines
        .iter()
        .rposition(|l| FATAL.iter().any(|f| l.contains(f)));
    let picked: Vec<&str> = match fatal {
        Some(i) => lines[i..]
            .iter()
            .take_while(|l| !l.starts_with("note: run with") && !l.starts_with("stack backtrace"))
            .take(QUOTED_LINES)
            .copied()
            .collect(),
        None => lines[lines.len().saturating_sub(QUOTED_LINES)..].to_vec(),
    };
    if picked.is_empty() {
        return None;
    }
    let shortened: Vec<String> = picked
        .iter()
        .map(|l| {
            if l.chars().count() > LINE_CHARS {
                l.chars().take(LINE_CHARS).collect::<String>() + "…"
            } else {
                l.to_string()
            }
        })
        .collect();
    Some(shortened.join("\n"))
}

/// Where the cluster's processes report their crashes: a [`DeathSink`] per
/// process, one receiver for the run.
#[derive(Debug)]
pub struct CrashReports {
    tx: mpsc::UnboundedSender<Crash>,
    rx: Option<mpsc::UnboundedReceiver<Crash>>,
}

impl CrashReports {
    pub fn new() -> CrashReports {
        let (tx, rx) = mpsc::unbounded_channel();
        CrashReports { tx, rx: Some(rx) }
    }

    /// The sink of process `p`.
    pub fn sink(&self, p: Proc) -> DeathSink {
        let tx = self.tx.clone();
        DeathSink::new(move |death| {
            let _ = tx.send(Crash { proc: p, death });
        })
    }

    /// The crashes, in the order they were reaped (also those before this call);
    /// the receiver can be taken once. It ends when the cluster and its processes
    /// are gone.
    pub fn take(&mut self) -> Option<mpsc::UnboundedReceiver<Crash>> {
        self.rx.take()
    }
}

impl Default for CrashReports {
    fn default() -> Self {
        CrashReports::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_quoted_from_its_first_line_to_the_backtrace_hint() {
        let log = "listening on 127.0.0.1:4000\n\
                   EVENT {\"kind\":\"become_leader\"}\n\
                   thread 'tokio-runtime-worker' panicked at broker/src/log/mod.rs:12:5:\n\
                   index out of bounds: the len is 3 but the index is 7\n\
                   note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\
                   EVENT {\"kind\":\"truncate\"}\n";
        assert_eq!(
            quote(log).unwrap(),
            "thread 'tokio-runtime-worker' panicked at broker/src/log/mod.rs:12:5:\n\
             index out of bounds: the len is 3 but the index is 7"
        );
    }

    #[test]
    fn an_abort_is_quoted_from_its_line_and_otherwise_the_last_lines() {
        let mut log = String::new();
        for i in 0..20 {
            log.push_str(&format!("line {i}\nEVENT {{\"n\":{i}}}\n"));
        }
        let q = quote(&log).unwrap();
        assert_eq!(q.lines().count(), QUOTED_LINES);
        assert!(q.starts_with("line 12\n") && q.ends_with("line 19"), "{q}");
        assert!(!q.contains("EVENT"));
        log.push_str("PLANTED BUG (abort): aborting at produce request 100\nEVENT {}\n");
        assert_eq!(
            quote(&log).unwrap(),
            "PLANTED BUG (abort): aborting at produce request 100"
        );
        assert_eq!(quote("EVENT {}\nlistening on 127.0.0.1:1\n\n"), None);
        let long = "x".repeat(1000);
        assert_eq!(quote(&long).unwrap().chars().count(), LINE_CHARS + 1);
    }
}
