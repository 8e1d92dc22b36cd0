//! One candidate of a shrink: a schedule written into its folder and played by
//! `watermark replay RUN_DIR --schedule … --time-limit …` up to K times, `jobs` at
//! once, until enough tries showed an anomaly of a kind the original showed (or
//! too few tries are left for that).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use serde::Serialize;

use crate::commands::campaign_process::{read_outcome_of, spawn_and_wait};
use crate::commands::selftest::detection::Detection;
use crate::nemesis::schedule_file::ScheduleFile;

/// What is asked of each try.
pub struct Trial<'a> {
    pub watermark: &'a Path,
    pub run_dir: &'a Path,
    /// The anomaly kinds of the original run: a try showing one reproduces it.
    pub kinds: &'a [String],
    pub tries: u32,
    /// Reproducing tries that adopt a smaller candidate.
    pub needed: u32,
    pub jobs: u32,
    pub stop: &'a AtomicBool,
}

/// How a candidate went: a row of `shrink/attempts.jsonl`.
#[derive(Debug, Clone, Serialize)]
pub struct Attempt {
    pub number: usize,
    /// What it tried: `original`, `time`, `pattern`, `faults`, `unshift`, `holds`, `shift`,
    /// `confirm`.
    pub phase: &'static str,
    pub faults: usize,
    pub seconds: f64,
    pub tries: u32,
    /// Tries that showed one of the original's anomaly kinds.
    pub reproduced: u32,
    /// The anomaly kinds the tries showed.
    pub kinds: Vec<String>,
    /// When the reproducing tries witnessed their first anomaly, each (seconds; at
    /// the end of the run when only the final logs showed it).
    pub witnessed: Vec<Detection>,
    /// The time a run is cut after: see [`cut_witness`] (seconds).
    pub detected: Option<f64>,
    /// The cut would need a try that showed its anomaly only at the end of the run.
    pub detected_at_end: bool,
    pub folder: PathBuf,
    pub elapsed_s: f64,
}

impl Trial<'_> {
    /// Play `schedule` for `seconds` in `folder`: until `needed` tries reproduced
    /// the failure, or the tries left cannot make up `needed`; with None, every try
    /// (to count how often it reproduces).
    pub fn run(
        &self,
        number: usize,
        phase: &'static str,
        schedule: &ScheduleFile,
        seconds: f64,
        folder: &Path,
        needed: Option<u32>,
    ) -> Attempt {
        let t = Instant::now();
        let mut attempt = Attempt {
            number,
            phase,
            faults: schedule.faults.len(),
            seconds,
            tries: 0,
            reproduced: 0,
            kinds: Vec::new(),
            witnessed: Vec::new(),
            detected: None,
            detected_at_end: false,
            folder: folder.to_path_buf(),
            elapsed_s: 0.0,
        };
        let file = folder.join("schedule.json");
        if std::fs::create_dir_all(folder)
            .and_then(|()| std::fs::write(&file, schedule.to_text()))
            .is_err()
        {
            return attempt;
        }
        while wants_more(attempt.tries, attempt.reproduced, self.tries, needed) {
            if self.stop.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
            let batch = self.jobs.min(self.tries - attempt.tries).max(1);
            let outcomes: Vec<_> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..batch)
                    .map(|k| {
                        let dir = folder.join(format!("try-{}", attempt.tries + k + 1));
                        let file = &file;
                        s.spawn(move || self.one(&dir, file, seconds))
                    })
                    .collect();
                handles.into_iter().filter_map(|h| h.join().ok()).collect()
            });
            attempt.tries += batch;
            for (kinds, detected) in outcomes {
                let hit = kinds.iter().any(|k| self.kinds.contains(k));
                if hit {
                    attempt.reproduced += 1;
                    attempt.witnessed.extend(detected);
                }
                attempt.kinds.extend(kinds);
            }
        }
        attempt.kinds.sort();
        attempt.kinds.dedup();
        (attempt.detected, attempt.detected_at_end) = cut_witness(&attempt.witnessed, self.needed);
        attempt.elapsed_s = t.elapsed().as_secs_f64();
        attempt
    }

    /// One try: its anomaly kinds and when it detected them.
    fn one(
        &self,
        dir: &Path,
        schedule: &Path,
        seconds: f64,
    ) -> (
        Vec<String>,
        Option<crate::commands::selftest::detection::Detection>,
    ) {
        let args: Vec<String> = vec![
            "replay".into(),
            self.run_dir.display().to_string(),
            "--schedule".into(),
            schedule.display().to_string(),
            "--time-limit".into(),
            format!("{seconds}"),
            "--results".into(),
            dir.display().to_string(),
        ];
        match spawn_and_wait(self.watermark, dir, &args, seconds, self.stop) {
            Ok(1) => std::fs::canonicalize(dir.join("latest"))
                .map(|f| read_outcome_of(&f, Some(self.kinds)))
                .unwrap_or_default(),
            Ok(_) => (Vec::new(), None),
            Err(e) => {
                eprintln!("watermark shrink: {}: {e}", dir.display());
                (Vec::new(), None)
            }
        }
    }
}

/// The time a run can be cut after and still show the failure in `needed` of the
/// runs that witnessed it: the `needed`-th earliest witness (the latest when fewer
/// witnessed) — a replay that met the failure late, by another path than most, does
/// not hold the cut back, and a cut that keeps `needed` of them is as many as
/// adopt a candidate. Whether that needs a run that showed its anomaly only at the
/// end (then there is no time to cut after). None: no witness.
pub fn cut_witness(witnessed: &[Detection], needed: u32) -> (Option<f64>, bool) {
    let mut sorted = witnessed.to_vec();
    sorted.sort_by(|a, b| {
        a.at_end
            .cmp(&b.at_end)
            .then(a.seconds.total_cmp(&b.seconds))
    });
    let kept = &sorted[..sorted.len().min(needed.max(1) as usize)];
    let at_end = kept.iter().any(|d| d.at_end);
    let latest = kept.iter().map(|d| d.seconds).max_by(f64::total_cmp);
    (latest, at_end)
}

/// Whether a candidate that reproduced in `reproduced` of `done` tries gets another,
/// out of `tries`: every try when `needed` is None, else until `needed` reproduced or
/// the tries left can no longer make them up.
fn wants_more(done: u32, reproduced: u32, tries: u32, needed: Option<u32>) -> bool {
    done < tries && needed.is_none_or(|n| reproduced < n && reproduced + (tries - done) >= n)
}

#[cfg(test)]
mod tests {
    use super::{Detection, cut_witness, wants_more};

    fn at(seconds: f64) -> Detection {
        Detection {
            seconds,
            at_end: false,
            after: None,
        }
    }

    #[test]
    fn a_run_is_cut_after_as_many_witnesses_as_adopt_a_candidate() {
        let end = Detection {
            seconds: 10.5,
            at_end: true,
            after: None,
        };
        // Two of three adopt: the second earliest, a late third left out.
        assert_eq!(
            cut_witness(&[at(9.9), at(2.2), at(3.1)], 2),
            (Some(3.1), false)
        );
        // Fewer witnesses than needed: the latest of them.
        assert_eq!(cut_witness(&[at(4.0)], 2), (Some(4.0), false));
        // A run that showed it only at the end counts after every in-run witness.
        assert_eq!(cut_witness(&[end, at(2.0), at(6.0)], 2), (Some(6.0), false));
        assert_eq!(cut_witness(&[end, at(2.0)], 2), (Some(10.5), true));
        assert_eq!(cut_witness(&[], 2), (None, false));
    }

    #[test]
    fn a_candidate_is_tried_until_it_reproduces_enough_or_cannot() {
        // Two of three: two reproductions end it, so do two misses.
        assert!(wants_more(0, 0, 3, Some(2)));
        assert!(!wants_more(2, 2, 3, Some(2)));
        assert!(!wants_more(2, 0, 3, Some(2)));
        assert!(wants_more(2, 1, 3, Some(2)));
        assert!(!wants_more(3, 1, 3, Some(2)));
        // One suffices: the first reproduction ends it.
        assert!(!wants_more(1, 1, 3, Some(1)));
        assert!(wants_more(2, 0, 3, Some(1)));
        // Counting: every try, whatever they showed.
        assert!(wants_more(2, 2, 3, None));
        assert!(!wants_more(3, 0, 3, None));
    }
}
