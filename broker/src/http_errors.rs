//! JSON bodies for the errors the HTTP layer answers by itself. A request hyper
//! cannot parse — a malformed request line or header (400), a URI too long (414),
//! headers too large (431) — never reaches a route: hyper answers it with a bare
//! status line and an empty body, then closes the connection. Every error of the API
//! is JSON with a code, so each accepted connection is wrapped in [`JsonErrors`],
//! which recognises exactly that answer (one of those statuses, `content-length: 0`,
//! nothing after the head — the routes' own errors always have a body) on its way
//! out and gives it the body `{"error": "INVALID_REQUEST", "message": …}`.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::serve::Listener;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// A listener whose connections are [`JsonErrors`].
pub struct JsonErrorsListener(pub TcpListener);

impl Listener for JsonErrorsListener {
    type Io = JsonErrors<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (io, addr) = Listener::accept(&mut self.0).await;
        // Every answer is one write: sent at once, not held back for an ACK.
        let _ = io.set_nodelay(true);
        (JsonErrors::new(io), addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// A connection whose bare automatic error answers get a JSON body.
pub struct JsonErrors<IO> {
    io: IO,
    /// A rewritten answer still to be written, from `written` on.
    out: Vec<u8>,
    written: usize,
}

impl<IO> JsonErrors<IO> {
    pub fn new(io: IO) -> Self {
        JsonErrors {
            io,
            out: Vec::new(),
            written: 0,
        }
    }
}

impl<IO: AsyncWrite + Unpin> JsonErrors<IO> {
    /// Write what is left of a rewritten answer.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.out.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.out[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.out.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }
}

/// The answer with a JSON body, if `buf` is exactly one of hyper's bare automatic
/// error answers.
fn rewrite(buf: &[u8]) -> Option<Vec<u8>> {
    // Cheap checks first: every answer passes through here.
    if buf.len() > 512 || !buf.starts_with(b"HTTP/1.1 4") || !buf.ends_with(b"\r\n\r\n") {
        return None;
    }
    let head = std::str::from_utf8(buf).ok()?.strip_suffix("\r\n\r\n")?;
    if head.contains("\r\n\r\n") {
        return None;
    }
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let status = status_line.strip_prefix("HTTP/1.1 ")?.get(..3)?;
    let why = match status {
        "400" => "the request is not valid HTTP/1.1 (request line or headers)",
        "414" => "the request's URI is too long",
        "431" => "the request's headers are too large",
        _ => return None,
    };
    let headers: Vec<&str> = lines.collect();
    if !headers
        .iter()
        .any(|h| h.eq_ignore_ascii_case("content-length: 0"))
    {
        return None;
    }
    let body = serde_json::json!({
        "error": "INVALID_REQUEST",
        "message": format!("{why}; it was not read (see docs/api.md)"),
    })
    .to_string();
    let mut out = format!("{status_line}\r\n");
    for h in headers.iter().filter(|h| {
        let h = h.to_ascii_lowercase();
        !h.starts_with("content-length:") && !h.starts_with("content-type:")
    }) {
        out.push_str(h);
        out.push_str("\r\n");
    }
    out.push_str(&format!(
        "content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    ));
    Some(out.into_bytes())
}

impl<IO: AsyncRead + Unpin> AsyncRead for JsonErrors<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for JsonErrors<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.drain(cx))?;
        if let Some(answer) = rewrite(buf) {
            this.out = answer;
            // All of `buf` is taken; what is left of the answer goes out at the
            // next write or flush.
            if let Poll::Ready(Err(e)) = this.drain(cx) {
                return Poll::Ready(Err(e));
            }
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut this.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let mut nonempty = bufs.iter().filter(|b| !b.is_empty());
        if let (Some(only), None) = (nonempty.next(), nonempty.next()) {
            return self.poll_write(cx, only);
        }
        let this = self.get_mut();
        ready!(this.drain(cx))?;
        Pin::new(&mut this.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.drain(cx))?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.drain(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bare_automatic_errors_are_rewritten() {
        let bare = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\ndate: Tue, 01 Dec 2026 05:10:19 GMT\r\n\r\n";
        let out = String::from_utf8(rewrite(bare).unwrap()).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
        assert!(head.contains("connection: close") && head.contains("date: "));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        assert!(head.contains("content-type: application/json"));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"], "INVALID_REQUEST");
        assert!(
            v["message"]
                .as_str()
                .unwrap()
                .contains("headers are too large")
        );
        for status in ["400 Bad Request", "414 URI Too Long"] {
            let bare = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
            assert!(rewrite(bare.as_bytes()).is_some(), "{status}");
        }
        for kept in [
            // The routes' own errors have a body.
            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
            "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            "HTTP/1.1 400 Bad Request\r\ntransfer-encoding: chunked\r\n\r\n",
            "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\nHTTP/1.1 400 Bad Request\r\n\r\n",
        ] {
            assert_eq!(rewrite(kept.as_bytes()), None, "{kept:?}");
        }
    }
}
