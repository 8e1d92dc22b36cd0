//! Exit codes: CI gates on these. The verdicts are Jepsen's (0 valid, 1 invalid, 2
//! unknown); bad usage is sysexits' 64 (Jepsen: 254), a harness failure 3 (Jepsen:
//! 255), an interruption 130 (docs/running.md, "Exit codes").

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
