//! Cluster credentials: every process of a cluster shares a cluster id and a secret
//! (`--cluster-id`, and `--secret-file PATH` or the `BROKER_CLUSTER_SECRET`
//! environment variable). Every internal call carries them (`X-Cluster-Id`, and
//! `Authorization: Bearer SECRET`), and every process refuses an internal request —
//! `/internal/*`, and `POST /debug/*` (the fault switch) — that does not: `401
//! UNAUTHENTICATED` without them, `403 CLUSTER_AUTHORIZATION_FAILED` with others. So
//! a request from outside the cluster, or from a process of another cluster that
//! reused a port, changes nothing. Without credentials (neither flag) internal
//! requests are not checked, as before; the process says so when it starts.

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, Code};

/// The header naming the caller's cluster.
pub const CLUSTER_ID_HEADER: &str = "x-cluster-id";
/// The environment variable a secret may come from instead of `--secret-file`.
pub const SECRET_ENV: &str = "BROKER_CLUSTER_SECRET";

/// A cluster's id and shared secret.
#[derive(Clone)]
pub struct ClusterAuth {
    cluster_id: String,
    secret: String,
}

impl std::fmt::Debug for ClusterAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterAuth")
            .field("cluster_id", &self.cluster_id)
            .field("secret", &"…")
            .finish()
    }
}

impl ClusterAuth {
    /// The credentials from the command line (`--cluster-id`, `--secret-file`) or the
    /// environment: None when neither an id nor a secret is given.
    pub fn from_args(
        cluster_id: Option<&str>,
        secret_file: Option<&Path>,
    ) -> Result<Option<ClusterAuth>, String> {
        let secret = match secret_file {
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read --secret-file {}: {e}", path.display()))?
                    .trim()
                    .to_string(),
            ),
            None => std::env::var(SECRET_ENV).ok(),
        };
        match (cluster_id, secret) {
            (None, None) => Ok(None),
            (Some(_), None) => Err(format!(
                "--cluster-id needs a secret: --secret-file PATH or {SECRET_ENV}"
            )),
            (None, Some(_)) => Err("a cluster secret needs --cluster-id".into()),
            (Some(id), Some(secret)) => ClusterAuth::new(id, &secret).map(Some),
        }
    }

    /// Credentials from their parts (both non-empty, the id printable ASCII).
    pub fn new(cluster_id: &str, secret: &str) -> Result<ClusterAuth, String> {
        if cluster_id.is_empty() || !cluster_id.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!(
                "--cluster-id `{cluster_id}` must be non-empty printable ASCII without spaces"
            ));
        }
        if secret.is_empty() || !secret.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(
                "the cluster secret must be non-empty printable ASCII without spaces".into(),
            );
        }
        Ok(ClusterAuth {
            cluster_id: cluster_id.to_string(),
            secret: secret.to_string(),
        })
    }

    /// The cluster id.
    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// The headers every internal call carries.
    pub fn headers(&self) -> reqwest::header::HeaderMap {
        let mut h = reqwest::header::HeaderMap::new();
        let id = self.cluster_id.parse().expect("checked: printable ASCII");
        let mut bearer: reqwest::header::HeaderValue = format!("Bearer {}", self.secret)
            .parse()
            .expect("checked: printable ASCII");
        bearer.set_sensitive(true);
        h.insert(CLUSTER_ID_HEADER, id);
        h.insert(reqwest::header::AUTHORIZATION, bearer);
        h
    }

    /// Whether a request's headers carry these credentials.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let id = headers.get(CLUSTER_ID_HEADER).and_then(|v| v.to_str().ok());
        let secret = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let (Some(id), Some(secret)) = (id, secret) else {
            return Err(ApiError::new(
                Code::Unauthenticated,
                format!(
                    "internal requests need the cluster's credentials: the {CLUSTER_ID_HEADER} \
                     header and Authorization: Bearer SECRET"
                ),
            ));
        };
        if id != self.cluster_id {
            return Err(ApiError::new(
                Code::ClusterAuthorizationFailed,
                format!(
                    "cluster id `{id}` is not this cluster's (`{}`)",
                    self.cluster_id
                ),
            ));
        }
        if !same(secret.as_bytes(), self.secret.as_bytes()) {
            return Err(ApiError::new(
                Code::ClusterAuthorizationFailed,
                "wrong cluster secret",
            ));
        }
        Ok(())
    }
}

/// Equal bytes, compared in time independent of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether a request needs the credentials: internal calls and debug changes.
fn protected(method: &Method, path: &str) -> bool {
    path.starts_with("/internal/") || (method == Method::POST && path.starts_with("/debug/"))
}

/// `routes` refusing protected requests without the credentials; with none
/// configured every request passes, and no layer is added (a layer is work on every
/// request, however small).
pub fn guarded<S: Clone + Send + Sync + 'static>(
    routes: Router<S>,
    auth: Option<Arc<ClusterAuth>>,
) -> Router<S> {
    match auth {
        Some(auth) => routes.layer(middleware::from_fn_with_state(auth, guard)),
        None => routes,
    }
}

/// The middleware refusing protected requests without the credentials.
async fn guard(State(auth): State<Arc<ClusterAuth>>, req: Request, next: Next) -> Response {
    if protected(req.method(), req.uri().path()) {
        if let Err(e) = auth.check(req.headers()) {
            return e.into_response();
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(id: Option<&str>, auth: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(id) = id {
            h.insert(CLUSTER_ID_HEADER, id.parse().unwrap());
        }
        if let Some(a) = auth {
            h.insert(axum::http::header::AUTHORIZATION, a.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_the_same_id_and_secret_pass() {
        let auth = ClusterAuth::new("c1", "s3cret").unwrap();
        assert!(
            auth.check(&headers(Some("c1"), Some("Bearer s3cret")))
                .is_ok()
        );
        for (h, code) in [
            (headers(None, None), Code::Unauthenticated),
            (headers(Some("c1"), None), Code::Unauthenticated),
            (headers(None, Some("Bearer s3cret")), Code::Unauthenticated),
            (headers(Some("c1"), Some("s3cret")), Code::Unauthenticated),
            (
                headers(Some("c2"), Some("Bearer s3cret")),
                Code::ClusterAuthorizationFailed,
            ),
            (
                headers(Some("c1"), Some("Bearer s3cre")),
                Code::ClusterAuthorizationFailed,
            ),
            (
                headers(Some("c1"), Some("Bearer s3cretx")),
                Code::ClusterAuthorizationFailed,
            ),
        ] {
            assert_eq!(auth.check(&h).unwrap_err().code, code, "{h:?}");
        }
        let sent = auth.headers();
        let mut h = HeaderMap::new();
        for (k, v) in &sent {
            h.insert(k.clone(), v.clone());
        }
        assert!(auth.check(&h).is_ok(), "what a client sends passes");
        assert!(!format!("{auth:?}").contains("s3cret"));
    }

    #[test]
    fn protected_routes_are_internal_calls_and_debug_changes() {
        assert!(protected(&Method::POST, "/internal/fetch"));
        assert!(protected(&Method::GET, "/internal/anything"));
        assert!(protected(&Method::POST, "/debug/disk"));
        assert!(!protected(&Method::GET, "/debug/disk"));
        assert!(!protected(&Method::GET, "/debug/partitions"));
        assert!(!protected(&Method::POST, "/v1/topics"));
    }

    #[test]
    fn both_parts_or_neither() {
        if std::env::var(SECRET_ENV).is_err() {
            assert!(ClusterAuth::from_args(None, None).unwrap().is_none());
        }
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("secret");
        std::fs::write(&file, "abc\n").unwrap();
        let auth = ClusterAuth::from_args(Some("c"), Some(&file))
            .unwrap()
            .unwrap();
        assert_eq!(auth.secret, "abc");
        assert!(ClusterAuth::from_args(None, Some(&file)).is_err());
        let missing = d.path().join("none");
        let e = ClusterAuth::from_args(Some("c"), Some(&missing)).unwrap_err();
        assert!(e.contains("cannot read --secret-file"), "{e}");
        assert!(ClusterAuth::new("a b", "x").is_err());
        assert!(ClusterAuth::new("a", "").is_err());
    }
}
