//! `watermark check`: judge a history file offline.

use crate::exit::Exit;

/// Options of `watermark check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The history file.
    pub history: std::path::PathBuf,
}

/// Run `watermark check`.
pub fn run(args: CheckArgs) -> Exit {
    eprintln!(
        "watermark check: {} (checker not built yet)",
        args.history.display()
    );
    Exit::Unknown
}
