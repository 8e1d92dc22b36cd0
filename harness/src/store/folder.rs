//! The run folder itself: `results/<workload>-<UTC timestamp>-s<seed>/`, the
//! `results/latest` link to the newest, and where each of its files goes
//! (docs/run-folder.md).

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
}

impl RunFolder {
    /// Create `<results>/<workload>-<timestamp>-s<seed>/` (with a `-2`, `-3`, ...
    /// suffix if that name is taken) and point `<results>/latest` at it.
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
        point_latest(results, &name)?;
        Ok(RunFolder { path })
    }

    pub fn run_json(&self) -> PathBuf {
        self.path.join("run.json")
    }

    pub fn history(&self) -> PathBuf {
        self.path.join("history.jsonl")
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

/// Replace `<results>/latest` with a symlink to `name`, atomically: a new symlink
/// under a temporary name renamed over the old one.
fn point_latest(results: &Path, name: &str) -> Result<()> {
    let latest = results.join("latest");
    let tmp = results.join(format!(".latest.{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    std::os::unix::fs::symlink(name, &tmp)
        .and_then(|()| fs::rename(&tmp, &latest))
        .map_err(|e| {
            let _ = fs::remove_file(&tmp);
            HarnessError::new(format!("cannot point {} at {name}: {e}", latest.display()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn folders_are_named_and_latest_follows_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let t = UNIX_EPOCH + Duration::from_secs(1_795_997_412);
        let a = RunFolder::create(dir.path(), "queue", 7, t).unwrap();
        assert!(a.path.ends_with("queue-20261130T001012Z-s7"));
        assert!(a.nodes().is_dir());
        let b = RunFolder::create(dir.path(), "queue", 7, t).unwrap();
        assert!(b.path.ends_with("queue-20261130T001012Z-s7-2"));
        let latest = fs::read_link(dir.path().join("latest")).unwrap();
        assert_eq!(latest, Path::new("queue-20261130T001012Z-s7-2"));
        assert!(dir.path().join("latest").join("nodes").is_dir());
    }
}
