//! A campaign as a child process (`watermark run` or `replay`), for the commands
//! that run many (`selftest`, `shrink`): its output in a log file next to its run
//! folder, its exit code, and what its run folder says it found. A child dies with
//! its parent (`PR_SET_PDEATHSIG`), and its brokers with it; asked to stop, it gets
//! SIGTERM (it kills its brokers and exits), and is killed if it takes too long.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use checker::format::{self, Format};
use checker::verdict::Results;

use super::selftest::detection::{Detection, detection};

/// How long a campaign may take beyond its time limit (start, healing, draining and
/// checking are bounded inside `watermark run` well within this) before it is killed.
const CAMPAIGN_GRACE: Duration = Duration::from_secs(600);
/// How long a campaign asked to stop may take before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// Start `watermark` with `args`, its output in `dir/watermark.log`, and wait for it
/// (bounded); its exit code (a campaign killed by a signal is a harness failure).
pub fn spawn_and_wait(
    watermark: &Path,
    dir: &Path,
    args: &[String],
    time_limit: f64,
    stop: &AtomicBool,
) -> Result<i32, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let log_path = dir.join("watermark.log");
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let err = log
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let mut cmd = Command::new(watermark);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(err));
    crate::system::process::die_with_harness(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", watermark.display()))?;
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let deadline = Instant::now() + Duration::from_secs_f64(time_limit) + CAMPAIGN_GRACE;
    let mut asked_to_stop: Option<Instant> = None;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return Ok(status
                    .code()
                    .unwrap_or(crate::exit::Exit::HarnessFailed as i32));
            }
            Ok(None) => {}
            Err(e) => return Err(format!("waiting for the campaign: {e}")),
        }
        if stop.load(Ordering::SeqCst) && asked_to_stop.is_none() {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            asked_to_stop = Some(Instant::now());
        }
        let late = asked_to_stop.is_some_and(|t| t.elapsed() > STOP_GRACE);
        if late || Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the campaign did not end in time and was killed (see {})",
                log_path.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The anomaly kinds of a run folder's results.json and when they were detected
/// (its history.jsonl); what cannot be read is left out.
pub fn read_outcome(folder: &Path) -> (Vec<String>, Option<Detection>) {
    read_outcome_of(folder, None)
}

/// The run's verdict, `results.json` in its `folder` (None: absent or unreadable).
pub fn read_results(folder: &Path) -> Option<Results> {
    std::fs::read_to_string(folder.join("results.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Results>(&t).ok())
}

/// [`read_outcome`], the detection counting only anomalies of `kinds` (all: None).
pub fn read_outcome_of(
    folder: &Path,
    kinds: Option<&[String]>,
) -> (Vec<String>, Option<Detection>) {
    let Some(mut results) = read_results(folder) else {
        return (Vec::new(), None);
    };
    let mut all: Vec<String> = results
        .checkers
        .values()
        .flat_map(|c| &c.anomalies)
        .map(|a| a.kind.to_string())
        .collect();
    all.sort();
    all.dedup();
    if let Some(only) = kinds {
        for c in results.checkers.values_mut() {
            c.anomalies.retain(|a| only.contains(&a.kind.to_string()));
        }
    }
    let detected = std::fs::read_to_string(folder.join("history.jsonl"))
        .ok()
        .and_then(|t| format::parse(&t, Format::Jsonl).ok())
        .and_then(|h| detection(&results, &h.events));
    (all, detected)
}

/// Set `stop` on the first Ctrl-C or SIGTERM (later ones are ignored: the self-test
/// is already stopping).
pub fn stop_on_signal(stop: &'static AtomicBool, who: &'static str) -> Result<(), String> {
    use tokio::signal::unix::{SignalKind, signal};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let (mut int, mut term) = rt
        .block_on(async {
            Ok::<_, std::io::Error>((
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
            ))
        })
        .map_err(|e| format!("cannot handle signals: {e}"))?;
    std::thread::spawn(move || {
        rt.block_on(async {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        });
        stop.store(true, Ordering::SeqCst);
        eprintln!("\n{who}: stopping: the running campaigns are asked to stop");
    });
    Ok(())
}
