//! `watermark report HISTORY` for a history outside a run folder: any history
//! `watermark check` reads — a Jepsen `history.edn` (alone or in a Jepsen store
//! folder), a Porcupine log, a bare `history.jsonl` — is judged as `check` judges
//! it and rendered as a run's report is (timeline, anomalies with their close-ups,
//! the linearization picture of a non-linearizable key), with a `junit.xml`. There
//! is no run.json: the configuration table names the history, its format and the
//! model it was checked as.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::folder::RunData;
use super::{ReportError, Written, junit, page, write_atomically};
use crate::commands::check::{Judging, judge};

/// Judge the history at `history` and write report.html and junit.xml into `out`.
pub fn write(history: &Path, judging: &Judging, out: &Path) -> Result<Written, ReportError> {
    let judged = judge(history, judging, true).map_err(ReportError::Input)?;
    let ops = checker::history::pair(&judged.events).map_err(|e| {
        ReportError::input(format!(
            "{}: {} (the history does not pair invocations with completions)",
            judged.path.display(),
            e.message
        ))
    })?;
    std::fs::create_dir_all(out)
        .map_err(|e| ReportError::Write(format!("cannot create {}: {e}", out.display())))?;
    let data = RunData {
        dir: out.to_path_buf(),
        config: json!({
            "history": linkable(&judged.path, out),
            "format": judged.format.name(),
            "model": judged.checked_as,
        }),
        events: judged.events,
        ops,
        results: judged.results,
        replicas: judged.replicas,
        // A history alone tells nothing of the brokers' transitions.
        coverage: None,
        warnings: judged.warning.into_iter().collect(),
    };
    let html = page::render(&data);
    let xml = junit::render(&data)
        .map_err(|e| ReportError::Write(format!("cannot render junit.xml: {e}")))?;
    let written = Written {
        html: out.join("report.html"),
        junit: out.join("junit.xml"),
    };
    write_atomically(&written.html, html.as_bytes())?;
    write_atomically(&written.junit, xml.as_bytes())?;
    Ok(written)
}

/// The history's path as the report names it: its file name when it lies in the
/// report's folder (the page links it), else the path as given.
fn linkable(history: &Path, out: &Path) -> String {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    match (history.parent(), history.file_name()) {
        (Some(dir), Some(name))
            if same(
                if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                },
                out,
            ) =>
        {
            name.to_string_lossy().into_owned()
        }
        _ => history.display().to_string(),
    }
}

/// Whether `path` is a run folder (or a run folder's history.jsonl), reported from
/// its files as `watermark run` left them; the folder if so.
pub fn run_folder_of(path: &Path) -> Option<PathBuf> {
    let dir = if path.is_dir() {
        path.to_path_buf()
    } else if path.file_name().is_some_and(|n| n == "history.jsonl") {
        path.parent()?.to_path_buf()
    } else {
        return None;
    };
    (dir.join("run.json").is_file() && dir.join("history.jsonl").is_file()).then_some(dir)
}

/// Where the report of a history outside a run folder goes by default: the
/// folder given, or the one holding the history file.
pub fn default_out(history: &Path) -> PathBuf {
    if history.is_dir() {
        return history.to_path_buf();
    }
    match history.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
