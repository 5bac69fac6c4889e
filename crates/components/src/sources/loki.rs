//! `loki`: the Grafana Loki push API, so Promtail, Grafana Alloy, Fluent
//! Bit's and Vector's `loki` outputs, the Docker Loki driver and
//! `python-logging-loki` ship to sluice unchanged. Format and mapping:
//! `docs/specs/loki.md`.
//!
//! `POST /loki/api/v1/push` (also `/api/prom/push`): JSON
//! (`Content-Type: application/json`, optionally gzip) or
//! snappy-compressed protobuf (`application/x-protobuf`, Loki's default),
//! decoded by [`sluice_parsers::loki`]: each entry an event, its line
//! `message`, its stream's labels and structured metadata fields, its
//! nanosecond timestamp the event time. `GET /ready` answers `ready`.
//!
//! **Answers** are Loki's: `204` once the pipeline's queue took every
//! entry; `400` with the reason as text for a body that does not decode
//! (none of it is queued; `bad_requests`), `413` past `max_body_bytes`,
//! `503` when the queue is closed.
//!
//! **Authentication** ([`crate::ingest_auth`], as the `http` source's):
//! every push needs one of the source's ingest `tokens` — Basic with the
//! token as password (what Loki clients' `basic_auth` sends; any user
//! name), Bearer or ApiKey; the events get the token's `group` /
//! `subgroup` / `host`, which no label can change. Requests a web page
//! could make (form or `text/plain` bodies, a foreign `Origin`) are refused
//! (`browser_requests_refused`). `auth = "none"` drops the token check.
//!
//! **Limits.** `max_body_bytes` (on the wire and after gzip),
//! `max_decompressed_bytes` (snappy), `max_entries` per request,
//! `max_labels` per stream, `max_depth` of JSON; connections, header,
//! body and idle timeouts and HTTPS (`tls`) as the `http` source's.

use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::Router;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, Positive};
use sluice_core::metrics::Counter;
use sluice_core::Event;
use sluice_parsers::loki::{self, Limits};

use crate::http_body::{self, BodyError};
use crate::http_listen::{self, ingest_listener_config, IngestListen};
use crate::ingest_auth::{self, AuthMode, IngestToken};

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "loki",
    summary: "Grafana Loki push API: /loki/api/v1/push, JSON and snappy protobuf, labels to fields",
    example: "address = \"127.0.0.1:0\"\n[tokens.default]\ntoken = \"0123456789abcdef0123\"\ngroup = \"default\"\n",
    build,
};

ingest_listener_config! {
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Listen address, e.g. `0.0.0.0:3100`.
    address: String,
    /// Largest request body (on the wire, and after gzip decoding).
    #[serde(default = "http_listen::default_max_body")]
    max_body_bytes: Positive<ByteSize>,
    /// Largest snappy-decompressed protobuf.
    #[serde(default = "http_listen::default_max_decompressed")]
    max_decompressed_bytes: Positive<ByteSize>,
    /// Most entries in one request.
    #[serde(default = "crate::defaults::count::<100_000>")]
    max_entries: Positive<usize>,
    /// Most labels per stream (and structured-metadata pairs per entry).
    #[serde(default = "crate::defaults::count::<64>")]
    max_labels: Positive<usize>,
    /// Deepest JSON nesting.
    #[serde(default = "http_listen::default_max_depth")]
    max_depth: Positive<usize>,
}
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let address = http_listen::socket_address(cx, "address", &c.address)?;
    let listen = c.listen(cx)?;
    Ok(Box::new(Loki {
        address,
        listen,
        max_body: usize::try_from(c.max_body_bytes.0).unwrap_or(usize::MAX),
        limits: Limits {
            max_entries: c.max_entries.get(),
            max_labels: c.max_labels.get(),
            max_depth: c.max_depth.get(),
            max_decompressed: usize::try_from(c.max_decompressed_bytes.0).unwrap_or(usize::MAX),
        },
    }))
}

struct Loki {
    address: SocketAddr,
    listen: IngestListen,
    max_body: usize,
    limits: Limits,
}

struct Shared {
    cx: SourceContext,
    source: Arc<str>,
    max_body: usize,
    limits: Limits,
    auth: AuthMode,
    tokens: Vec<IngestToken>,
    auth_failures: Arc<Counter>,
    browser_refused: Arc<Counter>,
    bad_requests: Arc<Counter>,
    body_too_large: Arc<Counter>,
}

#[async_trait]
impl Source for Loki {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let (listener, local) = http_listen::bind(self.address, "loki", None, self.listen.max_connections, &cx).await?;
        let m = &cx.metrics;
        let tls = self.listen.http_tls(&cx);
        let shared = Arc::new(Shared {
            source: Arc::from(format!("loki:{local}")),
            max_body: self.max_body,
            limits: self.limits,
            auth: self.listen.auth,
            tokens: self.listen.tokens,
            auth_failures: m.counter("auth_failures"),
            browser_refused: m.counter("browser_requests_refused"),
            bad_requests: m.counter("bad_requests"),
            body_too_large: m.counter("body_too_large"),
            cx: cx.clone(),
        });
        let app = Router::new().fallback(handle).with_state(shared);
        http_listen::serve_app(listener, app, self.listen.timeouts, tls, "loki", &cx).await;
        Ok(())
    }
}

/// A plain-text answer, as Loki gives.
fn text(status: StatusCode, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

async fn handle(State(s): State<Arc<Shared>>, req: Request) -> Response {
    let path = req.uri().path().trim_end_matches('/');
    match path {
        "/ready" if *req.method() == Method::GET => return text(StatusCode::OK, "ready\n".into()),
        "/loki/api/v1/push" | "/api/prom/push" if *req.method() == Method::POST => {}
        _ => return text(StatusCode::NOT_FOUND, "404 page not found\n".into()),
    }
    if let Some((status, reason)) = ingest_auth::browser_refusal(req.headers()) {
        s.browser_refused.inc();
        return text(status, reason);
    }
    let identity = match s.auth {
        AuthMode::None => sluice_core::event::no_identity(),
        AuthMode::Token => match ingest_auth::authenticate(req.headers(), &s.tokens) {
            Some(t) => Arc::clone(&t.identity),
            None => {
                s.auth_failures.inc();
                let mut r = text(StatusCode::UNAUTHORIZED, "no valid ingest token\n".into());
                r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"loki\""));
                return r;
            }
        },
    };
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/json"));
    let body = match http_body::read(req, s.max_body).await {
        Ok((body, wire)) => {
            s.cx.metrics.bytes_in.add(wire as u64);
            body
        }
        Err(BodyError::TooLarge) => {
            s.body_too_large.inc();
            return text(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request body is larger than max_body_bytes ({} bytes)\n", s.max_body),
            );
        }
        Err(e) => {
            s.bad_requests.inc();
            return text(StatusCode::BAD_REQUEST, format!("{e}\n"));
        }
    };
    let decoded = if json { loki::decode_json(&body, s.limits) } else { loki::decode_protobuf(&body, s.limits) };
    let entries = match decoded {
        Ok(e) => e,
        Err(e) => {
            s.bad_requests.inc();
            s.cx.metrics.events_failed.inc();
            return text(StatusCode::BAD_REQUEST, format!("{e}\n"));
        }
    };
    if entries.is_empty() {
        return Response::builder().status(StatusCode::NO_CONTENT).body(Body::empty()).unwrap_or_default();
    }
    let events: Vec<Event> = entries
        .into_iter()
        .map(|e| Event::new(e.timestamp, e.fields, Arc::clone(&identity), Arc::clone(&s.source)))
        .collect();
    let n = events.len() as u64;
    s.cx.metrics.events_in.add(n);
    if s.cx.out.send(events).await.is_err() {
        return text(StatusCode::SERVICE_UNAVAILABLE, "the pipeline's queue is closed\n".into());
    }
    s.cx.metrics.events_out.add(n);
    Response::builder().status(StatusCode::NO_CONTENT).body(Body::empty()).unwrap_or_default()
}
