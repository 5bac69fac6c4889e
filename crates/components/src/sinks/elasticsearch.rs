//! `elasticsearch`: indexes batches through the Elasticsearch `_bulk` API
//! (Elasticsearch, OpenSearch, or anything speaking it — sluice's own `http`
//! source included).
//!
//! Each batch becomes one or more `POST {endpoint}/_bulk` requests of at most
//! `max_batch_bytes` (`Content-Type: application/x-ndjson`): an action line
//! (`create` by default, as data streams require, or `index`) with the
//! `_index` rendered from `index` (a `%{field}` template), then the event as
//! the same JSON object every sink writes. The HTTP/1.1 client is the `http`
//! sink's (one keep-alive connection, `http://` only).
//!
//! **Metadata fields.** `_id` and `_index` are document metadata to
//! Elasticsearch: a document holding either as a field is refused (400,
//! "Field \[_id\] is a metadata field and cannot be added inside a document"),
//! and the `http` source's `_bulk` stamps both on every event. So they never
//! go into the document: a string or number `_id` becomes the action's `_id`
//! (a re-sent `create` is then a 409, not a second copy), a string `_index`
//! is dropped (`index = "%{_index}"` routes by it). Any other value stays
//! and is refused item by item like any bad document.
//!
//! **Whole-request failures** (connection errors, timeouts, 429, 5xx, and any
//! other non-2xx status) return an error: the runtime retries the batch with
//! backoff, so nothing is lost; a 4xx other than 429 is also counted in
//! `rejected_requests`.
//!
//! **Per-item errors** in a 200 response (`"errors": true`) are handled item
//! by item:
//! - 429 and 5xx items (the cluster is busy or a shard is unavailable) are
//!   retried — only those documents — up to `max_item_retries` times with
//!   exponential backoff from `retry_backoff` (counted in `item_retries`);
//!   if some still fail, the write returns an error and the runtime retries
//!   the batch (items that had succeeded may then be indexed twice:
//!   at-least-once);
//! - 409 on `create` means the document exists: counted as delivered
//!   (`item_conflicts`);
//! - any other status (400 `mapper_parsing_exception`, …) will never
//!   succeed: the document is dead-lettered — appended to `dead_letter_path`
//!   as `{"status":…,"error":…,"document":…}` when set — and counted in
//!   `dead_letter_events`; the first reason of each request is logged at
//!   warn. Never silently dropped.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::codec::write_json;
use sluice_core::component::{BoxError, BuildContext, Sink, SinkSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration};
use sluice_core::metrics::{ComponentMetrics, Counter};
use sluice_core::value::{write_json_str, Value};
use sluice_core::Event;

use crate::dead_letter;
use crate::http_client::{ndjson_post_head, parse_uri, KeptConn, Uri};
use crate::template::Template;

/// Registry entry.
pub const SPEC: SinkSpec = SinkSpec {
    name: "elasticsearch",
    summary: "Elasticsearch/OpenSearch _bulk API: batching, per-item retries and dead letters",
    example: "endpoint = \"http://127.0.0.1:9200\"\nindex = \"logs-%{[@metadata][tenant]}\"\n",
    build,
};

/// The bulk action per document.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Action {
    /// Fails with 409 when the id exists (data streams need it).
    Create,
    /// Creates or replaces.
    Index,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Base URL, `http://host:port[/prefix]`; requests go to `{endpoint}/_bulk`.
    endpoint: String,
    /// Target index, a `%{field}` template (default `sluice`).
    #[serde(default = "default_index")]
    index: String,
    /// `create` (default) or `index`.
    #[serde(default = "default_action")]
    action: Action,
    /// Sent as `Authorization: ApiKey <key>`.
    #[serde(default)]
    api_key: Option<String>,
    /// Longest time for one request.
    #[serde(default = "default_timeout")]
    timeout: HumanDuration,
    /// Largest request body; bigger batches are split.
    #[serde(default = "default_max_batch")]
    max_batch_bytes: ByteSize,
    /// Retries of documents answered 429 / 5xx within one write.
    #[serde(default = "default_item_retries")]
    max_item_retries: u32,
    /// First wait before retrying failed documents (doubles each time, at most 30 s).
    #[serde(default = "default_retry_backoff")]
    retry_backoff: HumanDuration,
    /// Where rejected documents are appended (ndjson with status and error).
    #[serde(default)]
    dead_letter_path: Option<PathBuf>,
}

fn default_index() -> String {
    "sluice".into()
}
fn default_action() -> Action {
    Action::Create
}
fn default_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(60))
}
fn default_max_batch() -> ByteSize {
    ByteSize(10 << 20)
}
fn default_item_retries() -> u32 {
    5
}
fn default_retry_backoff() -> HumanDuration {
    HumanDuration(Duration::from_millis(200))
}

/// Fields Elasticsearch keeps as document metadata (see the module docs).
const METADATA_FIELDS: [&str; 2] = ["_id", "_index"];

/// Whether `event` has a metadata field; an event still held as JSON text is
/// scanned for `"_i` first, so it is not parsed for nothing.
fn has_metadata(event: &Event) -> bool {
    if let Some(raw) = event.raw() {
        if memchr::memmem::find(raw.parts().0, b"\"_i").is_none() {
            return false;
        }
    }
    METADATA_FIELDS.iter().any(|k| event.fields().get(k).is_some())
}

/// `event` without its metadata fields, and the `_id` taken out of it.
fn split_metadata(event: &Event) -> (Event, Option<String>) {
    let mut doc = event.clone();
    let fields = doc.fields_mut();
    let id = match fields.get("_id") {
        Some(Value::String(t)) => Some(t.as_str().to_string()),
        Some(v @ (Value::Int(_) | Value::Float(_))) => {
            let mut text = Vec::new();
            v.write_json(&mut text);
            Some(String::from_utf8_lossy(&text).into_owned())
        }
        _ => None,
    };
    if id.is_some() {
        fields.remove("_id");
    }
    if fields.get("_index").is_some_and(Value::is_str) {
        fields.remove("_index");
    }
    (doc, id)
}

/// Largest bulk response kept (about 100 bytes per item).
const MAX_RESPONSE: usize = 64 << 20;

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Sink>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let base = c.endpoint.trim_end_matches('/');
    let uri = parse_uri(&format!("{base}/_bulk")).map_err(|m| cx.error("endpoint", m))?;
    if uri.tls {
        return Err(cx.error(
            "endpoint",
            "https is not supported by this sink yet; use an http:// endpoint (or the http sink with tls)",
        ));
    }
    if uri.target.contains('?') {
        return Err(cx.error("endpoint", "must not contain a query string"));
    }
    let index = Template::parse(&c.index).map_err(|e| cx.error("index", e.to_string()))?;
    if c.index.is_empty() {
        return Err(cx.error("index", "must not be empty"));
    }
    for (key, d) in [("timeout", c.timeout), ("retry_backoff", c.retry_backoff)] {
        if d.0.is_zero() {
            return Err(cx.error(key, "must be greater than 0"));
        }
    }
    if c.max_batch_bytes.0 == 0 {
        return Err(cx.error("max_batch_bytes", "must be greater than 0"));
    }
    let mut head = ndjson_post_head(&uri);
    if let Some(k) = &c.api_key {
        if k.is_empty() || k.bytes().any(|b| b == b'\r' || b == b'\n') {
            return Err(cx.error("api_key", "must be non-empty and contain no line breaks"));
        }
        head.push_str(&format!("Authorization: ApiKey {k}\r\n"));
    }
    let m = &cx.metrics;
    Ok(Box::new(EsSink {
        uri,
        head: head.into_bytes(),
        index,
        action: c.action,
        timeout: c.timeout.0,
        max_batch: usize::try_from(c.max_batch_bytes.0).unwrap_or(usize::MAX),
        max_retries: c.max_item_retries,
        backoff: c.retry_backoff.0,
        dead_letter: c.dead_letter_path,
        conn: KeptConn::default(),
        counters: Counters {
            requests: m.counter("requests"),
            rejected_requests: m.counter("rejected_requests"),
            item_retries: m.counter("item_retries"),
            item_conflicts: m.counter("item_conflicts"),
            dead_letter: m.counter("dead_letter_events"),
        },
        metrics: Arc::clone(m),
    }))
}

struct Counters {
    requests: Arc<Counter>,
    rejected_requests: Arc<Counter>,
    item_retries: Arc<Counter>,
    item_conflicts: Arc<Counter>,
    dead_letter: Arc<Counter>,
}

struct EsSink {
    uri: Uri,
    head: Vec<u8>,
    index: Template,
    action: Action,
    timeout: Duration,
    max_batch: usize,
    max_retries: u32,
    backoff: Duration,
    dead_letter: Option<PathBuf>,
    conn: KeptConn,
    counters: Counters,
    metrics: Arc<ComponentMetrics>,
}

#[derive(Deserialize)]
struct BulkResponse {
    errors: bool,
    items: Vec<std::collections::BTreeMap<String, ItemResult>>,
}

#[derive(Deserialize)]
struct ItemResult {
    status: u16,
    #[serde(default)]
    error: Option<sonic_rs::Value>,
}

/// What happened to one document.
enum Outcome {
    Done,
    Retry,
    Dead { status: u16, error: String },
}

impl EsSink {
    /// Appends the action and source lines of `event` to `body`.
    fn push_doc(&self, event: &Event, body: &mut Vec<u8>) {
        body.extend_from_slice(match self.action {
            Action::Create => b"{\"create\":{\"_index\":",
            Action::Index => b"{\"index\":{\"_index\":",
        });
        write_json_str(body, &self.index.render(event));
        if has_metadata(event) {
            let (doc, id) = split_metadata(event);
            if let Some(id) = id {
                body.extend_from_slice(b",\"_id\":");
                write_json_str(body, &id);
            }
            body.extend_from_slice(b"}}\n");
            write_json(&doc, body);
        } else {
            body.extend_from_slice(b"}}\n");
            write_json(event, body);
        }
        body.push(b'\n');
    }

    /// Sends `events` as one bulk request; returns each document's outcome.
    async fn bulk(&mut self, events: &[&Event]) -> Result<Vec<Outcome>, BoxError> {
        let mut body = Vec::with_capacity(events.len() * 512);
        for e in events {
            self.push_doc(e, &mut body);
        }
        let mut req = self.head.clone();
        req.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        req.extend_from_slice(&body);
        let resp = self
            .conn
            .post(&self.uri, None, &req, MAX_RESPONSE, self.timeout, &self.counters.requests, &self.metrics.bytes_out)
            .await?;
        let target = self.uri.url();
        let snippet = || String::from_utf8_lossy(&resp.body[..resp.body.len().min(300)]).into_owned();
        if !(200..300).contains(&resp.status) {
            if (400..500).contains(&resp.status) && resp.status != 429 {
                self.counters.rejected_requests.inc();
            }
            return Err(format!("POST {target}: HTTP {}: {}", resp.status, snippet()).into());
        }
        let parsed: BulkResponse = sonic_rs::from_slice(&resp.body)
            .map_err(|e| format!("POST {target}: not a bulk response ({e}): {}", snippet()))?;
        if parsed.items.len() != events.len() {
            return Err(format!(
                "POST {target}: the bulk response has {} items for {} documents",
                parsed.items.len(),
                events.len()
            )
            .into());
        }
        if !parsed.errors {
            return Ok(events.iter().map(|_| Outcome::Done).collect());
        }
        Ok(parsed
            .items
            .into_iter()
            .map(|m| {
                let Some(item) = m.into_values().next() else {
                    return Outcome::Dead { status: 0, error: "empty item".into() };
                };
                match item.status {
                    200..=299 => Outcome::Done,
                    409 if self.action == Action::Create => {
                        self.counters.item_conflicts.inc();
                        Outcome::Done
                    }
                    429 | 500..=599 => Outcome::Retry,
                    status => Outcome::Dead {
                        status,
                        error: item.error.map(|v| sonic_rs::to_string(&v).unwrap_or_default()).unwrap_or_default(),
                    },
                }
            })
            .collect())
    }

    async fn dead_letter(&mut self, dead: &[(&Event, u16, String)]) -> Result<(), BoxError> {
        self.counters.dead_letter.add(dead.len() as u64);
        let (first_status, first_error) = (dead[0].1, &dead[0].2);
        tracing::warn!(sink = %self.metrics.id, documents = dead.len(), status = first_status, error = %first_error, dead_letter_path = ?self.dead_letter, "documents rejected by the bulk API; dead-lettered");
        let Some(path) = &self.dead_letter else { return Ok(()) };
        let mut out = Vec::new();
        for (e, status, error) in dead {
            let error = if error.is_empty() { "null" } else { error.as_str() };
            dead_letter::encode(&mut out, &[("status", &status.to_string()), ("error", error)], e);
        }
        dead_letter::append(path, &out).await
    }

    /// Sends `events` (one request's worth), retrying failed items.
    async fn send_chunk(&mut self, events: Vec<&Event>) -> Result<(), BoxError> {
        let mut pending = events;
        let mut backoff = self.backoff;
        let mut attempt = 0;
        loop {
            let outcomes = self.bulk(&pending).await?;
            let mut retry = Vec::new();
            let mut dead = Vec::new();
            for (e, o) in pending.iter().zip(outcomes) {
                match o {
                    Outcome::Done => {}
                    Outcome::Retry => retry.push(*e),
                    Outcome::Dead { status, error } => dead.push((*e, status, error)),
                }
            }
            if !dead.is_empty() {
                self.dead_letter(&dead).await?;
            }
            if retry.is_empty() {
                return Ok(());
            }
            if attempt >= self.max_retries {
                return Err(format!(
                    "{} documents still answered 429/5xx after {} retries; the batch is retried",
                    retry.len(),
                    self.max_retries
                )
                .into());
            }
            attempt += 1;
            self.counters.item_retries.add(retry.len() as u64);
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(30));
            pending = retry;
        }
    }
}

#[async_trait]
impl Sink for EsSink {
    async fn write(&mut self, events: &[Event]) -> Result<(), BoxError> {
        // Split by approximate request size (JSON length plus the action line).
        let mut chunk: Vec<&Event> = Vec::new();
        let mut size = 0;
        let mut scratch = Vec::new();
        for e in events {
            scratch.clear();
            self.push_doc(e, &mut scratch);
            if !chunk.is_empty() && size + scratch.len() > self.max_batch {
                self.send_chunk(std::mem::take(&mut chunk)).await?;
                size = 0;
            }
            size += scratch.len();
            chunk.push(e);
        }
        if !chunk.is_empty() {
            self.send_chunk(chunk).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::http as http_source;
    use crate::testkit::{build_sink, build_source, source_context, Capture};
    use axum::extract::State;
    use parking_lot::Mutex;
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::net::TcpListener;
    use tokio::net::TcpStream;

    fn events(n: usize) -> Vec<Event> {
        (0..n).map(|i| Event::from_message(format!("doc {i}"))).collect()
    }

    /// sluice's own `_bulk` endpoint: the `http` source with a small line limit
    /// so an oversized document gets a per-item 400.
    #[tokio::test]
    async fn indexes_into_sluices_bulk_endpoint_and_dead_letters_rejected_documents() {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        let src =
            build_source(&http_source::SPEC, &format!("address = \"{addr}\"\nmax_line_bytes = 512\nauth = \"none\""))
                .unwrap();
        let cap = Arc::new(Capture::default());
        let (scx, shutdown, _m) = source_context(Arc::clone(&cap));
        let task = tokio::spawn(src.run(scx));
        for _ in 0..200 {
            if TcpStream::connect(addr).await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let dir = tempfile::tempdir().unwrap();
        let dlq = dir.path().join("dead.ndjson");
        let cx = BuildContext::for_test("sink", "es");
        let body = format!(
            "endpoint = \"http://{addr}\"\nindex = \"logs-%{{team}}\"\nmax_batch_bytes = \"4KiB\"\ndead_letter_path = \"{}\"",
            dlq.display()
        );
        let mut sink = (SPEC.build)(toml::from_str(&body).unwrap(), &cx).unwrap();
        let mut evs = events(100);
        for e in evs.iter_mut() {
            e.fields_mut().insert("team", sluice_core::Value::from("ops"));
        }
        evs[42] = Event::from_message("y".repeat(1000));
        sink.write(&evs).await.unwrap();
        shutdown.cancel();
        task.await.unwrap().unwrap();
        let got = cap.events.lock().clone();
        assert_eq!(got.len(), 99, "every document but the oversized one is indexed once");
        assert!(got.iter().all(|e| e.fields().get(&"_index").and_then(|v| v.as_str()) == Some("logs-ops")));
        assert_eq!(cx.metrics.counter("dead_letter_events").get(), 1);
        assert!(cx.metrics.counter("requests").get() >= 3, "split by max_batch_bytes");
        let dead = std::fs::read_to_string(&dlq).unwrap();
        assert_eq!(dead.lines().count(), 1);
        let v: serde_json::Value = serde_json::from_str(dead.lines().next().unwrap()).unwrap();
        assert_eq!(v["status"], 400);
        assert_eq!(v["error"]["type"], "mapper_parsing_exception");
        assert_eq!(v["document"]["message"].as_str().unwrap().len(), 1000);
    }

    #[derive(Default)]
    struct Flaky {
        /// Documents received per request.
        requests: Mutex<Vec<Vec<String>>>,
        calls: AtomicUsize,
    }

    /// Answers 429 for every other document of the first request, 200 after.
    async fn flaky(State(st): State<Arc<Flaky>>, body: String) -> (axum::http::StatusCode, String) {
        let docs: Vec<String> = body.lines().skip(1).step_by(2).map(String::from).collect();
        let call = st.calls.fetch_add(1, Ordering::SeqCst);
        let items: Vec<String> = (0..docs.len())
            .map(|i| {
                let status = if call == 0 && i % 2 == 1 { 429 } else { 201 };
                let err = if status == 429 { ",\"error\":{\"type\":\"es_rejected_execution_exception\"}" } else { "" };
                format!("{{\"create\":{{\"status\":{status}{err}}}}}")
            })
            .collect();
        st.requests.lock().push(docs);
        let errors = call == 0;
        (axum::http::StatusCode::OK, format!("{{\"took\":1,\"errors\":{errors},\"items\":[{}]}}", items.join(",")))
    }

    async fn flaky_server() -> (Arc<Flaky>, SocketAddr) {
        let st = Arc::new(Flaky::default());
        let app = axum::Router::new().route("/_bulk", axum::routing::post(flaky)).with_state(Arc::clone(&st));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (st, addr)
    }

    #[tokio::test]
    async fn items_answered_429_are_retried_alone() {
        let (st, addr) = flaky_server().await;
        let cx = BuildContext::for_test("sink", "es");
        let body = format!("endpoint = \"http://{addr}\"\nretry_backoff = \"10ms\"");
        let mut sink = (SPEC.build)(toml::from_str(&body).unwrap(), &cx).unwrap();
        sink.write(&events(10)).await.unwrap();
        let reqs = st.requests.lock().clone();
        assert_eq!(reqs.len(), 2);
        assert_eq!(reqs[0].len(), 10);
        assert_eq!(reqs[1].len(), 5, "only the 429 documents again");
        assert!(reqs[1].iter().all(|d| ["doc 1", "doc 3", "doc 5", "doc 7", "doc 9"].iter().any(|m| d.contains(m))));
        assert_eq!(cx.metrics.counter("item_retries").get(), 5);
        assert_eq!(cx.metrics.counter("dead_letter_events").get(), 0);
    }

    #[tokio::test]
    async fn whole_request_failures_are_errors_for_the_runtime_to_retry() {
        let addr = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
        let mut sink = build_sink(&SPEC, &format!("endpoint = \"http://{addr}\"")).unwrap();
        let e = sink.write(&events(1)).await.unwrap_err();
        assert!(e.to_string().starts_with(&format!("POST http://{addr}/_bulk: connect")), "{e}");
    }

    #[test]
    fn metadata_fields_are_taken_out_of_the_document() {
        let parse = |json: &str, raw: bool| {
            if raw {
                sluice_core::codec::event_from_json_bytes(&bytes::Bytes::from(json.to_string())).unwrap().0
            } else {
                sluice_core::codec::event_from_json(json.as_bytes()).unwrap().0
            }
        };
        let doc = |e: &Event| sluice_core::codec::to_json_string(e);
        for raw in [false, true] {
            let e = parse(r#"{"@timestamp":"2026-01-01T00:00:00Z","message":"m","_id":"abc","_index":"x"}"#, raw);
            assert!(has_metadata(&e));
            let (d, id) = split_metadata(&e);
            assert_eq!(id.as_deref(), Some("abc"));
            assert_eq!(doc(&d), r#"{"@timestamp":"2026-01-01T00:00:00Z","message":"m"}"#);
            let (_, id) = split_metadata(&parse(r#"{"_id":42}"#, raw));
            assert_eq!(id.as_deref(), Some("42"));
            // Not an id: left in the document, where the server refuses it (a per-item 400).
            let e = parse(r#"{"@timestamp":"2026-01-01T00:00:00Z","_id":{"a":1},"_i":"y"}"#, raw);
            let (d, id) = split_metadata(&e);
            assert_eq!(id, None);
            assert_eq!(doc(&d), r#"{"@timestamp":"2026-01-01T00:00:00Z","_id":{"a":1},"_i":"y"}"#);
            assert!(!has_metadata(&parse(r#"{"message":"_i","n":1}"#, raw)));
        }
    }

    #[test]
    fn config_errors_name_the_key() {
        let e = build_sink(&SPEC, "endpoint = \"https://es:9200\"").err().unwrap();
        assert!(e.to_string().starts_with("test.elasticsearch.endpoint: https is not supported"), "{e}");
        let e = build_sink(&SPEC, "endpoint = \"http://es:9200\"\naction = \"upsert\"").err().unwrap();
        assert!(e.to_string().starts_with("test.elasticsearch.action: "), "{e}");
    }
}
