//! Issue #18: an HTTP listener closes slow headers (slowloris), slow bodies
//! and idle keep-alive connections after their timeouts, never cuts a
//! request whose response is in progress, and answers `503` beyond
//! `max_connections`. Real sockets, real time; every wait has a deadline.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::{get, post};
use axum::Router;
use sluice_core::metrics::Counter;
use sluice_net::http::serve;
use sluice_net::{HttpTimeouts, Listener, ListenerCounters};
use tokio_util::sync::CancellationToken;

const T: HttpTimeouts = HttpTimeouts {
    header: Duration::from_millis(400),
    body: Duration::from_millis(600),
    idle: Duration::from_millis(500),
};

struct Server {
    addr: SocketAddr,
    timeouts: Arc<Counter>,
    counters: ListenerCounters,
    shutdown: CancellationToken,
    _rt: tokio::runtime::Runtime,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

fn start(max_connections: usize) -> Server {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .route("/echo", post(|body: axum::body::Bytes| async move { format!("{} bytes", body.len()) }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(1500)).await;
                "done"
            }),
        );
    let counters = ListenerCounters::default();
    let timeouts = Arc::new(Counter::default());
    let shutdown = CancellationToken::new();
    let inner = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = inner.local_addr().unwrap();
    let listener = Listener::new(inner, "test", max_connections, counters.clone());
    rt.spawn(serve(listener, app, T, Arc::clone(&timeouts), shutdown.clone()));
    Server { addr, timeouts, counters, shutdown, _rt: rt }
}

fn connect(s: &Server) -> TcpStream {
    let c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c
}

/// Reads until the server closes; returns what it sent and when it closed.
fn read_until_closed(c: &mut TcpStream) -> (String, Instant) {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match c.read(&mut buf) {
            Ok(0) | Err(_) => return (String::from_utf8_lossy(&out).into_owned(), Instant::now()),
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// Writes `bytes` one at a time every `gap` until the server closes or
/// `deadline` passes; returns when the writes started failing, if they did.
fn dribble(c: &mut TcpStream, bytes: &[u8], gap: Duration, deadline: Instant) -> Option<Instant> {
    for b in bytes.iter().cycle() {
        if Instant::now() > deadline {
            return None;
        }
        if c.write_all(&[*b]).is_err() {
            return Some(Instant::now());
        }
        std::thread::sleep(gap);
    }
    None
}

#[test]
fn issue_18_slowloris_headers_are_closed_after_the_header_timeout() {
    let s = start(100);
    let mut c = connect(&s);
    let t0 = Instant::now();
    c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
    // One header byte every 50 ms: the header never ends.
    let mut w = c.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        dribble(
            &mut w,
            b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            Duration::from_millis(50),
            t0 + Duration::from_secs(10),
        )
    });
    let (got, closed) = read_until_closed(&mut c);
    let held = closed - t0;
    assert!(held >= T.header && held < T.header + Duration::from_secs(2), "held {held:?}, got {got:?}");
    assert!(writer.join().unwrap().is_some(), "the dribbling writer was never cut off");
    assert_eq!(s.timeouts.get(), 1);
}

#[test]
fn issue_18_a_slow_body_is_cut_after_the_body_timeout() {
    let s = start(100);
    let mut c = connect(&s);
    let t0 = Instant::now();
    c.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n").unwrap();
    let mut w = c.try_clone().unwrap();
    std::thread::spawn(move || dribble(&mut w, b"0123456789", Duration::from_millis(20), t0 + Duration::from_secs(10)));
    let (got, closed) = read_until_closed(&mut c);
    let held = closed - t0;
    assert!(held >= T.body && held < T.body + Duration::from_secs(2), "held {held:?}, got {got:?}");
    // The handler saw the read fail and answered; then the connection closed.
    assert!(got.starts_with("HTTP/1.1 4"), "{got:?}");
    assert_eq!(s.timeouts.get(), 1);
}

#[test]
fn issue_18_idle_keep_alive_connections_are_closed_after_the_idle_timeout() {
    let s = start(100);
    let mut c = connect(&s);
    // Two requests on one connection (keep-alive works), then silence.
    for _ in 0..2 {
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut buf = [0u8; 1024];
        let n = c.read(&mut buf).unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).ends_with("ok"));
    }
    let t0 = Instant::now();
    let (got, closed) = read_until_closed(&mut c);
    let held = closed - t0;
    assert!(held >= T.idle - Duration::from_millis(50) && held < T.idle + Duration::from_secs(2), "held {held:?}");
    assert_eq!(got, "");
    // A connection that never sends anything is idle too.
    let mut quiet = connect(&s);
    let t0 = Instant::now();
    let (_, closed) = read_until_closed(&mut quiet);
    assert!(closed - t0 < T.idle + Duration::from_secs(2));
    assert_eq!(s.timeouts.get(), 2);
}

#[test]
fn issue_18_a_request_in_progress_is_not_cut() {
    let s = start(100);
    let mut c = connect(&s);
    c.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let (got, _) = read_until_closed(&mut c);
    assert!(got.starts_with("HTTP/1.1 200") && got.ends_with("done"), "{got:?}");
    assert_eq!(s.timeouts.get(), 0);
}

#[test]
fn issue_18_connections_beyond_max_connections_get_503() {
    let s = start(1);
    let _first = connect(&s);
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.counters.open.get() < 1 {
        assert!(Instant::now() < deadline, "the first connection was never accepted");
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut second = connect(&s);
    let (got, _) = read_until_closed(&mut second);
    assert!(got.starts_with("HTTP/1.1 503"), "{got:?}");
    assert!(got.contains("too_many_connections"));
    assert_eq!(s.counters.refused.get(), 1);
}
