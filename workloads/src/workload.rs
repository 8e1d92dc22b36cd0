//! A workload as a value: the topics its clients use, the clients themselves, and
//! what the end of a run adds to the history. A campaign asks these of whichever
//! workload it runs, so it never needs to know which one it is. Which checker judges
//! which operations is the harness's to say, as `watermark check` judges a run
//! folder without running anything.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;

use crate::recorder::Recorder;

/// A future a workload hands back, boxed so workloads can be chosen at run time.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The outcome of steps run side by side: Ok when every one was, else every error,
/// joined.
pub fn all_done(results: impl IntoIterator<Item = Result<(), String>>) -> Result<(), String> {
    let failed: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; "))
    }
}

/// What a campaign needs of a workload.
pub trait Workload: Send + Sync {
    /// The topics its clients use; the harness creates them before the clients
    /// start. The first is the one faults aimed at a partition's leader read.
    fn topics(&self) -> &'static [&'static str];

    /// The topics whose checker sees every acknowledged record that is lost,
    /// whatever comes after it (the queue's: every acknowledged send must be read),
    /// unlike a register's, where a lost write overwritten before anyone read it
    /// goes unseen. Faults that lose records aim at these more.
    fn lossless_topics(&self) -> &'static [&'static str] {
        &[]
    }

    /// The topics whose reads are linearizable, so that a read a deposed leader
    /// answers from its stale state is an anomaly its checker finds (the register's,
    /// read with `?linearizable=true`). Faults that depose a leader while clients
    /// still reach it aim at these more.
    fn linearizable_topics(&self) -> &'static [&'static str] {
        &[]
    }

    /// Run the clients, recording every operation, until `stop` turns true; the
    /// operations in flight then complete (bounded by the client's request timeout),
    /// so no invocation is left open.
    fn run(
        &self,
        recorder: Arc<dyn Recorder>,
        stop: watch::Receiver<bool>,
    ) -> BoxFuture<'static, ()>;

    /// What the end of the run adds to the history once the cluster has healed and
    /// converged, in words for the progress display; `None` if nothing.
    fn final_step(&self) -> Option<&'static str> {
        None
    }

    /// What the first look adds to the history, in words for the progress display;
    /// `None` if the workload takes none (then [`Workload::first_look`] is not
    /// called).
    fn first_look_step(&self) -> Option<&'static str> {
        None
    }

    /// A first look at the healed, converged cluster before the harness moves any
    /// partition's leadership for the final step, recording as process numbers from
    /// `first_free_process` on, until `deadline` (the register: its final reads, as
    /// the final step does them again after the move — once from leaders the faults
    /// left, once from leaders of an epoch no client wrote in). Err: what could not
    /// be done. Nothing by default.
    fn first_look<'a>(
        &'a self,
        recorder: &'a dyn Recorder,
        first_free_process: u64,
        deadline: Instant,
    ) -> BoxFuture<'a, Result<(), String>> {
        let _ = (recorder, first_free_process, deadline);
        Box::pin(async { Ok(()) })
    }

    /// Perform the final step, recording as process numbers from
    /// `first_free_process` on (numbers no client used), until `deadline`. Err says
    /// what could not be done: the end of the run was then incomplete.
    fn finish<'a>(
        &'a self,
        recorder: &'a dyn Recorder,
        first_free_process: u64,
        deadline: Instant,
    ) -> BoxFuture<'a, Result<(), String>> {
        let _ = (recorder, first_free_process, deadline);
        Box::pin(async { Ok(()) })
    }

    /// Whether the replicas' final logs take part in the verdict (for divergence,
    /// and the queue's lost writes). For the queue, an incomplete end of the run
    /// (no convergence, a partial final step, a missing log) leaves lost writes
    /// possible, and caps a clean verdict at unknown.
    fn judges_final_logs(&self) -> bool;
}
