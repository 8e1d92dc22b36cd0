//! `watermark selftest`: proof that the harness finds what it claims to find, for
//! each planted broker bug (docs/selftest.md#planted-bugs, `broker node --bug NAME`).
//!
//! - By default it measures the default campaign ([`measure`]): K seeds of a plain
//!   `watermark run --bug B` per bug and K of the clean broker, and reports each
//!   bug's detection rate and median time to detection ([`detection`]). It passes
//!   when every bug is caught in at least `--min-rate` of its seeds and the clean
//!   broker is valid in every one.
//! - `--tuned` runs, per bug, seeded campaigns with the workload and faults that can
//!   reveal that bug ([`profile`]) until one ends INVALID or the bug's budget is
//!   spent; then the clean broker for the same budget, cycling through the same
//!   profiles, which must find nothing.
//!
//! Every campaign is an ordinary `watermark run` (its run folder lands under the
//! self-test's folder), so a caught bug can be replayed and browsed like any run.
//! A new planted bug needs a [`Bug`] variant and its [`profile`]; both modes then
//! plant it.

pub(crate) mod detection;
mod measure;
mod mutants;
mod tuned;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use clap::{Parser, ValueEnum};

use crate::exit::Exit;
use crate::names::Names;
use crate::options::{Bug, ResolveError, Resolved, RunArgs, parse_positive_secs};

/// Options of `watermark selftest`.
#[derive(Debug, Clone, clap::Args)]
pub struct SelftestArgs {
    /// Seeds per bug, and for the clean broker: one default campaign each.
    #[arg(long, value_name = "K", default_value_t = 3, conflicts_with = "tuned", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub seeds: u32,

    /// Seconds of workload and faults of each default campaign (its --time-limit).
    #[arg(long, value_name = "SECS", default_value_t = 60.0, conflicts_with = "tuned", value_parser = parse_positive_secs)]
    pub campaign_time_limit: f64,

    /// Campaigns run at once (each is its own cluster; they share the CPU).
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "tuned", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,

    /// A bug passes when caught in at least this share of its seeds (and at least
    /// once): 0.5 asks 2 of 3, 0.8 asks 8 of 10.
    #[arg(long, value_name = "RATE", default_value_t = 0.5, conflicts_with = "tuned", value_parser = parse_rate)]
    pub min_rate: f64,

    /// Instead, run each bug's tuned campaign (the faults that reveal it) until it
    /// is caught or --time-per-bug is spent, then the clean broker under the same.
    #[arg(long)]
    pub tuned: bool,

    /// --tuned: seconds of campaigns per bug, and for the clean broker (a campaign is
    /// started while the budget lasts). (`--time-limit` is an older name.)
    #[arg(long = "time-per-bug", alias = "time-limit", value_name = "SECS", default_value_t = 120.0, requires = "tuned", value_parser = parse_positive_secs)]
    pub time_limit: f64,

    /// --tuned: at most this many campaigns per bug, and for the clean broker
    /// [default: as many as the budget allows].
    #[arg(long, value_name = "K", requires = "tuned", value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: Option<u32>,

    /// The bugs to plant, comma-separated [default: all].
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = Names::<Bug>::new("bug"))]
    pub bugs: Vec<Bug>,

    /// The first seed; the next ones follow it (by default every row runs seeds N …
    /// N + K − 1; with --tuned a bug's n-th campaign runs N + n) [default: random,
    /// printed].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Where the self-test's folder (one run folder per campaign) is created.
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub results: PathBuf,

    /// The broker executable [default: the `broker` built alongside watermark].
    #[arg(long, value_name = "PATH", conflicts_with_all = ["mutants", "mutants_from"])]
    pub broker_bin: Option<PathBuf>,

    /// Measure the mutation score instead (docs/selftest.md#the-mutation-score):
    /// cargo-mutants mutates --mutant-files of the broker and runs its unit tests
    /// on each mutant; every mutant they miss is built as a broker of its own and
    /// gets --seeds default campaigns, beside the clean broker built the same way.
    /// Needs cargo-mutants (`cargo install cargo-mutants`) and the source tree.
    #[arg(long, conflicts_with = "tuned")]
    pub mutants: bool,

    /// Measure the mutation score on the patches of DIR instead (`*.diff`,
    /// `*.patch`: unified diffs against the source tree's root, one mutant each).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["tuned", "mutants"])]
    pub mutants_from: Option<PathBuf>,

    /// --mutants: the files to mutate, comma-separated globs relative to the source
    /// tree [default: the replication core: broker/src/replica/*.rs,
    /// broker/src/node/api/produce.rs, broker/src/node/api/read.rs,
    /// broker/src/controller/state/*.rs].
    #[arg(
        long,
        value_name = "GLOBS",
        value_delimiter = ',',
        requires = "mutants"
    )]
    pub mutant_files: Vec<String>,

    /// With --mutants or --mutants-from: list the mutants (with --mutants, every
    /// one cargo-mutants generates, before its unit tests) and run nothing.
    #[arg(long)]
    pub list: bool,

    /// The source tree to mutate [default: the one watermark was built from, if it
    /// is still there, else the current directory].
    #[arg(long, value_name = "DIR")]
    pub source: Option<PathBuf>,
}

/// The campaign that can reveal a bug (`--tuned`): `watermark run` options besides
/// `--bug`, the seed and the results directory, as one command line split at
/// spaces; the workload is the queue unless the profile names one.
pub fn profile(bug: Bug) -> &'static str {
    match bug {
        // KIP-101's first failure, scripted: every node crashes, the followers come
        // back first and truncate to their stale HW while the leader is down, one of
        // them is elected, and what the leader acknowledged past that HW is gone.
        // A drawn schedule opens this window only by chance.
        Bug::HwTruncation => "--scenario kip101-data-loss",
        // The leader acknowledges records no follower has; isolate it past the
        // session timeout (a campaign's 2 s) and another replica is elected without them.
        Bug::AckBeforeReplicate => "--nemesis isolate-leader --nemesis-interval 5 --time-limit 15",
        // An isolated leader shrinks its ISR to itself once the replica lag time is
        // over (1 s here, before clients move to the new leader); with min.insync 1 it
        // then acknowledges alone while the controller elects another leader.
        Bug::IsrUnchecked => {
            "--min-insync 1 --replica-lag-time-max-ms 1000 --nemesis isolate-leader --nemesis-interval 5 --time-limit 15"
        }
        // An isolated leader answers linearizable reads with a value the new leader
        // has already overwritten.
        Bug::StaleRead => {
            "--workload register --linearizable-reads --nemesis isolate-leader --nemesis-interval 5 --time-limit 20"
        }
        // A deposed (isolated) leader keeps the records it appended alone and then
        // fetches the new leader's records after them: replicas diverge.
        Bug::NoEpochFence => "--nemesis isolate-leader --nemesis-interval 5 --time-limit 15",
        // The leader commits what one follower has; a partition that leaves it with
        // that follower, cut from the controller (`halves`, some `bridge`s), elects
        // the other one, which lacks the records. Partitions draw their shape, hence
        // the longer campaign. (A dedicated controller, so that it can sit on
        // either side of a partition, apart from every replica.)
        Bug::HwAnyFollower => {
            "--dedicated-controller --nemesis partition --nemesis-interval 5 --time-limit 30"
        }
        // An isolated leader serves consumers the records it appended alone; the new
        // leader never had them.
        Bug::ReadPastHw => "--nemesis isolate-leader --nemesis-interval 5 --time-limit 15",
        // A record appended when the HW equals the LEO is acknowledged before any
        // follower has it. At a low rate the leader is mostly caught up when it is
        // isolated, so the first record it then appends is acknowledged and lost.
        Bug::AckOffByOne => {
            "--rate 40 --nemesis isolate-leader --nemesis-interval 5 --time-limit 15"
        }
        // Writes still waiting on an isolated leader when the partition heals are
        // acknowledged by the HW of the new leader's log, which replaced them. Many
        // slow clients send to the isolated leader at spread-out times, so some
        // are still waiting (3 s client timeout) when it heals.
        Bug::AckIgnoresEpoch => {
            "--concurrency 24 --rate 40 --nemesis isolate-leader --nemesis-interval 5 --time-limit 20"
        }
        // A deposed leader keeps the records it appended alone when the new leader's
        // log is longer, and fetches the new leader's records after them.
        Bug::EpochEndAtLeo => "--nemesis isolate-leader --nemesis-interval 5 --time-limit 15",
        // A failing disk on a leader leaves its failed appends queued; they reach the
        // disk at repeated offsets once it works, and a kill and restart of that node
        // keeps them over acknowledged records.
        // (A dedicated controller: every kill then hits a broker or the controller
        // alone, as the profile was measured.)
        Bug::AppendUndoLost => {
            "--dedicated-controller --nemesis disk,kill --nemesis-interval 1 --time-limit 30"
        }
        // A deposed (isolated) leader's unreplicated suffix: the follower it becomes
        // keeps its first record, where the new leader wrote another.
        Bug::TruncatePastEpochEnd => {
            "--nemesis isolate-leader --nemesis-interval 5 --time-limit 15"
        }
        // An isolated leader replaced in its own epoch keeps writing records that
        // pass for the new leader's: replicas diverge.
        Bug::NoEpochBump => "--nemesis isolate-leader --nemesis-interval 5 --time-limit 15",
        // Test-only: a leader aborts at its 100th produce request, within seconds.
        Bug::Abort => "--time-limit 10",
        // Any other bug (a new one too, with no profile of its own): the replication
        // package, whose patterns open every window, for half a minute — a follower
        // out of the ISR elected as the leader dies (elect-out-of-isr), a follower
        // back in the ISR before it caught up (isr-expand-early: `follower-lag`
        // times its kill to that moment).
        _ => "--nemesis replication --time-limit 30",
    }
}

/// Parse `watermark run` options as the command line would, and resolve them.
pub fn run_args(argv: &[String]) -> Result<Resolved, String> {
    #[derive(Parser)]
    struct Run {
        #[command(flatten)]
        args: RunArgs,
    }
    let all = std::iter::once("run".to_string()).chain(argv.iter().cloned());
    let args = Run::try_parse_from(all).map_err(|e| e.to_string())?.args;
    args.resolve().map_err(|e| match e {
        ResolveError::Usage(msg) => msg,
        ResolveError::Harness(e) => e.to_string(),
    })
}

/// `--min-rate`: a share in (0, 1].
fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 1.0 => Ok(v),
        _ => Err(format!("`{s}` is not a share of seeds in (0, 1], e.g. 0.8")),
    }
}

/// What both modes start from: the bugs, the first seed, the broker, the folder.
struct Setup {
    bugs: Vec<Bug>,
    seed: u64,
    broker_bin: PathBuf,
    root: PathBuf,
}

impl Setup {
    fn new(args: &SelftestArgs) -> Result<Setup, String> {
        let bugs: Vec<Bug> = if args.bugs.is_empty() {
            Bug::value_variants().to_vec()
        } else {
            args.bugs.clone()
        };
        let seed = args
            .seed
            .unwrap_or_else(|| u64::from(rand::random::<u32>()));
        let broker_bin = crate::system::broker::broker_bin::locate(args.broker_bin.as_deref())
            .map_err(|e| e.to_string())?;
        let stamp = crate::store::compact_timestamp(SystemTime::now());
        let root = args.results.join(format!("selftest-{stamp}-s{seed}"));
        std::fs::create_dir_all(&root)
            .map_err(|e| format!("cannot create {}: {e}", root.display()))?;
        Ok(Setup {
            bugs,
            seed,
            broker_bin,
            root,
        })
    }
}

/// Run `watermark selftest`.
pub fn run(args: SelftestArgs) -> Exit {
    if args.mutants || args.mutants_from.is_some() {
        return mutation_score(&args);
    }
    if args.list {
        eprintln!("watermark selftest: --list goes with --mutants or --mutants-from");
        return Exit::Usage;
    }
    let setup = match Setup::new(&args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("watermark selftest: {e}");
            return Exit::HarnessFailed;
        }
    };
    if args.tuned {
        tuned::run(&args, setup)
    } else {
        measured(&args, setup)
    }
}

/// The default mode: K default campaigns per bug and for the clean broker.
fn measured(args: &SelftestArgs, setup: Setup) -> Exit {
    static STOP: AtomicBool = AtomicBool::new(false);
    let watermark = match std::env::current_exe() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("watermark selftest: cannot find the watermark executable: {e}");
            return Exit::HarnessFailed;
        }
    };
    if let Err(e) = crate::commands::campaign_process::stop_on_signal(&STOP, "watermark selftest") {
        eprintln!("watermark selftest: {e}");
        return Exit::HarnessFailed;
    }
    let seeds: Vec<u64> = (0..u64::from(args.seeds))
        .map(|i| setup.seed.wrapping_add(i))
        .collect();
    let seed = setup.seed;
    eprintln!(
        "watermark selftest: seed {seed} (repeat with --seed {seed}): {} default campaign(s) \
         of {} s per bug and for the clean broker, {} at once, folder {}",
        args.seeds,
        args.campaign_time_limit,
        args.jobs,
        setup.root.display()
    );
    let rows = setup
        .bugs
        .iter()
        .map(|&b| measure::RowSpec {
            name: b.to_string(),
            bug: Some(b),
            broker_bin: setup.broker_bin.clone(),
        })
        .chain([measure::RowSpec {
            name: "clean".into(),
            bug: None,
            broker_bin: setup.broker_bin.clone(),
        }])
        .collect();
    let plan = measure::Plan {
        rows,
        seeds,
        campaign_time_limit: args.campaign_time_limit,
        jobs: args.jobs,
        root: setup.root.clone(),
        watermark,
    };
    let rows = measure::run(&plan, &STOP);
    let interrupted = STOP.load(Ordering::SeqCst);
    let passed = !interrupted && rows.iter().all(|r| r.passed(args.min_rate));
    print!("{}", detection::table(&rows, args.min_rate));
    let report = measure::Report {
        mode: "default-campaign",
        seeds: &plan.seeds,
        campaign_time_limit: args.campaign_time_limit,
        min_rate: args.min_rate,
        jobs: args.jobs,
        passed,
        rows: rows
            .iter()
            .map(|row| measure::ReportRow::new(row, args.min_rate))
            .collect(),
    };
    if let Err(e) = crate::store::write_json(&setup.root.join("selftest.json"), &report) {
        eprintln!("watermark selftest: {e}");
    }
    println!("self-test folder: {}", setup.root.display());
    if interrupted {
        Exit::Interrupted
    } else if passed {
        println!(
            "selftest: PASSED (every planted bug caught in at least {:.0}% of its seeds, \
             the clean broker valid in every one)",
            args.min_rate * 100.0
        );
        Exit::Valid
    } else {
        println!("selftest: FAILED (see the table: pass NO)");
        Exit::Invalid
    }
}

/// `--mutants`, `--mutants-from`: the mutants, each one's broker, K default
/// campaigns of each and of the clean broker, the table and the score.
fn mutation_score(args: &SelftestArgs) -> Exit {
    static STOP: AtomicBool = AtomicBool::new(false);
    let fail = |e: String| {
        eprintln!("watermark selftest: {e}");
        Exit::HarnessFailed
    };
    let Some(source) = args.source.clone().or_else(mutants::default_source) else {
        return fail("no source tree to mutate here: pass --source DIR".into());
    };
    let files: Vec<String> = if args.mutant_files.is_empty() {
        mutants::DEFAULT_FILES
            .iter()
            .map(|f| f.to_string())
            .collect()
    } else {
        args.mutant_files.clone()
    };
    let seed = args
        .seed
        .unwrap_or_else(|| u64::from(rand::random::<u32>()));
    let stamp = crate::store::compact_timestamp(SystemTime::now());
    let root = args
        .results
        .join(format!("selftest-mutants-{stamp}-s{seed}"));
    let found = match (&args.mutants_from, args.list) {
        (Some(dir), _) => mutants::from_dir(dir),
        (None, true) => mutants::listed(&source, &files),
        (None, false) => {
            if let Err(e) = std::fs::create_dir_all(&root) {
                return fail(format!("cannot create {}: {e}", root.display()));
            }
            eprintln!(
                "watermark selftest: cargo-mutants on {} of {} (the broker's unit tests on every mutant)",
                files.join(", "),
                source.display()
            );
            mutants::surviving(&source, &files, &root.join("cargo-mutants"), args.jobs)
        }
    };
    let found = match found {
        Ok(m) => m,
        Err(e) => return fail(e),
    };
    if args.list {
        for m in &found {
            println!(
                "{} {}: {}\n{}",
                m.id,
                m.file,
                m.description,
                m.diff.trim_end()
            );
        }
        println!("{} mutants", found.len());
        return Exit::Valid;
    }
    if let Err(e) = crate::commands::campaign_process::stop_on_signal(&STOP, "watermark selftest") {
        return fail(e.to_string());
    }
    let watermark = match std::env::current_exe() {
        Ok(w) => w,
        Err(e) => return fail(format!("cannot find the watermark executable: {e}")),
    };
    let workshop = match mutants::Workshop::new(&source, &root) {
        Ok(w) => w,
        Err(e) => return fail(e),
    };
    eprintln!(
        "watermark selftest: seed {seed}: {} mutants, each built as a broker of its own, then {} \
         default campaign(s) of {} s each and of the clean broker, {} at once, folder {}",
        found.len(),
        args.seeds,
        args.campaign_time_limit,
        args.jobs,
        root.display()
    );
    let clean = match workshop.clean() {
        Ok(bin) => bin,
        Err(e) => return fail(format!("the clean broker: {e}")),
    };
    let mut rows = vec![measure::RowSpec {
        name: "clean".into(),
        bug: None,
        broker_bin: clean,
    }];
    let mut built: Vec<Result<usize, String>> = Vec::new();
    for m in &found {
        if STOP.load(Ordering::SeqCst) {
            return Exit::Interrupted;
        }
        match workshop.mutant(m) {
            Ok(bin) => {
                eprintln!(
                    "watermark selftest: built {} ({}: {})",
                    m.id, m.file, m.description
                );
                built.push(Ok(rows.len()));
                rows.push(measure::RowSpec {
                    name: m.id.clone(),
                    bug: None,
                    broker_bin: bin,
                });
            }
            Err(e) => {
                eprintln!("watermark selftest: {} left out: {e}", m.id);
                built.push(Err(e));
            }
        }
    }
    let plan = measure::Plan {
        rows,
        seeds: (0..u64::from(args.seeds))
            .map(|i| seed.wrapping_add(i))
            .collect(),
        campaign_time_limit: args.campaign_time_limit,
        jobs: args.jobs,
        root: root.clone(),
        watermark,
    };
    let ran = measure::run(&plan, &STOP);
    let fared: Vec<mutants::Fared<'_>> = found
        .iter()
        .zip(&built)
        .map(|(mutant, b)| mutants::Fared {
            mutant,
            row: match b {
                Ok(i) => Ok(&ran[*i]),
                Err(e) => Err(e.as_str()),
            },
        })
        .collect();
    print!("{}", mutants::table(&fared, ran.first()));
    let (caught, run) = mutants::score(&fared);
    let report = serde_json::json!({
        "mode": "mutants",
        "source": source,
        "files": files,
        "seeds": plan.seeds,
        "campaign_time_limit": args.campaign_time_limit,
        "jobs": args.jobs,
        "score": {"caught": caught, "mutants": run},
        "clean": ran.first().map(|r| measure::ReportRow::new(r, args.min_rate)),
        "mutants": fared.iter().map(|f| {
            let mut v = serde_json::to_value(f.mutant).unwrap_or_default();
            match f.row {
                Ok(r) => {
                    v["figures"] = serde_json::to_value(r.figures()).unwrap_or_default();
                    v["kinds"] = serde_json::json!(r.kinds());
                    v["campaigns"] = serde_json::to_value(&r.campaigns).unwrap_or_default();
                }
                Err(e) => v["error"] = serde_json::json!(e),
            }
            v
        }).collect::<Vec<_>>(),
    });
    if let Err(e) = crate::store::write_json(&root.join("selftest.json"), &report) {
        eprintln!("watermark selftest: {e}");
    }
    println!("self-test folder: {}", root.display());
    let clean_valid = ran.first().is_some_and(|r| r.passed(args.min_rate));
    if STOP.load(Ordering::SeqCst) {
        Exit::Interrupted
    } else if clean_valid {
        Exit::Valid
    } else {
        println!(
            "selftest: the clean broker was not valid in every campaign: the score means nothing"
        );
        Exit::Invalid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bug_has_a_profile_that_resolves() {
        for &bug in Bug::value_variants() {
            assert!(!profile(bug).is_empty(), "{bug}");
            let mut argv: Vec<String> = profile(bug).split_whitespace().map(String::from).collect();
            argv.extend(["--bug".to_string(), bug.to_string()]);
            argv.extend(["--broker-bin".to_string(), "/bin/sh".to_string()]);
            let a = run_args(&argv).unwrap_or_else(|e| panic!("{bug}: {e}"));
            assert_eq!(a.broker.bug, Some(bug));
        }
    }

    #[test]
    fn unknown_bugs_are_refused_with_the_list() {
        let e = crate::names::parse::<Bug>("bug", "off-by-one").unwrap_err();
        assert!(e.contains("no-epoch-fence"), "{e}");
    }
}
