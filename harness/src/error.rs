//! The harness's own failures (exit code 3): a cluster that did not start, a broker
//! binary that is missing, a run folder that cannot be written. Each says what went
//! wrong and what to do.

use std::fmt;

/// A failure of the harness itself, as a message for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessError(pub String);

impl HarnessError {
    pub fn new(message: impl Into<String>) -> Self {
        HarnessError(message.into())
    }
}

impl fmt::Display for HarnessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HarnessError {}

impl From<std::io::Error> for HarnessError {
    fn from(e: std::io::Error) -> Self {
        HarnessError(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, HarnessError>;
