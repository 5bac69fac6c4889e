//! The `elasticsearch` sink against a real OpenSearch node (the official
//! integ-test distribution, started by `scripts/opensearch.sh`): exact
//! document counts read back with `_count`, and each per-item status the sink
//! handles, provoked for real:
//!
//! - 409: `create` with an `_id` that exists (events carrying `_id`, as the
//!   `http` source's `_bulk` stamps them, sent twice): counted as delivered,
//!   nothing indexed twice;
//! - 400: a mapping conflict (`n` first indexed as a number, then sent as an
//!   object): dead-lettered with its status and reason, the rest indexed;
//! - 429: a node of its own with a one-thread write pool and a queue of one
//!   (`thread_pool.write.size/queue_size`, static settings, hence not the
//!   shared node) rejects part of the writes of a bulk request over 3
//!   shards: only the rejected documents are retried, every one is indexed
//!   exactly once.
//!
//! The shared node (instance `main`, port 19200) is started once by
//! `scripts/check.sh`; `scripts/opensearch.sh start` is idempotent, so each
//! test also starts it if needed (the first time downloads the distribution
//! from Maven Central, ~1 min). Indices are named per test and process.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use sluice_components::core::codec::{event_from_json, event_from_json_bytes};
use sluice_components::core::component::{BuildContext, Sink};
use sluice_components::core::metrics::ComponentMetrics;
use sluice_components::core::Event;
use sluice_components::sinks::elasticsearch::SPEC;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `scripts/opensearch.sh ACTION INSTANCE` with `env`; panics with its output on failure.
fn opensearch_sh(action: &str, instance: &str, env: &[(&str, &str)]) -> String {
    let o = Command::new(root().join("scripts/opensearch.sh"))
        .args([action, instance])
        .envs(env.iter().copied())
        .output()
        .expect("run scripts/opensearch.sh");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "opensearch.sh {action} {instance}: {out}\n{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// The shared node's URL, started if it is not running.
fn shared_node() -> String {
    opensearch_sh("start", "main", &[]);
    opensearch_sh("url", "main", &[]).trim().to_string()
}

/// `curl -s -X METHOD url [-d body]`: (status, body).
fn curl(method: &str, url: &str, body: Option<&str>) -> (u16, serde_json::Value) {
    let mut c = Command::new("curl");
    c.args(["-s", "-m", "30", "-w", "\n%{http_code}", "-X", method, url]);
    if let Some(b) = body {
        c.args(["-H", "Content-Type: application/json", "-d", b]);
    }
    let o = c.output().expect("run curl");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let (json, status) = text.rsplit_once('\n').unwrap_or(("", "0"));
    let status = status.trim().parse().unwrap_or(0);
    (status, serde_json::from_str(json).unwrap_or(serde_json::Value::Null))
}

/// A fresh index with `shards` primary shards (deleted first if an earlier run left it).
fn fresh_index(url: &str, name: &str, shards: u32) {
    curl("DELETE", &format!("{url}/{name}"), None);
    let (status, r) = curl(
        "PUT",
        &format!("{url}/{name}"),
        Some(&format!(r#"{{"settings":{{"number_of_shards":{shards},"number_of_replicas":0}}}}"#)),
    );
    assert_eq!(status, 200, "create index {name}: {r}");
}

/// Documents in `index` after a refresh.
fn count(url: &str, index: &str) -> u64 {
    let (status, r) = curl("POST", &format!("{url}/{index}/_refresh"), None);
    assert_eq!(status, 200, "refresh {index}: {r}");
    let (status, r) = curl("GET", &format!("{url}/{index}/_count"), None);
    assert_eq!(status, 200, "count {index}: {r}");
    r["count"].as_u64().unwrap()
}

fn index_name(test: &str) -> String {
    format!("sluice-{test}-{}", std::process::id())
}

fn sink(body: &str) -> (Box<dyn Sink>, Arc<ComponentMetrics>) {
    let cx = BuildContext::for_test("sink", "es");
    let s = (SPEC.build)(toml::from_str(body).unwrap(), &cx).unwrap();
    (s, Arc::clone(&cx.metrics))
}

fn event(json: &str) -> Event {
    event_from_json(json.as_bytes()).unwrap().0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_document_is_indexed_once_and_read_back_exactly() {
    let url = shared_node();
    let index = index_name("count");
    fresh_index(&url, &index, 3);
    // 16 KiB requests: a 500-event batch goes out in several requests.
    let (mut s, m) = sink(&format!("endpoint = \"{url}\"\nindex = \"{index}\"\nmax_batch_bytes = \"16KiB\""));
    const N: usize = 5_000;
    for chunk in (0..N).collect::<Vec<_>>().chunks(500) {
        let batch: Vec<Event> = chunk
            .iter()
            .map(|i| event(&format!(r#"{{"@timestamp":"2026-01-02T03:04:05Z","message":"doc {i}","seq":{i}}}"#)))
            .collect();
        s.write(&batch).await.unwrap();
    }
    assert_eq!(count(&url, &index), N as u64);
    assert!(m.counter("requests").get() > 10, "split by max_batch_bytes: {}", m.counter("requests").get());
    assert_eq!(m.counter("dead_letter_events").get(), 0);
    assert_eq!(m.counter("item_retries").get(), 0);
    // One document, field by field.
    let (_, r) = curl("POST", &format!("{url}/{index}/_search"), Some(r#"{"query":{"term":{"seq":4321}}}"#));
    assert_eq!(r["hits"]["total"]["value"], 1, "{r}");
    let doc = &r["hits"]["hits"][0]["_source"];
    assert_eq!(doc["message"], "doc 4321", "{doc}");
    assert_eq!(doc["@timestamp"], "2026-01-02T03:04:05Z", "{doc}");
    // The distinct seq values: every document once.
    let (_, r) = curl(
        "POST",
        &format!("{url}/{index}/_search"),
        Some(r#"{"size":0,"aggs":{"seqs":{"cardinality":{"field":"seq","precision_threshold":40000}}}}"#),
    );
    assert_eq!(r["aggregations"]["seqs"]["value"], N as u64, "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_with_an_existing_id_is_a_409_counted_as_delivered() {
    let url = shared_node();
    let index = index_name("conflict");
    fresh_index(&url, &index, 1);
    let (mut s, m) = sink(&format!("endpoint = \"{url}\"\nindex = \"{index}\""));
    // Events carrying `_id` (the `http` source's `_bulk` stamps one on every
    // event): half built from values, half kept as JSON text (lazy events).
    let batch: Vec<Event> = (0..20)
        .map(|i| {
            let json = format!(r#"{{"message":"doc {i}","_id":"doc-{i}"}}"#);
            if i % 2 == 0 {
                event(&json)
            } else {
                event_from_json_bytes(&Bytes::from(json)).unwrap().0
            }
        })
        .collect();
    s.write(&batch).await.unwrap();
    assert_eq!(m.counter("dead_letter_events").get(), 0, "documents with an _id were refused");
    assert_eq!(count(&url, &index), 20);
    assert_eq!(m.counter("item_conflicts").get(), 0);
    // The same batch again (what a retry after a lost response sends).
    s.write(&batch).await.unwrap();
    assert_eq!(m.counter("item_conflicts").get(), 20, "each existing _id is a 409");
    assert_eq!(m.counter("dead_letter_events").get(), 0);
    assert_eq!(count(&url, &index), 20, "nothing indexed twice");
    // The id is the document's id, not a field of it.
    let (status, r) = curl("GET", &format!("{url}/{index}/_doc/doc-7"), None);
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["_source"]["message"], "doc 7", "{r}");
    assert!(r["_source"].get("_id").is_none(), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mapping_conflict_is_a_400_dead_lettered_with_its_reason() {
    let url = shared_node();
    let index = index_name("mapping");
    fresh_index(&url, &index, 1);
    let dir = tempfile::tempdir().unwrap();
    let dlq = dir.path().join("dead.ndjson");
    let (mut s, m) =
        sink(&format!("endpoint = \"{url}\"\nindex = \"{index}\"\ndead_letter_path = \"{}\"", dlq.display()));
    // `n` is mapped as a number by the first batch.
    let first: Vec<Event> = (0..10).map(|i| event(&format!(r#"{{"message":"num {i}","n":{i}}}"#))).collect();
    s.write(&first).await.unwrap();
    // Then 3 of 10 send `n` as an object: those 3 can never be indexed.
    let second: Vec<Event> = (0..10)
        .map(|i| {
            if i % 4 == 1 {
                event(&format!(r#"{{"message":"obj {i}","n":{{"a":{i}}}}}"#))
            } else {
                event(&format!(r#"{{"message":"num {i}","n":{i}}}"#))
            }
        })
        .collect();
    s.write(&second).await.unwrap();
    assert_eq!(m.counter("dead_letter_events").get(), 3);
    assert_eq!(m.counter("item_retries").get(), 0, "a 400 is not retried");
    assert_eq!(count(&url, &index), 17);
    let dead: Vec<serde_json::Value> =
        std::fs::read_to_string(&dlq).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(dead.len(), 3);
    for (d, i) in dead.iter().zip([1, 5, 9]) {
        assert_eq!(d["status"], 400, "{d}");
        assert_eq!(d["error"]["type"], "mapper_parsing_exception", "{d}");
        assert!(d["error"]["reason"].as_str().unwrap().contains("[n]"), "the reason names the field: {d}");
        assert_eq!(d["document"]["message"], format!("obj {i}"), "{d}");
        assert_eq!(d["document"]["n"]["a"], i, "{d}");
    }
}

/// Stops the test's own node when dropped (on failure too).
struct OwnNode(&'static str, Vec<(&'static str, String)>);

impl Drop for OwnNode {
    fn drop(&mut self) {
        let env: Vec<(&str, &str)> = self.1.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let _ = Command::new(root().join("scripts/opensearch.sh")).args(["stop", self.0]).envs(env).output();
    }
}

/// Two consecutive ports free on 127.0.0.1 right now, below the kernel's
/// ephemeral range (32768-60999), so no outgoing connection takes them while
/// the node starts; each process starts its search at its own offset.
fn free_port_pair() -> (u16, u16) {
    let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
    let start = 12_000 + (std::process::id() % 500) as u16 * 16;
    (start..start + 8_000).step_by(2).find(|&p| free(p) && free(p + 1)).map(|p| (p, p + 1)).expect("two free ports")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_rejected_with_429_are_retried_alone_until_indexed() {
    let (http, transport) = free_port_pair();
    let env = vec![
        ("OPENSEARCH_PORT", http.to_string()),
        ("OPENSEARCH_TRANSPORT_PORT", transport.to_string()),
        ("OPENSEARCH_SETTINGS", "thread_pool.write.size: 1\nthread_pool.write.queue_size: 1".to_string()),
    ];
    let instance = "busy-429";
    let node = OwnNode(instance, env);
    let env: Vec<(&str, &str)> = node.1.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let started = Instant::now();
    opensearch_sh("start", instance, &env);
    let url = format!("http://127.0.0.1:{http}");
    println!("own node with a write queue of 1 up in {:.1} s", started.elapsed().as_secs_f64());
    let index = index_name("busy");
    // 3 shards: the node rejects about half the documents of the first
    // request, then fewer each time (measured: 7-9 requests in all; 2
    // shards are never rejected, 8 take over 20 requests).
    fresh_index(&url, &index, 3);
    let (mut s, m) =
        sink(&format!("endpoint = \"{url}\"\nindex = \"{index}\"\nmax_item_retries = 20\nretry_backoff = \"10ms\""));
    const N: u64 = 2_000;
    let batch: Vec<Event> = (0..N).map(|i| event(&format!(r#"{{"message":"doc {i}","seq":{i}}}"#))).collect();
    s.write(&batch).await.unwrap();
    let (_, st) = curl("GET", &format!("{url}/_nodes/stats/thread_pool"), None);
    let rejected: u64 = st["nodes"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n["thread_pool"]["write"]["rejected"].as_u64().unwrap_or(0))
        .sum();
    println!(
        "429: {rejected} shard writes rejected; {} documents retried over {} requests",
        m.counter("item_retries").get(),
        m.counter("requests").get()
    );
    assert!(rejected > 0, "the node rejected nothing: the test did not provoke a 429");
    assert!(m.counter("item_retries").get() > 0, "no document was retried");
    assert!(m.counter("item_retries").get() < N * 20, "retries are per document, not per batch");
    assert_eq!(m.counter("dead_letter_events").get(), 0, "a 429 is never dead-lettered");
    // Only the rejected documents went again: each is indexed exactly once.
    assert_eq!(count(&url, &index), N);
    let (_, r) = curl(
        "POST",
        &format!("{url}/{index}/_search"),
        Some(r#"{"size":0,"aggs":{"seqs":{"cardinality":{"field":"seq","precision_threshold":40000}}}}"#),
    );
    assert_eq!(r["aggregations"]["seqs"]["value"], N, "{r}");
    drop(node);
}

/// An nginx TLS proxy with basic auth in front of a node
/// (`scripts/tls_proxy.sh`), stopped when dropped.
struct TlsProxy {
    dir: tempfile::TempDir,
    port: u16,
}

impl TlsProxy {
    fn start(upstream: &str, password: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let o = Command::new(root().join("scripts/tls_proxy.sh"))
            .arg("start")
            .arg(dir.path())
            .envs([("PORT", port.to_string()), ("PASSWORD", password.into()), ("UPSTREAM", upstream.into())])
            .output()
            .unwrap();
        assert!(o.status.success(), "tls_proxy.sh start: {}", String::from_utf8_lossy(&o.stderr));
        Self { dir, port }
    }

    fn sink_config(&self, index: &str, password: &str) -> String {
        let pass = self.dir.path().join(format!("sink-pass-{}", password.len()));
        std::fs::write(&pass, format!("{password}\n")).unwrap();
        format!(
            "endpoint = \"https://localhost:{}\"\nindex = \"{index}\"\ntls = {{ ca = \"{}\" }}\nbasic_auth = {{ user = \"sluice\", password_file = \"{}\" }}",
            self.port,
            self.dir.path().join("ca.pem").display(),
            pass.display()
        )
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        let _ = Command::new(root().join("scripts/tls_proxy.sh")).arg("stop").arg(self.dir.path()).output();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_basic_auth_through_a_tls_proxy_and_a_wrong_password_refused() {
    let url = shared_node();
    let proxy = TlsProxy::start(&url, "correct horse");
    let prefix = index_name("tls");
    for day in ["2026.03.04", "2026.03.05"] {
        curl("DELETE", &format!("{url}/{prefix}-{day}"), None);
    }
    // Wrong password: a 401, counted, the write is an error (nothing acknowledged), nothing indexed.
    let (mut bad, bm) = sink(&proxy.sink_config(&format!("{prefix}-%Y.%m.%d"), "wrong horse"));
    let batch: Vec<Event> = (0..1_000)
        .map(|i| {
            let day = if i < 400 { "04" } else { "05" };
            event(&format!(
                r#"{{"@timestamp":"2026-03-{day}T10:00:00Z","message":"doc {i}","seq":{i},"kind":"k{}"}}"#,
                i % 3
            ))
        })
        .collect();
    let e = bad.write(&batch).await.unwrap_err().to_string();
    assert!(e.contains("HTTP 401 (authentication failed: check basic_auth / api_key)"), "{e}");
    assert_eq!(bm.counter("rejected_requests").get(), 1);
    let (status, _) = curl("GET", &format!("{url}/{prefix}-2026.03.04"), None);
    assert_eq!(status, 404, "nothing was written with a wrong password");
    // The right password: the template, then every document, in one index per day.
    let (mut s, m) = sink(&proxy.sink_config(&format!("{prefix}-%Y.%m.%d"), "correct horse"));
    s.write(&batch).await.unwrap();
    assert_eq!(m.counter("rejected_requests").get(), 0);
    assert_eq!(count(&url, &format!("{prefix}-2026.03.04")), 400);
    assert_eq!(count(&url, &format!("{prefix}-2026.03.05")), 600);
    // The template's mapping applies to the new indices.
    let (_, r) = curl("GET", &format!("{url}/{prefix}-2026.03.04/_mapping"), None);
    let p = &r[&format!("{prefix}-2026.03.04")]["mappings"]["properties"];
    assert_eq!(p["@group"]["type"], "keyword", "{r}");
    assert_eq!(p["message"]["type"], "text", "{r}");
    assert_eq!(p["message"]["analyzer"], "sluice_text", "{r}");
    assert_eq!(p["@timestamp"]["type"], "date_nanos", "{r}");
    assert_eq!(p["kind"]["type"], "text", "{r}");
    assert_eq!(p["kind"]["fields"]["keyword"]["type"], "keyword", "{r}");
    let (_, r) = curl("POST", &format!("{url}/{prefix}-*/_count"), Some(r#"{"query":{"term":{"kind.keyword":"k1"}}}"#));
    assert_eq!(r["count"], 333, "{r}");
    drop(proxy);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_is_presented_when_the_proxy_requires_one() {
    let url = shared_node();
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let o = Command::new(root().join("scripts/tls_proxy.sh"))
        .arg("start")
        .arg(dir.path())
        .envs([
            ("PORT", port.to_string()),
            ("PASSWORD", "client cert pass".into()),
            ("UPSTREAM", url.clone()),
            ("CLIENT_CERT", "required".into()),
        ])
        .output()
        .unwrap();
    let proxy = TlsProxy { dir, port };
    assert!(o.status.success(), "tls_proxy.sh start: {}", String::from_utf8_lossy(&o.stderr));
    let index = index_name("mtls");
    curl("DELETE", &format!("{url}/{index}"), None);
    let base = proxy.sink_config(&index, "client cert pass");
    let p = proxy.dir.path();
    // Without a client certificate the handshake (or the first request) is refused.
    let (mut s, _) = sink(&base);
    let e = s.write(&[event(r#"{"message":"m"}"#)]).await.unwrap_err().to_string();
    assert!(e.contains("HTTP 400") || e.contains("tls") || e.contains("reading the response"), "{e}");
    // With it: indexed.
    let with_cert = base.replace(
        "tls = {",
        &format!(
            "tls = {{ cert = \"{}\", key = \"{}\",",
            p.join("client.pem").display(),
            p.join("client.key").display()
        ),
    );
    let (mut s, _) = sink(&with_cert);
    let batch: Vec<Event> = (0..50).map(|i| event(&format!(r#"{{"message":"doc {i}"}}"#))).collect();
    s.write(&batch).await.unwrap();
    assert_eq!(count(&url, &index), 50);
    drop(proxy);
}
