//! The brokers' replication transitions as they report them: every broker process
//! prints one `EVENT {json}` line on stderr per transition (a leader elected, an ISR
//! shrunk, a log truncated, a request fenced, …; docs/faults.md#fault-coverage), and
//! stderr lands in its `broker.log`. This module parses those lines
//! ([`BrokerEvent::parse`]) and reads them out of the logs while the brokers write
//! them ([`EventTail`]), so the nemesis can see what its faults did.
//!
//! Parsing is lenient: a line that is not an `EVENT` line, or whose JSON lacks
//! `kind`, is skipped; fields a kind does not carry are absent (`None`), and fields
//! this harness does not know are ignored. A broker that prints no events at all
//! simply yields none.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// What starts an event line.
pub const EVENT_PREFIX: &str = "EVENT ";

/// One replication transition a broker reported.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct BrokerEvent {
    /// Unix milliseconds.
    #[serde(default)]
    pub ts_ms: u64,
    /// The id of the process that printed it (a broker's, or a dedicated
    /// controller's); -1 when the line names none.
    #[serde(default = "minus_one")]
    pub node: i32,
    /// `leader_elected`, `become_leader`, `become_follower`, `isr_shrink`,
    /// `isr_expand`, `truncate`, `fenced`, `not_enough_replicas`,
    /// `controller_epoch`, `log_reopened`, or one this harness does not know.
    pub kind: String,
    #[serde(default)]
    pub topic: Option<String>,
    #[serde(default)]
    pub partition: Option<u32>,
    #[serde(default)]
    pub leader: Option<i32>,
    #[serde(default)]
    pub leader_epoch: Option<i64>,
    /// `leader_elected`: elected from the ISR.
    #[serde(default)]
    pub clean: Option<bool>,
    /// `leader_elected`: the new leader came back less than a session timeout ago.
    #[serde(default)]
    pub recently_restarted: Option<bool>,
    #[serde(default)]
    pub previous_leader: Option<i32>,
    /// `isr_shrink` / `isr_expand`: `controller`, `lag` or `caught_up`.
    #[serde(default)]
    pub cause: Option<String>,
    /// `truncate`: `epoch` or `hw`.
    #[serde(default)]
    pub rule: Option<String>,
    /// `truncate`: how many records were removed.
    #[serde(default)]
    pub records: Option<u64>,
    /// `fenced`: the request refused (`produce`, `fetch`, …).
    #[serde(default)]
    pub api: Option<String>,
    /// `fenced`: why (`stale_leader_epoch`, `stale_controller_epoch`, `not_leader`, …).
    #[serde(default)]
    pub reason: Option<String>,
    /// `reassignment`: `started`, `completed` or `cancelled`.
    #[serde(default)]
    pub step: Option<String>,
}

fn minus_one() -> i32 {
    -1
}

impl BrokerEvent {
    /// The event of one log line, if it is an `EVENT` line with a JSON object
    /// naming its `kind`.
    pub fn parse(line: &str) -> Option<BrokerEvent> {
        let json = line.trim_end().strip_prefix(EVENT_PREFIX)?;
        serde_json::from_str(json).ok()
    }
}

/// Every event in `text`, in order; other lines skipped.
pub fn parse_all(text: &str) -> Vec<BrokerEvent> {
    text.lines().filter_map(BrokerEvent::parse).collect()
}

/// Every event in the `broker.log` files under a cluster root (`<root>/*/broker.log`),
/// each file in order, the files in name order. Missing or unreadable logs yield
/// nothing.
pub fn read_all(root: &Path) -> Vec<BrokerEvent> {
    let mut tail = EventTail::new(root);
    tail.poll()
}

/// Reads the events the brokers appended to their logs since the last call: it
/// remembers how far it read each `<root>/<process>/broker.log`, and keeps an
/// unfinished last line for the next call.
#[derive(Debug)]
pub struct EventTail {
    root: PathBuf,
    read: BTreeMap<PathBuf, (u64, Vec<u8>)>,
}

impl EventTail {
    pub fn new(root: &Path) -> EventTail {
        EventTail {
            root: root.to_path_buf(),
            read: BTreeMap::new(),
        }
    }

    /// The events appended since the last call, log by log.
    pub fn poll(&mut self) -> Vec<BrokerEvent> {
        let mut logs: Vec<PathBuf> = std::fs::read_dir(&self.root)
            .map(|dir| {
                dir.filter_map(|e| e.ok())
                    .map(|e| e.path().join("broker.log"))
                    .filter(|p| p.is_file())
                    .collect()
            })
            .unwrap_or_default();
        logs.sort();
        let mut out = Vec::new();
        for log in logs {
            let (offset, partial) = self.read.entry(log.clone()).or_default();
            let Ok(mut file) = File::open(&log) else {
                continue;
            };
            if file.seek(SeekFrom::Start(*offset)).is_err() {
                continue;
            }
            let mut bytes = Vec::new();
            let Ok(n) = file.read_to_end(&mut bytes) else {
                continue;
            };
            *offset += n as u64;
            partial.extend_from_slice(&bytes);
            // Only whole lines: the rest waits for its newline.
            let Some(end) = partial.iter().rposition(|&b| b == b'\n') else {
                continue;
            };
            let whole: Vec<u8> = partial.drain(..=end).collect();
            out.extend(parse_all(&String::from_utf8_lossy(&whole)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const ELECTED: &str = r#"EVENT {"ts_ms":1764561234567,"node":-1,"kind":"leader_elected","topic":"queue","partition":0,"leader":2,"leader_epoch":4,"clean":true,"recently_restarted":false,"previous_leader":1}"#;
    const TRUNCATE: &str = r#"EVENT {"ts_ms":1764561234567,"node":2,"kind":"truncate","topic":"t","partition":0,"to":118,"records":3,"rule":"epoch"}"#;

    #[test]
    fn event_lines_parse_with_their_fields() {
        let e = BrokerEvent::parse(ELECTED).unwrap();
        assert_eq!((e.node, e.kind.as_str()), (-1, "leader_elected"));
        assert_eq!((e.leader, e.leader_epoch), (Some(2), Some(4)));
        assert_eq!((e.clean, e.recently_restarted), (Some(true), Some(false)));
        assert_eq!(e.previous_leader, Some(1));
        let t = BrokerEvent::parse(TRUNCATE).unwrap();
        assert_eq!((t.records, t.rule.as_deref()), (Some(3), Some("epoch")));
        assert_eq!(t.topic.as_deref(), Some("t"));
        let null_prev = ELECTED.replace(r#""previous_leader":1"#, r#""previous_leader":null"#);
        assert_eq!(
            BrokerEvent::parse(&null_prev).unwrap().previous_leader,
            None
        );
    }

    #[test]
    fn other_lines_and_broken_events_are_skipped() {
        for line in [
            "node 1: queue-0: became leader",
            "EVENT not json",
            r#"EVENT {"ts_ms":1,"node":1}"#,
            r#"EVENTS {"kind":"truncate"}"#,
            r#"  EVENT {"kind":"truncate"}"#,
            "",
        ] {
            assert_eq!(BrokerEvent::parse(line), None, "{line:?}");
        }
        let future = r#"EVENT {"kind":"something_new","extra":[1,2]}"#;
        let e = BrokerEvent::parse(future).unwrap();
        assert_eq!((e.kind.as_str(), e.node, e.ts_ms), ("something_new", -1, 0));
        let text = format!("hello\n{ELECTED}\nworld\n{TRUNCATE}\n");
        assert_eq!(parse_all(&text).len(), 2);
    }

    #[test]
    fn a_tail_reads_whole_new_lines_of_every_log_once() {
        let dir = tempfile::tempdir().unwrap();
        for p in ["1", "controller"] {
            std::fs::create_dir_all(dir.path().join(p)).unwrap();
        }
        let mut tail = EventTail::new(dir.path());
        assert!(tail.poll().is_empty());
        let open = |p: &str| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.path().join(p).join("broker.log"))
                .unwrap()
        };
        let mut node = open("1");
        let mut controller = open("controller");
        writeln!(controller, "listening on 127.0.0.1:1\n{ELECTED}").unwrap();
        // Half a line: not read until its newline arrives.
        write!(node, "{}", &TRUNCATE[..30]).unwrap();
        let first = tail.poll();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].kind, "leader_elected");
        writeln!(node, "{}", &TRUNCATE[30..]).unwrap();
        let second = tail.poll();
        assert_eq!(second.len(), 1);
        assert_eq!(second[0].kind, "truncate");
        assert!(tail.poll().is_empty());
        assert_eq!(read_all(dir.path()).len(), 2);
    }
}
