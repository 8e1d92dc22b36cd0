//! A broker client that finds partition leaders from metadata, follows them as they
//! move, and reports each operation as `ok`, `fail` (it certainly did not happen) or
//! `info` (unknown), following docs/api.md.
//!
//! The rule that keeps histories honest: the client retries an operation only after
//! an answer that proves the previous attempt had no effect (`NOT_LEADER`, a refused
//! connection, ...). After anything ambiguous — a timeout, a connection lost
//! mid-request, `REQUEST_TIMED_OUT`, `NOT_ENOUGH_REPLICAS_AFTER_APPEND` — the
//! operation ends `info` at once; a later success must never be credited to it.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::time::Duration;

use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::api::{self, Certainty, ErrorBody, Fetched, KeyRead, Metadata, Produced};

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
    /// The controller's address.
    pub controller: SocketAddr,
    /// Budget for one HTTP request; past it the outcome is unknown.
    pub request_timeout: Duration,
    /// Attempts per operation (only definite failures are retried).
    pub max_attempts: u32,
}

impl ClientConfig {
    pub fn new(nodes: BTreeMap<i32, SocketAddr>, controller: SocketAddr) -> Self {
        ClientConfig {
            nodes,
            controller,
            request_timeout: Duration::from_secs(3),
            max_attempts: 5,
        }
    }
}

/// Why an operation did not end `ok`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The broker's error code, when the broker answered.
    pub code: Option<String>,
    /// What happened, for a person.
    pub message: String,
    /// `OFFSET_OUT_OF_RANGE` carries the partition's high watermark.
    pub high_watermark: Option<u64>,
}

impl Failure {
    fn local(message: impl Into<String>) -> Self {
        Failure {
            code: None,
            message: message.into(),
            high_watermark: None,
        }
    }

    fn from_body(body: ErrorBody) -> Self {
        Failure {
            message: if body.message.is_empty() {
                body.error.clone()
            } else {
                format!("{}: {}", body.error, body.message)
            },
            code: Some(body.error),
            high_watermark: body.high_watermark,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The outcome of one operation, in the history's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T> {
    /// It happened.
    Ok(T),
    /// It certainly did not happen.
    Fail(Failure),
    /// Unknown: it may or may not have happened.
    Info(Failure),
}

/// One attempt's answer, before the retry decision.
enum Attempt<T> {
    Ok(T),
    /// Certainly no effect; `leader` is a `NOT_LEADER` hint.
    Definite(Failure, Option<i32>),
    Unknown(Failure),
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
        })
    }

    /// Create a topic through the controller; an existing topic is fine.
    pub async fn create_topic(
        &mut self,
        name: &str,
        partitions: u32,
        replication_factor: u32,
        min_insync_replicas: u32,
    ) -> Result<(), String> {
        let url = format!("http://{}/v1/topics", self.config.controller);
        let body = json!({
            "name": name,
            "partitions": partitions,
            "replication_factor": replication_factor,
            "min_insync_replicas": min_insync_replicas,
        });
        let resp = self
            .http
            .post(&url)
            .json(&body)
            .send()
            .await
            .map_err(|e| format!("POST {url}: {}", describe(&e)))?;
        let status = resp.status();
        if status.is_success() || status.as_u16() == 409 {
            return Ok(());
        }
        let text = resp.text().await.unwrap_or_default();
        Err(format!("POST {url} answered {status}: {text}"))
    }

    /// Learn every partition's leader: from the controller, or, when it does not
    /// answer, from the nodes (the highest leader epoch wins per partition).
    pub async fn refresh_metadata(&mut self) -> Result<Metadata, String> {
        let metadata = match self.get_metadata(self.config.controller).await {
            Ok(m) => m,
            Err(e) => self
                .nodes_metadata()
                .await
                .ok_or_else(|| format!("no metadata from the controller ({e}) or any node"))?,
        };
        self.learn(&metadata);
        Ok(metadata)
    }

    /// Every reachable node's view, merged; `None` if no node answered.
    async fn nodes_metadata(&mut self) -> Option<Metadata> {
        let mut ids: Vec<i32> = self.config.nodes.keys().copied().collect();
        if !ids.is_empty() {
            let start = self.rng.random_range(0..ids.len());
            ids.rotate_left(start);
        }
        let mut merged: Option<Metadata> = None;
        for id in ids {
            if let Ok(m) = self.get_metadata(self.config.nodes[&id]).await {
                merged = Some(match merged {
                    None => m,
                    Some(prev) => merge(prev, m),
                });
            }
        }
        merged
    }

    async fn get_metadata(&self, addr: SocketAddr) -> Result<Metadata, String> {
        let url = format!("http://{addr}/v1/metadata");
        let resp = self
            .http
            .get(&url)
            .timeout(self.config.request_timeout.min(Duration::from_secs(1)))
            .send()
            .await
            .map_err(|e| format!("GET {url}: {}", describe(&e)))?;
        if !resp.status().is_success() {
            return Err(format!("GET {url} answered {}", resp.status()));
        }
        resp.json()
            .await
            .map_err(|e| format!("GET {url}: {}", describe(&e)))
    }

    fn learn(&mut self, m: &Metadata) {
        for t in &m.topics {
            for p in &t.partitions {
                let key = (t.name.clone(), p.partition);
                if p.leader > 0 {
                    self.leaders.insert(key, p.leader);
                } else {
                    self.leaders.remove(&key);
                }
            }
        }
    }

    /// Append one record; `Ok` carries its offset (`None` with `acks=0`).
    pub async fn produce(
        &mut self,
        topic: &str,
        partition: u32,
        value: Value,
        acks: Acks,
    ) -> Outcome<Option<u64>> {
        let path = format!(
            "/v1/topics/{topic}/partitions/{partition}/records?acks={}",
            acks.as_str()
        );
        let body = json!({"records": [{"value": value}]});
        let out = self
            .with_leader(topic, partition, |http, addr| {
                http.post(format!("http://{addr}{path}")).json(&body)
            })
            .await;
        match out {
            Outcome::Ok(Produced { base_offset }) => Outcome::Ok(base_offset),
            Outcome::Fail(f) => Outcome::Fail(f),
            Outcome::Info(f) => Outcome::Info(f),
        }
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

    /// Write `value` to `key` (acks=all); with `if_value`, only if the key's current
    /// value in the leader's log is that (`null`: never written) — a compare-and-set.
    /// A mismatch is a `Fail` with code `PRECONDITION_FAILED`.
    pub async fn write_key(
        &mut self,
        topic: &str,
        partition: u32,
        key: &str,
        value: Value,
        if_value: Option<Value>,
    ) -> Outcome<Option<u64>> {
        let path = format!("/v1/topics/{topic}/partitions/{partition}/records?acks=all");
        let mut body = json!({"records": [{"key": key, "value": value}]});
        if let Some(expected) = if_value {
            body["if_value"] = expected;
        }
        let out = self
            .with_leader(topic, partition, |http, addr| {
                http.post(format!("http://{addr}{path}")).json(&body)
            })
            .await;
        match out {
            Outcome::Ok(Produced { base_offset }) => Outcome::Ok(base_offset),
            Outcome::Fail(f) => Outcome::Fail(f),
            Outcome::Info(f) => Outcome::Info(f),
        }
    }

    /// Send a request to the partition's leader, following leadership changes while
    /// every failure is definite.
    async fn with_leader<T, F>(&mut self, topic: &str, partition: u32, build: F) -> Outcome<T>
    where
        T: DeserializeOwned,
        F: Fn(&reqwest::Client, SocketAddr) -> reqwest::RequestBuilder,
    {
        let key = (topic.to_string(), partition);
        let mut last = Failure::local("no attempt made");
        for attempt in 0..self.config.max_attempts.max(1) {
            if attempt > 0 {
                // A short, growing pause lets an election finish.
                tokio::time::sleep(Duration::from_millis(50 * u64::from(attempt))).await;
            }
            let leader = match self.leaders.get(&key) {
                Some(&l) => l,
                None => {
                    if let Err(e) = self.refresh_metadata().await {
                        last = Failure::local(e);
                        continue;
                    }
                    match self.leaders.get(&key) {
                        Some(&l) => l,
                        None => {
                            last = Failure::local(format!("{topic}-{partition} has no leader"));
                            continue;
                        }
                    }
                }
            };
            let Some(&addr) = self.config.nodes.get(&leader) else {
                self.leaders.remove(&key);
                last = Failure::local(format!("leader {leader} is not a known node"));
                continue;
            };
            match self.attempt(build(&self.http, addr)).await {
                Attempt::Ok(v) => return Outcome::Ok(v),
                Attempt::Unknown(f) => {
                    self.leaders.remove(&key);
                    return Outcome::Info(f);
                }
                Attempt::Definite(f, hint) => {
                    // An answer such as PRECONDITION_FAILED or NOT_ENOUGH_REPLICAS
                    // comes from the leader: keep using it (as Kafka clients keep
                    // their cached metadata until an error says it is stale).
                    if !f.code.as_deref().is_none_or(api::retriable) {
                        return Outcome::Fail(f);
                    }
                    match hint {
                        Some(h) if h > 0 && h != leader => {
                            self.leaders.insert(key.clone(), h);
                        }
                        _ => {
                            self.leaders.remove(&key);
                        }
                    }
                    last = f;
                }
            }
        }
        Outcome::Fail(last)
    }

    async fn attempt<T: DeserializeOwned>(&self, req: reqwest::RequestBuilder) -> Attempt<T> {
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) if e.is_connect() => {
                // The connection was never made: nothing was sent.
                return Attempt::Definite(Failure::local(describe(&e)), None);
            }
            Err(e) => return Attempt::Unknown(Failure::local(describe(&e))),
        };
        let status = resp.status();
        let bytes = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => return Attempt::Unknown(Failure::local(describe(&e))),
        };
        if status.is_success() {
            return match serde_json::from_slice(&bytes) {
                Ok(v) => Attempt::Ok(v),
                Err(e) => Attempt::Unknown(Failure::local(format!(
                    "unreadable {status} answer: {e}: {}",
                    String::from_utf8_lossy(&bytes)
                ))),
            };
        }
        match serde_json::from_slice::<ErrorBody>(&bytes) {
            Ok(body) => {
                let hint = body.leader;
                let certain = api::certainty(&body.error);
                let f = Failure::from_body(body);
                match certain {
                    Certainty::Definite => Attempt::Definite(f, hint),
                    Certainty::Unknown => Attempt::Unknown(f),
                }
            }
            // An answer without our error body (e.g. a proxy's): nothing says
            // the request had no effect.
            Err(_) => Attempt::Unknown(Failure::local(format!(
                "{status}: {}",
                String::from_utf8_lossy(&bytes)
            ))),
        }
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

/// Keep, per partition, the entry with the highest leader epoch.
fn merge(mut a: Metadata, b: Metadata) -> Metadata {
    for tb in b.topics {
        match a.topics.iter_mut().find(|t| t.name == tb.name) {
            None => a.topics.push(tb),
            Some(ta) => {
                for pb in tb.partitions {
                    match ta
                        .partitions
                        .iter_mut()
                        .find(|p| p.partition == pb.partition)
                    {
                        None => ta.partitions.push(pb),
                        Some(pa) if pb.leader_epoch > pa.leader_epoch => *pa = pb,
                        Some(_) => {}
                    }
                }
            }
        }
    }
    a
}

/// A reqwest error, said briefly.
fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else if e.is_body() || e.is_request() {
        "connection lost"
    } else if e.is_decode() {
        "unreadable answer"
    } else {
        "request failed"
    };
    let mut source = std::error::Error::source(e);
    let mut detail = String::new();
    while let Some(s) = source {
        detail = s.to_string();
        source = s.source();
    }
    if detail.is_empty() {
        kind.to_string()
    } else {
        format!("{kind} ({detail})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(json: &str) -> Metadata {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(encode_path_segment("k-12_a.b~"), "k-12_a.b~");
        assert_eq!(encode_path_segment("a/b c?"), "a%2Fb%20c%3F");
        assert_eq!(encode_path_segment("é"), "%C3%A9");
    }

    #[test]
    fn merge_keeps_the_newest_leader_epoch() {
        let a = meta(
            r#"{"topics":[{"name":"q","partitions":[{"partition":0,"leader":1,"leader_epoch":2}]}]}"#,
        );
        let b = meta(
            r#"{"topics":[{"name":"q","partitions":[{"partition":0,"leader":3,"leader_epoch":5},
                {"partition":1,"leader":2,"leader_epoch":1}]}]}"#,
        );
        let m = merge(a, b);
        assert_eq!(m.partition("q", 0).unwrap().leader, 3);
        assert_eq!(m.partition("q", 1).unwrap().leader, 2);
    }
}
