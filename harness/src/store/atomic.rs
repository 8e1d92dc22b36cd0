//! The one way the harness writes a whole file: a temporary file in the same
//! directory, fsync, rename over the target, fsync the directory. A reader (`watermark
//! serve`, `check`, `report`) never sees half a file, and a crash of the harness or of
//! the machine leaves the old file or the new one, never a torn one.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde::Serialize;

use crate::error::{HarnessError, Result};

/// Replace `path` with `bytes`, durably and atomically (see the module doc). The file
/// gets the permissions `File::create` would give it (0666 less the umask).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", name.as_deref().unwrap_or("file")))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()
}

/// Write `value` as pretty JSON (and a final newline) into `path` with
/// [`write_atomic`]; the error names the file.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| HarnessError::new(format!("cannot encode {}: {e}", path.display())))?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
        .map_err(|e| HarnessError::new(format!("cannot write {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_no_temporary_file_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        write_json(&path, &serde_json::json!({"valid": true})).unwrap();
        write_atomic(&path, b"second\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["results.json"]);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o600, 0o600, "readable and writable by its owner");
    }

    #[test]
    fn a_file_in_a_missing_directory_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gone").join("run.json");
        let e = write_json(&path, &1).unwrap_err();
        assert!(e.0.contains("gone/run.json"), "{e}");
    }
}
