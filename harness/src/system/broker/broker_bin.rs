//! Finding the `broker` executable a campaign runs: the one given with
//! `--broker-bin`, else the one cargo built next to `watermark` (or next to a test
//! binary's `deps/` folder). When watermark runs from its source tree and no broker
//! was built yet — `cargo run --bin watermark` builds only watermark — it builds
//! one with cargo, in the same profile, so the README's first command works on a
//! fresh clone.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{HarnessError, Result};

/// The broker executable to run.
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(path) = explicit {
        return if is_executable(path) {
            Ok(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()))
        } else {
            Err(HarnessError::new(format!(
                "--broker-bin {}: no executable file there (build it with `cargo build -p broker`)",
                path.display()
            )))
        };
    }
    let exe = std::env::current_exe()
        .map_err(|e| HarnessError::new(format!("cannot find watermark's own executable: {e}")))?;
    let candidates = beside(&exe);
    if let Some(found) = candidates.iter().find(|p| is_executable(p)) {
        return Ok(found.clone());
    }
    // Built by cargo from a source tree that is still there (not an installed copy
    // in ~/.cargo/bin): build the broker too.
    if let Some(workspace) = source_tree()
        && in_target_dir(&exe)
    {
        build(&workspace, &exe)?;
        if let Some(found) = candidates.iter().find(|p| is_executable(p)) {
            return Ok(found.clone());
        }
    }
    Err(HarnessError::new(format!(
        "no broker executable found (looked at {}); build it with `cargo build -p broker` \
         or pass --broker-bin PATH",
        candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// Where cargo puts `broker` relative to a binary of the same build: the same
/// directory, or its parent for test binaries in `target/<profile>/deps/`.
fn beside(exe: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(dir) = exe.parent() {
        out.push(dir.join("broker"));
        if dir.file_name().is_some_and(|n| n == "deps")
            && let Some(up) = dir.parent()
        {
            out.push(up.join("broker"));
        }
    }
    out
}

/// Whether `exe` lies in a cargo target directory (one of its folders holds the
/// `CACHEDIR.TAG` cargo writes there), rather than where `cargo install` put it.
fn in_target_dir(exe: &Path) -> bool {
    exe.ancestors()
        .skip(1)
        .any(|d| d.join("CACHEDIR.TAG").is_file())
}

/// The cargo workspace watermark was compiled from, if it is still there.
fn source_tree() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = manifest.parent()?;
    (workspace.join("Cargo.toml").is_file() && workspace.join("broker").is_dir())
        .then(|| workspace.to_path_buf())
}

/// `cargo build -p broker` in the profile `exe` was built with.
fn build(workspace: &Path, exe: &Path) -> Result<()> {
    let profile = exe
        .ancestors()
        .skip(1)
        .find_map(|dir| {
            let name = dir.file_name()?.to_str()?;
            (name != "deps").then(|| name.to_string())
        })
        .unwrap_or_else(|| "debug".to_string());
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(workspace).args(["build", "-p", "broker"]);
    match profile.as_str() {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    // Build into the target directory watermark itself lives in.
    if let Some(target) = exe
        .ancestors()
        .find(|d| d.file_name().is_some_and(|n| n == profile.as_str()))
        .and_then(Path::parent)
    {
        cmd.env("CARGO_TARGET_DIR", target);
    }
    eprintln!(
        "watermark: no broker executable beside {}; building it: cargo build -p broker ({profile})",
        exe.display()
    );
    let status = cmd.status().map_err(|e| {
        HarnessError::new(format!(
            "cannot run {} to build the broker: {e}; build it with `cargo build -p broker`",
            Path::new(&cargo).display()
        ))
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(HarnessError::new(format!(
            "`cargo build -p broker` failed ({status}); fix the build or pass --broker-bin PATH"
        )))
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_binaries_look_in_the_profile_directory_too() {
        let c = beside(Path::new("/w/target/debug/deps/run-1234"));
        assert_eq!(
            c,
            [
                PathBuf::from("/w/target/debug/deps/broker"),
                PathBuf::from("/w/target/debug/broker")
            ]
        );
        assert_eq!(
            beside(Path::new("/w/target/release/watermark")),
            [PathBuf::from("/w/target/release/broker")]
        );
    }

    #[test]
    fn only_a_binary_in_a_cargo_target_directory_builds_its_broker() {
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("target/debug");
        std::fs::create_dir_all(profile.join("deps")).unwrap();
        assert!(!in_target_dir(&profile.join("watermark")));
        std::fs::write(dir.path().join("target/CACHEDIR.TAG"), "").unwrap();
        assert!(in_target_dir(&profile.join("watermark")));
        assert!(in_target_dir(&profile.join("deps/run-1234")));
        assert!(!in_target_dir(&dir.path().join("bin/watermark")));
    }

    #[test]
    fn a_missing_explicit_binary_says_so() {
        let e = locate(Some(Path::new("/nonexistent/broker"))).unwrap_err();
        assert!(e.0.contains("/nonexistent/broker"), "{e}");
    }
}
