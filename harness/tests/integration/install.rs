//! An installed `watermark` (as `cargo install` leaves it: a lone binary, no cargo
//! target directory around it) finds the `broker` installed beside it, takes
//! `--broker-bin`, and without either says what to do instead of trying to build.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::{WATERMARK, assert_no_process_left, read_json, run_folder};

/// Run the installed copy `bin` with `args`, bounded.
fn run(bin: &Path, args: &[&str]) -> std::process::Output {
    let child = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the installed watermark");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("the installed watermark did not finish in 120 s");
        }
    }
}

const SHORT: [&str; 11] = [
    "run",
    "-n",
    "1",
    "--partitions",
    "1",
    "--nemesis",
    "none",
    "-t",
    "2",
    "--seed",
    "4",
];

#[test]
fn an_installed_watermark_finds_the_broker_beside_it_or_says_what_to_do() {
    let root = tempfile::tempdir().unwrap();
    let bin = root.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let watermark = bin.join("watermark");
    std::fs::copy(WATERMARK, &watermark).unwrap();
    let results = root.path().join("results");
    let results_s = results.to_str().unwrap();

    // No broker anywhere near: exit 3, naming --broker-bin, without building.
    let mut args = SHORT.to_vec();
    args.extend(["--results", results_s]);
    let out = run(&watermark, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("--broker-bin"), "{stderr}");
    assert!(!stderr.contains("building it"), "{stderr}");

    // --broker-bin, from anywhere.
    let broker = crate::support::broker_bin();
    let mut with_bin = args.clone();
    with_bin.extend(["--broker-bin", broker.to_str().unwrap()]);
    let out = run(&watermark, &with_bin);
    assert_eq!(out.status.code(), Some(0), "{out:?}");

    // The broker installed beside it.
    std::fs::copy(&broker, bin.join("broker")).unwrap();
    let out = run(&watermark, &args);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let run_json = read_json(&run_folder(&results).join("run.json"));
    assert_eq!(
        run_json["broker_bin"].as_str().map(Path::new),
        Some(bin.join("broker").canonicalize().unwrap().as_path())
    );
    assert_no_process_left(results_s);
}
