//! A node's storage seen from outside (docs/faults.md#the-fault-filesystem): its
//! fault filesystem, written back as the kernel would, the power cuts worked on it
//! and what each lost, for the history.
//! Shared by every system under test — our brokers and the nodes of a `--bin`
//! system.

use serde_json::{Value, json};

use crate::error::{HarnessError, Result};
use crate::proc::Proc;

/// How long a write stays unsynced before the fault filesystem counts it on disk,
/// as Linux writes back pages dirty for more than `vm.dirty_expire_centisecs` (30 s
/// by default): a power cut loses what a process wrote and did not fsync in about
/// the last half minute, not everything it ever wrote.
pub(crate) const WRITEBACK: std::time::Duration = std::time::Duration::from_secs(30);

/// Mount a fault filesystem over `dir/disk` at `dir/data`, written back as the
/// kernel would ([`WRITEBACK`]).
pub(crate) fn mount(dir: &std::path::Path) -> Result<faultfs::Mount> {
    let mount = faultfs::Mount::new(&dir.join("disk"), &dir.join("data"))
        .map_err(|e| HarnessError::new(e.to_string()))?;
    mount.control().write_back_after(Some(WRITEBACK));
    Ok(mount)
}

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
