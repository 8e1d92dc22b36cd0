//! `watermark selftest --mutants`: the harness's mutation score. Planted bugs were
//! written by the people who tuned the nemesis; mutants are not. cargo-mutants
//! (the crates.io tool) mutates the broker's replication core — a `>` turned `>=`,
//! a function's body replaced by a default, a condition negated — and runs the
//! broker's unit tests on each; the mutants that build and that those tests do NOT
//! catch are the ones a chaos harness must find. Each one is built as a broker of
//! its own and given K default campaigns, and the score is the share caught on at
//! least one seed.
//!
//! `--mutants-from DIR` takes the mutants from a folder of patches instead (a
//! user's own mistakes, `*.diff` or `*.patch`, against the source tree's root).
//!
//! Building: the source tree is copied once into the self-test's folder; each
//! mutant's patch is applied there, the broker built (`cargo build --release -p
//! broker`, incrementally: only the broker crate rebuilds), copied out, and the
//! patch taken back off. The same tree unpatched builds the clean broker, whose
//! campaigns must find nothing — a mutant caught while the clean broker is valid on
//! the same seeds is the harness's doing, not the machine's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Serialize;
use serde_json::Value;

use super::detection::Row;

/// The replication core, mutated unless `--mutant-files` says otherwise.
pub const DEFAULT_FILES: &[&str] = &[
    "broker/src/replica/*.rs",
    "broker/src/node/api/produce.rs",
    "broker/src/node/api/read.rs",
    "broker/src/controller/state/*.rs",
];

/// A mutant: its id in the table (`m001`), the file it changes, what it does, and
/// its patch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mutant {
    pub id: String,
    pub file: String,
    pub description: String,
    pub diff: String,
}

/// The file a unified diff changes (its first `+++ ` line, without `b/`).
fn changed_file(diff: &str) -> Option<String> {
    let line = diff.lines().find(|l| l.starts_with("+++ "))?;
    let path = line[4..].split('\t').next()?.trim();
    Some(path.strip_prefix("b/").unwrap_or(path).to_string())
}

/// The mutants of a folder of patches, in name order.
pub fn from_dir(dir: &Path) -> Result<Vec<Mutant>, String> {
    let read =
        std::fs::read_dir(dir).map_err(|e| format!("--mutants-from {}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = read
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "diff" || x == "patch"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(format!(
            "--mutants-from {}: no *.diff or *.patch file there",
            dir.display()
        ));
    }
    paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let diff = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            let file = changed_file(&diff)
                .ok_or_else(|| format!("{}: not a unified diff (no `+++ ` line)", p.display()))?;
            let description = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(Mutant {
                id: format!("m{:03}", i + 1),
                file,
                description,
                diff,
            })
        })
        .collect()
}

/// The missed mutants of cargo-mutants' `outcomes.json` (in `out`, the folder it
/// wrote): each one's name, file and diff.
pub fn missed(outcomes: &str, out: &Path) -> Result<Vec<Mutant>, String> {
    let v: Value = serde_json::from_str(outcomes)
        .map_err(|e| format!("cargo-mutants' outcomes.json does not read: {e}"))?;
    let list = v["outcomes"]
        .as_array()
        .ok_or("cargo-mutants' outcomes.json has no `outcomes` list")?;
    let mut found = Vec::new();
    for o in list.iter().filter(|o| o["summary"] == "MissedMutant") {
        let m = &o["scenario"]["Mutant"];
        let name = m["name"].as_str().unwrap_or("?").to_string();
        let file = m["file"].as_str().unwrap_or("?").to_string();
        let diff = match o["diff_path"].as_str() {
            Some(p) => std::fs::read_to_string(out.join(p))
                .map_err(|e| format!("the diff of mutant `{name}`: {e}"))?,
            None => return Err(format!("mutant `{name}` has no diff_path")),
        };
        let diff = with_paths(&diff, &file);
        found.push(Mutant {
            id: format!("m{:03}", found.len() + 1),
            file,
            description: name,
            diff,
        });
    }
    Ok(found)
}

/// `diff` with the headers of a patch of `file` from the tree's root (`--- a/FILE`,
/// `+++ b/FILE`, as `patch -p1` takes them): cargo-mutants writes the file on the
/// `---` line without a prefix and the mutation's name on the `+++` line.
fn with_paths(diff: &str, file: &str) -> String {
    let (mut old, mut new) = (false, false);
    let mut out = String::with_capacity(diff.len() + 2 * file.len());
    for line in diff.split_inclusive('\n') {
        if !old && line.starts_with("--- ") {
            old = true;
            out.push_str(&format!("--- a/{file}\n"));
        } else if old && !new && line.starts_with("+++ ") {
            new = true;
            out.push_str(&format!("+++ b/{file}\n"));
        } else {
            out.push_str(line);
        }
    }
    out
}

/// Run cargo-mutants on `files` of the broker in `source` (its unit tests,
/// `--lib`), its output in `out`; the mutants its tests missed.
pub fn surviving(
    source: &Path,
    files: &[String],
    out: &Path,
    jobs: u32,
) -> Result<Vec<Mutant>, String> {
    let mut cmd = Command::new(cargo());
    cmd.args(["mutants", "--package", "broker", "--no-shuffle"]);
    for f in files {
        cmd.args(["--file", f]);
    }
    cmd.arg("--jobs").arg(jobs.max(1).to_string());
    cmd.arg("--output").arg(out);
    // The unit tests only, built as well as run: after `--`, cargo-mutants would
    // still build (and link) every integration test for each mutant.
    cmd.arg("--cargo-arg=--lib");
    cmd.current_dir(source);
    let status = cmd.status().map_err(|e| {
        format!("cannot run `cargo mutants` ({e}): install it with `cargo install cargo-mutants`")
    })?;
    // cargo-mutants exits 2 when some mutants were missed, 3 on timeouts: both
    // leave their outcomes.
    if !matches!(status.code(), Some(0 | 2 | 3)) {
        return Err(format!(
            "`cargo mutants` failed ({status}); is it installed (`cargo install cargo-mutants`)?"
        ));
    }
    let dir = out.join("mutants.out");
    let text = std::fs::read_to_string(dir.join("outcomes.json"))
        .map_err(|e| format!("{}: {e}", dir.join("outcomes.json").display()))?;
    missed(&text, &dir)
}

/// The mutants cargo-mutants would generate on `files`, without testing any.
pub fn listed(source: &Path, files: &[String]) -> Result<Vec<Mutant>, String> {
    let mut cmd = Command::new(cargo());
    cmd.args(["mutants", "--package", "broker", "--list", "--json"]);
    for f in files {
        cmd.args(["--file", f]);
    }
    let out = cmd
        .current_dir(source)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| {
            format!(
                "cannot run `cargo mutants` ({e}): install it with `cargo install cargo-mutants`"
            )
        })?;
    if !out.status.success() {
        return Err(format!("`cargo mutants --list` failed ({})", out.status));
    }
    let v: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("`cargo mutants --list --json` does not read: {e}"))?;
    Ok(v.as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, m)| Mutant {
            id: format!("m{:03}", i + 1),
            file: m["file"].as_str().unwrap_or("?").to_string(),
            description: m["name"].as_str().unwrap_or("?").to_string(),
            diff: m["diff"].as_str().unwrap_or("").to_string(),
        })
        .collect())
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// The source tree watermark was built from, if it is still there; else the
/// current directory if it is one.
pub fn default_source() -> Option<PathBuf> {
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cwd = std::env::current_dir().ok()?;
    [built, cwd]
        .into_iter()
        .find(|d| d.join("Cargo.toml").is_file() && d.join("broker/Cargo.toml").is_file())
}

/// Copy `from` to `to`, leaving out build output and run folders.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        let skip = matches!(
            name.to_str(),
            Some("target" | "results" | ".git" | "mutants.out" | "mutants.out.old")
        );
        if skip {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if entry.file_type()?.is_dir() {
            copy_tree(&src, &dst)?;
        } else if entry.file_type()?.is_file() {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// A copy of the source tree in which each mutant's broker is built.
pub struct Workshop {
    tree: PathBuf,
    target: PathBuf,
    bins: PathBuf,
}

impl Workshop {
    /// Copy `source` under `root`. Its paths are absolute: cargo runs in the tree,
    /// and a relative target directory would land inside it.
    pub fn new(source: &Path, root: &Path) -> Result<Workshop, String> {
        let root = &std::path::absolute(root).map_err(|e| format!("{}: {e}", root.display()))?;
        let tree = root.join("tree");
        copy_tree(source, &tree).map_err(|e| {
            format!(
                "cannot copy {} to {}: {e}",
                source.display(),
                tree.display()
            )
        })?;
        let bins = root.join("brokers");
        std::fs::create_dir_all(&bins).map_err(|e| format!("{}: {e}", bins.display()))?;
        Ok(Workshop {
            tree,
            target: root.join("target"),
            bins,
        })
    }

    /// Build the broker of the tree as it is, as `bins/<name>`.
    fn build(&self, name: &str) -> Result<PathBuf, String> {
        let out = Command::new(cargo())
            .args([
                "build",
                "--release",
                "--quiet",
                "-p",
                "broker",
                "--bin",
                "broker",
            ])
            .env("CARGO_TARGET_DIR", &self.target)
            .current_dir(&self.tree)
            .stdout(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run cargo build: {e}"))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let first = err.lines().find(|l| l.starts_with("error")).unwrap_or("");
            return Err(format!("does not build: {first}"));
        }
        let bin = self.bins.join(name);
        std::fs::copy(self.target.join("release/broker"), &bin)
            .map_err(|e| format!("cannot copy the broker it built: {e}"))?;
        Ok(bin)
    }

    /// Apply (or with `reverse`, take off) a patch to the tree: tried first, so a
    /// patch that does not apply leaves the tree as it was.
    fn patch(&self, diff: &str, reverse: bool) -> Result<(), String> {
        run_patch(&self.tree, diff, reverse, true)?;
        run_patch(&self.tree, diff, reverse, false)
    }

    /// The clean broker of the tree.
    pub fn clean(&self) -> Result<PathBuf, String> {
        self.build("clean")
    }

    /// `mutant`'s broker: patched, built, unpatched.
    pub fn mutant(&self, mutant: &Mutant) -> Result<PathBuf, String> {
        self.patch(&mutant.diff, false)?;
        let built = self.build(&mutant.id);
        self.patch(&mutant.diff, true)
            .map_err(|e| format!("cannot take {}'s patch off again: {e}", mutant.id))?;
        built
    }
}

/// Run `patch` on `tree` with `diff` (`reverse`: take it off; `dry_run`: only try):
/// exactly the changes of the diff, never a reversed one taken for it.
fn run_patch(tree: &Path, diff: &str, reverse: bool, dry_run: bool) -> Result<(), String> {
    use std::io::Write;
    let mut cmd = Command::new("patch");
    cmd.args([
        "-p1",
        "--batch",
        "--quiet",
        "--no-backup-if-mismatch",
        "--reject-file=-",
    ]);
    if dry_run {
        cmd.arg("--dry-run");
    }
    if reverse {
        cmd.arg("--reverse");
    } else {
        cmd.arg("--forward");
    }
    let mut child = cmd
        .current_dir(tree)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run `patch` ({e}): it is needed to apply mutants"))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(diff.as_bytes());
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "the patch does not apply: {}",
            String::from_utf8_lossy(&out.stdout).trim()
        ))
    }
}

/// How one mutant fared: its campaigns' row, or why it could not run.
pub struct Fared<'a> {
    pub mutant: &'a Mutant,
    pub row: Result<&'a Row, &'a str>,
}

/// The score: (caught on at least one seed, mutants run).
pub fn score(fared: &[Fared<'_>]) -> (usize, usize) {
    let run: Vec<&Row> = fared.iter().filter_map(|f| f.row.ok()).collect();
    (
        run.iter().filter(|r| r.figures().caught > 0).count(),
        run.len(),
    )
}

/// The table: one line per mutant, then the score per file and in all.
pub fn table(fared: &[Fared<'_>], clean: Option<&Row>) -> String {
    let mut out = String::from(
        "mutant  caught  file                                   mutation / anomaly kinds\n",
    );
    for f in fared {
        let (caught, kinds) = match f.row {
            // How the campaigns ended beside what they found: a campaign that could
            // not judge its history (unknown: e.g. no partition served once every
            // fault was healed) is not a catch, but not a pass either.
            Ok(r) => {
                let fig = r.figures();
                let kinds = r.kinds().join(", ");
                let said = if kinds.is_empty() {
                    r.verdicts()
                } else {
                    format!("{}: {kinds}", r.verdicts())
                };
                (format!("{}/{}", fig.caught, fig.runs), said)
            }
            Err(why) => ("-".to_string(), why.to_string()),
        };
        out.push_str(&format!(
            "{:<7} {:<7} {:<38} {}\n        {:<46} {}\n",
            f.mutant.id, caught, f.mutant.file, f.mutant.description, "", kinds
        ));
    }
    let mut files: Vec<&str> = fared.iter().map(|f| f.mutant.file.as_str()).collect();
    files.sort();
    files.dedup();
    for file in files {
        let of: Vec<Fared<'_>> = fared
            .iter()
            .filter(|f| f.mutant.file == file)
            .map(|f| Fared {
                mutant: f.mutant,
                row: f.row,
            })
            .collect();
        let (c, n) = score(&of);
        out.push_str(&format!("score {file}: {c} of {n}\n"));
    }
    let (c, n) = score(fared);
    let pct = if n > 0 {
        100.0 * c as f64 / n as f64
    } else {
        0.0
    };
    out.push_str(&format!(
        "mutation score: {c} of {n} mutants caught on at least one seed ({pct:.0}%)\n"
    ));
    if let Some(clean) = clean {
        let fig = clean.figures();
        out.push_str(&format!(
            "clean broker: {} of {} campaigns valid\n",
            fig.valid, fig.runs
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diffs_file_is_its_new_side_without_the_prefix() {
        let d = "--- a/broker/src/replica/leader.rs\n+++ b/broker/src/replica/leader.rs\t2026\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(
            changed_file(d).as_deref(),
            Some("broker/src/replica/leader.rs")
        );
        assert_eq!(changed_file("no diff"), None);
    }

    #[test]
    fn a_folder_of_patches_gives_one_mutant_each_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        let diff = |f: &str| format!("--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-x\n+y\n");
        std::fs::write(
            dir.path().join("b-second.patch"),
            diff("broker/src/log/mod.rs"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("a-first.diff"),
            diff("broker/src/replica/mod.rs"),
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a patch").unwrap();
        let m = from_dir(dir.path()).unwrap();
        let got: Vec<(&str, &str, &str)> = m
            .iter()
            .map(|m| (m.id.as_str(), m.file.as_str(), m.description.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("m001", "broker/src/replica/mod.rs", "a-first"),
                ("m002", "broker/src/log/mod.rs", "b-second"),
            ]
        );
        std::fs::write(dir.path().join("c.diff"), "garbage").unwrap();
        let e = from_dir(dir.path()).unwrap_err();
        assert!(
            e.contains("c.diff") && e.contains("not a unified diff"),
            "{e}"
        );
        let empty = tempfile::tempdir().unwrap();
        assert!(from_dir(empty.path()).unwrap_err().contains("no *.diff"));
    }

    #[test]
    fn only_the_mutants_the_unit_tests_missed_are_kept_with_their_diffs() {
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir(out.path().join("diff")).unwrap();
        // As cargo-mutants writes it: the file without a prefix, then the mutation.
        let written = "--- broker/src/replica/leader.rs\n+++ replace > with >= in ack\n@@ -1 +1 @@\n-a > b\n+a >= b\n";
        std::fs::write(out.path().join("diff/m1.diff"), written).unwrap();
        let outcomes = serde_json::json!({"outcomes": [
            {"scenario": "Baseline", "summary": "Success"},
            {"scenario": {"Mutant": {"name": "replace > with >= in ack", "file": "broker/src/replica/leader.rs"}},
             "summary": "MissedMutant", "diff_path": "diff/m1.diff"},
            {"scenario": {"Mutant": {"name": "delete !", "file": "broker/src/replica/leader.rs"}},
             "summary": "CaughtMutant", "diff_path": "diff/m2.diff"},
            {"scenario": {"Mutant": {"name": "x", "file": "y"}}, "summary": "Unviable"},
        ]});
        let m = missed(&outcomes.to_string(), out.path()).unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].description, "replace > with >= in ack");
        // Headers `patch -p1` applies from the tree's root.
        assert_eq!(
            m[0].diff,
            "--- a/broker/src/replica/leader.rs\n+++ b/broker/src/replica/leader.rs\n@@ -1 +1 @@\n-a > b\n+a >= b\n"
        );
        assert_eq!(
            changed_file(&m[0].diff).as_deref(),
            Some("broker/src/replica/leader.rs")
        );
        assert!(missed("{}", out.path()).unwrap_err().contains("outcomes"));
    }

    /// Every shipped mutant applies to the source tree it ships with, as a run
    /// reads and applies it: the broker's code moves on, and an example that no
    /// longer applies is left out of a user's run as "the patch does not apply"
    /// instead of building a broker.
    #[test]
    fn every_shipped_mutant_applies_to_the_source_tree() {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
        let mut checked = 0;
        for dir in ["examples/mutants", "examples/more-mutants"] {
            for m in from_dir(&root.join(dir)).unwrap() {
                if let Err(e) = run_patch(root, &m.diff, false, true) {
                    panic!("{dir}: {}: {e}", m.description);
                }
                checked += 1;
            }
        }
        assert_eq!(checked, 8, "four mutants in each folder");
    }

    #[test]
    fn a_workshop_applies_a_patch_and_takes_it_off_again() {
        let src = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(src.path().join("broker/src")).unwrap();
        std::fs::write(
            src.path().join("broker/src/a.rs"),
            "fn a() -> u32 {\n    1\n}\n",
        )
        .unwrap();
        std::fs::create_dir_all(src.path().join("target/junk")).unwrap();
        let root = tempfile::tempdir().unwrap();
        let w = Workshop::new(src.path(), root.path()).unwrap();
        assert!(
            !w.tree.join("target").exists(),
            "build output is not copied"
        );
        // A mutant's diff as cargo-mutants writes it, read as `missed` reads it.
        let diff = &with_paths(
            "--- broker/src/a.rs\n+++ replace a -> u32 with 2\n@@ -1,3 +1,3 @@\n fn a() -> u32 {\n-    1\n+    2\n }\n",
            "broker/src/a.rs",
        );
        w.patch(diff, false).unwrap();
        let file = w.tree.join("broker/src/a.rs");
        assert!(std::fs::read_to_string(&file).unwrap().contains('2'));
        w.patch(diff, true).unwrap();
        assert!(std::fs::read_to_string(&file).unwrap().contains('1'));
        let e = w.patch(
            "--- a/broker/src/a.rs\n+++ b/broker/src/a.rs\n@@ -1 +1 @@\n-nothing\n+else\n",
            false,
        );
        assert!(e.unwrap_err().contains("does not apply"));
    }

    /// `watermark selftest` names its folder relative to where it runs, and cargo
    /// runs in the tree: the workshop's own paths must not depend on either.
    #[test]
    fn a_workshop_under_a_relative_folder_keeps_absolute_paths() {
        let src = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(src.path().join("broker")).unwrap();
        let dir = tempfile::tempdir_in(".").unwrap();
        let cwd = std::env::current_dir().unwrap();
        let root = dir.path().strip_prefix(&cwd).unwrap();
        assert!(root.is_relative(), "{}", root.display());
        let w = Workshop::new(src.path(), root).unwrap();
        for p in [&w.tree, &w.target, &w.bins] {
            assert!(p.is_absolute(), "{}", p.display());
        }
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap();
        assert_eq!(canonical(w.bins.parent().unwrap()), canonical(dir.path()));
    }

    #[test]
    fn the_table_says_how_each_mutants_campaigns_ended() {
        use super::super::detection::tests::campaign;
        let mutant = |id: &str| Mutant {
            id: id.into(),
            file: "broker/src/replica/leader.rs".into(),
            description: format!("{id}-change"),
            diff: String::new(),
        };
        let (m1, m2) = (mutant("m001"), mutant("m002"));
        let caught = Row {
            bug: "m001".into(),
            campaigns: vec![campaign(1, None, &["lost-write"]), campaign(0, None, &[])],
        };
        let unjudged = Row {
            bug: "m002".into(),
            campaigns: vec![campaign(2, None, &[]), campaign(2, None, &[])],
        };
        let fared = [
            Fared {
                mutant: &m1,
                row: Ok(&caught),
            },
            Fared {
                mutant: &m2,
                row: Ok(&unjudged),
            },
        ];
        let t = table(&fared, None);
        assert!(t.contains("1 invalid, 1 valid: lost-write"), "{t}");
        assert!(t.contains("2 unknown"), "{t}");
        assert!(t.contains("mutation score: 1 of 2"), "{t}");
    }
}
