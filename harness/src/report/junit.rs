//! `junit.xml`: the verdict in the format CI systems already display. One test
//! case per checker, and one per anomaly kind that checker looks for, so a CI page
//! says "queue / lost-write failed" rather than just "the run failed". An unknown
//! verdict is an error (the run could not be judged), not a pass.

use std::fmt::Write as _;

use checker::verdict::{AnomalyKind, CheckerResult, Validity};
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::folder::RunData;

/// Anomalies spelled out in a failure's body.
const MAX_DETAILED: usize = 50;

const QUEUE_KINDS: [AnomalyKind; 9] = [
    AnomalyKind::LostWrite,
    AnomalyKind::InconsistentOffsets,
    AnomalyKind::Duplicate,
    AnomalyKind::Unexpected,
    AnomalyKind::AbortedRead,
    AnomalyKind::PollSkip,
    AnomalyKind::NonmonotonicPoll,
    AnomalyKind::NonmonotonicSend,
    AnomalyKind::ReplicaDivergence,
];

/// The kinds a checker looks for (by its name), plus any kind it reported.
fn kinds_of(name: &str, c: &CheckerResult) -> Vec<AnomalyKind> {
    let mut kinds: Vec<AnomalyKind> = if name.contains("queue") {
        QUEUE_KINDS.to_vec()
    } else if name.contains("linear") || name.contains("register") {
        vec![AnomalyKind::Nonlinearizable]
    } else {
        Vec::new()
    };
    for k in c.counts().keys() {
        if !kinds.contains(k) {
            kinds.push(*k);
        }
    }
    kinds
}

/// Render the run's verdict as JUnit XML.
pub fn render(data: &RunData) -> Result<String, String> {
    let name = data.name();
    let mut report = Report::new("watermark");
    let mut suite = TestSuite::new(format!("watermark {name}"));
    for key in ["workload", "seed", "started_at"] {
        if let Some(v) = data.config_str(key) {
            suite.add_property(Property::new(key, v));
        }
    }
    for (checker, c) in &data.results.checkers {
        let classname = format!("watermark.{checker}");
        let status = match c.valid {
            Validity::Valid => TestCaseStatus::success(),
            Validity::Invalid => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                let counts: Vec<String> =
                    c.counts().iter().map(|(k, n)| format!("{n} {k}")).collect();
                s.set_message(format!("{checker}: INVALID — {}", counts.join(", ")));
                s.set_type("invalid");
                s.set_description(describe(c, None));
                s
            }
            Validity::Unknown => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                s.set_message(format!(
                    "{checker}: unknown — {}",
                    c.reason
                        .as_deref()
                        .unwrap_or("the checker could not decide")
                ));
                s.set_type("unknown");
                s
            }
        };
        let mut case = TestCase::new(format!("checker {checker}"), status);
        case.set_classname(&classname);
        // The checker's stats stay visible in CI output.
        let stats: Vec<String> = c.stats.iter().map(|(k, v)| format!("{k} {v}")).collect();
        if !stats.is_empty() {
            case.set_system_out(stats.join("\n"));
        }
        suite.add_test_case(case);
        add_kinds(&mut suite, checker, c, &classname);
    }
    report.add_test_suite(suite);
    report.to_string().map_err(|e| e.to_string())
}

fn add_kinds(suite: &mut TestSuite, checker: &str, c: &CheckerResult, classname: &str) {
    let counts = c.counts();
    for kind in kinds_of(checker, c) {
        let n = counts.get(&kind).copied().unwrap_or(0);
        let status = if n == 0 {
            if c.valid == Validity::Unknown {
                let mut s = TestCaseStatus::skipped();
                s.set_message(format!(
                    "not judged: {}",
                    c.reason.as_deref().unwrap_or("the verdict is unknown")
                ));
                s
            } else {
                TestCaseStatus::success()
            }
        } else {
            let first = c
                .anomalies
                .iter()
                .find(|a| a.kind == kind)
                .map(|a| a.message.as_str())
                .unwrap_or("");
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(format!("{n} {kind}: {first}"));
            s.set_type(kind.name());
            s.set_description(describe(c, Some(kind)));
            s
        };
        let mut case = TestCase::new(format!("{checker} {kind}"), status);
        case.set_classname(classname);
        suite.add_test_case(case);
    }
}

/// The anomalies (of one kind, or all) in words, with their operations.
fn describe(c: &CheckerResult, kind: Option<AnomalyKind>) -> String {
    let mut out = String::new();
    let chosen: Vec<_> = c
        .anomalies
        .iter()
        .filter(|a| kind.is_none_or(|k| a.kind == k))
        .collect();
    for a in chosen.iter().take(MAX_DETAILED) {
        let _ = write!(out, "{}", a.kind);
        if let Some(p) = a.partition {
            let _ = write!(out, " partition {p}");
        }
        if let Some(k) = &a.key {
            let _ = write!(out, " key {k}");
        }
        let _ = writeln!(out, ": {}", a.message);
        for op in a.ops.iter().take(8) {
            let _ = writeln!(out, "    {op}");
        }
        if let Some(e) = &a.explanation {
            let _ = writeln!(
                out,
                "    longest linearizable prefix: {} operations; state {}; cannot be linearized next: {}",
                e.prefix.len(),
                e.states.join(" or "),
                e.op
            );
        }
    }
    if chosen.len() > MAX_DETAILED {
        let _ = writeln!(
            out,
            "... {} more (see results.json)",
            chosen.len() - MAX_DETAILED
        );
    }
    out
}
