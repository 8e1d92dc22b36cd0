//! `junit.xml`: the verdict in the format CI systems already display. One test
//! case per checker, and one per anomaly kind that checker looks for, so a CI page
//! says "queue / lost-write failed" rather than just "the run failed". An unknown
//! verdict is an error (the run could not be judged), not a pass; so is a run that
//! ended without a verdict — the harness failed, or it was interrupted — which is
//! one errored test case saying why, so CI shows a red test rather than no results.

use std::fmt::Write as _;

use checker::verdict::{AnomalyKind, CheckerResult, Results, Validity};
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use serde_json::Value;

use super::folder::RunData;

/// Anomalies spelled out in a failure's body.
const MAX_DETAILED: usize = 50;

/// The kinds a checker looks for (by its name), plus any kind it reported.
fn kinds_of(name: &str, c: &CheckerResult) -> Vec<AnomalyKind> {
    let mut kinds: Vec<AnomalyKind> = if name.contains("queue") {
        checker::queue::kinds()
    } else if name.contains("linear") || name.contains("register") {
        vec![AnomalyKind::Nonlinearizable]
    } else if name == crate::judge::crashes::CHECKER {
        vec![AnomalyKind::Crash]
    } else if name == crate::judge::availability::CHECKER {
        vec![AnomalyKind::Unavailable]
    } else if name == crate::judge::contract::CHECKER {
        vec![AnomalyKind::ContractViolation]
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

/// A suite named after the run, with run.json's workload, seed and start time as
/// properties.
fn suite(name: &str, config: &Value) -> TestSuite {
    let mut suite = TestSuite::new(format!("watermark {name}"));
    for key in ["workload", "seed", "started_at"] {
        let shown = match config.get(key) {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        };
        suite.add_property(Property::new(key, shown));
    }
    suite
}

/// Render the run's verdict as JUnit XML.
pub fn render(data: &RunData) -> Result<String, String> {
    let mut report = Report::new("watermark");
    let mut suite = suite(&data.name(), &data.config);
    for case in verdict_cases(&data.results, "") {
        suite.add_test_case(case);
    }
    report.add_test_suite(suite);
    report.to_string().map_err(|e| e.to_string())
}

/// Render a series of campaigns (`watermark run --test-count N`) as one suite,
/// `name`, of the campaigns' test cases.
pub fn render_series(name: &str, config: &Value, cases: Vec<TestCase>) -> Result<String, String> {
    let mut report = Report::new("watermark");
    let mut suite = suite(name, config);
    suite.add_test_cases(cases);
    report.add_test_suite(suite);
    report.to_string().map_err(|e| e.to_string())
}

/// Render a run that ended without a verdict (`outcome`: `harness-failed` or
/// `interrupted`) as JUnit XML: one errored test case, `run`, whose message is
/// `reason`.
pub fn render_unjudged(
    name: &str,
    config: &Value,
    outcome: &str,
    reason: &str,
) -> Result<String, String> {
    let mut report = Report::new("watermark");
    let mut suite = suite(name, config);
    suite.add_test_case(unjudged_case("", outcome, reason));
    report.add_test_suite(suite);
    report.to_string().map_err(|e| e.to_string())
}

/// The errored test case of a run without a verdict; `prefix` starts its name.
pub(crate) fn unjudged_case(prefix: &str, outcome: &str, reason: &str) -> TestCase {
    let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
    let what = match outcome {
        "interrupted" => "the run was interrupted before its verdict",
        _ => "the harness failed before the run's verdict",
    };
    s.set_message(format!("{what}: {reason}"));
    s.set_type(outcome.to_string());
    s.set_description(format!(
        "{what}.\n{reason}\nThe run folder keeps what was recorded: history.jsonl \
         (`watermark check` judges it), watermark.log, nodes/*/broker.log."
    ));
    let mut case = TestCase::new(format!("{prefix}run"), s);
    case.set_classname("watermark.harness");
    case
}

/// The test cases of a judged run: one per checker and one per anomaly kind it
/// looks for; `prefix` starts every name (a campaign of a series names its seed).
pub(crate) fn verdict_cases(results: &Results, prefix: &str) -> Vec<TestCase> {
    let mut cases = Vec::new();
    for (checker, c) in &results.checkers {
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
        let mut case = TestCase::new(format!("{prefix}checker {checker}"), status);
        case.set_classname(&classname);
        // The checker's stats stay visible in CI output.
        let stats: Vec<String> = c.stats.iter().map(|(k, v)| format!("{k} {v}")).collect();
        if !stats.is_empty() {
            case.set_system_out(stats.join("\n"));
        }
        cases.push(case);
        add_kinds(&mut cases, prefix, checker, c, &classname);
    }
    cases
}

fn add_kinds(
    cases: &mut Vec<TestCase>,
    prefix: &str,
    checker: &str,
    c: &CheckerResult,
    classname: &str,
) {
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
        let mut case = TestCase::new(format!("{prefix}{checker} {kind}"), status);
        case.set_classname(classname);
        cases.push(case);
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
