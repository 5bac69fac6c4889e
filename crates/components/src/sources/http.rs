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
//! A `create` with an explicit `_id` this source already stored (within
//! `created_ids_ttl`, 24 h, and the newest `created_ids_max`, 1,000,000
//! pairs) answers that item `409 version_conflict_engine_exception` and is
//! not stored again, so a retried request does not double events
//! (`http/created_ids.rs`; `bulk_conflicts`). `?refresh=true` /
//! `?refresh=wait_for` answers only once every sink of the pipeline
//! acknowledged the events — for the embedded store, once they are
//! committed and searchable — or after `refresh_timeout` (30 s;
//! `refresh_waits_failed` counts waits that timed out or whose sink gave
//! up: the events stay queued, the answer is the same). `refresh=false`
//! is the default; another value is a `400`.
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
//! [`sluice_net::http`]). With `tls = { cert, key }` (and `client_ca` to
//! require client certificates) the own port speaks HTTPS only; a failed
//! handshake is counted in `tls_handshake_errors`. Mounted on the API
//! listener, `[api]`'s limits and `[api] tls` apply and these keys are
//! refused.
//!
//! **Authentication** (`crate::ingest_auth`): every request needs one of the source's
//! ingest `tokens` — `Authorization: Bearer <token>`, `ApiKey <token>` or
//! `ApiKey base64(<id>:<token>)` (Filebeat's and Logstash's `api_key`), or
//! Basic with the token as password (any user name) — else `401`
//! (`auth_failures`); its events get the token's `group` / `subgroup` /
//! `host`. Requests a web page could make (form and `text/plain` bodies, a
//! foreign `Origin`) are refused on the ingest routes with `415` / `403`
//! (`browser_requests_refused`). `auth = "none"` drops the token check (only
//! behind a proxy that authenticates). Identity keys on the source's own
//! table override every event's identity, tokens' included.

mod body;
mod bulk;
mod created_ids;
mod handshake;
mod ndjson;
mod respond;

use std::collections::BTreeMap;
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
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration, Positive};
use sluice_core::metrics::Counter;
use sluice_core::mount::Mounts;
use sluice_core::{Event, Identity, Value};
use sluice_parsers::es_bulk::{self, Kind};

/// Response documents (built with `sonic_rs::json!`).
type Doc = sonic_rs::Value;
use sluice_net::{HttpTimeouts, Listener, ListenerCounters};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use self::body::read_body;
use self::bulk::{bulk, IdGenerator};
use self::created_ids::CreatedIds;
use self::handshake::{health, info, license, nodes, xpack};
use self::ndjson::ingest_lines;
use self::respond::{acknowledged, es_error, json, not_found, queue_closed, respond};
use crate::ingest_auth::{self as auth, AuthMode, IngestToken};
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
    #[serde(default = "crate::defaults::mib::<10>")]
    max_body_bytes: Positive<ByteSize>,
    /// Longest accepted line (ndjson) or bulk source line.
    #[serde(default = "crate::defaults::mib::<1>")]
    max_line_bytes: Positive<ByteSize>,
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
    max_connections: Option<Positive<usize>>,
    /// Own port only: longest time from a request's first byte to the end of its header.
    #[serde(default)]
    header_timeout: Option<Positive<HumanDuration>>,
    /// Own port only: longest time to receive a request's whole body.
    #[serde(default)]
    body_timeout: Option<Positive<HumanDuration>>,
    /// Own port only: a connection with no request in progress is closed after this long.
    #[serde(default)]
    idle_timeout: Option<Positive<HumanDuration>>,
    /// Own port only: HTTPS, `{ cert, key }`, with `client_ca` for client certificates.
    #[serde(default)]
    tls: Option<crate::tls::ListenTls>,
    /// `_bulk` `create` ids remembered for 409 answers: at most this many pairs.
    #[serde(default = "crate::defaults::count::<1_000_000>")]
    created_ids_max: Positive<usize>,
    /// ... and for this long.
    #[serde(default = "default_created_ids_ttl")]
    created_ids_ttl: Positive<HumanDuration>,
    /// Longest wait of a `refresh=wait_for` request for the sinks.
    #[serde(default = "crate::defaults::secs::<30>")]
    refresh_timeout: Positive<HumanDuration>,
}

fn default_created_ids_ttl() -> Positive<HumanDuration> {
    Positive::duration(Duration::from_secs(24 * 3600))
}

/// Default `max_connections` of the source's own port.
const DEFAULT_MAX_CONNECTIONS: usize = 4096;

fn default_format() -> LineFormat {
    LineFormat::Ndjson
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
    Bind { address: SocketAddr, timeouts: HttpTimeouts, max_connections: usize, tls: Option<TlsAcceptor> },
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
        ("tls", c.tls.is_some()),
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
        let timeouts = crate::http_listen::timeouts(c.header_timeout, c.body_timeout, c.idle_timeout);
        let max_connections = c.max_connections.map_or(DEFAULT_MAX_CONNECTIONS, Positive::get);
        let tls = c.tls.as_ref().map(|t| crate::http_listen::acceptor(t, cx)).transpose()?;
        Listen::Bind { address, timeouts, max_connections, tls }
    };
    let tokens = auth::resolve(c.auth, &c.tokens, cx)?;
    // Opened at start (`sluice validate` writes nothing).
    let created_ids_path =
        (!cx.dry_run).then(|| cx.data_dir.join("http_created_ids").join(&cx.pipeline).join(format!("{}.ids", cx.id)));
    Ok(Box::new(Http {
        created_ids_path,
        created_ids_max: c.created_ids_max.get(),
        created_ids_ttl: c.created_ids_ttl.0,
        refresh_timeout: c.refresh_timeout.0,
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
    created_ids_path: Option<std::path::PathBuf>,
    created_ids_max: usize,
    created_ids_ttl: Duration,
    refresh_timeout: Duration,
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
    bulk_conflicts: Arc<Counter>,
    refresh_waits_failed: Arc<Counter>,
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
    created: CreatedIds,
    refresh_timeout: Duration,
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
            bulk_conflicts: m.counter("bulk_conflicts"),
            refresh_waits_failed: m.counter("refresh_waits_failed"),
        };
        let created = CreatedIds::open(
            self.created_ids_path.clone(),
            self.created_ids_max,
            self.created_ids_ttl,
            created_ids::now_ns(),
            m.counter("created_ids_evicted"),
        )
        .map_err(|e| {
            let at = self.created_ids_path.as_deref().map(|p| p.display().to_string()).unwrap_or_default();
            format!("bulk ids ledger {at}: {e}")
        })?;
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
            created,
            refresh_timeout: self.refresh_timeout,
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
        let Listen::Bind { timeouts, tls, .. } = self.listen else { return Ok(()) };
        let app = Router::new().fallback(handle).with_state(shared);
        let tls = crate::http_listen::http_tls(tls, &cx);
        crate::http_listen::serve_app(listener, app, timeouts, tls, "http", &cx).await;
        Ok(())
    }
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

// ---------------------------------------------------------------- paths

/// A path segment with its `%XX` escapes decoded (invalid ones kept as
/// written, invalid UTF-8 replaced).
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests;
