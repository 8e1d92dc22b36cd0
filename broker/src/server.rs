//! Starting an HTTP listener the way tests and the harness expect: bind (port 0 takes
//! a free port), print `listening on ADDR` as the first line on stdout, and write ADDR
//! to `DATA_DIR/address`, so nobody races for ports.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::Path;

use tokio::net::TcpListener;

use crate::http_errors::JsonErrorsListener;

/// Bind `listen`, then announce the bound address on stdout and in `data_dir/address`.
/// Each error says which of the three steps failed (data dir, socket, address file).
/// The listener's connections answer even the requests the HTTP layer cannot parse
/// with JSON errors ([`JsonErrorsListener`]).
pub async fn bind_and_announce(
    listen: SocketAddr,
    data_dir: &Path,
) -> std::io::Result<JsonErrorsListener> {
    std::fs::create_dir_all(data_dir).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot create data dir {}: {e}", data_dir.display()),
        )
    })?;
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {listen}: {e}")))?;
    let addr = listener.local_addr()?;
    let file = data_dir.join("address");
    crate::fsutil::write_atomic(&file, addr.to_string().as_bytes()).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot write the address file {}: {e}", file.display()),
        )
    })?;
    let mut out = io::stdout().lock();
    writeln!(out, "listening on {addr}")?;
    out.flush()?;
    Ok(JsonErrorsListener(listener))
}
