//! Calls between the broker's processes (JSON over HTTP), each with a timeout. An
//! error answer is decoded back into its [`ApiError`] so callers can act on the code
//! (`FENCED_LEADER_EPOCH`, `NOT_CONTROLLER`, …); anything else is a transport failure.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::auth::ClusterAuth;
use crate::error::{ApiError, Code};

/// Why a call failed.
#[derive(Debug)]
pub enum CallError {
    /// The peer answered with an error code.
    Api(ApiError),
    /// No usable answer: connection refused, timeout, garbage.
    Transport(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Api(e) => write!(f, "{e}"),
            CallError::Transport(e) => write!(f, "{e}"),
        }
    }
}

/// An HTTP client for internal calls (no proxies: peers are given addresses),
/// carrying the cluster's credentials if any.
pub fn client(auth: Option<&ClusterAuth>) -> reqwest::Client {
    reqwest::Client::builder()
        .default_headers(auth.map(ClusterAuth::headers).unwrap_or_default())
        .no_proxy()
        .connect_timeout(Duration::from_secs(1))
        .pool_idle_timeout(Duration::from_secs(30))
        .build()
        .expect("an HTTP client without TLS always builds")
}

/// POST `body` as JSON to `http://{addr}{path}`, bounded by `timeout`.
pub async fn post<Req: Serialize, Resp: DeserializeOwned>(
    client: &reqwest::Client,
    addr: &str,
    path: &str,
    body: &Req,
    timeout: Duration,
) -> Result<Resp, CallError> {
    let url = format!("http://{addr}{path}");
    let call = async {
        let resp = client
            .post(&url)
            .json(body)
            .send()
            .await
            .map_err(|e| CallError::Transport(format!("POST {url}: {e}")))?;
        decode(&url, resp).await
    };
    match tokio::time::timeout(timeout, call).await {
        Ok(r) => r,
        Err(_) => Err(CallError::Transport(format!(
            "POST {url}: no answer within {timeout:?}"
        ))),
    }
}

/// GET `http://{addr}{path}`, bounded by `timeout`.
pub async fn get<Resp: DeserializeOwned>(
    client: &reqwest::Client,
    addr: &str,
    path: &str,
    timeout: Duration,
) -> Result<Resp, CallError> {
    let url = format!("http://{addr}{path}");
    let call = async {
        let resp = client
            .get(&url)
            .send()
            .await
            .map_err(|e| CallError::Transport(format!("GET {url}: {e}")))?;
        decode(&url, resp).await
    };
    match tokio::time::timeout(timeout, call).await {
        Ok(r) => r,
        Err(_) => Err(CallError::Transport(format!(
            "GET {url}: no answer within {timeout:?}"
        ))),
    }
}

async fn decode<Resp: DeserializeOwned>(
    url: &str,
    resp: reqwest::Response,
) -> Result<Resp, CallError> {
    let status = resp.status();
    let bytes = resp
        .bytes()
        .await
        .map_err(|e| CallError::Transport(format!("{url}: reading the answer: {e}")))?;
    if status.is_success() {
        return serde_json::from_slice(&bytes)
            .map_err(|e| CallError::Transport(format!("{url}: bad answer: {e}")));
    }
    let Ok(Value::Object(mut body)) = serde_json::from_slice::<Value>(&bytes) else {
        return Err(CallError::Transport(format!(
            "{url}: HTTP {status} without a JSON error body"
        )));
    };
    let code = body
        .remove("error")
        .and_then(|c| c.as_str().and_then(Code::parse));
    let message = body
        .remove("message")
        .and_then(|m| m.as_str().map(str::to_string))
        .unwrap_or_default();
    match code {
        Some(code) => {
            let mut err = ApiError::new(code, message);
            err.extra = body;
            Err(CallError::Api(err))
        }
        None => Err(CallError::Transport(format!(
            "{url}: HTTP {status} with an unknown error code"
        ))),
    }
}
