//! The handshake that starts every node: the harness sends `init` with the node's
//! own id and every node's id (the same list, in the same order, to every node),
//! and the node answers `init_ok` in reply to it. Until then a node knows nothing,
//! so nothing else is sent to it; a node restarted after a kill is initialised
//! again the same way.

use serde_json::Value;

use crate::error::ErrorReply;
use crate::message::{Body, Message};

pub const INIT: &str = "init";
pub const INIT_OK: &str = "init_ok";

/// The ids of an `n`-node cluster: `n1` … `nN`, as Maelstrom names them.
pub fn node_ids(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("n{i}")).collect()
}

/// The `init` body for `node_id`, with request id `msg_id`.
pub fn init_body(msg_id: i64, node_id: &str, node_ids: &[String]) -> Body {
    let mut b = Body::new(INIT)
        .with("node_id", node_id)
        .with("node_ids", node_ids.to_vec());
    b.msg_id = Some(msg_id);
    b
}

/// The `init` message a client `from` (e.g. `c0`) sends to `node_id`.
pub fn init_message(from: &str, node_id: &str, node_ids: &[String], msg_id: i64) -> Message {
    Message::new(from, node_id, init_body(msg_id, node_id, node_ids))
}

/// What an `init` says, read on the node's side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Init {
    pub node_id: String,
    pub node_ids: Vec<String>,
}

/// Read an `init` body: `node_id` a string, `node_ids` strings that include it.
pub fn parse_init(body: &Body) -> Result<Init, String> {
    if body.kind != INIT {
        return Err(format!("expected type init, got {}", body.kind));
    }
    let node_id = match body.get("node_id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err("init without a string node_id".into()),
    };
    let Some(Value::Array(ids)) = body.get("node_ids") else {
        return Err("init without a node_ids array".into());
    };
    let node_ids: Vec<String> = ids
        .iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect::<Option<_>>()
        .ok_or("init's node_ids are not all strings")?;
    if !node_ids.contains(&node_id) {
        return Err(format!("init's node_ids do not include {node_id}"));
    }
    Ok(Init { node_id, node_ids })
}

/// Why a node's answer to `init` is not the `init_ok` expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitError {
    /// Not in reply to the `init` (a node may print other messages first; the
    /// harness ignores those while it waits).
    NotAReply,
    /// From another node than the one initialised, or to another client.
    WrongAddress { src: String, dest: String },
    /// The node refused: an `error` reply.
    Refused(ErrorReply),
    /// A reply of another type.
    WrongType(String),
}

impl std::fmt::Display for InitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InitError::NotAReply => f.write_str("not in reply to init"),
            InitError::WrongAddress { src, dest } => {
                write!(
                    f,
                    "init_ok from {src} to {dest}, not from the node initialised to its client"
                )
            }
            InitError::Refused(e) => write!(f, "the node refused init: {}", e.describe()),
            InitError::WrongType(t) => write!(f, "expected init_ok, got {t}"),
        }
    }
}

impl std::error::Error for InitError {}

/// Whether `reply` is the `init_ok` that `init` (a message from [`init_message`])
/// asked for.
pub fn check_init_ok(init: &Message, reply: &Message) -> Result<(), InitError> {
    if init.body.msg_id.is_none() || reply.body.in_reply_to != init.body.msg_id {
        return Err(InitError::NotAReply);
    }
    if reply.src != init.dest || reply.dest != init.src {
        return Err(InitError::WrongAddress {
            src: reply.src.clone(),
            dest: reply.dest.clone(),
        });
    }
    if let Some(e) = ErrorReply::from_body(&reply.body) {
        return Err(InitError::Refused(e));
    }
    if reply.body.kind != INIT_OK {
        return Err(InitError::WrongType(reply.body.kind.clone()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::error_body;
    use crate::message::parse_line;

    #[test]
    fn init_carries_the_node_and_every_node() {
        let ids = node_ids(3);
        assert_eq!(ids, ["n1", "n2", "n3"]);
        let m = init_message("c0", "n3", &ids, 1);
        assert_eq!(
            m.to_line(),
            "{\"src\":\"c0\",\"dest\":\"n3\",\"body\":{\"type\":\"init\",\"msg_id\":1,\"node_id\":\"n3\",\"node_ids\":[\"n1\",\"n2\",\"n3\"]}}\n"
        );
        let read = parse_line(m.to_line().as_bytes()).unwrap();
        let init = parse_init(&read.body).unwrap();
        assert_eq!((init.node_id.as_str(), init.node_ids.len()), ("n3", 3));
    }

    #[test]
    fn malformed_inits_are_refused() {
        let ids = node_ids(2);
        assert!(
            parse_init(&init_body(1, "n9", &ids))
                .unwrap_err()
                .contains("include")
        );
        assert!(parse_init(&Body::new("init").with("node_id", "n1")).is_err());
        let b = Body::new("init")
            .with("node_id", "n1")
            .with("node_ids", serde_json::json!(["n1", 2]));
        assert!(parse_init(&b).is_err());
        assert!(parse_init(&Body::new("echo")).is_err());
    }

    #[test]
    fn only_the_matching_init_ok_completes_the_handshake() {
        let init = init_message("c0", "n1", &node_ids(2), 5);
        let ok = init.reply(Body::new(INIT_OK));
        assert_eq!(check_init_ok(&init, &ok), Ok(()));

        let mut other = ok.clone();
        other.body.in_reply_to = Some(4);
        assert_eq!(check_init_ok(&init, &other), Err(InitError::NotAReply));
        let mut forged = ok.clone();
        forged.src = "n2".into();
        assert!(matches!(
            check_init_ok(&init, &forged),
            Err(InitError::WrongAddress { .. })
        ));
        let refused = init.reply(error_body(13, "boom"));
        assert!(matches!(
            check_init_ok(&init, &refused),
            Err(InitError::Refused(_))
        ));
        let odd = init.reply(Body::new("echo_ok"));
        assert_eq!(
            check_init_ok(&init, &odd),
            Err(InitError::WrongType("echo_ok".into()))
        );
    }
}
