//! The replicas' final logs in a run folder (`nodes/<id>/final-log.jsonl`,
//! docs/run-folder.md): where each goes, and the one reader that `run`, `check` and
//! `report` share.

use std::fs;
use std::path::{Path, PathBuf};

use checker::queue::{ReplicaLog, parse_final_log};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
