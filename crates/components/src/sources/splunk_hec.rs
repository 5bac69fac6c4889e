//! `splunk_hec`: the Splunk HTTP Event Collector API, so the senders that
//! speak HEC (Splunk logging libraries, `splunk-handler`, Fluent Bit's and
//! Vector's `splunk_hec` outputs, OpenTelemetry's Splunk exporter) ship to
//! sluice unchanged. Format and mapping: `docs/specs/splunk_hec.md`.
//!
//! - `POST /services/collector`, `/services/collector/event` (and `/1.0`):
//!   one or more JSON event objects, concatenated or whitespace-separated
//!   (as Splunk accepts them), decoded by [`sluice_parsers::splunk_hec`].
//! - `POST /services/collector/raw` (and `/1.0`): each non-empty line is
//!   an event's `message`; `?host=`, `?source=`, `?sourcetype=`, `?index=`
//!   become fields.
//! - `POST /services/collector/ack`: `{"acks":[…]}` → `{"acks":{"0":true,…}}`.
//! - `GET /services/collector/health`: `{"text":"HEC is healthy","code":17}`.
//!
//! **Answers** are Splunk's: `200 {"text":"Success","code":0}` (with
//! `"ackId"` when acknowledgements are on), else its error codes (`2` token
//! required, `4` invalid token, `5` no data, `6` invalid data format with
//! `invalid-event-number`, `10` channel missing, `11` invalid channel, `12`
//! / `13` event missing / blank, `14` ack disabled, `15` indexed fields),
//! with a `reason` naming what was wrong. A bad body is refused whole:
//! nothing of it is queued (`bad_requests`).
//!
//! **Acknowledgement.** The `200` is sent only after the pipeline's queue
//! took the events; `503` (code 9, server busy) when it is closed. With
//! `acknowledgements = true` every request needs a channel
//! (`X-Splunk-Request-Channel` or `?channel=`, a GUID) and gets an `ackId`,
//! numbered per channel from 0; since the answer waits for the queue, an
//! `ackId` handed out is already acknowledged and `/ack` answers it `true`
//! once (then forgets it, as Splunk does). At most `max_channels` channels
//! and `max_acks_per_channel` unqueried ids are remembered (the oldest go
//! first, `acks_evicted`).
//!
//! **Authentication.** Every request but `health` needs
//! `Authorization: Splunk <token>` with one of the source's ingest `tokens`
//! ([`crate::ingest_auth`]); its events get the token's `group` /
//! `subgroup` / `host`, which nothing in the body can change. Only this
//! header form is accepted: a browser never adds it to a cross-site request
//! on its own (no cached Basic credentials, no query-string token), so no
//! page can write through the source. `auth = "none"` drops the check.
//!
//! **Limits.** A body larger than `max_body_bytes` (after gzip decoding;
//! `Content-Encoding: gzip` is accepted) gets `413`; at most `max_events`
//! events per request and JSON nested at most `max_depth`; raw lines are
//! cut at `max_line_bytes`. At most `max_connections` connections; header,
//! body and idle timeouts and HTTPS (`tls`, `tls_handshake_errors`) as the
//! `http` source's ([`sluice_net::http`]).

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::Router;
use parking_lot::Mutex;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, Positive};
use sluice_core::event::now_ns;
use sluice_core::metrics::Counter;
use sluice_core::{Event, Identity, Object, Value};
use sluice_parsers::splunk_hec::{self, HecError, Limits};

use crate::http_body::{self, BodyError};
use crate::http_listen::{self, ingest_listener_config, IngestListen};
use crate::ingest_auth::{self, AuthMode, IngestToken};

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "splunk_hec",
    summary: "Splunk HTTP Event Collector: /services/collector/event, /raw, channel acks",
    example: "address = \"127.0.0.1:0\"\n[tokens.default]\ntoken = \"0123456789abcdef0123\"\ngroup = \"default\"\n",
    build,
};

ingest_listener_config! {
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Listen address, e.g. `0.0.0.0:8088`.
    address: String,
    /// Largest request body (after gzip decoding).
    #[serde(default = "http_listen::default_max_body")]
    max_body_bytes: Positive<ByteSize>,
    /// Most events in one request.
    #[serde(default = "crate::defaults::count::<100_000>")]
    max_events: Positive<usize>,
    /// Deepest JSON nesting of an event object.
    #[serde(default = "http_listen::default_max_depth")]
    max_depth: Positive<usize>,
    /// Longest `/raw` line; longer ones are cut (`oversized_frames`).
    #[serde(default = "crate::defaults::mib::<1>")]
    max_line_bytes: Positive<ByteSize>,
    /// Indexer acknowledgements: a channel per request and `ackId`s.
    #[serde(default)]
    acknowledgements: bool,
    /// Channels remembered for acknowledgements.
    #[serde(default = "crate::defaults::count::<10_000>")]
    max_channels: Positive<usize>,
    /// Unqueried `ackId`s remembered per channel.
    #[serde(default = "crate::defaults::count::<100_000>")]
    max_acks_per_channel: Positive<usize>,
}
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let address = http_listen::socket_address(cx, "address", &c.address)?;
    let listen = c.listen(cx)?;
    Ok(Box::new(SplunkHec {
        address,
        listen,
        max_body: usize::try_from(c.max_body_bytes.0).unwrap_or(usize::MAX),
        max_line: usize::try_from(c.max_line_bytes.0).unwrap_or(usize::MAX),
        limits: Limits { max_events: c.max_events.get(), max_depth: c.max_depth.get() },
        acks: c.acknowledgements.then_some((c.max_channels.get(), c.max_acks_per_channel.get())),
    }))
}

struct SplunkHec {
    address: SocketAddr,
    listen: IngestListen,
    max_body: usize,
    max_line: usize,
    limits: Limits,
    acks: Option<(usize, usize)>,
}

/// Acknowledgement ids per channel (see the module docs).
struct Channels {
    max_channels: usize,
    max_acks: usize,
    /// Channel → (next id, ids handed out and not yet queried).
    by_name: HashMap<String, (u64, VecDeque<u64>)>,
    /// Channels in the order they were first seen (for eviction).
    order: VecDeque<String>,
}

impl Channels {
    /// The next `ackId` of `channel`, remembered as acknowledged.
    fn issue(&mut self, channel: &str, evicted: &Counter) -> u64 {
        if !self.by_name.contains_key(channel) {
            while self.by_name.len() >= self.max_channels {
                let Some(old) = self.order.pop_front() else { break };
                if let Some((_, ids)) = self.by_name.remove(&old) {
                    evicted.add(ids.len() as u64);
                }
            }
            self.order.push_back(channel.to_string());
        }
        let (next, ids) = self.by_name.entry(channel.to_string()).or_default();
        let id = *next;
        *next += 1;
        if ids.len() >= self.max_acks {
            ids.pop_front();
            evicted.inc();
        }
        ids.push_back(id);
        id
    }

    /// Whether `id` was handed out on `channel` and not yet queried; forgets it.
    fn take(&mut self, channel: &str, id: u64) -> bool {
        let Some((_, ids)) = self.by_name.get_mut(channel) else { return false };
        match ids.binary_search(&id) {
            Ok(i) => {
                ids.remove(i);
                true
            }
            Err(_) => false,
        }
    }
}

struct Counters {
    auth_failures: Arc<Counter>,
    bad_requests: Arc<Counter>,
    body_too_large: Arc<Counter>,
    oversized: Arc<Counter>,
    acks_evicted: Arc<Counter>,
}

struct Shared {
    cx: SourceContext,
    source: Arc<str>,
    max_body: usize,
    max_line: usize,
    limits: Limits,
    auth: AuthMode,
    tokens: Vec<IngestToken>,
    channels: Option<Mutex<Channels>>,
    counters: Counters,
}

#[async_trait]
impl Source for SplunkHec {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let (listener, local) =
            http_listen::bind(self.address, "splunk_hec", None, self.listen.max_connections, &cx).await?;
        let m = &cx.metrics;
        let tls = self.listen.http_tls(&cx);
        let shared = Arc::new(Shared {
            source: Arc::from(format!("splunk_hec:{local}")),
            max_body: self.max_body,
            max_line: self.max_line,
            limits: self.limits,
            auth: self.listen.auth,
            tokens: self.listen.tokens,
            channels: self.acks.map(|(max_channels, max_acks)| {
                Mutex::new(Channels { max_channels, max_acks, by_name: HashMap::new(), order: VecDeque::new() })
            }),
            counters: Counters {
                auth_failures: m.counter("auth_failures"),
                bad_requests: m.counter("bad_requests"),
                body_too_large: m.counter("body_too_large"),
                oversized: m.counter("oversized_frames"),
                acks_evicted: m.counter("acks_evicted"),
            },
            cx: cx.clone(),
        });
        let app = Router::new().fallback(handle).with_state(shared);
        http_listen::serve_app(listener, app, self.listen.timeouts, tls, "splunk_hec", &cx).await;
        Ok(())
    }
}

/// A Splunk-shaped answer.
fn answer(status: StatusCode, doc: &sonic_rs::Value) -> Response {
    answer_text(status, sonic_rs::to_string(doc).unwrap_or_default())
}

/// An answer whose JSON text is written out (Splunk's key order).
fn answer_text(status: StatusCode, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json; charset=UTF-8"));
    r
}

fn error(status: StatusCode, code: u32, text: &str, reason: &str) -> Response {
    answer(status, &sonic_rs::json!({"text": text, "code": code, "reason": reason}))
}

/// A query-string parameter, percent-decoded.
fn query_param(req: &Request, name: &str) -> Option<String> {
    req.uri().query()?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == name).then(|| percent_encoding::percent_decode_str(&v.replace('+', " ")).decode_utf8_lossy().into_owned())
    })
}

enum Route {
    Event,
    Raw,
    Ack,
    Health,
}

async fn handle(State(s): State<Arc<Shared>>, req: Request) -> Response {
    let path = req.uri().path().trim_end_matches('/');
    let route = match path {
        "/services/collector" | "/services/collector/event" | "/services/collector/event/1.0" => Route::Event,
        "/services/collector/raw" | "/services/collector/raw/1.0" => Route::Raw,
        "/services/collector/ack" => Route::Ack,
        "/services/collector/health" | "/services/collector/health/1.0" => Route::Health,
        _ => return error(StatusCode::NOT_FOUND, 404, "The requested URL was not found on this server.", path),
    };
    if let Route::Health = route {
        return answer(StatusCode::OK, &sonic_rs::json!({"text": "HEC is healthy", "code": 17}));
    }
    if *req.method() != Method::POST {
        return error(StatusCode::METHOD_NOT_ALLOWED, 404, "Method not allowed", "use POST");
    }
    let identity = match s.auth {
        AuthMode::None => None,
        AuthMode::Token => {
            let presented = req.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes().to_vec());
            let Some(value) = presented else {
                s.counters.auth_failures.inc();
                return error(StatusCode::UNAUTHORIZED, 2, "Token is required", "no Authorization header");
            };
            let secret =
                value.strip_prefix(b"Splunk ").or_else(|| value.strip_prefix(b"splunk ")).map(|t| t.trim_ascii());
            let Some(secret) = secret else {
                s.counters.auth_failures.inc();
                return error(
                    StatusCode::UNAUTHORIZED,
                    3,
                    "Invalid authorization",
                    "send Authorization: Splunk <token>",
                );
            };
            match ingest_auth::match_secret(secret, &s.tokens) {
                Some(t) => Some(Arc::clone(&t.identity)),
                None => {
                    s.counters.auth_failures.inc();
                    return error(StatusCode::FORBIDDEN, 4, "Invalid token", "the token is not one of this source's");
                }
            }
        }
    };
    let channel = req
        .headers()
        .get("x-splunk-request-channel")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| query_param(&req, "channel"));
    if let Some(c) = &channel {
        if !is_guid(c) {
            s.counters.bad_requests.inc();
            return error(StatusCode::BAD_REQUEST, 11, "Invalid data channel", "the channel must be a GUID");
        }
    }
    match route {
        Route::Ack => ack(&s, req, channel).await,
        Route::Event | Route::Raw => {
            if s.channels.is_some() && channel.is_none() {
                s.counters.bad_requests.inc();
                return error(
                    StatusCode::BAD_REQUEST,
                    10,
                    "Data channel is missing",
                    "acknowledgements are on: send X-Splunk-Request-Channel",
                );
            }
            ingest(&s, req, identity, matches!(route, Route::Raw), channel).await
        }
        Route::Health => answer(StatusCode::OK, &sonic_rs::json!({"text": "HEC is healthy", "code": 17})),
    }
}

/// `8-4-4-4-12` hex digits.
fn is_guid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter()
            .enumerate()
            .all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { *c == b'-' } else { c.is_ascii_hexdigit() })
}

/// Reads the body, at most `max_body` bytes (after gzip decoding).
async fn read_body(s: &Shared, req: Request) -> Result<Vec<u8>, Response> {
    match http_body::read(req, s.max_body).await {
        Ok((body, wire)) => {
            s.cx.metrics.bytes_in.add(wire as u64);
            Ok(body)
        }
        Err(BodyError::TooLarge) => {
            s.counters.body_too_large.inc();
            Err(error(
                StatusCode::PAYLOAD_TOO_LARGE,
                6,
                "Invalid data format",
                &format!("request body is larger than max_body_bytes ({} bytes)", s.max_body),
            ))
        }
        Err(e) => {
            s.counters.bad_requests.inc();
            Err(error(StatusCode::BAD_REQUEST, 6, "Invalid data format", &e.to_string()))
        }
    }
}

fn refuse(s: &Shared, e: &HecError) -> Response {
    s.counters.bad_requests.inc();
    s.cx.metrics.events_failed.inc();
    let text = match e {
        HecError::NoData => "No data",
        HecError::InvalidFormat { .. } | HecError::TooManyEvents(_) => "Invalid data format",
        HecError::NoEvent { .. } => "Event field is required",
        HecError::BlankEvent { .. } => "Event field cannot be blank",
        HecError::IndexedFields { .. } => "Error in handling indexed fields",
    };
    let doc = match e.event_number() {
        Some(n) => {
            sonic_rs::json!({"text": text, "code": e.code(), "reason": e.to_string(), "invalid-event-number": n})
        }
        None => sonic_rs::json!({"text": text, "code": e.code(), "reason": e.to_string()}),
    };
    answer(StatusCode::BAD_REQUEST, &doc)
}

async fn ingest(
    s: &Shared,
    req: Request,
    identity: Option<Arc<Identity>>,
    raw: bool,
    channel: Option<String>,
) -> Response {
    let params: Vec<(&str, Option<String>)> =
        ["host", "source", "sourcetype", "index"].iter().map(|k| (*k, query_param(&req, k))).collect();
    let body = match read_body(s, req).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let now = now_ns();
    let identity = identity.unwrap_or_else(sluice_core::event::no_identity);
    let events: Vec<Event> = if raw {
        let lines = match splunk_hec::split_raw(&body, s.limits, s.max_line) {
            Ok(l) => l,
            Err(e) => return refuse(s, &e),
        };
        lines
            .into_iter()
            .map(|line| {
                if line.len() == s.max_line {
                    s.counters.oversized.inc();
                }
                let mut fields = Object::with_capacity(5);
                fields.insert("message", line);
                for (k, v) in &params {
                    if let Some(v) = v {
                        fields.insert(*k, Value::from(v.as_str()));
                    }
                }
                Event::new(now, fields, Arc::clone(&identity), Arc::clone(&s.source))
            })
            .collect()
    } else {
        match splunk_hec::decode_events(&body, s.limits) {
            Ok(evs) => evs
                .into_iter()
                .map(|e| Event::new(e.timestamp.unwrap_or(now), e.fields, Arc::clone(&identity), Arc::clone(&s.source)))
                .collect(),
            Err(e) => return refuse(s, &e),
        }
    };
    let n = events.len() as u64;
    s.cx.metrics.events_in.add(n);
    if s.cx.out.send(events).await.is_err() {
        return error(StatusCode::SERVICE_UNAVAILABLE, 9, "Server is busy", "the pipeline's queue is closed");
    }
    s.cx.metrics.events_out.add(n);
    match (&s.channels, channel) {
        (Some(ch), Some(c)) => {
            let id = ch.lock().issue(&c, &s.counters.acks_evicted);
            answer_text(StatusCode::OK, format!(r#"{{"text":"Success","code":0,"ackId":{id}}}"#))
        }
        _ => answer_text(StatusCode::OK, r#"{"text":"Success","code":0}"#.to_string()),
    }
}

#[derive(Deserialize)]
struct AckRequest {
    acks: Vec<u64>,
}

async fn ack(s: &Shared, req: Request, channel: Option<String>) -> Response {
    let Some(channels) = &s.channels else {
        s.counters.bad_requests.inc();
        return error(StatusCode::BAD_REQUEST, 14, "ACK is disabled", "acknowledgements = false on this source");
    };
    let Some(channel) = channel else {
        s.counters.bad_requests.inc();
        return error(StatusCode::BAD_REQUEST, 10, "Data channel is missing", "send X-Splunk-Request-Channel");
    };
    let body = match read_body(s, req).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let asked: AckRequest = match sonic_rs::from_slice(&body) {
        Ok(a) => a,
        Err(e) => {
            s.counters.bad_requests.inc();
            return error(
                StatusCode::BAD_REQUEST,
                6,
                "Invalid data format",
                &format!("expected {{\"acks\":[…]}}: {e}"),
            );
        }
    };
    if asked.acks.len() > s.limits.max_events {
        s.counters.bad_requests.inc();
        return error(StatusCode::BAD_REQUEST, 6, "Invalid data format", "too many ids in one request");
    }
    // Written by hand: the ids in the order asked.
    let mut ch = channels.lock();
    let items: Vec<String> = asked.acks.iter().map(|id| format!(r#""{id}":{}"#, ch.take(&channel, *id))).collect();
    drop(ch);
    answer_text(StatusCode::OK, format!(r#"{{"acks":{{{}}}}}"#, items.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_hand_out_ids_and_forget_them_once_queried() {
        let evicted = Counter::default();
        let mut c = Channels { max_channels: 2, max_acks: 2, by_name: HashMap::new(), order: VecDeque::new() };
        assert_eq!(c.issue("a", &evicted), 0);
        assert_eq!(c.issue("a", &evicted), 1);
        assert_eq!(c.issue("b", &evicted), 0);
        assert!(c.take("a", 1));
        assert!(!c.take("a", 1), "an id is answered true once");
        assert!(!c.take("a", 7));
        assert_eq!(c.issue("a", &evicted), 2);
        assert_eq!(c.issue("a", &evicted), 3);
        assert_eq!(evicted.get(), 1, "id 0 of a was pushed out");
        assert!(!c.take("a", 0));
        assert_eq!(c.issue("c", &evicted), 0);
        assert!(!c.take("a", 3), "channel a was evicted for c");
        assert!(is_guid("0123abcd-0000-1111-2222-333344445555"));
        assert!(!is_guid("0123abcd-0000-1111-2222-33334444555"));
    }
}
