//! What the stream sources with acknowledgements (`beats`,
//! `fluent_forward`) share: the listener loop (also `syslog_tcp`'s, `tcp`'s
//! and `gelf`'s `tcp` mode's) (at most `max_connections`,
//! optional TLS with optional client certificates, a handshake timeout),
//! and handing a batch to the queue and waiting until it is durable before
//! the protocol's ACK is written; the config fields of the listener and the
//! events' identity (`acked_stream_config!`, a macro because the configs
//! deny unknown fields, which `#[serde(flatten)]` does not support) and
//! their resolved form ([`StreamListen`]).
//!
//! Not a component: it has no `SPEC`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use sluice_core::component::{BoxError, BuildContext, SourceContext};
use sluice_core::config::{ConfigError, HumanDuration, Positive};
use sluice_core::{AckToken, Delivery, Event, Identity};
use sluice_net::{Incoming, Listener, ListenerCounters};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// The default of `max_connections`.
pub fn default_max_connections() -> Positive<usize> {
    Positive::<usize>::of(crate::net::DEFAULT_MAX_CONNECTIONS)
}

/// The default of `idle_timeout`: 5 minutes.
pub fn default_idle_timeout() -> Positive<HumanDuration> {
    Positive::duration(Duration::from_secs(300))
}

/// A source's `Config` struct (`#[derive(Deserialize)]`,
/// `#[serde(deny_unknown_fields)]` given by the caller) with the fields it
/// names plus the listener's and the identity's: `address`,
/// `max_connections`, `idle_timeout`, `tls`, `group`, `subgroup`, `host`;
/// and `Config::listen`, which resolves them into a [`StreamListen`].
macro_rules! acked_stream_config {
    ($(#[$m:meta])* struct $name:ident { $($(#[$fm:meta])* $f:ident : $t:ty,)* }) => {
        $(#[$m])*
        struct $name {
            /// Listen address, e.g. `0.0.0.0:5044`.
            address: String,
            $($(#[$fm])* $f: $t,)*
            /// Connections served at once; more are closed and counted.
            #[serde(default = "crate::acked_stream::default_max_connections")]
            max_connections: ::sluice_core::config::Positive<usize>,
            /// A connection quiet this long is closed.
            #[serde(default = "crate::acked_stream::default_idle_timeout")]
            idle_timeout: ::sluice_core::config::Positive<::sluice_core::config::HumanDuration>,
            /// TLS, with optional client certificates.
            #[serde(default)]
            tls: Option<$crate::acked_stream::Tls>,
            /// Identity of every event (the sender cannot change it).
            #[serde(default)]
            group: String,
            /// Identity of every event.
            #[serde(default)]
            subgroup: String,
            /// Identity of every event.
            #[serde(default)]
            host: String,
        }

        impl $name {
            /// The listener's settings, the TLS acceptor and the identity.
            fn listen(
                &self,
                cx: &::sluice_core::component::BuildContext,
            ) -> Result<$crate::acked_stream::StreamListen, ::sluice_core::config::ConfigError> {
                $crate::acked_stream::StreamListen::resolve(
                    &self.address,
                    self.max_connections,
                    self.idle_timeout,
                    self.tls.as_ref(),
                    [&self.group, &self.subgroup, &self.host],
                    cx,
                )
            }
        }
    };
}
pub(crate) use acked_stream_config;

/// The listener's settings, TLS and the events' identity, resolved at build.
pub struct StreamListen {
    pub address: SocketAddr,
    pub max_connections: usize,
    pub idle: Duration,
    pub tls: Option<TlsAcceptor>,
    pub identity: Arc<Identity>,
}

impl StreamListen {
    /// Resolves the fields `acked_stream_config!` adds.
    pub fn resolve(
        address: &str,
        max_connections: Positive<usize>,
        idle: Positive<HumanDuration>,
        tls: Option<&Tls>,
        [group, subgroup, host]: [&String; 3],
        cx: &BuildContext,
    ) -> Result<Self, ConfigError> {
        let address =
            address.parse().map_err(|e| cx.error("address", format!("invalid socket address {address:?}: {e}")))?;
        Ok(Self {
            address,
            max_connections: max_connections.get(),
            idle: idle.0,
            tls: tls.map(|t| acceptor(t, cx)).transpose()?,
            identity: Arc::new(Identity::new(group.clone(), subgroup.clone(), host.clone())),
        })
    }

    /// Binds the address (logged as `<name> source listening`); the
    /// listener and its local address.
    pub async fn bind(&self, name: &str, cx: &SourceContext) -> Result<(TcpListener, SocketAddr), BoxError> {
        let listener = TcpListener::bind(self.address).await.map_err(|e| format!("bind {}: {e}", self.address))?;
        let local = listener.local_addr()?;
        tracing::info!(source = %cx.id, address = %local, tls = self.tls.is_some(), "{name} source listening");
        Ok((listener, local))
    }
}

/// `tls = { cert, key, client_ca }` (defined with the other TLS helpers).
pub use crate::tls::ListenTls as Tls;

/// The acceptor of a `tls` table; errors name `tls.cert` / `tls.key` / `tls.client_ca`.
pub use crate::http_listen::acceptor;

/// A connection, plain or TLS.
pub trait Conn: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Conn for T {}

/// How long a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `listener` until shutdown: at most `max_connections` at once
/// (more are closed and counted), TLS when `tls` is set (a failed or slow
/// handshake counted in `tls_handshake_errors`), each connection handled
/// by `handle` on its own task; waits for them at shutdown.
pub async fn serve<H, F>(
    listener: TcpListener,
    cx: &SourceContext,
    max_connections: usize,
    tls: Option<TlsAcceptor>,
    handle: H,
) -> Result<(), BoxError>
where
    H: Fn(Box<dyn Conn>, SocketAddr) -> F + Send + Sync + 'static,
    F: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    let handle = Arc::new(handle);
    let handshake_errors = cx.metrics.counter("tls_handshake_errors");
    let mut listener = Listener::new(listener, &cx.id, max_connections, ListenerCounters::of(&cx.metrics));
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = cx.shutdown.cancelled() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            incoming = listener.accept() => {
                let (stream, peer, guard) = match incoming {
                    Incoming::Open(stream, peer, guard) => (stream, peer, guard),
                    Incoming::Refused(..) => continue,
                };
                let _ = stream.set_nodelay(true);
                let (cx, tls, handle, hs_errors) = (cx.clone(), tls.clone(), Arc::clone(&handle), Arc::clone(&handshake_errors));
                tasks.spawn(async move {
                    let _guard = guard;
                    let conn: Box<dyn Conn> = match tls {
                        None => Box::new(stream),
                        Some(acceptor) => {
                            let hs = tokio::select! {
                                _ = cx.shutdown.cancelled() => return,
                                r = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)) => r,
                            };
                            match hs {
                                Ok(Ok(s)) => Box::new(s),
                                Ok(Err(e)) => {
                                    hs_errors.inc();
                                    tracing::debug!(source = %cx.id, %peer, error = %e, "tls handshake failed");
                                    return;
                                }
                                Err(_) => {
                                    hs_errors.inc();
                                    return;
                                }
                            }
                        }
                    };
                    if let Err(e) = handle(conn, peer).await {
                        cx.metrics.errors.inc();
                        tracing::debug!(source = %cx.id, %peer, error = %e, "connection ended with error");
                    }
                });
            }
        }
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// Hands `events` to the queue and waits until they are durable (a
/// persisted queue: appended; a memory queue: every sink took them).
/// `Ok(false)`: the queue dropped them undelivered (do not ACK).
pub async fn send_durable(cx: &SourceContext, events: Vec<Event>) -> Result<bool, BoxError> {
    let n = events.len() as u64;
    cx.metrics.events_in.add(n);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let token = AckToken::new(move |d| {
        let _ = tx.send(d);
    });
    cx.out.send_acked(events, token).await?;
    cx.metrics.events_out.add(n);
    Ok(matches!(rx.await, Ok(Delivery::Delivered)))
}

/// Reads more of `conn` into `buf` (at most [`READ_CHUNK`] more at a time);
/// `0` at the end of the stream, at shutdown, or after `idle` without a
/// byte (counted in `idle_closed`). Counts the bytes in `bytes_in`.
pub async fn read_more(
    conn: &mut Box<dyn Conn>,
    buf: &mut Vec<u8>,
    idle: Duration,
    idle_closed: &sluice_core::metrics::Counter,
    cx: &SourceContext,
) -> std::io::Result<usize> {
    use tokio::io::AsyncReadExt;
    buf.reserve(READ_CHUNK);
    let n = tokio::select! {
        _ = cx.shutdown.cancelled() => 0,
        r = tokio::time::timeout(idle, conn.read_buf(buf)) => match r {
            Ok(r) => r?,
            Err(_) => {
                idle_closed.inc();
                0
            }
        },
    };
    cx.metrics.bytes_in.add(n as u64);
    Ok(n)
}

/// Most bytes read at a time.
pub const READ_CHUNK: usize = 64 * 1024;
