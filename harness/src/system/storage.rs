//! A node's storage seen from outside (docs/faults.md#the-fault-filesystem): the
//! power cuts worked on its fault filesystem and what each lost, for the history.
//! Shared by every system under test — our brokers and the nodes of a `--bin`
//! system.

use serde_json::{Value, json};

use crate::error::{HarnessError, Result};
use crate::proc::Proc;

/// The power goes out on `p`, which is dead already: the files of `disk` lose what
/// it did not fsync (`torn`: but a prefix of the last write, drawn from that seed).
/// What each file lost, for the history: `[{"file", "lost_bytes", "len_before",
/// "len_after", "torn": {"offset", "kept"}}]`, files in order.
pub(crate) fn cut_power(disk: &faultfs::Mount, p: Proc, torn: Option<u64>) -> Result<Value> {
    let mut losses = disk
        .control()
        .power_cut(torn)
        .map_err(|e| HarnessError::new(format!("power cut on {p}: {e}")))?;
    losses.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Value::Array(
        losses
            .iter()
            .map(|l| {
                let r = &l.restored;
                let mut v = json!({
                    "file": l.path.display().to_string(),
                    "lost_bytes": r.lost_bytes,
                    "len_before": r.len_before,
                    "len_after": r.len_after,
                });
                if let Some((offset, kept)) = r.torn {
                    v["torn"] = json!({"offset": offset, "kept": kept});
                }
                v
            })
            .collect(),
    ))
}
