//! `--bin`: the executable of the user's Maelstrom nodes, checked before anything
//! starts — it exists, is a file, may be executed (a script with a shebang is
//! fine: the kernel runs its interpreter) — and identified in run.json by its
//! absolute path and the SHA-256 of its bytes, so a run says which build it tested.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The executable as run.json records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bin {
    pub path: PathBuf,
    pub sha256: String,
}

/// Check `path` and hash it (Err: why it cannot run, for a usage error).
pub fn resolve(path: &Path) -> Result<Bin, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("--bin {shown}: no such file"),
        _ => format!("--bin {shown}: {e}"),
    })?;
    if !meta.is_file() {
        return Err(format!("--bin {shown}: not a file"));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(format!(
            "--bin {shown}: not executable (chmod +x it, or run its interpreter: \
             --bin /usr/bin/python3 --bin-arg {shown})"
        ));
    }
    let abs = std::fs::canonicalize(path).map_err(|e| format!("--bin {shown}: {e}"))?;
    Ok(Bin {
        sha256: sha256_of(&abs).map_err(|e| format!("--bin {shown}: cannot read it: {e}"))?,
        path: abs,
    })
}

fn sha256_of(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_is_checked_and_hashed() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("node.sh");
        std::fs::write(&script, "abc").unwrap();
        let e = resolve(&script).unwrap_err();
        assert!(e.contains("not executable"), "{e}");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let bin = resolve(&script).unwrap();
        assert_eq!(
            bin.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(bin.path.is_absolute());
        let e = resolve(&dir.path().join("missing")).unwrap_err();
        assert!(e.contains("no such file"), "{e}");
        assert!(resolve(dir.path()).unwrap_err().contains("not a file"));
    }
}
