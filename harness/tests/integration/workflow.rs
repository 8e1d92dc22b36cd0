//! The GitHub Actions workflow `.github/workflows/chaos.yml` is valid YAML of the
//! shape it claims (a build job, a matrix of seeds, JUnit published, run folders
//! kept on failure); its campaign step, run by bash as a runner would run it,
//! calls `watermark` with arguments its command-line parser accepts for every cell
//! of the matrix; and, shortened to one 2-second campaign per workload, it runs
//! for real and leaves the junit.xml the publishing step looks for. The corpus job
//! runs on every event, on a corpus whose every file reads; the exploration job
//! only nightly, and it shrinks each failing run once.
//!
//! Every wait is bounded; each script runs in its own process group, killed whole
//! if it overruns.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::support::{WATERMARK, assert_no_process_left};
use clap::Parser;
use serde_yaml::Value;
use watermark::cli::Cli;

const WORKFLOW: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../.github/workflows/chaos.yml"
);

fn workflow() -> Value {
    let text = std::fs::read_to_string(WORKFLOW).expect("read chaos.yml");
    serde_yaml::from_str(&text).expect("chaos.yml is YAML")
}

fn job<'a>(wf: &'a Value, name: &str) -> &'a Value {
    let job = &wf["jobs"][name];
    assert!(job.is_mapping(), "no job `{name}` in chaos.yml");
    job
}

/// The step of a job whose `name` or `uses` contains `what`.
fn step<'a>(job: &'a Value, what: &str) -> &'a Value {
    job["steps"]
        .as_sequence()
        .expect("steps")
        .iter()
        .find(|s| {
            ["name", "uses"]
                .iter()
                .any(|k| s[*k].as_str().is_some_and(|v| v.contains(what)))
        })
        .unwrap_or_else(|| panic!("no step {what:?}"))
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => panic!("expected a scalar, found {other:?}"),
    }
}

/// Every cell of the job's matrix, as (dimension → value).
fn matrix_cells(job: &Value) -> Vec<BTreeMap<String, String>> {
    let matrix = job["strategy"]["matrix"].as_mapping().expect("a matrix");
    let mut cells = vec![BTreeMap::new()];
    for (k, values) in matrix {
        let values = values.as_sequence().expect("a list of values");
        cells = cells
            .into_iter()
            .flat_map(|cell| {
                values.iter().map(move |v| {
                    let mut c = cell.clone();
                    c.insert(text(k), text(v));
                    c
                })
            })
            .collect();
    }
    cells
}

/// The job's `env` for one matrix cell: `${{ matrix.X }}` is the cell's value,
/// `${{ inputs.X || 'D' }}` the default D (as on a push, without inputs).
fn job_env(job: &Value, cell: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let env = job["env"].as_mapping().expect("the job's env");
    env.iter()
        .map(|(k, v)| {
            let v = text(v);
            let expr = v
                .strip_prefix("${{")
                .and_then(|r| r.strip_suffix("}}"))
                .map(str::trim);
            let value = match expr {
                None => v.clone(),
                Some(e) if e.starts_with("matrix.") => cell
                    .get(&e["matrix.".len()..])
                    .unwrap_or_else(|| panic!("{e}: no such matrix dimension"))
                    .clone(),
                Some(e) => {
                    let default = e
                        .split_once("||")
                        .map(|(_, d)| d.trim().trim_matches('\'').to_string());
                    default.unwrap_or_else(|| panic!("{e}: no default for a push"))
                }
            };
            (text(k), value)
        })
        .collect()
}

/// Run `script` with bash in `dir` (as a runner runs a step: `bash -e`), with
/// `env`, in its own process group, killed whole past `limit`.
fn bash(dir: &Path, script: &str, env: &BTreeMap<String, String>, limit: Duration) -> Output {
    let child = Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
        .current_dir(dir)
        .envs(env)
        .env("GITHUB_RUN_NUMBER", "12")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start bash");
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("wait for bash"),
        Err(_) => {
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
            panic!("the step did not finish within {limit:?}: {script}");
        }
    }
}

#[test]
fn the_workflow_builds_fans_seeds_out_publishes_junit_and_keeps_failed_runs() {
    let wf = workflow();
    assert_eq!(wf["name"], "chaos");
    let build = job(&wf, "build");
    let cmd = text(&step(build, "Build")["run"]);
    assert!(
        cmd.contains("cargo build --release --locked -p watermark -p broker"),
        "{cmd}"
    );
    let campaigns = job(&wf, "campaigns");
    assert_eq!(campaigns["needs"], "build");
    assert_eq!(campaigns["strategy"]["fail-fast"], false);
    let cells = matrix_cells(campaigns);
    assert!(
        cells.len() >= 4,
        "a matrix of seeds over runners: {cells:?}"
    );
    let publish = step(campaigns, "action-junit-report");
    assert_eq!(publish["if"], "always()");
    assert_eq!(publish["with"]["report_paths"], "results/tests-*/junit.xml");
    let keep = step(campaigns, "Keep the run folders");
    assert_eq!(keep["if"], "failure()");
    assert!(text(&keep["uses"]).starts_with("actions/upload-artifact@"));
    assert_eq!(keep["with"]["path"], "results/");
}

#[test]
fn every_cell_of_the_matrix_calls_watermark_with_arguments_it_accepts() {
    let wf = workflow();
    let campaigns = job(&wf, "campaigns");
    let script = text(&step(campaigns, "Campaigns")["run"]);
    let mut seeds = Vec::new();
    for cell in matrix_cells(campaigns) {
        // bin/watermark records its arguments instead of running.
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(
            bin.join("watermark"),
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > args.txt\n",
        )
        .unwrap();
        std::fs::write(bin.join("broker"), "#!/bin/sh\n").unwrap();
        let env = job_env(campaigns, &cell);
        let out = bash(dir.path(), &script, &env, Duration::from_secs(30));
        assert!(out.status.success(), "{cell:?}: {out:?}");
        let args = std::fs::read_to_string(dir.path().join("args.txt")).unwrap();
        let argv: Vec<&str> = std::iter::once("watermark").chain(args.lines()).collect();
        if let Err(e) = Cli::try_parse_from(&argv) {
            panic!("{cell:?}: watermark refuses {argv:?}:\n{e}");
        }
        assert_eq!(argv[1], "run", "{argv:?}");
        let value = |flag: &str| {
            let at = argv.iter().position(|a| *a == flag);
            at.map(|i| argv[i + 1].to_string())
                .unwrap_or_else(|| panic!("{cell:?}: no {flag} in {argv:?}"))
        };
        assert_eq!(value("--workload"), cell["workload"]);
        assert_eq!(value("--test-count"), env["CAMPAIGNS"]);
        seeds.push((cell["workload"].clone(), value("--seed")));
    }
    // Each runner explores its own seeds.
    let mut distinct = seeds.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        seeds.len(),
        "runners share seeds: {seeds:?}"
    );
}

#[test]
fn the_campaign_step_runs_and_leaves_the_junit_the_publisher_reads() {
    let wf = workflow();
    let campaigns = job(&wf, "campaigns");
    let script = text(&step(campaigns, "Campaigns")["run"]);
    let pattern = text(&step(campaigns, "action-junit-report")["with"]["report_paths"]);
    let (prefix, suffix) = pattern.split_once('*').expect("a glob");
    let broker = crate::support::broker_bin();
    let mut workloads: Vec<String> = matrix_cells(campaigns)
        .into_iter()
        .map(|c| c["workload"].clone())
        .collect();
    workloads.dedup();
    for cell in matrix_cells(campaigns) {
        if !workloads.contains(&cell["workload"]) {
            continue;
        }
        workloads.retain(|w| *w != cell["workload"]);
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::copy(WATERMARK, bin.join("watermark")).unwrap();
        std::fs::copy(&broker, bin.join("broker")).unwrap();
        let mut env = job_env(campaigns, &cell);
        // Shortened: one campaign of 2 s.
        env.insert("CAMPAIGNS".into(), "1".into());
        env.insert("TIME_LIMIT".into(), "2".into());
        let out = bash(dir.path(), &script, &env, Duration::from_secs(180));
        assert_no_process_left(dir.path().to_str().unwrap());
        assert!(
            out.status.success(),
            "{cell:?}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let dir_of = |rel: &str| dir.path().join(rel);
        let (parent, stem) = prefix.rsplit_once('/').expect("a folder in the glob");
        let junit: Vec<PathBuf> = std::fs::read_dir(dir_of(parent))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(stem))
            .map(|e| e.path().join(suffix.trim_start_matches('/')))
            .filter(|p| p.is_file())
            .collect();
        assert_eq!(junit.len(), 1, "{pattern} matches {junit:?}");
        let xml = std::fs::read_to_string(&junit[0]).unwrap();
        let report = quick_junit::Report::deserialize_from_str(&xml).expect("junit parses");
        assert!(report.tests > 0, "{xml}");
    }
    assert!(workloads.is_empty(), "not run: {workloads:?}");
}

/// A stub `watermark` in `dir/bin` that records its arguments (one call a line
/// group in args.txt) instead of running.
fn stub_bin(dir: &Path) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        bin.join("watermark"),
        "#!/bin/sh\nprintf '%s\\n' \"$@\" >> args.txt\nprintf -- '--\\n' >> args.txt\n",
    )
    .unwrap();
    std::fs::write(bin.join("broker"), "#!/bin/sh\n").unwrap();
    // Executable, as the job's first step leaves them.
    use std::os::unix::fs::PermissionsExt;
    for name in ["watermark", "broker"] {
        std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// The calls the stub recorded, each accepted by watermark's parser.
fn recorded_calls(dir: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(dir.join("args.txt")).unwrap_or_default();
    let calls: Vec<Vec<String>> = text
        .split("--\n")
        .filter(|c| !c.trim().is_empty())
        .map(|c| {
            std::iter::once("watermark".to_string())
                .chain(c.lines().map(String::from))
                .collect()
        })
        .collect();
    for argv in &calls {
        if let Err(e) = Cli::try_parse_from(argv) {
            panic!("watermark refuses {argv:?}:\n{e}");
        }
    }
    calls
}

#[test]
fn the_corpus_blocks_every_change_and_exploration_runs_nightly_and_shrinks() {
    let wf = workflow();
    let corpus = job(&wf, "corpus");
    assert_eq!(corpus["needs"], "build");
    assert!(corpus.get("if").is_none(), "the corpus runs on every event");
    let publish = step(corpus, "action-junit-report");
    assert_eq!(
        publish["with"]["report_paths"],
        "results/corpus-*/junit.xml"
    );
    let campaigns = job(&wf, "campaigns");
    let only = text(&campaigns["if"]);
    assert!(
        only.contains("schedule") && !only.contains("pull_request"),
        "{only}"
    );

    // The corpus step, as a runner runs it, calls watermark with arguments it takes,
    // on a corpus every file of which reads.
    let dir = tempfile::tempdir().unwrap();
    stub_bin(dir.path());
    let script = text(&step(corpus, "Corpus")["run"]);
    let out = bash(
        dir.path(),
        &script,
        &BTreeMap::new(),
        Duration::from_secs(30),
    );
    assert!(out.status.success(), "{out:?}");
    let calls = recorded_calls(dir.path());
    assert_eq!(calls.len(), 1, "{calls:?}");
    let at = calls[0].iter().position(|a| a == "--corpus").unwrap();
    let folder = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(&calls[0][at + 1]);
    let files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert!(!files.is_empty(), "no case in {}", folder.display());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        watermark::nemesis::schedule_file::ScheduleFile::parse(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }

    // The shrink step shrinks each failing run once (not again through `latest`).
    let dir = tempfile::tempdir().unwrap();
    stub_bin(dir.path());
    let series = dir.path().join("results/tests-queue-x");
    for (name, outcome) in [("queue-a", "invalid"), ("queue-b", "valid")] {
        std::fs::create_dir_all(series.join(name)).unwrap();
        std::fs::write(
            series.join(name).join("run.json"),
            format!("{{\"outcome\": \"{outcome}\"}}"),
        )
        .unwrap();
    }
    std::os::unix::fs::symlink("queue-a", series.join("latest")).unwrap();
    let script = text(&step(campaigns, "Shrink")["run"]);
    let out = bash(
        dir.path(),
        &script,
        &BTreeMap::new(),
        Duration::from_secs(30),
    );
    assert!(out.status.success(), "{out:?}");
    let calls = recorded_calls(dir.path());
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0][1], "shrink");
    assert!(calls[0][2].ends_with("queue-a/"), "{calls:?}");
    let keep = step(campaigns, "minimal schedules");
    assert!(text(&keep["with"]["path"]).ends_with("shrink/minimal-schedule.json"));
}
