//! `http`: POSTs batches of ndjson (`Content-Type: application/x-ndjson`) to
//! an HTTP endpoint — Elasticsearch-style bulk receivers, Loki/Vector/sluice
//! HTTP inputs, custom collectors.
//!
//! The client is a small HTTP/1.1 implementation ([`crate::http_client`]) over `tokio::net::TcpStream`
//! (one persistent keep-alive connection, `Content-Length` bodies; responses
//! read by `Content-Length`, `chunked` or to end of stream). The workspace
//! has `hyper` only through axum, without its client feature, and the sink
//! needs nothing more than this. `https://` URIs need
//! `tls = { ca = "ca.pem" }` (rustls, TLS 1.2/1.3; the server's certificate is
//! verified against that CA and the URI's host or `server_name`; the system's
//! roots are not read). No proxy, no redirects.
//!
//! Delivery, per request:
//! - any 2xx: done;
//! - 429, 5xx, any other status, timeouts and connection errors: `Err`, and
//!   the runtime retries the batch with backoff;
//! - other 4xx: the receiver will never accept this data. It is counted
//!   (`rejected_batches`) and, by default, still returned as `Err` with the
//!   status and the first 200 bytes of the response body: the batch is
//!   retried and **blocks the sink** until the receiver or the data is fixed
//!   (as Logstash without a dead-letter queue). With `drop_on_4xx = true` the
//!   request's events are dropped instead, counted in `rejected_events` and
//!   logged at warn once per request.
//!
//! A batch larger than `max_batch_bytes` is split into several requests (an
//! event that alone exceeds it is sent alone). When a later request fails,
//! the runtime retries the whole batch and the requests that already
//! succeeded are sent again: delivery is at-least-once and receivers may see
//! duplicates. A request on a reused keep-alive connection that the server
//! closed before answering is retried once on a new connection (also a
//! possible duplicate if the server processed it).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::codec::write_json;
use sluice_core::component::{BoxError, BuildContext, Sink, SinkSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration, Positive};
use sluice_core::metrics::{ComponentMetrics, Counter};
use sluice_core::Event;

use crate::http_client::{bad_value, is_token, ndjson_post_head, parse_uri, KeptConn, TlsTarget, Uri};
use crate::tls::{connector, ClientTls};

/// Registry entry.
pub const SPEC: SinkSpec = SinkSpec {
    name: "http",
    summary: "ndjson batches POSTed over HTTP/1.1 (keep-alive, split by size)",
    example: "uri = \"http://127.0.0.1:8080/ingest\"\nauth_token = \"secret\"\nheaders = { X-Tenant = \"acme\" }\n",
    build,
};

/// Request body compression.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Compression {
    /// Plain bodies (the only choice for now).
    None,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Endpoint, `http://host[:port]/path[?query]` or `https://…`.
    uri: String,
    /// TLS for an `https://` endpoint: `{ ca = "ca.pem", server_name = "…" }`.
    #[serde(default)]
    tls: Option<ClientTls>,
    /// Extra request headers.
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Sent as `Authorization: Bearer <token>`.
    #[serde(default)]
    auth_token: Option<String>,
    /// Longest time for one request (connect, send, response).
    #[serde(default = "crate::defaults::secs::<30>")]
    timeout: Positive<HumanDuration>,
    /// Largest request body; bigger batches are split.
    #[serde(default = "crate::defaults::mib::<10>")]
    max_batch_bytes: Positive<ByteSize>,
    /// `none` only, for now.
    #[serde(default = "default_compression")]
    #[allow(dead_code)]
    compression: Compression,
    /// Drop (and count) requests answered with a 4xx other than 429 instead
    /// of retrying them forever.
    #[serde(default)]
    drop_on_4xx: bool,
}

fn default_compression() -> Compression {
    Compression::None
}

/// Headers the client sets itself.
const RESERVED_HEADERS: [&str; 4] = ["host", "content-length", "transfer-encoding", "connection"];

/// How much of a response body is kept for error messages.
const BODY_SNIPPET: usize = 200;

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Sink>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let uri = parse_uri(&c.uri).map_err(|m| cx.error("uri", m.to_string()))?;
    let tls = match (&c.tls, uri.tls) {
        (Some(t), true) => Some(connector(t, &uri.connect).map_err(|(k, m)| cx.error(&format!("tls.{k}"), m))?),
        (None, true) => {
            return Err(cx.error(
                "tls",
                "an https:// uri needs tls = { ca = \"ca.pem\" } (the CA that signed the server's certificate)",
            ))
        }
        (Some(_), false) => return Err(cx.error("tls", "only valid with an https:// uri")),
        (None, false) => None,
    };
    let mut head = ndjson_post_head(&uri);
    if let Some(token) = &c.auth_token {
        if token.is_empty() || bad_value(token) {
            return Err(cx.error("auth_token", "must be non-empty and contain no line breaks"));
        }
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    for (name, value) in &c.headers {
        let key = format!("headers.{name}");
        if !is_token(name) {
            return Err(cx.error(&key, "invalid header name"));
        }
        let lower = name.to_ascii_lowercase();
        if RESERVED_HEADERS.contains(&lower.as_str()) {
            return Err(cx.error(&key, "is set by the sink and cannot be configured"));
        }
        if lower == "authorization" && c.auth_token.is_some() {
            return Err(cx.error(&key, "conflicts with auth_token; set only one"));
        }
        if bad_value(value) {
            return Err(cx.error(&key, "header values must not contain line breaks"));
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let m = &cx.metrics;
    Ok(Box::new(HttpSink {
        uri,
        tls,
        head: head.into_bytes(),
        timeout: c.timeout.0,
        max_batch: usize::try_from(c.max_batch_bytes.0).unwrap_or(usize::MAX),
        drop_on_4xx: c.drop_on_4xx,
        conn: KeptConn::default(),
        body: Vec::new(),
        ends: Vec::new(),
        req: Vec::new(),
        requests: m.counter("requests"),
        rejected_batches: m.counter("rejected_batches"),
        rejected_events: m.counter("rejected_events"),
        metrics: Arc::clone(m),
    }))
}

struct HttpSink {
    uri: Uri,
    /// Set for `https://`.
    tls: Option<TlsTarget>,
    /// Request line and fixed headers, each ending with CRLF.
    head: Vec<u8>,
    timeout: Duration,
    max_batch: usize,
    drop_on_4xx: bool,
    conn: KeptConn,
    body: Vec<u8>,
    /// End offset in `body` of each event's line.
    ends: Vec<usize>,
    req: Vec<u8>,
    metrics: Arc<ComponentMetrics>,
    requests: Arc<Counter>,
    rejected_batches: Arc<Counter>,
    rejected_events: Arc<Counter>,
}

impl HttpSink {
    /// POSTs `self.body[start..end]` holding `events` events.
    async fn post(&mut self, start: usize, end: usize, events: usize) -> Result<(), BoxError> {
        self.req.clear();
        self.req.extend_from_slice(&self.head);
        self.req.extend_from_slice(format!("Content-Length: {}\r\n\r\n", end - start).as_bytes());
        self.req.extend_from_slice(&self.body[start..end]);
        let resp = self
            .conn
            .post(
                &self.uri,
                self.tls.as_ref(),
                &self.req,
                BODY_SNIPPET,
                self.timeout,
                &self.requests,
                &self.metrics.bytes_out,
            )
            .await?;
        let target = self.uri.url();
        let status = resp.status;
        let body = String::from_utf8_lossy(&resp.body);
        match status {
            200..=299 => Ok(()),
            400..=499 if status != 429 => {
                self.rejected_batches.inc();
                if self.drop_on_4xx {
                    self.rejected_events.add(events as u64);
                    tracing::warn!(uri = %target, status, events, body = %body, "http sink: request rejected; events dropped (drop_on_4xx = true)");
                    Ok(())
                } else {
                    Err(format!("POST {target}: HTTP {status} (rejected; retried until accepted unless drop_on_4xx = true): {body}").into())
                }
            }
            _ => Err(format!("POST {target}: HTTP {status}: {body}").into()),
        }
    }
}

#[async_trait]
impl Sink for HttpSink {
    async fn write(&mut self, events: &[Event]) -> Result<(), BoxError> {
        self.body.clear();
        self.ends.clear();
        for e in events {
            write_json(e, &mut self.body);
            self.body.push(b'\n');
            self.ends.push(self.body.len());
        }
        let mut start = 0;
        let mut prev = 0;
        let mut count = 0;
        for i in 0..self.ends.len() {
            let end = self.ends[i];
            if count > 0 && end - start > self.max_batch {
                self.post(start, prev, count).await?;
                start = prev;
                count = 0;
            }
            prev = end;
            count += 1;
        }
        if count > 0 {
            self.post(start, prev, count).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
