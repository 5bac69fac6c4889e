//! HTTP/1.1 over a [`Listener`], with the timeouts a server exposed to the
//! internet needs (issue #18: slow headers, slow bodies and idle keep-alive
//! connections were held 75–100 s and more).
//!
//! - **header** ([`HttpTimeouts::header`]): from the first byte of a request
//!   to the end of its header (slowloris);
//! - **body** ([`HttpTimeouts::body`]): from the first read of a request's
//!   body to its last byte — a deadline for the whole body, so a body
//!   dribbled a byte at a time cannot hold the connection either; the
//!   handler sees a read error (`request body timed out`), answers (`400` or
//!   `408`), and the connection is closed;
//! - **idle** ([`HttpTimeouts::idle`]): a connection with no request in
//!   progress (before the first, between keep-alive requests).
//!
//! A connection that runs out of time is closed, and every timeout is
//! counted (`timeouts`). A request whose response is being produced or sent is never
//! cut: a `_bulk` waiting for a full queue, a long search and a live tail
//! keep their connection.
//!
//! How: hyper's own header timer also runs while a connection is idle, so the
//! two could not differ; instead each connection has a small watchdog fed by
//! the socket reads (a request head begins) and by the service (a request
//! entered, its response ended). On shutdown every connection is asked to
//! finish its request in progress and close ([`serve`]).
//!
//! A connection beyond the listener's `max_connections` gets a `503` with
//! `Connection: close` and is closed; on a TLS listener it is closed at
//! once (a plain-text answer would be garbage to a TLS client, and a
//! handshake just to refuse would spend CPU when the node is busiest).
//!
//! With [`HttpTls`] ([`serve_secure`]) every connection
//! begins with a TLS handshake, bounded by the header timeout; a failed or
//! slow one closes the connection and is counted (`tls_handshake_errors`).
//! Over HTTP/2 the server offers ALPN `h2` (what gRPC clients ask for on a
//! secure channel).
//!
//! [`serve_h2c`] serves the same way over HTTP/2 cleartext with prior
//! knowledge (what gRPC clients speak on an insecure channel): the same
//! watchdog (idle, and a request's first frame to its handling), the same
//! body deadline, at most [`H2_MAX_STREAMS`] concurrent streams per
//! connection and [`H2_MAX_HEADER_LIST`] bytes of headers. (No server
//! pings: a vanished peer is an idle connection, closed by the watchdog;
//! a client's own pings while idle count as a request beginning, so such a
//! connection is closed after the header timeout.)

use std::convert::Infallible;
use std::future::Future as _;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::Router;
use bytes::Bytes;
use hyper::body::{Frame, Incoming as IncomingBody, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use sluice_core::metrics::Counter;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
pub use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use crate::listener::{Incoming, Listener};

/// The three timeouts; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpTimeouts {
    /// First byte of a request to the end of its header.
    pub header: Duration,
    /// First read of a request body to its end.
    pub body: Duration,
    /// No request in progress.
    pub idle: Duration,
}

/// Default header timeout.
pub const DEFAULT_HEADER: Duration = Duration::from_secs(10);
/// Default body timeout.
pub const DEFAULT_BODY: Duration = Duration::from_secs(60);
/// Default idle timeout.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(60);

impl Default for HttpTimeouts {
    fn default() -> Self {
        Self { header: DEFAULT_HEADER, body: DEFAULT_BODY, idle: DEFAULT_IDLE }
    }
}

/// Serves `app` on `listener` until `shutdown`; then asks every open
/// connection to finish its request in progress and waits for them (the
/// caller bounds that wait). `timeouts` counts connections closed for a
/// timeout.
pub async fn serve(
    listener: Listener,
    app: Router,
    t: HttpTimeouts,
    timeouts: Arc<Counter>,
    shutdown: CancellationToken,
) {
    serve_proto(listener, app, t, timeouts, shutdown, Proto::Http1, None).await;
}

/// TLS on an HTTP listener: the acceptor, and the counter of handshakes
/// that failed or did not finish within the header timeout.
#[derive(Clone)]
pub struct HttpTls {
    acceptor: TlsAcceptor,
    handshake_errors: Arc<Counter>,
}

impl HttpTls {
    /// TLS with `acceptor`'s certificate (and client verification, if it has one).
    pub fn new(acceptor: TlsAcceptor, handshake_errors: Arc<Counter>) -> Self {
        Self { acceptor, handshake_errors }
    }

    /// The same, offering ALPN `protocols` (e.g. `h2`).
    fn with_alpn(&self, protocols: &[&[u8]]) -> Self {
        let mut config = (**self.acceptor.config()).clone();
        config.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
        Self { acceptor: TlsAcceptor::from(Arc::new(config)), handshake_errors: Arc::clone(&self.handshake_errors) }
    }
}

/// [`serve`] (`Proto::Http1`) or [`serve_h2c`] (`Proto::H2c`), over TLS
/// when `tls` is given, offering ALPN `http/1.1` or `h2` (gRPC's secure
/// channel).
pub async fn serve_secure(
    listener: Listener,
    app: Router,
    t: HttpTimeouts,
    timeouts: Arc<Counter>,
    shutdown: CancellationToken,
    proto: Proto,
    tls: Option<HttpTls>,
) {
    let alpn: &[u8] = match proto {
        Proto::Http1 => b"http/1.1",
        Proto::H2c => b"h2",
    };
    let tls = tls.map(|t| t.with_alpn(&[alpn]));
    serve_proto(listener, app, t, timeouts, shutdown, proto, tls).await;
}

/// Most concurrent streams of one HTTP/2 connection.
pub const H2_MAX_STREAMS: u32 = 128;
/// Largest header list of one HTTP/2 request.
pub const H2_MAX_HEADER_LIST: u32 = 64 << 10;

/// [`serve`] over HTTP/2 cleartext, prior knowledge (gRPC's insecure channel).
pub async fn serve_h2c(
    listener: Listener,
    app: Router,
    t: HttpTimeouts,
    timeouts: Arc<Counter>,
    shutdown: CancellationToken,
) {
    serve_proto(listener, app, t, timeouts, shutdown, Proto::H2c, None).await;
}

/// The HTTP version a listener speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// HTTP/1.1 (keep-alive).
    Http1,
    /// HTTP/2: prior knowledge in cleartext, ALPN `h2` over TLS.
    H2c,
}

async fn serve_proto(
    mut listener: Listener,
    app: Router,
    t: HttpTimeouts,
    timeouts: Arc<Counter>,
    shutdown: CancellationToken,
    proto: Proto,
    tls: Option<HttpTls>,
) {
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            incoming = listener.accept() => match incoming {
                // Over TLS a plain-text `503` would reach the client as a
                // broken TLS record: the connection is just closed (counted
                // in `refused_connections` like every refusal).
                Incoming::Refused(stream, _) if tls.is_some() => drop(stream),
                Incoming::Refused(stream, _) => {
                    tasks.spawn(refuse(stream));
                }
                Incoming::Open(stream, peer, guard) => {
                    let (app, timeouts, shutdown, tls) = (app.clone(), Arc::clone(&timeouts), shutdown.clone(), tls.clone());
                    tasks.spawn(async move {
                        let _guard = guard;
                        let _ = stream.set_nodelay(true);
                        let Some(tls) = tls else {
                            return connection(stream, peer, app, t, &timeouts, &shutdown, proto).await;
                        };
                        let handshake = tokio::select! {
                            _ = shutdown.cancelled() => return,
                            r = tokio::time::timeout(t.header, tls.acceptor.accept(stream)) => r,
                        };
                        match handshake {
                            Ok(Ok(stream)) => connection(stream, peer, app, t, &timeouts, &shutdown, proto).await,
                            Ok(Err(e)) => {
                                tls.handshake_errors.inc();
                                tracing::debug!(%peer, error = %e, "tls handshake failed");
                            }
                            Err(_) => {
                                tls.handshake_errors.inc();
                                tracing::debug!(%peer, "tls handshake timed out");
                            }
                        }
                    });
                }
            }
        }
    }
    while tasks.join_next().await.is_some() {}
}

/// `503` and close, at most a second spent on it.
async fn refuse(mut stream: TcpStream) {
    const BODY: &str =
        r#"{"error":{"type":"too_many_connections","message":"the server holds max_connections open; retry later"}}"#;
    let reply = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(reply.as_bytes())).await;
}

/// What the watchdog of one connection knows; times are nanoseconds since `start`.
struct ConnState {
    start: Instant,
    /// Requests handed to the service whose response has not ended.
    active: AtomicUsize,
    /// When the connection last became idle (opened, or a response ended).
    idle_since: AtomicU64,
    /// When the first byte of a request head arrived while idle (0: none).
    head_since: AtomicU64,
}

impl ConnState {
    fn now(&self) -> u64 {
        // At least 1: 0 means "none" for head_since.
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX).max(1)
    }
}

async fn connection<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    peer: SocketAddr,
    app: Router,
    t: HttpTimeouts,
    timeouts: &Arc<Counter>,
    shutdown: &CancellationToken,
    proto: Proto,
) {
    let state = Arc::new(ConnState {
        start: Instant::now(),
        active: AtomicUsize::new(0),
        idle_since: AtomicU64::new(1),
        head_since: AtomicU64::new(0),
    });
    let io = TokioIo::new(Watched { io: stream, state: Arc::clone(&state) });
    let svc_state = Arc::clone(&state);
    let body_timeouts = Arc::clone(timeouts);
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<IncomingBody>| {
        let guard = RequestGuard::enter(&svc_state);
        req.extensions_mut().insert(ConnectInfo(peer));
        let timeouts = Arc::clone(&body_timeouts);
        let req = req.map(|b| Body::new(DeadlineBody { inner: b, timeout: t.body, deadline: None, timeouts }));
        let app = app.clone();
        async move {
            let resp = app.oneshot(req).await.unwrap_or_else(|never: Infallible| match never {});
            Ok::<_, Infallible>(resp.map(|b| Body::new(GuardedBody { inner: b, _guard: guard })))
        }
    });
    // One loop for both protocols: run the connection until it ends, the
    // watchdog fires, or shutdown asks it to finish its requests.
    macro_rules! drive {
        ($conn:expr) => {{
            let conn = $conn;
            tokio::pin!(conn);
            let mut draining = false;
            loop {
                tokio::select! {
                    r = conn.as_mut() => {
                        if let Err(e) = r {
                            tracing::debug!(%peer, error = %e, "http connection ended with an error");
                        }
                        return;
                    }
                    why = watchdog(&state, t), if !draining => {
                        timeouts.inc();
                        tracing::debug!(%peer, timeout = why, "http connection closed: timed out");
                        return;
                    }
                    _ = shutdown.cancelled(), if !draining => {
                        conn.as_mut().graceful_shutdown();
                        draining = true;
                    }
                }
            }
        }};
    }
    match proto {
        Proto::Http1 => {
            // half_close: a sender that shuts its write side (or closes) right after
            // its request — pygelf's GelfHttpHandler never reads the answer — still
            // has the request served; otherwise hyper drops it at the EOF and the
            // event is lost. The header/body/idle timeouts still bound the connection.
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(None).keep_alive(true).half_close(true);
            drive!(builder.serve_connection(io, svc))
        }
        Proto::H2c => {
            let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
            builder
                .timer(TokioTimer::new())
                .max_concurrent_streams(H2_MAX_STREAMS)
                .max_header_list_size(H2_MAX_HEADER_LIST);
            drive!(builder.serve_connection(io, svc))
        }
    }
}

/// Resolves when the connection has been idle, or inside a request head,
/// for longer than allowed; names which.
async fn watchdog(state: &ConnState, t: HttpTimeouts) -> &'static str {
    loop {
        let now = state.now();
        if state.active.load(Ordering::SeqCst) > 0 {
            // The body deadline is the body's; a response is never cut.
            tokio::time::sleep(t.header.min(t.idle)).await;
            continue;
        }
        let head = state.head_since.load(Ordering::SeqCst);
        let (since, limit, why) = if head != 0 {
            (head, t.header, "header")
        } else {
            (state.idle_since.load(Ordering::SeqCst), t.idle, "idle")
        };
        let due = since.saturating_add(u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX));
        if now >= due {
            return why;
        }
        tokio::time::sleep(Duration::from_nanos(due - now)).await;
    }
}

/// Counts a request as in progress from the service call to the end of its
/// response body.
struct RequestGuard(Arc<ConnState>);

impl RequestGuard {
    fn enter(state: &Arc<ConnState>) -> Self {
        state.active.fetch_add(1, Ordering::SeqCst);
        state.head_since.store(0, Ordering::SeqCst);
        Self(Arc::clone(state))
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        if self.0.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle_since.store(self.0.now(), Ordering::SeqCst);
        }
    }
}

/// The socket, telling the watchdog when a request head begins.
struct Watched<S> {
    io: S,
    state: Arc<ConnState>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let s = &self.state;
            if s.active.load(Ordering::SeqCst) == 0 && s.head_since.load(Ordering::SeqCst) == 0 {
                s.head_since.store(s.now(), Ordering::SeqCst);
            }
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// The error a request body read returns after its deadline.
#[derive(Debug)]
pub struct BodyTimeout(Duration);

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "request body timed out: not received within {:?}", self.0)
    }
}

impl std::error::Error for BodyTimeout {}

/// A request body that fails once its deadline (set at the first read) passed.
struct DeadlineBody {
    inner: IncomingBody,
    timeout: Duration,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    timeouts: Arc<Counter>,
}

impl hyper::body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|r| r.map_err(Into::into)));
        }
        let timeout = self.timeout;
        let deadline = self.deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.timeouts.inc();
                Poll::Ready(Some(Err(Box::new(BodyTimeout(timeout)))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that holds its request's [`RequestGuard`] until it ends.
struct GuardedBody {
    inner: Body,
    _guard: RequestGuard,
}

impl hyper::body::Body for GuardedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
