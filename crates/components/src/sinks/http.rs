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
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration};
use sluice_core::metrics::{ComponentMetrics, Counter};
use sluice_core::Event;
use tokio::net::TcpStream;

use crate::http_client::{bad_value, is_token, parse_uri, read_response, ReadError, Response, Uri};
use crate::net::{peer_closed, Stream};
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
    #[serde(default = "default_timeout")]
    timeout: HumanDuration,
    /// Largest request body; bigger batches are split.
    #[serde(default = "default_max_batch")]
    max_batch_bytes: ByteSize,
    /// `none` only, for now.
    #[serde(default = "default_compression")]
    #[allow(dead_code)]
    compression: Compression,
    /// Drop (and count) requests answered with a 4xx other than 429 instead
    /// of retrying them forever.
    #[serde(default)]
    drop_on_4xx: bool,
}

fn default_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(30))
}
fn default_max_batch() -> ByteSize {
    ByteSize(10 << 20)
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
    let uri = parse_uri(&c.uri).map_err(|m| cx.error("uri", m))?;
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
    if c.timeout.0.is_zero() {
        return Err(cx.error("timeout", "must be greater than 0"));
    }
    if c.max_batch_bytes.0 == 0 {
        return Err(cx.error("max_batch_bytes", "must be greater than 0"));
    }
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: sluice/{}\r\nContent-Type: application/x-ndjson\r\n",
        uri.target,
        uri.host_header,
        env!("CARGO_PKG_VERSION")
    );
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
        conn: None,
        body: Vec::new(),
        ends: Vec::new(),
        req: Vec::new(),
        requests: m.counter("requests"),
        rejected_batches: m.counter("rejected_batches"),
        rejected_events: m.counter("rejected_events"),
        metrics: Arc::clone(m),
    }))
}

struct Conn {
    stream: Stream,
    /// Bytes read past the previous response.
    rbuf: Vec<u8>,
}

struct HttpSink {
    uri: Uri,
    /// Set for `https://`.
    tls: Option<(tokio_rustls::TlsConnector, tokio_rustls::rustls::pki_types::ServerName<'static>)>,
    /// Request line and fixed headers, each ending with CRLF.
    head: Vec<u8>,
    timeout: Duration,
    max_batch: usize,
    drop_on_4xx: bool,
    conn: Option<Conn>,
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
    /// Sends `self.req` and reads the response, on the kept connection when
    /// it is still open, else on a new one.
    async fn exchange(&mut self) -> Result<Response, String> {
        if self.conn.as_ref().is_some_and(|c| peer_closed(c.stream.tcp())) {
            self.conn = None;
        }
        loop {
            let (mut conn, reused) = match self.conn.take() {
                Some(c) => (c, true),
                None => {
                    let addr = &self.uri.connect;
                    let stream = TcpStream::connect(addr).await.map_err(|e| format!("connect {addr}: {e}"))?;
                    // Each request is one write, so Nagle would only delay its
                    // last segment behind the server's delayed ACK.
                    stream.set_nodelay(true).map_err(|e| format!("set TCP_NODELAY: {e}"))?;
                    let stream = match &self.tls {
                        None => Stream::Plain(stream),
                        Some((conn, name)) => Stream::Tls(Box::new(
                            conn.connect(name.clone(), stream)
                                .await
                                .map_err(|e| format!("tls handshake with {addr}: {e}"))?,
                        )),
                    };
                    (Conn { stream, rbuf: Vec::new() }, false)
                }
            };
            self.requests.inc();
            if let Err(e) = conn.stream.write_all(&self.req).await {
                if reused {
                    continue;
                }
                return Err(format!("sending the request: {e}"));
            }
            self.metrics.bytes_out.add(self.req.len() as u64);
            match read_response(&mut conn.stream, &mut conn.rbuf, BODY_SNIPPET).await {
                Ok(resp) => {
                    if resp.keep_alive {
                        self.conn = Some(conn);
                    }
                    return Ok(resp);
                }
                Err(ReadError::NothingReceived(_)) if reused => continue,
                Err(e) => return Err(e.message()),
            }
        }
    }

    /// POSTs `self.body[start..end]` holding `events` events.
    async fn post(&mut self, start: usize, end: usize, events: usize) -> Result<(), BoxError> {
        self.req.clear();
        self.req.extend_from_slice(&self.head);
        self.req.extend_from_slice(format!("Content-Length: {}\r\n\r\n", end - start).as_bytes());
        self.req.extend_from_slice(&self.body[start..end]);
        let scheme = if self.uri.tls { "https" } else { "http" };
        let target = format!("{scheme}://{}{}", self.uri.host_header, self.uri.target);
        let resp = match tokio::time::timeout(self.timeout, self.exchange()).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                self.conn = None;
                return Err(format!("POST {target}: {e}").into());
            }
            Err(_) => {
                self.conn = None;
                return Err(format!("POST {target}: no response within {:?}", self.timeout).into());
            }
        };
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
mod tests {
    use super::*;
    use crate::http_client::find;
    use crate::testkit::build_sink;
    use axum::extract::State;
    use axum::http::{HeaderMap, StatusCode};
    use parking_lot::Mutex;
    use sluice_core::codec::to_json_string;
    use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    #[derive(Default)]
    struct Server {
        /// Status to answer with; 0 means 200.
        status: AtomicU16,
        /// Lines of each request, in arrival order.
        requests: Mutex<Vec<Vec<String>>>,
        /// Lines of accepted (2xx) requests.
        accepted: Mutex<Vec<String>>,
        headers: Mutex<Vec<HeaderMap>>,
    }

    async fn ingest(State(st): State<Arc<Server>>, headers: HeaderMap, body: String) -> (StatusCode, String) {
        let lines: Vec<String> = body.lines().map(String::from).collect();
        st.requests.lock().push(lines.clone());
        st.headers.lock().push(headers);
        let status = match st.status.load(Ordering::SeqCst) {
            0 => 200,
            s => s,
        };
        if status / 100 == 2 {
            st.accepted.lock().extend(lines);
        }
        let code = StatusCode::from_u16(status).unwrap();
        (code, if status == 400 { format!("bad field in line 1: {}", "x".repeat(300)) } else { "ok".into() })
    }

    async fn server() -> (Arc<Server>, String) {
        let st = Arc::new(Server::default());
        let app = axum::Router::new().route("/ingest", axum::routing::post(ingest)).with_state(Arc::clone(&st));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (st, format!("http://{addr}/ingest"))
    }

    fn events(n: usize) -> Vec<Event> {
        (0..n)
            .map(|i| {
                let mut e = Event::from_message(format!("event {i:03}"));
                e.timestamp = 1_700_000_000_000_000_000;
                e
            })
            .collect()
    }

    fn jsonl(evs: &[Event]) -> Vec<String> {
        evs.iter().map(to_json_string).collect()
    }

    #[tokio::test]
    async fn posts_ndjson_with_auth_and_headers() {
        let (st, uri) = server().await;
        let cx = BuildContext::for_test("sink", "http");
        let v: toml::Value =
            toml::from_str(&format!("uri = \"{uri}\"\nauth_token = \"s3cret\"\nheaders = {{ X-Tenant = \"acme\" }}"))
                .unwrap();
        let mut s = (SPEC.build)(v, &cx).unwrap();
        let evs = events(30);
        for chunk in evs.chunks(10) {
            s.write(chunk).await.unwrap();
        }
        assert_eq!(st.requests.lock().len(), 3);
        assert_eq!(*st.accepted.lock(), jsonl(&evs));
        for h in st.headers.lock().iter() {
            assert_eq!(h.get("authorization").unwrap(), "Bearer s3cret");
            assert_eq!(h.get("x-tenant").unwrap(), "acme");
            assert_eq!(h.get("content-type").unwrap(), "application/x-ndjson");
        }
        let body_bytes: u64 = jsonl(&evs).iter().map(|l| l.len() as u64 + 1).sum();
        let sent = cx.metrics.bytes_out.get();
        assert!(sent > body_bytes && sent < body_bytes + 3 * 400, "{sent} vs {body_bytes}");
        assert_eq!(cx.metrics.counter("requests").get(), 3);
    }

    #[tokio::test]
    async fn splits_batches_by_max_batch_bytes() {
        let (st, uri) = server().await;
        let evs = events(10);
        let line = to_json_string(&evs[0]).len() + 1;
        // Room for three lines and a half.
        let mut s = build_sink(&SPEC, &format!("uri = \"{uri}\"\nmax_batch_bytes = {}", line * 7 / 2)).unwrap();
        s.write(&evs).await.unwrap();
        let sizes: Vec<usize> = st.requests.lock().iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![3, 3, 3, 1]);
        assert_eq!(*st.accepted.lock(), jsonl(&evs));

        // An event larger than the limit goes alone.
        let (st, uri) = server().await;
        let mut s = build_sink(&SPEC, &format!("uri = \"{uri}\"\nmax_batch_bytes = 10")).unwrap();
        s.write(&evs[..3]).await.unwrap();
        let sizes: Vec<usize> = st.requests.lock().iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![1, 1, 1]);
    }

    #[tokio::test]
    async fn server_errors_are_retried_until_the_server_recovers() {
        let (st, uri) = server().await;
        let mut s = build_sink(&SPEC, &format!("uri = \"{uri}\"")).unwrap();
        let evs = events(7);
        st.status.store(503, Ordering::SeqCst);
        let err = s.write(&evs).await.unwrap_err();
        assert!(err.to_string().contains("HTTP 503"), "{err}");
        st.status.store(429, Ordering::SeqCst);
        let err = s.write(&evs).await.unwrap_err();
        assert!(err.to_string().contains("HTTP 429"), "{err}");
        assert!(st.accepted.lock().is_empty());
        st.status.store(0, Ordering::SeqCst);
        s.write(&evs).await.unwrap();
        assert_eq!(st.requests.lock().len(), 3);
        assert_eq!(*st.accepted.lock(), jsonl(&evs));
    }

    #[tokio::test]
    async fn client_errors_block_by_default_and_are_dropped_only_when_configured() {
        let (st, uri) = server().await;
        st.status.store(400, Ordering::SeqCst);
        let evs = events(5);

        let cx = BuildContext::for_test("sink", "http");
        let mut s = (SPEC.build)(toml::from_str(&format!("uri = \"{uri}\"")).unwrap(), &cx).unwrap();
        let err = s.write(&evs).await.unwrap_err().to_string();
        assert!(err.contains("HTTP 400") && err.contains("bad field in line 1"), "{err}");
        let body = err.split_once("drop_on_4xx = true): ").unwrap().1;
        assert_eq!(body.len(), BODY_SNIPPET, "{body}");
        assert!(s.write(&evs).await.is_err());
        assert_eq!(cx.metrics.counter("rejected_batches").get(), 2);
        assert_eq!(cx.metrics.counter("rejected_events").get(), 0);

        let cx = BuildContext::for_test("sink", "http");
        let line = to_json_string(&evs[0]).len() + 1;
        let v =
            toml::from_str(&format!("uri = \"{uri}\"\ndrop_on_4xx = true\nmax_batch_bytes = {}", line * 2)).unwrap();
        let mut s = (SPEC.build)(v, &cx).unwrap();
        s.write(&evs).await.unwrap();
        // Two lines per request: 2 + 2 + 1, each rejected and dropped.
        let sizes: Vec<usize> = st.requests.lock()[2..].iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![2, 2, 1]);
        assert_eq!(cx.metrics.counter("rejected_batches").get(), 3);
        assert_eq!(cx.metrics.counter("rejected_events").get(), 5);
        assert!(st.accepted.lock().is_empty());
    }

    #[tokio::test]
    async fn connection_refused_is_an_error() {
        let addr = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
        let mut s = build_sink(&SPEC, &format!("uri = \"http://{addr}/\"")).unwrap();
        let err = s.write(&events(1)).await.unwrap_err();
        assert!(err.to_string().contains("connect"), "{err}");
    }

    #[tokio::test]
    async fn a_server_that_never_answers_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 65536];
            while s.read(&mut buf).await.is_ok_and(|n| n > 0) {}
        });
        let mut s = build_sink(&SPEC, &format!("uri = \"http://{addr}/\"\ntimeout = \"200ms\"")).unwrap();
        let err = s.write(&events(3)).await.unwrap_err();
        assert!(err.to_string().contains("no response within 200ms"), "{err}");
        server.abort();
    }

    /// A raw server answering with chunked bodies and closing every
    /// connection after two requests without saying so.
    #[tokio::test]
    async fn keep_alive_chunked_responses_and_silently_closed_connections() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let conns = Arc::new(AtomicUsize::new(0));
        let reqs = Arc::new(AtomicUsize::new(0));
        let (c2, r2) = (Arc::clone(&conns), Arc::clone(&reqs));
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else { return };
                c2.fetch_add(1, Ordering::SeqCst);
                let mut buf = Vec::new();
                for _ in 0..2 {
                    let head_end = loop {
                        if let Some(i) = find(&buf, b"\r\n\r\n") {
                            break i;
                        }
                        let mut tmp = [0u8; 4096];
                        let n = s.read(&mut tmp).await.unwrap();
                        assert!(n > 0);
                        buf.extend_from_slice(&tmp[..n]);
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
                    let len: usize =
                        head.lines().find_map(|l| l.strip_prefix("content-length: ")).unwrap().parse().unwrap();
                    while buf.len() < head_end + 4 + len {
                        let mut tmp = [0u8; 4096];
                        let n = s.read(&mut tmp).await.unwrap();
                        buf.extend_from_slice(&tmp[..n]);
                    }
                    buf.drain(..head_end + 4 + len);
                    r2.fetch_add(1, Ordering::SeqCst);
                    s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=y\r\nok\r\n0\r\n\r\n")
                        .await
                        .unwrap();
                }
            }
        });
        let mut s = build_sink(&SPEC, &format!("uri = \"http://{addr}/x\"")).unwrap();
        for _ in 0..5 {
            s.write(&events(2)).await.unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(reqs.load(Ordering::SeqCst), 5);
        assert_eq!(conns.load(Ordering::SeqCst), 3);
    }

    /// An https endpoint with a self-signed certificate: the sink verifies it
    /// against `tls.ca`, POSTs over TLS on one kept connection, and refuses a
    /// server whose certificate another CA signed.
    #[tokio::test]
    async fn https_posts_over_verified_tls() {
        use tokio::io::AsyncReadExt;
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = crate::tls::self_signed(dir.path());
        let acceptor = crate::tls::acceptor(&crate::tls::ServerTls { cert: cert.clone(), key }).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            // One connection, two requests on it; returns the bodies.
            let (tcp, _) = listener.accept().await.unwrap();
            let mut s = acceptor.accept(tcp).await.unwrap();
            let mut bodies = Vec::new();
            let mut buf = Vec::new();
            while bodies.len() < 2 {
                let mut chunk = [0u8; 4096];
                let n = s.read(&mut chunk).await.unwrap();
                assert!(n > 0, "client closed early");
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf).to_string();
                let Some(end) = text.find("\r\n\r\n") else { continue };
                let len: usize =
                    text[..end].lines().find_map(|l| l.strip_prefix("Content-Length: ")).unwrap().parse().unwrap();
                if buf.len() < end + 4 + len {
                    continue;
                }
                bodies.push(String::from_utf8(buf[end + 4..end + 4 + len].to_vec()).unwrap());
                buf.drain(..end + 4 + len);
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").await.unwrap();
                s.flush().await.unwrap();
            }
            bodies
        });
        let body = format!("uri = \"https://localhost:{}/in\"\ntls = {{ ca = \"{}\" }}", addr.port(), cert.display());
        let mut sink = build_sink(&SPEC, &body).unwrap();
        sink.write(&[Event::from_message("one"), Event::from_message("two")]).await.unwrap();
        sink.write(&[Event::from_message("three")]).await.unwrap();
        let bodies = server.await.unwrap();
        let messages: Vec<Vec<String>> = bodies
            .iter()
            .map(|b| {
                b.lines()
                    .map(|l| {
                        serde_json::from_str::<serde_json::Value>(l).unwrap()["message"].as_str().unwrap().to_string()
                    })
                    .collect()
            })
            .collect();
        assert_eq!(messages, vec![vec!["one".to_string(), "two".into()], vec!["three".into()]]);

        // A certificate the configured CA did not sign: the handshake fails.
        let other = tempfile::tempdir().unwrap();
        let (other_cert, _) = crate::tls::self_signed(other.path());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let third = tempfile::tempdir().unwrap();
        let (c2, k2) = crate::tls::self_signed(third.path());
        let acceptor = crate::tls::acceptor(&crate::tls::ServerTls { cert: c2, key: k2 }).unwrap();
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let _ = acceptor.accept(tcp).await;
        });
        let body =
            format!("uri = \"https://localhost:{}/in\"\ntls = {{ ca = \"{}\" }}", addr.port(), other_cert.display());
        let mut sink = build_sink(&SPEC, &body).unwrap();
        let err = sink.write(&[Event::from_message("x")]).await.unwrap_err().to_string();
        assert!(err.contains(&format!("tls handshake with localhost:{}", addr.port())), "{err}");
    }

    #[test]
    fn config_errors_name_the_key() {
        let err = |body: &str| build_sink(&SPEC, body).err().unwrap().to_string();
        let e = err("uri = \"https://logs.example.com/\"");
        assert!(e.starts_with("test.http.tls: an https:// uri needs tls = { ca = "), "{e}");
        let e = err("uri = \"http://logs.example.com/\"\ntls = { ca = \"ca.pem\" }");
        assert!(e.starts_with("test.http.tls: only valid with an https:// uri"), "{e}");
        let e = err("uri = \"https://logs.example.com/\"\ntls = { ca = \"/nonexistent.pem\" }");
        assert!(e.starts_with("test.http.tls.ca: cannot read /nonexistent.pem"), "{e}");
        let e = err("auth_token = \"x\"");
        assert!(e.starts_with("test.http: ") && e.contains("missing field `uri`"), "{e}");
        let e = err("uri = \"http://h/\"\nheaders = { Content-Length = \"1\" }");
        assert!(e.starts_with("test.http.headers.Content-Length: "), "{e}");
        let e = err("uri = \"http://h/\"\nauth_token = \"t\"\nheaders = { authorization = \"Basic x\" }");
        assert!(e.starts_with("test.http.headers.authorization: "), "{e}");
        let e = err("uri = \"http://h/\"\nheaders = { \"X-A\" = \"a\\r\\nInjected: 1\" }");
        assert!(e.starts_with("test.http.headers.X-A: "), "{e}");
        let e = err("uri = \"http://h/\"\ncompression = \"gzip\"");
        assert!(e.starts_with("test.http.compression: "), "{e}");
        let e = err("uri = \"http://h/\"\nmax_batch_bytes = 0");
        assert!(e.starts_with("test.http.max_batch_bytes: "), "{e}");
        let e = err("uri = \"http://h/\"\ntimeout = \"0s\"");
        assert!(e.starts_with("test.http.timeout: "), "{e}");
        assert!(build_sink(&SPEC, SPEC.example).is_ok());
    }
}
