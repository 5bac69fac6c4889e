//! `otlp`: OpenTelemetry logs, so an OpenTelemetry SDK's OTLP exporters
//! and the OpenTelemetry Collector's `otlp`/`otlphttp` exporters ship to
//! sluice unchanged. Format and mapping: `docs/specs/otlp.md`; transport
//! choice: `docs/adr/0097-otlp-grpc-over-hyper-http2.md`.
//!
//! - **OTLP/HTTP** on `address` (`otlp/http.rs`): `POST /v1/logs` with an
//!   `application/x-protobuf` or `application/json` body, optionally
//!   `Content-Encoding: gzip`.
//! - **OTLP/gRPC** on `grpc_address` (`otlp/grpc.rs`):
//!   `opentelemetry.proto.collector.logs.v1.LogsService/Export` over HTTP/2
//!   cleartext (prior knowledge), messages optionally gzip
//!   (`grpc-encoding: gzip`).
//!
//! Both decode with [`sluice_parsers::otlp`]: every `LogRecord` one event
//! (body → `message`, severity → `severity_text` / `severity_number` /
//! `level`, ids as lowercase hex, attributes as fields, the resource's
//! attributes under `resource`, the scope under `scope`).
//!
//! **Answers** are OTLP's: an `ExportLogsServiceResponse` (protobuf, or
//! JSON for a JSON request) once the pipeline's queue took every record
//! that was kept, with `partial_success` (`rejected_log_records`,
//! `error_message`) when some records could not be kept (counted in
//! `records_rejected` and `events_failed`); a request that does not decode
//! is refused whole — HTTP `400` with a `google.rpc.Status`, gRPC
//! `INVALID_ARGUMENT` — and nothing of it is queued (`bad_requests`).
//! `413` / `RESOURCE_EXHAUSTED` past the size limits, `503` /
//! `UNAVAILABLE` (which exporters retry) when the queue is closed.
//!
//! **Authentication** ([`crate::ingest_auth`]): every request needs one of
//! the source's ingest `tokens` in `Authorization` (Bearer, ApiKey or Basic
//! with the token as password; on gRPC the `authorization` metadata, which
//! `OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20<token>` sets); the
//! events get the token's `group` / `subgroup` / `host`, which no attribute
//! can change. Requests a web page could make are refused
//! (`browser_requests_refused`). `auth = "none"` drops the token check.
//!
//! **Limits.** `max_body_bytes` on the wire, `max_decompressed_bytes` after
//! gzip, `max_records` per request, `max_attributes` per record / resource /
//! scope, `max_depth` of nested `AnyValue`s; connections, header, body and
//! idle timeouts and HTTPS (`tls`) as the `http` source's, on both ports
//! (gRPC over TLS with ALPN `h2`: a secure channel).

use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use axum::http::HeaderMap;
use axum::Router;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, Positive};
use sluice_core::event::now_ns;
use sluice_core::metrics::Counter;
use sluice_core::{Event, Identity};
use sluice_net::http::Proto;
use sluice_parsers::otlp::{Decoded, Limits};

use crate::http_listen::{self, ingest_listener_config, IngestListen};
use crate::ingest_auth::{self, AuthMode, IngestToken};

mod grpc;
mod http;

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "otlp",
    summary: "OpenTelemetry logs: OTLP/HTTP /v1/logs (protobuf, JSON) and OTLP/gRPC, resource and scope kept",
    example: "address = \"127.0.0.1:0\"\ngrpc_address = \"127.0.0.1:0\"\n[tokens.default]\ntoken = \"0123456789abcdef0123\"\ngroup = \"default\"\n",
    build,
};

ingest_listener_config! {
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// OTLP/HTTP listen address, e.g. `0.0.0.0:4318` (none: no HTTP port).
    #[serde(default)]
    address: Option<String>,
    /// OTLP/gRPC listen address, e.g. `0.0.0.0:4317` (none: no gRPC port).
    #[serde(default)]
    grpc_address: Option<String>,
    /// Largest request body (or gRPC message) on the wire.
    #[serde(default = "http_listen::default_max_body")]
    max_body_bytes: Positive<ByteSize>,
    /// Largest body (or gRPC message) after gzip.
    #[serde(default = "http_listen::default_max_decompressed")]
    max_decompressed_bytes: Positive<ByteSize>,
    /// Most log records in one request.
    #[serde(default = "crate::defaults::count::<100_000>")]
    max_records: Positive<usize>,
    /// Most attributes of one record, resource or scope.
    #[serde(default = "crate::defaults::count::<128>")]
    max_attributes: Positive<usize>,
    /// Deepest nesting of `AnyValue` arrays and key-value lists.
    #[serde(default = "http_listen::default_max_depth")]
    max_depth: Positive<usize>,
}
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let addr = |key: &str, a: &Option<String>| -> Result<Option<SocketAddr>, ConfigError> {
        a.as_deref().map(|s| http_listen::socket_address(cx, key, s)).transpose()
    };
    let http_address = addr("address", &c.address)?;
    let grpc_address = addr("grpc_address", &c.grpc_address)?;
    if http_address.is_none() && grpc_address.is_none() {
        return Err(cx.error("address", "set `address` (OTLP/HTTP), `grpc_address` (OTLP/gRPC) or both"));
    }
    let listen = c.listen(cx)?;
    Ok(Box::new(Otlp {
        http_address,
        grpc_address,
        listen,
        max_body: usize::try_from(c.max_body_bytes.0).unwrap_or(usize::MAX),
        max_decompressed: usize::try_from(c.max_decompressed_bytes.0).unwrap_or(usize::MAX),
        limits: Limits {
            max_records: c.max_records.get(),
            max_attributes: c.max_attributes.get(),
            max_depth: c.max_depth.get(),
        },
    }))
}

struct Otlp {
    http_address: Option<SocketAddr>,
    grpc_address: Option<SocketAddr>,
    listen: IngestListen,
    max_body: usize,
    max_decompressed: usize,
    limits: Limits,
}

/// What both transports share.
struct Shared {
    cx: SourceContext,
    max_body: usize,
    max_decompressed: usize,
    limits: Limits,
    auth: AuthMode,
    tokens: Vec<IngestToken>,
    auth_failures: Arc<Counter>,
    browser_refused: Arc<Counter>,
    bad_requests: Arc<Counter>,
    body_too_large: Arc<Counter>,
    records_rejected: Arc<Counter>,
}

/// One transport's state: the shared part and its events' `source`.
struct Port {
    shared: Arc<Shared>,
    source: Arc<str>,
}

impl Shared {
    /// The identity of a request's events, or `None` (counted) without a valid token.
    fn identity(&self, headers: &HeaderMap) -> Option<Arc<Identity>> {
        match self.auth {
            AuthMode::None => Some(sluice_core::event::no_identity()),
            AuthMode::Token => match ingest_auth::authenticate(headers, &self.tokens) {
                Some(t) => Some(Arc::clone(&t.identity)),
                None => {
                    self.auth_failures.inc();
                    None
                }
            },
        }
    }

    /// Queues the kept records of `d` (taking them); `Err` when the queue is
    /// closed. Rejected records are counted here.
    async fn ingest(&self, d: &mut Decoded, identity: &Arc<Identity>, source: &Arc<str>) -> Result<(), ()> {
        if d.rejected > 0 {
            self.records_rejected.add(d.rejected);
            self.cx.metrics.events_failed.add(d.rejected);
        }
        if d.records.is_empty() {
            return Ok(());
        }
        let now = now_ns();
        let events: Vec<Event> = std::mem::take(&mut d.records)
            .into_iter()
            .map(|r| Event::new(r.timestamp.unwrap_or(now), r.fields, Arc::clone(identity), Arc::clone(source)))
            .collect();
        let n = events.len() as u64;
        self.cx.metrics.events_in.add(n);
        self.cx.out.send(events).await.map_err(|_| ())?;
        self.cx.metrics.events_out.add(n);
        Ok(())
    }
}

#[async_trait]
impl Source for Otlp {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let m = &cx.metrics;
        let tls = self.listen.http_tls(&cx);
        let shared = Arc::new(Shared {
            max_body: self.max_body,
            max_decompressed: self.max_decompressed,
            limits: self.limits,
            auth: self.listen.auth,
            tokens: self.listen.tokens,
            auth_failures: m.counter("auth_failures"),
            browser_refused: m.counter("browser_requests_refused"),
            bad_requests: m.counter("bad_requests"),
            body_too_large: m.counter("body_too_large"),
            records_rejected: m.counter("records_rejected"),
            cx: cx.clone(),
        });
        let timeouts = m.counter("timeouts");
        let http_server = match self.http_address {
            Some(a) => {
                let (listener, local) =
                    http_listen::bind(a, "otlp", Some("http"), self.listen.max_connections, &cx).await?;
                let port = Arc::new(Port { shared: Arc::clone(&shared), source: Arc::from(format!("otlp:{local}")) });
                let app = Router::new().fallback(http::handle).with_state(port);
                Some(sluice_net::http::serve_secure(
                    listener,
                    app,
                    self.listen.timeouts,
                    Arc::clone(&timeouts),
                    cx.shutdown.clone(),
                    Proto::Http1,
                    tls.clone(),
                ))
            }
            None => None,
        };
        let grpc_server = match self.grpc_address {
            Some(a) => {
                let (listener, local) =
                    http_listen::bind(a, "otlp", Some("grpc"), self.listen.max_connections, &cx).await?;
                let port =
                    Arc::new(Port { shared: Arc::clone(&shared), source: Arc::from(format!("otlp-grpc:{local}")) });
                let app = Router::new().fallback(grpc::handle).with_state(port);
                Some(sluice_net::http::serve_secure(
                    listener,
                    app,
                    self.listen.timeouts,
                    Arc::clone(&timeouts),
                    cx.shutdown.clone(),
                    Proto::H2c,
                    tls.clone(),
                ))
            }
            None => None,
        };
        let servers = async {
            tokio::join!(
                async {
                    if let Some(s) = http_server {
                        s.await;
                    }
                },
                async {
                    if let Some(s) = grpc_server {
                        s.await;
                    }
                }
            )
        };
        http_listen::serve_until_shutdown(servers, "otlp", &cx).await;
        Ok(())
    }
}
