//! The sink against in-process servers: sluice's own `_bulk` endpoint, a
//! server answering 429 per item, endpoints that are down, and config errors.

use super::metadata::{has_metadata, split_metadata};
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
    let src = build_source(&http_source::SPEC, &format!("address = \"{addr}\"\nmax_line_bytes = 512\nauth = \"none\""))
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
        "endpoint = \"http://{addr}\"\ninstall_template = false\nindex = \"logs-%{{team}}\"\nmax_batch_bytes = \"4KiB\"\ndead_letter_path = \"{}\"",
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

/// Settings for the in-process servers: plain bodies, no template.
const PLAIN: &str = "compression = \"none\"\ninstall_template = false";

#[derive(Default)]
struct Flaky {
    /// Documents received per request.
    requests: Mutex<Vec<Vec<String>>>,
    /// `Authorization` and `Content-Encoding` of each bulk request.
    headers: Mutex<Vec<(Option<String>, Option<String>)>>,
    /// Templates put: (name, body), and the number of bulk requests before each.
    templates: Mutex<Vec<(String, serde_json::Value, usize)>>,
    calls: AtomicUsize,
}

fn header(h: &axum::http::HeaderMap, name: &str) -> Option<String> {
    h.get(name).and_then(|v| v.to_str().ok()).map(String::from)
}

/// Answers 429 for every other document of the first request, 200 after;
/// gzip bodies are decoded.
async fn flaky(
    State(st): State<Arc<Flaky>>,
    h: axum::http::HeaderMap,
    raw: bytes::Bytes,
) -> (axum::http::StatusCode, String) {
    let encoding = header(&h, "content-encoding");
    let body = if encoding.as_deref() == Some("gzip") {
        let mut out = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&raw[..]), &mut out).unwrap();
        out
    } else {
        String::from_utf8(raw.to_vec()).unwrap()
    };
    st.headers.lock().push((header(&h, "authorization"), encoding));
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

async fn put_template(
    State(st): State<Arc<Flaky>>,
    axum::extract::Path(name): axum::extract::Path<String>,
    body: String,
) -> &'static str {
    let bulks = st.calls.load(Ordering::SeqCst);
    st.templates.lock().push((name, serde_json::from_str(&body).unwrap(), bulks));
    "{\"acknowledged\":true}"
}

async fn flaky_server() -> (Arc<Flaky>, SocketAddr) {
    let st = Arc::new(Flaky::default());
    let app = axum::Router::new()
        .route("/_bulk", axum::routing::post(flaky))
        .route("/_index_template/{name}", axum::routing::put(put_template))
        .with_state(Arc::clone(&st));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (st, addr)
}

/// An address nothing listens on.
async fn dead_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap()
}

#[tokio::test]
async fn items_answered_429_are_retried_alone() {
    let (st, addr) = flaky_server().await;
    let cx = BuildContext::for_test("sink", "es");
    let body = format!("endpoint = \"http://{addr}\"\nretry_backoff = \"10ms\"\n{PLAIN}");
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
    let mut sink = build_sink(&SPEC, &format!("endpoint = \"http://{addr}\"\n{PLAIN}")).unwrap();
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

#[tokio::test]
async fn a_dead_endpoint_is_skipped_and_tried_again_later() {
    let (st, live) = flaky_server().await;
    let dead = dead_addr().await;
    let cx = BuildContext::for_test("sink", "es");
    let body = format!(
        "endpoints = [\"http://{dead}\", \"http://{live}\"]\nendpoint_retry = \"300ms\"\nretry_backoff = \"10ms\"\n{PLAIN}"
    );
    let mut sink = (SPEC.build)(toml::from_str(&body).unwrap(), &cx).unwrap();
    sink.write(&events(4)).await.unwrap();
    assert_eq!(cx.metrics.counter("endpoint_failovers").get(), 1, "the dead endpoint, then the live one");
    // The live endpoint stays current: no more failovers while it answers.
    sink.write(&events(4)).await.unwrap();
    sink.write(&events(4)).await.unwrap();
    assert_eq!(cx.metrics.counter("endpoint_failovers").get(), 1);
    assert_eq!(
        st.requests.lock().iter().map(Vec::len).sum::<usize>(),
        4 + 2 + 4 + 4,
        "every document reached the live one"
    );
    // Every endpoint down: an error naming each, for the runtime to retry.
    let other = dead_addr().await;
    let body = format!("endpoints = [\"http://{dead}\", \"http://{other}\"]\n{PLAIN}");
    let mut sink = build_sink(&SPEC, &body).unwrap();
    let e = sink.write(&events(1)).await.unwrap_err().to_string();
    assert!(
        e.contains(&format!("POST http://{dead}/_bulk: connect"))
            && e.contains(&format!("POST http://{other}/_bulk: connect")),
        "{e}"
    );
}

#[tokio::test]
async fn template_first_then_gzip_bodies_with_basic_auth() {
    let (st, addr) = flaky_server().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pass"), "s3cret pass\n").unwrap();
    let cx = BuildContext::for_test("sink", "es");
    let body = format!(
        "endpoint = \"http://{addr}\"\nretry_backoff = \"10ms\"\nbasic_auth = {{ user = \"sluice\", password_file = \"{}\" }}",
        dir.path().join("pass").display()
    );
    let mut sink = (SPEC.build)(toml::from_str(&body).unwrap(), &cx).unwrap();
    sink.write(&events(6)).await.unwrap();
    sink.write(&events(6)).await.unwrap();
    let templates = st.templates.lock().clone();
    assert_eq!(templates.len(), 1, "installed once");
    let (name, t, bulks_before) = &templates[0];
    assert_eq!((name.as_str(), *bulks_before), ("sluice", 0), "before the first document");
    assert_eq!(t["index_patterns"], serde_json::json!(["sluice-*"]));
    assert_eq!(t["template"]["mappings"]["properties"]["@group"]["type"], "keyword");
    let headers = st.headers.lock().clone();
    assert_eq!(headers.len(), 3, "6 documents, 3 of them retried once, then 6");
    // "sluice:s3cret pass" in base64.
    let auth = Some("Basic c2x1aWNlOnMzY3JldCBwYXNz".to_string());
    assert!(headers.iter().all(|h| *h == (auth.clone(), Some("gzip".to_string()))), "{headers:?}");
    // The default index: sluice-<group>-<date> (no group: "none").
    let docs = st.requests.lock().clone();
    assert_eq!(docs[2].len(), 6);
}

#[test]
fn config_errors_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    let cases = [
        ("endpoint = \"https://es:9200\"".to_string(), "endpoint: an https:// endpoint needs tls"),
        ("endpoints = [\"http://a:9200\", \"ftp://b\"]".into(), "endpoints[1]: expected an http:// or https://"),
        ("endpoint = \"http://a\"\nendpoints = [\"http://b\"]".into(), "endpoints: set either endpoint or endpoints"),
        ("index = \"x\"".into(), "endpoints: set endpoint or endpoints"),
        (format!("endpoint = \"https://a\"\ntls = {{ ca = \"{}\" }}", ca.display()), "tls.ca: cannot read"),
        ("endpoint = \"http://a\"\ntls = { ca = \"x\" }".into(), "tls: only valid with https://"),
        (
            "endpoint = \"http://a\"\nbasic_auth = { user = \"u\", password_file = \"/nonexistent/p\" }".into(),
            "basic_auth.password_file: cannot read /nonexistent/p",
        ),
        (
            "endpoint = \"http://a\"\napi_key = \"k\"\nbasic_auth = { user = \"u\", password_file = \"p\" }".into(),
            "basic_auth: set either an API key or basic_auth",
        ),
        ("endpoint = \"http://a\"\napi_key_file = \"/nonexistent/k\"".into(), "api_key_file: cannot read"),
        ("endpoint = \"http://a\"\nindex = \"Logs\"".into(), "index: 'L' is not allowed"),
        ("endpoint = \"http://a\"\nindex = \"%{@group}\"".into(), "index: must start with literal text"),
        ("endpoint = \"http://a\"\ncompression = \"zstd\"".into(), "compression: "),
        ("endpoint = \"http://a\"\naction = \"upsert\"".into(), "action: "),
        ("endpoint = \"http://a\"\nendpoint_retry = \"0s\"".into(), "endpoint_retry: must be greater than 0"),
    ];
    for (body, want) in cases {
        let e = build_sink(&SPEC, &body).err().unwrap().to_string();
        assert!(e.starts_with(&format!("test.elasticsearch.{want}")), "{body}: {e}");
    }
}
