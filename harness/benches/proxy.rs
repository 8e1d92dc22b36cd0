//! What a link proxy costs: every broker-to-broker and client-to-broker byte passes
//! through one, so its overhead bounds the throughput a campaign can drive. Compares a
//! request/response round trip and a bulk transfer over loopback, direct and through a
//! [`Link`].
//!
//! `cargo bench -p watermark --bench proxy`

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use watermark::net::proxy::Link;

fn main() {
    divan::main();
}

/// An echo server, a proxy in front of it, and a runtime to drive them.
struct Setup {
    rt: Runtime,
    echo: SocketAddr,
    _link: Link,
    proxied: SocketAddr,
}

fn setup() -> Setup {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (echo, link) = rt.block_on(async {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let echo = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let _ = s.set_nodelay(true);
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        (echo, Link::start(Some(echo)).await.unwrap())
    });
    let proxied = link.addr();
    Setup {
        rt,
        echo,
        _link: link,
        proxied,
    }
}

fn connect(rt: &Runtime, addr: SocketAddr) -> TcpStream {
    rt.block_on(async {
        let s = TcpStream::connect(addr).await.unwrap();
        s.set_nodelay(true).unwrap();
        s
    })
}

async fn exchange(s: &mut TcpStream, msg: &[u8], back: &mut [u8]) {
    s.write_all(msg).await.unwrap();
    s.read_exact(back).await.unwrap();
}

/// One 200-byte request echoed back (the size of a small produce or fetch).
#[divan::bench(args = ["direct", "proxied"])]
fn round_trip(bencher: divan::Bencher, path: &str) {
    let setup = setup();
    let addr = if path == "direct" {
        setup.echo
    } else {
        setup.proxied
    };
    let mut s = connect(&setup.rt, addr);
    let msg = [7u8; 200];
    let mut back = [0u8; 200];
    bencher.bench_local(|| setup.rt.block_on(exchange(&mut s, &msg, &mut back)));
}

/// 1 MiB echoed back (a replica catching up).
#[divan::bench(args = ["direct", "proxied"])]
fn bulk_1mib(bencher: divan::Bencher, path: &str) {
    let setup = setup();
    let addr = if path == "direct" {
        setup.echo
    } else {
        setup.proxied
    };
    let mut s = connect(&setup.rt, addr);
    let msg = vec![7u8; 1 << 20];
    let mut back = vec![0u8; 1 << 20];
    bencher
        .counter(divan::counter::BytesCount::new(msg.len()))
        .bench_local(|| {
            setup.rt.block_on(async {
                let (mut r, mut w) = s.split();
                let send = w.write_all(&msg);
                let recv = r.read_exact(&mut back);
                let (a, b) = tokio::join!(send, recv);
                a.unwrap();
                b.unwrap();
            })
        });
}
