//! Starting an HTTP listener the way tests and the harness expect: bind (port 0 takes
//! a free port), print `listening on ADDR` as the first line on stdout, and write ADDR
//! to `DATA_DIR/address`, so nobody races for ports.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;

use tokio::net::TcpListener;

/// Bind `listen`, then announce the bound address on stdout and in `data_dir/address`.
pub async fn bind_and_announce(
    listen: SocketAddr,
    data_dir: &Path,
) -> std::io::Result<TcpListener> {
    std::fs::create_dir_all(data_dir)?;
    let listener = TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    crate::fsutil::write_atomic(&data_dir.join("address"), addr.to_string().as_bytes())?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on {addr}")?;
    out.flush()?;
    Ok(listener)
}
