//! What `watermark serve` lists, read from the results directory's files: its run
//! folders (those with a `run.json`) and its campaign folders — a `--test-count`
//! series (`summary.json`), a self-test (`selftest.json`, or a `selftest-` name),
//! or any folder holding run folders — whose runs lie up to three levels below
//! them (a self-test's `<bug>/seed-<S>/<run>/`). Symbolic links (`latest`,
//! `current`) are never followed: they point at runs listed anyway.
//!
//! Listing is two-staged so that a page costs what it shows: [`entries`] and
//! [`runs_in`] read only `run.json` (when a run started, how it ended) to order
//! everything; [`summarise`] reads a shown run's `results.json` for its row.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

/// How deep below a campaign folder its run folders may lie.
const MAX_DEPTH: usize = 3;

/// A run folder as orders, strips and the trend need it: from its run.json only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunRef {
    /// The path from the results directory, `/`-separated.
    pub rel: String,
    pub started_at: Option<String>,
    /// run.json's `outcome` (`valid`, `invalid`, `unknown`, `harness-failed`,
    /// `interrupted`); without one, results.json's verdict if it was written since,
    /// else `unfinished` (it runs, or the harness died); `unreadable` without a
    /// readable run.json.
    pub outcome: String,
    pub has_report: bool,
}

impl RunRef {
    /// The run folder's own name (the last part of `rel`).
    pub fn name(&self) -> &str {
        self.rel.rsplit('/').next().unwrap_or(&self.rel)
    }

    /// Where it lies inside its campaign folder `campaign` (`ack-before-replicate`,
    /// `clean/seed-5`), or "" directly inside it.
    pub fn within(&self, campaign: &str) -> String {
        let inner = self
            .rel
            .strip_prefix(campaign)
            .unwrap_or(&self.rel)
            .trim_start_matches('/');
        match inner.rsplit_once('/') {
            Some((dir, _)) => dir.to_string(),
            None => String::new(),
        }
    }
}

/// What kind of campaign folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `watermark run --test-count N`.
    Series,
    /// `watermark selftest`.
    Selftest,
    /// Any other folder of run folders.
    Folder,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Series => "series",
            Kind::Selftest => "self-test",
            Kind::Folder => "folder",
        }
    }
}

/// One line of the results directory's index: a run folder or a campaign folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Run(RunRef),
    Campaign {
        name: String,
        kind: Kind,
        started_at: Option<String>,
    },
}

impl Entry {
    fn started_at(&self) -> Option<&str> {
        match self {
            Entry::Run(r) => r.started_at.as_deref(),
            Entry::Campaign { started_at, .. } => started_at.as_deref(),
        }
    }

    fn name(&self) -> &str {
        match self {
            Entry::Run(r) => &r.rel,
            Entry::Campaign { name, .. } => name,
        }
    }
}

/// One run folder, as a table row shows it (run.json and results.json).
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    pub run: RunRef,
    pub workload: Option<String>,
    pub seed: Option<String>,
    /// `valid`, `invalid`, `unknown`, or why there is none.
    pub verdict: String,
    /// (kind, count), over every checker.
    pub anomalies: Vec<(String, u64)>,
    /// Which of the run folder's files exist.
    pub files: Vec<&'static str>,
    /// What could not be read.
    pub problems: Vec<String>,
}

/// The files of a run folder a row links to.
pub const RUN_FILES: [&str; 6] = [
    "report.html",
    "run.json",
    "history.jsonl",
    "results.json",
    "junit.xml",
    "nodes",
];

pub fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", file_name(path)))?;
    serde_json::from_str(&text).map_err(|e| format!("{}:{}: {e}", file_name(path), e.line()))
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        v => Some(v.to_string()),
    }
}

/// `2026-11-29T23:30:12Z` from a folder name carrying `20261129T233012Z`.
pub fn stamp_in_name(name: &str) -> Option<String> {
    name.split('-').find_map(|part| {
        let b = part.as_bytes();
        let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        (b.len() == 16 && b[8] == b'T' && b[15] == b'Z' && digits(0..8) && digits(9..15)).then(
            || {
                format!(
                    "{}-{}-{}T{}:{}:{}Z",
                    &part[0..4],
                    &part[4..6],
                    &part[6..8],
                    &part[9..11],
                    &part[11..13],
                    &part[13..15]
                )
            },
        )
    })
}

/// A run folder (`dir`, at `rel` from the results directory) from its run.json.
pub fn run_ref(dir: &Path, rel: &str) -> RunRef {
    let run = read_json(&dir.join("run.json")).ok();
    let field = |k: &str| run.as_ref().and_then(|r| r.get(k)).and_then(scalar);
    let outcome = match &run {
        None => "unreadable".to_string(),
        Some(_) => field("outcome")
            .or_else(|| verdict_of(dir))
            .unwrap_or_else(|| "unfinished".to_string()),
    };
    let name = rel.rsplit('/').next().unwrap_or(rel);
    RunRef {
        rel: rel.to_string(),
        started_at: field("started_at").or_else(|| stamp_in_name(name)),
        outcome,
        has_report: dir.join("report.html").is_file(),
    }
}

/// The verdict of a run whose run.json records no outcome (the harness died) but
/// whose results.json was written since (`watermark check --json`).
fn verdict_of(dir: &Path) -> Option<String> {
    let results = read_json(&dir.join("results.json")).ok()?;
    Some(
        match results.get("valid")? {
            Value::Bool(true) => "valid",
            Value::Bool(false) => "invalid",
            _ => "unknown",
        }
        .to_string(),
    )
}

/// Real directories in `dir` (no symbolic links), by name.
fn subdirs(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The run folders under `dir` (itself at `rel`), to [`MAX_DEPTH`] levels.
fn walk(dir: &Path, rel: &str, depth: usize, out: &mut Vec<RunRef>) {
    for name in subdirs(dir) {
        let path = dir.join(&name);
        let sub = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        if path.join("run.json").is_file() {
            out.push(run_ref(&path, &sub));
        } else if depth < MAX_DEPTH {
            walk(&path, &sub, depth + 1, out);
        }
    }
}

/// The runs of the campaign folder `dir` (at `rel`), in the order they ran.
pub fn runs_in(dir: &Path, rel: &str) -> Vec<RunRef> {
    let mut runs = Vec::new();
    walk(dir, rel, 1, &mut runs);
    runs.sort_by(|a, b| (&a.started_at, &a.rel).cmp(&(&b.started_at, &b.rel)));
    runs
}

/// What kind of campaign folder `dir` is, if it is one.
pub fn campaign_kind(dir: &Path) -> Option<Kind> {
    let name = file_name(dir);
    if dir.join("run.json").is_file() {
        None
    } else if dir.join("summary.json").is_file() {
        Some(Kind::Series)
    } else if dir.join("selftest.json").is_file() || name.starts_with("selftest-") {
        Some(Kind::Selftest)
    } else {
        let mut found = Vec::new();
        walk(dir, "", 1, &mut found);
        (!found.is_empty()).then_some(Kind::Folder)
    }
}

/// The results directory's run folders and campaign folders, newest first (by
/// start, else by name). A folder that is neither is listed as a run that cannot
/// be read, so a broken folder is seen.
pub fn entries(root: &Path) -> Vec<Entry> {
    let mut list: Vec<Entry> = subdirs(root)
        .into_iter()
        .map(|name| {
            let dir = root.join(&name);
            match campaign_kind(&dir) {
                Some(kind) => {
                    let started_at = read_json(&dir.join("summary.json"))
                        .ok()
                        .and_then(|s| s.get("started_at").and_then(scalar))
                        .or_else(|| stamp_in_name(&name));
                    Entry::Campaign {
                        name,
                        kind,
                        started_at,
                    }
                }
                None => Entry::Run(run_ref(&dir, &name)),
            }
        })
        .collect();
    list.sort_by(|a, b| {
        (b.started_at().unwrap_or(""), b.name()).cmp(&(a.started_at().unwrap_or(""), a.name()))
    });
    list
}

/// Every run of the results directory, in campaign folders too, newest first.
pub fn all_runs(root: &Path) -> Vec<RunRef> {
    let mut runs = Vec::new();
    for entry in entries(root) {
        match entry {
            Entry::Run(r) => runs.push(r),
            Entry::Campaign { name, .. } => runs.extend(runs_in(&root.join(&name), &name)),
        }
    }
    runs.sort_by(|a, b| (&b.started_at, &b.rel).cmp(&(&a.started_at, &a.rel)));
    runs
}

/// Outcomes counted, in a fixed order: `3 valid, 1 invalid`.
pub fn tally(runs: &[RunRef]) -> Vec<(String, usize)> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in runs {
        *counts.entry(r.outcome.as_str()).or_default() += 1;
    }
    let order = [
        "valid",
        "invalid",
        "unknown",
        "harness-failed",
        "interrupted",
        "unfinished",
        "unreadable",
    ];
    let mut out: Vec<(String, usize)> = order
        .iter()
        .filter_map(|o| counts.remove(o).map(|n| (o.to_string(), n)))
        .collect();
    out.extend(counts.into_iter().map(|(o, n)| (o.to_string(), n)));
    out
}

/// Summarise one run folder for its row; a broken folder still gets a row saying
/// what is wrong.
pub fn summarise(root: &Path, run: &RunRef) -> RunSummary {
    let dir = root.join(&run.rel);
    let mut s = RunSummary {
        run: run.clone(),
        files: RUN_FILES
            .iter()
            .copied()
            .filter(|f| dir.join(f).exists())
            .collect(),
        ..Default::default()
    };
    match read_json(&dir.join("run.json")) {
        Ok(run) => {
            s.workload = run.get("workload").and_then(scalar);
            s.seed = run.get("seed").and_then(scalar);
        }
        Err(e) => s.problems.push(e),
    }
    match read_json(&dir.join("results.json")) {
        Ok(results) => {
            s.verdict = match results.get("valid") {
                Some(Value::Bool(true)) => "valid".into(),
                Some(Value::Bool(false)) => "invalid".into(),
                Some(Value::String(u)) if u == "unknown" => "unknown".into(),
                _ => "unreadable".into(),
            };
            let mut counts: BTreeMap<String, u64> = BTreeMap::new();
            let checkers = results.get("checkers").and_then(Value::as_object);
            for c in checkers.into_iter().flat_map(|c| c.values()) {
                for a in c
                    .get("anomalies")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(k) = a.get("kind").and_then(Value::as_str) {
                        *counts.entry(k.to_string()).or_default() += 1;
                    }
                }
            }
            s.anomalies = counts.into_iter().collect();
        }
        Err(e) => {
            s.verdict = match run.outcome.as_str() {
                "harness-failed" | "interrupted" | "unfinished" => run.outcome.clone(),
                _ => "not checked".into(),
            };
            s.problems.push(e);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_folder(dir: &Path, started: &str, outcome: Option<&str>) {
        std::fs::create_dir_all(dir).unwrap();
        let run = serde_json::json!({"workload": "queue", "seed": 1, "started_at": started,
                                     "outcome": outcome});
        std::fs::write(dir.join("run.json"), run.to_string()).unwrap();
    }

    #[test]
    fn stamps_are_read_from_folder_names() {
        assert_eq!(
            stamp_in_name("queue-20261129T233012Z-s42").as_deref(),
            Some("2026-11-29T23:30:12Z")
        );
        assert_eq!(
            stamp_in_name("selftest-20261201T010203Z-s5").as_deref(),
            Some("2026-12-01T01:02:03Z")
        );
        assert_eq!(stamp_in_name("queue-2026112XT233012Z-s1"), None);
        assert_eq!(stamp_in_name("latest"), None);
    }

    #[test]
    fn campaign_folders_are_told_apart_and_their_runs_found_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        run_folder(
            &root.join("queue-20261129T100000Z-s1"),
            "2026-11-29T10:00:00Z",
            Some("valid"),
        );
        let series = root.join("tests-queue-20261129T120000Z-s5");
        run_folder(
            &series.join("queue-20261129T120100Z-s6"),
            "2026-11-29T12:01:00Z",
            Some("invalid"),
        );
        run_folder(
            &series.join("queue-20261129T120000Z-s5"),
            "2026-11-29T12:00:00Z",
            Some("valid"),
        );
        std::fs::write(
            series.join("summary.json"),
            r#"{"started_at":"2026-11-29T12:00:00.123Z"}"#,
        )
        .unwrap();
        std::os::unix::fs::symlink(
            series.join("queue-20261129T120000Z-s5"),
            series.join("latest"),
        )
        .unwrap();
        let selftest = root.join("selftest-20261129T110000Z-s9");
        run_folder(
            &selftest.join("abort/seed-9/queue-20261129T110000Z-s9"),
            "2026-11-29T11:00:00Z",
            None,
        );
        run_folder(
            &selftest.join("clean/seed-9/queue-20261129T110500Z-s9"),
            "2026-11-29T11:05:00Z",
            Some("valid"),
        );
        std::fs::create_dir_all(root.join("empty")).unwrap();
        std::os::unix::fs::symlink(&series, root.join("latest")).unwrap();

        let list = entries(root);
        let names: Vec<&str> = list.iter().map(Entry::name).collect();
        assert_eq!(
            names,
            [
                "tests-queue-20261129T120000Z-s5",
                "selftest-20261129T110000Z-s9",
                "queue-20261129T100000Z-s1",
                "empty"
            ]
        );
        assert!(matches!(
            list[0],
            Entry::Campaign {
                kind: Kind::Series,
                ..
            }
        ));
        assert!(matches!(
            list[1],
            Entry::Campaign {
                kind: Kind::Selftest,
                ..
            }
        ));
        assert!(matches!(&list[3], Entry::Run(r) if r.outcome == "unreadable"));

        let runs = runs_in(&series, "tests-queue-20261129T120000Z-s5");
        let rels: Vec<&str> = runs.iter().map(|r| r.name()).collect();
        assert_eq!(
            rels,
            ["queue-20261129T120000Z-s5", "queue-20261129T120100Z-s6"],
            "in the order they ran; `latest` not followed"
        );
        let runs = runs_in(&selftest, "selftest-20261129T110000Z-s9");
        assert_eq!(runs.len(), 2);
        assert_eq!(
            runs[0].within("selftest-20261129T110000Z-s9"),
            "abort/seed-9"
        );
        assert_eq!(runs[0].outcome, "unfinished");
        let all = all_runs(root);
        assert_eq!(all.len(), 6, "the broken folder is listed too: {all:?}");
        assert_eq!(all[0].name(), "queue-20261129T120100Z-s6");
        assert_eq!(all[5].name(), "empty");
        let t = tally(&all);
        assert_eq!(
            t,
            [
                ("valid".to_string(), 3),
                ("invalid".to_string(), 1),
                ("unfinished".to_string(), 1),
                ("unreadable".to_string(), 1)
            ]
        );
    }
}
