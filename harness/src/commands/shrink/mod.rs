//! `watermark shrink RUN_DIR`: a failing campaign reduced to a minimal reproducer.
//! The run's `schedule.json` is played again (`watermark replay --schedule`) as
//! smaller and shorter candidates, each up to K times — real processes are not
//! deterministic, so a candidate is adopted when N of its tries (2 of 3 by default)
//! show an anomaly of a kind the original showed: first the whole schedule (does it
//! reproduce at all? one try suffices), then the run cut after the first anomaly was
//! witnessed, then the aimed pattern under way at the failure alone, then subsets
//! of the aimed patterns' runs of faults ([`ddmin`]), then the time cut and the
//! faults moved earlier in a shorter run (each later candidate costs less), then
//! subsets fault by fault, then each fault kept taken out at its time before the
//! move (the failure may need the load the move cut), then shorter holds, then the move earlier and the time
//! cut again (after the witness, or after the last fault when only the end of the
//! run shows the anomaly) — the phases of [`phases`]; the minimal schedule is
//! played K more times to say how reliably it reproduces, and when it does in
//! fewer than two thirds, the schedule adopted before it (a lucky candidate is no
//! reproducer a user can act on: the budget keeps room for that step back).
//!
//! Everything lands in `RUN_DIR/shrink/`: each attempt's folder (its schedule and
//! its tries' run folders), `attempts.jsonl` (a row each), `minimal-schedule.json`,
//! `summary.json`; the run's report then shows the minimal reproducer.

mod attempt;
mod ddmin;
mod display;
mod failed_on;
mod phases;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::commands::campaign_process::read_outcome;
use crate::commands::selftest::detection::Detection;
use crate::exit::Exit;
use crate::nemesis::schedule_file::ScheduleFile;
use crate::store::RunRecord;
use attempt::{Attempt, Trial};
use ddmin::Tested;
use display::{append_line, budget_bar};

/// Seconds a run is given past the first anomaly's witness time.
const WITNESS_MARGIN: f64 = 5.0;
/// Seconds a run is given past its last fault's end when its anomaly shows only
/// at the end (the final logs): time for the cluster to settle with that damage.
const SETTLE: f64 = 10.0;
/// Seconds of the run before its first fault once the schedule is moved earlier.
const LEAD: f64 = 5.0;
/// The shortest time limit a candidate gets.
const MIN_SECONDS: f64 = 5.0;
/// What a round of tries is taken to cost beyond its time limit (start, end of run,
/// checking) until one was measured, for the budget's estimates.
const TRY_OVERHEAD: f64 = 25.0;

/// Options of `watermark shrink`.
#[derive(Debug, clap::Args)]
pub struct ShrinkArgs {
    /// The failing run folder (e.g. results/latest).
    pub run_dir: PathBuf,

    /// Tries of each candidate, at most: a try reproduces the failure when it shows
    /// an anomaly of a kind the original showed.
    #[arg(long, value_name = "K", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub tries: u32,

    /// Tries that must reproduce for a smaller candidate to be adopted (at most
    /// --tries): 1 adopts a candidate that reproduced once, which may have been
    /// luck.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub reproductions: u32,

    /// The search stops after this many minutes with the smallest reproducer found
    /// (the last confirmation included).
    #[arg(long, value_name = "MINUTES", default_value_t = 15.0)]
    pub budget: f64,

    /// Tries run at once (each its own cluster).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub jobs: u32,
}

static STOP: AtomicBool = AtomicBool::new(false);

/// Whether Ctrl-C asked the search to stop.
fn stopped() -> bool {
    STOP.load(std::sync::atomic::Ordering::SeqCst)
}

/// What the search has found so far.
struct Search<'a> {
    trial: Trial<'a>,
    root: PathBuf,
    attempts: Vec<Attempt>,
    started: Instant,
    budget: Duration,
    /// The witness time of the smallest reproducing schedule.
    detected: Option<f64>,
    /// When only the end of the original run showed the failure: the latest moment
    /// it saw an operation of it (a lost write acknowledged), what lost it after.
    lost_after: Option<f64>,
    /// The partitions the original's anomalies were seen on ([`failed_on`]).
    failed_on: Vec<(String, u32)>,
    /// Every schedule adopted, with its time limit, the original first, the smallest
    /// last: where the confirmation steps back to when the smallest reproduces too
    /// rarely.
    adopted: Vec<(ScheduleFile, f64)>,
    /// Candidates that did not reproduce: not played again, nor shorter.
    passed: Vec<(ScheduleFile, f64)>,
    /// How many seconds earlier the smallest schedule plays than the one adopted
    /// before its move earlier (`shift`): where the fault-by-fault pass's faults are
    /// tried out again.
    shifted: f64,
    /// On a terminal: the budget spent, the attempt under way, the smallest so far.
    bar: Option<indicatif::ProgressBar>,
}

impl Search<'_> {
    /// The smallest reproducing schedule and the time limit it reproduced with: the
    /// last one adopted.
    fn smallest(&self) -> &(ScheduleFile, f64) {
        self.adopted.last().expect("the original is adopted first")
    }

    fn best(&self) -> &ScheduleFile {
        &self.smallest().0
    }

    fn seconds(&self) -> f64 {
        self.smallest().1
    }

    /// What one more candidate of `seconds` may cost.
    fn estimate(&self, seconds: f64, tries: u32) -> Duration {
        let rounds = tries.div_ceil(self.trial.jobs);
        Duration::from_secs_f64((seconds + self.overhead()) * rounds as f64)
    }

    /// What a round of tries costs beyond its time limit: the most measured so far.
    fn overhead(&self) -> f64 {
        self.attempts
            .iter()
            .filter(|a| a.tries > 0)
            .map(|a| {
                let rounds = a.tries.div_ceil(self.trial.jobs) as f64;
                (a.elapsed_s / rounds - a.seconds).max(0.0)
            })
            .reduce(f64::max)
            .unwrap_or(TRY_OVERHEAD)
    }

    /// Whether the budget allows a candidate of `seconds`, keeping room for the
    /// final confirmation — of the candidate, should it be adopted — and for one
    /// step back to the smallest so far, should the candidate then reproduce too
    /// rarely.
    fn affords(&self, seconds: f64) -> bool {
        let needed = self.estimate(seconds, self.trial.tries) * 2
            + self.estimate(self.seconds(), self.trial.tries);
        self.started.elapsed() + needed <= self.budget && !stopped()
    }

    fn attempt(
        &mut self,
        phase: &'static str,
        s: &ScheduleFile,
        seconds: f64,
        needed: Option<u32>,
    ) -> Attempt {
        let n = self.attempts.len() + 1;
        let folder = self.root.join(format!("attempt-{n:03}"));
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "attempt {n} ({phase}): {} faults, {seconds:.0} s — smallest reproducer so far: {} faults, {:.0} s",
                s.faults.len(),
                self.best().faults.len(),
                self.seconds()
            ));
        }
        let a = self.trial.run(n, phase, s, seconds, &folder, needed);
        let line = format!(
            "watermark shrink: [{:>4.0}s] attempt {n} ({phase}): {} faults, {seconds:.0} s: {} of {} tries reproduced{}",
            self.started.elapsed().as_secs_f64(),
            a.faults,
            a.reproduced,
            a.tries,
            if a.kinds.is_empty() {
                String::new()
            } else {
                format!(" ({})", a.kinds.join(", "))
            }
        );
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
        let line = serde_json::to_string(&a).unwrap_or_default();
        let _ = append_line(&self.root.join("attempts.jsonl"), &line);
        self.attempts.push(a.clone());
        a
    }

    /// Try `s` for `seconds`; adopt it when it reproduces in `--reproductions` of
    /// its tries.
    fn test(&mut self, phase: &'static str, s: &ScheduleFile, seconds: f64) -> Tested {
        // The same faults in less time than a run that did not reproduce them (the
        // empty schedule once the run is cut) are taken to pass too.
        if self.passed.iter().any(|(p, t)| p == s && *t >= seconds) {
            return Tested::Passes;
        }
        if !self.affords(seconds) {
            return Tested::OutOfBudget;
        }
        let needed = self.trial.needed;
        let a = self.attempt(phase, s, seconds, Some(needed));
        if a.reproduced >= needed {
            self.adopted.push((s.clone(), seconds));
            if a.detected.is_some() && !a.detected_at_end {
                self.detected = a.detected;
            }
            Tested::Fails
        } else {
            self.passed.push((s.clone(), seconds));
            Tested::Passes
        }
    }

    /// Play the smallest schedule adopted K times, and while it reproduces in fewer
    /// than two thirds of them, the one adopted before it (as the budget allows):
    /// the first that does, else the one that reproduced most often (the smaller of
    /// equals). None: nothing was confirmed.
    fn confirm(&mut self) -> Option<(ScheduleFile, f64, Attempt)> {
        let mut chosen: Option<(ScheduleFile, f64, Attempt)> = None;
        let mut seen: Vec<(ScheduleFile, f64)> = Vec::new();
        for (s, seconds) in self.adopted.clone().into_iter().rev() {
            if seen.contains(&(s.clone(), seconds)) {
                continue;
            }
            let room = self.started.elapsed() + self.estimate(seconds, self.trial.tries);
            if chosen.is_some() && (room > self.budget || stopped()) {
                break;
            }
            let a = self.attempt("confirm", &s, seconds, None);
            let reliable = a.reproduced * 3 >= a.tries * 2;
            if chosen
                .as_ref()
                .is_none_or(|(_, _, c)| a.reproduced > c.reproduced)
            {
                chosen = Some((s.clone(), seconds, a));
            }
            if reliable {
                break;
            }
            seen.push((s, seconds));
        }
        chosen
    }
}

/// The original run's failure: its anomaly kinds, and its schedule.
fn original(
    run_dir: &Path,
) -> Result<(RunRecord, Vec<String>, Option<Detection>, ScheduleFile), String> {
    let record = RunRecord::load(run_dir).map_err(|e| e.to_string())?;
    let (kinds, detected) = read_outcome(run_dir);
    if kinds.is_empty() {
        return Err(format!(
            "{} shows no anomaly (results.json): only a failing run can be shrunk",
            run_dir.display()
        ));
    }
    let path = run_dir.join("schedule.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "cannot read {}: {e} (runs of older versions write none)",
            path.display()
        )
    })?;
    let schedule = ScheduleFile::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((record, kinds, detected, schedule))
}

/// Run `watermark shrink`.
pub fn run(args: ShrinkArgs) -> Exit {
    let (record, kinds, detected, schedule) = match original(&args.run_dir) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("watermark shrink: {e}");
            return Exit::Usage;
        }
    };
    if !(args.budget > 0.0 && args.budget.is_finite()) {
        eprintln!("watermark shrink: --budget must be a positive number of minutes");
        return Exit::Usage;
    }
    if args.reproductions > args.tries {
        eprintln!(
            "watermark shrink: --reproductions {} asks more than the {} tries a candidate gets (--tries)",
            args.reproductions, args.tries
        );
        return Exit::Usage;
    }
    let watermark = match std::env::current_exe() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("watermark shrink: cannot find its own executable: {e}");
            return Exit::HarnessFailed;
        }
    };
    let run_dir = std::fs::canonicalize(&args.run_dir).unwrap_or(args.run_dir.clone());
    let root = run_dir.join("shrink");
    if root.exists() {
        let old = run_dir.join(format!("shrink.{}", chrono_stamp()));
        if let Err(e) = std::fs::rename(&root, &old) {
            eprintln!(
                "watermark shrink: cannot move the earlier {} aside: {e}",
                root.display()
            );
            return Exit::HarnessFailed;
        }
        eprintln!(
            "watermark shrink: the earlier shrink/ is now {}",
            old.display()
        );
    }
    if let Err(e) = std::fs::create_dir_all(&root) {
        eprintln!("watermark shrink: cannot create {}: {e}", root.display());
        return Exit::HarnessFailed;
    }
    if let Err(e) = crate::commands::campaign_process::stop_on_signal(&STOP, "watermark shrink") {
        eprintln!("watermark shrink: {e}");
    }
    let seconds = record.options.time_limit;
    eprintln!(
        "watermark shrink: {}: {} faults, {seconds:.0} s, anomalies {}; a candidate reproduces in {} of at most {} tries, {} at once, {} min at most",
        run_dir.display(),
        schedule.faults.len(),
        kinds.join(", "),
        args.reproductions,
        args.tries,
        args.jobs,
        args.budget
    );
    let mut search = Search {
        trial: Trial {
            watermark: &watermark,
            run_dir: &run_dir,
            kinds: &kinds,
            tries: args.tries,
            needed: args.reproductions,
            jobs: args.jobs,
            stop: &STOP,
        },
        root: root.clone(),
        attempts: Vec::new(),
        started: Instant::now(),
        budget: Duration::from_secs_f64(args.budget * 60.0),
        detected: None,
        lost_after: None,
        failed_on: failed_on::read(&run_dir, &kinds, record.options.partitions),
        adopted: vec![(schedule.clone(), seconds)],
        passed: Vec::new(),
        shifted: 0.0,
        bar: budget_bar(Duration::from_secs_f64(args.budget * 60.0)),
    };
    let first = search.attempt("original", &schedule, seconds, Some(1));
    if first.reproduced == 0 {
        if let Some(bar) = search.bar.take() {
            bar.finish_and_clear();
        }
        eprintln!(
            "watermark shrink: the original schedule did not reproduce {} in {} tries: the failure depends on timing this replay did not meet; nothing to shrink",
            kinds.join(" or "),
            first.tries
        );
        write_summary(&search, &schedule, seconds, None);
        return Exit::Invalid;
    }
    // The witness time the run is cut after: over the original's and the replays'
    // (a replay may meet the failure sooner, or later, by another path, than most).
    let mut witnessed = first.witnessed.clone();
    witnessed.extend(detected);
    search.detected = match attempt::cut_witness(&witnessed, args.reproductions) {
        (_, true) => None,
        (d, false) => d,
    };
    if search.detected.is_none() {
        // The original's own timeline first: it is the schedule being shrunk.
        search.lost_after = detected
            .and_then(|d| d.after)
            .or_else(|| first.witnessed.iter().find_map(|d| d.after));
    }
    search.cut_time();
    search.pattern_alone();
    search.shrink_patterns();
    // Fewer faults may fail sooner, and fewer, later faults play as well earlier
    // in a shorter run: each candidate from here on costs less.
    search.cut_time();
    search.shift_earlier();
    search.shrink_each();
    search.shrink_each_unshifted();
    search.shrink_holds();
    search.shift_earlier();
    search.cut_time();
    let confirmed = search.confirm();
    if let Some(bar) = search.bar.take() {
        bar.finish_and_clear();
    }
    let Some((mut best, best_seconds, confirm)) = confirmed.filter(|_| !stopped()) else {
        eprintln!(
            "watermark shrink: stopped before a reproducer was confirmed; the attempts so far are in {}",
            root.join("attempts.jsonl").display()
        );
        return Exit::Interrupted;
    };
    // The reproducer says the seed and length it reproduces with.
    best.seed = Some(record.seed);
    best.time_limit = Some(best_seconds);
    write_summary(&search, &schedule, seconds, Some(&confirm));
    let _ = std::fs::write(root.join("minimal-schedule.json"), best.to_text());
    if let Err(e) = crate::report::write_reports(&run_dir) {
        eprintln!("watermark shrink: the report was not rewritten: {e}");
    }
    eprintln!(
        "watermark shrink: minimal reproducer: {} faults, {:.0} s, reproduced {} of {} (was {} faults, {seconds:.0} s) — {}",
        best.faults.len(),
        best_seconds,
        confirm.reproduced,
        confirm.tries,
        schedule.faults.len(),
        root.join("minimal-schedule.json").display()
    );
    Exit::Valid
}

fn write_summary(
    search: &Search<'_>,
    original: &ScheduleFile,
    seconds: f64,
    confirm: Option<&Attempt>,
) {
    let summary = json!({
        "run": search.trial.run_dir,
        "kinds": search.trial.kinds,
        "original": {"faults": original.faults.len(), "seconds": seconds},
        "minimal": confirm.map(|c| json!({
            "faults": c.faults,
            "seconds": c.seconds,
            "tries": c.tries,
            "reproduced": c.reproduced,
            "folder": c.folder,
        })),
        // Whether the original schedule reproduced the failure at all.
        "original_reproduced": confirm.is_some(),
        "attempts": search.attempts.len(),
        "elapsed_s": search.started.elapsed().as_secs_f64(),
    });
    let _ = crate::store::write_json(&search.root.join("summary.json"), &summary);
}

/// Seconds since the epoch, to name a folder set aside.
fn chrono_stamp() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
