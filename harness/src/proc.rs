//! The processes of a cluster as the harness names them: the controller and the nodes
//! by id. Plain data, shared by everything that points at a process — the network
//! layer (who is cut from whom), the cluster (whom to kill or pause) and the nemesis
//! (whom a fault hits) — so none of them has to import another for it.

use std::fmt;

use serde_json::{Value, json};

/// A process of the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Proc {
    Controller,
    Node(i32),
}

impl Proc {
    /// Every process of a cluster of `nodes`: a dedicated controller first (when
    /// there is one), then the nodes in the order given.
    pub fn universe(nodes: &[i32], dedicated_controller: bool) -> Vec<Proc> {
        dedicated_controller
            .then_some(Proc::Controller)
            .into_iter()
            .chain(nodes.iter().map(|&id| Proc::Node(id)))
            .collect()
    }

    /// As in history values: the node id, or `"controller"`.
    pub fn to_json(self) -> Value {
        match self {
            Proc::Controller => json!("controller"),
            Proc::Node(id) => json!(id),
        }
    }

    /// From history values (the inverse of [`Proc::to_json`]): None for anything else.
    pub fn from_json(v: &Value) -> Option<Proc> {
        match v {
            Value::String(s) if s == "controller" => Some(Proc::Controller),
            v => v
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .map(Proc::Node),
        }
    }

    /// As a JSON object key and a folder name: `"1"`, `"controller"`.
    pub fn key(self) -> String {
        match self {
            Proc::Controller => "controller".into(),
            Proc::Node(id) => id.to_string(),
        }
    }
}

impl fmt::Display for Proc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Proc::Controller => f.write_str("controller"),
            Proc::Node(id) => write!(f, "node {id}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_reads_back_from_its_json() {
        for p in [Proc::Controller, Proc::Node(3)] {
            assert_eq!(Proc::from_json(&p.to_json()), Some(p));
        }
        assert_eq!(Proc::from_json(&json!("node 3")), None);
        assert_eq!(Proc::from_json(&Value::Null), None);
    }
}
