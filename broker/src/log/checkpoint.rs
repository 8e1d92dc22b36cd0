//! Checkpoint files (high watermark per partition, leader-epoch cache), written
//! atomically: temp file, fsync, rename, fsync the directory.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

/// Replace `path` with `contents` atomically and durably.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "checkpoint path has no file name",
        )
    })?;
    let mut tmp_name = name.to_os_string();
    tmp_name.push(".tmp");
    let tmp = dir.join(tmp_name);
    {
        let mut f = File::create(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    File::open(dir)?.sync_all()
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
