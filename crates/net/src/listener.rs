//! An accept loop that survives descriptor exhaustion, and a cap on open
//! connections per listener.
//!
//! Why: with more connections than descriptors, `accept` fails at once
//! (`EMFILE`, `ENFILE`) for as long as the pending connections wait in the
//! kernel's backlog; a loop that logs and retries spins a core and floods
//! the log (62 MB/s in the outside test of issue #18). [`Listener::accept`]
//! counts the failure (`accept_errors`), logs it at most once per
//! [`crate::throttle::DEFAULT_INTERVAL`] with the number of failures it
//! stands for, and sleeps — 5 ms doubling to 1 s while the failures last,
//! back to 5 ms after the next success — so descriptors freed by closing
//! connections are used again within a second.
//!
//! `max_connections` bounds what one listener may hold, so one flooded port
//! leaves descriptors to the others (the API among them). A connection
//! beyond it is accepted and handed back as [`Incoming::Refused`] — the
//! caller closes it politely (a protocol error frame, an HTTP `503`, or just
//! a close) — and counted (`refused_connections`). Connection-level errors
//! (a peer that reset before it was accepted) are not failures of the
//! listener and are retried at once.
//!
//! Counters (component-specific, via [`ListenerCounters::of`]):
//! `connections` (accepted, refused ones included), `refused_connections`,
//! `accept_errors`; gauge `open_connections`.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sluice_core::metrics::{ComponentMetrics, Counter, Gauge};
use tokio::net::{TcpListener, TcpStream};

use crate::throttle::Throttle;

/// First pause after a failed accept.
pub const MIN_BACKOFF: Duration = Duration::from_millis(5);
/// Longest pause between accepts while they keep failing.
pub const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// What a listener counts; see the module docs for the names.
#[derive(Debug, Clone, Default)]
pub struct ListenerCounters {
    /// Connections accepted (refused ones included).
    pub connections: Arc<Counter>,
    /// Connections closed at once because `max_connections` were open.
    pub refused: Arc<Counter>,
    /// Failed accepts (`EMFILE`, `ENFILE`, …).
    pub accept_errors: Arc<Counter>,
    /// Connections open now.
    pub open: Arc<Gauge>,
}

impl ListenerCounters {
    /// The counters as component-specific counters of `m`.
    pub fn of(m: &ComponentMetrics) -> Self {
        Self {
            connections: m.counter("connections"),
            refused: m.counter("refused_connections"),
            accept_errors: m.counter("accept_errors"),
            open: m.gauge("open_connections"),
        }
    }
}

/// What [`Listener::accept`] hands over.
#[derive(Debug)]
pub enum Incoming {
    /// A connection to serve; it counts as open until the guard is dropped.
    Open(TcpStream, SocketAddr, ConnectionGuard),
    /// A connection beyond `max_connections`: refuse it (and drop it).
    Refused(TcpStream, SocketAddr),
}

/// Keeps a connection counted as open; drop it when the connection ends.
#[derive(Debug)]
pub struct ConnectionGuard {
    open: Arc<AtomicUsize>,
    gauge: Arc<Gauge>,
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        let now = self.open.fetch_sub(1, Ordering::SeqCst).saturating_sub(1);
        self.gauge.set(now as u64);
    }
}

/// A TCP listener with back-off and a connection cap; see the module docs.
#[derive(Debug)]
pub struct Listener {
    inner: TcpListener,
    what: Arc<str>,
    max_connections: usize,
    open: Arc<AtomicUsize>,
    counters: ListenerCounters,
    accept_log: Throttle,
    refuse_log: Throttle,
    backoff: Duration,
}

impl Listener {
    /// Wraps a bound listener. `what` names it in logs (a component id,
    /// `api`); at most `max_connections` are open at once.
    pub fn new(inner: TcpListener, what: &str, max_connections: usize, counters: ListenerCounters) -> Self {
        Self {
            inner,
            what: Arc::from(what),
            max_connections: max_connections.max(1),
            open: Arc::default(),
            counters,
            accept_log: Throttle::default(),
            refuse_log: Throttle::default(),
            backoff: MIN_BACKOFF,
        }
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// The next connection, open or to refuse. Never fails: failed accepts
    /// are counted, logged (throttled) and waited out. Cancel-safe.
    pub async fn accept(&mut self) -> Incoming {
        loop {
            match self.inner.accept().await {
                Ok((stream, peer)) => {
                    self.backoff = MIN_BACKOFF;
                    self.counters.connections.inc();
                    if self.open.load(Ordering::SeqCst) >= self.max_connections {
                        self.counters.refused.inc();
                        if let Some(refused) = self.refuse_log.ready() {
                            tracing::warn!(
                                listener = %self.what, %peer, max_connections = self.max_connections, refused,
                                "connections refused: max_connections are open"
                            );
                        }
                        return Incoming::Refused(stream, peer);
                    }
                    let now = self.open.fetch_add(1, Ordering::SeqCst) + 1;
                    self.counters.open.set(now as u64);
                    let guard =
                        ConnectionGuard { open: Arc::clone(&self.open), gauge: Arc::clone(&self.counters.open) };
                    return Incoming::Open(stream, peer, guard);
                }
                // One peer's problem (it reset before we got to it): next.
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    self.counters.accept_errors.inc();
                    let pause = self.backoff;
                    self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                    if let Some(failures) = self.accept_log.ready() {
                        tracing::warn!(
                            listener = %self.what, error = %e, failures, pause_ms = pause.as_millis() as u64,
                            "accept failed; pausing before the next attempt"
                        );
                    }
                    tokio::time::sleep(pause).await;
                }
            }
        }
    }
}

fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn connections_beyond_the_cap_are_refused_and_counted() {
        let inner = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = inner.local_addr().unwrap();
        let counters = ListenerCounters::default();
        let mut l = Listener::new(inner, "test", 2, counters.clone());
        let _clients: Vec<_> = futures_connect(addr, 3).await;
        let a = l.accept().await;
        let b = l.accept().await;
        let c = l.accept().await;
        assert!(matches!(a, Incoming::Open(..)) && matches!(b, Incoming::Open(..)));
        assert!(matches!(c, Incoming::Refused(..)));
        assert_eq!((counters.connections.get(), counters.refused.get(), counters.open.get()), (3, 1, 2));
        drop(a);
        assert_eq!((l.open_connections(), counters.open.get()), (1, 1));
        let _more = futures_connect(addr, 1).await;
        assert!(matches!(l.accept().await, Incoming::Open(..)));
    }

    async fn futures_connect(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
        let mut v = Vec::new();
        for _ in 0..n {
            v.push(TcpStream::connect(addr).await.unwrap());
        }
        v
    }
}
