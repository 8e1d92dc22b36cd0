//! A TCP proxy on one directed link (process A → process B), so the harness can cut
//! the network between processes without root.
//!
//! Every process is handed the proxy's address instead of its peer's, so all of A's
//! connections to B pass through this proxy. A cut link behaves like an iptables DROP
//! on both directions of those connections, new or already open (pooled):
//! - the proxy stops *reading* from both sockets, so bytes wait in the kernel's buffers
//!   and nothing is forwarded, closed or reset; the peers' own timeouts fire, exactly
//!   as they would when packets vanish;
//! - a connection accepted while the link is cut is held the same way (the kernel
//!   completes the handshake, but no byte reaches B until the heal);
//! - bytes already read when the cut came are held, not dropped.
//!
//! On heal the held bytes flow again, as TCP's retransmissions would deliver them after
//! a DROP rule is removed. Reading and discarding instead would corrupt the byte stream
//! (an HTTP request cut in half), which no real network does to a TCP connection.
//!
//! Short of a cut, a link can be degraded ([`Conditions`]: latency, lost segments and
//! resets, a bandwidth limit; see [`super::shaping`]): each direction of a connection
//! is a reader that gives every chunk its fate and the time it is due, and a writer
//! that forwards the chunks in order when due, at the throttle's pace.
//!
//! The target (B's real address) is settable: a restarted broker takes a fresh port
//! (`--listen 127.0.0.1:0`), and the harness points the proxy at it, while A keeps the
//! proxy's address. While B is down the target is `None` and the proxy stops listening
//! (its socket keeps the port), so A's new connections are refused, as they are by a
//! dead process's port: A knows its request was never sent. While the link is cut the
//! proxy listens even with B down, since a dropped SYN is never refused. Connections
//! to the old process end when it dies.

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use std::sync::atomic::{AtomicU64, Ordering};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};

use tokio::net::TcpStream;
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use super::shaping::{Conditions, Dice, Fate, piece, transfer_time};

/// One directed link's proxy. Dropping it stops the proxy and closes its connections.
#[derive(Debug)]
pub struct Link {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept_task: JoinHandle<()>,
}

#[derive(Debug)]
struct Shared {
    target: watch::Sender<Option<SocketAddr>>,
    cut: watch::Sender<bool>,
    /// Read by every chunk, so a change applies to open connections too.
    conditions: watch::Sender<Conditions>,
    /// The seed of the draws of connections opened from now on.
    seed: AtomicU64,
    /// Whether only B's answers are held ([`Link::cut_answers`]).
    answers_cut: std::sync::atomic::AtomicBool,
    /// Whether the B → A direction is held: the link cut, or only its answers.
    down_cut: watch::Sender<bool>,
}

impl Link {
    /// Listen on a free loopback port and forward to `target`.
    pub async fn start(target: Option<SocketAddr>) -> std::io::Result<Link> {
        let listener = bind_own_port()?;
        let addr = listener.local_addr()?;
        // Refusing from the start if the target is down.
        let (port, switched) = Port::new(listener)?.switch(target.is_some());
        switched?;
        let shared = Arc::new(Shared {
            target: watch::Sender::new(target),
            cut: watch::Sender::new(false),
            conditions: watch::Sender::new(Conditions::default()),
            seed: AtomicU64::new(0),
            answers_cut: std::sync::atomic::AtomicBool::new(false),
            down_cut: watch::Sender::new(false),
        });
        let accept_task = tokio::spawn(accept_loop(port, shared.clone()));
        Ok(Link {
            addr,
            shared,
            accept_task,
        })
    }

    /// The address to give the process on the link's sending side.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Forward new connections to `target` (None: the target is down; refuse them).
    pub fn set_target(&self, target: Option<SocketAddr>) {
        self.shared.target.send_replace(target);
    }

    /// Blackhole the link, open connections included.
    pub fn cut(&self) {
        self.shared.cut.send_replace(true);
        self.shared.down_cut.send_replace(true);
    }

    /// Let bytes flow again, both ways (answers held by [`Link::cut_answers`] too).
    pub fn heal(&self) {
        self.shared.answers_cut.store(false, Ordering::SeqCst);
        self.shared.cut.send_replace(false);
        self.shared.down_cut.send_replace(false);
    }

    /// Hold B's answers only (a one-way cut of B → A): A's requests still reach B,
    /// which acts on them, but its answers wait as a cut link's bytes do. An answer
    /// held past A's own timeout is never read: A gave up on the connection.
    pub fn cut_answers(&self) {
        self.shared.answers_cut.store(true, Ordering::SeqCst);
        self.shared.down_cut.send_replace(true);
    }

    /// Let B's answers flow again (unless the whole link is cut).
    pub fn heal_answers(&self) {
        self.shared.answers_cut.store(false, Ordering::SeqCst);
        let cut = *self.shared.cut.borrow();
        self.shared.down_cut.send_replace(cut);
    }

    pub fn is_cut(&self) -> bool {
        *self.shared.cut.borrow()
    }

    /// Degrade the link (open connections included), or restore it with
    /// `Conditions::default()`; connections opened from now on draw from `seed`.
    pub fn condition(&self, conditions: Conditions, seed: u64) {
        self.shared.seed.store(seed, Ordering::Relaxed);
        self.shared.conditions.send_replace(conditions);
    }

    pub fn conditions(&self) -> Conditions {
        *self.shared.conditions.borrow()
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // The accept task owns the connection tasks (a JoinSet): aborting it ends them all.
        self.accept_task.abort();
    }
}

/// A loopback listener on a port of its own. The port is found by binding port 0, then
/// bound again by number: a socket bound to an explicit port keeps it when it stops
/// listening (Linux releases an automatically chosen one), so it can listen again on
/// the same address.
fn bind_own_port() -> std::io::Result<std::net::TcpListener> {
    let mut last = None;
    for _ in 0..16 {
        let addr = std::net::TcpListener::bind(("127.0.0.1", 0))?.local_addr()?;
        match std::net::TcpListener::bind(addr) {
            Ok(listener) => {
                listener.set_nonblocking(true)?;
                return Ok(listener);
            }
            // Someone took the port in between: draw another.
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::ErrorKind::AddrInUse.into()))
}

/// Watch `socket` for incoming connections with tokio's reactor; on failure, the
/// socket back with the error.
fn register(
    socket: std::net::TcpListener,
) -> Result<AsyncFd<std::net::TcpListener>, (std::net::TcpListener, std::io::Error)> {
    // SAFETY: a std TcpListener owns its file descriptor: it stays open, and is the one
    // `as_raw_fd` returns, until the listener is dropped, which only the AsyncFd (or
    // `into_inner`'s caller) can do.
    unsafe { AsyncFd::register_with_interest(socket, Interest::READABLE) }
        .map_err(|e| e.into_parts())
}

/// The proxy's socket: listening, or bound but refusing connections (B is down).
enum Port {
    Listening(AsyncFd<std::net::TcpListener>),
    Refusing(std::net::TcpListener),
}

impl Port {
    fn new(listener: std::net::TcpListener) -> std::io::Result<Port> {
        register(listener).map(Port::Listening).map_err(|(_, e)| e)
    }

    /// Listen or refuse; on failure the port stays as it was.
    fn switch(self, listen: bool) -> (Port, std::io::Result<()>) {
        use nix::sys::socket::{Backlog, Shutdown, listen as listen_on, shutdown};
        match (self, listen) {
            (Port::Listening(fd), false) => {
                // SHUT_RD on a listening socket stops it listening (pending connections
                // are reset) and keeps it bound: SYNs to the port now get a RST.
                match shutdown(fd.as_raw_fd(), Shutdown::Read) {
                    Ok(()) => (Port::Refusing(fd.into_inner()), Ok(())),
                    Err(e) => (Port::Listening(fd), Err(e.into())),
                }
            }
            (Port::Refusing(socket), true) => {
                if let Err(e) = listen_on(&socket, Backlog::MAXCONN) {
                    return (Port::Refusing(socket), Err(e.into()));
                }
                // Registered afresh: no readiness left over from before.
                match register(socket) {
                    Ok(fd) => (Port::Listening(fd), Ok(())),
                    Err((socket, e)) => (Port::Refusing(socket), Err(e)),
                }
            }
            (port, _) => (port, Ok(())),
        }
    }

    async fn accept(&self) -> std::io::Result<TcpStream> {
        let Port::Listening(fd) = self else {
            return std::future::pending().await;
        };
        loop {
            let mut ready = fd.readable().await?;
            if let Ok(accepted) = ready.try_io(|fd| fd.get_ref().accept()) {
                let (client, _) = accepted?;
                client.set_nonblocking(true)?;
                return TcpStream::from_std(client);
            }
        }
    }
}

/// Accept connections while the target is up or the link is cut; refuse them while
/// the target is down.
async fn accept_loop(mut port: Port, shared: Arc<Shared>) {
    let mut conns = JoinSet::new();
    let mut target = shared.target.subscribe();
    let mut cut = shared.cut.subscribe();
    let mut accepted_so_far = 0u64;
    loop {
        let listen = target.borrow_and_update().is_some() || *cut.borrow_and_update();
        let (next, switched) = port.switch(listen);
        port = next;
        let retry = async {
            match switched {
                Ok(()) => std::future::pending().await,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        };
        tokio::select! {
            accepted = port.accept() => match accepted {
                Ok(client) => {
                    conns.spawn(serve(client, shared.clone(), accepted_so_far));
                    accepted_so_far += 1;
                }
                // E.g. EMFILE: back off instead of spinning.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            },
            _ = target.changed() => {}
            _ = cut.changed() => {}
            _ = retry => {}
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// One connection from A: hold it while the link is cut, then connect to B and pump
/// through the link's [`Conditions`].
async fn serve(mut client: TcpStream, shared: Arc<Shared>, conn: u64) {
    let mut cut = shared.cut.subscribe();
    wait_healed(&mut cut).await;
    let seed = shared.seed.load(Ordering::Relaxed);
    if Dice::new(seed, conn, 0).reset_at_start(&shared.conditions.borrow()) {
        let _ = client.set_zero_linger();
        return; // A flaky link drops the connection: a reset, nothing forwarded.
    }
    let Some(target) = *shared.target.borrow() else {
        return; // B is down: close, like a refused connection.
    };
    let Ok(mut server) = TcpStream::connect(target).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.split();
    let (server_read, server_write) = server.split();
    let up = pump(
        client_read,
        server_write,
        &shared,
        &shared.cut,
        Dice::new(seed, conn, 1),
    );
    let down = pump(
        server_read,
        client_write,
        &shared,
        &shared.down_cut,
        Dice::new(seed, conn, 2),
    );
    // Either side failing ends the connection; dropping both sockets closes them.
    if let Err(e) = tokio::try_join!(up, down)
        && e.get_ref().is_some_and(|inner| inner.is::<Reset>())
    {
        // Closed with a zero linger: an RST to both peers.
        let _ = client.set_zero_linger();
        let _ = server.set_zero_linger();
    }
}

/// The error that ends a connection a flaky link resets.
#[derive(Debug)]
struct Reset;

impl std::fmt::Display for Reset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("reset by a flaky link")
    }
}

impl std::error::Error for Reset {}

/// Chunks read and not yet forwarded, per direction (the rest waits in the kernel).
const IN_FLIGHT: usize = 64;

/// Copy one direction: read (only while the link is healed), give each chunk its
/// fate, forward it when due (only while healed, and at the throttle's pace).
/// `cut` is the switch that holds this direction: the link's, or (B → A) the one
/// that also holds B's answers alone ([`Link::cut_answers`]).
async fn pump(
    from: ReadHalf<'_>,
    to: WriteHalf<'_>,
    shared: &Shared,
    cut: &watch::Sender<bool>,
    dice: Dice,
) -> std::io::Result<()> {
    let (tx, rx) = mpsc::channel(IN_FLIGHT);
    tokio::try_join!(
        read_side(from, tx, shared, cut.subscribe(), dice),
        write_side(to, rx, shared, cut.subscribe())
    )?;
    Ok(())
}

/// Read chunks and queue them with the time they are due; a chunk fated to reset the
/// connection ends it. EOF closes the queue.
async fn read_side(
    mut from: ReadHalf<'_>,
    tx: mpsc::Sender<(Instant, Vec<u8>)>,
    shared: &Shared,
    mut cut: watch::Receiver<bool>,
    mut dice: Dice,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        wait_healed(&mut cut).await;
        let n = tokio::select! {
            read = from.read(&mut buf) => read?,
            // Cut while waiting for bytes: stop reading (read is cancel-safe).
            _ = cut.wait_for(|c| *c) => continue,
        };
        if n == 0 {
            return Ok(()); // Dropping `tx` tells the writer.
        }
        let due = match dice.chunk(&shared.conditions.borrow()) {
            Fate::Forward(wait) => Instant::now() + wait,
            Fate::Reset => return Err(std::io::Error::other(Reset)),
        };
        if tx.send((due, buf[..n].to_vec())).await.is_err() {
            return Ok(()); // The writer failed: its error ends the connection.
        }
    }
}

/// Forward queued chunks in order, each when due, holding them whenever the link is
/// cut (after the read, or while the receiver's window is full); shut the write side
/// down at EOF.
async fn write_side(
    mut to: WriteHalf<'_>,
    mut rx: mpsc::Receiver<(Instant, Vec<u8>)>,
    shared: &Shared,
    mut cut: watch::Receiver<bool>,
) -> std::io::Result<()> {
    // Under a throttle: when the bytes written so far have gone at the allowed rate.
    let mut free_at = Instant::now();
    while let Some((due, chunk)) = rx.recv().await {
        pause_until(due).await;
        let mut pending = &chunk[..];
        while !pending.is_empty() {
            wait_healed(&mut cut).await;
            let throttle = shared.conditions.borrow().throttle;
            let len = match throttle {
                Some(rate) => {
                    pause_until(free_at).await;
                    pending.len().min(piece(rate))
                }
                None => pending.len(),
            };
            tokio::select! {
                // write is cancel-safe: on cancellation nothing was written.
                written = to.write(&pending[..len]) => match written? {
                    0 => return Err(std::io::ErrorKind::WriteZero.into()),
                    w => {
                        pending = &pending[w..];
                        if let Some(rate) = throttle {
                            free_at = free_at.max(Instant::now()) + transfer_time(w, rate);
                        }
                    }
                },
                _ = cut.wait_for(|c| *c) => {}
            }
        }
    }
    to.shutdown().await
}

/// Sleep until `at`, or not at all when it has come: tokio's timer rounds a
/// deadline up to its next millisecond tick, so even a sleep until now would add up
/// to a millisecond to every chunk of an undegraded link.
async fn pause_until(at: Instant) {
    if at > Instant::now() {
        tokio::time::sleep_until(at).await;
    }
}

async fn wait_healed(cut: &mut watch::Receiver<bool>) {
    // The sender lives in `Shared`, which outlives every connection task.
    let _ = cut.wait_for(|c| !*c).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::net::TcpListener;

    async fn echo_server() -> (SocketAddr, JoinHandle<()>) {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            loop {
                let (mut s, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        (addr, task)
    }

    async fn roundtrip(s: &mut TcpStream, msg: &[u8], within: Duration) -> Option<Vec<u8>> {
        s.write_all(msg).await.ok()?;
        let mut got = vec![0u8; msg.len()];
        match tokio::time::timeout(within, s.read_exact(&mut got)).await {
            Ok(Ok(_)) => Some(got),
            _ => None,
        }
    }

    #[tokio::test]
    async fn a_one_way_cut_delivers_requests_and_holds_answers_until_healed() {
        // A server that reports each message it receives, then echoes it.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server_addr = listener.local_addr().unwrap();
        let (tx, mut received) = tokio::sync::mpsc::unbounded_channel();
        let _server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4];
            while s.read_exact(&mut buf).await.is_ok() {
                let _ = tx.send(buf);
                if s.write_all(&buf).await.is_err() {
                    return;
                }
            }
        });
        let link = Link::start(Some(server_addr)).await.unwrap();
        let mut conn = TcpStream::connect(link.addr()).await.unwrap();
        let long = Duration::from_secs(20);
        link.cut_answers();
        assert!(!link.is_cut(), "requests still flow");
        assert_eq!(
            roundtrip(&mut conn, b"req1", Duration::from_millis(300)).await,
            None
        );
        let got = tokio::time::timeout(long, received.recv()).await.unwrap();
        assert_eq!(got, Some(*b"req1"), "the request reached the server");
        link.heal_answers();
        let mut answer = [0u8; 4];
        tokio::time::timeout(long, conn.read_exact(&mut answer))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&answer, b"req1", "the held answer arrives after the heal");
    }

    #[tokio::test]
    async fn forwards_then_blackholes_open_and_new_connections_then_heals() {
        let (echo, _server) = echo_server().await;
        let link = Link::start(Some(echo)).await.unwrap();
        let mut open = TcpStream::connect(link.addr()).await.unwrap();
        let long = Duration::from_secs(20);
        assert_eq!(
            roundtrip(&mut open, b"ping", long).await.as_deref(),
            Some(&b"ping"[..])
        );

        link.cut();
        assert!(link.is_cut());
        // Already open connection: nothing comes back, and the connection stays open.
        let short = Duration::from_millis(300);
        assert_eq!(roundtrip(&mut open, b"held", short).await, None);
        // New connection: accepted by the kernel, but nothing flows.
        let mut fresh = TcpStream::connect(link.addr()).await.unwrap();
        assert_eq!(roundtrip(&mut fresh, b"new!", short).await, None);

        link.heal();
        // The held bytes arrive after the heal, in order, like TCP retransmissions.
        let mut got = [0u8; 4];
        tokio::time::timeout(long, open.read_exact(&mut got))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&got, b"held");
        tokio::time::timeout(long, fresh.read_exact(&mut got))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&got, b"new!");
        assert_eq!(
            roundtrip(&mut open, b"more", long).await.as_deref(),
            Some(&b"more"[..])
        );
    }

    /// Connect to `addr` until the outcome is a refusal (`refused`) or a connection,
    /// within 20 s; the connection, if any.
    async fn connect_until(addr: SocketAddr, refused: bool) -> Option<TcpStream> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let got = TcpStream::connect(addr).await;
            match (&got, refused) {
                (Err(e), true) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    return None;
                }
                (Ok(_), false) => return got.ok(),
                _ => {}
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{addr}: still {got:?} after 20 s"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn a_down_target_is_refused_on_the_same_address_until_it_is_back() {
        let link = Link::start(None).await.unwrap();
        let e = TcpStream::connect(link.addr()).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);

        let (echo, _server) = echo_server().await;
        link.set_target(Some(echo));
        let mut s = connect_until(link.addr(), false).await.unwrap();
        let got = roundtrip(&mut s, b"hi", Duration::from_secs(20)).await;
        assert_eq!(got.as_deref(), Some(&b"hi"[..]));

        // Down again, then back at a new address: the proxy's address stays the same.
        link.set_target(None);
        connect_until(link.addr(), true).await;
        let (echo2, _server2) = echo_server().await;
        link.set_target(Some(echo2));
        let mut s = connect_until(link.addr(), false).await.unwrap();
        let got = roundtrip(&mut s, b"again", Duration::from_secs(20)).await;
        assert_eq!(got.as_deref(), Some(&b"again"[..]));
    }

    #[tokio::test]
    async fn a_cut_link_to_a_down_target_holds_connections_instead_of_refusing() {
        let link = Link::start(None).await.unwrap();
        link.cut();
        // A dropped SYN is never refused: the connection waits for the heal.
        let mut held = connect_until(link.addr(), false).await.unwrap();
        held.write_all(b"later").await.unwrap();
        let (echo, _server) = echo_server().await;
        link.set_target(Some(echo));
        link.heal();
        let mut got = [0u8; 5];
        tokio::time::timeout(Duration::from_secs(20), held.read_exact(&mut got))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&got, b"later");
    }

    use crate::net::shaping::{Flaky, RETRANSMIT, Slow};

    #[tokio::test]
    async fn a_slow_link_delays_every_chunk_both_ways_and_heals() {
        let (echo, _server) = echo_server().await;
        let link = Link::start(Some(echo)).await.unwrap();
        let mut s = TcpStream::connect(link.addr()).await.unwrap();
        let long = Duration::from_secs(20);
        assert!(roundtrip(&mut s, b"warm", long).await.is_some());
        let delay = Duration::from_millis(100);
        let slow = Slow {
            delay,
            jitter: Duration::from_millis(30),
        };
        // Open connections are slowed too.
        link.condition(
            Conditions {
                slow: Some(slow),
                ..Conditions::default()
            },
            1,
        );
        for _ in 0..3 {
            let began = Instant::now();
            assert_eq!(
                roundtrip(&mut s, b"slow", long).await.as_deref(),
                Some(&b"slow"[..])
            );
            // Once on the way there, once on the way back.
            assert!(began.elapsed() >= delay * 2, "{:?}", began.elapsed());
        }
        // A lost chunk waits for a retransmission, each way.
        link.condition(
            Conditions {
                flaky: Some(Flaky {
                    reset: 0.0,
                    loss: 1.0,
                }),
                ..Conditions::default()
            },
            1,
        );
        let began = Instant::now();
        assert!(roundtrip(&mut s, b"lost", long).await.is_some());
        assert!(began.elapsed() >= RETRANSMIT * 2, "{:?}", began.elapsed());
        link.condition(Conditions::default(), 1);
        assert_eq!(link.conditions(), Conditions::default());
        assert!(roundtrip(&mut s, b"fast", long).await.is_some());
    }

    #[tokio::test]
    async fn a_throttled_link_bounds_the_throughput() {
        const SIZE: usize = 96 * 1024;
        const RATE: u64 = 32 * 1024;
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let target = listener.local_addr().unwrap();
        let _server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let _ = s.write_all(&vec![7u8; SIZE]).await;
        });
        let link = Link::start(Some(target)).await.unwrap();
        link.condition(
            Conditions {
                throttle: Some(RATE),
                ..Conditions::default()
            },
            1,
        );
        let mut s = TcpStream::connect(link.addr()).await.unwrap();
        let began = Instant::now();
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(60), s.read_to_end(&mut got))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.len(), SIZE);
        // At most one piece goes before the clock starts.
        let floor = transfer_time(SIZE - piece(RATE), RATE);
        assert!(
            began.elapsed() >= floor,
            "{:?} < {floor:?}",
            began.elapsed()
        );
    }

    #[tokio::test]
    async fn a_flaky_link_resets_the_configured_fraction_of_connections() {
        let (echo, _server) = echo_server().await;
        let link = Link::start(Some(echo)).await.unwrap();
        let reset = 0.2;
        link.condition(
            Conditions {
                flaky: Some(Flaky { reset, loss: 0.0 }),
                ..Conditions::default()
            },
            42,
        );
        let tries = 200;
        let mut failed = 0;
        for _ in 0..tries {
            let mut s = TcpStream::connect(link.addr()).await.unwrap();
            // A reset shows at once, never as a timeout.
            match roundtrip(&mut s, b"x", Duration::from_secs(20)).await {
                Some(got) => assert_eq!(got, b"x"),
                None => failed += 1,
            }
        }
        // Reset at the start, or on the chunk there, or on the one back.
        let expected = 1.0 - (1.0 - reset).powi(3);
        let seen = f64::from(failed) / f64::from(tries);
        assert!((seen - expected).abs() < 0.1, "{seen} vs {expected}");
        // Healthy again once restored.
        link.condition(Conditions::default(), 42);
        for _ in 0..20 {
            let mut s = TcpStream::connect(link.addr()).await.unwrap();
            assert!(
                roundtrip(&mut s, b"y", Duration::from_secs(20))
                    .await
                    .is_some()
            );
        }
    }

    #[tokio::test]
    async fn dropping_the_link_closes_its_connections() {
        let (echo, _server) = echo_server().await;
        let link = Link::start(Some(echo)).await.unwrap();
        let mut s = TcpStream::connect(link.addr()).await.unwrap();
        assert!(
            roundtrip(&mut s, b"x", Duration::from_secs(20))
                .await
                .is_some()
        );
        drop(link);
        let mut buf = [0u8; 1];
        let n = tokio::time::timeout(Duration::from_secs(20), s.read(&mut buf))
            .await
            .expect("the connection is closed when the link is dropped")
            .unwrap_or(0);
        assert_eq!(n, 0);
    }
}
