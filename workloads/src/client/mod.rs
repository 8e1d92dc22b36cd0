//! A broker client that finds partition leaders from metadata, follows them as they
//! move, and reports each operation as `ok`, `fail` (it certainly did not happen) or
//! `info` (unknown), following docs/api.md.
//!
//! The rule that keeps histories honest: the client retries an operation only after
//! an answer that proves the previous attempt had no effect (`NOT_LEADER`, a refused
//! connection, ...). After anything ambiguous — a timeout, a connection lost
//! mid-request, `REQUEST_TIMED_OUT`, `NOT_ENOUGH_REPLICAS_AFTER_APPEND` — the
//! operation ends `info` at once; a later success must never be credited to it.
//!
//! Values travel exactly: bodies are written with [`canonical`] text and answers
//! read with the checker's exact reader, so an integer beyond 64 bits is never
//! rounded to a float on the way.
//!
//! - this module: the client and the operations the workloads perform;
//! - [`outcome`]: how an operation ended;
//! - `leaders`: where each partition's leader is;
//! - `attempt`: one operation against the leader, retried by that rule.

mod attempt;
mod leaders;
pub mod outcome;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::time::Duration;

use checker::values::canonical;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::api::{Fetched, KeyRead, Produced};
pub use outcome::{Failure, Outcome};

/// How a produce is acknowledged (`acks=0|1|all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acks {
    Zero,
    One,
    All,
}

impl Acks {
    pub fn as_str(self) -> &'static str {
        match self {
            Acks::Zero => "0",
            Acks::One => "1",
            Acks::All => "all",
        }
    }
}

/// Where the cluster is and how patient to be with it.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Each node's address as clients reach it (through the harness's proxies).
    pub nodes: BTreeMap<i32, SocketAddr>,
    /// A dedicated controller's address; None when the controller runs in the
    /// brokers (any broker answers metadata, and names the active controller).
    pub controller: Option<SocketAddr>,
    /// Budget for one HTTP request; past it the outcome is unknown.
    pub request_timeout: Duration,
    /// Attempts per operation (only definite failures are retried).
    pub max_attempts: u32,
}

/// A client request's budget unless configured otherwise: past it the operation's
/// outcome is unknown (`info`) and the client looks for the leader again.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

impl ClientConfig {
    pub fn new(nodes: BTreeMap<i32, SocketAddr>, controller: Option<SocketAddr>) -> Self {
        ClientConfig {
            nodes,
            controller,
            request_timeout: REQUEST_TIMEOUT,
            max_attempts: 5,
        }
    }
}

/// A client of one topic's partitions. Not shared: each logical client process owns
/// one, so its metadata cache and connections are its own.
pub struct Client {
    http: reqwest::Client,
    config: ClientConfig,
    /// Known leader of each (topic, partition).
    leaders: HashMap<(String, u32), i32>,
    /// Picks nodes to ask for metadata; seeded so runs are reproducible.
    rng: ChaCha8Rng,
    /// The active controller's broker id, as the last metadata or `NOT_CONTROLLER`
    /// answer named it.
    controller_hint: Option<i32>,
}

impl Client {
    pub fn new(config: ClientConfig, seed: u64) -> Result<Client, String> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(config.request_timeout)
            .connect_timeout(config.request_timeout.min(Duration::from_secs(1)))
            .pool_idle_timeout(Duration::from_secs(10))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
        Ok(Client {
            http,
            config,
            leaders: HashMap::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            controller_hint: None,
        })
    }

    /// Append one record; `Ok` carries its offset (`None` with `acks=0`).
    pub async fn produce(
        &mut self,
        topic: &str,
        partition: u32,
        value: Value,
        acks: Acks,
    ) -> Outcome<Option<u64>> {
        self.produce_as(topic, partition, value, acks, None).await
    }

    /// [`Client::produce`], as an idempotent producer when `producer` is given: its
    /// id, epoch and the record's sequence number (docs/api.md).
    pub async fn produce_as(
        &mut self,
        topic: &str,
        partition: u32,
        value: Value,
        acks: Acks,
        producer: Option<ProducerStamp>,
    ) -> Outcome<Option<u64>> {
        self.produce_batch(topic, partition, &[value], acks, producer)
            .await
            .map(|p| p.base_offset)
    }

    /// Append `values` as one batch, in one request; `Ok` carries the first one's
    /// offset (the others follow it) and the appending leader's epoch. As an
    /// idempotent producer, `producer`'s sequence is the first record's, the
    /// others numbered after it.
    pub async fn produce_batch(
        &mut self,
        topic: &str,
        partition: u32,
        values: &[Value],
        acks: Acks,
        producer: Option<ProducerStamp>,
    ) -> Outcome<Produced> {
        let path = format!(
            "/v1/topics/{topic}/partitions/{partition}/records?acks={}",
            acks.as_str()
        );
        let stamp = producer.map_or_else(String::new, |p| {
            format!(
                r#","producer":{{"id":{},"epoch":{},"sequence":{}}}"#,
                p.id, p.epoch, p.sequence
            )
        });
        let records: Vec<String> = values
            .iter()
            .map(|v| format!(r#"{{"value":{}}}"#, canonical(v)))
            .collect();
        let body = format!(r#"{{"records":[{}]{stamp}}}"#, records.join(","));
        self.with_leader(topic, partition, |http, addr| {
            json_body(http.post(format!("http://{addr}{path}")), &body)
        })
        .await
    }

    /// Read up to `max_records` records from `offset` (never past the high watermark).
    pub async fn fetch(
        &mut self,
        topic: &str,
        partition: u32,
        offset: u64,
        max_records: u32,
    ) -> Outcome<Fetched> {
        let path = format!(
            "/v1/topics/{topic}/partitions/{partition}/records?offset={offset}&max_records={max_records}"
        );
        self.with_leader(topic, partition, |http, addr| {
            http.get(format!("http://{addr}{path}"))
        })
        .await
    }

    /// Read a key from the register view of its partition's leader (docs/api.md);
    /// `linearizable` makes the leader confirm its leadership before answering.
    pub async fn read_key(
        &mut self,
        topic: &str,
        partition: u32,
        key: &str,
        linearizable: bool,
    ) -> Outcome<KeyRead> {
        let path = format!(
            "/v1/topics/{topic}/keys/{}?linearizable={linearizable}",
            encode_path_segment(key)
        );
        self.with_leader(topic, partition, |http, addr| {
            http.get(format!("http://{addr}{path}"))
        })
        .await
    }

    /// Write `value` to `key` (acks=all), the record `copies` times in the one produce
    /// (1 but for a probe: more than one with `if_value` is a request the contract
    /// refuses); with `if_value`, only if the key's current value in the leader's log
    /// is that (`null`: never written) — a compare-and-set. A mismatch is a `Fail`
    /// with code `PRECONDITION_FAILED`.
    pub async fn write_key(
        &mut self,
        topic: &str,
        partition: u32,
        key: &str,
        value: Value,
        if_value: Option<Value>,
        copies: usize,
    ) -> Outcome<Option<u64>> {
        let path = format!("/v1/topics/{topic}/partitions/{partition}/records?acks=all");
        let record = format!(
            r#"{{"key":{},"value":{}}}"#,
            canonical(&Value::String(key.to_string())),
            canonical(&value)
        );
        let mut body = format!(r#"{{"records":[{}]"#, vec![record; copies.max(1)].join(","));
        if let Some(expected) = if_value {
            body.push_str(&format!(r#","if_value":{}"#, canonical(&expected)));
        }
        body.push('}');
        self.with_leader(topic, partition, |http, addr| {
            json_body(http.post(format!("http://{addr}{path}")), &body)
        })
        .await
        .map(|p: Produced| p.base_offset)
    }
}

/// A request with `body` (JSON text) as its body.
fn json_body(req: reqwest::RequestBuilder, body: &str) -> reqwest::RequestBuilder {
    req.header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string())
}

/// An idempotent producer's id and epoch (from the controller's InitProducerId) and
/// a record's sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerStamp {
    pub id: u64,
    pub epoch: u32,
    pub sequence: u32,
}

impl Client {
    /// InitProducerId: a producer id and epoch from the controller — the dedicated
    /// one, or the broker known to be the active controller (any broker else),
    /// following `NOT_CONTROLLER` hints a few times.
    pub async fn init_producer_id(&mut self) -> Result<(u64, u32), String> {
        #[derive(serde::Deserialize)]
        struct Answer {
            producer_id: u64,
            producer_epoch: u32,
        }
        let mut last = String::from("no broker to ask");
        for _ in 0..=self.config.nodes.len() {
            let Some(addr) = self.controller_addr() else {
                break;
            };
            let url = format!("http://{addr}/v1/producers");
            let resp = match self.http.post(url).send().await {
                Ok(resp) => resp,
                Err(e) => {
                    // That broker is down or cut off: ask another, as Kafka's
                    // client asks its least loaded node.
                    last = format!("InitProducerId: {}", attempt::describe(&e));
                    self.controller_hint = None;
                    continue;
                }
            };
            let status = resp.status();
            let bytes = resp
                .bytes()
                .await
                .map_err(|e| format!("InitProducerId: {}", attempt::describe(&e)))?;
            if status.is_success() {
                let a: Answer = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("InitProducerId: unreadable answer: {e}"))?;
                return Ok((a.producer_id, a.producer_epoch));
            }
            last = format!(
                "InitProducerId: {status}: {}",
                String::from_utf8_lossy(&bytes)
            );
            let hint = serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .filter(|v| v["error"] == "NOT_CONTROLLER")
                .map(|v| v["controller_id"].as_i64().unwrap_or(-1));
            match hint {
                // Asked the wrong broker: ask the one it names (or another) next.
                Some(id) if self.config.controller.is_none() => {
                    self.controller_hint = i32::try_from(id).ok().filter(|&id| id > 0);
                }
                _ => break,
            }
        }
        Err(last)
    }

    /// Where to send a controller request: the dedicated controller, the broker
    /// known to be the active controller, or a random broker (it names the active one).
    fn controller_addr(&mut self) -> Option<SocketAddr> {
        if let Some(addr) = self.config.controller {
            return Some(addr);
        }
        if let Some(addr) = self
            .controller_hint
            .and_then(|id| self.config.nodes.get(&id))
        {
            return Some(*addr);
        }
        let ids: Vec<&SocketAddr> = self.config.nodes.values().collect();
        (!ids.is_empty()).then(|| *ids[self.rng.random_range(0..ids.len())])
    }
}

/// Percent-encode a URL path segment (everything but RFC 3986's unreserved bytes).
fn encode_path_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(encode_path_segment("k-12_a.b~"), "k-12_a.b~");
        assert_eq!(encode_path_segment("a/b c?"), "a%2Fb%20c%3F");
        assert_eq!(encode_path_segment("é"), "%C3%A9");
    }
}
