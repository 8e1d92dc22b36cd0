//! The replicas' final logs: what each node held of each partition once the
//! cluster had healed and converged, dumped by the harness to
//! `nodes/<id>/final-log.jsonl` (docs/run-folder.md). The queue analysis judges
//! replica divergence by them, and lost writes by them when the history's final
//! drain is missing or partial.

use serde::Deserialize;
use serde_json::Value;

/// One replica's log of one partition, as dumped at the end of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaLog {
    /// The node holding the replica.
    pub node: String,
    pub topic: String,
    pub partition: i64,
    pub log_end_offset: i64,
    pub high_watermark: i64,
    /// (offset, value), as stored.
    pub records: Vec<(i64, Value)>,
}

impl ReplicaLog {
    /// `node`'s replica of `topic`-`partition` holding `values` from offset 0, its
    /// high watermark `high_watermark` (its log end: one past the last record).
    pub fn from_values(
        node: &str,
        topic: &str,
        partition: i64,
        high_watermark: i64,
        values: impl IntoIterator<Item = Value>,
    ) -> ReplicaLog {
        let records: Vec<(i64, Value)> = values
            .into_iter()
            .enumerate()
            .map(|(o, v)| (o as i64, v))
            .collect();
        ReplicaLog {
            node: node.to_string(),
            topic: topic.to_string(),
            partition,
            log_end_offset: records.len() as i64,
            high_watermark,
            records,
        }
    }
}

#[derive(Deserialize)]
struct LogLine {
    topic: String,
    partition: i64,
    log_end_offset: i64,
    high_watermark: i64,
    records: Vec<LogRecord>,
}

#[derive(Deserialize)]
struct LogRecord {
    offset: i64,
    #[serde(default)]
    value: Value,
}

/// A final log that cannot be read: which line, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogError {
    pub node: String,
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for LogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "final log of node {}, line {}: {}",
            self.node, self.line, self.message
        )
    }
}

impl std::error::Error for LogError {}

/// Parse the text of `nodes/<node>/final-log.jsonl`: one line per partition held.
pub fn parse_final_log(node: &str, text: &str) -> Result<Vec<ReplicaLog>, LogError> {
    let mut logs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        // Read exactly (integers of any size), then into the line's fields.
        let exact = crate::format::read_json(line);
        let l: LogLine = exact
            .and_then(|v| serde_json::from_value(v).map_err(|e| e.to_string()))
            .map_err(|e| LogError {
            node: node.to_string(),
            line: i + 1,
            message: format!(
                "expected {{\"topic\",\"partition\",\"log_end_offset\",\"high_watermark\",\"records\":[{{\"offset\",\"value\"}}]}}: {e}"
            ),
        })?;
        logs.push(ReplicaLog {
            node: node.to_string(),
            topic: l.topic,
            partition: l.partition,
            log_end_offset: l.log_end_offset,
            high_watermark: l.high_watermark,
            records: l.records.into_iter().map(|r| (r.offset, r.value)).collect(),
        });
    }
    Ok(logs)
}
