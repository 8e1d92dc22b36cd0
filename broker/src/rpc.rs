//! Calls between the broker's processes (JSON over HTTP), each with a timeout. An
//! error answer is decoded back into its [`ApiError`] so callers can act on the code
//! (`FENCED_LEADER_EPOCH`, `NOT_CONTROLLER`, …); anything else is a transport failure.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{CONTENT_TYPE, HOST, HeaderMap, HeaderValue};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::net::TcpStream;

use crate::auth::ClusterAuth;
use crate::error::{ApiError, Code};

/// How long a connection to a peer may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

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
        .connect_timeout(CONNECT_TIMEOUT)
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

/// One kept-alive HTTP/1.1 connection to one peer, for a caller that calls it in a
/// loop (a follower's FETCHes): each call is one request written on an open socket,
/// without the pooled client's per-call work (parsing the URL, looking up the pool,
/// its layers). A call that fails drops the connection; the next one connects anew.
pub struct Connection {
    addr: String,
    /// The `Host` header and the cluster's credentials, built once.
    headers: HeaderMap,
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl Connection {
    /// A connection to `addr`, opened at the first call.
    pub fn new(addr: &str, auth: Option<&ClusterAuth>) -> Result<Connection, CallError> {
        let mut headers = auth.map(ClusterAuth::headers).unwrap_or_default();
        let host = HeaderValue::from_str(addr)
            .map_err(|e| CallError::Transport(format!("{addr}: not a host: {e}")))?;
        headers.insert(HOST, host);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(Connection {
            addr: addr.to_string(),
            headers,
            sender: None,
        })
    }

    /// POST `body` as JSON to `path`, bounded by `timeout` (connecting included).
    pub async fn post<Req: Serialize, Resp: DeserializeOwned>(
        &mut self,
        path: &str,
        body: &Req,
        timeout: Duration,
    ) -> Result<Resp, CallError> {
        let answer = match tokio::time::timeout(timeout, self.call(path, body)).await {
            Ok(answer) => answer,
            Err(_) => Err(format!("no answer within {timeout:?}")),
        };
        answer.map_err(|e| {
            // The connection is in an unknown state: the next call opens another.
            self.sender = None;
            CallError::Transport(format!("POST {}: {e}", self.url(path)))
        })?
    }

    /// One call: the answer decoded, or why there is none (Err: a transport failure).
    async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &mut self,
        path: &str,
        body: &Req,
    ) -> Result<Result<Resp, CallError>, String> {
        let json = serde_json::to_vec(body).map_err(|e| format!("encoding: {e}"))?;
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .body(Full::new(Bytes::from(json)))
            .map_err(|e| format!("building the request: {e}"))?;
        *request.headers_mut() = self.headers.clone();
        let resp = self
            .ready()
            .await?
            .send_request(request)
            .await
            .map_err(|e| format!("sending: {e}"))?;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("reading the answer: {e}"))?
            .to_bytes();
        Ok(decode_answer(&self.url(path), status, &bytes))
    }

    /// The URL of a call to `path`, for errors.
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The open connection, ready for a request; opened if there is none (or it
    /// closed).
    async fn ready(&mut self) -> Result<&mut SendRequest<Full<Bytes>>, String> {
        let open = match &mut self.sender {
            Some(sender) => sender.ready().await.is_ok(),
            None => false,
        };
        if !open {
            self.sender = None;
            let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&self.addr))
                .await
                .map_err(|_| format!("no connection within {CONNECT_TIMEOUT:?}"))?
                .map_err(|e| format!("connecting: {e}"))?;
            let _ = stream.set_nodelay(true);
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|e| format!("connecting: {e}"))?;
            // The connection's I/O runs beside its caller; dropping the sender ends it.
            tokio::spawn(conn);
            self.sender = Some(sender);
        }
        Ok(self.sender.as_mut().expect("opened above"))
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
    decode_answer(url, status, &bytes)
}

/// An answer's body: the value on success, else its error code decoded.
fn decode_answer<Resp: DeserializeOwned>(
    url: &str,
    status: StatusCode,
    bytes: &[u8],
) -> Result<Resp, CallError> {
    if status.is_success() {
        return serde_json::from_slice(bytes)
            .map_err(|e| CallError::Transport(format!("{url}: bad answer: {e}")));
    }
    let Ok(Value::Object(mut body)) = serde_json::from_slice::<Value>(bytes) else {
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

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use axum::extract::ConnectInfo;
    use axum::http::header::CONNECTION;
    use axum::response::IntoResponse;
    use axum::routing::post;
    use axum::{Json, Router};
    use serde_json::json;

    use super::*;

    /// A server answering `/peer` with the caller's address (one per connection),
    /// `/close` the same and closing the connection, `/fenced` an error.
    async fn server() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let peer = |ConnectInfo(peer): ConnectInfo<SocketAddr>| async move {
            Json(json!({"peer": peer.to_string()}))
        };
        let close = |ConnectInfo(peer): ConnectInfo<SocketAddr>| async move {
            (
                [(CONNECTION, "close")],
                Json(json!({"peer": peer.to_string()})),
            )
        };
        let fenced = || async {
            let body = json!({"error": "FENCED_LEADER_EPOCH", "message": "old", "leader_epoch": 4});
            (axum::http::StatusCode::CONFLICT, Json(body)).into_response()
        };
        let app = Router::new()
            .route("/peer", post(peer))
            .route("/close", post(close))
            .route("/fenced", post(fenced));
        let service = app.into_make_service_with_connect_info::<SocketAddr>();
        tokio::spawn(async move { axum::serve(listener, service).await.unwrap() });
        addr
    }

    const T: Duration = Duration::from_secs(10);

    async fn peer(conn: &mut Connection, path: &str) -> String {
        let answer: Value = conn.post(path, &json!({}), T).await.unwrap();
        answer["peer"].as_str().unwrap().to_string()
    }

    #[tokio::test]
    async fn calls_go_over_one_kept_connection_and_a_closed_one_is_opened_again() {
        let addr = server().await;
        let mut conn = Connection::new(&addr, None).unwrap();
        let first = peer(&mut conn, "/peer").await;
        assert_eq!(peer(&mut conn, "/peer").await, first, "one connection");
        // The server closes the connection after this answer: the next call opens
        // another instead of failing.
        assert_eq!(peer(&mut conn, "/close").await, first);
        let reopened = peer(&mut conn, "/peer").await;
        assert_ne!(reopened, first, "a new connection");
    }

    #[tokio::test]
    async fn an_error_answer_is_decoded_into_its_code() {
        let addr = server().await;
        let mut conn = Connection::new(&addr, None).unwrap();
        let answer: Result<Value, _> = conn.post("/fenced", &json!({}), T).await;
        match answer {
            Err(CallError::Api(e)) => {
                assert_eq!(e.code, Code::FencedLeaderEpoch);
                assert_eq!(e.extra.get("leader_epoch"), Some(&json!(4)));
            }
            other => panic!("expected FENCED_LEADER_EPOCH, got {other:?}"),
        }
        // The connection stays usable after an error answer.
        peer(&mut conn, "/peer").await;
    }

    #[tokio::test]
    async fn no_listener_is_a_transport_failure_naming_the_call() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        let mut conn = Connection::new(&addr, None).unwrap();
        let answer: Result<Value, _> = conn.post("/internal/fetch", &json!({}), T).await;
        match answer {
            Err(CallError::Transport(e)) => {
                assert!(
                    e.contains(&format!("POST http://{addr}/internal/fetch")),
                    "{e}"
                );
                assert!(e.contains("connecting"), "{e}");
            }
            other => panic!("expected a transport failure, got {other:?}"),
        }
    }
}
