//! Tests of the `http` component.

use super::*;
use crate::testkit::{build_source, source_context, Capture};
use sluice_core::component::{Closed, Output};
use sluice_core::metrics::ComponentMetrics;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

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
async fn bulk_reports_every_item_and_queues_only_good_documents() {
    let srv = Server::start("").await;
    let body = concat!(
        "{\"index\":{\"_index\":\"logs-a\",\"_id\":\"id-1\"}}\n",
        "{\"msg\":\"one\",\"@timestamp\":\"2024-01-02T03:04:05Z\"}\n",
        "{\"create\":{}}\n",
        "{\"msg\":\"two\"}\n",
        "{\"delete\":{\"_index\":\"logs-a\",\"_id\":\"gone\"}}\n",
        "{\"index\":{}}\n",
        "not json\n",
        "{\"update\":{\"_id\":\"u\"}}\n",
        "{\"doc\":{\"msg\":\"ignored\"}}\n",
        "{\"index\":{\"_id\":7}}\n",
        "[1,2]\n",
        "{\"frobnicate\":{}}\n",
        "{\"msg\":\"ignored too\"}\n",
        "{\"index\":{\"_index\":\"logs-c\"}}\n",
        "{\"msg\":\"three\",\"_index\":\"overwritten\"}\n",
    );
    let r = srv.request("POST", "/logs-b/_bulk", &[("Content-Type", "application/x-ndjson")], body.as_bytes()).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("x-elastic-product"), Some("Elasticsearch"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["errors"], true);
    assert!(v["took"].is_u64());
    let items = v["items"].as_array().unwrap();
    let shape: Vec<(String, u64)> = items
        .iter()
        .map(|it| {
            let (k, body) = it.as_object().unwrap().iter().next().unwrap();
            (k.clone(), body["status"].as_u64().unwrap())
        })
        .collect();
    let expected = [
        ("index", 201),
        ("create", 201),
        ("delete", 400),
        ("index", 400),
        ("update", 400),
        ("index", 400),
        ("frobnicate", 400),
        ("index", 201),
    ];
    assert_eq!(shape, expected.map(|(k, s)| (k.to_string(), s)).to_vec());
    assert_eq!(
        items[0]["index"],
        serde_json::json!({
            "_index": "logs-a", "_id": "id-1", "_version": 1, "result": "created", "status": 201,
            "_shards": {"total": 1, "successful": 1, "failed": 0}, "_seq_no": 0, "_primary_term": 1
        })
    );
    assert_eq!(items[1]["create"]["_index"], "logs-b");
    let id2 = items[1]["create"]["_id"].as_str().unwrap().to_string();
    assert_eq!(id2.len(), 20);
    assert_eq!(items[1]["create"]["_seq_no"], 1);
    assert_eq!(items[2]["delete"]["error"]["type"], "illegal_argument_exception");
    assert_eq!(items[2]["delete"]["_id"], "gone");
    assert_eq!(items[3]["index"]["error"]["type"], "mapper_parsing_exception");
    assert_eq!(items[3]["index"]["_index"], "logs-b");
    assert_eq!(items[4]["update"]["error"]["type"], "illegal_argument_exception");
    assert_eq!(items[5]["index"]["error"]["type"], "mapper_parsing_exception");
    assert!(items[5]["index"]["error"]["reason"].as_str().unwrap().contains("found array"));
    assert_eq!(items[5]["index"]["_id"], "7");
    let reason = items[6]["frobnicate"]["error"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("Malformed action/metadata line [12],") && reason.contains("[frobnicate]"), "{reason}");
    assert_eq!(items[7]["index"]["_index"], "logs-c");
    let id8 = items[7]["index"]["_id"].as_str().unwrap().to_string();
    assert_ne!(id2, id8);

    let events = srv.events();
    assert_eq!(events.len(), 3);
    let got: Vec<(Option<&str>, Option<&str>, Option<&str>)> =
        events.iter().map(|e| (str_field(e, "msg"), str_field(e, "_index"), str_field(e, "_id"))).collect();
    assert_eq!(
        got,
        vec![
            (Some("one"), Some("logs-a"), Some("id-1")),
            (Some("two"), Some("logs-b"), Some(id2.as_str())),
            (Some("three"), Some("logs-c"), Some(id8.as_str())),
        ]
    );
    assert_eq!(events[0].timestamp, sluice_core::codec::parse_timestamp("2024-01-02T03:04:05Z").unwrap());
    assert_eq!(srv.metrics.events_failed.get(), 2);
    assert_eq!(srv.counter("bulk_item_errors"), 5);
    assert_eq!(srv.metrics.events_in.get(), 3);
    assert_eq!(srv.metrics.events_out.get(), 3);

    // A clean request reports errors: false; PUT works as POST; seq_no goes on.
    let r = srv.request("PUT", "/_bulk", &[], b"{\"create\":{\"_index\":\"x\"}}\n{\"a\":1}\n").await;
    let v = r.json();
    assert_eq!(v["errors"], false);
    assert_eq!(v["items"][0]["create"]["_seq_no"], 3);
    assert_eq!(srv.events().len(), 4);
    // No index anywhere: a per-item error, not a request error.
    let r = srv.request("POST", "/_bulk", &[], b"{\"index\":{}}\n{\"a\":1}\n").await;
    let v = r.json();
    assert_eq!(v["items"][0]["index"]["status"], 400);
    assert_eq!(v["items"][0]["index"]["error"]["type"], "action_request_validation_exception");
    assert_eq!(srv.events().len(), 4);
    srv.stop().await;
}

/// Issue #18 (compatibility): an empty `_id` was stored as `""` (201);
/// `require_alias` was ignored. Elasticsearch refuses the first as a
/// whole request and answers the second per item (sluice has no
/// aliases, so every index named with it is "not an alias").
#[tokio::test]
async fn issue_18_bulk_refuses_an_empty_id_and_honours_require_alias() {
    let srv = Server::start("").await;
    let body = b"{\"index\":{\"_index\":\"a\",\"_id\":\"ok-1\"}}\n{\"n\":1}\n{\"create\":{\"_index\":\"a\",\"_id\":\"\"}}\n{\"n\":2}\n";
    let r = srv.request("POST", "/_bulk", &[], body).await;
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(v["error"]["type"], "action_request_validation_exception", "{v}");
    assert_eq!(v["error"]["reason"], "Validation Failed: 1: if _id is specified it must not be empty;", "{v}");
    assert_eq!(srv.events().len(), 0, "nothing of a refused body is queued");
    assert_eq!(srv.counter("bad_requests"), 1);

    let body = concat!(
        "{\"index\":{\"_index\":\"logs-a\",\"require_alias\":true}}\n{\"n\":1}\n",
        "{\"index\":{\"_index\":\"logs-a\",\"require_alias\":false,\"_id\":\"k\"}}\n{\"n\":2}\n",
    );
    let v = srv.request("POST", "/_bulk", &[], body.as_bytes()).await.json();
    assert_eq!(v["errors"], true);
    assert_eq!(v["items"][0]["index"]["status"], 404, "{v}");
    assert_eq!(v["items"][0]["index"]["error"]["type"], "index_not_found_exception");
    assert_eq!(
        v["items"][0]["index"]["error"]["reason"],
        "no such index [logs-a] and [require_alias] request flag is [true] and [logs-a] is not an alias"
    );
    assert_eq!(v["items"][1]["index"]["status"], 201);
    assert_eq!(v["items"][1]["index"]["_id"], "k", "an explicit _id is kept");
    // The URL flag applies to every action without its own.
    let r = srv.request("POST", "/logs-b/_bulk?require_alias=true", &[], b"{\"create\":{}}\n{\"n\":3}\n").await;
    let v = r.json();
    assert_eq!(v["items"][0]["create"]["status"], 404, "{v}");
    let events = srv.events();
    assert_eq!(events.len(), 1);
    assert_eq!(str_field(&events[0], "_id"), Some("k"));
    srv.stop().await;
}

/// Issue #18 (compatibility): integers beyond 64 bits sent through
/// `_bulk` keep every digit (as a string, ADR 0055), not a rounded float.
/// Issue #18 compatibility: `create` with an `_id` already stored
/// answered 201 and stored a second copy, so a retried bulk request
/// doubled its events. Elasticsearch answers 409 per item; so does
/// sluice now, within the request, across requests and after a restart.
#[tokio::test]
async fn issue_18_bulk_create_with_an_existing_id_is_a_409() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start_in("auth = \"none\"", None, Some(dir.path())).await;
    let first = "{\"create\":{\"_index\":\"logs\",\"_id\":\"a\"}}\n{\"n\":1}\n{\"create\":{\"_index\":\"logs\",\"_id\":\"b\"}}\n{\"n\":2}\n";
    let r = srv.request("POST", "/_bulk", &[], first.as_bytes()).await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["errors"], false, "{v}");
    assert_eq!(v["items"][0]["create"]["status"], 201);
    // The retry of the same body, plus a new create, an index of an
    // existing id (Elasticsearch overwrites: sluice appends) and the
    // same new id twice in one body.
    let retry = format!(
        "{first}{}{}{}{}",
        "{\"create\":{\"_index\":\"logs\",\"_id\":\"c\"}}\n{\"n\":3}\n",
        "{\"create\":{\"_index\":\"other\",\"_id\":\"a\"}}\n{\"n\":4}\n",
        "{\"create\":{\"_index\":\"logs\",\"_id\":\"c\"}}\n{\"n\":5}\n",
        "{\"index\":{\"_index\":\"logs\",\"_id\":\"a\"}}\n{\"n\":6}\n",
    );
    let v = srv.request("POST", "/_bulk", &[], retry.as_bytes()).await.json();
    assert_eq!(v["errors"], true, "{v}");
    let statuses: Vec<u64> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_object().unwrap().values().next().unwrap()["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [409, 409, 201, 201, 409, 201], "{v}");
    assert_eq!(v["items"][0]["create"]["error"]["type"], "version_conflict_engine_exception");
    assert_eq!(
        v["items"][0]["create"]["error"]["reason"],
        "[a]: version conflict, document already exists (current version [1])"
    );
    assert_eq!(v["items"][1]["create"]["_id"], "b");
    let ns: Vec<i64> = srv.events().iter().map(|e| e.fields().get("n").and_then(Value::as_i64).unwrap()).collect();
    assert_eq!(ns, [1, 2, 3, 4, 6], "no second copy of a, b or c");
    assert_eq!(srv.counter("bulk_conflicts"), 3);
    srv.stop().await;
    // Started again on the same data directory (after kill -9 the
    // ledger file is all there is): the ids are still taken.
    let srv = Server::start_in("auth = \"none\"", None, Some(dir.path())).await;
    let v = srv.request("POST", "/_bulk", &[], first.as_bytes()).await.json();
    assert_eq!(v["items"][0]["create"]["status"], 409, "{v}");
    assert_eq!(v["items"][1]["create"]["status"], 409, "{v}");
    assert!(srv.events().is_empty());
    srv.stop().await;
}

/// Issue #18 compatibility: `refresh=true|wait_for` answered at once;
/// now only once the sinks acknowledged (the capture's token resolved),
/// or after `refresh_timeout`, counted. An unknown value is a 400.
#[tokio::test]
async fn issue_18_bulk_refresh_wait_for_answers_after_the_sinks() {
    let cap = Arc::new(crate::testkit::AckCapture::default());
    let out: Arc<dyn Output> = Arc::clone(&cap) as Arc<dyn Output>;
    let srv = Server::start_with("auth = \"none\"\nrefresh_timeout = \"300ms\"", Some(out)).await;
    let body = b"{\"create\":{\"_index\":\"logs\"}}\n{\"n\":1}\n";
    let r = srv.request("POST", "/_bulk?refresh=maybe", &[], body).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["reason"], "Unknown value for refresh: [maybe].");
    assert!(cap.events.lock().is_empty());
    for refresh in ["wait_for", "true"] {
        let addr = srv.addr;
        let path = format!("/_bulk?refresh={refresh}");
        let req = tokio::spawn(async move { request(addr, "POST", &path, &[], body).await });
        let deadline = Instant::now() + Duration::from_secs(5);
        while cap.tokens.lock().is_empty() {
            assert!(Instant::now() < deadline, "never queued");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!req.is_finished(), "{refresh}: answered before the sinks acknowledged");
        cap.tokens.lock().remove(0).delivered();
        let r = tokio::time::timeout(Duration::from_secs(5), req).await.unwrap().unwrap();
        assert_eq!(r.status, 200, "{refresh}");
        assert_eq!(r.json()["errors"], false);
    }
    assert_eq!(srv.counter("refresh_waits_failed"), 0);
    // A sink that never acknowledges: answered after the timeout, counted.
    let t0 = Instant::now();
    let r = srv.request("POST", "/_bulk?refresh", &[], body).await;
    assert_eq!(r.status, 200);
    assert!(t0.elapsed() >= Duration::from_millis(300), "{:?}", t0.elapsed());
    assert_eq!(srv.counter("refresh_waits_failed"), 1);
    // Without refresh: at once.
    let r = srv.request("POST", "/_bulk?refresh=false", &[], body).await;
    assert_eq!(r.status, 200);
    assert_eq!(cap.events.lock().len(), 4);
    srv.stop().await;
}

#[tokio::test]
async fn issue_18_bulk_keeps_the_digits_of_integers_beyond_64_bits() {
    let srv = Server::start("").await;
    let body = concat!(
        "{\"index\":{\"_index\":\"a\"}}\n",
        "{\"big\":123456789012345678901234567890,\"neg\":-9223372036854775809,\"small\":42}\n",
    );
    let v = srv.request("POST", "/_bulk", &[], body.as_bytes()).await.json();
    assert_eq!(v["errors"], false, "{v}");
    let events = srv.events();
    assert_eq!(events.len(), 1);
    assert_eq!(str_field(&events[0], "big"), Some("123456789012345678901234567890"));
    assert_eq!(str_field(&events[0], "neg"), Some("-9223372036854775809"));
    let json = sluice_core::codec::to_json_string(&events[0]);
    assert!(json.contains("\"small\":42"), "an integer within 64 bits stays a number: {json}");
    srv.stop().await;
}

#[tokio::test]
async fn oversized_bulk_document_is_an_item_error() {
    let srv = Server::start("max_line_bytes = 32\n").await;
    let body = format!(
            "{{\"index\":{{\"_index\":\"a\"}}}}\n{{\"msg\":\"{}\"}}\n{{\"index\":{{\"_index\":\"a\"}}}}\n{{\"msg\":\"ok\"}}\n",
            "x".repeat(40)
        );
    let v = srv.request("POST", "/_bulk", &[], body.as_bytes()).await.json();
    assert_eq!(v["errors"], true);
    assert_eq!(v["items"][0]["index"]["status"], 400);
    assert!(v["items"][0]["index"]["error"]["reason"].as_str().unwrap().contains("max_line_bytes (32)"), "{v}");
    assert_eq!(v["items"][1]["index"]["status"], 201);
    let events = srv.events();
    assert_eq!(events.len(), 1);
    assert_eq!(str_field(&events[0], "msg"), Some("ok"));
    assert_eq!(srv.counter("oversized_frames"), 1);
    assert_eq!(srv.metrics.events_failed.get(), 1);
    srv.stop().await;
}

#[tokio::test]
async fn malformed_bulk_bodies_are_rejected_whole() {
    let srv = Server::start("").await;
    let cases: [(&[u8], &str); 5] = [
        (b"", "parse_exception"),
        (b"\n\n", "parse_exception"),
        (b"{\"index\":{\"_index\":\"a\"}}\n{\"ok\":1}\nnot an action\n", "x_content_parse_exception"),
        (b"{\"index\":{\"_index\":\"a\"}}\n{\"ok\":1}\n{\"index\":{\"_index\":\"a\"}}\n", "illegal_argument_exception"),
        (b"{\"index\":{},\"create\":{}}\n{\"ok\":1}\n", "illegal_argument_exception"),
    ];
    for (body, kind) in cases {
        let r = srv.request("POST", "/_bulk", &[], body).await;
        assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(body));
        let v = r.json();
        assert_eq!(v["error"]["type"], kind, "{v}");
        assert_eq!(v["error"]["root_cause"][0]["type"], kind, "{v}");
        assert_eq!(v["status"], 400);
    }
    let r = srv.request("POST", "/_bulk", &[], b"").await;
    assert_eq!(r.json()["error"]["reason"], "request body is required");
    assert_eq!(srv.counter("bad_requests"), 6);
    assert!(srv.events().is_empty());
    assert_eq!(srv.metrics.events_in.get(), 0);
    srv.stop().await;
}

/// Issue #18: `/ndjson` and `/_bulk` accepted unauthenticated posts. Every
/// request needs an ingest token, in each form the shippers send it, and
/// the token's identity is the events' — whatever the payload says.
#[tokio::test]
async fn issue_18_ingest_needs_a_token_and_the_token_sets_the_identity() {
    let tokens = "[tokens.acme]\ntoken = \"acme-ingest-token-000\"\ngroup = \"acme\"\nsubgroup = \"web\"\n\
                      [tokens.globex]\ntoken = \"globex-ingest-token-0\"\ngroup = \"globex\"\nhost = \"gw-1\"\n";
    let srv = Server::start(tokens).await;
    // base64("elastic:acme-ingest-token-000"), base64("elastic:wrong"),
    // base64("key-id:acme-ingest-token-000") (Filebeat's api_key: "key-id:acme-ingest-token-000")
    let ok = [
        ("Authorization", "Bearer acme-ingest-token-000"),
        ("Authorization", "ApiKey acme-ingest-token-000"),
        ("Authorization", "ApiKey a2V5LWlkOmFjbWUtaW5nZXN0LXRva2VuLTAwMA=="),
        ("Authorization", "Basic ZWxhc3RpYzphY21lLWluZ2VzdC10b2tlbi0wMDA="),
    ];
    let bad: [&[(&str, &str)]; 4] = [
        &[("Authorization", "")],
        &[("Authorization", "Bearer acme-ingest-token-00")],
        &[("Authorization", "Basic ZWxhc3RpYzp3cm9uZw==")],
        &[("Authorization", "Token acme-ingest-token-000")],
    ];
    for h in bad {
        let r = srv.request("GET", "/", h, b"").await;
        assert_eq!(r.status, 401, "{h:?}");
        assert_eq!(r.json()["error"]["type"], "security_exception");
        assert_eq!(r.header("x-elastic-product"), Some("Elasticsearch"));
        assert!(r.header("www-authenticate").is_some());
    }
    let none = [("Authorization", "")];
    let r = srv.request("POST", "/_bulk", &none, b"{\"index\":{\"_index\":\"a\"}}\n{\"a\":1}\n").await;
    assert_eq!(r.status, 401);
    let r = srv.request("POST", "/ndjson", &none, b"{\"a\":1}\n").await;
    assert_eq!(r.status, 401);
    assert_eq!(srv.counter("auth_failures"), 6);
    assert!(srv.events().is_empty());
    for h in ok {
        let r = srv.request("GET", "/", &[h], b"").await;
        assert_eq!(r.status, 200, "{h:?}");
    }
    // The payload's identity keys are not the sender's to choose.
    let r = srv
        .request("POST", "/_bulk", &[ok[2]], b"{\"index\":{\"_index\":\"a\"}}\n{\"a\":1,\"@group\":\"globex\"}\n")
        .await;
    assert_eq!(r.json()["items"][0]["index"]["status"], 201);
    let globex = [("Authorization", "Bearer globex-ingest-token-0")];
    let r = srv.request("POST", "/ndjson", &globex, b"{\"a\":2,\"@group\":\"acme\",\"@host\":\"x\"}\n").await;
    assert_eq!(r.status, 200);
    let got: Vec<(String, String, String)> = srv
        .events()
        .iter()
        .map(|e| (e.identity.group.clone(), e.identity.subgroup.clone(), e.identity.host.clone()))
        .collect();
    assert_eq!(
        got,
        vec![("acme".into(), "web".into(), String::new()), ("globex".into(), String::new(), "gw-1".into())]
    );
    assert!(srv.events().iter().all(|e| e.fields().get(&"@group").is_none()));
    assert_eq!(srv.counter("auth_failures"), 6);
    srv.stop().await;
}

/// Issue #18: a cross-site `text/plain` post was stored. Requests a web
/// page can make are refused on the ingest routes, token or not.
#[tokio::test]
async fn issue_18_browser_simple_requests_are_refused_on_ingest_routes() {
    let srv = Server::start("").await;
    let bulk = b"{\"index\":{\"_index\":\"a\"}}\n{\"a\":1}\n";
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], u16);
    let refused: [Case; 6] = [
        ("/ndjson", &[("Content-Type", "text/plain")], 415),
        ("/_bulk", &[("Content-Type", "text/plain;charset=UTF-8")], 415),
        ("/ndjson", &[("Content-Type", "application/x-www-form-urlencoded")], 415),
        ("/logs/_bulk", &[("Content-Type", "multipart/form-data; boundary=x")], 415),
        ("/ndjson", &[("Content-Type", "application/json"), ("Origin", "https://evil.example")], 403),
        ("/_bulk", &[("Sec-Fetch-Site", "cross-site")], 403),
    ];
    for (path, h, status) in refused {
        let r = srv.request("POST", path, h, bulk).await;
        assert_eq!(r.status, status, "{path} {h:?}");
        assert_eq!(r.json()["error"]["type"], "security_exception");
    }
    assert_eq!(srv.counter("browser_requests_refused"), 6);
    assert!(srv.events().is_empty());
    // Shippers' content types, and no Origin, are served.
    for ct in ["application/x-ndjson", "application/json", ""] {
        let r = srv.request("POST", "/_bulk", &[("Content-Type", ct)], bulk).await;
        assert_eq!(r.status, 200, "{ct}");
    }
    assert_eq!(srv.events().len(), 3);
    // Not an ingest route: the handshake answers a browser as before.
    let r = srv.request("GET", "/", &[("Origin", "https://evil.example")], b"").await;
    assert_eq!(r.status, 200);
    assert_eq!(srv.counter("browser_requests_refused"), 6);
    srv.stop().await;
}

#[tokio::test]
async fn auth_none_serves_without_tokens_but_still_refuses_browsers() {
    let srv = Server::start("auth = \"none\"\n").await;
    let r = srv.request("POST", "/ndjson", &[("Authorization", "")], b"{\"a\":1}\n").await;
    assert_eq!(r.status, 200);
    let r = srv.request("POST", "/ndjson", &[("Content-Type", "text/plain")], b"{\"a\":1}\n").await;
    assert_eq!(r.status, 415);
    assert_eq!(srv.events().len(), 1);
    assert!(srv.events()[0].identity.group.is_empty());
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
