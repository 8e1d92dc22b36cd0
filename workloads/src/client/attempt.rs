//! One operation against a partition's leader, and the rule that keeps histories
//! honest: retry only after an answer that proves the previous attempt had no effect
//! (`NOT_LEADER`, a refused connection, ...); after anything ambiguous — a timeout, a
//! connection lost mid-request, `REQUEST_TIMED_OUT`,
//! `NOT_ENOUGH_REPLICAS_AFTER_APPEND` — the operation ends `info` at once.

use std::net::SocketAddr;
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::Client;
use super::outcome::{Failure, Outcome};
use crate::api::{self, Certainty, ErrorBody};

/// One attempt's answer, before the retry decision.
enum Attempt<T> {
    Ok(T),
    /// Certainly no effect; `leader` is a `NOT_LEADER` hint.
    Definite(Failure, Option<i32>),
    Unknown(Failure),
}

impl Client {
    /// Send a request to the partition's leader, following leadership changes while
    /// every failure is definite.
    pub(super) async fn with_leader<T, F>(
        &mut self,
        topic: &str,
        partition: u32,
        build: F,
    ) -> Outcome<T>
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

/// A reqwest error, said briefly.
pub(super) fn describe(e: &reqwest::Error) -> String {
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
