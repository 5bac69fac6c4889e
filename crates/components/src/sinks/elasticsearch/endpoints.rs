//! The cluster's endpoints and the requests sent to them: one kept-alive
//! HTTP/1.1 connection per endpoint ([`crate::http_client`], `https://`
//! through rustls), the `Authorization` header, gzip request bodies, and
//! failover.
//!
//! **Failover.** Requests go to the current endpoint. A connection error, a
//! timeout or a 502/503/504 marks it down for `endpoint_retry` and the same
//! request goes to the next endpoint that is not down (counted in
//! `endpoint_failovers`); a down endpoint is tried again once its time is
//! up, or when every endpoint is down. Only when every endpoint failed is
//! the request an error (the runtime then retries the batch with backoff).
//! A request that timed out may have been applied: sent again elsewhere it
//! is a duplicate unless the document has an `_id` (`create` then answers
//! 409, counted as delivered).

use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_core::metrics::{ComponentMetrics, Counter};

use crate::http_client::{KeptConn, Response, TlsTarget, Uri};

/// One endpoint: where it is, its connection, and until when it is down.
pub(super) struct Endpoint {
    pub(super) uri: Uri,
    pub(super) tls: Option<TlsTarget>,
    conn: KeptConn,
    down_until: Option<Instant>,
}

impl Endpoint {
    pub(super) fn new(uri: Uri, tls: Option<TlsTarget>) -> Self {
        Self { uri, tls, conn: KeptConn::default(), down_until: None }
    }
}

/// A request to send: method, path below the endpoint's prefix, body.
pub(super) struct Request<'a> {
    pub(super) method: &'static str,
    pub(super) path: &'a str,
    pub(super) content_type: &'static str,
    pub(super) body: &'a [u8],
    /// Gzip the body when the sink's `compression` is `gzip`.
    pub(super) compress: bool,
}

/// The endpoints and how to talk to them.
pub(super) struct Endpoints {
    list: Vec<Endpoint>,
    current: usize,
    /// `Authorization: …\r\n`, or empty.
    auth: String,
    gzip: bool,
    timeout: Duration,
    retry_after: Duration,
    requests: Arc<Counter>,
    failovers: Arc<Counter>,
    metrics: Arc<ComponentMetrics>,
}

/// Statuses that say "this node cannot serve now", not "the cluster refuses".
fn node_unavailable(status: u16) -> bool {
    matches!(status, 502..=504)
}

impl Endpoints {
    pub(super) fn new(
        list: Vec<Endpoint>,
        auth: String,
        gzip: bool,
        timeout: Duration,
        retry_after: Duration,
        metrics: &Arc<ComponentMetrics>,
    ) -> Self {
        Self {
            list,
            current: 0,
            auth,
            gzip,
            timeout,
            retry_after,
            requests: metrics.counter("requests"),
            failovers: metrics.counter("endpoint_failovers"),
            metrics: Arc::clone(metrics),
        }
    }

    /// The order to try endpoints in: from the current one, those that are
    /// up; if none is, all of them.
    fn order(&self) -> Vec<usize> {
        let now = Instant::now();
        let n = self.list.len();
        let all: Vec<usize> = (0..n).map(|i| (self.current + i) % n).collect();
        let up: Vec<usize> =
            all.iter().copied().filter(|&i| self.list[i].down_until.is_none_or(|t| t <= now)).collect();
        if up.is_empty() {
            all
        } else {
            up
        }
    }

    /// The request's bytes for `ep`: head and (gzipped) body.
    fn encode(&self, ep: &Endpoint, req: &Request<'_>, gz: Option<&[u8]>) -> Vec<u8> {
        let base = ep.uri.target.trim_end_matches('/');
        let body = gz.unwrap_or(req.body);
        let mut out = Vec::with_capacity(body.len() + 256);
        let _ = write!(
            out,
            "{} {base}{} HTTP/1.1\r\nHost: {}\r\nUser-Agent: sluice/{}\r\nContent-Type: {}\r\n{}",
            req.method,
            req.path,
            ep.uri.host_header,
            env!("CARGO_PKG_VERSION"),
            req.content_type,
            self.auth
        );
        if gz.is_some() {
            out.extend_from_slice(b"Content-Encoding: gzip\r\n");
        }
        let _ = write!(out, "Content-Length: {}\r\n\r\n", body.len());
        out.extend_from_slice(body);
        out
    }

    /// Sends `req`, failing over between endpoints; returns the answering
    /// endpoint's URL for `req.path` and its response. `Err` when every
    /// endpoint failed, naming each failure.
    pub(super) async fn send(&mut self, req: &Request<'_>, max_body: usize) -> Result<(String, Response), String> {
        let gz = if self.gzip && req.compress && !req.body.is_empty() { Some(gzip(req.body)?) } else { None };
        let mut failures = Vec::new();
        for (tried, i) in self.order().into_iter().enumerate() {
            if tried > 0 {
                self.failovers.inc();
            }
            let bytes = self.encode(&self.list[i], req, gz.as_deref());
            let ep = &mut self.list[i];
            let url = format!("{}{}", ep.uri.url().trim_end_matches('/'), req.path);
            let attempt = ep.conn.exchange(
                &ep.uri.connect,
                ep.tls.as_ref(),
                &bytes,
                max_body,
                &self.requests,
                &self.metrics.bytes_out,
            );
            let failed = match tokio::time::timeout(self.timeout, attempt).await {
                Ok(Ok(resp)) if !node_unavailable(resp.status) => {
                    ep.down_until = None;
                    self.current = i;
                    return Ok((url, resp));
                }
                Ok(Ok(resp)) => format!("HTTP {}: {}", resp.status, snippet(&resp.body)),
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no response within {:?}", self.timeout),
            };
            ep.conn.reset();
            ep.down_until = Some(Instant::now() + self.retry_after);
            tracing::warn!(sink = %self.metrics.id, endpoint = %url, error = %failed, retry_in = ?self.retry_after, "endpoint failed; marked down");
            failures.push(format!("{} {url}: {failed}", req.method));
        }
        Err(failures.join("; "))
    }
}

/// The first 300 bytes of a body, for messages.
pub(super) fn snippet(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned()
}

/// `body` gzipped at the fastest level (the sink's CPU matters more than a
/// few percent of bytes on the wire).
fn gzip(body: &[u8]) -> Result<Vec<u8>, String> {
    let mut enc = flate2::write::GzEncoder::new(Vec::with_capacity(body.len() / 4), flate2::Compression::fast());
    enc.write_all(body).and_then(|()| enc.finish()).map_err(|e| format!("gzip: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn gzip_round_trips() {
        let body = b"{\"create\":{}}\n{\"message\":\"m\"}\n".repeat(100);
        let gz = gzip(&body).unwrap();
        assert!(gz.len() < body.len() / 4);
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(gz.as_slice()).read_to_end(&mut out).unwrap();
        assert_eq!(out, body);
    }
}
