//! `run.json`: everything needed to understand and repeat a run — every option with
//! its defaults resolved, the seed, versions, the command line, start and end times
//! and how the run ended (docs/run-folder.md).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::timestamp::rfc3339;
use crate::error::{HarnessError, Result};
use crate::exit::Exit;
use crate::options::Resolved;

/// `run.json`: everything needed to understand and repeat a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// The workload (`queue`), also telling `watermark check` which model to use.
    pub workload: String,
    pub seed: u64,
    /// Every option of `watermark run`, defaults resolved.
    pub options: Resolved,
    /// The command line as typed.
    pub command_line: Vec<String>,
    /// The broker executable the cluster ran.
    pub broker_bin: Option<PathBuf>,
    pub versions: Versions,
    /// UTC, RFC 3339.
    pub started_at: String,
    /// `null` while the run goes (or if the harness died).
    pub ended_at: Option<String>,
    /// How it ended: valid, invalid, unknown, harness-failed, interrupted, usage.
    pub outcome: Option<String>,
    /// The exit code.
    pub exit_code: Option<i32>,
    /// Whether the end of the run went through: the healed cluster converged, the
    /// final drain read every partition, every replica's log was dumped. `false`
    /// is a warning with the verdict (the checker judges what was recorded), also
    /// when `watermark check` re-checks the folder. `null` if the run did not get
    /// that far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete: Option<bool>,
    /// Why the run ended without a verdict: the harness's failure (exit 3) or the
    /// signal that interrupted it (exit 130).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// What went wrong at the end of the run (see `complete`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The run folder this run repeats (`watermark replay`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Versions {
    pub watermark: String,
    /// What `broker --version` printed.
    pub broker: Option<String>,
}

impl RunRecord {
    pub fn new(
        args: &Resolved,
        command_line: Vec<String>,
        started: SystemTime,
        replay_of: Option<PathBuf>,
    ) -> RunRecord {
        RunRecord {
            workload: args.workload.to_string(),
            seed: args.seed,
            options: args.clone(),
            command_line,
            broker_bin: args.bin.is_none().then(|| args.broker_bin.clone()),
            versions: Versions {
                watermark: env!("CARGO_PKG_VERSION").to_string(),
                broker: match args.bin {
                    None => broker_version(&args.broker_bin),
                    Some(_) => None,
                },
            },
            started_at: rfc3339(started),
            ended_at: None,
            outcome: None,
            exit_code: None,
            complete: None,
            failure: None,
            notes: Vec::new(),
            replay_of,
        }
    }

    /// Note the end of the run.
    pub fn finish(&mut self, ended: SystemTime, exit: Exit) {
        self.ended_at = Some(rfc3339(ended));
        self.outcome = Some(exit.outcome().to_string());
        self.exit_code = Some(exit as i32);
    }

    /// Read a run folder's run.json.
    pub fn load(run_dir: &Path) -> Result<RunRecord> {
        let path = run_dir.join("run.json");
        let text = fs::read_to_string(&path).map_err(|e| {
            HarnessError::new(format!(
                "cannot read {}: {e} (is {} a run folder?)",
                path.display(),
                run_dir.display()
            ))
        })?;
        serde_json::from_str(&text).map_err(|e| {
            HarnessError::new(format!("{} is not a valid run.json: {e}", path.display()))
        })
    }
}

/// The first line `broker --version` prints, if it runs.
fn broker_version(bin: &Path) -> Option<String> {
    let out = std::process::Command::new(bin)
        .arg("--version")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next()?.trim();
    (out.status.success() && !line.is_empty()).then(|| line.to_string())
}
