//! The pool of a `sluice` sink's receivers as it may change at run time:
//! config reload ([`LiveConfig`] on `receivers`) and the members API on the
//! node's API listener. Both only edit the *wanted* list; the sink's
//! dispatcher task reconciles: a new address gets a connection (and a
//! slow-start), an address no longer wanted is *drained* — it gets no new
//! batch, its batches in flight are acknowledged (or failed over) as usual,
//! then its connection is closed. Nothing in flight is dropped.
//!
//! Members API (when `members_api` is configured; `Authorization: Bearer
//! <token>`, compared in constant time):
//!
//! ```text
//! GET  /api/v1/dispatcher/<pipeline>/<sink>/members        → 200 {"members": [status…]}
//! POST /api/v1/dispatcher/<pipeline>/<sink>/members        {"address": "h:p", "weight": 1}
//!                                                         → 201 added | 409 already a member
//! POST /api/v1/dispatcher/<pipeline>/<sink>/members/drain  {"address": "h:p"}
//!                                                         → 202 draining | 404 not a member
//!                                                           | 409 the last member
//! ```
//!
//! Errors: `{"error": {"type": …, "message": …}}` with `unauthorized` (401),
//! `invalid_request` (400), `not_found` (404), `conflict` (409).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::{json, Value};
use sluice_core::component::LiveConfig;
use tokio::sync::Notify;

use super::{parse_receivers, ReceiverConfig};
use crate::secret::ct_eq;

/// A wanted member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// `host:port`.
    pub address: String,
    /// Share for `weighted_round_robin`.
    pub weight: u32,
}

/// What the dispatcher reports about one member.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberStatus {
    /// `host:port`.
    pub address: String,
    /// Configured weight.
    pub weight: u32,
    /// `up`, `down`, `ejected` or `draining`.
    pub state: &'static str,
    /// Batches sent and not yet acknowledged.
    pub in_flight: usize,
    /// Events it acknowledged.
    pub events: u64,
    /// Its share of the acknowledged events, in percent.
    pub share_pct: f64,
    /// Ack latency percentiles, µs.
    pub ack_p50_us: u64,
    /// Ack latency percentiles, µs.
    pub ack_p99_us: u64,
    /// Times ejected.
    pub ejections: u32,
    /// Slow-start admission, in percent (100 outside a slow-start).
    pub admission_pct: u32,
}

impl MemberStatus {
    fn json(&self) -> Value {
        json!({
            "address": self.address, "weight": self.weight, "state": self.state,
            "in_flight": self.in_flight, "events": self.events,
            "share_pct": (self.share_pct * 10.0).round() / 10.0,
            "ack_p50_us": self.ack_p50_us, "ack_p99_us": self.ack_p99_us,
            "ejections": self.ejections, "admission_pct": self.admission_pct,
        })
    }
}

/// The wanted members, shared by the sink, reloads, the members API and the
/// dispatcher task (which is told of every change).
#[derive(Default)]
pub struct Pool {
    wanted: Mutex<Vec<Member>>,
    status: Mutex<Vec<MemberStatus>>,
    /// Signalled on every change of `wanted`.
    pub changed: Notify,
}

impl Pool {
    /// A pool wanting `members`.
    pub fn new(members: Vec<Member>) -> Self {
        Self { wanted: Mutex::new(members), ..Default::default() }
    }

    /// The wanted members.
    pub fn wanted(&self) -> Vec<Member> {
        self.wanted.lock().clone()
    }

    /// Replaces the wanted members (reload).
    pub fn set(&self, members: Vec<Member>) {
        *self.wanted.lock() = members;
        self.changed.notify_one();
    }

    /// Adds a member; `false` when it is already wanted.
    pub fn add(&self, m: Member) -> bool {
        let mut w = self.wanted.lock();
        if w.iter().any(|o| o.address == m.address) {
            return false;
        }
        w.push(m);
        drop(w);
        self.changed.notify_one();
        true
    }

    /// Drains a member: `Err` says why not.
    pub fn drain(&self, address: &str) -> Result<(), (StatusCode, &'static str, String)> {
        let mut w = self.wanted.lock();
        let Some(i) = w.iter().position(|o| o.address == address) else {
            return Err((StatusCode::NOT_FOUND, "not_found", format!("{address} is not a member")));
        };
        if w.len() == 1 {
            return Err((StatusCode::CONFLICT, "conflict", format!("{address} is the last member; add another first")));
        }
        w.remove(i);
        drop(w);
        self.changed.notify_one();
        Ok(())
    }

    /// The dispatcher's latest report.
    pub fn publish(&self, status: Vec<MemberStatus>) {
        *self.status.lock() = status;
    }

    /// The latest report.
    pub fn status(&self) -> Vec<MemberStatus> {
        self.status.lock().clone()
    }
}

/// Reload of `receivers` without a restart.
pub struct LivePool(pub Arc<Pool>);

impl LiveConfig for LivePool {
    fn keys(&self) -> &'static [&'static str] {
        &["receivers"]
    }

    fn apply(&self, table: &toml::Value) -> Result<(), String> {
        let list = table.get("receivers").cloned().ok_or("receivers: missing")?;
        let list: Vec<ReceiverConfig> = list.try_into().map_err(|e| format!("receivers: {e}"))?;
        let members = parse_receivers(&list).map_err(|(k, m)| format!("{k}: {m}"))?;
        self.0.set(members);
        Ok(())
    }
}

#[derive(Clone)]
struct ApiState {
    pool: Arc<Pool>,
    token: Arc<str>,
}

/// The members API's path prefix for a sink.
pub fn base_path(pipeline: &str, sink: &str) -> String {
    format!("/api/v1/dispatcher/{pipeline}/{sink}/members")
}

/// The members API router for `pool`, guarded by `token`.
pub fn router(pool: Arc<Pool>, token: String, base: &str) -> Router {
    let state = ApiState { pool, token: Arc::from(token) };
    Router::new().route(base, get(list).post(add)).route(&format!("{base}/drain"), post(drain)).with_state(state)
}

fn error(status: StatusCode, kind: &str, message: impl Into<String>) -> Response {
    (status, Json(json!({"error": {"type": kind, "message": message.into()}}))).into_response()
}

/// `None` when the request carries the token, else the 401 to answer.
fn unauthorized(s: &ApiState, headers: &HeaderMap) -> Option<Response> {
    let given =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(t) if ct_eq(t.trim().as_bytes(), s.token.as_bytes()) => None,
        _ => Some(error(StatusCode::UNAUTHORIZED, "unauthorized", "a valid bearer token is required")),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddBody {
    address: String,
    #[serde(default = "super::default_weight")]
    weight: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DrainBody {
    address: String,
}

fn parse<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|e| e.to_string())
}

async fn list(State(s): State<ApiState>, headers: HeaderMap) -> Response {
    if let Some(r) = unauthorized(&s, &headers) {
        return r;
    }
    let status = s.pool.status();
    let mut members: Vec<Value> = status.iter().map(MemberStatus::json).collect();
    // Wanted but not reported yet (just added).
    for m in s.pool.wanted() {
        if !status.iter().any(|st| st.address == m.address) {
            members.push(json!({"address": m.address, "weight": m.weight, "state": "starting"}));
        }
    }
    Json(json!({ "members": members })).into_response()
}

async fn add(State(s): State<ApiState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(r) = unauthorized(&s, &headers) {
        return r;
    }
    let b: AddBody = match parse(&body) {
        Ok(b) => b,
        Err(m) => return error(StatusCode::BAD_REQUEST, "invalid_request", m),
    };
    if let Err(m) = crate::net::check_address(&b.address) {
        return error(StatusCode::BAD_REQUEST, "invalid_request", format!("address: {m}"));
    }
    let address = b.address.clone();
    if s.pool.add(Member { address: b.address, weight: b.weight }) {
        tracing::info!(member = %address, "members API: member added");
        (StatusCode::CREATED, Json(json!({ "added": address }))).into_response()
    } else {
        error(StatusCode::CONFLICT, "conflict", format!("{address} is already a member"))
    }
}

async fn drain(State(s): State<ApiState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(r) = unauthorized(&s, &headers) {
        return r;
    }
    let b: DrainBody = match parse(&body) {
        Ok(b) => b,
        Err(m) => return error(StatusCode::BAD_REQUEST, "invalid_request", m),
    };
    match s.pool.drain(&b.address) {
        Ok(()) => {
            tracing::info!(member = %b.address, "members API: draining member");
            (StatusCode::ACCEPTED, Json(json!({ "draining": b.address }))).into_response()
        }
        Err((status, kind, message)) => error(status, kind, message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt as _;

    fn pool() -> Arc<Pool> {
        Arc::new(Pool::new(vec![Member { address: "127.0.0.1:1".into(), weight: 1 }]))
    }

    async fn call(r: &Router, method: &str, path: &str, token: Option<&str>, body: &str) -> (StatusCode, Value) {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let resp = r.clone().oneshot(req.body(Body::from(body.to_string())).unwrap()).await.unwrap();
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    #[tokio::test]
    async fn add_drain_list_with_token_and_errors() {
        let p = pool();
        let base = base_path("main", "out");
        let r = router(Arc::clone(&p), "admin-token-0123456789".into(), &base);
        let tok = Some("admin-token-0123456789");
        let (s, b) = call(&r, "GET", &base, None, "").await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        assert_eq!(b["error"]["type"], "unauthorized");
        let (s, _) = call(&r, "GET", &base, Some("wrong-token-0123456789"), "").await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        let (s, b) = call(&r, "POST", &base, tok, r#"{"address":"127.0.0.1:2","weight":3}"#).await;
        assert_eq!((s, b["added"].as_str()), (StatusCode::CREATED, Some("127.0.0.1:2")));
        let (s, b) = call(&r, "POST", &base, tok, r#"{"address":"127.0.0.1:2"}"#).await;
        assert_eq!(
            (s, b["error"]["message"].as_str()),
            (StatusCode::CONFLICT, Some("127.0.0.1:2 is already a member"))
        );
        let (s, b) = call(&r, "POST", &base, tok, r#"{"address":"nope"}"#).await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        assert!(b["error"]["message"].as_str().unwrap().starts_with("address: "), "{b}");
        let (s, b) = call(&r, "POST", &base, tok, r#"{"adress":"127.0.0.1:3"}"#).await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        assert!(b["error"]["message"].as_str().unwrap().contains("unknown field `adress`"), "{b}");
        assert_eq!(
            p.wanted(),
            vec![
                Member { address: "127.0.0.1:1".into(), weight: 1 },
                Member { address: "127.0.0.1:2".into(), weight: 3 }
            ]
        );
        let (s, b) = call(&r, "GET", &base, tok, "").await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(b["members"].as_array().unwrap().len(), 2);
        assert_eq!(b["members"][1]["state"], "starting");
        let drain = format!("{base}/drain");
        let (s, _) = call(&r, "POST", &drain, tok, r#"{"address":"127.0.0.1:1"}"#).await;
        assert_eq!(s, StatusCode::ACCEPTED);
        let (s, b) = call(&r, "POST", &drain, tok, r#"{"address":"127.0.0.1:1"}"#).await;
        assert_eq!((s, b["error"]["type"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
        let (s, b) = call(&r, "POST", &drain, tok, r#"{"address":"127.0.0.1:2"}"#).await;
        assert_eq!((s, b["error"]["type"].as_str()), (StatusCode::CONFLICT, Some("conflict")));
        assert_eq!(p.wanted(), vec![Member { address: "127.0.0.1:2".into(), weight: 3 }]);
    }

    #[test]
    fn live_reload_replaces_the_wanted_list_and_checks_it() {
        let p = pool();
        let live = LivePool(Arc::clone(&p));
        assert_eq!(live.keys(), ["receivers"]);
        let t: toml::Value = toml::from_str(
            "type = \"sluice\"\nreceivers = [\"127.0.0.1:5\", { address = \"127.0.0.1:6\", weight = 2 }]",
        )
        .unwrap();
        live.apply(&t).unwrap();
        assert_eq!(
            p.wanted(),
            vec![
                Member { address: "127.0.0.1:5".into(), weight: 1 },
                Member { address: "127.0.0.1:6".into(), weight: 2 }
            ]
        );
        let bad: toml::Value = toml::from_str("receivers = [\"127.0.0.1:5\", \"127.0.0.1:5\"]").unwrap();
        assert_eq!(live.apply(&bad).unwrap_err(), "receivers[1]: 127.0.0.1:5 is listed twice");
    }
}
