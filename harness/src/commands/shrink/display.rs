//! What a shrink shows and writes besides its attempts' runs: the bar over its budget
//! on a terminal, and the rows of `attempts.jsonl`.

use std::path::Path;
use std::time::Duration;

/// A bar over the budget (stderr a terminal): it ticks on while tries run.
pub fn budget_bar(budget: Duration) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(budget.as_secs().max(1));
        let style = indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise} of the {len}s budget] {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_secs(1));
        bar
    })
}

/// Append one line to the file at `path`.
pub fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    writeln!(f, "{line}")
}
