//! The command line: one subcommand per job, each with its own argument struct
//! living beside the code that does the job.

use clap::{Parser, Subcommand};

use crate::exit::Exit;

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
    command: Command,
}

impl Cli {
    /// Do what the command line asks; the exit code says how it went.
    pub fn execute(self) -> Exit {
        match self.command {
            Command::Run(command) => crate::commands::series::run(*command),
            Command::Check(args) => crate::commands::check::run(args),
            Command::Replay(args) => crate::commands::replay::run(args),
            Command::Report(args) => crate::report::run(args),
            Command::Export(args) => crate::commands::export::run(args),
            Command::Serve(args) => crate::commands::serve::run(args),
            Command::Selftest(args) => crate::commands::selftest::run(args),
            Command::Shrink(args) => crate::commands::shrink::run(args),
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one campaign against a fresh cluster, check it, and write a run folder.
    ///
    /// Starts --nodes brokers as OS processes behind TCP proxies (they elect their
    /// controller among themselves; --dedicated-controller runs one beside them),
    /// runs the workload and the nemesis for --time-limit seconds, heals the cluster,
    /// drains every partition, checks the history and writes
    /// results/<workload>-<UTC timestamp>-s<seed>/ (results/current points to it while
    /// it runs, results/latest once it ended).
    #[command(after_help = "Examples:
  watermark run                                    60 s on the defaults
  watermark run --acks 1 --nemesis isolate-leader  see acknowledged writes lost
  watermark run --seed 42 --time-limit 20          a short, repeatable run
  watermark replay results/latest                  the same options and seed again
  watermark run --test-count 10 --until-invalid    seeds s, s+1, ... until one finds anomalies

Exit codes: 0 valid, 1 anomalies found, 2 unknown, 3 harness failure, 64 bad usage,
130 interrupted (Ctrl-C; every broker process is killed, the history stays readable).
With --test-count: the worst outcome of the campaigns, in the order 130, 3, 1, 2, 0.")]
    Run(Box<crate::commands::series::RunCommand>),
    /// Check a history file offline (ours, Jepsen EDN, Porcupine logs).
    Check(crate::commands::check::CheckArgs),
    /// Run again with the configuration and seed stored in a run folder's run.json.
    Replay(crate::commands::replay::ReplayArgs),
    /// (Re)render report.html and junit.xml from a run folder, or render them for any
    /// history `check` reads (Jepsen EDN, Porcupine logs), judged as `check` judges it.
    Report(crate::report::ReportArgs),
    /// Write a run's history in another tool's format: Jepsen's history.edn.
    ///
    /// One op map per line, as Jepsen writes it; register operations as
    /// jepsen.independent tuples, which Knossos checks key by key. `watermark check`
    /// reads it back to the same events.
    #[command(after_help = "Examples:
  watermark export results/latest --format edn           writes results/latest/history.edn
  watermark export results/latest --format edn -o -      to stdout

Exit codes: 0 written, 3 the file cannot be written, 64 not a run folder or a malformed history.")]
    Export(crate::commands::export::ExportArgs),
    /// Reduce a failing run to a minimal reproducer: the fewest faults, the shortest
    /// holds and run that still show its anomaly.
    ///
    /// Plays the run's schedule.json again (`replay --schedule`) as smaller
    /// candidates — delta debugging over its faults, then shorter holds, then the
    /// faults moved earlier, then the run cut after the first anomaly's witness time
    /// (or after its last fault) —
    /// each up to --tries times (a candidate is adopted when --reproductions of its
    /// tries show an anomaly of a kind the original showed). Writes RUN_DIR/shrink/: every attempt, attempts.jsonl,
    /// minimal-schedule.json (play it with `watermark run --schedule`), summary.json;
    /// the run's report then names the minimal reproducer.
    #[command(after_help = "Examples:
  watermark shrink results/latest                     15 minutes at most, 2 tries at once
  watermark shrink results/latest --budget 30 --tries 5
  watermark run --schedule results/latest/shrink/minimal-schedule.json --seed S

Exit codes: 0 a reproducer written (smaller, if one was found), 1 the original schedule did
not reproduce the failure at all, 3 harness failure, 64 not a failing run folder with a
schedule.json.")]
    Shrink(crate::commands::shrink::ShrinkArgs),
    /// Browse the results directory in a web browser.
    Serve(crate::commands::serve::ServeArgs),
    /// Prove the harness finds planted broker bugs, and raises no false alarm.
    ///
    /// For each bug (`broker node --bug NAME`), --seeds default campaigns (a plain
    /// `watermark run --bug NAME` of --campaign-time-limit seconds, nothing tuned to
    /// the bug), then as many of the clean broker on the same seeds. Prints a table
    /// (bug, caught / seeds, detection rate, median time to detection, verdicts,
    /// pass, anomaly kinds) and writes selftest.json; every campaign's run folder is
    /// kept under results/selftest-<UTC timestamp>-s<seed>/. With --tuned, each bug's
    /// own faults until it is caught instead.
    #[command(after_help = "Examples:
  watermark selftest                                  every bug, 3 seeds of 60 s each
  watermark selftest --seeds 10 --min-rate 0.8 --jobs 2
                                                      10 seeds, pass at 8 of 10, two at once
  watermark selftest --tuned --bugs hw-truncation --runs 3
                                                      one bug's tuned faults, at most 3 campaigns

Exit codes: 0 every bug caught in at least --min-rate of its seeds (--tuned: caught) and the
clean broker valid in every campaign, 1 otherwise, 3 harness failure, 64 bad usage,
130 interrupted.")]
    Selftest(crate::commands::selftest::SelftestArgs),
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        // Duplicate or conflicting flags (short ones included) panic here.
        Cli::command().debug_assert();
    }

    #[test]
    fn old_names_of_renamed_options_still_parse_and_stay_hidden() {
        for (argv, new) in [
            (
                &["watermark", "check", "h.jsonl", "--time-limit", "5"][..],
                "--checker-time-limit",
            ),
            (
                &["watermark", "selftest", "--tuned", "--time-limit", "5"],
                "--time-per-bug",
            ),
        ] {
            Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            let mut cmd = Cli::command();
            let sub = cmd.find_subcommand_mut(argv[1]).unwrap();
            let help = sub.render_long_help().to_string();
            assert!(help.contains(new), "{help}");
            assert!(!help.contains("--time-limit <"), "{help}");
        }
    }
}
