//! The `corrupt` fault's damage (docs/faults.md#corruption-on-disk): while a node is
//! down, one of its files — drawn from the fault's seed among every file of its data
//! dir: log segments, indexes, checkpoints, the controller's Raft log — gets bits
//! flipped, is cut short, or has a range zeroed, in its tail or anywhere in it. The
//! damage is written through the node's storage and made durable (a later power cut
//! does not undo it), and recorded precisely: file, offset, length, kind.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::error::{HarnessError, Result};
use crate::proc::Proc;

/// Every non-empty regular file under `dir`, sorted (so a seed draws the same one on
/// the same files), but `address` (where a controller listens, for the harness:
/// rewritten at every start, no state).
fn files(dir: &Path) -> std::io::Result<Vec<(PathBuf, u64)>> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.is_dir() {
                todo.push(entry.path());
            } else if meta.is_file() && meta.len() > 0 && entry.file_name() != "address" {
                out.push((entry.path(), meta.len()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Damage one file of `dir`, process `p`'s, as `seed` draws; what was done, for the
/// history (`{"process", "file", "kind": "bit-flip"|"truncate"|"zero", "offset",
/// "length", "len_before"}`; None: no file to damage).
pub(crate) fn damage(dir: &Path, p: Proc, seed: u64) -> Result<Option<Value>> {
    let io = |e: std::io::Error| HarnessError::new(format!("corrupt {}: {e}", dir.display()));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let candidates = files(dir).map_err(io)?;
    if candidates.is_empty() {
        return Ok(None);
    }
    let (path, len) = candidates[rng.random_range(0..candidates.len())].clone();
    // Half the time in the file's last 4 KiB (a segment's tail, a checkpoint's end),
    // else anywhere.
    let from = if rng.random_bool(0.5) {
        len.saturating_sub(4096)
    } else {
        0
    };
    let offset = rng.random_range(from..len);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .map_err(io)?;
    let (kind, length) = match rng.random_range(0..3) {
        0 => {
            let length = rng.random_range(1..=8u64).min(len - offset);
            let mut bytes = vec![0u8; length as usize];
            file.seek(SeekFrom::Start(offset)).map_err(io)?;
            file.read_exact(&mut bytes).map_err(io)?;
            for b in &mut bytes {
                *b ^= 1 << rng.random_range(0..8);
            }
            file.seek(SeekFrom::Start(offset)).map_err(io)?;
            file.write_all(&bytes).map_err(io)?;
            ("bit-flip", length)
        }
        1 => {
            file.set_len(offset).map_err(io)?;
            ("truncate", len - offset)
        }
        _ => {
            let length = rng.random_range(1..=4096u64).min(len - offset);
            file.seek(SeekFrom::Start(offset)).map_err(io)?;
            file.write_all(&vec![0u8; length as usize]).map_err(io)?;
            ("zero", length)
        }
    };
    file.sync_all().map_err(io)?;
    let rel = path.strip_prefix(dir).unwrap_or(&path);
    Ok(Some(json!({
        "process": p.to_json(),
        "file": rel.display().to_string(),
        "kind": kind,
        "offset": offset,
        "length": length,
        "len_before": len,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_damages_one_file_as_it_records_and_the_same_seed_the_same_way() {
        let make = || {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(dir.path().join("t-0")).unwrap();
            std::fs::write(dir.path().join("t-0/0.log"), vec![0xAAu8; 10_000]).unwrap();
            std::fs::write(dir.path().join("hw"), b"12\n").unwrap();
            std::fs::write(dir.path().join("empty"), b"").unwrap();
            dir
        };
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 0..40 {
            let (a, b) = (make(), make());
            let node = Proc::Node(2);
            let done = damage(a.path(), node, seed).unwrap().expect("a file");
            let again = damage(b.path(), node, seed).unwrap().expect("a file");
            assert_eq!(done, again, "seeded");
            assert_eq!(done["process"], 2);
            let file = a.path().join(done["file"].as_str().unwrap());
            let after = std::fs::read(&file).unwrap();
            let before_len = done["len_before"].as_u64().unwrap();
            let (offset, length) = (
                done["offset"].as_u64().unwrap(),
                done["length"].as_u64().unwrap(),
            );
            assert!(offset < before_len && length > 0, "{done}");
            let original: u8 = if file.ends_with("hw") { 0 } else { 0xAA };
            match done["kind"].as_str().unwrap() {
                "truncate" => assert_eq!(after.len() as u64, offset, "{done}"),
                "zero" => assert!(
                    after[offset as usize..(offset + length) as usize]
                        .iter()
                        .all(|&b| b == 0)
                ),
                "bit-flip" if original == 0xAA => assert!(
                    after[offset as usize..(offset + length) as usize]
                        .iter()
                        .all(|&b| b != 0xAA)
                ),
                "bit-flip" => {}
                other => panic!("{other}"),
            }
            kinds.insert(done["kind"].as_str().unwrap().to_string());
        }
        assert_eq!(kinds.len(), 3);
    }
}
