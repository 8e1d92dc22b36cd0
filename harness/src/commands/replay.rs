//! `watermark replay RUN_DIR`: run a campaign again with the configuration and seed
//! a run folder's run.json recorded. The same seed gives each client the same
//! sequence of operations and the nemesis the same schedule; what the cluster does
//! with them depends on timing, as with any real system.

use std::path::PathBuf;

use crate::exit::Exit;
use crate::options::{ResolveError, RunArgs};
use crate::store::RunRecord;

/// Options of `watermark replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The run folder to repeat (e.g. results/latest).
    pub run_dir: PathBuf,

    /// Where the new run folder is created [default: the folder holding RUN_DIR].
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,

    /// The broker executable [default: the original run's, if it still exists; else
    /// the one built alongside watermark].
    #[arg(long, value_name = "PATH")]
    pub broker_bin: Option<PathBuf>,

    /// Play this schedule file instead of the original run's faults (what `watermark
    /// shrink` tries).
    #[arg(long, value_name = "FILE")]
    pub schedule: Option<PathBuf>,

    /// Run for this long instead of the original run's time limit, in seconds.
    #[arg(long, value_name = "SECS", value_parser = crate::options::parse_positive_secs)]
    pub time_limit: Option<f64>,
}

/// Run `watermark replay`.
pub fn run(args: ReplayArgs) -> Exit {
    let record = match RunRecord::load(&args.run_dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("watermark replay: {e}");
            return Exit::Usage;
        }
    };
    let mut options = RunArgs::from(record.options);
    options.seed = Some(record.seed);
    if let Some(schedule) = args.schedule {
        options.schedule = Some(schedule);
        options.scenario = None;
    }
    if let Some(t) = args.time_limit {
        options.time_limit = Some(t);
    }
    let dir = std::fs::canonicalize(&args.run_dir).unwrap_or_else(|_| args.run_dir.clone());
    match args.results {
        Some(results) => options.results = results,
        None => {
            if let Some(parent) = dir.parent() {
                options.results = parent.to_path_buf();
            }
        }
    }
    match args.broker_bin {
        Some(bin) => options.broker_bin = Some(bin),
        None => {
            if options.broker_bin.as_ref().is_some_and(|b| !b.exists()) {
                eprintln!(
                    "watermark replay: the original broker {} is gone; using the one built alongside",
                    options
                        .broker_bin
                        .as_ref()
                        .map(|b| b.display().to_string())
                        .unwrap_or_default()
                );
                options.broker_bin = None;
            }
        }
    }
    let options = match options.resolve() {
        Ok(o) => o,
        Err(ResolveError::Usage(msg)) => {
            eprintln!(
                "watermark replay: the options in {} are not valid: {msg}",
                args.run_dir.join("run.json").display()
            );
            return Exit::Usage;
        }
        Err(e) => return crate::commands::run::refused("watermark replay", e),
    };
    eprintln!(
        "watermark replay: repeating {} (seed {})",
        dir.display(),
        record.seed
    );
    crate::commands::run::execute(options, std::env::args().collect(), Some(dir))
}
