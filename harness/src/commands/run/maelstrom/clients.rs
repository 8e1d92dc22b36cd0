//! The harness's clients of a Maelstrom cluster, `c1`…`cK`: each draws its
//! workload's requests (the `maelstrom` crate's seeded [`Client`]), sends them
//! through the router to its node, waits for the reply (bounded), and records the
//! invocation and its completion in the history. Jepsen's rule for an operation
//! whose outcome is unknown (`info`) holds: its process is in doubt forever, and
//! the client carries on as a new process (`process + K`). Between operations a
//! client pauses for a seeded stagger, so that all of them together keep to
//! `--rate`. After the time limit, [`final_phase`] runs the workload's requests on
//! the healed cluster, one at a time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use checker::history::EventType;
use maelstrom::workload::{Client, FinalPhase, Reply, Request, Workload};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::watch;
use workloads::recorder::Recorder;

use crate::store::History;
use crate::system::maelstrom::Requester;

/// How the clients run.
#[derive(Debug, Clone)]
pub struct Clients {
    pub workload: Workload,
    pub seed: u64,
    pub node_ids: Vec<String>,
    pub count: u32,
    /// Operations per second, over all clients.
    pub rate: f64,
    /// How long a request waits for its reply.
    pub timeout: Duration,
}

impl Clients {
    /// Run every client until `stop`, letting the operations in flight end.
    pub async fn run(
        self,
        requester: Requester,
        history: Arc<History>,
        stop: watch::Receiver<bool>,
    ) {
        let mut tasks = Vec::new();
        for i in 0..self.count {
            let client = self
                .workload
                .client(self.seed, &self.node_ids, i, self.count);
            let me = self.clone();
            let (requester, history, stop) = (requester.clone(), history.clone(), stop.clone());
            tasks.push(tokio::spawn(async move {
                me.client(i, client, requester, history, stop).await
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
    }

    async fn client(
        &self,
        i: u32,
        mut client: Box<dyn Client>,
        requester: Requester,
        history: Arc<History>,
        mut stop: watch::Receiver<bool>,
    ) {
        let name = format!("c{}", i + 1);
        let mut process = u64::from(i);
        // The stagger's own stream: the requests' draws are the workload's.
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream((1 << 33) + u64::from(i));
        let mean = Duration::from_secs_f64(f64::from(self.count) / self.rate.max(1e-3));
        loop {
            let pause = mean.mul_f64(rng.random_range(0.0..2.0));
            if !*stop.borrow() {
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = stop.changed() => {}
                }
            }
            if *stop.borrow() {
                return;
            }
            let request = client.next_request();
            let kind = perform(
                &requester,
                &name,
                &history,
                process,
                &request,
                self.timeout,
                |r, reply| client.complete(r, reply),
            )
            .await;
            if kind == EventType::Info {
                process += u64::from(self.count);
            }
        }
    }
}

/// Send one request, record its invocation and completion; how it ended.
async fn perform(
    requester: &Requester,
    client: &str,
    history: &History,
    process: u64,
    request: &Request,
    timeout: Duration,
    complete: impl FnOnce(&Request, Reply<'_>) -> maelstrom::workload::Completion,
) -> EventType {
    history.record(
        process,
        EventType::Invoke,
        request.f,
        request.value.clone(),
        None,
    );
    let reply = requester
        .call(client, &request.dest, request.body.clone(), timeout, false)
        .await;
    let done = complete(request, reply.as_ref().map_or(Reply::Timeout, Reply::Body));
    history.record(process, done.kind, request.f, done.value, done.error);
    done.kind
}

/// Run `phase` to its end, or until `deadline`: Err says what was left undone.
pub async fn final_phase(
    mut phase: Box<dyn FinalPhase>,
    requester: &Requester,
    history: &History,
    client: &str,
    timeout: Duration,
    deadline: Instant,
) -> Result<(), String> {
    let mut process = history.first_free_process();
    while let Some(request) = phase.next_request() {
        if Instant::now() >= deadline {
            return Err(format!(
                "the final phase did not end in time: {} to {} not sent",
                request.f, request.dest
            ));
        }
        let kind = perform(
            requester,
            client,
            history,
            process,
            &request,
            timeout,
            |r, reply| phase.complete(r, reply),
        )
        .await;
        if kind == EventType::Info {
            process += 1;
        }
    }
    Ok(())
}
