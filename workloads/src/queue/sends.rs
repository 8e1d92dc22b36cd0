//! How a send is recorded: each value one `send` operation of its own process —
//! the invocations as the request leaves, the completions once every attempt of
//! it is done (docs/history.md). A batch of values succeeds or fails as one, so
//! its values' completions are alike but for the value and its offset.

use serde_json::json;

use checker::history::EventType;

use crate::client::Outcome;
use crate::pacing::Ended;
use crate::producer::Sent;
use crate::recorder::Recorder;

/// Send one value: the invocation now, the completion once `sent` (every attempt
/// of the send) is done.
pub(super) async fn record_send(
    recorder: &dyn Recorder,
    process: u64,
    partition: u32,
    value: u64,
    sent: impl std::future::Future<Output = Sent>,
) -> Ended {
    let batch = [(process, value)];
    invoke_batch(recorder, &batch, partition);
    let sent = sent.await;
    complete_batch(recorder, &batch, partition, &sent);
    ended(&sent)
}

/// The invocations of a batch of values, each `(process, value)` one operation.
pub fn invoke_batch(recorder: &dyn Recorder, batch: &[(u64, u64)], partition: u32) {
    for &(process, value) in batch {
        let invoke = json!({"partition": partition, "value": value});
        recorder.record(process, EventType::Invoke, "send", invoke, None);
    }
}

/// The completions of a batch once `sent` (every attempt of it) is done — all
/// alike, as the batch succeeded or failed as one, the `k`-th value at the batch's
/// offset + `k`. A batch of several says its size (`"batch":n`).
pub fn complete_batch(recorder: &dyn Recorder, batch: &[(u64, u64)], partition: u32, sent: &Sent) {
    for (k, &(process, value)) in batch.iter().enumerate() {
        let mut v = sent.annotate(json!({"partition": partition, "value": value}));
        if batch.len() > 1 {
            v["batch"] = json!(batch.len());
        }
        match &sent.outcome {
            Outcome::Ok(offset) => {
                if let Some(o) = offset {
                    v["offset"] = json!(o + k as u64);
                }
                recorder.record(process, EventType::Ok, "send", v, None);
            }
            Outcome::Fail(f) => {
                recorder.record(process, EventType::Fail, "send", v, Some(f.message.clone()));
            }
            Outcome::Info(f) => {
                recorder.record(process, EventType::Info, "send", v, Some(f.message.clone()));
            }
        }
    }
}

/// How a send ended, as the worker's pacing cares.
pub(super) fn ended(sent: &Sent) -> Ended {
    match &sent.outcome {
        Outcome::Ok(_) => Ended::OK,
        Outcome::Fail(f) => Ended::failed(f, false),
        Outcome::Info(f) => Ended::failed(f, true),
    }
}
