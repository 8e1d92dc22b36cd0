//! `--nemesis` between what is typed (each entry a fault, `replication`, or `none`)
//! and what is scheduled (the faults in the order first named; none at all is
//! stored as `["none"]`). `none` and the `replication` package each stand alone.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::names;
use crate::nemesis::FaultKind;

/// The faults the entries name, each once, in the order first named; `none`
/// must stand alone.
pub fn resolve(entries: &[Option<FaultKind>]) -> Result<Vec<FaultKind>, String> {
    if entries == [None] {
        return Ok(Vec::new());
    }
    if entries.contains(&None) {
        let typed: Vec<String> = entries
            .iter()
            .map(|e| e.map_or_else(|| "none".to_string(), |k| k.to_string()))
            .collect();
        return Err(format!(
            "--nemesis: `none` cannot be combined with other faults in `{}`",
            typed.join(",")
        ));
    }
    let mut kinds = Vec::new();
    for kind in entries.iter().flatten() {
        if !kinds.contains(kind) {
            kinds.push(*kind);
        }
    }
    if kinds.len() > 1 && kinds.contains(&FaultKind::Replication) {
        let typed: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        return Err(format!(
            "--nemesis: `replication` is a whole package of faults and cannot be combined \
             with other faults in `{}`; name the faults alone for a plain schedule",
            typed.join(",")
        ));
    }
    Ok(kinds)
}

/// The entries that name `kinds` (`none` for no fault).
pub fn entries(kinds: &[FaultKind]) -> Vec<Option<FaultKind>> {
    if kinds.is_empty() {
        vec![None]
    } else {
        kinds.iter().copied().map(Some).collect()
    }
}

pub fn serialize<S: Serializer>(kinds: &[FaultKind], s: S) -> Result<S::Ok, S::Error> {
    let names: Vec<String> = entries(kinds)
        .iter()
        .map(|e| e.map_or_else(|| "none".to_string(), |k| k.to_string()))
        .collect();
    names.serialize(s)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<FaultKind>, D::Error> {
    let names = Vec::<String>::deserialize(d)?;
    let entries = names
        .iter()
        .map(|n| match n.trim() {
            "none" => Ok(None),
            n => names::parse::<FaultKind>("fault", n).map(Some),
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(serde::de::Error::custom)?;
    resolve(&entries).map_err(serde::de::Error::custom)
}
