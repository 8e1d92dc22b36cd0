//! Text in the report: HTML escaping (the one [`escape`], which `watermark serve`
//! uses too), values shortened for a table cell, and references to operations,
//! linked to their marks on the whole-run timeline when they have one.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use checker::history::Op;
use checker::verdict::OpRef;
use serde_json::Value;

/// Escape text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

pub(super) fn short(v: &Value, max: usize) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    if s.chars().count() > max {
        s.chars().take(max - 1).collect::<String>() + "…"
    } else {
        s
    }
}

/// The run's operations by invocation index, and those drawn one by one (with an
/// anchor) on the whole-run timeline: only these are linked, so every link has a
/// target.
pub(super) struct OpLinks<'a> {
    pub by_index: HashMap<u64, &'a Op>,
    pub anchored: BTreeSet<u64>,
}

impl OpLinks<'_> {
    /// `[invoke..complete] process p: what`, linked to its mark if it has one.
    pub fn op_link(&self, out: &mut String, op: &OpRef) {
        let complete = op.complete.map(|c| c.to_string()).unwrap_or_default();
        let label = format!(
            "[{}..{complete}] process {}: {}",
            op.invoke, op.process, op.text
        );
        if self.anchored.contains(&op.invoke) {
            let _ = write!(
                out,
                r##"<a class="op-link" href="#op-{}">{}</a>"##,
                op.invoke,
                escape(&label)
            );
        } else {
            out.push_str(&escape(&label));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
