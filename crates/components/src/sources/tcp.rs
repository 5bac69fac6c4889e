//! `tcp`: newline-delimited JSON (or plain lines) over TCP.
//!
//! Each connection is read in large chunks; complete lines are decoded in bulk
//! and pushed into the queue as one batch, and the socket is not read again
//! until the queue took them — back-pressure reaches the sender through TCP.
//! A line that is not a JSON object is kept as `message` with the tag
//! `_jsonparsefailure`; a line longer than `max_line_bytes` is cut there,
//! kept with the tag `_oversized`, and the rest of it is skipped.
//! Both are counted (`events_failed`, `oversized_frames`).
//!
//! Connections: at most `max_connections` at once; one more is closed at
//! once and counted (`refused_connections`). A failed accept (descriptor
//! limit) is counted (`accept_errors`), logged at most every 10 s, and
//! waited out ([`sluice_net::listener`]). A quiet connection holds no read
//! buffer; one that sends a lot reads up to 256 KiB at a time
//! ([`sluice_net::readbuf`]).
//!
//! TLS: with `tls = { cert, key }` (and `client_ca` for client
//! certificates) every connection is TLS; a failed or slow handshake (a
//! plain-text sender) is counted in `tls_handshake_errors` and closed.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::acked_stream::Conn;
use crate::lines::{LineDecoder, LineFormat, LineState};
use crate::net::DEFAULT_MAX_CONNECTIONS;
use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Closed, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, Positive};
use sluice_net::ReadBuf;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "tcp",
    summary: "newline-delimited JSON (or plain text lines) over TCP",
    example: "address = \"127.0.0.1:0\"\n",
    build,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Listen address, e.g. `0.0.0.0:5000`.
    address: String,
    /// `ndjson` (default) or `lines`.
    #[serde(default = "default_format")]
    format: LineFormat,
    /// Longest accepted line; longer lines are cut, tagged `_oversized` and counted.
    #[serde(default = "crate::defaults::mib::<1>")]
    max_line_bytes: Positive<ByteSize>,
    /// Connections served at once; more are closed at once and counted.
    #[serde(default = "default_max_connections")]
    max_connections: Positive<usize>,
    /// TLS, with optional client certificates.
    #[serde(default)]
    tls: Option<crate::tls::ListenTls>,
}

fn default_format() -> LineFormat {
    LineFormat::Ndjson
}
fn default_max_connections() -> Positive<usize> {
    Positive::<usize>::of(DEFAULT_MAX_CONNECTIONS)
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let address: SocketAddr =
        c.address.parse().map_err(|e| cx.error("address", format!("invalid socket address {:?}: {e}", c.address)))?;
    let tls = c.tls.as_ref().map(|t| crate::http_listen::acceptor(t, cx)).transpose()?;
    Ok(Box::new(Tcp {
        address,
        format: c.format,
        max_line: c.max_line_bytes.0 as usize,
        max_connections: c.max_connections.get(),
        tls,
    }))
}

struct Tcp {
    address: SocketAddr,
    format: LineFormat,
    max_line: usize,
    max_connections: usize,
    tls: Option<TlsAcceptor>,
}

#[async_trait]
impl Source for Tcp {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let listener = TcpListener::bind(self.address).await.map_err(|e| format!("bind {}: {e}", self.address))?;
        let local = listener.local_addr()?;
        let max_connections = self.max_connections;
        tracing::info!(source = %cx.id, address = %local, max_connections, tls = self.tls.is_some(), "tcp source listening");
        let source: Arc<str> = Arc::from(format!("tcp:{local}"));
        let decoder = Arc::new(LineDecoder::new(self.format, self.max_line, &cx));
        let conn_cx = cx.clone();
        crate::acked_stream::serve(listener, &cx, max_connections, self.tls.clone(), move |stream, _peer| {
            let (decoder, source, cx) = (Arc::clone(&decoder), Arc::clone(&source), conn_cx.clone());
            async move { read_connection(stream, &cx, &decoder, &source).await }
        })
        .await
    }
}

async fn read_connection(
    mut stream: Box<dyn Conn>,
    cx: &SourceContext,
    decoder: &LineDecoder,
    source: &Arc<str>,
) -> Result<(), BoxError> {
    // Events keep slices of the chunk they were read in (no copy per line);
    // a chunk is freed when its last event is. A quiet connection holds none.
    let mut buf = ReadBuf::new(READ_CHUNK);
    let mut state = LineState::default();
    // One batch may be on its way into the queue (a persisted queue writes
    // it) while the next is read and decoded: the two overlap on different
    // threads. Back-pressure still holds: a third waits for the first.
    let mut in_flight: Option<tokio::task::JoinHandle<Result<(), Closed>>> = None;
    // Sized from the last read, so the batch is not regrown line by line.
    let mut expect = 64usize;
    let result = loop {
        let n = tokio::select! {
            _ = cx.shutdown.cancelled() => 0,
            r = buf.read_from(&mut stream) => match r {
                Ok(n) => n,
                Err(e) => break Err(e.into()),
            },
        };
        let eof = n == 0;
        cx.metrics.bytes_in.add(n as u64);
        let mut events = Vec::with_capacity(expect);
        let chunk = buf.bytes().split().freeze();
        let consumed = decoder.decode(&chunk, eof, &mut state, &mut events, source);
        expect = (events.len() + events.len() / 8).clamp(64, 8192);
        // The incomplete last line waits for the next read.
        buf.bytes().extend_from_slice(&chunk[consumed..]);
        if !events.is_empty() {
            if let Err(e) = finish(in_flight.take()).await {
                break Err(e);
            }
            let count = events.len() as u64;
            cx.metrics.events_in.add(count);
            let out = Arc::clone(&cx.out);
            let metrics = Arc::clone(&cx.metrics);
            in_flight = Some(tokio::spawn(async move {
                out.send(events).await?;
                metrics.events_out.add(count);
                Ok(())
            }));
        }
        if eof {
            break Ok(());
        }
    };
    // Whatever ended the connection, the batch already read goes in.
    let last = finish(in_flight.take()).await;
    result.and(last)
}

/// Waits for a spawned send.
async fn finish(pending: Option<tokio::task::JoinHandle<Result<(), Closed>>>) -> Result<(), BoxError> {
    match pending {
        None => Ok(()),
        Some(h) => match h.await {
            Ok(r) => r.map_err(Into::into),
            Err(e) => Err(format!("queue send task failed: {e}").into()),
        },
    }
}

/// Most bytes read at a time (and the size of the buffers events slice)
/// while a connection sends a lot.
const READ_CHUNK: usize = 256 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{source_context, Capture};
    use tokio::net::TcpStream;
    #[tokio::test]
    async fn tls_lines_arrive_and_a_plaintext_sender_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, tls) = crate::testkit::tls_listen_config(dir.path());
        let mut l = crate::testkit::listening_source(&SPEC, &format!("format = \"lines\"\n{tls}"));
        let lines: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let messages = crate::testkit::tls_then_plain_text(&mut l, &cert, lines.as_bytes(), b"plain line\n", 100).await;
        assert_eq!(messages, (0..100).map(|i| format!("line {i}")).collect::<Vec<_>>());
        assert_eq!(l.metrics.events_in.get(), 100);
        assert_eq!(l.metrics.counter("connections").get(), 2);
    }

    #[test]
    fn tls_config_errors_name_their_key() {
        let e = crate::testkit::build_source(
            &SPEC,
            "address = \"127.0.0.1:0\"\ntls = { cert = \"/nonexistent.pem\", key = \"/x\" }",
        )
        .err()
        .unwrap();
        assert_eq!(e.path, "test.tcp.tls.cert");
    }

    #[tokio::test]
    async fn receives_over_a_real_socket() {
        use tokio::io::AsyncWriteExt;
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        let src = crate::testkit::build_source(&SPEC, &format!("address = \"{addr}\"")).unwrap();
        let cap = Arc::new(Capture::default());
        let (cx, shutdown, m) = source_context(Arc::clone(&cap));
        let task = tokio::spawn(src.run(cx));
        let mut s = loop {
            match TcpStream::connect(addr).await {
                Ok(s) => break s,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            }
        };
        for i in 0..1000 {
            s.write_all(format!("{{\"i\":{i}}}\n").as_bytes()).await.unwrap();
        }
        s.write_all(b"\xff\xfe garbage\n").await.unwrap();
        s.shutdown().await.unwrap();
        for _ in 0..200 {
            if cap.events.lock().len() == 1001 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        shutdown.cancel();
        task.await.unwrap().unwrap();
        let events = cap.events.lock();
        assert_eq!(events.len(), 1001);
        assert_eq!(m.events_failed.get(), 1);
        assert!(events[1000].has_tag("_jsonparsefailure"));
        assert_eq!(m.events_in.get(), 1001);
    }
}
