//! sluice-api: the node's HTTP API, on one listener (`[api] address`,
//! `127.0.0.1:8080` by default).
//!
//! - `GET|POST /api/v1/search`, `POST /api/v1/aggregate`, `GET /api/v1/fields`,
//!   `GET /api/v1/tail` (Server-Sent Events), `GET /api/v1/export` (CSV or
//!   ndjson downloads, [`export`]), `GET /api/v1/context` (the events around
//!   one, [`context`]): the search API over the node's
//!   [`SearchBackend`], for the principal of the caller's bearer token
//!   ([`auth`]); errors as in [`error`].
//! - with `[auth]` ([`ApiState::with_users`]): login with password and TOTP,
//!   sessions in cookies with CSRF protection, `/api/v1/me`, administration of
//!   users, groups, assignments, API tokens, LDAP settings, the audit log,
//!   dashboards and saved searches ([`session`], [`admin`], [`content`];
//!   `docs/specs/ui-api.md`). Every search then runs as the user's principal.
//! - `GET /api/v1/openapi.json`: an OpenAPI 3.1 description of all of it,
//!   generated from the handlers and types ([`openapi`], ADR 0104).
//! - `GET /_node/stats`: JSON shaped after Logstash's node stats API —
//!   process (RSS, CPU, threads, open files), per pipeline its events
//!   in/out/filtered with 1m/5m/15m rates, queue depth, batch latency
//!   percentiles and every component's counters, and under `search` the
//!   search backend's counters (`SearchBackend::counters`: the store's
//!   commits, result cache hits and misses…).
//! - `GET /metrics`: the same counters in Prometheus text format.
//!   Both need a credential when [`ApiState::metrics_auth`] is on (`[api]
//!   metrics_auth`, by default when the API listens beyond loopback).
//! - The web UI, embedded at build time ([`ui`]): its files, and
//!   `index.html` for browser navigations to client routes.
//! - Everything else goes to the routers components mounted ([`mounts`]):
//!   the `http` source with `address = "api"` serves `POST /_bulk`,
//!   `POST /ndjson` and the Elasticsearch handshake here.
//!
//! [`router`] builds the routes without binding, so tests call it directly.

pub mod admin;
pub mod auth;
pub mod backend_slot;
pub mod content;
pub mod context;
pub mod error;
pub mod export;
pub mod exposition;
pub mod mounts;
pub mod openapi;
pub mod params;
pub mod process;
pub mod search;
pub mod session;
pub mod ui;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde_json::{json, Value};
use sluice_core::metrics::Registry;
use sluice_core::mount::Mounts;
use sluice_query::SearchBackend;
use sluice_users::Users;

pub use auth::{AuthError, Authenticated, Authenticator, MetricsAccess, StaticTokens};
pub use backend_slot::BackendSlot;
pub use error::{ApiError, ErrorBody};
pub use exposition::prometheus_text;
pub use mounts::reserve_routes;
pub use session::UserAuth;

/// Every route of [`router`] (method, path), as documented in [`openapi_json`].
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/api/v1/search"),
    ("POST", "/api/v1/search"),
    ("POST", "/api/v1/aggregate"),
    ("GET", "/api/v1/fields"),
    ("GET", "/api/v1/tail"),
    ("GET", "/api/v1/export"),
    ("GET", "/api/v1/context"),
    ("GET", "/api/v1/openapi.json"),
    ("GET", "/_node/stats"),
    ("GET", "/metrics"),
    ("GET", "/api/v1/auth/config"),
    ("POST", "/api/v1/auth/login"),
    ("POST", "/api/v1/auth/totp"),
    ("POST", "/api/v1/auth/logout"),
    ("GET", "/api/v1/me"),
    ("POST", "/api/v1/me/password"),
    ("POST", "/api/v1/me/totp/enroll"),
    ("POST", "/api/v1/me/totp/confirm"),
    ("POST", "/api/v1/me/totp/recovery-codes"),
    ("DELETE", "/api/v1/me/totp"),
    ("GET", "/api/v1/users"),
    ("POST", "/api/v1/users"),
    ("GET", "/api/v1/users/{username}"),
    ("PATCH", "/api/v1/users/{username}"),
    ("DELETE", "/api/v1/users/{username}"),
    ("POST", "/api/v1/users/{username}/unlock"),
    ("DELETE", "/api/v1/users/{username}/totp"),
    ("GET", "/api/v1/groups"),
    ("POST", "/api/v1/groups"),
    ("GET", "/api/v1/groups/{name}"),
    ("PATCH", "/api/v1/groups/{name}"),
    ("DELETE", "/api/v1/groups/{name}"),
    ("PUT", "/api/v1/groups/{name}/members/{username}"),
    ("DELETE", "/api/v1/groups/{name}/members/{username}"),
    ("GET", "/api/v1/assignments"),
    ("POST", "/api/v1/assignments"),
    ("DELETE", "/api/v1/assignments/{id}"),
    ("GET", "/api/v1/tokens"),
    ("POST", "/api/v1/tokens"),
    ("DELETE", "/api/v1/tokens/{id}"),
    ("GET", "/api/v1/audit"),
    ("GET", "/api/v1/dashboards"),
    ("POST", "/api/v1/dashboards"),
    ("GET", "/api/v1/dashboards/{id}"),
    ("PUT", "/api/v1/dashboards/{id}"),
    ("DELETE", "/api/v1/dashboards/{id}"),
    ("POST", "/api/v1/dashboards/{id}/data"),
    ("GET", "/api/v1/saved-searches"),
    ("POST", "/api/v1/saved-searches"),
    ("GET", "/api/v1/saved-searches/{id}"),
    ("PUT", "/api/v1/saved-searches/{id}"),
    ("DELETE", "/api/v1/saved-searches/{id}"),
    ("GET", "/api/v1/settings/auth"),
    ("GET", "/api/v1/settings/ldap"),
    ("PUT", "/api/v1/settings/ldap"),
    ("DELETE", "/api/v1/settings/ldap"),
    ("POST", "/api/v1/settings/ldap/test"),
    ("GET", "/api/v1/node/stats"),
];

/// The OpenAPI 3.1 document served at `/api/v1/openapi.json`, generated
/// from the handlers and types ([`openapi`]).
pub fn openapi_json() -> &'static str {
    openapi::json()
}

/// What the handlers read.
#[derive(Clone)]
pub struct ApiState {
    /// The node's counters.
    pub registry: Arc<Registry>,
    /// Node name.
    pub name: String,
    /// Process start.
    pub started: Instant,
    /// The search store, replaceable by a reload; empty answers `503 no_store`.
    pub backend: BackendSlot,
    /// Turns request headers into a principal.
    pub auth: Arc<dyn Authenticator>,
    /// Routes components mounted on this listener.
    pub mounts: Arc<Mounts>,
    /// User accounts (`[auth]`); `None`: the user endpoints answer `404`.
    pub users: Option<Arc<Users>>,
    /// The user authenticator (sessions, user tokens, static tokens).
    pub user_auth: Option<Arc<UserAuth>>,
    /// The API listener's connection counters (`sluice_api_*` in `/metrics`).
    pub listener: sluice_net::ListenerCounters,
    /// Connections the API listener closed for a timeout.
    pub timeouts: Arc<sluice_core::metrics::Counter>,
    /// TLS handshakes on the API listener that failed or timed out (`[api] tls`).
    pub tls_handshake_errors: Arc<sluice_core::metrics::Counter>,
    /// Whether `/_node/stats` and `/metrics` need a credential
    /// ([`auth::MetricsAccess`]); off in [`ApiState::new`], set by the node
    /// from `[api] metrics_auth`.
    pub metrics_auth: bool,
    mounted: Arc<mounts::MountCache>,
}

impl ApiState {
    /// A state with no backend, no tokens (search answers `401`) and no mounts.
    pub fn new(registry: Arc<Registry>, name: impl Into<String>) -> Self {
        Self {
            registry,
            name: name.into(),
            started: Instant::now(),
            backend: BackendSlot::default(),
            auth: Arc::new(StaticTokens::none()),
            mounts: Arc::new(Mounts::disabled()),
            users: None,
            user_auth: None,
            listener: sluice_net::ListenerCounters::default(),
            timeouts: Arc::default(),
            tls_handshake_errors: Arc::default(),
            metrics_auth: false,
            mounted: Arc::default(),
        }
    }

    /// With user accounts: sessions, user tokens and then `statics`
    /// authenticate every request (this replaces [`Self::with_auth`]).
    pub fn with_users(mut self, users: Arc<Users>, statics: Arc<StaticTokens>) -> Self {
        let auth = Arc::new(UserAuth::new(Arc::clone(&users), statics));
        self.auth = Arc::clone(&auth) as Arc<dyn Authenticator>;
        self.user_auth = Some(auth);
        self.users = Some(users);
        self
    }

    /// With a search backend.
    pub fn with_backend(self, backend: Arc<dyn SearchBackend>) -> Self {
        self.backend.set(Some(backend));
        self
    }

    /// With `slot` as the backend: whoever keeps a clone of it (the node,
    /// on reload) can replace the backend later.
    pub fn with_backend_slot(mut self, slot: BackendSlot) -> Self {
        self.backend = slot;
        self
    }

    /// With an authenticator.
    pub fn with_auth(mut self, auth: Arc<dyn Authenticator>) -> Self {
        self.auth = auth;
        self
    }

    /// Whether `/_node/stats` and `/metrics` need a credential (`[api]
    /// metrics_auth`, ADR 0070).
    pub fn with_metrics_auth(mut self, token: bool) -> Self {
        self.metrics_auth = token;
        self
    }

    /// With the node's mount registry.
    pub fn with_mounts(mut self, mounts: Arc<Mounts>) -> Self {
        self.mounts = mounts;
        self
    }
}

/// The API's routes.
pub fn router(state: ApiState) -> Router {
    Router::new()
        .route("/api/v1/search", get(search::search_get).post(search::search_post))
        .route("/api/v1/aggregate", post(search::aggregate))
        .route("/api/v1/fields", get(search::fields))
        .route("/api/v1/tail", get(search::tail))
        .route("/api/v1/export", get(export::export))
        .route("/api/v1/context", get(context::context))
        .route("/api/v1/openapi.json", get(openapi))
        .route("/_node/stats", get(node_stats))
        .route("/metrics", get(prometheus))
        .route("/api/v1/auth/config", get(session::auth_config))
        .route("/api/v1/auth/login", post(session::login))
        .route("/api/v1/auth/totp", post(session::login_totp))
        .route("/api/v1/auth/logout", post(session::logout))
        .route("/api/v1/me", get(session::me))
        .route("/api/v1/me/password", post(session::change_password))
        .route("/api/v1/me/totp/enroll", post(session::totp_enroll))
        .route("/api/v1/me/totp/confirm", post(session::totp_confirm))
        .route("/api/v1/me/totp/recovery-codes", post(session::recovery_codes))
        .route("/api/v1/me/totp", axum::routing::delete(session::totp_disable))
        .route("/api/v1/users", get(admin::list_users).post(admin::create_user))
        .route("/api/v1/users/{username}", get(admin::get_user).patch(admin::update_user).delete(admin::delete_user))
        .route("/api/v1/users/{username}/unlock", post(admin::unlock_user))
        .route("/api/v1/users/{username}/totp", axum::routing::delete(admin::reset_totp))
        .route("/api/v1/groups", get(admin::list_groups).post(admin::create_group))
        .route("/api/v1/groups/{name}", get(admin::get_group).patch(admin::update_group).delete(admin::delete_group))
        .route("/api/v1/groups/{name}/members/{username}", put(admin::add_member).delete(admin::remove_member))
        .route("/api/v1/assignments", get(admin::list_assignments).post(admin::create_assignment))
        .route("/api/v1/assignments/{id}", axum::routing::delete(admin::delete_assignment))
        .route("/api/v1/tokens", get(admin::list_tokens).post(admin::create_token))
        .route("/api/v1/tokens/{id}", axum::routing::delete(admin::revoke_token))
        .route("/api/v1/audit", get(admin::audit))
        .route("/api/v1/dashboards", get(content::list_dashboards).post(content::create_dashboard))
        .route(
            "/api/v1/dashboards/{id}",
            get(content::get_dashboard).put(content::update_dashboard).delete(content::delete_dashboard),
        )
        .route("/api/v1/dashboards/{id}/data", post(content::dashboard_data))
        .route("/api/v1/saved-searches", get(content::list_saved).post(content::create_saved))
        .route(
            "/api/v1/saved-searches/{id}",
            get(content::get_saved).put(content::update_saved).delete(content::delete_saved),
        )
        .route("/api/v1/settings/auth", get(admin::auth_settings))
        .route("/api/v1/settings/ldap", get(admin::get_ldap).put(admin::put_ldap).delete(admin::delete_ldap))
        .route("/api/v1/settings/ldap/test", post(admin::test_ldap))
        .route("/api/v1/node/stats", get(admin::node_stats))
        .fallback(mounts::dispatch)
        .with_state(state)
}

/// Serves the API on `listener` (its `max_connections`, back-off and
/// counters: [`ApiState::listener`]) with `timeouts` until the future is
/// dropped; over TLS with `tls` (`[api] tls`). Handlers see the peer address
/// as `ConnectInfo<SocketAddr>`: it keys the login rate limit and goes into
/// audit records.
pub async fn serve(
    listener: sluice_net::Listener,
    state: ApiState,
    timeouts: sluice_net::HttpTimeouts,
    tls: Option<sluice_net::http::TlsAcceptor>,
) {
    let counter = Arc::clone(&state.timeouts);
    let tls = tls.map(|a| sluice_net::http::HttpTls::new(a, Arc::clone(&state.tls_handshake_errors)));
    let never = tokio_util::sync::CancellationToken::new();
    let proto = sluice_net::http::Proto::Http1;
    sluice_net::http::serve_secure(listener, router(state), timeouts, counter, never, proto, tls).await
}

/// This document (generated from the code, ADR 0104).
#[utoipa::path(
    get,
    path = "/api/v1/openapi.json",
    operation_id = "openapi",
    tag = "node",
    responses((status = 200, description = "This document", body = Object))
)]
async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], openapi::json())
}

/// Node statistics (shaped after Logstash's node stats API).
#[utoipa::path(
    get,
    path = "/_node/stats",
    operation_id = "nodeStats",
    tag = "node",
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "Logstash-like node statistics", body = Object)
    )
)]
async fn node_stats(_: MetricsAccess, State(s): State<ApiState>) -> Json<Value> {
    Json(stats_json(&s))
}

/// The `/_node/stats` document.
pub fn stats_json(s: &ApiState) -> Value {
    let p = process::sample();
    let comps = s.registry.components();
    let mut pipelines = serde_json::Map::new();
    for pm in s.registry.pipelines() {
        let r = pm.rates();
        let (n, p50, p90, p99, max) = pm.batch_latency.summary();
        let mut plugins = json!({"sources": [], "filters": [], "sinks": []});
        for (pname, c) in comps.iter().filter(|(p, _)| *p == pm.name) {
            let _ = pname;
            let cr = c.rates();
            let extra: serde_json::Map<String, Value> =
                c.extra().into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
            let mut gauges: serde_json::Map<String, Value> = c
                .labelled()
                .into_iter()
                .map(|(k, series)| {
                    let arr: Vec<Value> = series
                        .into_iter()
                        .map(|s| {
                            let labels: serde_json::Map<String, Value> =
                                s.labels.into_iter().map(|(l, v)| (l.to_string(), json!(v))).collect();
                            json!({"labels": labels, "value": s.value})
                        })
                        .collect();
                    (k.to_string(), Value::Array(arr))
                })
                .collect();
            gauges.extend(c.gauges().into_iter().map(|(k, v)| (k.to_string(), json!(v))));
            let entry = json!({
                "id": c.id, "type": c.type_name,
                "events": {"in": c.events_in.get(), "out": c.events_out.get(), "failed": c.events_failed.get(), "dropped": c.events_dropped.get()},
                "bytes": {"in": c.bytes_in.get(), "out": c.bytes_out.get()},
                "errors": c.errors.get(),
                "rates": {"1m": cr.m1, "5m": cr.m5, "15m": cr.m15},
                "counters": extra,
                "gauges": gauges,
            });
            let key = match c.kind {
                "source" => "sources",
                "filter" => "filters",
                _ => "sinks",
            };
            if let Some(arr) = plugins.get_mut(key).and_then(Value::as_array_mut) {
                arr.push(entry);
            }
        }
        pipelines.insert(
            pm.name.clone(),
            json!({
                "events": {"in": pm.events_in.get(), "out": pm.events_out.get(), "filtered": pm.events_filtered.get()},
                "rates": {"1m": r.m1, "5m": r.m5, "15m": r.m15},
                "queue": {"type": pm.queue_type, "events": pm.queue_events.get(), "bytes": pm.queue_bytes.get()},
                "batch_latency_us": {"count": n, "p50": p50, "p90": p90, "p99": p99, "max": max},
                "plugins": plugins,
            }),
        );
    }
    // The search backend's own counters (the store's commits, result cache
    // hits and misses…), under their Prometheus names.
    let search: serde_json::Map<String, Value> =
        backend_counters(s).into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    json!({
        "name": s.name,
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_ms": s.started.elapsed().as_millis() as u64,
        "process": {
            "rss_bytes": p.rss_bytes, "cpu_seconds": p.cpu_seconds, "threads": p.threads, "open_files": p.open_files,
        },
        "api": {
            "connections": s.listener.connections.get(), "refused_connections": s.listener.refused.get(),
            "accept_errors": s.listener.accept_errors.get(), "timeouts": s.timeouts.get(),
            "open_connections": s.listener.open.get(),
        },
        "pipelines": pipelines,
        "search": search,
    })
}

fn backend_counters(s: &ApiState) -> Vec<(&'static str, u64)> {
    s.backend.get().map(|b| b.counters()).unwrap_or_default()
}

/// The node's counters in Prometheus text format.
///
/// Needs a credential when `[api] metrics_auth` is on.
#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "metrics",
    tag = "node",
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "Prometheus text format 0.0.4", body = String, content_type = "text/plain")
    )
)]
async fn prometheus(_: MetricsAccess, State(s): State<ApiState>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], prometheus_text(&s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use sluice_core::metrics::{ComponentMetrics, PipelineMetrics};
    use tower::ServiceExt;

    fn state() -> ApiState {
        let registry = Arc::new(Registry::default());
        let pm = registry.pipeline(PipelineMetrics::new("main", "memory"));
        pm.events_in.add(10);
        pm.events_out.add(7);
        let c = registry.component("main", ComponentMetrics::new("source", "in", "tcp"));
        c.events_in.add(10);
        c.counter("oversized_frames").add(2);
        c.replace_labelled(
            "consumer_lag",
            vec![sluice_core::metrics::LabelledValue {
                labels: vec![("topic", "logs".into()), ("partition", "3".into())],
                value: 42,
            }],
        );
        ApiState::new(registry, "n1")
    }

    #[tokio::test]
    async fn node_stats_shape() {
        let resp = router(state()).oneshot(Request::get("/_node/stats").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(resp.status(), 200);
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["pipelines"]["main"]["events"]["in"], 10);
        assert_eq!(v["pipelines"]["main"]["events"]["out"], 7);
        assert_eq!(v["pipelines"]["main"]["plugins"]["sources"][0]["counters"]["oversized_frames"], 2);
        assert!(v["process"]["rss_bytes"].as_u64().unwrap() > 0);
        let lag = &v["pipelines"]["main"]["plugins"]["sources"][0]["gauges"]["consumer_lag"][0];
        assert_eq!(lag["labels"]["topic"], "logs");
        assert_eq!(lag["labels"]["partition"], "3");
        assert_eq!(lag["value"], 42);
    }

    /// Issue 22 item 5: with `metrics_auth = "token"` the node's counters
    /// need a credential like the rest of the API; without, they are open.
    #[tokio::test]
    async fn metrics_auth_token_requires_a_credential() {
        let tokens =
            Arc::new(StaticTokens::new([("scraper".to_string(), "scraper-token-0123456789".to_string(), Vec::new())]));
        let secured = state().with_auth(tokens).with_metrics_auth(true);
        for path in ["/_node/stats", "/metrics"] {
            let resp = router(secured.clone()).oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
            assert_eq!(resp.status(), 401, "{path} without a token");
            let body = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
            let v: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(v["error"]["type"], "unauthorized", "{path}: {v}");
            let wrong = Request::get(path).header("Authorization", "Bearer wrong-token").body(Body::empty()).unwrap();
            assert_eq!(
                router(secured.clone()).oneshot(wrong).await.unwrap().status(),
                401,
                "{path} with a wrong token"
            );
            let ok = Request::get(path)
                .header("Authorization", "Bearer scraper-token-0123456789")
                .body(Body::empty())
                .unwrap();
            let resp = router(secured.clone()).oneshot(ok).await.unwrap();
            assert_eq!(resp.status(), 200, "{path} with the token");
            let body = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
            assert!(String::from_utf8_lossy(&body).contains("events"), "{path}");
            // Open (`metrics_auth = "none"`): no credential needed.
            let open = state().with_metrics_auth(false);
            let resp = router(open).oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
            assert_eq!(resp.status(), 200, "{path} open");
        }
    }

    #[tokio::test]
    async fn prometheus_text_has_series() {
        let t = prometheus_text(&state());
        assert!(t.contains("sluice_pipeline_events_in_total{pipeline=\"main\"} 10"), "{t}");
        assert!(t.contains("# HELP sluice_pipeline_events_in_total "), "{t}");
        assert!(t.contains("# TYPE sluice_pipeline_events_in_total counter\n"), "{t}");
        assert!(
            t.contains("sluice_component_oversized_frames_total{pipeline=\"main\",kind=\"source\",component=\"in\",type=\"tcp\"} 2"),
            "{t}"
        );
        assert!(
            t.contains("sluice_component_consumer_lag{pipeline=\"main\",kind=\"source\",component=\"in\",type=\"tcp\",topic=\"logs\",partition=\"3\"} 42"),
            "{t}"
        );
        assert!(t.contains("# TYPE sluice_pipeline_batch_latency_seconds histogram\n"), "{t}");
        assert!(t.contains("sluice_pipeline_batch_latency_seconds_bucket{pipeline=\"main\",le=\"+Inf\"} "), "{t}");
        assert!(!t.contains("sluice_component_counter_total"), "{t}");
    }
}
