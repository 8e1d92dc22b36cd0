//! The final drain: once the cluster has healed, every partition is read from
//! offset 0 up to its high watermark (`final-poll`), the log the queue checker
//! judges every send and poll against.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use checker::history::EventType;

use super::{DRAIN_MAX_RECORDS, QueueConfig, TOPIC, refusal_value};
use crate::client::{Client, Outcome};
use crate::recorder::Recorder;

/// The value of an ok poll: `{"partition":p,"records":[[offset,value],...],
/// "high_watermark":hw}`. The high watermark the broker answered with tells the
/// checker whether a final drain read the whole committed log.
pub(super) fn records_value(partition: u32, fetched: &crate::api::Fetched) -> Value {
    let records: Vec<Value> = fetched
        .records
        .iter()
        .map(|r| json!([r.offset, r.value]))
        .collect();
    json!({"partition": partition, "records": records, "high_watermark": fetched.high_watermark})
}

/// How long the drain keeps retrying one partition that gives nothing (every fetch
/// fails, the offset does not move) before it moves on to the next: a partition no
/// replica can serve must not take the whole deadline from the others.
const PARTITION_STALL: Duration = Duration::from_secs(15);

/// The final drain: read every partition from offset 0 up to its high watermark as
/// `final-poll` operations, retrying until `deadline`, and at most
/// [`PARTITION_STALL`] without progress on one partition. `process` is the first
/// process number to use (one nobody used); it moves on after an `info`.
/// Returns the process numbers used, or every partition that could not be drained.
pub async fn final_drain(
    config: &QueueConfig,
    recorder: &dyn Recorder,
    mut process: u64,
    deadline: Instant,
) -> Result<u64, String> {
    let mut client = Client::new(config.client.clone(), config.seed ^ process)?;
    // Every partition the topic has now: those added while the campaign ran too.
    let partitions = client
        .partition_count(TOPIC)
        .await
        .unwrap_or(0)
        .max(config.partitions);
    let mut undrained = Vec::new();
    for partition in 0..partitions {
        let mut offset = 0u64;
        let mut progress = Instant::now();
        loop {
            if Instant::now() >= deadline {
                undrained.push(format!(
                    "the final drain of {TOPIC}-{partition} did not finish in time (read up to offset {offset})"
                ));
                break;
            }
            if progress.elapsed() >= PARTITION_STALL {
                undrained.push(format!(
                    "the final drain of {TOPIC}-{partition} got nothing for {PARTITION_STALL:?} (read up to offset {offset}); the drain moved on"
                ));
                break;
            }
            let invoke = json!({"partition": partition, "offset": offset});
            recorder.record(
                process,
                EventType::Invoke,
                "final-poll",
                invoke.clone(),
                None,
            );
            match client
                .fetch(TOPIC, partition, offset, DRAIN_MAX_RECORDS)
                .await
            {
                Outcome::Ok(fetched) => {
                    recorder.record(
                        process,
                        EventType::Ok,
                        "final-poll",
                        records_value(partition, &fetched),
                        None,
                    );
                    match fetched.records.last() {
                        Some(last) => offset = last.offset + 1,
                        None => break,
                    }
                    progress = Instant::now();
                    if offset >= fetched.high_watermark {
                        break;
                    }
                }
                Outcome::Fail(f) => {
                    let refused = refusal_value(invoke, &f);
                    recorder.record(
                        process,
                        EventType::Fail,
                        "final-poll",
                        refused,
                        Some(f.message),
                    );
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Outcome::Info(f) => {
                    recorder.record(
                        process,
                        EventType::Info,
                        "final-poll",
                        invoke,
                        Some(f.message),
                    );
                    process += 1;
                    client = Client::new(config.client.clone(), config.seed ^ process)?;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }
    if undrained.is_empty() {
        Ok(process)
    } else {
        Err(undrained.join("; "))
    }
}
