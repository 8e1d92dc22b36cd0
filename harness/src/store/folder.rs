//! The run folder itself: `results/<workload>-<UTC timestamp>-s<seed>/`, the
//! `results/current` link to the run in progress and `results/latest` to the
//! newest finished one (as Jepsen's store keeps them), and where each of its files
//! goes (docs/run-folder.md).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use super::atomic::{write_atomic, write_json};
use super::final_logs::FINAL_LOG;
use super::timestamp::compact_timestamp;
use crate::error::{HarnessError, Result};

/// A created run folder.
#[derive(Debug, Clone)]
pub struct RunFolder {
    pub path: PathBuf,
    /// The directories whose `current` and `latest` links follow this run, each
    /// with the link's target (the folder's path relative to it).
    links: Vec<(PathBuf, String)>,
}

impl RunFolder {
    /// Create `<results>/<workload>-<timestamp>-s<seed>/` (with a `-2`, `-3`, ...
    /// suffix if that name is taken) and point `<results>/current` at it;
    /// [`RunFolder::finish`] moves `<results>/latest` once the run ended.
    pub fn create(results: &Path, workload: &str, seed: u64, now: SystemTime) -> Result<RunFolder> {
        fs::create_dir_all(results).map_err(|e| {
            HarnessError::new(format!(
                "cannot create the results directory {}: {e} (choose another with --results)",
                results.display()
            ))
        })?;
        let base = format!("{workload}-{}-s{seed}", compact_timestamp(now));
        let mut name = base.clone();
        let mut n = 1;
        let path = loop {
            let candidate = results.join(&name);
            match fs::create_dir(&candidate) {
                Ok(()) => break candidate,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    n += 1;
                    name = format!("{base}-{n}");
                }
                Err(e) => {
                    return Err(HarnessError::new(format!(
                        "cannot create the run folder {}: {e}",
                        candidate.display()
                    )));
                }
            }
        };
        fs::create_dir_all(path.join("nodes"))?;
        point(results, "current", &name)?;
        Ok(RunFolder {
            path,
            links: vec![(results.to_path_buf(), name)],
        })
    }

    /// Also keep `<dir>/current` and `<dir>/latest` on this run: `dir` is a
    /// directory above the folder's own results directory (the results directory
    /// of a series of campaigns, whose own folder holds this one).
    pub fn link_from(&mut self, dir: &Path) -> Result<()> {
        let target = self.path.strip_prefix(dir).map_err(|_| {
            HarnessError::new(format!(
                "{} is not inside {}",
                self.path.display(),
                dir.display()
            ))
        })?;
        let target = target.to_string_lossy().into_owned();
        point(dir, "current", &target)?;
        self.links.push((dir.to_path_buf(), target));
        Ok(())
    }

    /// The run ended, however: point `latest` at it and remove `current` if it
    /// still points here (another run may have started since).
    pub fn finish(&self) -> Result<()> {
        for (dir, target) in &self.links {
            point(dir, "latest", target)?;
            let current = dir.join("current");
            if fs::read_link(&current).is_ok_and(|t| t == Path::new(target)) {
                let _ = fs::remove_file(&current);
            }
        }
        Ok(())
    }

    pub fn run_json(&self) -> PathBuf {
        self.path.join("run.json")
    }

    pub fn history(&self) -> PathBuf {
        self.path.join("history.jsonl")
    }

    /// The console output of the run, each line with its time.
    pub fn watermark_log(&self) -> PathBuf {
        self.path.join("watermark.log")
    }

    /// The faults the nemesis applied, as a schedule file (`--schedule` plays it).
    pub fn schedule_json(&self) -> PathBuf {
        self.path.join("schedule.json")
    }

    /// Write the run's schedule (durably and atomically).
    pub fn write_schedule(&self, text: &str) -> Result<()> {
        let path = self.schedule_json();
        write_atomic(&path, text.as_bytes())
            .map_err(|e| HarnessError::new(format!("cannot write {}: {e}", path.display())))
    }

    pub fn results_json(&self) -> PathBuf {
        self.path.join("results.json")
    }

    /// Where the nodes' data dirs, `broker.log` and `final-log.jsonl` live.
    pub fn nodes(&self) -> PathBuf {
        self.path.join("nodes")
    }

    /// Node `id`'s final log.
    pub fn final_log(&self, id: i32) -> PathBuf {
        self.nodes().join(id.to_string()).join(FINAL_LOG)
    }

    /// Write node `id`'s final log (one line per partition it holds), durably and
    /// atomically: a crash leaves it whole or missing.
    pub fn write_final_log(&self, id: i32, text: &str) -> Result<()> {
        let path = self.final_log(id);
        write_atomic(&path, text.as_bytes())
            .map_err(|e| HarnessError::new(format!("cannot write {}: {e}", path.display())))
    }

    /// Write a JSON file of the run folder (durably and atomically).
    pub fn write_json<T: Serialize>(&self, path: &Path, value: &T) -> Result<()> {
        write_json(path, value)
    }
}

/// Replace `<dir>/<link>` with a symlink to `target`, atomically: a new symlink
/// under a temporary name renamed over the old one.
fn point(dir: &Path, link: &str, target: &str) -> Result<()> {
    let path = dir.join(link);
    let tmp = dir.join(format!(".{link}.{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)
        .and_then(|()| fs::rename(&tmp, &path))
        .map_err(|e| {
            let _ = fs::remove_file(&tmp);
            HarnessError::new(format!("cannot point {} at {target}: {e}", path.display()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn folders_are_named_current_follows_the_run_and_latest_the_finished() {
        let dir = tempfile::tempdir().unwrap();
        let link = |name: &str| fs::read_link(dir.path().join(name)).ok();
        let t = UNIX_EPOCH + Duration::from_secs(1_795_997_412);
        let a = RunFolder::create(dir.path(), "queue", 7, t).unwrap();
        assert!(a.path.ends_with("queue-20261130T001012Z-s7"));
        assert!(a.nodes().is_dir());
        assert_eq!(
            link("current").unwrap(),
            Path::new("queue-20261130T001012Z-s7")
        );
        assert_eq!(link("latest"), None, "latest moves only when a run ends");
        a.finish().unwrap();
        assert_eq!(link("current"), None);
        assert_eq!(
            link("latest").unwrap(),
            Path::new("queue-20261130T001012Z-s7")
        );

        let b = RunFolder::create(dir.path(), "queue", 7, t).unwrap();
        assert!(b.path.ends_with("queue-20261130T001012Z-s7-2"));
        assert_eq!(
            link("current").unwrap(),
            Path::new("queue-20261130T001012Z-s7-2")
        );
        assert_eq!(
            link("latest").unwrap(),
            Path::new("queue-20261130T001012Z-s7")
        );
        // A run that started meanwhile keeps its `current`.
        let c = RunFolder::create(dir.path(), "queue", 7, t).unwrap();
        b.finish().unwrap();
        assert_eq!(
            link("latest").unwrap(),
            Path::new("queue-20261130T001012Z-s7-2")
        );
        assert_eq!(
            link("current").unwrap(),
            Path::new("queue-20261130T001012Z-s7-3")
        );
        c.finish().unwrap();
        assert!(dir.path().join("latest").join("nodes").is_dir());
    }

    #[test]
    fn a_series_keeps_its_own_links_and_the_results_directorys() {
        let dir = tempfile::tempdir().unwrap();
        let series = dir.path().join("tests-x");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_997_412);
        let mut a = RunFolder::create(&series, "queue", 7, t).unwrap();
        a.link_from(dir.path()).unwrap();
        let top = |name: &str| fs::read_link(dir.path().join(name)).ok();
        assert_eq!(
            top("current").unwrap(),
            Path::new("tests-x/queue-20261130T001012Z-s7")
        );
        a.finish().unwrap();
        assert_eq!(top("current"), None);
        assert!(dir.path().join("latest").join("nodes").is_dir());
        assert!(series.join("latest").join("nodes").is_dir());
        let outside = tempfile::tempdir().unwrap();
        assert!(a.link_from(outside.path()).is_err());
    }
}
