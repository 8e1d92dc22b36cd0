//! The report's fault coverage and nemesis decisions: which replication transitions
//! the campaign went through (results.json's `coverage`), with a warning when it
//! never moved a leader, and each pattern the replication package chose, when, on
//! which roles and why (the history's `plan` events).

use std::fmt::Write;

use checker::history::Process;
use serde_json::Value;

use super::folder::RunData;
use super::text::escape;
use crate::nemesis::Coverage;
use crate::nemesis::coverage::AREAS;

/// The "Fault coverage" section.
pub(super) fn section(out: &mut String, data: &RunData) {
    out.push_str(r#"<h2 id="coverage">Fault coverage</h2>"#);
    let Some(c) = &data.coverage else {
        out.push_str(
            "<p>No fault coverage in results.json (it was written before watermark \
             recorded coverage, or by <code>watermark check</code>).</p>",
        );
        return;
    };
    for w in &c.warnings {
        let _ = write!(
            out,
            r#"<p class="warn" id="coverage-warning">{}</p>"#,
            escape(w)
        );
    }
    out.push_str(
        r#"<table id="coverage-table"><tr><th>area</th><th>transition</th><th>times</th></tr>"#,
    );
    for (area, transitions) in AREAS {
        for (i, t) in transitions.iter().enumerate() {
            let n = c.get(*t);
            let class = if c.unseen.contains(t) {
                " class=\"unseen\""
            } else {
                ""
            };
            let area = if i == 0 { area } else { "" };
            let _ = write!(
                out,
                r#"<tr{class} data-transition="{t}"><td>{area}</td><td>{t}</td><td>{n}</td></tr>"#
            );
        }
    }
    out.push_str("</table>");
    let _ = write!(
        out,
        "<p>{} records truncated; {} leader changes seen in the controller's metadata; {} broker events counted.",
        c.truncated_records, c.leader_changes_observed, c.event_lines
    );
    if !c.unseen.is_empty() {
        let unseen: Vec<String> = c.unseen.iter().map(|t| t.to_string()).collect();
        let _ = write!(out, " Not exercised: {}.", escape(&unseen.join(", ")));
    }
    out.push_str("</p>");
    decisions(out, data, c);
}

/// The "Nemesis decisions" table: one row per `plan` event.
fn decisions(out: &mut String, data: &RunData, c: &Coverage) {
    let plans: Vec<_> = data
        .events
        .iter()
        .filter(|e| e.process == Process::Nemesis && e.f == "plan")
        .collect();
    if plans.is_empty() {
        return;
    }
    let chosen: Vec<String> = c
        .patterns
        .iter()
        .map(|(p, n)| format!("{p} × {n}"))
        .collect();
    let _ = write!(
        out,
        r#"<h3 id="decisions">Nemesis decisions</h3><p>{}</p><table id="decision-table"><tr><th>#</th><th>at</th><th>pattern</th><th>why</th><th>roles</th><th>steps</th></tr>"#,
        escape(&chosen.join(", "))
    );
    for e in plans {
        let v = &e.value;
        let text = |key: &str| match &v[key] {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        let mut roles = text("roles");
        if let Some(p) = v["partition"].as_u64() {
            roles = match v["topic"].as_str() {
                Some(t) => format!("{t}/{p}: {roles}"),
                None => format!("partition {p}: {roles}"),
            };
        }
        let steps: Vec<String> = v["steps"]
            .as_array()
            .map(|steps| {
                steps
                    .iter()
                    .map(|s| {
                        let at = s["at_ms"].as_u64().unwrap_or(0) as f64 / 1000.0;
                        format!("+{at:.1}s {}", s["do"].as_str().unwrap_or(""))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut steps = steps;
        if let Some(o) = v["overlap"].as_object() {
            let when = match o.get("after_step").and_then(Value::as_u64) {
                Some(i) => format!("step {} taken", i + 1),
                None => "the start".to_string(),
            };
            let ms = |k: &str| o.get(k).and_then(Value::as_u64).unwrap_or(0) as f64 / 1000.0;
            steps.push(format!(
                "overlap: {} {:.1}s after {when}, held {:.1}s",
                o.get("kind").and_then(Value::as_str).unwrap_or("?"),
                ms("after_ms"),
                ms("hold_ms")
            ));
        }
        let _ = write!(
            out,
            r#"<tr class="decision"><td>{}</td><td>{:.1} s</td><td>{}</td><td>{}</td><td class="mono">{}</td><td class="mono">{}</td></tr>"#,
            escape(&text("number")),
            e.time as f64 / 1e9,
            escape(&text("pattern")),
            escape(&text("why")),
            escape(&roles),
            escape(&steps.join("; "))
        );
    }
    out.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nemesis::Transition;
    use checker::history::{Event, EventType};
    use checker::verdict::Results;
    use clap::ValueEnum;
    use serde_json::json;

    fn data(coverage: Option<Coverage>) -> RunData {
        let plan = Event {
            index: 0,
            time: 2_500_000_000,
            process: Process::Nemesis,
            kind: EventType::Info,
            f: "plan".into(),
            value: json!({"number": 1, "pattern": "kip101", "why": "unseen: restarted-leader",
                          "partition": 0, "roles": {"leader": 1, "follower": 2},
                          "steps": [{"at_ms": 0, "do": "kill 2"}, {"at_ms": 1200, "do": "kill 1"}]}),
            error: None,
        };
        RunData {
            dir: "/tmp/run".into(),
            config: json!({}),
            events: vec![plan],
            ops: Vec::new(),
            results: Results::new(Default::default()),
            coverage,
            replicas: Vec::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn the_table_shows_every_transition_the_warning_and_each_decision() {
        let mut c = Coverage::new(0);
        c.transitions.insert(Transition::TruncateEpoch, 4);
        c.patterns.insert("kip101".into(), 1);
        c.finish(&Transition::reachable(false, false));
        let mut out = String::new();
        section(&mut out, &data(Some(c)));
        assert!(out.contains(r#"data-transition="truncate-epoch"><td>truncation</td><td>truncate-epoch</td><td>4</td>"#), "{out}");
        assert_eq!(
            out.matches("data-transition=").count(),
            Transition::value_variants().len()
        );
        assert!(out.contains(r#"id="coverage-warning""#) && out.contains("no leader election"));
        assert!(
            out.contains("<td>kip101</td><td>unseen: restarted-leader</td>"),
            "{out}"
        );
        assert!(out.contains("+1.2s kill 1"), "{out}");
        let mut out = String::new();
        section(&mut out, &data(None));
        assert!(out.contains("No fault coverage"), "{out}");
    }
}
