//! Checkpoint files (high watermark per partition, leader-epoch cache), written
//! atomically: temp file, fsync, rename, fsync the directory.

use std::io;
use std::path::Path;

/// Replace `path` with `contents` atomically and durably.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    let _ = (path, contents);
    todo!()
}

/// Write a leader-epoch checkpoint: `(leader_epoch, start_offset)` pairs, ascending.
pub fn write_epochs(path: &Path, epochs: &[(i32, u64)]) -> io::Result<()> {
    let _ = (path, epochs);
    todo!()
}

/// Read a leader-epoch checkpoint (missing file: empty).
pub fn read_epochs(path: &Path) -> io::Result<Vec<(i32, u64)>> {
    let _ = path;
    todo!()
}

/// Write a high-watermark checkpoint for one partition.
pub fn write_high_watermark(path: &Path, hw: u64) -> io::Result<()> {
    let _ = (path, hw);
    todo!()
}

/// Read a high-watermark checkpoint (missing file: 0).
pub fn read_high_watermark(path: &Path) -> io::Result<u64> {
    let _ = path;
    todo!()
}
