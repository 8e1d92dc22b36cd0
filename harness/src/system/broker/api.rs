//! The broker's HTTP API as the harness sees it (docs/api.md): metadata, topic
//! creation, and the debug endpoints the end-of-run checks read. The harness talks to
//! the broker like any user would, over HTTP/JSON — it does not link the broker
//! crate. Metadata is read with the workloads' client types ([`workloads::api`]);
//! only what no client needs (`/debug/partitions`, topic creation) is defined here.
//!
//! These calls go straight to a process's real address, never through the link
//! proxies: the harness observes the cluster from outside the faults it injects.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{HarnessError, Result};

pub use workloads::api::Metadata;

/// `GET /debug/partitions` on a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DebugPartitions {
    pub broker: i32,
    pub partitions: Vec<ReplicaState>,
}

/// One replica as its node sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaState {
    pub topic: String,
    pub partition: u32,
    /// `leader`, `follower` or `offline`.
    pub role: String,
    pub leader: i32,
    pub leader_epoch: i64,
    pub isr: Vec<i32>,
    pub replicas: Vec<i32>,
    pub log_end_offset: u64,
    pub high_watermark: u64,
    /// How far the log is durable (0 from a broker that does not say).
    #[serde(default)]
    pub flushed_offset: u64,
}

/// `POST /v1/topics` on the controller.
#[derive(Debug, Clone, Serialize)]
pub struct CreateTopic<'a> {
    pub name: &'a str,
    pub partitions: u32,
    pub replication_factor: u32,
    pub min_insync_replicas: u32,
}

/// An HTTP client for the harness's own calls: no proxy from the environment, short
/// timeouts (a paused process must not stall the harness).
#[derive(Debug, Clone)]
pub struct Admin {
    http: reqwest::Client,
}

impl Admin {
    pub fn new(timeout: Duration) -> Result<Admin> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(2)))
            .build()
            .map_err(|e| HarnessError::new(format!("cannot build an HTTP client: {e}")))?;
        Ok(Admin { http })
    }

    pub async fn metadata(&self, addr: SocketAddr) -> Result<Metadata> {
        self.get_json(addr, "/v1/metadata").await
    }

    pub async fn debug_partitions(&self, addr: SocketAddr) -> Result<DebugPartitions> {
        self.get_json(addr, "/debug/partitions").await
    }

    /// `GET /debug/log/{topic}/{partition}`: the body as sent, checked to be one JSON
    /// object.
    pub async fn debug_log(
        &self,
        addr: SocketAddr,
        topic: &str,
        partition: u32,
        timeout: Duration,
    ) -> Result<String> {
        let path = format!("/debug/log/{topic}/{partition}");
        let resp = self
            .http
            .get(url(addr, &path))
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| call_error(addr, &path, e))?;
        let body = ok_body(addr, &path, resp).await?;
        match serde_json::from_str::<serde_json::Value>(&body) {
            Ok(serde_json::Value::Object(_)) => Ok(body),
            _ => Err(HarnessError::new(format!(
                "GET http://{addr}{path} did not answer a JSON object: {}",
                excerpt(&body)
            ))),
        }
    }

    /// `POST /v1/topics`; Err names the controller's error (e.g. `TOPIC_ALREADY_EXISTS`).
    pub async fn create_topic(
        &self,
        controller: SocketAddr,
        topic: &CreateTopic<'_>,
    ) -> Result<()> {
        let path = "/v1/topics";
        let resp = self
            .http
            .post(url(controller, path))
            .json(topic)
            .send()
            .await
            .map_err(|e| call_error(controller, path, e))?;
        ok_body(controller, path, resp).await.map(|_| ())
    }

    /// An admin request to the controller (`POST` or `DELETE` of `path` with
    /// `body`); Err names the controller's error (e.g. `REASSIGNMENT_IN_PROGRESS`).
    pub async fn admin(
        &self,
        controller: SocketAddr,
        delete: bool,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<()> {
        let request = if delete {
            self.http.delete(url(controller, path))
        } else {
            self.http.post(url(controller, path)).json(body)
        };
        let resp = request
            .send()
            .await
            .map_err(|e| call_error(controller, path, e))?;
        ok_body(controller, path, resp).await.map(|_| ())
    }

    /// `POST /debug/disk` on a node, with the cluster's credentials: its storage fails
    /// in `mode` (`enospc`, `eio`) for `for_ms` milliseconds, or works again (`ok`).
    pub async fn set_disk(
        &self,
        addr: SocketAddr,
        credentials: &super::Credentials,
        mode: &str,
        for_ms: Option<u64>,
    ) -> Result<()> {
        let path = "/debug/disk";
        let body = match for_ms {
            Some(ms) => serde_json::json!({"mode": mode, "for_ms": ms}),
            None => serde_json::json!({"mode": mode}),
        };
        let resp = self
            .http
            .post(url(addr, path))
            .header("X-Cluster-Id", &credentials.cluster_id)
            .bearer_auth(&credentials.secret)
            .json(&body)
            .send()
            .await
            .map_err(|e| call_error(addr, path, e))?;
        ok_body(addr, path, resp).await.map(|_| ())
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        addr: SocketAddr,
        path: &str,
    ) -> Result<T> {
        let resp = self
            .http
            .get(url(addr, path))
            .send()
            .await
            .map_err(|e| call_error(addr, path, e))?;
        let body = ok_body(addr, path, resp).await?;
        serde_json::from_str(&body).map_err(|e| {
            HarnessError::new(format!(
                "GET http://{addr}{path} answered an unexpected body ({e}): {}",
                excerpt(&body)
            ))
        })
    }
}

fn url(addr: SocketAddr, path: &str) -> String {
    format!("http://{addr}{path}")
}

fn call_error(addr: SocketAddr, path: &str, e: reqwest::Error) -> HarnessError {
    let what = if e.is_timeout() {
        "timed out".to_string()
    } else if e.is_connect() {
        "could not connect".to_string()
    } else {
        e.to_string()
    };
    HarnessError::new(format!("http://{addr}{path}: {what}"))
}

async fn ok_body(addr: SocketAddr, path: &str, resp: reqwest::Response) -> Result<String> {
    let status = resp.status();
    let body = resp.text().await.map_err(|e| call_error(addr, path, e))?;
    if status.is_success() {
        Ok(body)
    } else {
        Err(HarnessError::new(format!(
            "http://{addr}{path} answered {status}: {}",
            excerpt(&body)
        )))
    }
}

fn excerpt(body: &str) -> &str {
    match body.char_indices().nth(300) {
        Some((i, _)) => &body[..i],
        None => body,
    }
}
