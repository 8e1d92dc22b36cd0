//! The messages of a run of a Maelstrom system (`--bin`): the statistics of
//! results.json's `network` as tables (in all, dropped and why, per link, per
//! type), and for an anomaly a Lamport-style sequence picture of the messages
//! around its operations — one vertical lane per client, node and service, time
//! flowing down, an arrow per message from its sending to its delivery (a dropped
//! one ends in a cross), the anomaly's operations as bars on their clients' lanes,
//! each linked to its mark on the timeline. Both read the run folder
//! (`results.json`, `messages.jsonl`); a broker's run has neither, and shows
//! nothing here.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use checker::history::Op;
use checker::verdict::{Anomaly, OpRef};
use serde_json::Value;

use super::text::{OpLinks, escape, short};

/// Messages drawn in one picture, at most.
const MAX_DRAWN: usize = 60;
/// Links and types listed in the tables, at most.
const MAX_ROWS: usize = 30;
/// Operations of an anomaly the picture is drawn around, at most.
const MAX_OPS: usize = 3;
/// Time either side of the operations (nanoseconds).
const PAD: u64 = 20_000_000;
/// Geometry of the picture.
const LANE_W: f64 = 120.0;
const TOP: f64 = 36.0;
const HEIGHT: f64 = 520.0;

/// One line of `messages.jsonl`.
#[derive(Debug, Clone)]
pub(super) struct Carried {
    src: String,
    dest: String,
    kind: String,
    body: Value,
    sent: u64,
    delivered: Option<u64>,
    dropped: Option<String>,
}

/// The messages of a run, in the order their fates were known.
#[derive(Debug, Clone, Default)]
pub(super) struct Messages {
    all: Vec<Carried>,
}

impl Messages {
    /// `messages.jsonl` of `dir`, if it has one (lines that do not read are skipped).
    pub(super) fn read(dir: &Path) -> Option<Messages> {
        let text = std::fs::read_to_string(dir.join("messages.jsonl")).ok()?;
        let all = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| {
                Some(Carried {
                    src: v["src"].as_str()?.to_string(),
                    dest: v["dest"].as_str()?.to_string(),
                    kind: v["body"]["type"].as_str().unwrap_or("?").to_string(),
                    body: v["body"].clone(),
                    sent: v["sent"].as_u64()?,
                    delivered: v["delivered"].as_u64(),
                    dropped: v["dropped"].as_str().map(str::to_string),
                })
            })
            .collect();
        Some(Messages { all })
    }
}

fn counts_row(out: &mut String, name: &str, c: &Value) {
    let _ = write!(
        out,
        "<tr><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        escape(name),
        c["sent"],
        c["delivered"],
        c["dropped"],
        c["delayed"]
    );
}

/// A table of counts by name, the busiest first.
fn counts_table(out: &mut String, title: &str, by: &Value) {
    let Some(map) = by.as_object() else {
        return;
    };
    let mut rows: Vec<(&String, &Value)> = map.iter().collect();
    rows.sort_by_key(|(_, c)| std::cmp::Reverse(c["sent"].as_u64().unwrap_or(0)));
    let _ = write!(
        out,
        "<h3>{title}</h3><table><tr><th></th><th>sent</th><th>delivered</th><th>dropped</th><th>delayed</th></tr>"
    );
    for (name, c) in rows.iter().take(MAX_ROWS) {
        counts_row(out, name, c);
    }
    out.push_str("</table>");
    if rows.len() > MAX_ROWS {
        let _ = write!(
            out,
            "<p>… {} more in <a href=\"results.json\">results.json</a>.</p>",
            rows.len() - MAX_ROWS
        );
    }
}

/// The "Messages" section, from results.json's `network` (none: nothing).
pub(super) fn section(out: &mut String, dir: &Path) {
    let Some(net) = std::fs::read_to_string(dir.join("results.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .map(|v| v["network"].clone())
        .filter(Value::is_object)
    else {
        return;
    };
    let t = &net["total"];
    let _ = write!(
        out,
        r#"<h2 id="messages">Messages</h2><p>{} messages sent, {} delivered, {} dropped, {} delayed; {} between nodes; {} per operation ({} operations); {} node restarts; {} protocol errors. Every message is in <a href="messages.jsonl">messages.jsonl</a>.</p>"#,
        t["sent"],
        t["delivered"],
        t["dropped"],
        t["delayed"],
        net["between_nodes"],
        net["messages_per_operation"],
        net["operations"],
        net["restarts"],
        net["protocol_errors"]
    );
    if let Some(by) = net["dropped_by"].as_object().filter(|m| !m.is_empty()) {
        let parts: Vec<String> = by.iter().map(|(k, v)| format!("{v} {k}")).collect();
        let _ = write!(out, "<p>dropped: {}</p>", escape(&parts.join(", ")));
    }
    counts_table(out, "Per link", &net["links"]);
    counts_table(out, "Per type", &net["types"]);
}

/// The operations a picture is drawn around: those the anomaly lists, and for a
/// linearization that failed the last operation it placed and the one it could not.
fn involved(a: &Anomaly) -> Vec<&OpRef> {
    let mut ops: Vec<&OpRef> = a.ops.iter().take(MAX_OPS).collect();
    if let Some(e) = &a.explanation {
        for r in e.prefix.last().into_iter().chain([&e.op]) {
            if !ops.iter().any(|o| o.invoke == r.invoke) {
                ops.push(r);
            }
        }
    }
    ops
}

/// The lanes of a picture: clients first, then nodes, then services, by name.
fn lanes(drawn: &[&Carried]) -> Vec<String> {
    let mut names: Vec<String> = drawn
        .iter()
        .flat_map(|m| [m.src.clone(), m.dest.clone()])
        .collect();
    let rank = |s: &str| match s.as_bytes().first() {
        Some(b'c') if s.bytes().skip(1).all(|b| b.is_ascii_digit()) => 0,
        Some(b'n') if s.bytes().skip(1).all(|b| b.is_ascii_digit()) => 1,
        _ => 2,
    };
    let num = |s: &str| {
        s.get(1..)
            .and_then(|r| r.parse::<u64>().ok())
            .unwrap_or(u64::MAX)
    };
    names.sort_by(|a, b| (rank(a), num(a), a).cmp(&(rank(b), num(b), b)));
    names.dedup();
    names
}

/// The client an operation's process was: process `p` of `clients` is `c(p mod
/// clients + 1)` (a client in doubt carries on as process `p + clients`).
fn client_of(op: &Op, clients: u64) -> String {
    format!("c{}", op.process % clients.max(1) + 1)
}

/// The sequence picture of the messages around anomaly `n`'s operations, of a
/// run of `clients` clients.
pub(super) fn diagram(
    out: &mut String,
    n: usize,
    a: &Anomaly,
    messages: &Messages,
    links: &OpLinks,
    clients: u64,
) {
    let ops: Vec<&Op> = involved(a)
        .into_iter()
        .filter_map(|r| links.by_index.get(&r.invoke).copied())
        .collect();
    if ops.is_empty() {
        return;
    }
    let t0 = ops
        .iter()
        .map(|o| o.invoke_time)
        .min()
        .unwrap_or(0)
        .saturating_sub(PAD);
    let t1 = ops
        .iter()
        .map(|o| o.complete_time.unwrap_or(o.invoke_time))
        .max()
        .unwrap_or(t0)
        + PAD;
    let in_window: Vec<&Carried> = messages
        .all
        .iter()
        .filter(|m| m.sent >= t0 && m.sent <= t1)
        .collect();
    if in_window.is_empty() {
        return;
    }
    // The operations' own messages first (their clients' requests and replies),
    // then those between nodes and services, each in time order, up to the bound.
    let own: Vec<String> = ops.iter().map(|o| client_of(o, clients)).collect();
    let is_client = |s: &str| s.starts_with('c');
    let mine = |m: &Carried| own.contains(&m.src) || own.contains(&m.dest);
    let mut drawn: Vec<&Carried> = in_window
        .iter()
        .copied()
        .filter(|m| mine(m))
        .take(MAX_DRAWN)
        .collect();
    let room = MAX_DRAWN.saturating_sub(drawn.len());
    drawn.extend(
        in_window
            .iter()
            .copied()
            .filter(|m| !mine(m) && !is_client(&m.src) && !is_client(&m.dest))
            .take(room),
    );
    drawn.sort_by_key(|m| m.sent);
    let mut lanes = lanes(&drawn);
    for c in own.iter().rev() {
        if !lanes.contains(c) {
            lanes.insert(0, c.clone());
        }
    }
    let x_of: BTreeMap<&str, f64> = lanes
        .iter()
        .enumerate()
        .map(|(i, l)| (l.as_str(), 60.0 + i as f64 * LANE_W))
        .collect();
    let span = (t1 - t0).max(1) as f64;
    let y = |t: u64| TOP + (t.clamp(t0, t1) - t0) as f64 / span * HEIGHT;
    let width = 60.0 + lanes.len() as f64 * LANE_W;
    let height = TOP + HEIGHT + 20.0;
    let _ = write!(
        out,
        r#"<p>The messages around it ({:.3} s – {:.3} s; {} of {} drawn; time flows down; a cross: dropped):</p><svg class="plot seq" id="messages-{n}" viewBox="0 0 {width:.0} {height:.0}" width="{width:.0}" height="{height:.0}" xmlns="http://www.w3.org/2000/svg">"#,
        t0 as f64 / 1e9,
        t1 as f64 / 1e9,
        drawn.len(),
        in_window.len()
    );
    for (name, x) in &x_of {
        let _ = write!(
            out,
            r#"<text class="tick" x="{x:.1}" y="16">{}</text><line class="axis" x1="{x:.1}" y1="24" x2="{x:.1}" y2="{:.1}"/>"#,
            escape(name),
            TOP + HEIGHT
        );
    }
    for op in &ops {
        let Some(&x) = x_of.get(client_of(op, clients).as_str()) else {
            continue;
        };
        let (ya, yb) = (y(op.invoke_time), y(op.complete_time.unwrap_or(t1)));
        let label = format!("{} {}", op.f, short(&op.value, 30));
        let bar = format!(
            r#"<rect id="a{n}-seq-op-{}" class="lin-pending" x="{:.1}" y="{ya:.1}" width="10" height="{:.1}"><title>{}</title></rect>"#,
            op.invoke_index,
            x - 5.0,
            (yb - ya).max(2.0),
            escape(&label)
        );
        if links.anchored.contains(&op.invoke_index) {
            let _ = write!(out, r##"<a href="#op-{}">{bar}</a>"##, op.invoke_index);
        } else {
            out.push_str(&bar);
        }
    }
    for m in &drawn {
        let (Some(&xa), Some(&xb)) = (x_of.get(m.src.as_str()), x_of.get(m.dest.as_str())) else {
            continue;
        };
        let ya = y(m.sent);
        let title = escape(&format!(
            "{} → {}: {}{}",
            m.src,
            m.dest,
            short(&m.body, 120),
            m.dropped
                .as_ref()
                .map(|d| format!(" (dropped: {d})"))
                .unwrap_or_default()
        ));
        match m.delivered {
            Some(d) => {
                let yb = y(d).max(ya + 1.0);
                let _ = write!(
                    out,
                    r#"<g><title>{title}</title><line class="axis" x1="{xa:.1}" y1="{ya:.1}" x2="{xb:.1}" y2="{yb:.1}"/><circle cx="{xb:.1}" cy="{yb:.1}" r="2.5"/><text x="{:.1}" y="{:.1}">{}</text></g>"#,
                    (xa + xb) / 2.0,
                    (ya + yb) / 2.0 - 2.0,
                    escape(&m.kind)
                );
            }
            None => {
                let (xm, ym) = ((xa + xb) / 2.0, ya + 6.0);
                let _ = write!(
                    out,
                    r#"<g class="fail"><title>{title}</title><line class="axis" stroke-dasharray="3 2" x1="{xa:.1}" y1="{ya:.1}" x2="{xm:.1}" y2="{ym:.1}"/><text x="{xm:.1}" y="{:.1}">× {}</text></g>"#,
                    ym + 4.0,
                    escape(&m.kind)
                );
            }
        }
    }
    out.push_str("</svg>");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn carried(src: &str, dest: &str, sent: u64) -> Carried {
        Carried {
            src: src.into(),
            dest: dest.into(),
            kind: "read".into(),
            body: Value::Null,
            sent,
            delivered: Some(sent + 1),
            dropped: None,
        }
    }

    #[test]
    fn lanes_put_clients_then_nodes_then_services_in_number_order() {
        let ms = [
            carried("n10", "lin-kv", 1),
            carried("c2", "n2", 2),
            carried("n2", "n10", 3),
            carried("c11", "n1", 4),
        ];
        let refs: Vec<&Carried> = ms.iter().collect();
        assert_eq!(lanes(&refs), ["c2", "c11", "n1", "n2", "n10", "lin-kv"]);
    }
}
