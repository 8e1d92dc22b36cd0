//! Durable replacement of the broker's small state files — the partitions' checkpoints
//! (high watermark, leader-epoch cache), the controller's state, a process's announced
//! address and kept broker epoch — in one place, so each has the same guarantee: a
//! crash at any instant leaves either the old file or the new one, never a torn mix,
//! and once the call returns the new one survives a power cut.
//!
//! The recipe: write `NAME.tmp` beside the file, fsync it, rename it over the file,
//! fsync the directory (the rename is durable only then). A crash may leave a stray
//! `NAME.tmp`; readers never look at it and the next write replaces it.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use crate::disk::DiskFaults;

/// One lock per file being written, so two writers of the same file in this process
/// cannot interleave on its `.tmp`.
static WRITERS: LazyLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Replace `path` with `contents`, atomically and durably (see the module doc).
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    write_atomic_with(path, contents, &DiskFaults::default())
}

/// [`write_atomic`] on a disk that may be told to fail ([`DiskFaults`]): a node's
/// checkpoints. Whatever fails, the old file is left whole.
pub fn write_atomic_with(path: &Path, contents: &[u8], faults: &DiskFaults) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Some(name) = path.file_name() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a file path", path.display()),
        ));
    };
    let mut tmp_name = name.to_os_string();
    tmp_name.push(".tmp");
    let tmp = dir.join(tmp_name);
    let writer = WRITERS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(path.to_path_buf())
        .or_default()
        .clone();
    let _one_at_a_time = writer.lock().unwrap_or_else(|p| p.into_inner());
    {
        faults.check_create()?;
        let mut f = File::create(&tmp)?;
        f.write_all(contents)?;
        faults.sync_data(&f)?;
        f.sync_all()?;
    }
    faults.check_delete()?;
    fs::rename(&tmp, path)?;
    faults.sync_data(&File::open(dir)?)?;
    sync_dir(dir)
}

/// fsync a directory, so that the files created, renamed or deleted in it stay so.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temp_file() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("state");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert!(!d.path().join("state.tmp").exists());
    }

    #[test]
    fn a_crash_leftover_is_replaced() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("state");
        fs::write(d.path().join("state.tmp"), "torn").unwrap();
        write_atomic(&path, b"whole").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"whole");
        assert!(!d.path().join("state.tmp").exists());
    }

    #[test]
    fn a_missing_directory_is_an_error_and_nothing_is_written() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("no-such-dir").join("state");
        assert!(write_atomic(&path, b"x").is_err());
        assert!(!path.exists());
    }

    #[test]
    fn concurrent_writers_of_one_file_each_write_a_whole_file() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("state");
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for i in 0..25 {
                        write_atomic(&path, format!("writer {w} write {i}").as_bytes()).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let text = fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("writer ") && text.ends_with(" write 24"),
            "{text}"
        );
    }
}
