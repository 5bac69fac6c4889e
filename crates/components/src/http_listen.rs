//! What the HTTP ingest sources that listen on a port of their own share
//! (`http`, `splunk_hec`, `loki`, `otlp`): the optional `header_timeout`,
//! `body_timeout` and `idle_timeout` of a source's config over `sluice_net`'s
//! defaults (a zero one is refused when the config is parsed, by
//! [`Positive`]); and, for `splunk_hec`, `loki` and `otlp`, the config fields
//! of the listener (HTTPS with `tls`) and its ingest tokens
//! (`ingest_listener_config!`), their resolved form ([`IngestListen`]),
//! binding the port ([`bind`]) and serving until shutdown with a grace
//! period ([`serve_until_shutdown`]).
//!
//! The config fields come from a macro, not `#[serde(flatten)]`: the
//! sources' configs deny unknown fields, which serde's `flatten` does not
//! support.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use sluice_core::component::{BoxError, BuildContext, SourceContext};
use sluice_core::config::{ByteSize, ConfigError, HumanDuration, Positive};
use sluice_net::http::HttpTls;
use sluice_net::{HttpTimeouts, Listener, ListenerCounters};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::ingest_auth::{self, AuthMode, IngestToken, TokenConfig};
use crate::tls::ListenTls;

/// How long shutdown waits for requests in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The listener's timeouts: each given one, else `sluice_net`'s default.
pub fn timeouts(
    header: Option<Positive<HumanDuration>>,
    body: Option<Positive<HumanDuration>>,
    idle: Option<Positive<HumanDuration>>,
) -> HttpTimeouts {
    let d = HttpTimeouts::default();
    HttpTimeouts {
        header: header.map_or(d.header, |t| t.duration_value()),
        body: body.map_or(d.body, |t| t.duration_value()),
        idle: idle.map_or(d.idle, |t| t.duration_value()),
    }
}

/// The default of `max_body_bytes`: 10 MiB.
pub fn default_max_body() -> Positive<ByteSize> {
    Positive::bytes(10 << 20)
}

/// The default of `max_decompressed_bytes`: 64 MiB.
pub fn default_max_decompressed() -> Positive<ByteSize> {
    Positive::bytes(64 << 20)
}

/// The default of `max_depth` (of JSON or nested values): 32.
pub fn default_max_depth() -> Positive<usize> {
    Positive::<usize>::of(32)
}

/// The default of `max_connections`.
pub fn default_max_connections() -> Positive<usize> {
    Positive::<usize>::of(4096)
}

/// A source's `Config` struct (`#[derive(Deserialize)]`,
/// `#[serde(deny_unknown_fields)]` given by the caller) with the fields it
/// names plus the listener's and the tokens': `auth`, `tokens`,
/// `max_connections`, `header_timeout`, `body_timeout`, `idle_timeout`, `tls`; and
/// `Config::listen`, which resolves them into an [`IngestListen`].
macro_rules! ingest_listener_config {
    ($(#[$m:meta])* struct $name:ident { $($(#[$fm:meta])* $f:ident : $t:ty,)* }) => {
        $(#[$m])*
        struct $name {
            $($(#[$fm])* $f: $t,)*
            /// `token` (default) or `none`.
            #[serde(default)]
            auth: $crate::ingest_auth::AuthMode,
            /// Ingest tokens by name.
            #[serde(default)]
            tokens: ::std::collections::BTreeMap<String, $crate::ingest_auth::TokenConfig>,
            /// Connections served at once (on each port); one more gets `503`.
            #[serde(default = "crate::http_listen::default_max_connections")]
            max_connections: ::sluice_core::config::Positive<usize>,
            /// Longest time from a request's first byte to the end of its header.
            #[serde(default)]
            header_timeout: Option<::sluice_core::config::Positive<::sluice_core::config::HumanDuration>>,
            /// Longest time to receive a request's whole body.
            #[serde(default)]
            body_timeout: Option<::sluice_core::config::Positive<::sluice_core::config::HumanDuration>>,
            /// A connection with no request in progress is closed after this long.
            #[serde(default)]
            idle_timeout: Option<::sluice_core::config::Positive<::sluice_core::config::HumanDuration>>,
            /// HTTPS: `{ cert, key }`, with `client_ca` for client certificates.
            #[serde(default)]
            tls: Option<$crate::tls::ListenTls>,
        }

        impl $name {
            /// The listener's settings and the resolved ingest tokens.
            fn listen(
                &self,
                cx: &::sluice_core::component::BuildContext,
            ) -> Result<$crate::http_listen::IngestListen, ::sluice_core::config::ConfigError> {
                $crate::http_listen::IngestListen::resolve(
                    self.auth,
                    &self.tokens,
                    self.max_connections,
                    [self.header_timeout, self.body_timeout, self.idle_timeout],
                    self.tls.as_ref(),
                    cx,
                )
            }
        }
    };
}
pub(crate) use ingest_listener_config;

/// The listener's settings and the ingest tokens, resolved at build.
pub struct IngestListen {
    pub timeouts: HttpTimeouts,
    pub max_connections: usize,
    pub auth: AuthMode,
    pub tokens: Vec<IngestToken>,
    /// HTTPS, when `tls` is set.
    pub tls: Option<TlsAcceptor>,
}

impl IngestListen {
    /// Resolves the fields `ingest_listener_config!` adds (`timeouts`:
    /// header, body, idle).
    pub fn resolve(
        auth: AuthMode,
        tokens: &BTreeMap<String, TokenConfig>,
        max_connections: Positive<usize>,
        [header, body, idle]: [Option<Positive<HumanDuration>>; 3],
        tls: Option<&ListenTls>,
        cx: &BuildContext,
    ) -> Result<Self, ConfigError> {
        Ok(Self {
            timeouts: timeouts(header, body, idle),
            max_connections: max_connections.get(),
            auth,
            tokens: ingest_auth::resolve(auth, tokens, cx)?,
            tls: tls.map(|t| acceptor(t, cx)).transpose()?,
        })
    }

    /// The TLS of the listener for `sluice_net`'s server (handshake errors
    /// counted in `tls_handshake_errors`), when `tls` is set.
    pub fn http_tls(&self, cx: &SourceContext) -> Option<HttpTls> {
        http_tls(self.tls.clone(), cx)
    }
}

/// The acceptor of a listener's `tls` table; errors name `tls.cert`,
/// `tls.key` or `tls.client_ca`.
pub fn acceptor(t: &ListenTls, cx: &BuildContext) -> Result<TlsAcceptor, ConfigError> {
    crate::tls::listen_acceptor(t).map_err(|(k, m)| cx.error(&crate::tls::listen_key(k), m))
}

/// [`IngestListen::http_tls`] for a source that resolves its own `tls`.
pub fn http_tls(acceptor: Option<TlsAcceptor>, cx: &SourceContext) -> Option<HttpTls> {
    acceptor.map(|a| HttpTls::new(a, cx.metrics.counter("tls_handshake_errors")))
}

/// A socket address from the config's `key`, or the config error naming it.
pub fn socket_address(cx: &BuildContext, key: &str, text: &str) -> Result<SocketAddr, ConfigError> {
    text.parse().map_err(|e| cx.error(key, format!("invalid socket address {text:?}: {e}")))
}

/// Binds `address` and logs it (`protocol`, when given, in the line); the
/// listener limited to `max` connections, and its local address.
pub async fn bind(
    address: SocketAddr,
    name: &str,
    protocol: Option<&str>,
    max: usize,
    cx: &SourceContext,
) -> Result<(Listener, SocketAddr), BoxError> {
    let what = protocol.map_or_else(String::new, |p| format!("{p} "));
    let listener = TcpListener::bind(address).await.map_err(|e| format!("bind {what}{address}: {e}"))?;
    let local = listener.local_addr()?;
    match protocol {
        Some(p) => tracing::info!(source = %cx.id, address = %local, protocol = p, "{name} source listening"),
        None => tracing::info!(source = %cx.id, address = %local, "{name} source listening"),
    }
    Ok((Listener::new(listener, &cx.id, max, ListenerCounters::of(&cx.metrics)), local))
}

/// Serves `app` over HTTP/1.1 (HTTPS with `tls`) on `listener` until
/// shutdown plus the grace period ([`serve_until_shutdown`]); connections
/// closed for a timeout count in `timeouts`.
pub async fn serve_app(
    listener: Listener,
    app: axum::Router,
    timeouts: HttpTimeouts,
    tls: Option<HttpTls>,
    name: &str,
    cx: &SourceContext,
) {
    let server = sluice_net::http::serve_secure(
        listener,
        app,
        timeouts,
        cx.metrics.counter("timeouts"),
        cx.shutdown.clone(),
        sluice_net::http::Proto::Http1,
        tls,
    );
    serve_until_shutdown(server, name, cx).await;
}

/// Runs `server` until it ends, or until shutdown plus the grace period
/// for requests in flight.
pub async fn serve_until_shutdown(server: impl Future, name: &str, cx: &SourceContext) {
    tokio::pin!(server);
    tokio::select! {
        _ = &mut server => {}
        _ = async { cx.shutdown.cancelled().await; tokio::time::sleep(SHUTDOWN_GRACE).await } => {
            tracing::warn!(source = %cx.id, "{name} source: requests still in flight after 5s, stopping");
        }
    }
}
