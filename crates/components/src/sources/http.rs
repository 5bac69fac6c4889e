//! `http`: events over HTTP — newline-delimited JSON (or plain lines) and an
//! Elasticsearch-compatible bulk API, so Filebeat, Fluent Bit, Vector,
//! Logstash's `elasticsearch` output and the official Elasticsearch clients can
//! ship to sluice unchanged.
//!
//! **Plain ingest.** `POST /` and `POST /ndjson`: the body is split into lines
//! by the TCP source's [`LineDecoder`], so the behaviour is the same: a line
//! that is not a JSON object becomes `message` tagged `_jsonparsefailure`, a
//! line longer than `max_line_bytes` is cut and tagged `_oversized`; both are
//! kept and counted. The reply is `200 {"accepted": N, "failed": M}` where `N`
//! counts every event queued and `M` those of them that were tagged as failed.
//!
//! **Bulk.** `POST|PUT /_bulk` and `POST|PUT /{index}/_bulk` take the
//! Elasticsearch bulk format and answer with the Elasticsearch response shape
//! (`took`, `errors`, one entry in `items` per action, in order). `index` and
//! `create` actions become events whose fields are the document plus `_index`
//! (from the action line, else the URL) and `_id` (from the action line, else
//! generated, 20 URL-safe characters as in Elasticsearch). Logs are
//! append-only, so `update` and `delete` get a per-item `400`; an unknown
//! action gets a per-item `400` too, and the line after it is taken as its
//! source line unless it is itself a known action line. An explicit `_id` is
//! kept; an empty one refuses the whole request (`400
//! action_request_validation_exception`, as Elasticsearch's validation
//! does). `op_type` `index` / `create` is honoured, anything else refuses the
//! body. `require_alias` (the action's, else `?require_alias=true`) answers
//! that item `404 index_not_found_exception`: sluice has no aliases.
//!
//! *Bad documents:* a source line that is not a JSON object gets a per-item
//! `400 mapper_parsing_exception`, is counted (`events_failed`) and is **not**
//! indexed — exactly what Elasticsearch does. The client learns about it from
//! the item status and retries or dead-letters it by its own policy; indexing
//! it as a tagged event as well would duplicate it in a client that does so.
//! A body that breaks the bulk format itself (an action line that is not a
//! one-key JSON object, an `index` with no source line, an empty body) is
//! rejected as a whole with a `400` and an Elasticsearch-style error body,
//! nothing of it queued (`bad_requests`).
//!
//! **Handshake.** Clients check the server before sending: `GET /` (cluster
//! info, version 8.11.0), `HEAD /`, `GET /_license`, `GET /_xpack`,
//! `GET /_cluster/health`, `GET /_nodes`. Setup calls for templates, ILM
//! policies, ingest pipelines, data streams and indices (`PUT` / `POST`) are
//! acknowledged without doing anything; `GET`/`HEAD` on them answer `404` so a
//! client installs what it wants (and gets an acknowledgement), except
//! `HEAD /{index}`, which answers `200`. Every response carries
//! `X-Elastic-Product: Elasticsearch`, which the v8 clients require.
//!
//! **Acknowledgement.** A reply other than an error is sent only after the
//! pipeline's queue took the events (durably, for a persisted queue); `503`
//! when the queue is closed (shutdown), so the client retries elsewhere or
//! later.
//!
//! **On the API listener.** With `address = "api"` the source binds nothing:
//! while it runs it mounts its routes on the node's API server (see
//! [`sluice_core::mount`]), so one port serves the search API, the stats and
//! the ingest endpoints. The routes are the ones above, listed in
//! [`MOUNT_PATHS`]; `GET /` then answers the Elasticsearch handshake. A second
//! mounted `http` source, or `[api] address = ""`, is an error at start.
//!
//! **Limits.** A body larger than `max_body_bytes` (after gzip
//! decoding: `Content-Encoding: gzip` is accepted) gets `413`
//! (`body_too_large`). On its own port the source serves at most
//! `max_connections` at once (one more gets `503`, `refused_connections`)
//! and closes a connection whose request header takes longer than
//! `header_timeout`, whose body takes longer than `body_timeout`, or that
//! stays idle longer than `idle_timeout` (`timeouts`;
//! [`sluice_net::http`]). Mounted on the API listener, `[api]`'s limits
//! apply and these keys are refused.
//!
//! **Authentication** (`http/auth.rs`): every request needs one of the source's
//! ingest `tokens` — `Authorization: Bearer <token>`, `ApiKey <token>` or
//! `ApiKey base64(<id>:<token>)` (Filebeat's and Logstash's `api_key`), or
//! Basic with the token as password (any user name) — else `401`
//! (`auth_failures`); its events get the token's `group` / `subgroup` /
//! `host`. Requests a web page could make (form and `text/plain` bodies, a
//! foreign `Origin`) are refused on the ingest routes with `415` / `403`
//! (`browser_requests_refused`). `auth = "none"` drops the token check (only
//! behind a proxy that authenticates). Identity keys on the source's own
//! table override every event's identity, tokens' included.

mod auth;

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::Router;
use serde::{Deserialize, Serialize};
use sluice_core::codec::event_from_json;
use sluice_core::component::{BoxError, BuildContext, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration};
use sluice_core::metrics::Counter;
use sluice_core::mount::Mounts;
use sluice_core::{Event, Identity, Value};
use sluice_parsers::es_bulk::{self, Kind};

/// Response documents (built with `sonic_rs::json!`).
type Doc = sonic_rs::Value;
use sluice_net::{HttpTimeouts, Listener, ListenerCounters};
use tokio::net::TcpListener;

use self::auth::{AuthMode, IngestToken};
use crate::lines::{LineDecoder, LineFormat, LineState};

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "http",
    summary: "HTTP: ndjson/lines POST and an Elasticsearch-compatible _bulk API",
    example: "address = \"127.0.0.1:0\"\n[tokens.default]\ntoken = \"0123456789abcdef0123\"\ngroup = \"default\"\n",
    build,
};

/// The Elasticsearch version announced to clients.
const ES_VERSION: &str = "8.11.0";
/// How long shutdown waits for requests in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How much of an oversized body is read and discarded so the `413` reaches
/// the client instead of a connection reset.
const DRAIN_LIMIT: usize = 16 << 20;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Listen address, e.g. `0.0.0.0:9200`, or `"api"` to serve on the node's
    /// API listener.
    address: String,
    /// `ndjson` (default) or `lines`, for `POST /` and `POST /ndjson`.
    #[serde(default = "default_format")]
    format: LineFormat,
    /// Largest accepted request body (after gzip decoding).
    #[serde(default = "default_max_body")]
    max_body_bytes: ByteSize,
    /// Longest accepted line (ndjson) or bulk source line.
    #[serde(default = "default_max_line")]
    max_line_bytes: ByteSize,
    /// `token` (default): requests need one of `tokens`; `none`: no check.
    #[serde(default)]
    auth: AuthMode,
    /// Ingest tokens by name (see [`auth`]).
    #[serde(default)]
    tokens: BTreeMap<String, auth::TokenConfig>,
    /// Serve the Elasticsearch-compatible endpoints.
    #[serde(default = "default_bulk")]
    bulk: bool,
    /// Own port only: connections served at once; one more gets `503`.
    #[serde(default)]
    max_connections: Option<usize>,
    /// Own port only: longest time from a request's first byte to the end of its header.
    #[serde(default)]
    header_timeout: Option<HumanDuration>,
    /// Own port only: longest time to receive a request's whole body.
    #[serde(default)]
    body_timeout: Option<HumanDuration>,
    /// Own port only: a connection with no request in progress is closed after this long.
    #[serde(default)]
    idle_timeout: Option<HumanDuration>,
}

/// Default `max_connections` of the source's own port.
const DEFAULT_MAX_CONNECTIONS: usize = 4096;

fn default_format() -> LineFormat {
    LineFormat::Ndjson
}
fn default_max_body() -> ByteSize {
    ByteSize(10 << 20)
}
fn default_max_line() -> ByteSize {
    ByteSize(1 << 20)
}
fn default_bulk() -> bool {
    true
}

/// The routes a source with `address = "api"` mounts on the API listener
/// (axum route syntax; each method is dispatched by the source itself).
pub const MOUNT_PATHS: &[&str] = &[
    "/",
    "/ndjson",
    "/_bulk",
    "/{index}/_bulk",
    "/_license",
    "/_xpack",
    "/_cluster/{*rest}",
    "/_nodes",
    "/_nodes/{*rest}",
    "/_index_template",
    "/_index_template/{*rest}",
    "/_template",
    "/_template/{*rest}",
    "/_component_template",
    "/_component_template/{*rest}",
    "/_ilm/{*rest}",
    "/_ingest/{*rest}",
    "/_data_stream",
    "/_data_stream/{*rest}",
    "/{index}",
];

/// Where the source listens.
enum Listen {
    /// Its own port.
    Bind { address: SocketAddr, timeouts: HttpTimeouts, max_connections: usize },
    /// Mounted on the node's API server.
    Api { mounts: Arc<Mounts>, owner: String },
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let own_port = [
        ("max_connections", c.max_connections.is_some()),
        ("header_timeout", c.header_timeout.is_some()),
        ("body_timeout", c.body_timeout.is_some()),
        ("idle_timeout", c.idle_timeout.is_some()),
    ];
    let listen = if c.address == "api" {
        if cx.mounts.address().is_none() {
            return Err(cx.error("address", "\"api\" needs the API server, but [api] address is empty"));
        }
        if let Some((key, _)) = own_port.iter().find(|(_, set)| *set) {
            return Err(cx.error(key, "applies to the source's own port; on the API listener set it under [api]"));
        }
        Listen::Api { mounts: Arc::clone(&cx.mounts), owner: cx.path.clone() }
    } else {
        let address = c
            .address
            .parse()
            .map_err(|e| cx.error("address", format!("invalid socket address {:?} (or \"api\"): {e}", c.address)))?;
        let d = HttpTimeouts::default();
        let timeouts = HttpTimeouts {
            header: c.header_timeout.map_or(d.header, |t| t.0),
            body: c.body_timeout.map_or(d.body, |t| t.0),
            idle: c.idle_timeout.map_or(d.idle, |t| t.0),
        };
        for (key, t) in
            [("header_timeout", timeouts.header), ("body_timeout", timeouts.body), ("idle_timeout", timeouts.idle)]
        {
            if t.is_zero() {
                return Err(cx.error(key, "must be greater than 0"));
            }
        }
        let max_connections = c.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS);
        if max_connections == 0 {
            return Err(cx.error("max_connections", "must be at least 1"));
        }
        Listen::Bind { address, timeouts, max_connections }
    };
    if c.max_body_bytes.0 == 0 {
        return Err(cx.error("max_body_bytes", "must be greater than 0"));
    }
    if c.max_line_bytes.0 == 0 {
        return Err(cx.error("max_line_bytes", "must be greater than 0"));
    }
    let tokens = auth::resolve(c.auth, &c.tokens, cx)?;
    Ok(Box::new(Http {
        listen,
        format: c.format,
        max_body: usize::try_from(c.max_body_bytes.0).unwrap_or(usize::MAX),
        max_line: usize::try_from(c.max_line_bytes.0).unwrap_or(usize::MAX),
        auth: c.auth,
        tokens,
        bulk: c.bulk,
    }))
}

struct Http {
    listen: Listen,
    format: LineFormat,
    max_body: usize,
    max_line: usize,
    auth: AuthMode,
    tokens: Vec<IngestToken>,
    bulk: bool,
}

/// Counters held for the request path.
struct Counters {
    auth_failures: Arc<Counter>,
    browser_refused: Arc<Counter>,
    body_too_large: Arc<Counter>,
    bad_requests: Arc<Counter>,
    bulk_item_errors: Arc<Counter>,
    oversized: Arc<Counter>,
    gzip_bodies: Arc<Counter>,
}

/// Shared by every request.
struct Shared {
    cx: SourceContext,
    decoder: LineDecoder,
    source: Arc<str>,
    local: SocketAddr,
    max_body: usize,
    max_line: usize,
    auth: AuthMode,
    tokens: Vec<IngestToken>,
    bulk: bool,
    seq_no: AtomicU64,
    ids: IdGenerator,
    counters: Counters,
}

#[async_trait]
impl Source for Http {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let (listener, local) = match &self.listen {
            Listen::Bind { address, max_connections, .. } => {
                let listener = TcpListener::bind(address).await.map_err(|e| format!("bind {address}: {e}"))?;
                let local = listener.local_addr()?;
                tracing::info!(source = %cx.id, address = %local, max_connections, "http source listening");
                let counters = ListenerCounters::of(&cx.metrics);
                (Some(Listener::new(listener, &cx.id, *max_connections, counters)), local)
            }
            Listen::Api { mounts, .. } => {
                let local =
                    mounts.address().and_then(|a| a.parse().ok()).unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
                (None, local)
            }
        };
        let m = &cx.metrics;
        let counters = Counters {
            auth_failures: m.counter("auth_failures"),
            browser_refused: m.counter("browser_requests_refused"),
            body_too_large: m.counter("body_too_large"),
            bad_requests: m.counter("bad_requests"),
            bulk_item_errors: m.counter("bulk_item_errors"),
            oversized: m.counter("oversized_frames"),
            gzip_bodies: m.counter("gzip_bodies"),
        };
        let shared = Arc::new(Shared {
            decoder: LineDecoder::new(self.format, self.max_line, &cx),
            source: Arc::from(format!("http:{local}")),
            local,
            max_body: self.max_body,
            max_line: self.max_line,
            auth: self.auth,
            tokens: self.tokens,
            bulk: self.bulk,
            seq_no: AtomicU64::new(0),
            ids: IdGenerator::new(),
            counters,
            cx: cx.clone(),
        });
        let Some(listener) = listener else {
            let Listen::Api { mounts, owner } = &self.listen else { return Ok(()) };
            let mut router = Router::new();
            for p in MOUNT_PATHS {
                router = router.route(p, axum::routing::any(handle));
            }
            let router: Router = router.with_state(shared);
            let paths = MOUNT_PATHS.iter().map(|p| (*p).to_string()).collect();
            let guard = mounts.mount(owner, paths, Arc::new(router)).map_err(|e| format!("address = \"api\": {e}"))?;
            tracing::info!(source = %cx.id, address = %local, "http source serving on the API listener");
            cx.shutdown.cancelled().await;
            drop(guard);
            return Ok(());
        };
        let Listen::Bind { timeouts, .. } = self.listen else { return Ok(()) };
        let app = Router::new().fallback(handle).with_state(shared);
        let server =
            sluice_net::http::serve(listener, app, timeouts, cx.metrics.counter("timeouts"), cx.shutdown.clone());
        tokio::pin!(server);
        tokio::select! {
            () = &mut server => {}
            _ = async { cx.shutdown.cancelled().await; tokio::time::sleep(SHUTDOWN_GRACE).await } => {
                tracing::warn!(source = %cx.id, "http source: requests still in flight after {SHUTDOWN_GRACE:?}, stopping");
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- responses

fn respond(status: StatusCode, body: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn json(status: StatusCode, v: &Doc) -> Response {
    respond(status, sonic_rs::to_vec(v).unwrap_or_default())
}

/// An Elasticsearch-style error body: `{"error": {"root_cause": [..], "type", "reason"}, "status"}`.
fn es_error(status: StatusCode, kind: &str, reason: &str) -> Response {
    let cause = sonic_rs::json!({"type": kind, "reason": reason});
    json(
        status,
        &sonic_rs::json!({
            "error": {"root_cause": [cause], "type": kind, "reason": reason},
            "status": status.as_u16(),
        }),
    )
}

fn acknowledged() -> Response {
    json(StatusCode::OK, &sonic_rs::json!({"acknowledged": true}))
}

fn not_found(what: &str) -> Response {
    es_error(StatusCode::NOT_FOUND, "resource_not_found_exception", &format!("{what} not found"))
}

fn queue_closed() -> Response {
    es_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable_shards_exception",
        "pipeline queue is closed (shutting down)",
    )
}

// ---------------------------------------------------------------- routing

async fn handle(State(s): State<Arc<Shared>>, req: Request) -> Response {
    let mut resp = route(&s, req).await;
    resp.headers_mut().insert("x-elastic-product", HeaderValue::from_static("Elasticsearch"));
    resp
}

/// Whether a request writes events (the routes a web page must not reach).
fn is_ingest(method: &Method, segs: &[&str], bulk: bool) -> bool {
    match segs {
        [] | ["ndjson"] => *method == Method::POST,
        ["_bulk"] | [_, "_bulk"] => bulk && (*method == Method::POST || *method == Method::PUT),
        _ => false,
    }
}

async fn route(s: &Shared, req: Request) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let segs: Vec<String> = path.split('/').filter(|p| !p.is_empty()).map(percent_decode).collect();
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    if is_ingest(&method, &segs, s.bulk) {
        if let Some((status, reason)) = auth::browser_refusal(req.headers()) {
            s.counters.browser_refused.inc();
            return es_error(status, "security_exception", &reason);
        }
    }
    let identity = match s.auth {
        AuthMode::None => None,
        AuthMode::Token => match auth::authenticate(req.headers(), &s.tokens) {
            Some(t) => Some(Arc::clone(&t.identity)),
            None => {
                s.counters.auth_failures.inc();
                let mut r = es_error(
                    StatusCode::UNAUTHORIZED,
                    "security_exception",
                    &format!("missing or invalid authentication credentials for REST request [{path}]"),
                );
                r.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Basic realm=\"security\", charset=\"UTF-8\""),
                );
                return r;
            }
        },
    };
    let is = |m: &Method| method == *m;
    match segs.as_slice() {
        [] if is(&Method::POST) => ingest_lines(s, req, identity).await,
        ["ndjson"] if is(&Method::POST) => ingest_lines(s, req, identity).await,
        [] if is(&Method::GET) => json(StatusCode::OK, &info(s)),
        [] if is(&Method::HEAD) => respond(StatusCode::OK, Vec::new()),
        _ if !s.bulk => es_error(
            StatusCode::NOT_FOUND,
            "illegal_argument_exception",
            &format!("no handler found for uri [{path}] and method [{method}] (bulk = false)"),
        ),
        ["_bulk"] if is(&Method::POST) || is(&Method::PUT) => bulk(s, req, None, identity, started).await,
        [index, "_bulk"] if is(&Method::POST) || is(&Method::PUT) => {
            let index = index.to_string();
            bulk(s, req, Some(index), identity, started).await
        }
        ["_license"] if is(&Method::GET) => json(StatusCode::OK, &license()),
        ["_xpack"] if is(&Method::GET) => json(StatusCode::OK, &xpack()),
        ["_cluster", "health", ..] if is(&Method::GET) => json(StatusCode::OK, &health()),
        ["_nodes", ..] if is(&Method::GET) => json(StatusCode::OK, &nodes(s)),
        [first, ..]
            if matches!(
                *first,
                "_index_template" | "_template" | "_component_template" | "_ilm" | "_ingest" | "_data_stream"
            ) =>
        {
            if is(&Method::PUT) || is(&Method::POST) {
                acknowledged()
            } else {
                not_found(&path)
            }
        }
        [index] if !index.starts_with('_') && is(&Method::HEAD) => respond(StatusCode::OK, Vec::new()),
        [index] if !index.starts_with('_') && is(&Method::PUT) => {
            json(StatusCode::OK, &sonic_rs::json!({"acknowledged": true, "shards_acknowledged": true, "index": index}))
        }
        _ => es_error(
            StatusCode::BAD_REQUEST,
            "illegal_argument_exception",
            &format!("no handler found for uri [{path}] and method [{method}]"),
        ),
    }
}

fn info(s: &Shared) -> Doc {
    sonic_rs::json!({
        "name": format!("sluice-{}", s.cx.id),
        "cluster_name": "sluice",
        "cluster_uuid": "c2x1aWNlLWNsdXN0ZXI",
        "version": {
            "number": ES_VERSION,
            "build_flavor": "default",
            "build_type": "sluice",
            "build_hash": "0000000000000000000000000000000000000000",
            "build_date": "2023-11-04T10:04:57.184859352Z",
            "build_snapshot": false,
            "lucene_version": "9.8.0",
            "minimum_wire_compatibility_version": "7.17.0",
            "minimum_index_compatibility_version": "7.0.0"
        },
        "tagline": "You Know, for Search"
    })
}

fn license() -> Doc {
    sonic_rs::json!({"license": {
        "status": "active", "uid": "00000000-0000-0000-0000-000000000000", "type": "basic",
        "issue_date": "2023-01-01T00:00:00.000Z", "issue_date_in_millis": 1672531200000_i64,
        "max_nodes": 1000, "max_resource_units": null, "issued_to": "sluice", "issuer": "sluice",
        "start_date_in_millis": -1
    }})
}

fn xpack() -> Doc {
    sonic_rs::json!({
        "build": {"hash": "0000000000000000000000000000000000000000", "date": "2023-11-04T10:04:57.184859352Z"},
        "license": {"uid": "00000000-0000-0000-0000-000000000000", "type": "basic", "mode": "basic", "status": "active"},
        "features": {
            "ilm": {"available": true, "enabled": true},
            "security": {"available": true, "enabled": false},
            "monitoring": {"available": true, "enabled": false}
        },
        "tagline": "You know, for X"
    })
}

fn health() -> Doc {
    sonic_rs::json!({
        "cluster_name": "sluice", "status": "green", "timed_out": false,
        "number_of_nodes": 1, "number_of_data_nodes": 1,
        "active_primary_shards": 0, "active_shards": 0, "relocating_shards": 0,
        "initializing_shards": 0, "unassigned_shards": 0, "delayed_unassigned_shards": 0,
        "number_of_pending_tasks": 0, "number_of_in_flight_fetch": 0,
        "task_max_waiting_in_queue_millis": 0, "active_shards_percent_as_number": 100.0
    })
}

fn nodes(s: &Shared) -> Doc {
    let addr = s.local.to_string();
    let mut nodes = sonic_rs::Object::new();
    nodes.insert(
        "sluice",
        sonic_rs::json!({
            "name": format!("sluice-{}", s.cx.id), "version": ES_VERSION,
            "roles": ["master", "data", "ingest"],
            "http": {"bound_address": [addr.clone()], "publish_address": addr}
        }),
    );
    sonic_rs::json!({
        "_nodes": {"total": 1, "successful": 1, "failed": 0},
        "cluster_name": "sluice",
        "nodes": nodes
    })
}

// ---------------------------------------------------------------- paths

/// A path segment with its `%XX` escapes decoded (invalid ones kept as
/// written, invalid UTF-8 replaced).
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

// ---------------------------------------------------------------- body

enum BodyError {
    TooLarge,
    Encoding(String),
    Read(String),
}

/// Reads the whole body (gunzipping it when asked), at most `max` bytes.
async fn read_body(s: &Shared, req: Request) -> Result<Vec<u8>, Response> {
    let gzip = match req.headers().get(header::CONTENT_ENCODING).map(|v| v.to_str().unwrap_or("?").trim()) {
        None | Some("") | Some("identity") => false,
        Some(e) if e.eq_ignore_ascii_case("gzip") || e.eq_ignore_ascii_case("x-gzip") => true,
        Some(e) => {
            s.counters.bad_requests.inc();
            return Err(es_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "illegal_argument_exception",
                &format!("unsupported Content-Encoding {e:?}: send identity or gzip"),
            ));
        }
    };
    let result = match collect(req.into_body(), s.max_body).await {
        Ok(raw) if gzip => {
            s.counters.gzip_bodies.inc();
            gunzip(&raw, s.max_body).map(|d| (raw.len(), d))
        }
        Ok(raw) => Ok((raw.len(), raw)),
        Err(e) => Err(e),
    };
    match result {
        Ok((wire, body)) => {
            s.cx.metrics.bytes_in.add(wire as u64);
            Ok(body)
        }
        Err(BodyError::TooLarge) => {
            s.counters.body_too_large.inc();
            Err(es_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "content_too_long_exception",
                &format!("request body is larger than max_body_bytes ({} bytes)", s.max_body),
            ))
        }
        Err(BodyError::Encoding(e)) => {
            s.counters.bad_requests.inc();
            Err(es_error(StatusCode::BAD_REQUEST, "parse_exception", &format!("invalid gzip body: {e}")))
        }
        Err(BodyError::Read(e)) => {
            s.cx.metrics.errors.inc();
            Err(es_error(StatusCode::BAD_REQUEST, "parse_exception", &format!("reading the request body: {e}")))
        }
    }
}

async fn collect(mut body: Body, max: usize) -> Result<Vec<u8>, BodyError> {
    if body.size_hint().lower() > max as u64 {
        drain(body).await;
        return Err(BodyError::TooLarge);
    }
    let mut buf = Vec::new();
    while let Some(frame) = std::future::poll_fn(|c| Pin::new(&mut body).poll_frame(c)).await {
        let frame = frame.map_err(|e| BodyError::Read(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > max {
                drain(body).await;
                return Err(BodyError::TooLarge);
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf)
}

/// Reads and drops up to [`DRAIN_LIMIT`] more bytes, so the error response is
/// not lost to a connection reset while the client is still sending.
async fn drain(mut body: Body) {
    let mut seen = 0usize;
    while seen < DRAIN_LIMIT {
        match std::future::poll_fn(|c| Pin::new(&mut body).poll_frame(c)).await {
            Some(Ok(frame)) => seen += frame.data_ref().map_or(0, |d| d.len()),
            _ => return,
        }
    }
}

fn gunzip(raw: &[u8], max: usize) -> Result<Vec<u8>, BodyError> {
    let mut out = Vec::with_capacity(raw.len().saturating_mul(4).min(max));
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    flate2::read::MultiGzDecoder::new(raw)
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|e| BodyError::Encoding(e.to_string()))?;
    if out.len() > max {
        return Err(BodyError::TooLarge);
    }
    Ok(out)
}

// ---------------------------------------------------------------- ndjson / lines

async fn ingest_lines(s: &Shared, req: Request, identity: Option<Arc<Identity>>) -> Response {
    let body = match read_body(s, req).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let mut events = Vec::new();
    let mut state = LineState::default();
    s.decoder.decode(&bytes::Bytes::from(body), true, &mut state, &mut events, &s.source);
    if let Some(id) = &identity {
        for e in &mut events {
            e.identity = Arc::clone(id);
        }
    }
    // Events still held as JSON text parsed cleanly: only the others can carry a failure tag.
    let failed = events
        .iter()
        .filter(|e| e.raw().is_none() && (e.has_tag("_jsonparsefailure") || e.has_tag("_oversized")))
        .count();
    let accepted = events.len();
    if !events.is_empty() {
        s.cx.metrics.events_in.add(accepted as u64);
        if s.cx.out.send(events).await.is_err() {
            return queue_closed();
        }
        s.cx.metrics.events_out.add(accepted as u64);
    }
    json(StatusCode::OK, &sonic_rs::json!({"accepted": accepted, "failed": failed}))
}

// ---------------------------------------------------------------- bulk

#[derive(Serialize)]
struct Shards {
    total: u32,
    successful: u32,
    failed: u32,
}

#[derive(Serialize)]
struct ItemError {
    #[serde(rename = "type")]
    kind: &'static str,
    reason: String,
}

#[derive(Serialize)]
struct ItemResult {
    _index: Option<String>,
    _id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    _version: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    _shards: Option<Shards>,
    #[serde(skip_serializing_if = "Option::is_none")]
    _seq_no: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    _primary_term: Option<u64>,
    status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ItemError>,
}

impl ItemResult {
    fn created(index: String, id: String, seq_no: u64) -> Self {
        Self {
            _index: Some(index),
            _id: Some(id),
            _version: Some(1),
            result: Some("created"),
            _shards: Some(Shards { total: 1, successful: 1, failed: 0 }),
            _seq_no: Some(seq_no),
            _primary_term: Some(1),
            status: 201,
            error: None,
        }
    }

    /// `require_alias` named an index (sluice has no aliases).
    fn not_an_alias(index: String, id: Option<String>) -> Self {
        let reason =
            format!("no such index [{index}] and [require_alias] request flag is [true] and [{index}] is not an alias");
        Self { status: 404, ..Self::failed(Some(index), id, "index_not_found_exception", reason) }
    }

    fn failed(index: Option<String>, id: Option<String>, kind: &'static str, reason: String) -> Self {
        Self {
            _index: index,
            _id: id,
            _version: None,
            result: None,
            _shards: None,
            _seq_no: None,
            _primary_term: None,
            status: 400,
            error: Some(ItemError { kind, reason }),
        }
    }
}

#[derive(Serialize)]
struct BulkResponse {
    took: u64,
    errors: bool,
    items: Vec<Item>,
}

/// One entry of `items`: the action name and its result.
type Item = BTreeMap<String, ItemResult>;

/// Turns a bulk body's actions into per-item results and the events to queue.
fn parse_bulk(
    s: &Shared,
    body: &[u8],
    default_index: Option<&str>,
    require_alias: bool,
    identity: Option<&Arc<Identity>>,
) -> Result<(Vec<Item>, Vec<Event>), es_bulk::Malformed> {
    let actions = es_bulk::parse(body)?;
    // An empty `_id` fails the request's validation, as in Elasticsearch:
    // the whole body is refused, one numbered error per such action.
    let empty_ids = actions.iter().filter(|a| a.id.as_deref() == Some("")).count();
    if empty_ids > 0 {
        let errors: String =
            (1..=empty_ids).map(|i| format!("{i}: if _id is specified it must not be empty;")).collect();
        return Err(es_bulk::Malformed {
            kind: "action_request_validation_exception",
            reason: format!("Validation Failed: {errors}"),
        });
    }
    let mut items = Vec::with_capacity(actions.len());
    let mut events = Vec::new();
    for action in actions {
        let index = action.index.clone().or_else(|| default_index.map(str::to_string));
        let item = match action.kind {
            // sluice has no aliases: an index named with `require_alias` is never one.
            Kind::Index | Kind::Create if action.require_alias.unwrap_or(require_alias) && index.is_some() => {
                ItemResult::not_an_alias(index.unwrap_or_default(), action.id)
            }
            Kind::Index | Kind::Create => {
                let doc = action.source.unwrap_or_default();
                document(s, doc, index, action.id, identity, &mut events)
            }
            Kind::Update | Kind::Delete => rejected(index, action.id, &action.name),
            Kind::Unknown => ItemResult::failed(
                index,
                action.id,
                "illegal_argument_exception",
                format!(
                    "Malformed action/metadata line [{}], expected one of [create, delete, index, update] but found [{}]",
                    action.line, action.name
                ),
            ),
        };
        if item.error.is_some() {
            s.counters.bulk_item_errors.inc();
        }
        items.push(BTreeMap::from([(action.name, item)]));
    }
    Ok((items, events))
}

fn rejected(index: Option<String>, id: Option<String>, action: &str) -> ItemResult {
    ItemResult::failed(
        index,
        id,
        "illegal_argument_exception",
        format!("the {action} action is not supported: sluice stores logs append-only (use index or create)"),
    )
}

/// One `index`/`create` document: an event, or a per-item error.
fn document(
    s: &Shared,
    doc: &[u8],
    index: Option<String>,
    id: Option<String>,
    identity: Option<&Arc<Identity>>,
    events: &mut Vec<Event>,
) -> ItemResult {
    let Some(index) = index else {
        return ItemResult::failed(
            None,
            id,
            "action_request_validation_exception",
            "Validation Failed: 1: index is missing;".into(),
        );
    };
    if doc.len() > s.max_line {
        s.counters.oversized.inc();
        s.cx.metrics.events_failed.inc();
        return ItemResult::failed(
            Some(index),
            id,
            "mapper_parsing_exception",
            format!("document is {} bytes, larger than max_line_bytes ({})", doc.len(), s.max_line),
        );
    }
    match event_from_json(doc) {
        Ok((mut event, bad_ts)) => {
            if bad_ts {
                event.add_tag("_timestampparsefailure");
            }
            let id = id.unwrap_or_else(|| s.ids.next());
            event.fields_mut().insert("_index", Value::from(index.as_str()));
            event.fields_mut().insert("_id", Value::from(id.as_str()));
            event.source = Arc::clone(&s.source);
            if let Some(id) = identity {
                event.identity = Arc::clone(id);
            }
            events.push(event);
            ItemResult::created(index, id, s.seq_no.fetch_add(1, Ordering::Relaxed))
        }
        Err(e) => {
            s.cx.metrics.events_failed.inc();
            ItemResult::failed(Some(index), id, "mapper_parsing_exception", format!("failed to parse: {e}"))
        }
    }
}

async fn bulk(
    s: &Shared,
    req: Request,
    default_index: Option<String>,
    identity: Option<Arc<Identity>>,
    started: Instant,
) -> Response {
    // `?require_alias` / `?require_alias=true`: for every action without its own.
    let require_alias =
        req.uri().query().is_some_and(|q| q.split('&').any(|kv| kv == "require_alias" || kv == "require_alias=true"));
    let body = match read_body(s, req).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    if es_bulk::blank(&body) {
        s.counters.bad_requests.inc();
        return es_error(StatusCode::BAD_REQUEST, "parse_exception", "request body is required");
    }
    let (items, events) = match parse_bulk(s, &body, default_index.as_deref(), require_alias, identity.as_ref()) {
        Ok(p) => p,
        Err(es_bulk::Malformed { kind, reason }) => {
            s.counters.bad_requests.inc();
            return es_error(StatusCode::BAD_REQUEST, kind, &reason);
        }
    };
    let n = events.len() as u64;
    if n > 0 {
        s.cx.metrics.events_in.add(n);
        if s.cx.out.send(events).await.is_err() {
            return queue_closed();
        }
        s.cx.metrics.events_out.add(n);
    }
    let errors = items.iter().any(|m| m.values().any(|r| r.error.is_some()));
    let took = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    respond(StatusCode::OK, sonic_rs::to_vec(&BulkResponse { took, errors, items }).unwrap_or_default())
}

// ---------------------------------------------------------------- ids

/// Document ids like Elasticsearch's: 20 URL-safe base64 characters from the
/// time, a per-process random salt and a counter — unique across restarts.
struct IdGenerator {
    salt: [u8; 3],
    counter: AtomicU64,
}

impl IdGenerator {
    fn new() -> Self {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(std::process::id().into());
        let r = h.finish().to_le_bytes();
        Self { salt: [r[0], r[1], r[2]], counter: AtomicU64::new(0) }
    }

    fn next(&self) -> String {
        const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut raw = [0u8; 15];
        raw[..8].copy_from_slice(&sluice_core::event::now_ns().to_be_bytes());
        raw[8..11].copy_from_slice(&self.salt);
        raw[11..].copy_from_slice(&(n as u32).to_be_bytes());
        let mut out = String::with_capacity(20);
        for chunk in raw.chunks(3) {
            let v = (u32::from(chunk[0]) << 16) | (u32::from(chunk[1]) << 8) | u32::from(chunk[2]);
            for shift in [18, 12, 6, 0] {
                out.push(char::from(ALPHABET[((v >> shift) & 63) as usize]));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{build_source, source_context, Capture};
    use sluice_core::component::{Closed, Output};
    use sluice_core::metrics::ComponentMetrics;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;
    use tokio_util::sync::CancellationToken;

    struct Server {
        addr: SocketAddr,
        cap: Arc<Capture>,
        metrics: Arc<ComponentMetrics>,
        shutdown: CancellationToken,
        task: tokio::task::JoinHandle<Result<(), BoxError>>,
    }

    impl Server {
        async fn start(extra: &str) -> Self {
            Self::start_with(extra, None).await
        }

        /// Starts the source on a free port; `out` replaces the capture as the queue.
        async fn start_with(extra: &str, out: Option<Arc<dyn Output>>) -> Self {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = probe.local_addr().unwrap();
            drop(probe);
            let src = build_source(&SPEC, &format!("address = \"{addr}\"\n{extra}\n{}", tokens_for(extra))).unwrap();
            let cap = Arc::new(Capture::default());
            let (mut cx, shutdown, metrics) = source_context(Arc::clone(&cap));
            if let Some(out) = out {
                cx.out = out;
            }
            let task = tokio::spawn(src.run(cx));
            for _ in 0..500 {
                if TcpStream::connect(addr).await.is_ok() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Self { addr, cap, metrics, shutdown, task }
        }

        async fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
            request(self.addr, method, path, headers, body).await
        }

        fn events(&self) -> Vec<Event> {
            self.cap.events.lock().clone()
        }

        fn counter(&self, name: &'static str) -> u64 {
            self.metrics.counter(name).get()
        }

        async fn stop(self) {
            self.shutdown.cancel();
            self.task.await.unwrap().unwrap();
        }
    }

    #[derive(Debug)]
    struct Reply {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    }

    impl Reply {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
        }
        fn json(&self) -> serde_json::Value {
            serde_json::from_slice(&self.body)
                .unwrap_or_else(|e| panic!("body is not json ({e}): {}", String::from_utf8_lossy(&self.body)))
        }
    }

    /// The ingest token every test server accepts (group `test`).
    const TOKEN: &str = "test-ingest-token-0123456789";

    /// The `tokens` table a test server gets, unless `extra` configures auth itself.
    fn tokens_for(extra: &str) -> String {
        if extra.contains("auth =") || extra.contains("[tokens") {
            String::new()
        } else {
            format!("[tokens.test]\ntoken = \"{TOKEN}\"\ngroup = \"test\"\n")
        }
    }

    /// A hand-written HTTP/1.1 request on a fresh connection (`Connection:
    /// close`), with `Authorization: Bearer TOKEN` unless `headers` names an
    /// `Authorization` (an empty one is left out).
    async fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")) {
            head.push_str(&format!("Authorization: Bearer {TOKEN}\r\n"));
        }
        for (k, v) in headers.iter().filter(|(_, v)| !v.is_empty()) {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(body).await.unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await.unwrap();
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("response has a header block");
        let head = String::from_utf8(raw[..split].to_vec()).unwrap();
        let mut lines = head.split("\r\n");
        let status: u16 = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let mut body = raw[split + 4..].to_vec();
        if headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked")) {
            let mut out = Vec::new();
            let mut rest = &body[..];
            loop {
                let nl = rest.windows(2).position(|w| w == b"\r\n").unwrap();
                let n = usize::from_str_radix(std::str::from_utf8(&rest[..nl]).unwrap().trim(), 16).unwrap();
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&rest[nl + 2..nl + 2 + n]);
                rest = &rest[nl + 2 + n + 2..];
            }
            body = out;
        }
        Reply { status, headers, body }
    }

    fn str_field<'a>(e: &'a Event, k: &str) -> Option<&'a str> {
        e.fields().get(&k).and_then(|v| v.as_str())
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    #[tokio::test]
    async fn ndjson_post_yields_exactly_one_event_per_line() {
        let srv = Server::start("").await;
        let mut body = String::new();
        for i in 0..100 {
            body.push_str(&format!("{{\"i\":{i},\"msg\":\"line {i}\"}}\r\n"));
        }
        body.push_str("\nnot json at all\n{\"i\":100}");
        let r = srv.request("POST", "/ndjson", &[("Content-Type", "application/x-ndjson")], body.as_bytes()).await;
        assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.json(), serde_json::json!({"accepted": 102, "failed": 1}));
        assert_eq!(r.header("x-elastic-product"), Some("Elasticsearch"));
        let events = srv.events();
        assert_eq!(events.len(), 102);
        for (i, e) in events[..100].iter().enumerate() {
            assert_eq!(e.fields().get(&"i").and_then(|v| v.as_i64()), Some(i as i64));
            assert_eq!(str_field(e, "msg"), Some(format!("line {i}").as_str()));
            assert!(e.source.starts_with("http:127.0.0.1:"), "{}", e.source);
            assert!(!e.has_tag("_jsonparsefailure"));
        }
        assert!(events[100].has_tag("_jsonparsefailure"));
        assert_eq!(events[100].message(), Some("not json at all"));
        assert_eq!(events[101].fields().get(&"i").and_then(|v| v.as_i64()), Some(100));
        assert_eq!(srv.metrics.events_failed.get(), 1);
        assert_eq!(srv.metrics.events_in.get(), 102);
        assert_eq!(srv.metrics.events_out.get(), 102);
        assert_eq!(srv.metrics.bytes_in.get(), body.len() as u64);
        // POST / is the same endpoint.
        let r = srv.request("POST", "/", &[], b"{\"i\":7}\n").await;
        assert_eq!(r.json(), serde_json::json!({"accepted": 1, "failed": 0}));
        assert_eq!(srv.events().len(), 103);
        srv.stop().await;
    }

    #[tokio::test]
    async fn lines_format_cuts_and_tags_oversized_lines() {
        let srv = Server::start("format = \"lines\"\nmax_line_bytes = 16\n").await;
        let long = "x".repeat(40);
        let body = format!("short one\n{long}\n{{\"not\":\"parsed\"}}");
        let r = srv.request("POST", "/", &[], body.as_bytes()).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json(), serde_json::json!({"accepted": 3, "failed": 1}));
        let events = srv.events();
        assert_eq!(events.len(), 3);
        assert_eq!(events[0].message(), Some("short one"));
        assert_eq!(events[1].message(), Some("x".repeat(16).as_str()));
        assert!(events[1].has_tag("_oversized"));
        assert_eq!(events[2].message(), Some("{\"not\":\"parsed\"}"));
        assert_eq!(srv.counter("oversized_frames"), 1);
        assert_eq!(srv.metrics.events_failed.get(), 0);
        srv.stop().await;
    }

    #[tokio::test]
    async fn oversized_body_is_413_and_nothing_is_queued() {
        let srv = Server::start("max_body_bytes = 1024\n").await;
        let line = "{\"pad\":\"0123456789012345678901234567890123456789\"}\n";
        let body = line.repeat(4096 / line.len() + 1);
        let r = srv.request("POST", "/ndjson", &[], body.as_bytes()).await;
        assert_eq!(r.status, 413);
        let v = r.json();
        assert_eq!(v["error"]["type"], "content_too_long_exception");
        assert_eq!(v["status"], 413);
        assert!(v["error"]["reason"].as_str().unwrap().contains("max_body_bytes (1024 bytes)"), "{v}");
        let r = srv.request("POST", "/_bulk", &[], body.as_bytes()).await;
        assert_eq!(r.status, 413);
        assert_eq!(srv.counter("body_too_large"), 2);
        // Exactly at the limit is accepted.
        let exact = format!("{}\n", "a".repeat(1023));
        let r = srv.request("POST", "/ndjson", &[], exact.as_bytes()).await;
        assert_eq!(r.status, 200);
        assert_eq!(srv.events().len(), 1);
        srv.stop().await;
    }

    #[tokio::test]
    async fn gzip_bodies_are_decoded_and_limited_after_decoding() {
        let srv = Server::start("max_body_bytes = 4096\n").await;
        let body: String = (0..50).map(|i| format!("{{\"i\":{i}}}\n")).collect();
        let r = srv.request("POST", "/ndjson", &[("Content-Encoding", "gzip")], &gzip(body.as_bytes())).await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.json()["accepted"], 50);
        // 100 KiB of zeros compresses far below the limit but decodes above it.
        let bomb = gzip(&vec![b'0'; 100 << 10]);
        assert!(bomb.len() < 4096);
        let r = srv.request("POST", "/ndjson", &[("Content-Encoding", "gzip")], &bomb).await;
        assert_eq!(r.status, 413);
        let r = srv.request("POST", "/ndjson", &[("Content-Encoding", "gzip")], b"not gzip").await;
        assert_eq!(r.status, 400);
        let r = srv.request("POST", "/ndjson", &[("Content-Encoding", "br")], b"x").await;
        assert_eq!(r.status, 415);
        assert_eq!(srv.events().len(), 50);
        assert_eq!(srv.counter("body_too_large"), 1);
        assert_eq!(srv.counter("bad_requests"), 2);
        srv.stop().await;
    }

    #[tokio::test]
    async fn bulk_reports_every_item_and_queues_only_good_documents() {
        let srv = Server::start("").await;
        let body = concat!(
            "{\"index\":{\"_index\":\"logs-a\",\"_id\":\"id-1\"}}\n",
            "{\"msg\":\"one\",\"@timestamp\":\"2024-01-02T03:04:05Z\"}\n",
            "{\"create\":{}}\n",
            "{\"msg\":\"two\"}\n",
            "{\"delete\":{\"_index\":\"logs-a\",\"_id\":\"gone\"}}\n",
            "{\"index\":{}}\n",
            "not json\n",
            "{\"update\":{\"_id\":\"u\"}}\n",
            "{\"doc\":{\"msg\":\"ignored\"}}\n",
            "{\"index\":{\"_id\":7}}\n",
            "[1,2]\n",
            "{\"frobnicate\":{}}\n",
            "{\"msg\":\"ignored too\"}\n",
            "{\"index\":{\"_index\":\"logs-c\"}}\n",
            "{\"msg\":\"three\",\"_index\":\"overwritten\"}\n",
        );
        let r =
            srv.request("POST", "/logs-b/_bulk", &[("Content-Type", "application/x-ndjson")], body.as_bytes()).await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.header("x-elastic-product"), Some("Elasticsearch"));
        assert_eq!(r.header("content-type"), Some("application/json"));
        let v = r.json();
        assert_eq!(v["errors"], true);
        assert!(v["took"].is_u64());
        let items = v["items"].as_array().unwrap();
        let shape: Vec<(String, u64)> = items
            .iter()
            .map(|it| {
                let (k, body) = it.as_object().unwrap().iter().next().unwrap();
                (k.clone(), body["status"].as_u64().unwrap())
            })
            .collect();
        let expected = [
            ("index", 201),
            ("create", 201),
            ("delete", 400),
            ("index", 400),
            ("update", 400),
            ("index", 400),
            ("frobnicate", 400),
            ("index", 201),
        ];
        assert_eq!(shape, expected.map(|(k, s)| (k.to_string(), s)).to_vec());
        assert_eq!(
            items[0]["index"],
            serde_json::json!({
                "_index": "logs-a", "_id": "id-1", "_version": 1, "result": "created", "status": 201,
                "_shards": {"total": 1, "successful": 1, "failed": 0}, "_seq_no": 0, "_primary_term": 1
            })
        );
        assert_eq!(items[1]["create"]["_index"], "logs-b");
        let id2 = items[1]["create"]["_id"].as_str().unwrap().to_string();
        assert_eq!(id2.len(), 20);
        assert_eq!(items[1]["create"]["_seq_no"], 1);
        assert_eq!(items[2]["delete"]["error"]["type"], "illegal_argument_exception");
        assert_eq!(items[2]["delete"]["_id"], "gone");
        assert_eq!(items[3]["index"]["error"]["type"], "mapper_parsing_exception");
        assert_eq!(items[3]["index"]["_index"], "logs-b");
        assert_eq!(items[4]["update"]["error"]["type"], "illegal_argument_exception");
        assert_eq!(items[5]["index"]["error"]["type"], "mapper_parsing_exception");
        assert!(items[5]["index"]["error"]["reason"].as_str().unwrap().contains("found array"));
        assert_eq!(items[5]["index"]["_id"], "7");
        let reason = items[6]["frobnicate"]["error"]["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("Malformed action/metadata line [12],") && reason.contains("[frobnicate]"),
            "{reason}"
        );
        assert_eq!(items[7]["index"]["_index"], "logs-c");
        let id8 = items[7]["index"]["_id"].as_str().unwrap().to_string();
        assert_ne!(id2, id8);

        let events = srv.events();
        assert_eq!(events.len(), 3);
        let got: Vec<(Option<&str>, Option<&str>, Option<&str>)> =
            events.iter().map(|e| (str_field(e, "msg"), str_field(e, "_index"), str_field(e, "_id"))).collect();
        assert_eq!(
            got,
            vec![
                (Some("one"), Some("logs-a"), Some("id-1")),
                (Some("two"), Some("logs-b"), Some(id2.as_str())),
                (Some("three"), Some("logs-c"), Some(id8.as_str())),
            ]
        );
        assert_eq!(events[0].timestamp, sluice_core::codec::parse_timestamp("2024-01-02T03:04:05Z").unwrap());
        assert_eq!(srv.metrics.events_failed.get(), 2);
        assert_eq!(srv.counter("bulk_item_errors"), 5);
        assert_eq!(srv.metrics.events_in.get(), 3);
        assert_eq!(srv.metrics.events_out.get(), 3);

        // A clean request reports errors: false; PUT works as POST; seq_no goes on.
        let r = srv.request("PUT", "/_bulk", &[], b"{\"create\":{\"_index\":\"x\"}}\n{\"a\":1}\n").await;
        let v = r.json();
        assert_eq!(v["errors"], false);
        assert_eq!(v["items"][0]["create"]["_seq_no"], 3);
        assert_eq!(srv.events().len(), 4);
        // No index anywhere: a per-item error, not a request error.
        let r = srv.request("POST", "/_bulk", &[], b"{\"index\":{}}\n{\"a\":1}\n").await;
        let v = r.json();
        assert_eq!(v["items"][0]["index"]["status"], 400);
        assert_eq!(v["items"][0]["index"]["error"]["type"], "action_request_validation_exception");
        assert_eq!(srv.events().len(), 4);
        srv.stop().await;
    }

    /// Issue #18 (compatibility): an empty `_id` was stored as `""` (201);
    /// `require_alias` was ignored. Elasticsearch refuses the first as a
    /// whole request and answers the second per item (sluice has no
    /// aliases, so every index named with it is "not an alias").
    #[tokio::test]
    async fn issue_18_bulk_refuses_an_empty_id_and_honours_require_alias() {
        let srv = Server::start("").await;
        let body = b"{\"index\":{\"_index\":\"a\",\"_id\":\"ok-1\"}}\n{\"n\":1}\n{\"create\":{\"_index\":\"a\",\"_id\":\"\"}}\n{\"n\":2}\n";
        let r = srv.request("POST", "/_bulk", &[], body).await;
        assert_eq!(r.status, 400);
        let v = r.json();
        assert_eq!(v["error"]["type"], "action_request_validation_exception", "{v}");
        assert_eq!(v["error"]["reason"], "Validation Failed: 1: if _id is specified it must not be empty;", "{v}");
        assert_eq!(srv.events().len(), 0, "nothing of a refused body is queued");
        assert_eq!(srv.counter("bad_requests"), 1);

        let body = concat!(
            "{\"index\":{\"_index\":\"logs-a\",\"require_alias\":true}}\n{\"n\":1}\n",
            "{\"index\":{\"_index\":\"logs-a\",\"require_alias\":false,\"_id\":\"k\"}}\n{\"n\":2}\n",
        );
        let v = srv.request("POST", "/_bulk", &[], body.as_bytes()).await.json();
        assert_eq!(v["errors"], true);
        assert_eq!(v["items"][0]["index"]["status"], 404, "{v}");
        assert_eq!(v["items"][0]["index"]["error"]["type"], "index_not_found_exception");
        assert_eq!(
            v["items"][0]["index"]["error"]["reason"],
            "no such index [logs-a] and [require_alias] request flag is [true] and [logs-a] is not an alias"
        );
        assert_eq!(v["items"][1]["index"]["status"], 201);
        assert_eq!(v["items"][1]["index"]["_id"], "k", "an explicit _id is kept");
        // The URL flag applies to every action without its own.
        let r = srv.request("POST", "/logs-b/_bulk?require_alias=true", &[], b"{\"create\":{}}\n{\"n\":3}\n").await;
        let v = r.json();
        assert_eq!(v["items"][0]["create"]["status"], 404, "{v}");
        let events = srv.events();
        assert_eq!(events.len(), 1);
        assert_eq!(str_field(&events[0], "_id"), Some("k"));
        srv.stop().await;
    }

    /// Issue #18 (compatibility): integers beyond 64 bits sent through
    /// `_bulk` keep every digit (as a string, ADR 0055), not a rounded float.
    #[tokio::test]
    async fn issue_18_bulk_keeps_the_digits_of_integers_beyond_64_bits() {
        let srv = Server::start("").await;
        let body = concat!(
            "{\"index\":{\"_index\":\"a\"}}\n",
            "{\"big\":123456789012345678901234567890,\"neg\":-9223372036854775809,\"small\":42}\n",
        );
        let v = srv.request("POST", "/_bulk", &[], body.as_bytes()).await.json();
        assert_eq!(v["errors"], false, "{v}");
        let events = srv.events();
        assert_eq!(events.len(), 1);
        assert_eq!(str_field(&events[0], "big"), Some("123456789012345678901234567890"));
        assert_eq!(str_field(&events[0], "neg"), Some("-9223372036854775809"));
        let json = sluice_core::codec::to_json_string(&events[0]);
        assert!(json.contains("\"small\":42"), "an integer within 64 bits stays a number: {json}");
        srv.stop().await;
    }

    #[tokio::test]
    async fn oversized_bulk_document_is_an_item_error() {
        let srv = Server::start("max_line_bytes = 32\n").await;
        let body = format!(
            "{{\"index\":{{\"_index\":\"a\"}}}}\n{{\"msg\":\"{}\"}}\n{{\"index\":{{\"_index\":\"a\"}}}}\n{{\"msg\":\"ok\"}}\n",
            "x".repeat(40)
        );
        let v = srv.request("POST", "/_bulk", &[], body.as_bytes()).await.json();
        assert_eq!(v["errors"], true);
        assert_eq!(v["items"][0]["index"]["status"], 400);
        assert!(v["items"][0]["index"]["error"]["reason"].as_str().unwrap().contains("max_line_bytes (32)"), "{v}");
        assert_eq!(v["items"][1]["index"]["status"], 201);
        let events = srv.events();
        assert_eq!(events.len(), 1);
        assert_eq!(str_field(&events[0], "msg"), Some("ok"));
        assert_eq!(srv.counter("oversized_frames"), 1);
        assert_eq!(srv.metrics.events_failed.get(), 1);
        srv.stop().await;
    }

    #[tokio::test]
    async fn malformed_bulk_bodies_are_rejected_whole() {
        let srv = Server::start("").await;
        let cases: [(&[u8], &str); 5] = [
            (b"", "parse_exception"),
            (b"\n\n", "parse_exception"),
            (b"{\"index\":{\"_index\":\"a\"}}\n{\"ok\":1}\nnot an action\n", "x_content_parse_exception"),
            (
                b"{\"index\":{\"_index\":\"a\"}}\n{\"ok\":1}\n{\"index\":{\"_index\":\"a\"}}\n",
                "illegal_argument_exception",
            ),
            (b"{\"index\":{},\"create\":{}}\n{\"ok\":1}\n", "illegal_argument_exception"),
        ];
        for (body, kind) in cases {
            let r = srv.request("POST", "/_bulk", &[], body).await;
            assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(body));
            let v = r.json();
            assert_eq!(v["error"]["type"], kind, "{v}");
            assert_eq!(v["error"]["root_cause"][0]["type"], kind, "{v}");
            assert_eq!(v["status"], 400);
        }
        let r = srv.request("POST", "/_bulk", &[], b"").await;
        assert_eq!(r.json()["error"]["reason"], "request body is required");
        assert_eq!(srv.counter("bad_requests"), 6);
        assert!(srv.events().is_empty());
        assert_eq!(srv.metrics.events_in.get(), 0);
        srv.stop().await;
    }

    /// Issue #18: `/ndjson` and `/_bulk` accepted unauthenticated posts. Every
    /// request needs an ingest token, in each form the shippers send it, and
    /// the token's identity is the events' — whatever the payload says.
    #[tokio::test]
    async fn issue_18_ingest_needs_a_token_and_the_token_sets_the_identity() {
        let tokens = "[tokens.acme]\ntoken = \"acme-ingest-token-000\"\ngroup = \"acme\"\nsubgroup = \"web\"\n\
                      [tokens.globex]\ntoken = \"globex-ingest-token-0\"\ngroup = \"globex\"\nhost = \"gw-1\"\n";
        let srv = Server::start(tokens).await;
        // base64("elastic:acme-ingest-token-000"), base64("elastic:wrong"),
        // base64("key-id:acme-ingest-token-000") (Filebeat's api_key: "key-id:acme-ingest-token-000")
        let ok = [
            ("Authorization", "Bearer acme-ingest-token-000"),
            ("Authorization", "ApiKey acme-ingest-token-000"),
            ("Authorization", "ApiKey a2V5LWlkOmFjbWUtaW5nZXN0LXRva2VuLTAwMA=="),
            ("Authorization", "Basic ZWxhc3RpYzphY21lLWluZ2VzdC10b2tlbi0wMDA="),
        ];
        let bad: [&[(&str, &str)]; 4] = [
            &[("Authorization", "")],
            &[("Authorization", "Bearer acme-ingest-token-00")],
            &[("Authorization", "Basic ZWxhc3RpYzp3cm9uZw==")],
            &[("Authorization", "Token acme-ingest-token-000")],
        ];
        for h in bad {
            let r = srv.request("GET", "/", h, b"").await;
            assert_eq!(r.status, 401, "{h:?}");
            assert_eq!(r.json()["error"]["type"], "security_exception");
            assert_eq!(r.header("x-elastic-product"), Some("Elasticsearch"));
            assert!(r.header("www-authenticate").is_some());
        }
        let none = [("Authorization", "")];
        let r = srv.request("POST", "/_bulk", &none, b"{\"index\":{\"_index\":\"a\"}}\n{\"a\":1}\n").await;
        assert_eq!(r.status, 401);
        let r = srv.request("POST", "/ndjson", &none, b"{\"a\":1}\n").await;
        assert_eq!(r.status, 401);
        assert_eq!(srv.counter("auth_failures"), 6);
        assert!(srv.events().is_empty());
        for h in ok {
            let r = srv.request("GET", "/", &[h], b"").await;
            assert_eq!(r.status, 200, "{h:?}");
        }
        // The payload's identity keys are not the sender's to choose.
        let r = srv
            .request("POST", "/_bulk", &[ok[2]], b"{\"index\":{\"_index\":\"a\"}}\n{\"a\":1,\"@group\":\"globex\"}\n")
            .await;
        assert_eq!(r.json()["items"][0]["index"]["status"], 201);
        let globex = [("Authorization", "Bearer globex-ingest-token-0")];
        let r = srv.request("POST", "/ndjson", &globex, b"{\"a\":2,\"@group\":\"acme\",\"@host\":\"x\"}\n").await;
        assert_eq!(r.status, 200);
        let got: Vec<(String, String, String)> = srv
            .events()
            .iter()
            .map(|e| (e.identity.group.clone(), e.identity.subgroup.clone(), e.identity.host.clone()))
            .collect();
        assert_eq!(
            got,
            vec![("acme".into(), "web".into(), String::new()), ("globex".into(), String::new(), "gw-1".into())]
        );
        assert!(srv.events().iter().all(|e| e.fields().get(&"@group").is_none()));
        assert_eq!(srv.counter("auth_failures"), 6);
        srv.stop().await;
    }

    /// Issue #18: a cross-site `text/plain` post was stored. Requests a web
    /// page can make are refused on the ingest routes, token or not.
    #[tokio::test]
    async fn issue_18_browser_simple_requests_are_refused_on_ingest_routes() {
        let srv = Server::start("").await;
        let bulk = b"{\"index\":{\"_index\":\"a\"}}\n{\"a\":1}\n";
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], u16);
        let refused: [Case; 6] = [
            ("/ndjson", &[("Content-Type", "text/plain")], 415),
            ("/_bulk", &[("Content-Type", "text/plain;charset=UTF-8")], 415),
            ("/ndjson", &[("Content-Type", "application/x-www-form-urlencoded")], 415),
            ("/logs/_bulk", &[("Content-Type", "multipart/form-data; boundary=x")], 415),
            ("/ndjson", &[("Content-Type", "application/json"), ("Origin", "https://evil.example")], 403),
            ("/_bulk", &[("Sec-Fetch-Site", "cross-site")], 403),
        ];
        for (path, h, status) in refused {
            let r = srv.request("POST", path, h, bulk).await;
            assert_eq!(r.status, status, "{path} {h:?}");
            assert_eq!(r.json()["error"]["type"], "security_exception");
        }
        assert_eq!(srv.counter("browser_requests_refused"), 6);
        assert!(srv.events().is_empty());
        // Shippers' content types, and no Origin, are served.
        for ct in ["application/x-ndjson", "application/json", ""] {
            let r = srv.request("POST", "/_bulk", &[("Content-Type", ct)], bulk).await;
            assert_eq!(r.status, 200, "{ct}");
        }
        assert_eq!(srv.events().len(), 3);
        // Not an ingest route: the handshake answers a browser as before.
        let r = srv.request("GET", "/", &[("Origin", "https://evil.example")], b"").await;
        assert_eq!(r.status, 200);
        assert_eq!(srv.counter("browser_requests_refused"), 6);
        srv.stop().await;
    }

    #[tokio::test]
    async fn auth_none_serves_without_tokens_but_still_refuses_browsers() {
        let srv = Server::start("auth = \"none\"\n").await;
        let r = srv.request("POST", "/ndjson", &[("Authorization", "")], b"{\"a\":1}\n").await;
        assert_eq!(r.status, 200);
        let r = srv.request("POST", "/ndjson", &[("Content-Type", "text/plain")], b"{\"a\":1}\n").await;
        assert_eq!(r.status, 415);
        assert_eq!(srv.events().len(), 1);
        assert!(srv.events()[0].identity.group.is_empty());
        srv.stop().await;
    }

    #[tokio::test]
    async fn handshake_endpoints_look_like_elasticsearch() {
        let srv = Server::start("").await;
        let r = srv.request("GET", "/", &[], b"").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("x-elastic-product"), Some("Elasticsearch"));
        let v = r.json();
        assert_eq!(v["version"]["number"], "8.11.0");
        assert_eq!(v["tagline"], "You Know, for Search");
        let r = srv.request("HEAD", "/", &[], b"").await;
        assert_eq!((r.status, r.header("x-elastic-product")), (200, Some("Elasticsearch")));
        assert_eq!(srv.request("GET", "/_license", &[], b"").await.json()["license"]["status"], "active");
        assert_eq!(srv.request("GET", "/_xpack", &[], b"").await.json()["license"]["type"], "basic");
        assert_eq!(srv.request("GET", "/_cluster/health", &[], b"").await.json()["status"], "green");
        let nodes = srv.request("GET", "/_nodes/http", &[], b"").await.json();
        assert_eq!(nodes["nodes"].as_object().unwrap().len(), 1);
        for path in ["/_index_template/logs", "/_ilm/policy/logs", "/_template/logs"] {
            let r = srv.request("GET", path, &[], b"").await;
            assert_eq!((r.status, r.header("x-elastic-product")), (404, Some("Elasticsearch")), "{path}");
            let r = srv.request("PUT", path, &[("Content-Type", "application/json")], b"{}").await;
            assert_eq!(r.status, 200, "{path}");
            assert_eq!(r.json(), serde_json::json!({"acknowledged": true}));
        }
        assert_eq!(srv.request("HEAD", "/logs-2024", &[], b"").await.status, 200);
        let r = srv.request("PUT", "/%3Clogs-%7Bnow%2Fd%7D-000001%3E", &[], b"{}").await;
        assert_eq!(r.json()["index"], "<logs-{now/d}-000001>");
        let r = srv.request("DELETE", "/logs-2024", &[], b"").await;
        assert_eq!(r.status, 400);
        assert_eq!(r.json()["error"]["type"], "illegal_argument_exception");
        assert!(srv.events().is_empty());
        srv.stop().await;
    }

    #[tokio::test]
    async fn bulk_false_serves_only_plain_ingest() {
        let srv = Server::start("bulk = false\n").await;
        let r = srv.request("POST", "/_bulk", &[], b"{\"index\":{\"_index\":\"a\"}}\n{\"a\":1}\n").await;
        assert_eq!(r.status, 404);
        assert_eq!(srv.request("GET", "/_license", &[], b"").await.status, 404);
        assert_eq!(srv.request("POST", "/ndjson", &[], b"{\"a\":1}\n").await.status, 200);
        assert_eq!(srv.events().len(), 1);
        srv.stop().await;
    }

    struct ClosedQueue;

    #[async_trait]
    impl Output for ClosedQueue {
        async fn send(&self, _events: Vec<Event>) -> Result<(), Closed> {
            Err(Closed)
        }
    }

    #[tokio::test]
    async fn closed_queue_answers_503() {
        let srv = Server::start_with("", Some(Arc::new(ClosedQueue))).await;
        let r = srv.request("POST", "/ndjson", &[], b"{\"a\":1}\n").await;
        assert_eq!(r.status, 503);
        assert_eq!(r.json()["status"], 503);
        let r = srv.request("POST", "/_bulk", &[], b"{\"index\":{\"_index\":\"a\"}}\n{\"a\":1}\n").await;
        assert_eq!(r.status, 503);
        assert_eq!(srv.metrics.events_out.get(), 0);
        srv.stop().await;
    }

    #[tokio::test]
    async fn address_api_mounts_on_the_api_listener_while_running() {
        let mounts = Arc::new(Mounts::new("127.0.0.1:8080"));
        let mut bcx = BuildContext::for_test("source", "http");
        bcx.path = "pipelines.main.sources.http".into();
        bcx.mounts = Arc::clone(&mounts);
        let src =
            (SPEC.build)(toml::from_str(&format!("address = \"api\"\n{}", tokens_for(""))).unwrap(), &bcx).unwrap();
        let cap = Arc::new(Capture::default());
        let (cx, shutdown, _metrics) = source_context(Arc::clone(&cap));
        let task = tokio::spawn(src.run(cx));
        while mounts.snapshot().1.is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (_, list) = mounts.snapshot();
        assert_eq!(list[0].owner, "pipelines.main.sources.http");
        assert_eq!(list[0].paths.len(), MOUNT_PATHS.len());
        // Serve the mounted router the way the API server does, on a port of its own.
        let router = list[0].router.downcast_ref::<Router>().unwrap().clone();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move { axum::serve(listener, router).await });
        let r = request(addr, "POST", "/ndjson", &[], b"{\"a\":1}\n{\"a\":2}\n").await;
        assert_eq!((r.status, r.json()["accepted"].as_u64()), (200, Some(2)));
        let r = request(addr, "POST", "/logs/_bulk", &[], b"{\"index\":{}}\n{\"a\":3}\n").await;
        assert_eq!((r.status, r.json()["errors"].as_bool()), (200, Some(false)));
        assert_eq!(cap.events.lock().len(), 3);
        let r = request(addr, "GET", "/_nodes/_local", &[], b"").await;
        assert_eq!(r.json()["nodes"]["sluice"]["http"]["publish_address"], "127.0.0.1:8080");
        shutdown.cancel();
        task.await.unwrap().unwrap();
        assert!(mounts.snapshot().1.is_empty(), "stopping the source unmounts it");
        server.abort();

        let off = Arc::new(Mounts::disabled());
        bcx.mounts = off;
        let e = (SPEC.build)(toml::from_str(&format!("address = \"api\"\n{}", tokens_for(""))).unwrap(), &bcx)
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "pipelines.main.sources.http.address: \"api\" needs the API server, but [api] address is empty"
        );
    }

    #[test]
    fn bad_config_names_the_key() {
        assert!(build_source(&SPEC, SPEC.example).is_ok());
        let e = build_source(&SPEC, "address = \"127.0.0.1:0\"\nmax_body_bytes = 0").err().unwrap();
        assert_eq!(e.to_string(), "test.http.max_body_bytes: must be greater than 0");
        let e = build_source(&SPEC, "address = \"nowhere\"").err().unwrap();
        assert!(e.to_string().starts_with("test.http.address: invalid socket address"), "{e}");
        let e = build_source(&SPEC, "address = \"127.0.0.1:0\"").err().unwrap();
        assert!(e.to_string().starts_with("test.http.tokens: at least one token is needed"), "{e}");
        let e = build_source(&SPEC, "address = \"127.0.0.1:0\"\n[tokens.a]\ntoken = \"short\"\ngroup = \"g\"")
            .err()
            .unwrap();
        assert_eq!(e.to_string(), "test.http.tokens.a.token: the token must be at least 16 characters");
        let e = build_source(
            &SPEC,
            "address = \"127.0.0.1:0\"\nauth = \"none\"\n[tokens.a]\ntoken = \"0123456789abcdef\"\ngroup = \"g\"",
        )
        .err()
        .unwrap();
        assert_eq!(e.to_string(), "test.http.tokens: auth = \"none\" takes no tokens");
        let e = build_source(&SPEC, "address = \"127.0.0.1:0\"\nformat = \"xml\"").err().unwrap();
        assert!(e.to_string().starts_with("test.http.format"), "{e}");
        let e = build_source(&SPEC, "address = \"127.0.0.1:0\"\npath = \"/x\"").err().unwrap();
        assert!(e.to_string().contains("unknown field `path`"), "{e}");
    }

    #[test]
    fn helpers() {
        assert_eq!(percent_decode("a%2Fb%zz%4"), "a/b%zz%4");
        let ids = IdGenerator::new();
        let a: Vec<String> = (0..1000).map(|_| ids.next()).collect();
        let set: std::collections::HashSet<&String> = a.iter().collect();
        assert_eq!(set.len(), 1000);
        assert!(a
            .iter()
            .all(|id| id.len() == 20 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')));
    }
}
