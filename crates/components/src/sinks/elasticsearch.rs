//! `elasticsearch`: indexes batches through the Elasticsearch `_bulk` API
//! (OpenSearch, Elasticsearch, or anything speaking it — sluice's own `http`
//! source included).
//!
//! Each batch becomes one or more `POST {endpoint}/_bulk` requests of at most
//! `max_batch_bytes` (`Content-Type: application/x-ndjson`, gzipped unless
//! `compression = "none"`): an action line (`create` by default, as data
//! streams require, or `index`) with the `_index` rendered from `index`
//! (default `sluice-%{@group}-%Y.%m.%d`: one index per group and UTC day,
//! [`index_name`](self)), then the event as the same JSON object every sink
//! writes. Before its first document the sink installs an index template
//! (`template.json`: identity fields and `level` as keywords, `message` as
//! text, `@timestamp` as a date, other strings as text with a `.keyword`
//! sub-field, a total-fields limit; docs/specs/opensearch-index.md).
//!
//! **Connections** (`endpoints.rs`): one or several `endpoints` of the same
//! cluster, each with one keep-alive HTTP/1.1 connection (the `http` sink's
//! client); `https://` verified against `tls.ca` (rustls, optional client
//! certificate `tls.cert`/`tls.key`); `Authorization: Basic` from
//! `basic_auth = { user, password_file }` or `ApiKey` from
//! `api_key_file`/`api_key`. A dead endpoint (connection error, timeout,
//! 502/503/504) is skipped for `endpoint_retry` and the request goes to the
//! next one (ADR 0090).
//!
//! **Metadata fields** (`metadata.rs`): `_id` and `_index` never go into
//! the document: a string or number `_id` becomes the action's `_id` (a
//! re-sent `create` is then a 409, not a second copy), a string `_index` is
//! dropped (`index = "%{_index}"` routes by it).
//!
//! **Whole-request failures** (every endpoint failed, 429, and any other
//! non-2xx status, 401/403 included) return an error: the runtime retries
//! the batch with backoff, so nothing is acknowledged and nothing is lost; a
//! 4xx other than 429 is also counted in `rejected_requests`.
//!
//! **Per-item errors** in a 200 response (`"errors": true`) are handled item
//! by item:
//! - 429 and 5xx items (the cluster is busy or a shard is unavailable) are
//!   retried — only those documents — up to `max_item_retries` times with
//!   exponential backoff from `retry_backoff` (counted in `item_retries`);
//!   if some still fail, the write returns an error and the runtime retries
//!   the batch (items that had succeeded may then be indexed twice unless
//!   they carry an `_id`: at-least-once);
//! - 409 on `create` means the document exists: counted as delivered
//!   (`item_conflicts`);
//! - any other status (400 `mapper_parsing_exception`, …) will never
//!   succeed: the document is dead-lettered — appended to `dead_letter_path`
//!   as `{"status":…,"error":…,"document":…}` when set — and counted in
//!   `dead_letter_events`; the first reason of each request is logged at
//!   warn. Never silently dropped.
//!
//! So a batch is acknowledged upstream only once the cluster acknowledged
//! (or definitively refused and dead-lettered) every document in it.

mod bulk;
mod config;
mod endpoints;
mod index_name;
mod metadata;
mod template;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sluice_core::component::{BoxError, BuildContext, Sink, SinkSpec};
use sluice_core::config::ConfigError;
use sluice_core::metrics::{ComponentMetrics, Counter};
use sluice_core::Event;

use crate::dead_letter;
use bulk::{push_doc, Action, Outcome};
use endpoints::{snippet, Endpoints, Request};
use index_name::IndexName;

/// Registry entry.
pub const SPEC: SinkSpec = SinkSpec {
    name: "elasticsearch",
    summary: "OpenSearch/Elasticsearch _bulk API: TLS, auth, failover, gzip, index template, per-item retries and dead letters",
    example: "endpoints = [\"http://127.0.0.1:9200\", \"http://127.0.0.1:9201\"]\nindex = \"sluice-%{@group}-%Y.%m.%d\"\n",
    build,
};

/// The index template as shipped (`index_patterns = ["sluice-*"]`), for the
/// search side and tests: docs/specs/opensearch-index.md.
pub const INDEX_TEMPLATE_JSON: &str = template::TEMPLATE_JSON;

/// Largest bulk response kept (about 100 bytes per item).
const MAX_RESPONSE: usize = 64 << 20;

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Sink>, ConfigError> {
    let s = config::settings(value, cx)?;
    let m = &cx.metrics;
    Ok(Box::new(EsSink {
        endpoints: Endpoints::new(s.endpoints, s.auth, s.gzip, s.timeout, s.endpoint_retry, m),
        index: s.index,
        action: s.action,
        template: s.template,
        max_batch: s.max_batch,
        max_retries: s.max_retries,
        backoff: s.backoff,
        dead_letter: s.dead_letter,
        counters: Counters {
            rejected_requests: m.counter("rejected_requests"),
            item_retries: m.counter("item_retries"),
            item_conflicts: m.counter("item_conflicts"),
            dead_letter: m.counter("dead_letter_events"),
        },
        metrics: Arc::clone(m),
    }))
}

struct Counters {
    rejected_requests: Arc<Counter>,
    item_retries: Arc<Counter>,
    item_conflicts: Arc<Counter>,
    dead_letter: Arc<Counter>,
}

struct EsSink {
    endpoints: Endpoints,
    index: IndexName,
    action: Action,
    /// The template still to install (`None` once installed or when off).
    template: Option<(String, Vec<u8>)>,
    max_batch: usize,
    max_retries: u32,
    backoff: Duration,
    dead_letter: Option<PathBuf>,
    counters: Counters,
    metrics: Arc<ComponentMetrics>,
}

/// A hint added to 401/403 errors.
fn auth_hint(status: u16) -> &'static str {
    match status {
        401 => " (authentication failed: check basic_auth / api_key)",
        403 => " (not allowed: the user or key lacks a privilege)",
        _ => "",
    }
}

impl EsSink {
    /// Puts the index template, once.
    async fn install_template(&mut self) -> Result<(), BoxError> {
        let Some((name, body)) = &self.template else { return Ok(()) };
        let path = format!("/_index_template/{name}");
        let req = Request { method: "PUT", path: &path, content_type: "application/json", body, compress: false };
        let (url, resp) = self.endpoints.send(&req, 1 << 16).await?;
        if !(200..300).contains(&resp.status) {
            if (400..500).contains(&resp.status) && resp.status != 429 {
                self.counters.rejected_requests.inc();
            }
            return Err(format!(
                "PUT {url}: installing the index template: HTTP {}{}: {}",
                resp.status,
                auth_hint(resp.status),
                snippet(&resp.body)
            )
            .into());
        }
        tracing::info!(sink = %self.metrics.id, template = %name, "index template installed");
        self.template = None;
        Ok(())
    }

    /// Sends `events`, encoded in `body`, as one bulk request; returns each
    /// document's outcome.
    async fn bulk(&mut self, events: &[&Event], body: &[u8]) -> Result<Vec<Outcome>, BoxError> {
        let req =
            Request { method: "POST", path: "/_bulk", content_type: "application/x-ndjson", body, compress: true };
        let (url, resp) = self.endpoints.send(&req, MAX_RESPONSE).await?;
        if !(200..300).contains(&resp.status) {
            if (400..500).contains(&resp.status) && resp.status != 429 {
                self.counters.rejected_requests.inc();
            }
            return Err(
                format!("POST {url}: HTTP {}{}: {}", resp.status, auth_hint(resp.status), snippet(&resp.body)).into()
            );
        }
        bulk::outcomes(&resp.body, events.len(), self.action, &self.counters.item_conflicts)
            .map_err(|e| format!("POST {url}: {e}: {}", snippet(&resp.body)).into())
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

    /// Sends `events` (one request's worth, encoded in `body`), retrying
    /// failed items.
    async fn send_chunk(&mut self, events: Vec<&Event>, body: &mut Vec<u8>) -> Result<(), BoxError> {
        let mut pending = events;
        let mut backoff = self.backoff;
        let mut attempt = 0;
        loop {
            let outcomes = self.bulk(&pending, body).await?;
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
            body.clear();
            for e in &pending {
                push_doc(self.action, &self.index.render(e), e, body);
            }
        }
    }
}

#[async_trait]
impl Sink for EsSink {
    async fn write(&mut self, events: &[Event]) -> Result<(), BoxError> {
        self.install_template().await?;
        // Split by request size: a document that would take the body past
        // `max_batch_bytes` starts the next request (one alone may exceed it).
        let mut chunk: Vec<&Event> = Vec::new();
        let mut body = Vec::with_capacity(self.max_batch.min(events.len() * 512));
        let mut next = Vec::new();
        for e in events {
            next.clear();
            push_doc(self.action, &self.index.render(e), e, &mut next);
            if !chunk.is_empty() && body.len() + next.len() > self.max_batch {
                self.send_chunk(std::mem::take(&mut chunk), &mut body).await?;
                body.clear();
            }
            body.extend_from_slice(&next);
            chunk.push(e);
        }
        if !chunk.is_empty() {
            self.send_chunk(chunk, &mut body).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
