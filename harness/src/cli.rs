//! The command line: one subcommand per job, each with its own argument struct
//! living beside the code that does the job.

use clap::{Parser, Subcommand};

/// Jepsen-style chaos testing of a Kafka-style broker cluster over real OS processes.
///
/// watermark starts a broker cluster as separate processes, drives clients at it
/// while it kills, pauses and partitions them, records every operation in a
/// history, and checks that history for lost writes, log divergence and
/// linearizability violations.
///
/// Exit codes: 0 valid, 1 anomalies found, 2 unknown, 3 harness failure, 64 bad usage,
/// 130 interrupted (Ctrl-C).
#[derive(Debug, Parser)]
#[command(name = "watermark", version, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one campaign against a fresh cluster, check it, and write a run folder.
    ///
    /// Starts a controller and --nodes brokers as OS processes behind TCP proxies,
    /// runs the workload and the nemesis for --time-limit seconds, heals the cluster,
    /// drains every partition, checks the history and writes
    /// results/<workload>-<UTC timestamp>-s<seed>/ (results/latest points to it).
    #[command(after_help = "Examples:
  watermark run                                    60 s on the defaults
  watermark run --acks 1 --nemesis isolate-leader  see acknowledged writes lost
  watermark run --seed 42 --time-limit 20          a short, repeatable run
  watermark replay results/latest                  the same options and seed again

Exit codes: 0 valid, 1 anomalies found, 2 unknown, 3 harness failure, 64 bad usage,
130 interrupted (Ctrl-C; every broker process is killed, the history stays readable).")]
    Run(Box<crate::run::RunArgs>),
    /// Check a history file offline (ours, Jepsen EDN, Porcupine logs).
    Check(crate::check::CheckArgs),
    /// Run again with the configuration and seed stored in a run folder's run.json.
    Replay(crate::replay::ReplayArgs),
    /// (Re)render report.html and junit.xml from a run folder.
    Report(crate::report::ReportArgs),
    /// Browse the results directory in a web browser.
    Serve(crate::serve::ServeArgs),
}
