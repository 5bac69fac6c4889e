//! HTTP-level tests of the API router (`tower::oneshot`, no socket) with a
//! small in-test [`SearchBackend`] over a list of events. The double honours
//! the principal like a real store must; it ignores the query (only the
//! empty query parses until the real parser lands). End-to-end tests over
//! the real store come with it.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use axum::body::{Body, HttpBody};
use axum::http::{Request, StatusCode};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use sluice_api::{openapi_json, router, ApiState, StaticTokens, ROUTES};
use sluice_core::metrics::Registry;
use sluice_core::mount::{MountError, Mounts};
use sluice_core::Identity;
use sluice_query::api::{Aggregate, Search};
use sluice_query::{
    AggregateResponse, AggregationResult, BackendError, FieldInfo, FieldType, Hit, Order, Principal, Query,
    SearchBackend, SearchResponse, SourcePattern, Stats, TailStream,
};
use tower::ServiceExt as _;

const ADMIN: &str = "admin-token-0123456789";
const ACME: &str = "acme-token-0123456789";

/// A store over a fixed list of events, newest first.
struct Events {
    events: Vec<(Identity, Hit)>,
    /// The sender side of the last tail, to see when the client went away.
    tail: Mutex<Option<tokio::sync::mpsc::Sender<Hit>>>,
    /// The order of the last search.
    order: Mutex<Option<Order>>,
    /// The field sort of the last search.
    sort: Mutex<Option<sluice_query::SortBy>>,
}

impl Events {
    fn new() -> Self {
        let ev = |id: &str, group: &str, host: &str, msg: &str| {
            (
                Identity::new(group, "web", host),
                Hit {
                    id: id.into(),
                    event: json!({"@group": group, "@subgroup": "web", "@host": host, "message": msg}),
                    error: None,
                },
            )
        };
        Self {
            events: vec![
                ev("e3", "acme", "h1", "third"),
                ev("e2", "globex", "h9", "second"),
                ev("e1", "acme", "h2", "first"),
            ],
            tail: Mutex::new(None),
            order: Mutex::new(None),
            sort: Mutex::new(None),
        }
    }

    fn visible(&self, p: &Principal) -> Vec<Hit> {
        self.events.iter().filter(|(id, _)| p.may_read(id)).map(|(_, h)| h.clone()).collect()
    }
}

#[async_trait]
impl SearchBackend for Events {
    async fn search(&self, p: &Principal, s: &Search) -> Result<SearchResponse, BackendError> {
        match s.search_after.as_deref() {
            Some("bad") => return Err(BackendError::BadRequest("invalid cursor \"bad\"".into())),
            Some("boom") => return Err(BackendError::Internal("disk on fire".into())),
            _ => {}
        }
        assert_eq!(s.query, Query::All);
        *self.order.lock().unwrap() = Some(s.order);
        *self.sort.lock().unwrap() = s.sort.clone();
        let all = self.visible(p);
        let hits = all.iter().take(s.size).cloned().collect();
        Ok(SearchResponse { total: all.len() as u64, hits, next: None, took_ms: 1 })
    }

    async fn aggregate(&self, p: &Principal, a: &Aggregate) -> Result<AggregateResponse, BackendError> {
        let n = self.visible(p).len() as u64;
        let aggs = a
            .aggs
            .keys()
            .map(|k| {
                (k.clone(), AggregationResult::Stats(Stats { count: n, min: None, max: None, avg: None, sum: 0.0 }))
            })
            .collect();
        Ok(AggregateResponse { total: n, aggs, took_ms: 2 })
    }

    async fn fields(&self, _p: &Principal, _r: &sluice_query::TimeRange) -> Result<Vec<FieldInfo>, BackendError> {
        Ok(vec![FieldInfo { name: "message".into(), types: vec![FieldType::Text] }])
    }

    async fn tail(&self, p: &Principal, _q: &Query) -> Result<TailStream, BackendError> {
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        for h in self.visible(p).into_iter().rev() {
            tx.send(h).await.map_err(|e| BackendError::Internal(e.to_string()))?;
        }
        *self.tail.lock().unwrap() = Some(tx);
        Ok(rx)
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("sluice_store_result_cache_hits_total", 7), ("sluice_store_result_cache_entries", 3)]
    }
}

fn tokens() -> Arc<StaticTokens> {
    Arc::new(StaticTokens::new([
        ("admin".to_string(), ADMIN.to_string(), vec![SourcePattern::all()]),
        ("acme".to_string(), ACME.to_string(), vec![SourcePattern::new("acme", "*", "*")]),
    ]))
}

fn state(backend: &Arc<Events>) -> ApiState {
    ApiState::new(Arc::new(Registry::default()), "n1").with_auth(tokens()).with_backend(Arc::clone(backend) as _)
}

struct Reply {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

async fn call(app: Router, method: &str, uri: &str, token: Option<&str>, body: &str) -> Reply {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    if !body.is_empty() {
        req = req.header("content-type", "application/json");
    }
    let resp = app.oneshot(req.body(Body::from(body.to_string())).unwrap()).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap().to_vec();
    Reply { status, headers, body }
}

fn ids(v: &Value) -> Vec<&str> {
    v["hits"].as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn missing_or_wrong_token_is_401() {
    let b = Arc::new(Events::new());
    for (method, uri, body) in [
        ("GET", "/api/v1/search", ""),
        ("POST", "/api/v1/search", "{}"),
        ("POST", "/api/v1/aggregate", "{}"),
        ("GET", "/api/v1/fields", ""),
        ("GET", "/api/v1/tail", ""),
    ] {
        let r = call(router(state(&b)), method, uri, None, body).await;
        assert_eq!(r.status, 401, "{method} {uri}");
        assert_eq!(
            r.json(),
            json!({"error": {"type": "unauthorized", "message": "missing credentials: send Authorization: Bearer <token>"}})
        );
        assert_eq!(r.headers["www-authenticate"], "Bearer realm=\"sluice\"");
        let r = call(router(state(&b)), method, uri, Some("admin-token-012345678X"), body).await;
        assert_eq!(r.status, 401, "{method} {uri}");
        assert_eq!(r.json(), json!({"error": {"type": "unauthorized", "message": "invalid token"}}));
    }
    // A bad query from an unauthenticated caller is still a 401: auth comes first.
    let r = call(router(state(&b)), "GET", "/api/v1/search?query=status:(", None, "").await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn no_tokens_configured_means_closed() {
    let b = Arc::new(Events::new());
    let st = ApiState::new(Arc::new(Registry::default()), "n1").with_backend(Arc::clone(&b) as _);
    let r = call(router(st), "GET", "/api/v1/search", Some(ADMIN), "").await;
    assert_eq!(r.status, 401);
    assert_eq!(
        r.json(),
        json!({"error": {"type": "unauthorized", "message": "no API tokens are configured on this node ([api.tokens])"}})
    );
}

#[tokio::test]
async fn malformed_query_is_400_with_its_position() {
    let b = Arc::new(Events::new());
    let want = sluice_query::parse("status:(").unwrap_err();
    let expected = json!({"error": {"type": "query_parse_error", "message": want.message, "position": want.position}});
    let r = call(router(state(&b)), "POST", "/api/v1/search", Some(ADMIN), r#"{"query":"status:("}"#).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json(), expected);
    let r = call(router(state(&b)), "GET", "/api/v1/search?query=status%3A%28", Some(ADMIN), "").await;
    assert_eq!((r.status, r.json()), (StatusCode::BAD_REQUEST, expected.clone()));
    let r = call(router(state(&b)), "POST", "/api/v1/aggregate", Some(ADMIN), r#"{"query":"status:("}"#).await;
    assert_eq!((r.status, r.json()), (StatusCode::BAD_REQUEST, expected.clone()));
    let r = call(router(state(&b)), "GET", "/api/v1/tail?query=status%3A%28", Some(ADMIN), "").await;
    assert_eq!((r.status, r.json()), (StatusCode::BAD_REQUEST, expected));
}

#[tokio::test]
async fn unknown_keys_are_400_naming_the_key() {
    let b = Arc::new(Events::new());
    let r = call(router(state(&b)), "POST", "/api/v1/search", Some(ADMIN), r#"{"qurey":"x"}"#).await;
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(v["error"]["type"], "invalid_request");
    assert!(v["error"]["message"].as_str().unwrap().contains("unknown field `qurey`"), "{v}");
    let r = call(router(state(&b)), "GET", "/api/v1/search?qurey=x", Some(ADMIN), "").await;
    let v = r.json();
    assert_eq!((r.status, &v["error"]["type"]), (StatusCode::BAD_REQUEST, &json!("invalid_request")));
    assert!(v["error"]["message"].as_str().unwrap().contains("unknown field `qurey`"), "{v}");
    let body = r#"{"aggs":{"h":{"type":"terms","field":"host","sise":3}}}"#;
    let r = call(router(state(&b)), "POST", "/api/v1/aggregate", Some(ADMIN), body).await;
    let v = r.json();
    assert_eq!(r.status, 400);
    assert!(v["error"]["message"].as_str().unwrap().contains("unknown field `sise`"), "{v}");
    let r = call(router(state(&b)), "POST", "/api/v1/search", Some(ADMIN), "{not json").await;
    assert_eq!((r.status, &r.json()["error"]["type"]), (StatusCode::BAD_REQUEST, &json!("invalid_request")));
}

#[tokio::test]
async fn search_returns_the_backends_hits_for_the_callers_principal() {
    let b = Arc::new(Events::new());
    // The empty query parses (the placeholder parser's one accepted input).
    let r = call(router(state(&b)), "GET", "/api/v1/search?query=", Some(ADMIN), "").await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!((v["total"].as_u64(), ids(&v)), (Some(3), vec!["e3", "e2", "e1"]));
    assert_eq!(v["hits"][0]["event"]["message"], "third");
    assert_eq!(v["next"], Value::Null);
    let r = call(router(state(&b)), "POST", "/api/v1/search", Some(ACME), r#"{"query":"","size":1}"#).await;
    let v = r.json();
    assert_eq!((r.status, v["total"].as_u64(), ids(&v)), (StatusCode::OK, Some(2), vec!["e3"]));
    let r = call(router(state(&b)), "POST", "/api/v1/search", Some(ACME), "").await;
    assert_eq!(ids(&r.json()), vec!["e3", "e1"]);
    let r = call(router(state(&b)), "GET", "/api/v1/search?size=0", Some(ACME), "").await;
    assert_eq!(
        (r.status, r.json()),
        (
            StatusCode::BAD_REQUEST,
            json!({"error": {"type": "invalid_request", "message": "size must be between 1 and 10000, got 0"}})
        )
    );
    let r = call(router(state(&b)), "GET", "/api/v1/search?from=yesterday", Some(ACME), "").await;
    assert_eq!((r.status, &r.json()["error"]["type"]), (StatusCode::BAD_REQUEST, &json!("time_error")));
}

#[tokio::test]
async fn backend_errors_and_missing_store() {
    let b = Arc::new(Events::new());
    let r = call(router(state(&b)), "GET", "/api/v1/search?search_after=bad", Some(ADMIN), "").await;
    assert_eq!(
        (r.status, r.json()),
        (StatusCode::BAD_REQUEST, json!({"error": {"type": "bad_request", "message": "invalid cursor \"bad\""}}))
    );
    let r = call(router(state(&b)), "GET", "/api/v1/search?search_after=boom", Some(ADMIN), "").await;
    assert_eq!(
        (r.status, r.json()),
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": {"type": "internal", "message": "internal error (see the node's log)"}})
        )
    );
    let st = ApiState::new(Arc::new(Registry::default()), "n1").with_auth(tokens());
    for (method, uri) in [("GET", "/api/v1/search"), ("POST", "/api/v1/aggregate"), ("GET", "/api/v1/fields")] {
        let r = call(router(st.clone()), method, uri, Some(ADMIN), "").await;
        assert_eq!(
            (r.status, r.json()),
            (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"error": {"type": "no_store", "message": "this node has no search store"}})
            )
        );
    }
}

#[tokio::test]
async fn aggregate_and_fields_pass_through() {
    let b = Arc::new(Events::new());
    let r = call(
        router(state(&b)),
        "POST",
        "/api/v1/aggregate",
        Some(ACME),
        r#"{"aggs":{"s":{"type":"stats","field":"n"}}}"#,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"total": 2, "took_ms": 2, "aggs": {"s": {"type": "stats", "count": 2, "min": null, "max": null, "avg": null, "sum": 0.0}}})
    );
    let r = call(router(state(&b)), "GET", "/api/v1/fields", Some(ACME), "").await;
    assert_eq!((r.status, r.json()), (StatusCode::OK, json!({"fields": [{"name": "message", "types": ["text"]}]})));
}

/// Reads body frames until `want` SSE events (blank-line separated) arrived.
async fn sse_events(body: &mut Body, want: usize) -> Vec<String> {
    let mut text = String::new();
    loop {
        let events: Vec<String> = text.split("\n\n").filter(|e| !e.is_empty()).map(String::from).collect::<Vec<_>>();
        if text.ends_with("\n\n") && events.len() >= want {
            return events;
        }
        let frame =
            tokio::time::timeout(Duration::from_secs(5), std::future::poll_fn(|c| Pin::new(&mut *body).poll_frame(c)))
                .await
                .expect("an SSE frame within 5s")
                .expect("the stream is still open")
                .unwrap();
        if let Ok(data) = frame.into_data() {
            text.push_str(std::str::from_utf8(&data).unwrap());
        }
    }
}

#[tokio::test]
async fn tail_streams_hits_as_sse_data_frames_until_the_client_leaves() {
    let b = Arc::new(Events::new());
    let req = Request::get("/api/v1/tail?query=").header("authorization", format!("Bearer {ACME}"));
    let resp = router(state(&b)).oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut body = resp.into_body();
    // An opening comment first: Firefox's fetch() resolves only on the first body bytes.
    let mut events = sse_events(&mut body, 3).await;
    assert_eq!(events.remove(0), ": open");
    let e1 = json!({"id": "e1", "event": {"@group": "acme", "@subgroup": "web", "@host": "h2", "message": "first"}});
    let e3 = json!({"id": "e3", "event": {"@group": "acme", "@subgroup": "web", "@host": "h1", "message": "third"}});
    let data: Vec<Value> = events
        .iter()
        .map(|e| {
            serde_json::from_str(e.strip_prefix("data: ").unwrap_or_else(|| panic!("not a data frame: {e}"))).unwrap()
        })
        .collect();
    assert_eq!(data, vec![e1, e3]);
    // A live event arrives as its own frame.
    let tx = b.tail.lock().unwrap().clone().unwrap();
    tx.send(Hit { id: "e4".into(), event: json!({"message": "live"}), error: None }).await.unwrap();
    assert_eq!(sse_events(&mut body, 1).await, vec![r#"data: {"id":"e4","event":{"message":"live"}}"#.to_string()]);
    // The client disconnects: the backend's stream is dropped.
    drop(body);
    tokio::time::timeout(Duration::from_secs(5), tx.closed()).await.expect("tail stream dropped with the client");
}

#[tokio::test]
async fn openapi_lists_every_route_and_nothing_else() {
    let doc: Value = serde_json::from_str(openapi_json()).expect("openapi.json parses");
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    for (method, path) in ROUTES {
        assert!(paths.get(*path).and_then(|p| p.get(method.to_lowercase())).is_some(), "{method} {path} undocumented");
    }
    let mut mounted = Vec::new();
    for (path, ops) in paths {
        for (method, op) in ops.as_object().unwrap() {
            let m = method.to_uppercase();
            if op.get("x-sluice-mount").is_some() {
                mounted.push(format!("{m} {path}"));
            } else {
                assert!(ROUTES.contains(&(m.as_str(), path.as_str())), "{m} {path} documented but not routed");
            }
        }
    }
    assert_eq!(mounted, vec!["POST /_bulk", "POST /ndjson"]);
    // Every listed route exists in the router (no 404/405), and the document is served.
    let b = Arc::new(Events::new());
    let users = Arc::new(
        sluice_users::Users::open_in_memory(
            &sluice_users::AuthConfig::default(),
            Arc::new(sluice_users::ManualClock::new(1_767_225_600_000)),
        )
        .unwrap(),
    );
    for (method, path) in ROUTES {
        let req = Request::builder().method(*method).uri(*path).header("authorization", format!("Bearer {ADMIN}"));
        let st = state(&b).with_users(Arc::clone(&users), tokens());
        let status = router(st).oneshot(req.body(Body::empty()).unwrap()).await.unwrap().status();
        assert!(status != 404 && status != 405, "{method} {path}: {status}");
    }
    let r = call(router(state(&b)), "GET", "/api/v1/openapi.json", None, "").await;
    assert_eq!((r.status, r.json()), (StatusCode::OK, doc));
}

#[tokio::test]
async fn mounted_routers_are_served_behind_the_apis_own_routes() {
    let mounts = Arc::new(Mounts::new("127.0.0.1:8080"));
    sluice_api::reserve_routes(&mounts).unwrap();
    let st = ApiState::new(Arc::new(Registry::default()), "n1").with_mounts(Arc::clone(&mounts));
    // Nothing mounted: `/` is a plain greeting, anything else a JSON 404.
    let r = call(router(st.clone()), "GET", "/", None, "").await;
    assert_eq!((r.status, r.body.as_slice()), (StatusCode::OK, &b"sluice\n"[..]));
    let r = call(router(st.clone()), "POST", "/_bulk", None, "").await;
    assert_eq!(
        (r.status, r.json()),
        (StatusCode::NOT_FOUND, json!({"error": {"type": "not_found", "message": "no route for POST /_bulk"}}))
    );
    let ingest: Router = Router::new().route("/_bulk", post(|| async { "bulk ok" }));
    let guard = mounts.mount("pipelines.main.sources.http", vec!["/_bulk".into()], Arc::new(ingest)).unwrap();
    let r = call(router(st.clone()), "POST", "/_bulk", None, "").await;
    assert_eq!((r.status, r.body.as_slice()), (StatusCode::OK, &b"bulk ok"[..]));
    let r = call(router(st.clone()), "GET", "/_node/stats", None, "").await;
    assert_eq!(r.status, 200);
    // The API's own routes cannot be taken.
    let clash: Router = Router::new().route("/metrics", post(|| async { "mine" }));
    let err = mounts.mount("pipelines.other.sources.http", vec!["/metrics".into()], Arc::new(clash)).err().unwrap();
    assert_eq!(err, MountError::Clash { path: "/metrics".into(), owner: "api".into() });
    drop(guard);
    let r = call(router(st), "POST", "/_bulk", None, "").await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn the_backends_counters_are_in_node_stats_and_metrics() {
    let backend = Arc::new(Events::new());
    let r = call(router(state(&backend)), "GET", "/_node/stats", None, "").await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["search"]["sluice_store_result_cache_hits_total"], 7);
    assert_eq!(v["search"]["sluice_store_result_cache_entries"], 3);
    let r = call(router(state(&backend)), "GET", "/metrics", None, "").await;
    let text = String::from_utf8(r.body).unwrap();
    assert!(
        text.contains("# TYPE sluice_store_result_cache_hits_total counter\nsluice_store_result_cache_hits_total 7\n"),
        "{text}"
    );
    assert!(text.contains("# TYPE sluice_store_result_cache_entries gauge\nsluice_store_result_cache_entries 3\n"));
    // Without a backend: an empty object.
    let st = ApiState::new(Arc::new(Registry::default()), "n1");
    let r = call(router(st), "GET", "/_node/stats", None, "").await;
    assert_eq!(r.json()["search"], json!({}));
}

#[tokio::test]
async fn search_order_is_passed_to_the_backend_and_validated() {
    let backend = Arc::new(Events::new());
    let r = call(router(state(&backend)), "GET", "/api/v1/search?order=oldest", Some(ADMIN), "").await;
    assert_eq!(r.status, 200);
    assert_eq!(*backend.order.lock().unwrap(), Some(Order::Oldest));
    let r = call(router(state(&backend)), "POST", "/api/v1/search", Some(ADMIN), "{}").await;
    assert_eq!(r.status, 200);
    assert_eq!(*backend.order.lock().unwrap(), Some(Order::Newest));
    let r = call(router(state(&backend)), "POST", "/api/v1/search", Some(ADMIN), r#"{"order":"sideways"}"#).await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("unknown variant `sideways`"), "{:?}", r.json());
}

#[tokio::test]
async fn search_sort_by_field_is_passed_to_the_backend_and_validated() {
    let backend = Arc::new(Events::new());
    let by = |f: &str, desc| Some(sluice_query::SortBy { field: f.into(), desc });
    let r = call(router(state(&backend)), "GET", "/api/v1/search?sort=http.status:desc", Some(ADMIN), "").await;
    assert_eq!(r.status, 200);
    assert_eq!(*backend.sort.lock().unwrap(), by("http.status", true));
    let r = call(router(state(&backend)), "POST", "/api/v1/search", Some(ADMIN), r#"{"sort":"@host:asc"}"#).await;
    assert_eq!(r.status, 200);
    assert_eq!(*backend.sort.lock().unwrap(), by("@host", false));
    // `@timestamp` is the time order, not a field sort.
    let r = call(router(state(&backend)), "GET", "/api/v1/search?sort=%40timestamp%3Aasc", Some(ADMIN), "").await;
    assert_eq!(r.status, 200);
    assert_eq!(*backend.sort.lock().unwrap(), None);
    assert_eq!(*backend.order.lock().unwrap(), Some(Order::Oldest));
    let r = call(router(state(&backend)), "GET", "/api/v1/search?sort=:desc", Some(ADMIN), "").await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["message"], "sort: expected <field>:asc or <field>:desc, got \":desc\"");
}
