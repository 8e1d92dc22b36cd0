//! Verdicts: what `results.json` holds and what the terminal shows.
//!
//! Every checker returns a [`CheckerResult`]; a run's [`Results`] gathers them under
//! their names and folds their validity (any invalid → invalid, else any unknown →
//! unknown). Each [`Anomaly`] is self-contained — kind, partition or key, offsets,
//! values, and the operations involved with their history indices — so a report
//! can explain it without re-running the checker. The JSON shape is documented in
//! docs/checker.md.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::history::Paired;

/// `true`, `false` or `"unknown"` in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Validity {
    Valid,
    Invalid,
    /// The checker gave up within its budget, or could not decide.
    Unknown,
}

impl Validity {
    /// Fold two verdicts: invalid wins over unknown, unknown over valid.
    pub fn and(self, other: Validity) -> Validity {
        use Validity::*;
        match (self, other) {
            (Invalid, _) | (_, Invalid) => Invalid,
            (Unknown, _) | (_, Unknown) => Unknown,
            _ => Valid,
        }
    }
}

impl fmt::Display for Validity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Validity::Valid => "valid",
            Validity::Invalid => "INVALID",
            Validity::Unknown => "unknown",
        })
    }
}

impl Serialize for Validity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Validity::Valid => s.serialize_bool(true),
            Validity::Invalid => s.serialize_bool(false),
            Validity::Unknown => s.serialize_str("unknown"),
        }
    }
}

impl<'de> Deserialize<'de> for Validity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Bool(true) => Ok(Validity::Valid),
            Value::Bool(false) => Ok(Validity::Invalid),
            Value::String(s) if s == "unknown" => Ok(Validity::Unknown),
            other => Err(serde::de::Error::custom(format!(
                "expected true, false or \"unknown\", found {other}"
            ))),
        }
    }
}

/// The kinds of anomaly, defined in docs/anomalies.md (the queue kinds carry the
/// names of Jepsen's Kafka checker, and the Maelstrom workloads' checkers reuse
/// them where the meaning is the same; `crash` is the harness's own: a process of
/// the system under test died on its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnomalyKind {
    LostWrite,
    InconsistentOffsets,
    Duplicate,
    RefusedDuplicate,
    OutOfSequence,
    Unexpected,
    AbortedRead,
    UncommittedRead,
    PollSkip,
    NonmonotonicPoll,
    NonmonotonicSend,
    NonmonotonicCommit,
    ReplicaDivergence,
    Nonlinearizable,
    DuplicateId,
    EchoMismatch,
    CounterOutOfRange,
    Crash,
    ProtocolError,
    Unavailable,
    ContractViolation,
}

impl AnomalyKind {
    /// What the kind means, in one sentence (docs/anomalies.md defines each).
    pub fn meaning(self) -> &'static str {
        match self {
            AnomalyKind::LostWrite => {
                "An acknowledged send (or one whose value a poll saw) is missing from the final log: committed data was lost."
            }
            AnomalyKind::InconsistentOffsets => {
                "One offset of a partition was seen holding two different values: replicas or consumers disagree on the log."
            }
            AnomalyKind::Duplicate => "One sent value sits at two offsets of the log.",
            AnomalyKind::RefusedDuplicate => {
                "An idempotent producer's retry was refused as out of sequence although the record it retried is in the log: the broker did not recognise a duplicate, and the producer gave up on a written record."
            }
            AnomalyKind::OutOfSequence => {
                "An idempotent producer's batch was refused as out of sequence by a leader whose epoch was no older than those that acknowledged every batch the producer sent that partition before: the leader lost track of the producer's sequence."
            }
            AnomalyKind::Unexpected => "A poll returned a value that no client ever sent.",
            AnomalyKind::AbortedRead => {
                "A poll saw the value of a send that was told it failed: a failed write became visible."
            }
            AnomalyKind::UncommittedRead => {
                "A poll returned a record at or above the high watermark its own answer gave: the broker served a record not yet committed."
            }
            AnomalyKind::PollSkip => {
                "A poll skipped offsets that the final log holds: a consumer would silently miss records."
            }
            AnomalyKind::NonmonotonicPoll => {
                "A poll returned a record below the offset asked for, or records out of order."
            }
            AnomalyKind::NonmonotonicSend => {
                "A client's later acknowledged send got a lower offset than its earlier one."
            }
            AnomalyKind::ReplicaDivergence => {
                "Replicas' final logs differ below the high watermark: the committed log diverged."
            }
            AnomalyKind::Nonlinearizable => {
                "No order of the operations consistent with real time explains what clients observed."
            }
            AnomalyKind::Crash => {
                "A process of the system under test (a broker, or a node of your own) died on its own — a panic, an abort, an exit — without the nemesis stopping it: the system under test crashed."
            }
            AnomalyKind::NonmonotonicCommit => {
                "A committed offset was listed lower than one acknowledged before: consumers would re-read or lose their place."
            }
            AnomalyKind::DuplicateId => {
                "One id was generated for two requests: ids are not unique."
            }
            AnomalyKind::EchoMismatch => "An echo came back different from what was sent.",
            AnomalyKind::CounterOutOfRange => {
                "A counter read a value that no set of the adds could sum to."
            }
            AnomalyKind::Unavailable => {
                "A partition took no write for a stretch in which the faults in force left it a leader and enough in-sync replicas, while clients kept sending to it: the system under test stalled where it should have served."
            }
            AnomalyKind::ContractViolation => {
                "The broker answered as its API's contract does not allow: a request within the documented limits refused as invalid, one over them (or a compare-and-set the contract refuses) answered ok, or a read refused as past the high watermark at an offset the refusal itself puts at or below it."
            }
            AnomalyKind::ProtocolError => {
                "A node wrote what Maelstrom's protocol does not allow — a line that is no message, a message from another id, to an unknown destination, or in reply to no request: the system under test broke the protocol."
            }
        }
    }

    /// Every kind, in the order results list them.
    pub const ALL: [AnomalyKind; 21] = [
        AnomalyKind::LostWrite,
        AnomalyKind::InconsistentOffsets,
        AnomalyKind::Duplicate,
        AnomalyKind::RefusedDuplicate,
        AnomalyKind::OutOfSequence,
        AnomalyKind::Unexpected,
        AnomalyKind::AbortedRead,
        AnomalyKind::UncommittedRead,
        AnomalyKind::PollSkip,
        AnomalyKind::NonmonotonicPoll,
        AnomalyKind::NonmonotonicSend,
        AnomalyKind::NonmonotonicCommit,
        AnomalyKind::ReplicaDivergence,
        AnomalyKind::Nonlinearizable,
        AnomalyKind::DuplicateId,
        AnomalyKind::EchoMismatch,
        AnomalyKind::CounterOutOfRange,
        AnomalyKind::Crash,
        AnomalyKind::ProtocolError,
        AnomalyKind::Unavailable,
        AnomalyKind::ContractViolation,
    ];

    /// The name in results.json (docs/anomalies.md).
    pub fn name(self) -> &'static str {
        match self {
            AnomalyKind::LostWrite => "lost-write",
            AnomalyKind::InconsistentOffsets => "inconsistent-offsets",
            AnomalyKind::Duplicate => "duplicate",
            AnomalyKind::RefusedDuplicate => "refused-duplicate",
            AnomalyKind::OutOfSequence => "out-of-sequence",
            AnomalyKind::Unexpected => "unexpected",
            AnomalyKind::AbortedRead => "aborted-read",
            AnomalyKind::UncommittedRead => "uncommitted-read",
            AnomalyKind::PollSkip => "poll-skip",
            AnomalyKind::NonmonotonicPoll => "nonmonotonic-poll",
            AnomalyKind::NonmonotonicSend => "nonmonotonic-send",
            AnomalyKind::NonmonotonicCommit => "nonmonotonic-commit",
            AnomalyKind::ReplicaDivergence => "replica-divergence",
            AnomalyKind::Nonlinearizable => "nonlinearizable",
            AnomalyKind::DuplicateId => "duplicate-id",
            AnomalyKind::EchoMismatch => "echo-mismatch",
            AnomalyKind::CounterOutOfRange => "counter-out-of-range",
            AnomalyKind::Crash => "crash",
            AnomalyKind::ProtocolError => "protocol-error",
            AnomalyKind::Unavailable => "unavailable",
            AnomalyKind::ContractViolation => "contract-violation",
        }
    }
}

impl fmt::Display for AnomalyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An operation an anomaly involves, by its history indices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpRef {
    /// History index of the invocation.
    pub invoke: u64,
    /// History index of the completion (`null`: it never completed).
    pub complete: Option<u64>,
    pub process: u64,
    pub f: String,
    /// The operation in words, e.g. `send 17 to partition 0 → ok at offset 4`.
    pub text: String,
}

impl OpRef {
    /// From a borrowed pair of events.
    pub(crate) fn of(op: &Paired, text: impl Into<String>) -> OpRef {
        OpRef {
            invoke: op.invoke.index,
            complete: op.completion.map(|c| c.index),
            process: op.process(),
            f: op.invoke.f.clone(),
            text: text.into(),
        }
    }
}

impl fmt::Display for OpRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.complete {
            Some(c) => write!(
                f,
                "[{}..{}] process {}: {}",
                self.invoke, c, self.process, self.text
            ),
            None => write!(
                f,
                "[{}..] process {}: {}",
                self.invoke, self.process, self.text
            ),
        }
    }
}

/// Why a history is not linearizable: how far the search got, and what it could
/// not place next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Explanation {
    /// The operation that cannot be linearized after the longest prefix.
    pub op: OpRef,
    /// The longest linearizable prefix found, in linearization order.
    pub prefix: Vec<OpRef>,
    /// Model state(s) reached after such a prefix (several prefixes of that length
    /// may end in different states; at most a few are kept).
    pub states: Vec<String>,
    /// Operations that were pending (could have been linearized next) at that point.
    pub pending: Vec<OpRef>,
}

/// One problem a checker found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Anomaly {
    pub kind: AnomalyKind,
    /// The partition (queue anomalies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<i64>,
    /// The key (register anomalies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<Value>,
    /// Offsets involved, ascending.
    #[serde(default)]
    pub offsets: Vec<i64>,
    /// Values involved.
    #[serde(default)]
    pub values: Vec<Value>,
    /// The operations involved, with their history indices.
    #[serde(default)]
    pub ops: Vec<OpRef>,
    /// One sentence for a human.
    pub message: String,
    /// For `nonlinearizable`: the search's account of why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
    /// For `crash`: the process that died (a node id, or `"controller"`); for the
    /// Maelstrom workloads' anomalies: the node whose answer it is (`"n2"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Value>,
    /// For `crash`: what the process's log says about its end (its panic or abort
    /// message), quoted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

impl Anomaly {
    pub fn new(kind: AnomalyKind, message: impl Into<String>) -> Anomaly {
        Anomaly {
            kind,
            partition: None,
            key: None,
            offsets: Vec::new(),
            values: Vec::new(),
            ops: Vec::new(),
            message: message.into(),
            explanation: None,
            node: None,
            log: None,
        }
    }
}

/// What one checker concluded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckerResult {
    pub valid: Validity,
    /// Why the verdict is unknown (budget exhausted, history incomplete, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default)]
    pub anomalies: Vec<Anomaly>,
    /// Counts worth showing (ops checked, keys, cache entries, ...).
    #[serde(default)]
    pub stats: BTreeMap<String, u64>,
    /// What a reader should know about how the history was judged (pending
    /// invocations checked as indeterminate, ...); they do not change the verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl CheckerResult {
    /// A result whose validity follows from its anomalies: none → valid.
    pub fn from_anomalies(anomalies: Vec<Anomaly>) -> CheckerResult {
        CheckerResult {
            valid: if anomalies.is_empty() {
                Validity::Valid
            } else {
                Validity::Invalid
            },
            reason: None,
            anomalies,
            stats: BTreeMap::new(),
            notes: Vec::new(),
        }
    }

    /// No verdict could be reached, for `reason`.
    pub fn unknown(reason: impl Into<String>) -> CheckerResult {
        CheckerResult {
            valid: Validity::Unknown,
            reason: Some(reason.into()),
            anomalies: Vec::new(),
            stats: BTreeMap::new(),
            notes: Vec::new(),
        }
    }

    /// A clean verdict becomes unknown, for `reason`; anomalies found stand.
    pub fn cap_unknown(&mut self, reason: impl Into<String>) {
        if self.valid == Validity::Valid {
            self.valid = Validity::Unknown;
            self.reason = Some(reason.into());
        }
    }

    /// Add anomalies another judgement found (the replicas' final logs beside a
    /// history's operations): any makes the verdict invalid.
    pub fn add_anomalies(&mut self, found: Vec<Anomaly>) {
        if !found.is_empty() {
            self.valid = Validity::Invalid;
        }
        self.anomalies.extend(found);
    }

    /// Anomaly counts by kind.
    pub fn counts(&self) -> BTreeMap<AnomalyKind, usize> {
        let mut m = BTreeMap::new();
        for a in &self.anomalies {
            *m.entry(a.kind).or_insert(0) += 1;
        }
        m
    }
}

/// The whole verdict of a run: `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub valid: Validity,
    /// By checker name (`linearizable`, `queue`, ...).
    pub checkers: BTreeMap<String, CheckerResult>,
}

impl Results {
    /// Gather checkers' results, folding their validity.
    pub fn new(checkers: BTreeMap<String, CheckerResult>) -> Results {
        let valid = checkers
            .values()
            .fold(Validity::Valid, |v, c| v.and(c.valid));
        Results { valid, checkers }
    }

    /// Add (or replace) one checker's result, folding the validity again.
    pub fn insert(&mut self, name: &str, result: CheckerResult) {
        self.checkers.insert(name.to_string(), result);
        self.valid = self
            .checkers
            .values()
            .fold(Validity::Valid, |v, c| v.and(c.valid));
    }

    /// The verdict for a terminal: one line per checker, then each anomaly (the
    /// first ten of each kind) with its operations and, for non-linearizable
    /// histories, the search's explanation.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "verdict: {}", self.valid);
        for (name, c) in &self.checkers {
            let _ = write!(out, "\n{name}: {}", c.valid);
            if let Some(r) = &c.reason {
                let _ = write!(out, " ({r})");
            }
            let counts = c.counts();
            if !counts.is_empty() {
                let list: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
                let _ = write!(out, " — {}", list.join(", "));
            }
            out.push('\n');
            for note in &c.notes {
                let _ = writeln!(out, "  note: {note}");
            }
            let mut shown: BTreeMap<AnomalyKind, usize> = BTreeMap::new();
            for a in &c.anomalies {
                let n = shown.entry(a.kind).or_insert(0);
                *n += 1;
                if *n <= SHOWN_PER_KIND {
                    render_anomaly(&mut out, a);
                }
            }
            for (kind, n) in shown.iter().filter(|(_, n)| **n > SHOWN_PER_KIND) {
                let _ = writeln!(
                    out,
                    "  ... {} more {kind} (all of them are in results.json, --json)",
                    n - SHOWN_PER_KIND
                );
            }
        }
        out
    }
}

const SHOWN_OPS: usize = 8;
const SHOWN_PER_KIND: usize = 10;
const SHOWN_PREFIX: usize = 10;
const SHOWN_LOG_LINES: usize = 12;

fn render_anomaly(out: &mut String, a: &Anomaly) {
    let _ = write!(out, "  {}", a.kind);
    if let Some(p) = a.partition {
        let _ = write!(out, " partition {p}");
    }
    if let Some(k) = &a.key {
        let _ = write!(out, " key {k}");
    }
    let _ = writeln!(out, ": {}", a.message);
    if let Some(log) = &a.log {
        for line in log.lines().take(SHOWN_LOG_LINES) {
            let _ = writeln!(out, "      | {line}");
        }
    }
    for op in a.ops.iter().take(SHOWN_OPS) {
        let _ = writeln!(out, "      {op}");
    }
    if a.ops.len() > SHOWN_OPS {
        let _ = writeln!(out, "      ... {} more operations", a.ops.len() - SHOWN_OPS);
    }
    if let Some(e) = &a.explanation {
        let _ = writeln!(
            out,
            "    longest linearizable prefix: {} operations{}",
            e.prefix.len(),
            if e.prefix.len() > SHOWN_PREFIX {
                ", the last ones:"
            } else {
                ":"
            }
        );
        for op in &e.prefix[e.prefix.len().saturating_sub(SHOWN_PREFIX)..] {
            let _ = writeln!(out, "      {op}");
        }
        if let Some((first, others)) = e.states.split_first() {
            let _ = write!(out, "    model state after it: {first}");
            if !others.is_empty() {
                let _ = write!(
                    out,
                    " (other prefixes of that length end in: {})",
                    others.join(", ")
                );
            }
            out.push('\n');
        }
        let _ = writeln!(out, "    cannot be linearized next: {}", e.op);
        if !e.pending.is_empty() {
            let _ = writeln!(out, "    pending at that point (none fits the state):");
            for op in e.pending.iter().take(SHOWN_OPS) {
                let _ = writeln!(out, "      {op}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validity_is_true_false_or_unknown() {
        assert_eq!(serde_json::to_string(&Validity::Valid).unwrap(), "true");
        assert_eq!(serde_json::to_string(&Validity::Invalid).unwrap(), "false");
        assert_eq!(
            serde_json::to_string(&Validity::Unknown).unwrap(),
            "\"unknown\""
        );
        for v in [Validity::Valid, Validity::Invalid, Validity::Unknown] {
            let s = serde_json::to_string(&v).unwrap();
            assert_eq!(serde_json::from_str::<Validity>(&s).unwrap(), v);
        }
        assert!(serde_json::from_str::<Validity>("\"maybe\"").is_err());
        assert_eq!(Validity::Valid.and(Validity::Unknown), Validity::Unknown);
        assert_eq!(Validity::Unknown.and(Validity::Invalid), Validity::Invalid);
    }

    #[test]
    fn results_fold_and_round_trip() {
        let mut a = Anomaly::new(AnomalyKind::LostWrite, "acknowledged send of 7 is missing");
        a.partition = Some(1);
        a.offsets = vec![4];
        a.values = vec![json!(7)];
        a.ops = vec![OpRef {
            invoke: 3,
            complete: Some(5),
            process: 2,
            f: "send".into(),
            text: "send 7 → ok at offset 4".into(),
        }];
        let mut checkers = BTreeMap::new();
        checkers.insert("queue".to_string(), CheckerResult::from_anomalies(vec![a]));
        checkers.insert(
            "linearizable".to_string(),
            CheckerResult::from_anomalies(vec![]),
        );
        let r = Results::new(checkers);
        assert_eq!(r.valid, Validity::Invalid);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["valid"], json!(false));
        assert_eq!(
            json["checkers"]["queue"]["anomalies"][0]["kind"],
            json!("lost-write")
        );
        assert_eq!(
            json["checkers"]["queue"]["anomalies"][0]["ops"][0]["invoke"],
            json!(3)
        );
        let back: Results = serde_json::from_value(json).unwrap();
        assert_eq!(back, r);
        let text = r.render_text();
        assert!(text.contains("verdict: INVALID"), "{text}");
        assert!(text.contains("1 lost-write"), "{text}");
        assert!(text.contains("[3..5] process 2: send 7"), "{text}");
    }

    #[test]
    fn every_kind_is_defined_in_the_docs() {
        let doc = include_str!("../../docs/anomalies.md");
        for kind in AnomalyKind::ALL {
            let heading = doc
                .lines()
                .any(|l| l.trim_start_matches('#').trim() == kind.name() && l.starts_with("##"));
            assert!(heading, "docs/anomalies.md has no section for {kind}");
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, json!(kind.name()));
        }
    }

    #[test]
    fn only_a_clean_verdict_is_capped_at_unknown() {
        let mut clean = CheckerResult::from_anomalies(Vec::new());
        clean.cap_unknown("incomplete");
        assert_eq!(clean.valid, Validity::Unknown);
        assert_eq!(clean.reason.as_deref(), Some("incomplete"));
        clean.cap_unknown("again");
        assert_eq!(
            clean.reason.as_deref(),
            Some("incomplete"),
            "the first reason stays"
        );
        let mut bad =
            CheckerResult::from_anomalies(vec![Anomaly::new(AnomalyKind::LostWrite, "gone")]);
        bad.cap_unknown("incomplete");
        assert_eq!((bad.valid, bad.reason), (Validity::Invalid, None));
        let u = CheckerResult::unknown("cannot parse");
        assert_eq!((u.valid, u.anomalies.len()), (Validity::Unknown, 0));
    }
}
