//! Tests of the `http` component.

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
    let v = toml::from_str(&format!("uri = \"{uri}\"\ndrop_on_4xx = true\nmax_batch_bytes = {}", line * 2)).unwrap();
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
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["message"].as_str().unwrap().to_string())
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
    let body = format!("uri = \"https://localhost:{}/in\"\ntls = {{ ca = \"{}\" }}", addr.port(), other_cert.display());
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
