//! The candidates of a shrink, phase by phase: the run cut in time, the aimed
//! pattern under way at the failure alone, ddmin over the faults, shorter holds,
//! the faults moved earlier. Each plays its candidates through [`Search::test`],
//! which adopts one that reproduces.

use std::time::Duration;

use super::ddmin::{self, Tested, ddmin};
use super::{LEAD, MIN_SECONDS, SETTLE, Search, WITNESS_MARGIN};
use crate::nemesis::schedule_file::{ScheduleFile, Spec};

impl Search<'_> {
    /// The aimed pattern under way when the failure was first witnessed (the last
    /// to start before it), alone: most failures need the one window one pattern
    /// opens, and this candidate finds it before ddmin halves its way there. When
    /// only the end of the run showed the failure (lost writes), the first pattern
    /// still under way when the last of them was acknowledged: what lost it came
    /// later.
    pub(super) fn pattern_alone(&mut self) {
        let base = self.best().clone();
        let patterns = units(&base);
        if patterns.len() < 2 {
            return;
        }
        let (witness, after) = (self.detected, self.lost_after);
        let Some(unit) = culprit(&base, &patterns, witness, after, &self.failed_on) else {
            return;
        };
        // A fault no pattern played (a schedule written by hand) is left to ddmin.
        let first = &base.faults[unit[0]];
        if first.plan.is_none() && first.trigger.is_none() {
            return;
        }
        let s = candidate(
            &base,
            unit.iter().map(|&i| base.faults[i].clone()).collect(),
        );
        let seconds = self.seconds_for(&s);
        self.test("pattern", &s, seconds);
    }

    /// The schedule moved earlier — its first fault `LEAD` seconds into the run, the
    /// run as much shorter —, for a failure that needs its faults, not the minutes
    /// of load before them; if that does not reproduce, moved half as far (a
    /// failure may need a log of some length, or the cluster as a minute of faults
    /// left it, but not all of the minute).
    pub(super) fn shift_earlier(&mut self) {
        let Some(first) = self.best().faults.iter().map(|e| e.at).min() else {
            return;
        };
        let full = (first.as_secs_f64() - LEAD).floor();
        for shift in [full, (full / 2.0).floor()] {
            if shift < MIN_SECONDS {
                return;
            }
            let s = moved(self.best(), -shift);
            let before = self.detected;
            let seconds = (self.seconds() - shift).max(MIN_SECONDS);
            match self.test("shift", &s, seconds) {
                Tested::Fails => {
                    self.witness_moved(before, -shift);
                    self.shifted += shift;
                    return;
                }
                Tested::OutOfBudget => return,
                Tested::Passes => {}
            }
        }
    }

    /// The run cut `WITNESS_MARGIN` after the first anomaly was witnessed, the
    /// faults starting after the witness dropped (none of them can have caused what
    /// the tries it counts saw before they began) — or, when only the end of the
    /// run showed it, `SETTLE` after the last fault ended —, if that is shorter or
    /// has fewer faults.
    pub(super) fn cut_time(&mut self) {
        let (s, seconds) = cut_at(self.best(), self.seconds(), self.detected);
        if seconds < self.seconds() || s.faults.len() < self.best().faults.len() {
            self.test("time", &s, seconds);
        }
    }

    /// ddmin over the runs of faults one aimed pattern played (they work together:
    /// a lagging follower and the kill timed by it).
    pub(super) fn shrink_patterns(&mut self) {
        let patterns = units(self.best());
        if patterns.len() < self.best().faults.len() {
            self.ddmin_over(patterns);
        }
    }

    /// ddmin over the faults left, one by one.
    pub(super) fn shrink_each(&mut self) {
        let faults = (0..self.best().faults.len()).map(|i| vec![i]).collect();
        self.ddmin_over(faults);
    }

    /// Each fault the fault-by-fault pass kept in a schedule moved earlier, taken out
    /// at the times before the move (in the longer run): without it, the failure may
    /// need the load before the faults that the move cut — a replica moved back into
    /// its partition catches up a log of a minute's records for longer than one of
    /// five seconds', long enough for a controller's failover to meet it without a
    /// throttle on its link. So the faults that slow a link or a process go first
    /// ([`unshift_order`]): they are what stands in for the time the move cut. The
    /// first that reproduces is adopted, and the faults left are tried one by one
    /// again there.
    pub(super) fn shrink_each_unshifted(&mut self) {
        if self.shifted <= 0.0 {
            return;
        }
        let base = self.best().clone();
        let seconds = self.seconds() + self.shifted;
        for i in unshift_order(&base) {
            let s = unshifted_without(&base, i, self.shifted);
            let before = self.detected;
            match self.test("unshift", &s, seconds) {
                Tested::Fails => {
                    self.witness_moved(before, self.shifted);
                    self.shifted = 0.0;
                    self.shrink_each();
                    return;
                }
                Tested::OutOfBudget => return,
                Tested::Passes => {}
            }
        }
    }

    /// A schedule moved `by` seconds (earlier when negative) was adopted, the witness
    /// time `before` it: a reproducer whose tries gave no witness time moves its old
    /// one with it.
    fn witness_moved(&mut self, before: Option<f64>, by: f64) {
        if self.detected == before {
            self.detected = before.map(|d| (d + by).max(0.0));
        }
    }

    /// ddmin over `units` of the best schedule's faults (each a list of indices).
    fn ddmin_over(&mut self, units: Vec<Vec<usize>>) {
        let base = self.best().clone();
        ddmin((0..units.len()).collect(), |subset| {
            let s = candidate(
                &base,
                subset
                    .iter()
                    .flat_map(|&u| units[u].iter().map(|&i| base.faults[i].clone()))
                    .collect(),
            );
            let seconds = self.seconds_for(&s);
            self.test("faults", &s, seconds)
        });
    }

    /// The time limit a candidate is played with: the current one, or when only the
    /// end of a run shows the anomaly, `SETTLE` past the candidate's last fault if
    /// that is shorter (every try of a subset of early faults then costs less).
    fn seconds_for(&self, s: &ScheduleFile) -> f64 {
        if self.detected.is_some() {
            return self.seconds();
        }
        let cut = (s.length().as_secs_f64() + SETTLE).ceil().max(MIN_SECONDS);
        cut.min(self.seconds())
    }

    /// Halve every hold at once, then each alone.
    pub(super) fn shrink_holds(&mut self) {
        let halved = |s: &ScheduleFile, only: Option<usize>| {
            let mut s = s.clone();
            for (i, e) in s.faults.iter_mut().enumerate() {
                if only.is_none_or(|o| o == i)
                    && let Some(d) = e.lasts
                    && d > Duration::from_secs(1)
                {
                    e.lasts = Some(d / 2);
                }
            }
            s
        };
        let all = halved(self.best(), None);
        if all != *self.best() && self.test("holds", &all, self.seconds()) == Tested::Fails {
            return;
        }
        for i in 0..self.best().faults.len() {
            let one = halved(self.best(), Some(i));
            if one != *self.best()
                && self.test("holds", &one, self.seconds()) == Tested::OutOfBudget
            {
                return;
            }
        }
    }
}

/// Which of `patterns` (units of `base`) a failure points at: the last to start
/// before its `witness`, else the first still under way at or starting after
/// `after` (the latest acknowledgement of what the end of the run found lost) —
/// of those, the first aimed at a partition the failure was seen `on`, if one is.
fn culprit<'a>(
    base: &ScheduleFile,
    patterns: &'a [Vec<usize>],
    witness: Option<f64>,
    after: Option<f64>,
    on: &[(String, u32)],
) -> Option<&'a Vec<usize>> {
    let candidates: Vec<&Vec<usize>> = match (witness, after) {
        (Some(witness), _) => patterns
            .iter()
            .rev()
            .filter(|u| base.faults[u[0]].at.as_secs_f64() <= witness)
            .collect(),
        (None, Some(after)) => patterns
            .iter()
            .filter(|u| {
                u.iter()
                    .map(|&i| &base.faults[i])
                    .any(|e| (e.at + e.lasts.unwrap_or_default()).as_secs_f64() >= after)
            })
            .collect(),
        (None, None) => return None,
    };
    let aimed_on = |u: &&&Vec<usize>| {
        u.iter().any(|&i| {
            base.faults[i]
                .fault
                .partition()
                .is_some_and(|(t, p)| on.iter().any(|(topic, q)| topic == t && *q == p))
        })
    };
    candidates
        .iter()
        .find(aimed_on)
        .or(candidates.first())
        .copied()
}

/// `base`, of `seconds`, cut after its failure's `witness` (see
/// [`Search::cut_time`]): the schedule and its time limit.
fn cut_at(base: &ScheduleFile, seconds: f64, witness: Option<f64>) -> (ScheduleFile, f64) {
    let (cut, last_start) = match witness {
        Some(d) => (d + WITNESS_MARGIN, d),
        None => {
            let end = base.length().as_secs_f64() + SETTLE;
            (end, end)
        }
    };
    let cut = cut.ceil().max(MIN_SECONDS).min(seconds);
    let mut s = base.clone();
    s.faults
        .retain(|e| e.at.as_secs_f64() < cut && e.at.as_secs_f64() <= last_start);
    (s, cut)
}

/// The runs of faults one aimed pattern played: by the plan each was of (its
/// decision's number), else by its trigger.
fn units(s: &ScheduleFile) -> Vec<Vec<usize>> {
    let keys: Vec<Option<String>> = s
        .faults
        .iter()
        .map(|e| match e.plan {
            Some(n) => Some(format!("plan {n}")),
            None => e.trigger.clone(),
        })
        .collect();
    let keys: Vec<Option<&str>> = keys.iter().map(Option::as_deref).collect();
    ddmin::patterns(&keys)
}

/// A candidate of `faults` taken from `base`: its kills cut power as `base`'s do
/// (the run's seed and time limit are the replay's own).
fn candidate(
    base: &ScheduleFile,
    faults: Vec<crate::nemesis::schedule_file::Entry>,
) -> ScheduleFile {
    ScheduleFile {
        faults,
        kills_cut_power: base.kills_cut_power,
        ..ScheduleFile::default()
    }
}

/// `s` with every fault `by` seconds later (earlier when negative, none before the
/// run's start).
fn moved(s: &ScheduleFile, by: f64) -> ScheduleFile {
    let d = Duration::from_secs_f64(by.abs());
    let mut s = s.clone();
    for e in &mut s.faults {
        e.at = if by < 0.0 {
            e.at.saturating_sub(d)
        } else {
            e.at + d
        };
    }
    s
}

/// The order the `unshift` phase takes faults out in: those that slow something
/// — a degraded link, a paused process — first (a short run may need them where a
/// long one does not: a replica catching up a short log slowly stands in for one
/// catching up a long log), then the rest, each group in the schedule's order.
fn unshift_order(s: &ScheduleFile) -> Vec<usize> {
    let slows = |i: &usize| matches!(s.faults[*i].fault, Spec::Degrade { .. } | Spec::Pause(_));
    let (first, rest): (Vec<usize>, Vec<usize>) = (0..s.faults.len()).partition(slows);
    first.into_iter().chain(rest).collect()
}

/// `s` without its fault `i`, every other fault `by` seconds later.
fn unshifted_without(s: &ScheduleFile, i: usize, by: f64) -> ScheduleFile {
    let mut s = moved(s, by);
    s.faults.remove(i);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two plans of one pattern in a row are two units; faults of no plan go by
    /// their trigger, and a fault of neither is a unit of its own.
    #[test]
    fn a_schedules_units_are_its_plans() {
        let text = "{\"schedule\": 1, \"faults\": [\n\
            {\"at\": 1, \"fault\": \"kill\", \"target\": \"node 1\", \"plan\": 1, \"trigger\": \"leader-disk\"},\n\
            {\"at\": 2, \"fault\": \"kill\", \"target\": \"node 1\", \"plan\": 1, \"trigger\": \"leader-disk\"},\n\
            {\"at\": 3, \"fault\": \"kill\", \"target\": \"node 1\", \"plan\": 2, \"trigger\": \"leader-disk\"},\n\
            {\"at\": 4, \"fault\": \"kill\", \"target\": \"node 1\", \"trigger\": \"crash-all\"},\n\
            {\"at\": 5, \"fault\": \"kill\", \"target\": \"node 1\", \"trigger\": \"crash-all\"},\n\
            {\"at\": 6, \"fault\": \"kill\", \"target\": \"node 1\"},\n\
            {\"at\": 7, \"fault\": \"kill\", \"target\": \"node 1\"}\n]}";
        let s = ScheduleFile::parse(text).unwrap();
        assert_eq!(
            units(&s),
            vec![vec![0, 1], vec![2], vec![3, 4], vec![5], vec![6]]
        );
    }

    /// A failure seen during the run points at the pattern under way then; one only
    /// the end showed, at the first pattern not over when its last lost write was
    /// acknowledged.
    #[test]
    fn a_failure_points_at_its_pattern() {
        let text = "{\"schedule\": 1, \"faults\": [\n\
            {\"at\": 1, \"fault\": \"kill\", \"target\": \"node 1\", \"for\": 2, \"plan\": 1},\n\
            {\"at\": 10, \"fault\": \"pause\", \"target\": \"node 2\", \"for\": 4, \"plan\": 2},\n\
            {\"at\": 20, \"fault\": \"crash-all\", \"plan\": 3}\n]}";
        let s = ScheduleFile::parse(text).unwrap();
        let p = units(&s);
        let culprit = |w, a| culprit(&s, &p, w, a, &[]);
        assert_eq!(culprit(Some(12.0), None), Some(&vec![1]));
        assert_eq!(culprit(Some(12.0), Some(2.0)), Some(&vec![1]));
        assert_eq!(culprit(Some(0.5), None), None);
        // Lost after 2.5 s: the kill (1–3 s) was still under way.
        assert_eq!(culprit(None, Some(2.5)), Some(&vec![0]));
        // Lost after 15 s: the pause was over; the crash-all came next.
        assert_eq!(culprit(None, Some(15.0)), Some(&vec![2]));
        assert_eq!(culprit(None, Some(25.0)), None);
        assert_eq!(culprit(None, None), None);
    }

    /// A failure witnessed after every fault points at the last pattern aimed at a
    /// partition it was seen on, not merely the last one.
    #[test]
    fn a_failure_points_at_the_last_pattern_on_its_partition() {
        let text = "{\"schedule\": 1, \"faults\": [\n\
            {\"at\": 1, \"fault\": \"kill\", \"target\": \"leader of register/1\", \"for\": 2, \"plan\": 1},\n\
            {\"at\": 10, \"fault\": \"reassign\", \"partition\": \"register/1\", \"replicas\": [2, 3], \"plan\": 2},\n\
            {\"at\": 11, \"fault\": \"kill\", \"target\": \"active-controller\", \"for\": 2, \"plan\": 2},\n\
            {\"at\": 20, \"fault\": \"pause\", \"target\": \"leader of queue/0\", \"for\": 4, \"plan\": 3}\n]}";
        let s = ScheduleFile::parse(text).unwrap();
        let p = units(&s);
        let on = |topic: &str, n| vec![(topic.to_string(), n)];
        assert_eq!(
            culprit(&s, &p, Some(30.0), None, &on("register", 1)),
            Some(&vec![1, 2])
        );
        assert_eq!(
            culprit(&s, &p, Some(30.0), None, &on("queue", 0)),
            Some(&vec![3])
        );
        // None aimed there: the last, as without.
        assert_eq!(
            culprit(&s, &p, Some(30.0), None, &on("queue", 1)),
            Some(&vec![3])
        );
        // Lost after 2.5 s on register/1: of the patterns under way since, the first
        // aimed there.
        assert_eq!(
            culprit(&s, &p, None, Some(2.5), &on("register", 1)),
            Some(&vec![0])
        );
    }

    /// A fault taken out at the times before a move earlier: the others move back.
    #[test]
    fn a_fault_is_taken_out_at_the_times_before_the_move() {
        let text = "{\"schedule\": 1, \"faults\": [\n\
            {\"at\": 5, \"fault\": \"kill\", \"target\": \"node 1\"},\n\
            {\"at\": 5.5, \"fault\": \"pause\", \"target\": \"node 2\", \"for\": 1},\n\
            {\"at\": 6, \"fault\": \"kill\", \"target\": \"node 3\"}\n]}";
        let s = ScheduleFile::parse(text).unwrap();
        let u = unshifted_without(&s, 1, 26.0);
        let at: Vec<f64> = u.faults.iter().map(|e| e.at.as_secs_f64()).collect();
        assert_eq!(at, [31.0, 32.0]);
        assert_eq!(u.faults[1].fault, s.faults[2].fault);
        assert_eq!(s.faults.len(), 3);
    }

    /// The time cut keeps WITNESS_MARGIN past the witness and drops the faults that
    /// began after it, even when the run is no shorter; with only the end of the
    /// run showing the failure, SETTLE past the last fault's end.
    #[test]
    fn the_time_cut_drops_the_faults_after_the_witness() {
        let text = "{\"schedule\": 1, \"faults\": [\n\
            {\"at\": 5, \"fault\": \"kill\", \"target\": \"node 1\", \"for\": 2},\n\
            {\"at\": 27, \"fault\": \"kill\", \"target\": \"node 2\"},\n\
            {\"at\": 28.2, \"fault\": \"pause\", \"target\": \"node 2\", \"for\": 15}\n]}";
        let s = ScheduleFile::parse(text).unwrap();
        let (cut, seconds) = cut_at(&s, 31.0, Some(27.6));
        assert_eq!(seconds, 31.0);
        assert_eq!(cut.faults, s.faults[..2]);
        let (cut, seconds) = cut_at(&s, 60.0, Some(27.6));
        assert_eq!((cut.faults.len(), seconds), (2, 33.0));
        // Witnessed at 3 s, before any fault: no fault, 5 s past the witness.
        let (cut, seconds) = cut_at(&s, 60.0, Some(3.0));
        assert_eq!((cut.faults.len(), seconds), (0, 8.0));
        // Only the end showed it: 10 s past the pause's end (43.2 s).
        let (cut, seconds) = cut_at(&s, 60.0, None);
        assert_eq!((cut.faults.len(), seconds), (3, 54.0));
    }

    /// Faults that slow something are taken out first at the times before a move.
    #[test]
    fn the_unshift_phase_tries_the_slowing_faults_first() {
        let text = "{\"schedule\": 1, \"faults\": [\n\
            {\"at\": 5, \"fault\": \"kill\", \"target\": \"node 1\"},\n\
            {\"at\": 5.5, \"fault\": \"throttle\", \"targets\": [\"node 1\", \"node 2\"], \"between\": true, \"bytes_per_s\": 1024, \"for\": 3},\n\
            {\"at\": 6, \"fault\": \"kill\", \"target\": \"node 3\"},\n\
            {\"at\": 7, \"fault\": \"pause\", \"target\": \"node 2\", \"for\": 1}\n]}";
        let s = ScheduleFile::parse(text).unwrap();
        assert_eq!(unshift_order(&s), [1, 3, 0, 2]);
    }

    /// A search of `budget` seconds into `root` that has played nothing, its
    /// original schedule of 60 s adopted; its tries would run no real binary.
    fn search<'a>(
        trial: super::super::Trial<'a>,
        root: &std::path::Path,
        budget: f64,
    ) -> Search<'a> {
        Search {
            trial,
            root: root.to_path_buf(),
            attempts: Vec::new(),
            started: std::time::Instant::now(),
            budget: Duration::from_secs_f64(budget),
            detected: None,
            lost_after: None,
            failed_on: Vec::new(),
            adopted: vec![(ScheduleFile::default(), 60.0)],
            passed: Vec::new(),
            shifted: 0.0,
            bar: None,
        }
    }

    /// The same faults in no longer a run than one that did not reproduce them are
    /// taken to pass, unplayed; a longer run is a new candidate, played only as the
    /// budget allows: it keeps room for the candidate's tries, its confirmation and
    /// a step back to the smallest so far.
    #[test]
    fn what_passed_is_not_played_again_nor_shorter() {
        let stop = std::sync::atomic::AtomicBool::new(false);
        let trial = super::super::Trial {
            watermark: std::path::Path::new("/nonexistent/watermark"),
            run_dir: std::path::Path::new("/nonexistent/run"),
            kinds: &[],
            tries: 3,
            needed: 2,
            jobs: 2,
            stop: &stop,
        };
        let empty = ScheduleFile::default();
        // Three estimates of two rounds of (60 s + 25 s) each: 510 s.
        let root = tempfile::tempdir().unwrap();
        let mut s = search(trial, root.path(), 500.0);
        s.passed.push((empty.clone(), 30.0));
        assert_eq!(s.test("faults", &empty, 30.0), Tested::Passes);
        assert_eq!(s.test("faults", &empty, 20.0), Tested::Passes);
        assert_eq!(s.test("faults", &empty, 60.0), Tested::OutOfBudget);
        assert!(s.attempts.is_empty());
    }
}
