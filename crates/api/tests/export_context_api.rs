//! `GET /api/v1/export` and `GET /api/v1/context` at the HTTP level
//! (`tower::oneshot`, no socket) over an in-test [`SearchBackend`] that
//! searches like the store — term queries on fields, the time range, newest
//! or oldest first (ties in the order received), a `search_after` cursor, at
//! most `size` hits — and honours the principal, as the store does. Both
//! endpoints must ask the backend as the caller — never read everything and
//! filter themselves — so the double's principal filter is the only one,
//! and the counts below show it was applied.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};
use sluice_api::{router, ApiState, StaticTokens};
use sluice_core::metrics::Registry;
use sluice_core::Identity;
use sluice_query::api::{Aggregate, Search};
use sluice_query::{
    AggregateResponse, BackendError, FieldInfo, Hit, Order, Principal, Query, SearchBackend, SearchResponse,
    SourcePattern, TailStream,
};
use tower::ServiceExt as _;

const ADMIN: &str = "admin-token-0123456789";
const ACME: &str = "acme-token-0123456789";

/// Events newest first; the sizes of the pages asked for.
struct Store {
    events: Vec<(Identity, Hit)>,
    pages: Mutex<Vec<usize>>,
    /// A cursor at which the backend fails (a store error on a later page).
    fail_at: Option<String>,
}

impl Store {
    fn new(events: Vec<(Identity, Hit)>) -> Arc<Self> {
        Arc::new(Self { events, pages: Mutex::new(Vec::new()), fail_at: None })
    }
}

fn event(i: usize, group: &str, fields: Value) -> (Identity, Hit) {
    let mut ev = json!({"@timestamp": format!("2026-11-26T{:02}:{:02}:{:02}Z", 10 + i / 3600, i / 60 % 60, i % 60), "@group": group,
                        "@subgroup": "web", "@host": format!("h{i}"), "@source": "http"});
    ev.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
    (Identity::new(group, "web", format!("h{i}")), Hit { id: format!("e{i}"), event: ev, error: None })
}

/// The queries the endpoints send: everything, or terms on fields, ANDed.
fn matches(q: &Query, ev: &Value) -> bool {
    match q {
        Query::All => true,
        Query::Term { field: Some(f), value } => ev[f.as_str()].as_str() == Some(value),
        Query::And(qs) => qs.iter().all(|q| matches(q, ev)),
        other => panic!("the double does not run {other}"),
    }
}

#[async_trait]
impl SearchBackend for Store {
    async fn search(&self, p: &Principal, s: &Search) -> Result<SearchResponse, BackendError> {
        if s.search_after.is_some() && s.search_after == self.fail_at {
            return Err(BackendError::Internal("disk on fire".into()));
        }
        self.pages.lock().unwrap().push(s.size);
        let ts = |h: &Hit| sluice_query::parse_time(h.event["@timestamp"].as_str().unwrap(), 0).unwrap();
        let mut visible: Vec<&Hit> = self
            .events
            .iter()
            .filter(|(id, h)| p.may_read(id) && matches(&s.query, &h.event) && s.range.contains(ts(h)))
            .map(|(_, h)| h)
            .collect();
        // Newest first: by time, ties newest received (earlier in the list) first.
        visible.sort_by_key(|h| std::cmp::Reverse(ts(h)));
        if s.order == Order::Oldest {
            visible.reverse();
        }
        let start: usize = s.search_after.as_deref().map_or(0, |c| c.parse().unwrap());
        let end = (start + s.size).min(visible.len());
        let hits = visible[start..end]
            .iter()
            .map(|h| {
                let mut h = (*h).clone();
                if let (Some(f), Some(obj)) = (&s.fields, h.event.as_object_mut()) {
                    obj.retain(|k, _| {
                        k.starts_with('@') || f.iter().any(|f| f == k || f.starts_with(&format!("{k}.")))
                    });
                }
                h
            })
            .collect();
        let next = (end < visible.len()).then(|| end.to_string());
        Ok(SearchResponse { total: visible.len() as u64, hits, next, took_ms: 1 })
    }
    async fn aggregate(&self, _p: &Principal, _a: &Aggregate) -> Result<AggregateResponse, BackendError> {
        Err(BackendError::BadRequest("not in this test".into()))
    }
    async fn fields(&self, _p: &Principal, _r: &sluice_query::TimeRange) -> Result<Vec<FieldInfo>, BackendError> {
        Ok(Vec::new())
    }
    async fn tail(&self, _p: &Principal, _q: &Query) -> Result<TailStream, BackendError> {
        Err(BackendError::BadRequest("not in this test".into()))
    }
}

fn app(store: &Arc<Store>) -> axum::Router {
    let tokens = Arc::new(StaticTokens::new([
        ("admin".to_string(), ADMIN.to_string(), vec![SourcePattern::all()]),
        ("acme".to_string(), ACME.to_string(), vec![SourcePattern::new("acme", "*", "*")]),
    ]));
    router(ApiState::new(Arc::new(Registry::default()), "n1").with_auth(tokens).with_backend(Arc::clone(store) as _))
}

struct Reply {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    /// The body, or the error that broke it.
    body: Result<String, String>,
}

async fn get(store: &Arc<Store>, uri: &str, token: Option<&str>) -> Reply {
    let mut req = Request::builder().uri(uri);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let resp = app(store).oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
    let (status, headers) = (resp.status(), resp.headers().clone());
    let body = axum::body::to_bytes(resp.into_body(), 64 << 20)
        .await
        .map(|b| String::from_utf8(b.to_vec()).unwrap())
        .map_err(|e| e.to_string());
    Reply { status, headers, body }
}

fn header<'a>(r: &'a Reply, name: &str) -> &'a str {
    r.headers.get(name).map_or("", |v| v.to_str().unwrap())
}

/// Three acme events with values CSV must quote, and two of globex.
fn quoting_store() -> Arc<Store> {
    Store::new(vec![
        event(5, "acme", json!({"message": "plain", "n": 1})),
        event(4, "globex", json!({"message": "globex secret, do not export"})),
        event(3, "acme", json!({"message": "a, b and \"c\"", "n": 2.5, "tags": ["x", "y"]})),
        event(2, "globex", json!({"message": "globex secret 2"})),
        event(1, "acme", json!({"message": "two\nlines", "n": null, "user": {"name": "ann"}})),
    ])
}

#[tokio::test]
async fn csv_has_the_chosen_columns_rfc4180_quoted_and_only_the_callers_events() {
    let store = quoting_store();
    let r = get(&store, "/api/v1/export?format=csv&fields=@host,message,n,tags,user.name", Some(ACME)).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(header(&r, "content-type"), "text/csv; charset=utf-8");
    assert_eq!(header(&r, "content-disposition"), "attachment; filename=\"sluice-export.csv\"");
    assert_eq!(header(&r, "x-sluice-total"), "3");
    assert_eq!(
        r.body.unwrap(),
        "@host,message,n,tags,user.name\n\
         h5,plain,1,,\n\
         h3,\"a, b and \"\"c\"\"\",2.5,\"[\"\"x\"\",\"\"y\"\"]\",\n\
         h1,\"two\nlines\",,,ann\n"
    );
    // The admin sees all five; without fields the default columns.
    let r = get(&store, "/api/v1/export?format=csv", Some(ADMIN)).await;
    assert_eq!(header(&r, "x-sluice-total"), "5");
    let body = r.body.unwrap();
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines[0], "@timestamp,@group,@subgroup,@host,@source,message");
    assert_eq!(lines[2], "2026-11-26T10:00:04Z,globex,web,h4,http,\"globex secret, do not export\"");
}

#[tokio::test]
async fn ndjson_is_paged_through_the_backend_up_to_the_limit() {
    let mut events: Vec<_> = (0..2_500).rev().map(|i| event(i, "acme", json!({"message": format!("m{i}")}))).collect();
    events.insert(1_000, event(9_999, "globex", json!({"message": "globex"})));
    let store = Store::new(events);
    let r = get(&store, "/api/v1/export?format=ndjson&limit=2100", Some(ACME)).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(header(&r, "content-type"), "application/x-ndjson");
    assert_eq!(header(&r, "x-sluice-total"), "2500");
    let body = r.body.unwrap();
    let lines: Vec<Value> = body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2_100);
    assert_eq!(lines[0]["message"], "m2499");
    assert_eq!(lines[2_099]["message"], "m400");
    assert!(lines.iter().all(|l| l["@group"] == "acme"));
    // Asked in pages, the last one only for what the limit leaves.
    assert_eq!(*store.pages.lock().unwrap(), vec![1_000, 1_000, 100]);
    // Without a limit: all 2,500 (the default limit is 10,000); `fields` projects.
    store.pages.lock().unwrap().clear();
    let r = get(&store, "/api/v1/export?fields=message", Some(ACME)).await;
    let body = r.body.unwrap();
    assert_eq!(body.lines().count(), 2_500);
    assert_eq!(
        serde_json::from_str::<Value>(body.lines().last().unwrap()).unwrap(),
        json!({"@timestamp": "2026-11-26T10:00:00Z", "@group": "acme", "@subgroup": "web", "@host": "h0", "@source": "http", "message": "m0"})
    );
    assert_eq!(*store.pages.lock().unwrap(), vec![1_000, 1_000, 1_000]);
}

#[tokio::test]
async fn bad_format_limit_or_query_is_a_clear_400_and_no_token_a_401() {
    let store = quoting_store();
    for (uri, field, message) in [
        ("/api/v1/export?format=xlsx", Some("format"), "format must be \"csv\" or \"ndjson\", got \"xlsx\""),
        ("/api/v1/export?limit=0", Some("limit"), "limit must be between 1 and 1000000, got 0"),
        ("/api/v1/export?limit=1000001", Some("limit"), "limit must be between 1 and 1000000, got 1000001"),
        ("/api/v1/export?format=csv&colour=red", None, ""),
    ] {
        let r = get(&store, uri, Some(ACME)).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{uri}");
        let v: Value = serde_json::from_str(&r.body.unwrap()).unwrap();
        assert_eq!(v["error"]["type"], "invalid_request", "{uri}");
        if let Some(field) = field {
            assert_eq!(v["error"]["field"], field, "{uri}");
            assert_eq!(v["error"]["message"], message, "{uri}");
        } else {
            assert!(v["error"]["message"].as_str().unwrap().contains("colour"), "{v}");
        }
    }
    let r = get(&store, "/api/v1/export?query=status%3A(", Some(ACME)).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let v: Value = serde_json::from_str(&r.body.unwrap()).unwrap();
    assert_eq!(v["error"]["type"], "query_parse_error");
    assert!(v["error"]["position"].is_u64(), "{v}");
    let r = get(&store, "/api/v1/export?format=csv", None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(store.pages.lock().unwrap().is_empty(), "no request reached the store");
}

#[tokio::test]
async fn a_page_failing_part_way_breaks_the_body_instead_of_ending_it_short() {
    let events: Vec<_> = (0..1_500).rev().map(|i| event(i, "acme", json!({"message": "m"}))).collect();
    let store = Arc::new(Store { events, pages: Mutex::new(Vec::new()), fail_at: Some("1000".into()) });
    let r = get(&store, "/api/v1/export?format=ndjson", Some(ACME)).await;
    assert_eq!(r.status, StatusCode::OK);
    let err = r.body.unwrap_err();
    assert!(err.contains("disk on fire"), "{err}");
}

/// An event at second `sec` of a minute, on `host`, from `source`.
fn at(id: &str, sec: u32, group: &str, host: &str, source: &str) -> (Identity, Hit) {
    let ev = json!({"@timestamp": format!("2026-11-26T10:00:{sec:02}.000000001Z"), "@group": group,
                    "@subgroup": "web", "@host": host, "@source": source, "message": id});
    (Identity::new(group, "web", host), Hit { id: id.into(), event: ev, error: None })
}

/// Host A's events a1…a9 from source `syslog` (a5, a6, a7 share a
/// timestamp), with one of globex on the same host and source, and events of
/// another host and another source in between. Listed newest received first.
fn context_store() -> Arc<Store> {
    let mut received = vec![
        at("a1", 1, "acme", "A", "syslog"),
        at("b1", 2, "acme", "B", "syslog"),
        at("a2", 2, "acme", "A", "syslog"),
        at("a3", 3, "acme", "A", "syslog"),
        at("g1", 3, "globex", "A", "syslog"),
        at("a4", 4, "acme", "A", "syslog"),
        at("a5", 5, "acme", "A", "syslog"),
        at("a6", 5, "acme", "A", "syslog"),
        at("a7", 5, "acme", "A", "syslog"),
        at("c1", 6, "acme", "A", "http"),
        at("a8", 6, "acme", "A", "syslog"),
        at("a9", 7, "acme", "A", "syslog"),
    ];
    received.reverse();
    Store::new(received)
}

fn ids(hits: &Value) -> Vec<&str> {
    hits.as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap()).collect()
}

const A6: &str = "/api/v1/context?id=a6&at=2026-11-26T10:00:05.000000001Z&host=A&source=syslog";

#[tokio::test]
async fn context_is_the_n_events_before_and_after_from_the_same_host_and_source() {
    let store = context_store();
    let r = get(&store, &format!("{A6}&n=3"), Some(ACME)).await;
    assert_eq!(r.status, StatusCode::OK);
    let v: Value = serde_json::from_str(&r.body.unwrap()).unwrap();
    assert_eq!(ids(&v["before"]), ["a3", "a4", "a5"]);
    assert_eq!(v["event"]["id"], "a6");
    assert_eq!(v["event"]["event"]["message"], "a6");
    assert_eq!(ids(&v["after"]), ["a7", "a8", "a9"]);
    // More than there is: what there is.
    let v: Value = serde_json::from_str(&get(&store, &format!("{A6}&n=50"), Some(ACME)).await.body.unwrap()).unwrap();
    assert_eq!(ids(&v["before"]), ["a1", "a2", "a3", "a4", "a5"]);
    assert_eq!(ids(&v["after"]), ["a7", "a8", "a9"]);
    // The admin also sees globex's event on that host: the filter is the caller's.
    let v: Value = serde_json::from_str(&get(&store, &format!("{A6}&n=3"), Some(ADMIN)).await.body.unwrap()).unwrap();
    assert_eq!(ids(&v["before"]), ["g1", "a4", "a5"]);
}

#[tokio::test]
async fn context_of_an_event_the_caller_cannot_see_is_404_and_bad_parameters_400() {
    let store = context_store();
    let r =
        get(&store, "/api/v1/context?id=g1&at=2026-11-26T10:00:03.000000001Z&host=A&source=syslog", Some(ACME)).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r =
        get(&store, "/api/v1/context?id=g1&at=2026-11-26T10:00:03.000000001Z&host=A&source=syslog", Some(ADMIN)).await;
    assert_eq!(r.status, StatusCode::OK);
    for (uri, field, message) in [
        (format!("{A6}&n=0"), "n", "n must be between 1 and 500, got 0"),
        (format!("{A6}&n=501"), "n", "n must be between 1 and 500, got 501"),
        (
            "/api/v1/context?id=a6&at=yesterday&host=A&source=syslog".to_string(),
            "at",
            "invalid time \"yesterday\": expected RFC 3339, epoch milliseconds or now-<n><unit>",
        ),
    ] {
        let r = get(&store, &uri, Some(ACME)).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{uri}");
        let v: Value = serde_json::from_str(&r.body.unwrap()).unwrap();
        assert_eq!((v["error"]["field"].as_str(), v["error"]["message"].as_str()), (Some(field), Some(message)));
    }
    let r = get(&store, "/api/v1/context?at=2026-11-26T10:00:05Z&host=A", Some(ACME)).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "id is required");
    // Without a host (as from the http source): the source alone.
    let r = get(&store, "/api/v1/context?id=a6&at=2026-11-26T10:00:05.000000001Z&source=syslog&n=2", Some(ACME)).await;
    let v: Value = serde_json::from_str(&r.body.unwrap()).unwrap();
    assert_eq!((ids(&v["before"]), ids(&v["after"])), (vec!["a4", "a5"], vec!["a7", "a8"]));
    let r = get(&store, "/api/v1/context?id=a8&at=2026-11-26T10:00:06.000000001Z&host=A&n=1", Some(ACME)).await;
    let v: Value = serde_json::from_str(&r.body.unwrap()).unwrap();
    assert_eq!((ids(&v["before"]), ids(&v["after"])), (vec!["c1"], vec!["a9"]));
}
