//! Tests of the `http` component: the test server and requests here,
//! ndjson, lines, limits, handshake and config here; `_bulk` in
//! [`bulk`], ingest authentication in [`auth`].

use super::*;
use crate::testkit::{build_source, source_context, Capture};
use sluice_core::component::{Closed, Output};
use sluice_core::metrics::ComponentMetrics;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

mod auth;
mod bulk;

struct Server {
    addr: SocketAddr,
    cap: Arc<Capture>,
    metrics: Arc<ComponentMetrics>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), BoxError>>,
}

impl Server {
    async fn start(extra: &str) -> Self {
        Self::start_with(extra, None).await
    }

    /// Starts the source on a free port; `out` replaces the capture as the queue.
    async fn start_with(extra: &str, out: Option<Arc<dyn Output>>) -> Self {
        Self::start_in(extra, out, None).await
    }

    /// ... with `data_dir` as the node's data directory.
    async fn start_in(extra: &str, out: Option<Arc<dyn Output>>, data_dir: Option<&std::path::Path>) -> Self {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        let body = format!("address = \"{addr}\"\n{extra}\n{}", tokens_for(extra));
        let src = match data_dir {
            Some(d) => crate::testkit::build_source_in(&SPEC, &body, d),
            None => build_source(&SPEC, &body),
        }
        .unwrap();
        let cap = Arc::new(Capture::default());
        let (mut cx, shutdown, metrics) = source_context(Arc::clone(&cap));
        if let Some(out) = out {
            cx.out = out;
        }
        let task = tokio::spawn(src.run(cx));
        for _ in 0..500 {
            if TcpStream::connect(addr).await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Self { addr, cap, metrics, shutdown, task }
    }

    async fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        request(self.addr, method, path, headers, body).await
    }

    fn events(&self) -> Vec<Event> {
        self.cap.events.lock().clone()
    }

    fn counter(&self, name: &'static str) -> u64 {
        self.metrics.counter(name).get()
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap().unwrap();
    }
}

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not json ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

/// The ingest token every test server accepts (group `test`).
const TOKEN: &str = "test-ingest-token-0123456789";

/// The `tokens` table a test server gets, unless `extra` configures auth itself.
fn tokens_for(extra: &str) -> String {
    if extra.contains("auth =") || extra.contains("[tokens") {
        String::new()
    } else {
        format!("[tokens.test]\ntoken = \"{TOKEN}\"\ngroup = \"test\"\n")
    }
}

/// A hand-written HTTP/1.1 request on a fresh connection (`Connection:
/// close`), with `Authorization: Bearer TOKEN` unless `headers` names an
/// `Authorization` (an empty one is left out).
async fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")) {
        head.push_str(&format!("Authorization: Bearer {TOKEN}\r\n"));
    }
    for (k, v) in headers.iter().filter(|(_, v)| !v.is_empty()) {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("response has a header block");
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked")) {
        let mut out = Vec::new();
        let mut rest = &body[..];
        loop {
            let nl = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let n = usize::from_str_radix(std::str::from_utf8(&rest[..nl]).unwrap().trim(), 16).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&rest[nl + 2..nl + 2 + n]);
            rest = &rest[nl + 2 + n + 2..];
        }
        body = out;
    }
    Reply { status, headers, body }
}

fn str_field<'a>(e: &'a Event, k: &str) -> Option<&'a str> {
    e.fields().get(&k).and_then(|v| v.as_str())
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

#[tokio::test]
async fn ndjson_post_yields_exactly_one_event_per_line() {
    let srv = Server::start("").await;
    let mut body = String::new();
    for i in 0..100 {
        body.push_str(&format!("{{\"i\":{i},\"msg\":\"line {i}\"}}\r\n"));
    }
    body.push_str("\nnot json at all\n{\"i\":100}");
    let r = srv.request("POST", "/ndjson", &[("Content-Type", "application/x-ndjson")], body.as_bytes()).await;
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json(), serde_json::json!({"accepted": 102, "failed": 1}));
    assert_eq!(r.header("x-elastic-product"), Some("Elasticsearch"));
    let events = srv.events();
    assert_eq!(events.len(), 102);
    for (i, e) in events[..100].iter().enumerate() {
        assert_eq!(e.fields().get(&"i").and_then(|v| v.as_i64()), Some(i as i64));
        assert_eq!(str_field(e, "msg"), Some(format!("line {i}").as_str()));
        assert!(e.source.starts_with("http:127.0.0.1:"), "{}", e.source);
        assert!(!e.has_tag("_jsonparsefailure"));
    }
    assert!(events[100].has_tag("_jsonparsefailure"));
    assert_eq!(events[100].message(), Some("not json at all"));
    assert_eq!(events[101].fields().get(&"i").and_then(|v| v.as_i64()), Some(100));
    assert_eq!(srv.metrics.events_failed.get(), 1);
    assert_eq!(srv.metrics.events_in.get(), 102);
    assert_eq!(srv.metrics.events_out.get(), 102);
    assert_eq!(srv.metrics.bytes_in.get(), body.len() as u64);
    // POST / is the same endpoint.
    let r = srv.request("POST", "/", &[], b"{\"i\":7}\n").await;
    assert_eq!(r.json(), serde_json::json!({"accepted": 1, "failed": 0}));
    assert_eq!(srv.events().len(), 103);
    srv.stop().await;
}

#[tokio::test]
async fn lines_format_cuts_and_tags_oversized_lines() {
    let srv = Server::start("format = \"lines\"\nmax_line_bytes = 16\n").await;
    let long = "x".repeat(40);
    let body = format!("short one\n{long}\n{{\"not\":\"parsed\"}}");
    let r = srv.request("POST", "/", &[], body.as_bytes()).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), serde_json::json!({"accepted": 3, "failed": 1}));
    let events = srv.events();
    assert_eq!(events.len(), 3);
    assert_eq!(events[0].message(), Some("short one"));
    assert_eq!(events[1].message(), Some("x".repeat(16).as_str()));
    assert!(events[1].has_tag("_oversized"));
    assert_eq!(events[2].message(), Some("{\"not\":\"parsed\"}"));
    assert_eq!(srv.counter("oversized_frames"), 1);
    assert_eq!(srv.metrics.events_failed.get(), 0);
    srv.stop().await;
}

#[tokio::test]
async fn oversized_body_is_413_and_nothing_is_queued() {
    let srv = Server::start("max_body_bytes = 1024\n").await;
    let line = "{\"pad\":\"0123456789012345678901234567890123456789\"}\n";
    let body = line.repeat(4096 / line.len() + 1);
    let r = srv.request("POST", "/ndjson", &[], body.as_bytes()).await;
    assert_eq!(r.status, 413);
    let v = r.json();
    assert_eq!(v["error"]["type"], "content_too_long_exception");
    assert_eq!(v["status"], 413);
    assert!(v["error"]["reason"].as_str().unwrap().contains("max_body_bytes (1024 bytes)"), "{v}");
    let r = srv.request("POST", "/_bulk", &[], body.as_bytes()).await;
    assert_eq!(r.status, 413);
    assert_eq!(srv.counter("body_too_large"), 2);
    // Exactly at the limit is accepted.
    let exact = format!("{}\n", "a".repeat(1023));
    let r = srv.request("POST", "/ndjson", &[], exact.as_bytes()).await;
    assert_eq!(r.status, 200);
    assert_eq!(srv.events().len(), 1);
    srv.stop().await;
}

#[tokio::test]
async fn gzip_bodies_are_decoded_and_limited_after_decoding() {
    let srv = Server::start("max_body_bytes = 4096\n").await;
    let body: String = (0..50).map(|i| format!("{{\"i\":{i}}}\n")).collect();
    let r = srv.request("POST", "/ndjson", &[("Content-Encoding", "gzip")], &gzip(body.as_bytes())).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["accepted"], 50);
    // 100 KiB of zeros compresses far below the limit but decodes above it.
    let bomb = gzip(&vec![b'0'; 100 << 10]);
    assert!(bomb.len() < 4096);
    let r = srv.request("POST", "/ndjson", &[("Content-Encoding", "gzip")], &bomb).await;
    assert_eq!(r.status, 413);
    let r = srv.request("POST", "/ndjson", &[("Content-Encoding", "gzip")], b"not gzip").await;
    assert_eq!(r.status, 400);
    let r = srv.request("POST", "/ndjson", &[("Content-Encoding", "br")], b"x").await;
    assert_eq!(r.status, 415);
    assert_eq!(srv.events().len(), 50);
    assert_eq!(srv.counter("body_too_large"), 1);
    assert_eq!(srv.counter("bad_requests"), 2);
    srv.stop().await;
}

#[tokio::test]
async fn handshake_endpoints_look_like_elasticsearch() {
    let srv = Server::start("").await;
    let r = srv.request("GET", "/", &[], b"").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-elastic-product"), Some("Elasticsearch"));
    let v = r.json();
    assert_eq!(v["version"]["number"], "8.11.0");
    assert_eq!(v["tagline"], "You Know, for Search");
    let r = srv.request("HEAD", "/", &[], b"").await;
    assert_eq!((r.status, r.header("x-elastic-product")), (200, Some("Elasticsearch")));
    assert_eq!(srv.request("GET", "/_license", &[], b"").await.json()["license"]["status"], "active");
    assert_eq!(srv.request("GET", "/_xpack", &[], b"").await.json()["license"]["type"], "basic");
    assert_eq!(srv.request("GET", "/_cluster/health", &[], b"").await.json()["status"], "green");
    let nodes = srv.request("GET", "/_nodes/http", &[], b"").await.json();
    assert_eq!(nodes["nodes"].as_object().unwrap().len(), 1);
    for path in ["/_index_template/logs", "/_ilm/policy/logs", "/_template/logs"] {
        let r = srv.request("GET", path, &[], b"").await;
        assert_eq!((r.status, r.header("x-elastic-product")), (404, Some("Elasticsearch")), "{path}");
        let r = srv.request("PUT", path, &[("Content-Type", "application/json")], b"{}").await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.json(), serde_json::json!({"acknowledged": true}));
    }
    assert_eq!(srv.request("HEAD", "/logs-2024", &[], b"").await.status, 200);
    let r = srv.request("PUT", "/%3Clogs-%7Bnow%2Fd%7D-000001%3E", &[], b"{}").await;
    assert_eq!(r.json()["index"], "<logs-{now/d}-000001>");
    let r = srv.request("DELETE", "/logs-2024", &[], b"").await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "illegal_argument_exception");
    assert!(srv.events().is_empty());
    srv.stop().await;
}

#[tokio::test]
async fn bulk_false_serves_only_plain_ingest() {
    let srv = Server::start("bulk = false\n").await;
    let r = srv.request("POST", "/_bulk", &[], b"{\"index\":{\"_index\":\"a\"}}\n{\"a\":1}\n").await;
    assert_eq!(r.status, 404);
    assert_eq!(srv.request("GET", "/_license", &[], b"").await.status, 404);
    assert_eq!(srv.request("POST", "/ndjson", &[], b"{\"a\":1}\n").await.status, 200);
    assert_eq!(srv.events().len(), 1);
    srv.stop().await;
}

struct ClosedQueue;

#[async_trait]
impl Output for ClosedQueue {
    async fn send(&self, _events: Vec<Event>) -> Result<(), Closed> {
        Err(Closed)
    }
}

#[tokio::test]
async fn closed_queue_answers_503() {
    let srv = Server::start_with("", Some(Arc::new(ClosedQueue))).await;
    let r = srv.request("POST", "/ndjson", &[], b"{\"a\":1}\n").await;
    assert_eq!(r.status, 503);
    assert_eq!(r.json()["status"], 503);
    let r = srv.request("POST", "/_bulk", &[], b"{\"index\":{\"_index\":\"a\"}}\n{\"a\":1}\n").await;
    assert_eq!(r.status, 503);
    assert_eq!(srv.metrics.events_out.get(), 0);
    srv.stop().await;
}

#[tokio::test]
async fn address_api_mounts_on_the_api_listener_while_running() {
    let mounts = Arc::new(Mounts::new("127.0.0.1:8080"));
    let mut bcx = BuildContext::for_test("source", "http");
    bcx.path = "pipelines.main.sources.http".into();
    bcx.mounts = Arc::clone(&mounts);
    let src = (SPEC.build)(toml::from_str(&format!("address = \"api\"\n{}", tokens_for(""))).unwrap(), &bcx).unwrap();
    let cap = Arc::new(Capture::default());
    let (cx, shutdown, _metrics) = source_context(Arc::clone(&cap));
    let task = tokio::spawn(src.run(cx));
    while mounts.snapshot().1.is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (_, list) = mounts.snapshot();
    assert_eq!(list[0].owner, "pipelines.main.sources.http");
    assert_eq!(list[0].paths.len(), MOUNT_PATHS.len());
    // Serve the mounted router the way the API server does, on a port of its own.
    let router = list[0].router.downcast_ref::<Router>().unwrap().clone();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    let r = request(addr, "POST", "/ndjson", &[], b"{\"a\":1}\n{\"a\":2}\n").await;
    assert_eq!((r.status, r.json()["accepted"].as_u64()), (200, Some(2)));
    let r = request(addr, "POST", "/logs/_bulk", &[], b"{\"index\":{}}\n{\"a\":3}\n").await;
    assert_eq!((r.status, r.json()["errors"].as_bool()), (200, Some(false)));
    assert_eq!(cap.events.lock().len(), 3);
    let r = request(addr, "GET", "/_nodes/_local", &[], b"").await;
    assert_eq!(r.json()["nodes"]["sluice"]["http"]["publish_address"], "127.0.0.1:8080");
    shutdown.cancel();
    task.await.unwrap().unwrap();
    assert!(mounts.snapshot().1.is_empty(), "stopping the source unmounts it");
    server.abort();

    let off = Arc::new(Mounts::disabled());
    bcx.mounts = off;
    let e =
        (SPEC.build)(toml::from_str(&format!("address = \"api\"\n{}", tokens_for(""))).unwrap(), &bcx).err().unwrap();
    assert_eq!(
        e.to_string(),
        "pipelines.main.sources.http.address: \"api\" needs the API server, but [api] address is empty"
    );
}

#[test]
fn bad_config_names_the_key() {
    assert!(build_source(&SPEC, SPEC.example).is_ok());
    let e = build_source(&SPEC, "address = \"127.0.0.1:0\"\nmax_body_bytes = 0").err().unwrap();
    assert_eq!(e.to_string(), "test.http.max_body_bytes: must be greater than 0");
    let e = build_source(&SPEC, "address = \"nowhere\"").err().unwrap();
    assert!(e.to_string().starts_with("test.http.address: invalid socket address"), "{e}");
    let e = build_source(&SPEC, "address = \"127.0.0.1:0\"").err().unwrap();
    assert!(e.to_string().starts_with("test.http.tokens: at least one token is needed"), "{e}");
    let e =
        build_source(&SPEC, "address = \"127.0.0.1:0\"\n[tokens.a]\ntoken = \"short\"\ngroup = \"g\"").err().unwrap();
    assert_eq!(e.to_string(), "test.http.tokens.a.token: the token must be at least 16 characters");
    let e = build_source(
        &SPEC,
        "address = \"127.0.0.1:0\"\nauth = \"none\"\n[tokens.a]\ntoken = \"0123456789abcdef\"\ngroup = \"g\"",
    )
    .err()
    .unwrap();
    assert_eq!(e.to_string(), "test.http.tokens: auth = \"none\" takes no tokens");
    let e = build_source(&SPEC, "address = \"127.0.0.1:0\"\nformat = \"xml\"").err().unwrap();
    assert!(e.to_string().starts_with("test.http.format"), "{e}");
    let e = build_source(&SPEC, "address = \"127.0.0.1:0\"\npath = \"/x\"").err().unwrap();
    assert!(e.to_string().contains("unknown field `path`"), "{e}");
}

#[test]
fn helpers() {
    assert_eq!(percent_decode("a%2Fb%zz%4"), "a/b%zz%4");
    let ids = IdGenerator::new();
    let a: Vec<String> = (0..1000).map(|_| ids.next()).collect();
    let set: std::collections::HashSet<&String> = a.iter().collect();
    assert_eq!(set.len(), 1000);
    assert!(a
        .iter()
        .all(|id| id.len() == 20 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')));
}
