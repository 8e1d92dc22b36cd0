//! The record of every message the router carried: `messages.jsonl` in the run
//! folder, one line per message once its fate is known (docs/run-folder.md), and
//! the statistics the results and the report show — messages in all, per link,
//! per type, dropped and why (and when), delayed. Times are nanoseconds since the run began,
//! on the history's clock, so a message can be set beside the operations it served.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::{HarnessError, Result};
use maelstrom::message::Message;

/// Counts for one link (or one type of message).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub sent: u64,
    pub delivered: u64,
    pub dropped: u64,
    /// Delivered late: a degraded link held them.
    pub delayed: u64,
}

impl Counts {
    fn add(&mut self, delivered: bool, delayed: bool) {
        self.sent += 1;
        if delivered {
            self.delivered += 1;
        } else {
            self.dropped += 1;
        }
        if delayed {
            self.delayed += 1;
        }
    }
}

/// The message statistics of a run (`network` in results.json).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MessageStats {
    pub total: Counts,
    /// Dropped messages by why (`partition`, `lost`, `node down`, …).
    pub dropped_by: BTreeMap<String, u64>,
    /// By link, `src -> dest`, clients and services included.
    pub links: BTreeMap<String, Counts>,
    /// By the body's `type`.
    pub types: BTreeMap<String, Counts>,
    /// Messages between nodes (not with clients or services): what the system's own
    /// protocol cost.
    pub between_nodes: u64,
    /// Client operations completed, and messages per operation.
    pub operations: u64,
    pub messages_per_operation: f64,
    /// Node starts after the first: restarts after a kill or a crash.
    pub restarts: u64,
    /// Lines a node wrote that are no message of the protocol, or that the router
    /// could not deliver: `protocol-error` events in the history.
    pub protocol_errors: u64,
}

/// `messages.jsonl`, and the counts.
pub struct MessageLog {
    out: Option<BufWriter<File>>,
    origin: Instant,
    next_id: u64,
    stats: MessageStats,
    /// The first write error.
    failed: Option<String>,
}

/// One message's fate, for its line.
pub struct Carried<'a> {
    pub message: &'a Message,
    pub sent: Instant,
    /// When delivered (None: dropped).
    pub delivered: Option<Instant>,
    /// Why dropped.
    pub dropped: Option<&'a str>,
    pub between_nodes: bool,
}

impl MessageLog {
    /// `path`: where to write (None: count only).
    pub fn create(path: Option<&Path>, origin: Instant) -> Result<MessageLog> {
        let out = match path {
            Some(p) => Some(BufWriter::new(File::create(p).map_err(|e| {
                HarnessError::new(format!("cannot create {}: {e}", p.display()))
            })?)),
            None => None,
        };
        Ok(MessageLog {
            out,
            origin,
            next_id: 0,
            stats: MessageStats::default(),
            failed: None,
        })
    }

    fn nanos(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.origin).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Record one message's fate.
    pub fn record(&mut self, c: Carried<'_>) {
        let id = self.next_id;
        self.next_id += 1;
        let delivered = c.delivered.is_some();
        let delayed = c
            .delivered
            .is_some_and(|d| d.saturating_duration_since(c.sent).as_millis() >= 1);
        let s = &mut self.stats;
        s.total.add(delivered, delayed);
        let link = format!("{} -> {}", c.message.src, c.message.dest);
        s.links.entry(link).or_default().add(delivered, delayed);
        s.types
            .entry(c.message.body.kind.clone())
            .or_default()
            .add(delivered, delayed);
        if let Some(why) = c.dropped {
            *s.dropped_by.entry(why.to_string()).or_default() += 1;
        }
        if c.between_nodes {
            s.between_nodes += 1;
        }
        let line = json!({
            "id": id,
            "src": c.message.src,
            "dest": c.message.dest,
            "body": c.message.body.to_value(),
            "sent": self.nanos(c.sent),
            "delivered": c.delivered.map(|d| self.nanos(d)),
            "dropped": c.dropped,
            "dropped_at": c.dropped.map(|_| self.nanos(Instant::now())),
        });
        self.write(&line);
    }

    fn write(&mut self, line: &Value) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        if self.failed.is_some() {
            return;
        }
        if let Err(e) = writeln!(out, "{line}") {
            self.failed = Some(format!("cannot write messages.jsonl: {e}"));
        }
    }

    pub fn restarted(&mut self) {
        self.stats.restarts += 1;
    }

    pub fn protocol_error(&mut self) {
        self.stats.protocol_errors += 1;
    }

    /// The counts so far, with messages per operation for `operations` completed.
    pub fn stats(&self, operations: u64) -> MessageStats {
        let mut s = self.stats.clone();
        s.operations = operations;
        s.messages_per_operation = if operations == 0 {
            0.0
        } else {
            (s.total.sent as f64 / operations as f64 * 100.0).round() / 100.0
        };
        s
    }

    /// Flush the file; the first write error, if any.
    pub fn flush(&mut self) -> Option<String> {
        if let Some(out) = self.out.as_mut()
            && let Err(e) = out.flush()
        {
            self.failed
                .get_or_insert(format!("cannot write messages.jsonl: {e}"));
        }
        self.failed.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use maelstrom::message::Body;
    use std::time::Duration;

    #[test]
    fn every_message_is_one_line_and_counted_by_link_type_and_fate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("messages.jsonl");
        let origin = Instant::now();
        let mut log = MessageLog::create(Some(&path), origin).unwrap();
        let m = Message::new("n1", "n2", Body::new("gossip"));
        let sent = origin + Duration::from_millis(5);
        log.record(Carried {
            message: &m,
            sent,
            delivered: Some(sent + Duration::from_millis(20)),
            dropped: None,
            between_nodes: true,
        });
        log.record(Carried {
            message: &m,
            sent,
            delivered: None,
            dropped: Some("partition"),
            between_nodes: true,
        });
        assert!(log.flush().is_none());
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["sent"], 5_000_000);
        assert_eq!(lines[0]["delivered"], 25_000_000);
        assert_eq!(lines[1]["dropped"], "partition");
        assert!(lines[1]["dropped_at"].as_u64().unwrap() > 0);
        assert!(lines[0]["dropped_at"].is_null());
        assert_eq!(lines[1]["body"]["type"], "gossip");
        let s = log.stats(4);
        assert_eq!(
            s.links["n1 -> n2"],
            Counts {
                sent: 2,
                delivered: 1,
                dropped: 1,
                delayed: 1
            }
        );
        assert_eq!(s.dropped_by["partition"], 1);
        assert_eq!((s.between_nodes, s.messages_per_operation), (2, 0.5));
    }
}
