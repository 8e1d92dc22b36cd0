//! `watermark serve`: browse the results directory in a web browser.
//!
//! - `/`: the index, newest first: each run folder with its workload, seed, date,
//!   verdict and anomaly counts, linking its report and raw files; each campaign
//!   folder (a `--test-count` series, a self-test) with its runs' verdicts;
//! - `/campaigns/FOLDER/`: a campaign folder, a row per campaign and a strip of
//!   its verdicts in the order they ran;
//! - `/trend`: every run's verdict as a coloured cell, a row per day;
//! - `/runs/PATH`: the files themselves.
//!
//! Long lists are paged, `?page=N` ([`pages::Paging`]). What is listed and how it is
//! read: [`listing`]; the HTML: [`pages`]. Files are served only from inside the
//! results directory: a path with `..` or a root is refused, and every path is
//! canonicalised (following symlinks) and must still lie under the canonical root,
//! so a symlink pointing outside is refused too. Errors are JSON with a code, like
//! the broker's. Binds 127.0.0.1 unless told otherwise.

mod listing;
mod pages;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use serde_json::json;

use crate::exit::Exit;
use crate::report::text::escape;
use listing::{Entry, RunRef};
use pages::{Paging, encode};

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
        .route("/campaigns", get(|| async { Redirect::permanent("/") }))
        .route("/campaigns/", get(|| async { Redirect::permanent("/") }))
        .route("/campaigns/{*path}", get(campaign))
        .route("/trend", get(trend))
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

/// `?page=N` (1 when absent), or why it is no page number.
fn page_number(query: &HashMap<String, String>) -> Result<usize, String> {
    match query.get("page") {
        None => Ok(1),
        Some(p) => p
            .parse::<usize>()
            .map_err(|_| format!("page `{p}` is not a page number (1, 2, …)")),
    }
}

/// Render a page off the async threads (listing reads many small files): the
/// page, or 404 with why there is no such page.
async fn listed(render: impl FnOnce() -> Result<String, String> + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(render).await {
        Ok(Ok(page)) => Html(page).into_response(),
        Ok(Err(why)) => error(StatusCode::NOT_FOUND, "NO_SUCH_PAGE", &why),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "LISTING_FAILED",
            &format!("cannot list the results directory: {e}"),
        ),
    }
}

/// The index: run folders and campaign folders, newest first, a page of them.
async fn index(
    State(root): State<Arc<Root>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let page = match page_number(&query) {
        Ok(p) => p,
        Err(why) => return error(StatusCode::BAD_REQUEST, "BAD_PAGE", &why),
    };
    let root = root.0.clone();
    listed(move || {
        let entries = listing::entries(&root);
        let paging = Paging::new(page, pages::ROWS_PER_PAGE, entries.len())?;
        let runs = entries
            .iter()
            .filter(|e| matches!(e, Entry::Run(_)))
            .count();
        let mut rows = String::new();
        for entry in &entries[paging.range()] {
            rows.push_str(&match entry {
                Entry::Run(run) => pages::run_row(&listing::summarise(&root, run), None),
                Entry::Campaign {
                    name,
                    kind,
                    started_at,
                } => pages::campaign_row(
                    name,
                    *kind,
                    started_at.as_deref(),
                    &listing::runs_in(&root.join(name), name),
                ),
            });
        }
        let mut out = pages::head("watermark runs", "/");
        out.push_str(&format!(
            "<p id=\"run-count\">{runs} runs and {} campaign folders, newest first.</p>{}{}{rows}</table>{}",
            paging.total - runs,
            paging.nav("/"),
            pages::runs_header(false),
            paging.nav("/"),
        ));
        out.push_str(pages::FOOT);
        Ok(out)
    })
    .await
}

/// A campaign folder's page; `rel` may name any folder of the results directory.
async fn campaign(
    State(root): State<Arc<Root>>,
    UrlPath(rel): UrlPath<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let page = match page_number(&query) {
        Ok(p) => p,
        Err(why) => return error(StatusCode::BAD_REQUEST, "BAD_PAGE", &why),
    };
    let dir = match resolve(&root.0, &rel) {
        Ok(p) => p,
        Err((status, code, message)) => return error(status, code, &message),
    };
    // Named as from the root, whatever the path said (`a/./b`, a link inside).
    let name = dir
        .strip_prefix(&root.0)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !dir.is_dir() || name.is_empty() {
        return error(
            StatusCode::NOT_FOUND,
            "NOT_A_CAMPAIGN",
            &format!("{rel} is not a folder of the results directory"),
        );
    }
    if dir.join("run.json").is_file() {
        // A run folder, not a campaign folder: its files.
        return Redirect::to(&format!("/runs/{}/", pages::encode_path(&name))).into_response();
    }
    let base = format!("/campaigns/{}/", pages::encode_path(&name));
    if !rel.ends_with('/') {
        return Redirect::permanent(&base).into_response();
    }
    let root = root.0.clone();
    listed(move || {
        let kind = listing::campaign_kind(&dir).unwrap_or(listing::Kind::Folder);
        let runs = listing::runs_in(&dir, &name);
        let paging = Paging::new(page, pages::ROWS_PER_PAGE, runs.len())?;
        let said = listing::read_json(&dir.join("summary.json"))
            .ok()
            .and_then(|s| Some(format!("its summary: {}", s.get("outcome")?.as_str()?)));
        let start = paging.range().start;
        let rows: String = runs[paging.range()]
            .iter()
            .enumerate()
            .map(|(i, r)| pages::run_row(&listing::summarise(&root, r), Some((start + i + 1, &name))))
            .collect();
        let mut out = pages::campaign_head(&name, kind, &runs, said.as_deref());
        let r = paging.range();
        let here = if paging.pages() > 1 {
            format!("; {}–{} below", r.start + 1, r.end)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "<h2>Runs</h2><p id=\"run-count\">{} runs, in the order they ran{here}.</p>{}{}{rows}</table>{}",
            runs.len(),
            paging.nav(&base),
            pages::runs_header(true),
            paging.nav(&base),
        ));
        out.push_str(pages::FOOT);
        Ok(out)
    })
    .await
}

/// The trend: every run's verdict, by day, a page of runs.
async fn trend(
    State(root): State<Arc<Root>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let page = match page_number(&query) {
        Ok(p) => p,
        Err(why) => return error(StatusCode::BAD_REQUEST, "BAD_PAGE", &why),
    };
    let root = root.0.clone();
    listed(move || {
        let runs: Vec<RunRef> = listing::all_runs(&root);
        let paging = Paging::new(page, pages::TREND_PER_PAGE, runs.len())?;
        Ok(pages::trend(&runs, &paging))
    })
    .await
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
    let mut page = format!("{}<p><a href=\"../\">up</a></p><ul>", pages::head(rel, ""));
    for (n, is_dir) in names {
        let slash = if is_dir { "/" } else { "" };
        page.push_str(&format!(
            "<li><a href=\"{}{slash}\">{}{slash}</a></li>",
            encode(&n),
            escape(&n)
        ));
    }
    page.push_str("</ul>");
    page.push_str(pages::FOOT);
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
