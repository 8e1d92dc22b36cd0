//! The router: watermark *is* the network of a Maelstrom cluster. One task reads
//! every line the nodes write, parses it (never trusting it), and carries each
//! message to its destination — another node's stdin, a client of the harness
//! waiting for its reply, or a service (lin-kv, seq-kv, lww-kv) that answers at
//! once — through the [`Network`]'s fate: delivered now, later (a degraded link),
//! or dropped (a partition, a loss, a node down). Every message ends as one line of
//! `messages.jsonl` ([`MessageLog`]).
//!
//! What a node may get wrong never stops the router: a line that is not a
//! message, a message from another id than the node's own, to an unknown
//! destination, or in reply to no request is a `protocol-error` event in the
//! history (node, line, time, why) and is not delivered; a node whose output ends
//! without the harness killing it is a `crash` event once it is reaped. A reply that
//! comes after its request timed out is no error: it is recorded as dropped, late.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use checker::history::EventType;
use maelstrom::message::{Body, Message, ParseError, parse_line};
use maelstrom::service::{Service, ServiceKind};
use serde_json::json;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::sync::oneshot;

use super::inbound::Inbound;
use super::messages::{Carried, MessageLog};
use super::network::{Fate, Network, node_number};
use super::node::NodeProc;
use crate::store::History;
use crate::system::process::crash::{Crash, quote};
use crate::system::process::supervisor::Death;

/// `f` of a protocol error in the history (process `"nemesis"`).
pub const PROTOCOL_ERROR: &str = crate::judge::protocol::EVENT;
/// Protocol errors written into the history per node; past it they are counted.
const PROTOCOL_ERRORS_RECORDED: u64 = 50;
/// How much of an offending line a protocol error quotes.
const QUOTED: usize = 200;
/// How long a node whose output ended may take to exit before the router stops
/// waiting to reap it.
const EXIT_AFTER_EOF: Duration = Duration::from_secs(10);

/// A node's place in the cluster: its running life, if any.
#[derive(Debug, Default)]
pub struct Slot {
    pub proc: Option<NodeProc>,
    /// It answered `init`: messages may reach it.
    pub ready: bool,
    pub paused: bool,
    /// Lives started so far.
    pub lives: u64,
}

/// What the router shares with the cluster.
pub struct Shared {
    pub slots: Mutex<Vec<Slot>>,
    pub net: Mutex<Network>,
    pub log: Mutex<MessageLog>,
    /// Answers of these nodes to clients are held (dropped, as held).
    pub held: Mutex<HashSet<usize>>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Is `id` one of the harness's clients (`c0`, `c1`, …)?
fn is_client(id: &str) -> bool {
    id.strip_prefix('c')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The router's state.
pub struct Router {
    shared: Arc<Shared>,
    tx: UnboundedSender<Inbound>,
    node_ids: Vec<String>,
    /// Each node's stderr, in the run folder's terms and on disk.
    stderr: Vec<(String, PathBuf)>,
    pending: HashMap<(String, i64), oneshot::Sender<Body>>,
    abandoned: HashSet<(String, i64)>,
    /// Requests answered: another answer to one is recorded as dropped
    /// (`answered`), as Maelstrom's clients ignore it, not as an error.
    answered: HashSet<(String, i64)>,
    services: HashMap<&'static str, Service>,
    history: Arc<History>,
    errors: HashMap<usize, u64>,
}

impl Router {
    pub fn new(
        shared: Arc<Shared>,
        tx: UnboundedSender<Inbound>,
        node_ids: Vec<String>,
        stderr: Vec<(String, PathBuf)>,
        history: Arc<History>,
        seed: u64,
    ) -> Router {
        let services = ServiceKind::ALL
            .into_iter()
            .enumerate()
            .map(|(i, k)| (k.name(), Service::new(k, seed ^ (i as u64 + 1))))
            .collect();
        Router {
            shared,
            tx,
            node_ids,
            stderr,
            pending: HashMap::new(),
            abandoned: HashSet::new(),
            answered: HashSet::new(),
            services,
            history,
            errors: HashMap::new(),
        }
    }

    /// Route until told to stop (or every sender is gone).
    pub async fn run(mut self, mut rx: UnboundedReceiver<Inbound>) {
        while let Some(m) = rx.recv().await {
            match m {
                Inbound::Line {
                    node,
                    life,
                    line,
                    too_long,
                    at,
                } => self.line(node, life, &line, too_long, at),
                Inbound::Closed { node, life } => self.closed(node, life),
                Inbound::Request { msg, reply, init } => {
                    let key = (msg.src.clone(), msg.body.msg_id.unwrap_or(-1));
                    self.pending.insert(key, reply);
                    if init {
                        self.deliver(msg, Instant::now(), true, false);
                    } else {
                        self.route(msg, Instant::now());
                    }
                }
                Inbound::Cancel { client, msg_id } => {
                    if self.pending.remove(&(client.clone(), msg_id)).is_some() {
                        self.abandoned.insert((client, msg_id));
                    }
                }
                Inbound::Due {
                    msg,
                    sent,
                    between_nodes,
                } => self.deliver(msg, sent, false, between_nodes),
                Inbound::Stop(done) => {
                    let _ = done.send(());
                    return;
                }
            }
        }
    }

    fn record(&self, msg: &Message, sent: Instant, dropped: Option<&str>, between_nodes: bool) {
        lock(&self.shared.log).record(Carried {
            message: msg,
            sent,
            delivered: dropped.is_none().then(Instant::now),
            dropped,
            between_nodes,
        });
    }

    /// A `protocol-error` event for node `node`.
    fn protocol_error(&mut self, node: usize, line: &[u8], error: String) {
        lock(&self.shared.log).protocol_error();
        let count = self.errors.entry(node).or_default();
        *count += 1;
        if *count > PROTOCOL_ERRORS_RECORDED {
            return;
        }
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        // Control characters (a NUL, an escape) quoted as escapes: the line goes
        // into the history, the console and the report.
        let mut quoted: String = text
            .chars()
            .take(QUOTED)
            .map(|c| match c {
                c if c.is_control() => format!("\\u{{{:04x}}}", c as u32),
                c => c.to_string(),
            })
            .collect();
        if text.chars().count() > QUOTED {
            quoted.push('…');
        }
        let id = self.node_ids.get(node).cloned().unwrap_or_default();
        crate::console::record(&format!("watermark: {id} broke the protocol: {error}"));
        self.history.nemesis(
            EventType::Info,
            PROTOCOL_ERROR,
            json!({"node": id, "line": quoted, "error": error}),
        );
    }

    fn line(&mut self, node: usize, life: u64, line: &[u8], too_long: Option<usize>, at: Instant) {
        let me = self.node_ids[node].clone();
        if let Some(len) = too_long {
            let e = ParseError::TooLong { len }.to_string();
            return self.protocol_error(node, line, e);
        }
        let msg = match parse_line(line) {
            Ok(m) => m,
            Err(e) => return self.protocol_error(node, line, e.to_string()),
        };
        let current = lock(&self.shared.slots)
            .get(node)
            .is_some_and(|s| s.proc.as_ref().is_some_and(|p| p.life == life));
        if !current {
            // Written by a life killed since: it never left the node.
            return;
        }
        // A node may relay a client's request as it came (Maelstrom's own Raft demo
        // proxies a request to the leader, which answers the client): its `src` is
        // then the client's. It may not speak for another node or a service.
        if msg.src != me && !is_client(&msg.src) {
            let e = format!("message from `{}` written by {me}", msg.src);
            return self.protocol_error(node, line, e);
        }
        let known = node_number(&msg.dest, self.node_ids.len()).is_some()
            || is_client(&msg.dest)
            || ServiceKind::from_name(&msg.dest).is_some();
        if !known {
            self.record(&msg, at, Some("unknown destination"), false);
            let e = format!("unknown destination `{}`", msg.dest);
            return self.protocol_error(node, line, e);
        }
        if is_client(&msg.dest) {
            let key = (msg.dest.clone(), msg.body.in_reply_to.unwrap_or(-1));
            if self.abandoned.contains(&key) {
                return self.record(&msg, at, Some("late"), false);
            }
            if self.answered.contains(&key) {
                return self.record(&msg, at, Some("answered"), false);
            }
            if !self.pending.contains_key(&key) {
                self.record(&msg, at, Some("no request"), false);
                let e = match msg.body.in_reply_to {
                    Some(id) => format!(
                        "reply to {} in reply to {id}, which it never sent",
                        msg.dest
                    ),
                    None => format!("message to client {} in reply to nothing", msg.dest),
                };
                return self.protocol_error(node, line, e);
            }
            if lock(&self.shared.held).contains(&node) {
                return self.record(&msg, at, Some("held"), false);
            }
        }
        self.route_from(&me, msg, at);
    }

    /// Carry `msg` through the network: now, later, or not at all.
    fn route(&mut self, msg: Message, sent: Instant) {
        let from = msg.src.clone();
        self.route_from(&from, msg, sent)
    }

    /// [`Router::route`] over the link from `from` (the node that wrote it, which
    /// for a relayed request is not its `src`).
    fn route_from(&mut self, from: &str, msg: Message, sent: Instant) {
        let n = self.node_ids.len();
        let between_nodes = node_number(from, n).is_some() && node_number(&msg.dest, n).is_some();
        let fate = lock(&self.shared.net).fate(from, &msg.dest);
        match fate {
            Fate::Drop(why) => self.record(&msg, sent, Some(why), between_nodes),
            Fate::Deliver(d) if d.is_zero() => self.deliver(msg, sent, false, between_nodes),
            Fate::Deliver(d) => {
                let tx = self.tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(d).await;
                    let _ = tx.send(Inbound::Due {
                        msg,
                        sent,
                        between_nodes,
                    });
                });
            }
        }
    }

    /// Hand `msg` to its destination now.
    fn deliver(&mut self, msg: Message, sent: Instant, init: bool, between_nodes: bool) {
        if let Some(k) = node_number(&msg.dest, self.node_ids.len()) {
            let why = {
                let slots = lock(&self.shared.slots);
                match slots.get(k as usize - 1) {
                    Some(Slot {
                        proc: Some(p),
                        ready,
                        ..
                    }) if *ready || init => (!p.send(msg.to_line())).then_some("node down"),
                    Some(Slot { proc: Some(_), .. }) => Some("not initialised"),
                    _ => Some("node down"),
                }
            };
            return self.record(&msg, sent, why, between_nodes);
        }
        if let Some(service) = self.services.get_mut(msg.dest.as_str()) {
            let reply = service.reply(&msg);
            self.record(&msg, sent, None, false);
            return self.route(reply, Instant::now());
        }
        let key = (msg.dest.clone(), msg.body.in_reply_to.unwrap_or(-1));
        match self.pending.remove(&key) {
            Some(waiting) => {
                let _ = waiting.send(msg.body.clone());
                self.answered.insert(key);
                self.record(&msg, sent, None, false);
            }
            None => self.record(&msg, sent, Some("late"), false),
        }
    }

    /// Node `node`'s output of life `life` ended: unless the harness killed it, it
    /// is on its way out; once reaped, a `crash`.
    fn closed(&mut self, node: usize, life: u64) {
        let child = {
            let slots = lock(&self.shared.slots);
            match slots.get(node).and_then(|s| s.proc.as_ref()) {
                Some(p) if p.life == life && !p.child.killed() => p.child.clone(),
                _ => return,
            }
        };
        let shared = self.shared.clone();
        let history = self.history.clone();
        let (shown, path) = self.stderr[node].clone();
        let id = self.node_ids[node].clone();
        tokio::spawn(async move {
            let deadline = Instant::now() + EXIT_AFTER_EOF;
            let status = loop {
                if let Some(s) = child.reap() {
                    break s;
                }
                if Instant::now() >= deadline {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            };
            if child.ended_by_harness(status) {
                return;
            }
            {
                let mut slots = lock(&shared.slots);
                if let Some(s) = slots.get_mut(node)
                    && s.proc.as_ref().is_some_and(|p| p.life == life)
                {
                    s.proc = None;
                    s.ready = false;
                    s.paused = false;
                }
            }
            let crash = Crash {
                proc: crate::proc::Proc::Node(node as i32 + 1),
                death: Death {
                    name: id.clone(),
                    pid: child.pid(),
                    status,
                    log_path: path.clone(),
                    log_from: 0,
                },
            };
            let said = std::fs::read(&path)
                .ok()
                .and_then(|b| quote(&String::from_utf8_lossy(&b)));
            crate::console::record(&format!(
                "watermark: {id} exited on its own ({}), the nemesis did not stop it (see {shown})",
                crash.status()
            ));
            history.nemesis(
                EventType::Info,
                crate::judge::crashes::EVENT,
                json!({"node": id, "pid": child.pid(), "status": crash.status(),
                       "log": shown, "message": said}),
            );
        });
    }
}

#[cfg(test)]
#[path = "router_tests.rs"]
mod tests;
