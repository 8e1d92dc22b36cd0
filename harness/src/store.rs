//! The run folder (SPEC §3, docs/run-folder.md): the interface between running a
//! campaign and judging it. `run` creates `results/<workload>-<UTC timestamp>-s<seed>/`,
//! points `results/latest` at it, writes `run.json` (everything needed to repeat the
//! run), streams `history.jsonl` line by line while the run goes — so a harness that
//! crashes still leaves a readable prefix — and finally writes `results.json`.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use checker::history::{Event, EventType, Process};
use checker::queue::{ReplicaLog, parse_final_log};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use workloads::recorder::Recorder;

use crate::error::{HarnessError, Result};
use crate::exit::Exit;
use crate::options::RunArgs;
use crate::progress::Tally;

/// Each replica's log at the end of a run, dumped by the harness into its node's folder
/// (`nodes/<id>/final-log.jsonl`).
pub const FINAL_LOG: &str = "final-log.jsonl";

/// The replicas' final logs in a run folder's `nodes/` (each node folder's
/// [`FINAL_LOG`], in node order), and what kept any of them from being read.
#[derive(Debug, Default)]
pub struct FinalLogs {
    pub replicas: Vec<ReplicaLog>,
    /// Node folders without a final log: the run ended before its final dump.
    pub missing: Vec<PathBuf>,
    /// Final logs that could not be read or parsed: `cannot read FILE: why`, or
    /// `FILE:LINE: why`.
    pub errors: Vec<String>,
}

impl FinalLogs {
    /// Read every node folder under `nodes` (the controller's has no log); a missing
    /// `nodes` holds none.
    pub fn read(nodes: &Path) -> FinalLogs {
        let mut out = FinalLogs::default();
        let Ok(entries) = fs::read_dir(nodes) else {
            return out;
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n != "controller"))
            .collect();
        dirs.sort();
        for dir in dirs {
            let file = dir.join(FINAL_LOG);
            let node = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            match fs::read_to_string(&file) {
                Ok(text) => match parse_final_log(&node, &text) {
                    Ok(logs) => out.replicas.extend(logs),
                    Err(e) => {
                        out.errors
                            .push(format!("{}:{}: {}", file.display(), e.line, e.message))
                    }
                },
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => out.missing.push(file),
                Err(e) => out
                    .errors
                    .push(format!("cannot read {}: {e}", file.display())),
            }
        }
        out
    }
}

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

    /// Write a JSON file of the run folder atomically (temp file, then rename), so a
    /// reader never sees half of it.
    pub fn write_json<T: Serialize>(&self, path: &Path, value: &T) -> Result<()> {
        write_json_atomic(path, value)
    }
}

/// `run.json`: everything needed to understand and repeat a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// The workload (`queue`), also telling `watermark check` which model to use.
    pub workload: String,
    pub seed: u64,
    /// Every option of `watermark run`, defaults resolved.
    pub options: RunArgs,
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
    /// caps a clean queue verdict at unknown, also when `watermark check` re-checks
    /// the folder. `null` if the run did not get that far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete: Option<bool>,
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
        args: &RunArgs,
        command_line: Vec<String>,
        started: SystemTime,
        replay_of: Option<PathBuf>,
    ) -> RunRecord {
        RunRecord {
            workload: args.workload.as_str().to_string(),
            seed: args.seed.unwrap_or_default(),
            options: args.clone(),
            command_line,
            broker_bin: args.broker_bin.clone(),
            versions: Versions {
                watermark: env!("CARGO_PKG_VERSION").to_string(),
                broker: args.broker_bin.as_deref().and_then(broker_version),
            },
            started_at: rfc3339(started),
            ended_at: None,
            outcome: None,
            exit_code: None,
            complete: None,
            notes: Vec::new(),
            replay_of,
        }
    }

    /// Note the end of the run.
    pub fn finish(&mut self, ended: SystemTime, exit: Exit) {
        self.ended_at = Some(rfc3339(ended));
        self.outcome = Some(
            match exit {
                Exit::Valid => "valid",
                Exit::Invalid => "invalid",
                Exit::Unknown => "unknown",
                Exit::HarnessFailed => "harness-failed",
                Exit::Interrupted => "interrupted",
                Exit::Usage => "usage",
            }
            .to_string(),
        );
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

/// Serialize `value` as pretty JSON into `path` via a temporary file and a rename.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| HarnessError::new(format!("cannot encode {}: {e}", path.display())))?;
    let tmp = path.with_extension("json.tmp");
    let write = || -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    };
    write().map_err(|e| HarnessError::new(format!("cannot write {}: {e}", path.display())))
}

/// Appends events to `history.jsonl` as they happen, one JSON object per line,
/// each line handed to the kernel in one write: whatever the harness managed to
/// record is on disk if it dies (at worst the last line is cut short). Indices count
/// from 0; times are nanoseconds since `origin`.
pub struct HistoryFile {
    out: File,
    origin: Instant,
    next_index: u64,
    path: PathBuf,
    /// The first write error, reported once; later events are still kept in memory.
    failed: Option<String>,
}

impl HistoryFile {
    pub fn create(path: &Path, origin: Instant) -> Result<HistoryFile> {
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(path)
            .map_err(|e| HarnessError::new(format!("cannot create {}: {e}", path.display())))?;
        Ok(HistoryFile {
            out: file,
            origin,
            next_index: 0,
            path: path.to_path_buf(),
            failed: None,
        })
    }

    /// The next event's index and the time now, since the run started.
    pub fn stamp(&mut self) -> (u64, u64) {
        let index = self.next_index;
        self.next_index += 1;
        let time = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        (index, time)
    }

    /// Write one line.
    pub fn append(&mut self, line: &str) {
        if self.failed.is_some() {
            return;
        }
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        let r = self.out.write_all(&buf);
        if let Err(e) = r {
            let msg = format!("cannot write {}: {e}", self.path.display());
            eprintln!("watermark: {msg}; the history on disk is incomplete");
            self.failed = Some(msg);
        }
    }

    /// The write error, if writing failed at some point.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }
}

/// The run's history: every client and nemesis event, numbered and timed under one
/// lock (so indices follow the order events happened), streamed to `history.jsonl`,
/// kept in memory for the checker, and counted for the progress bar.
pub struct History {
    inner: Mutex<HistoryInner>,
    tally: Arc<Tally>,
}

struct HistoryInner {
    file: HistoryFile,
    events: Vec<Event>,
}

impl History {
    pub fn new(file: HistoryFile, tally: Arc<Tally>) -> History {
        History {
            inner: Mutex::new(HistoryInner {
                file,
                events: Vec::new(),
            }),
            tally,
        }
    }

    fn push(
        &self,
        process: Process,
        kind: EventType,
        f: &str,
        value: Value,
        error: Option<String>,
    ) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (index, time) = inner.file.stamp();
        let event = Event {
            index,
            time,
            process,
            kind,
            f: f.to_string(),
            value,
            error,
        };
        inner.file.append(&event.to_json_line());
        inner.events.push(event);
    }

    /// Record a nemesis event: `f` names the fault, `value` its targets.
    pub fn nemesis(&self, kind: EventType, f: &str, value: Value) {
        self.push(Process::Nemesis, kind, f, value, None);
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<Event> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.events.clone()
    }

    /// Why the history on disk is incomplete, if it is.
    pub fn write_failure(&self) -> Option<String> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.file.failure().map(str::to_string)
    }
}

impl Recorder for History {
    fn record(&self, process: u64, kind: EventType, f: &str, value: Value, error: Option<String>) {
        self.push(Process::Client(process), kind, f, value, error);
        self.tally.count(kind);
    }
}

/// `2026-11-29T23:30:12Z`, as run.json stores times.
pub fn rfc3339(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// `20261129T233012Z`, as run folder names carry it.
pub fn compact_timestamp(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

/// UTC calendar date and time of `t` (Howard Hinnant's days-to-civil algorithm).
fn civil(t: SystemTime) -> (i64, u32, u32, u32, u32, u32) {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        m,
        d,
        (rem / 3600) as u32,
        ((rem % 3600) / 60) as u32,
        (rem % 60) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_utc() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_997_412); // 2026-11-30T00:10:12Z
        assert_eq!(rfc3339(t), "2026-11-30T00:10:12Z");
        assert_eq!(compact_timestamp(t), "20261130T001012Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn final_logs_are_read_in_node_order_with_what_is_missing_or_malformed() {
        let dir = tempfile::tempdir().unwrap();
        let nodes = dir.path().join("nodes");
        let line = r#"{"topic":"queue","partition":0,"log_end_offset":1,"high_watermark":1,"records":[{"offset":0,"value":7}]}"#;
        for (node, text) in [
            ("2", Some(line)),
            ("1", Some(line)),
            ("3", None),
            ("4", Some("{")),
        ] {
            fs::create_dir_all(nodes.join(node)).unwrap();
            if let Some(text) = text {
                fs::write(nodes.join(node).join(FINAL_LOG), text).unwrap();
            }
        }
        fs::create_dir_all(nodes.join("controller")).unwrap();
        let logs = FinalLogs::read(&nodes);
        let held: Vec<&str> = logs.replicas.iter().map(|r| r.node.as_str()).collect();
        assert_eq!(held, ["1", "2"]);
        assert_eq!(logs.missing, [nodes.join("3").join(FINAL_LOG)]);
        assert_eq!(logs.errors.len(), 1);
        assert!(
            logs.errors[0].contains("4/final-log.jsonl:1:"),
            "{:?}",
            logs.errors
        );
        let none = FinalLogs::read(&dir.path().join("absent"));
        assert!(none.replicas.is_empty() && none.missing.is_empty() && none.errors.is_empty());
    }

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

    #[test]
    fn history_lines_are_on_disk_as_soon_as_appended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        let mut h = HistoryFile::create(&path, Instant::now()).unwrap();
        assert_eq!(h.stamp().0, 0);
        h.append(r#"{"index":0}"#);
        assert_eq!(h.stamp().0, 1);
        h.append(r#"{"index":1}"#);
        // Read while the writer is still open, as after a crash.
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text, "{\"index\":0}\n{\"index\":1}\n");
        assert!(h.failure().is_none());
    }
}
