//! `watermark serve`: browse the results directory in a web browser.
//!
//! An index of runs, newest first, each with its workload, seed, date, verdict
//! and anomaly counts, linking its report and raw files. Files are served only
//! from inside the results directory: a path with `..` or a root is refused, and
//! every path is canonicalised (following symlinks) and must still lie under the
//! canonical root, so a symlink pointing outside is refused too. Errors are JSON
//! with a code, like the broker's. Binds 127.0.0.1 unless told otherwise.

use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use serde_json::{Value, json};

use crate::exit::Exit;
use crate::report::text::escape;

/// Options of `watermark serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The results directory to browse.
    #[arg(default_value = "results")]
    pub results: PathBuf,
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
}

/// Run `watermark serve` until Ctrl-C.
pub fn run(args: ServeArgs) -> Exit {
    let root = match std::fs::canonicalize(&args.results) {
        Ok(r) if r.is_dir() => r,
        Ok(r) => {
            eprintln!(
                "watermark serve: {} is not a directory: give the results directory",
                r.display()
            );
            return Exit::Usage;
        }
        Err(e) => {
            eprintln!(
                "watermark serve: cannot open the results directory {}: {e} (run `watermark run` first, or name another directory)",
                args.results.display()
            );
            return Exit::Usage;
        }
    };
    let addr: SocketAddr = match args.listen.parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "watermark serve: --listen {}: {e} (expected IP:PORT, e.g. 127.0.0.1:8080)",
                args.listen
            );
            return Exit::Usage;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("watermark serve: cannot start the runtime: {e}");
            return Exit::HarnessFailed;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!(
                    "watermark serve: cannot listen on {addr}: {e} (choose another with --listen)"
                );
                return Exit::HarnessFailed;
            }
        };
        let local = listener.local_addr().unwrap_or(addr);
        {
            use std::io::Write as _;
            // A closed stdout (the parent stopped reading) must not stop the server.
            let mut stdout = std::io::stdout();
            let _ = writeln!(stdout, "listening on {local}");
            let _ = stdout.flush();
        }
        eprintln!("serving {} at http://{local}/", root.display());
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        match axum::serve(listener, router(root))
            .with_graceful_shutdown(shutdown)
            .await
        {
            Ok(()) => Exit::Valid,
            Err(e) => {
                eprintln!("watermark serve: {e}");
                Exit::HarnessFailed
            }
        }
    })
}

struct Root(PathBuf);

/// The routes over a canonical results directory.
pub fn router(root: PathBuf) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/runs", get(|| async { Redirect::permanent("/") }))
        .route("/runs/", get(|| async { Redirect::permanent("/") }))
        .route("/runs/{*path}", get(file))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "NOT_FOUND", "no such page") })
        .with_state(Arc::new(Root(root)))
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": code, "message": message})),
    )
        .into_response()
}

/// The files of a run folder the index links to.
const RUN_FILES: [&str; 6] = [
    "report.html",
    "run.json",
    "history.jsonl",
    "results.json",
    "junit.xml",
    "nodes",
];

/// One run folder, as the index shows it.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    pub name: String,
    pub workload: Option<String>,
    pub seed: Option<String>,
    pub started_at: Option<String>,
    /// `valid`, `invalid`, `unknown`, or why there is none.
    pub verdict: String,
    /// (kind, count), over every checker.
    pub anomalies: Vec<(String, u64)>,
    pub has_report: bool,
    /// Which of the run folder's files exist.
    pub files: Vec<&'static str>,
    /// What could not be read.
    pub problems: Vec<String>,
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", file_name(path)))?;
    serde_json::from_str(&text).map_err(|e| format!("{}:{}: {e}", file_name(path), e.line()))
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Summarise one run folder; a broken folder still gets a row saying what is wrong.
pub fn summarise(dir: &Path) -> RunSummary {
    let mut s = RunSummary {
        name: file_name(dir),
        has_report: dir.join("report.html").is_file(),
        files: RUN_FILES
            .iter()
            .copied()
            .filter(|f| dir.join(f).exists())
            .collect(),
        ..Default::default()
    };
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        v => Some(v.to_string()),
    };
    match read_json(&dir.join("run.json")) {
        Ok(run) => {
            s.workload = run.get("workload").and_then(scalar);
            s.seed = run.get("seed").and_then(scalar);
            s.started_at = run.get("started_at").and_then(scalar);
        }
        Err(e) => s.problems.push(e),
    }
    match read_json(&dir.join("results.json")) {
        Ok(results) => {
            s.verdict = match results.get("valid") {
                Some(Value::Bool(true)) => "valid".into(),
                Some(Value::Bool(false)) => "invalid".into(),
                Some(Value::String(u)) if u == "unknown" => "unknown".into(),
                _ => "unreadable".into(),
            };
            let mut counts: std::collections::BTreeMap<String, u64> = Default::default();
            if let Some(Value::Object(checkers)) = results.get("checkers") {
                for c in checkers.values() {
                    if let Some(Value::Array(list)) = c.get("anomalies") {
                        for a in list {
                            if let Some(k) = a.get("kind").and_then(Value::as_str) {
                                *counts.entry(k.to_string()).or_default() += 1;
                            }
                        }
                    }
                }
            }
            s.anomalies = counts.into_iter().collect();
        }
        Err(e) => {
            s.verdict = "not checked".into();
            s.problems.push(e);
        }
    }
    s
}

/// Every run folder under `root`, newest first (by start time, else by name).
pub fn list_runs(root: &Path) -> Vec<RunSummary> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut runs: Vec<RunSummary> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            // `latest` is a link to a run listed anyway.
            e.file_type().map(|t| t.is_dir()).unwrap_or(false) && e.file_name() != "latest"
        })
        .map(|e| summarise(&e.path()))
        .collect();
    runs.sort_by(|a, b| {
        (b.started_at.as_deref().unwrap_or(""), &b.name)
            .cmp(&(a.started_at.as_deref().unwrap_or(""), &a.name))
    });
    runs
}

/// Percent-encode a path segment for an href.
fn encode(segment: &str) -> String {
    let mut out = String::new();
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

const CSS: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:20px;color:#1d2127}table{border-collapse:collapse}td,th{border:1px solid #dde1e6;padding:4px 8px;text-align:left}th{background:#f0f2f5}td.time{white-space:nowrap}.valid{color:#2e8540;font-weight:700}.invalid{color:#c62828;font-weight:700}.unknown{color:#b26a00;font-weight:700}.broken{color:#777}code{font-size:12.5px}";

async fn index(State(root): State<Arc<Root>>) -> Response {
    let root = root.0.clone();
    let runs = tokio::task::spawn_blocking(move || list_runs(&root))
        .await
        .unwrap_or_default();
    let mut page = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>watermark runs</title><style>{CSS}</style></head><body><h1>watermark runs</h1><p id=\"run-count\">{} runs, newest first.</p><table id=\"runs\"><tr><th>run</th><th>workload</th><th>seed</th><th>started</th><th>verdict</th><th>anomalies</th><th>files</th></tr>",
        runs.len()
    );
    for r in &runs {
        let base = format!("/runs/{}/", encode(&r.name));
        let name_cell = if r.has_report {
            format!(
                "<a class=\"report-link\" href=\"{base}report.html\">{}</a>",
                escape(&r.name)
            )
        } else {
            escape(&r.name)
        };
        let anomalies = if r.anomalies.is_empty() {
            "—".to_string()
        } else {
            r.anomalies
                .iter()
                .map(|(k, n)| format!("{n} {}", escape(k)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut files = String::new();
        for f in &r.files {
            let slash = if *f == "nodes" { "/" } else { "" };
            files.push_str(&format!("<a href=\"{base}{f}{slash}\">{f}{slash}</a> "));
        }
        let problems = if r.problems.is_empty() {
            String::new()
        } else {
            format!(
                "<br><span class=\"broken\">{}</span>",
                escape(&r.problems.join("; "))
            )
        };
        let verdict_class = match r.verdict.as_str() {
            "valid" | "invalid" | "unknown" => r.verdict.as_str(),
            _ => "broken",
        };
        page.push_str(&format!(
            "<tr class=\"run\" data-run=\"{}\"><td>{name_cell}{problems}</td><td>{}</td><td>{}</td><td class=\"time\">{}</td><td class=\"{verdict_class}\">{}</td><td>{anomalies}</td><td>{files}</td></tr>",
            escape(&r.name),
            escape(r.workload.as_deref().unwrap_or("?")),
            escape(r.seed.as_deref().unwrap_or("?")),
            escape(r.started_at.as_deref().unwrap_or("?")),
            escape(&r.verdict),
        ));
    }
    page.push_str("</table></body></html>");
    Html(page).into_response()
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("json") => "application/json",
        Some("xml") => "application/xml; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        _ => "text/plain; charset=utf-8",
    }
}

/// Where `rel` points inside `root`, or the error answer.
pub fn resolve(root: &Path, rel: &str) -> Result<PathBuf, (StatusCode, &'static str, String)> {
    let forbidden = |why: &str| {
        Err((
            StatusCode::FORBIDDEN,
            "FORBIDDEN",
            format!("{why}: only files inside the results directory are served"),
        ))
    };
    if rel.contains('\0') || rel.contains('\\') {
        return forbidden("bad character in path");
    }
    let rel_path = Path::new(rel);
    for c in rel_path.components() {
        match c {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => return forbidden("`..` in path"),
            Component::RootDir | Component::Prefix(_) => return forbidden("absolute path"),
        }
    }
    let joined = root.join(rel_path);
    let canonical = std::fs::canonicalize(&joined).map_err(|_| {
        (
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            format!("no such file: {rel}"),
        )
    })?;
    if !canonical.starts_with(root) {
        return forbidden("the path leads outside the results directory");
    }
    Ok(canonical)
}

async fn file(State(root): State<Arc<Root>>, UrlPath(rel): UrlPath<String>) -> Response {
    let path = match resolve(&root.0, &rel) {
        Ok(p) => p,
        Err((status, code, message)) => return error(status, code, &message),
    };
    if path.is_dir() {
        if !rel.is_empty() && !rel.ends_with('/') {
            return Redirect::permanent(&format!(
                "/runs/{}/",
                rel.split('/').map(encode).collect::<Vec<_>>().join("/")
            ))
            .into_response();
        }
        return directory(&path, &rel).await;
    }
    match tokio::fs::read(&path).await {
        Ok(bytes) => ([(header::CONTENT_TYPE, content_type(&path))], bytes).into_response(),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "READ_FAILED",
            &format!("cannot read {rel}: {e}"),
        ),
    }
}

async fn directory(path: &Path, rel: &str) -> Response {
    let mut names: Vec<(String, bool)> = Vec::new();
    if let Ok(mut rd) = tokio::fs::read_dir(path).await {
        while let Ok(Some(e)) = rd.next_entry().await {
            let is_dir = e.file_type().await.map(|t| t.is_dir()).unwrap_or(false);
            names.push((e.file_name().to_string_lossy().into_owned(), is_dir));
        }
    }
    names.sort();
    let mut page = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{0}</title><style>{CSS}</style></head><body><h1>{0}</h1><p><a href=\"/\">all runs</a> · <a href=\"../\">up</a></p><ul>",
        escape(rel)
    );
    for (n, is_dir) in names {
        let slash = if is_dir { "/" } else { "" };
        page.push_str(&format!(
            "<li><a href=\"{}{slash}\">{}{slash}</a></li>",
            encode(&n),
            escape(&n)
        ));
    }
    page.push_str("</ul></body></html>");
    Html(page).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("a.txt"), "x").unwrap();
        assert_eq!(resolve(&root, "a.txt").unwrap(), root.join("a.txt"));
        assert_eq!(
            resolve(&root, "../etc/passwd").unwrap_err().0,
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            resolve(&root, "/etc/passwd").unwrap_err().0,
            StatusCode::FORBIDDEN
        );
        assert_eq!(resolve(&root, "nope").unwrap_err().0, StatusCode::NOT_FOUND);
        std::os::unix::fs::symlink("/etc", root.join("out")).unwrap();
        assert_eq!(
            resolve(&root, "out/passwd").unwrap_err().0,
            StatusCode::FORBIDDEN
        );
        assert_eq!(encode("a b/c"), "a%20b%2Fc");
    }
}
