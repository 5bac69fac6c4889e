//! The official Python `elasticsearch` client (v8) ships 1000 documents with
//! `helpers.bulk` into the `http` source's `_bulk` endpoint, gzip-compressed
//! and with Basic auth, after its `info()` handshake; every document must
//! arrive as exactly one event with its fields, `_index` and `_id`.
//!
//! The client is installed into `.cache/venv` by `scripts/python-env.sh`
//! (idempotent). `SLUICE_SKIP_PYTHON=1` skips it with a `SKIPPED (opt-out)`
//! line that `scripts/check.sh` counts, and fails under `CI=true`; any other
//! failure to install or run the client fails the test.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sluice_components::core::Event;
use sluice_components::sources::http::SPEC;
use sluice_components::testkit::{build_source, source_context, Capture};

#[path = "../../sluice/tests/common/skip.rs"]
mod skip;

const COUNT: usize = 1000;
const TOKEN: &str = "py-s3cret-ingest-token";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn str_field<'a>(e: &'a Event, k: &str) -> Option<&'a str> {
    e.fields().get(&k).and_then(|v| v.as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_elasticsearch_helpers_bulk_delivers_every_document() {
    if std::env::var("SLUICE_SKIP_PYTHON").as_deref() == Ok("1") {
        return skip::skip("opt-out", "es_bulk_python", "SLUICE_SKIP_PYTHON=1: the real-client test did not run");
    }
    let env = tokio::process::Command::new("bash")
        .arg(root().join("scripts/python-env.sh"))
        .output()
        .await
        .expect("run scripts/python-env.sh");
    assert!(
        env.status.success(),
        "scripts/python-env.sh failed ({}):\n{}",
        env.status,
        String::from_utf8_lossy(&env.stderr)
    );
    let python = String::from_utf8(env.stdout).unwrap().trim().to_string();
    assert!(python.ends_with("/bin/python"), "unexpected python path {python:?}");

    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = probe.local_addr().unwrap();
    drop(probe);
    let src = build_source(&SPEC, &format!("address = \"{addr}\"\n[tokens.py]\ntoken = \"{TOKEN}\"\ngroup = \"py\"\n"))
        .unwrap();
    let cap = Arc::new(Capture::default());
    let (cx, shutdown, metrics) = source_context(Arc::clone(&cap));
    let task = tokio::spawn(src.run(cx));
    for _ in 0..500 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let script = root().join("crates/components/tests/es_bulk_client.py");
    let run = tokio::process::Command::new(&python)
        .arg(&script)
        .arg(format!("http://{addr}"))
        .arg(TOKEN)
        .arg(COUNT.to_string())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(180), run).await.expect("python client timed out").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "python client failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let steps: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(steps.len(), 3, "{stdout}");
    assert_eq!(steps[0], serde_json::json!({"step": "info", "version": "8.11.0", "tagline": "You Know, for Search"}));
    assert_eq!(steps[1], serde_json::json!({"step": "bulk", "ok": COUNT, "errors": []}));
    assert_eq!(steps[2], serde_json::json!({"step": "bad", "ok": 0, "statuses": [400]}));

    shutdown.cancel();
    task.await.unwrap().unwrap();

    let events = cap.events.lock();
    assert_eq!(events.len(), COUNT, "exactly one event per document");
    let mut seen = vec![false; COUNT];
    let mut ids = HashSet::new();
    for e in events.iter() {
        let n = e.fields().get(&"n").and_then(|v| v.as_u64()).expect("field n") as usize;
        assert!(!seen[n], "document {n} arrived twice");
        seen[n] = true;
        assert_eq!(str_field(e, "msg"), Some(format!("doc {n}").as_str()));
        let even = e.fields().get(&"nested").and_then(|v| v.get("even")).and_then(|v| v.as_bool());
        assert_eq!(even, Some(n.is_multiple_of(2)), "document {n}");
        assert_eq!(str_field(e, "_index"), Some("logs-py"));
        let id = str_field(e, "_id").expect("_id").to_string();
        if n.is_multiple_of(100) {
            assert_eq!(id, format!("py-{n}"));
        } else {
            assert_eq!(id.len(), 20, "generated id {id:?}");
        }
        assert!(ids.insert(id), "duplicate _id");
        assert!(e.fields().get(&"tags").is_none(), "document {n} was tagged");
    }
    assert!(seen.iter().all(|s| *s));
    assert_eq!(metrics.events_failed.get(), 1, "the non-object document is counted");
    assert_eq!(metrics.events_out.get(), COUNT as u64);
    assert_eq!(metrics.counter("auth_failures").get(), 0);
    // 4 bulk chunks of at most 300 documents plus the bad one, all gzip-encoded.
    assert_eq!(metrics.counter("gzip_bodies").get(), 5);
}
