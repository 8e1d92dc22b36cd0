//! Exit codes, as Jepsen and Maelstrom use them: CI gates on these.

use std::process::ExitCode;

/// What a `watermark` command ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The history is valid.
    Valid = 0,
    /// The checker found anomalies.
    Invalid = 1,
    /// The checker gave up within its budget, or the history is incomplete.
    Unknown = 2,
    /// The harness itself failed (cluster did not start, broker binary missing, ...).
    HarnessFailed = 3,
    /// Bad command-line usage.
    Usage = 64,
    /// Stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
    Interrupted = 130,
}

impl Exit {
    /// How run.json names this ending (`outcome`).
    pub fn outcome(self) -> &'static str {
        match self {
            Exit::Valid => "valid",
            Exit::Invalid => "invalid",
            Exit::Unknown => "unknown",
            Exit::HarnessFailed => "harness-failed",
            Exit::Interrupted => "interrupted",
            Exit::Usage => "usage",
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}
