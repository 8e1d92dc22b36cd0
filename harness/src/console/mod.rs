//! What the harness says on the console while a campaign runs, kept in the run
//! folder too: `watermark.log` is that output, each line stamped with its UTC time
//! (as Jepsen keeps `jepsen.log` beside a test's history). CI logs scroll away or
//! are cut short; the run folder keeps what the harness said next to what it did.
//!
//! [`outln!`](crate::outln) and [`errln!`](crate::errln) print like `println!` and
//! `eprintln!` and copy the text to the open log; [`ConsoleLog::open`] opens one
//! for the length of a run. With no log open they only print. A log that cannot be
//! written is said once and dropped: the console output is never lost for it.

pub(crate) mod progress;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::SystemTime;

use crate::error::{HarnessError, Result};
use crate::store::rfc3339_millis;

/// The log being written, if any.
static LOG: Mutex<Option<File>> = Mutex::new(None);

/// `watermark.log`, open until dropped.
#[must_use = "the log closes when this is dropped"]
pub struct ConsoleLog(());

impl ConsoleLog {
    /// Open (append to) `path` as the console's log, until the returned value is
    /// dropped.
    pub fn open(path: &Path) -> Result<ConsoleLog> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| HarnessError::new(format!("cannot create {}: {e}", path.display())))?;
        *LOG.lock().unwrap_or_else(|e| e.into_inner()) = Some(file);
        Ok(ConsoleLog(()))
    }
}

impl Drop for ConsoleLog {
    fn drop(&mut self) {
        LOG.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// Copy `text` to the open log, if any: each line (an empty text is one empty
/// line) stamped with the time now, in one write.
pub fn record(text: &str) {
    let mut log = LOG.lock().unwrap_or_else(|e| e.into_inner());
    let Some(file) = log.as_mut() else {
        return;
    };
    let stamp = rfc3339_millis(SystemTime::now());
    let mut buf = String::with_capacity(text.len() + 32);
    let text = text.strip_suffix('\n').unwrap_or(text);
    for line in text.split('\n') {
        buf.push_str(&stamp);
        buf.push(' ');
        buf.push_str(line);
        buf.push('\n');
    }
    if let Err(e) = file.write_all(buf.as_bytes()) {
        log.take();
        eprintln!("watermark: cannot write watermark.log: {e}; the console output goes on");
    }
}

/// `println!`, also into the run's `watermark.log`.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        let text = format!($($arg)*);
        println!("{text}");
        $crate::console::record(&text);
    }};
}

/// `eprintln!`, also into the run's `watermark.log`.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        let text = format!($($arg)*);
        eprintln!("{text}");
        $crate::console::record(&text);
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_stamped_while_the_log_is_open_and_only_then() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("watermark.log");
        record("before: not logged");
        {
            let _log = ConsoleLog::open(&path).unwrap();
            crate::errln!("watermark: seed {}", 42);
            crate::outln!("verdict: valid\noperations: 3 ok");
        }
        record("after: not logged");
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        for (line, said) in
            lines
                .iter()
                .zip(["watermark: seed 42", "verdict: valid", "operations: 3 ok"])
        {
            let (stamp, rest) = line.split_once(' ').unwrap();
            assert_eq!(rest, said);
            assert!(stamp.len() == 24 && stamp.ends_with('Z'), "{stamp}");
        }
    }
}
