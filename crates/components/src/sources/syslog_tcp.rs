//! `syslog_tcp`: syslog messages over TCP, framed per frame either by newline
//! (or NUL, which Python's `SysLogHandler` sends and rsyslog accepts) or by
//! RFC 6587 octet counting (`LEN SP MSG`, what rsyslog's
//! `TCP_Framing="octet-counted"` and syslog-ng's `syslog()` driver send),
//! detected per frame by [`sluice_parsers::framing::Decoder`] in auto mode,
//! and mapped to events as described in [`crate::syslog_event`].
//!
//! Why: TCP is how syslog is shipped when loss matters, so this source never
//! reads faster than the pipeline takes: everything decoded from one read is
//! handed to the queue as one batch and the socket is not read again until
//! the queue took it, so back-pressure reaches the sender through TCP flow
//! control.
//!
//! Framing problems never end a connection, the decoder resynchronises:
//! - a frame longer than `max_message_bytes` is cut there: its first
//!   `max_message_bytes` become an event tagged `_oversized` (counted in
//!   `oversized_frames`) and the rest is skipped (by its octet count, or to
//!   the next newline) without being buffered, which is what bounds memory
//!   per connection to about `max_message_bytes` plus one read;
//! - an invalid octet count skips to the next newline (`framing_errors`).
//!
//! At end of stream (the peer half-closed or closed), a last newline-mode
//! frame without its `\n` is kept as an event; a truncated octet-counted frame
//! is counted in `framing_errors` and dropped (its length says it is
//! incomplete). A frame of only whitespace is ignored. Idle or silent
//! connections cost a task and no read buffer ([`sluice_net::readbuf`]).
//! At most `max_connections` are served at once; one more is closed at once
//! and counted (`refused_connections`); failed accepts (descriptor limit)
//! are counted (`accept_errors`), logged at most every 10 s and waited out
//! ([`sluice_net::listener`]).
//!
//! TLS: with `tls = { cert = "server.pem", key = "server.key" }` (PEM; the
//! certificate file may hold the chain) every connection is TLS (rustls with
//! the ring provider, TLS 1.2 and 1.3, no client certificates), as RFC 5425
//! syslog-over-TLS senders expect. The files are loaded when the config is
//! built, so `sluice validate` reports a bad file at `...tls.cert` / `.key`.
//! A handshake that fails or takes longer than 10 s ends the connection and
//! is counted in `tls_handshake_errors`.
//!
//! Counters: `events_in`, `events_out`, `events_failed` (parse failures),
//! `bytes_in`, `errors` (accept/read errors), `oversized_frames`,
//! `framing_errors`, `connections` (accepted in total), `refused_connections`,
//! `accept_errors`, `tls_handshake_errors`; gauge `open_connections`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Buf as _;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, Positive};
use sluice_core::value::Value;
use sluice_net::ReadBuf;
use sluice_parsers::framing::Decoder;
use tokio::io::AsyncRead;
use tokio::net::TcpListener;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use crate::syslog_event::{peer_value, DateKeys, Mapper};
use crate::syslog_stream::{send, StreamFraming};

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "syslog_tcp",
    summary: "syslog (RFC 5424 / RFC 3164) over TCP, newline or octet-counted framing",
    example: "address = \"127.0.0.1:0\"\nmax_message_bytes = \"64KiB\"\n",
    build,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Listen address, e.g. `0.0.0.0:601`.
    address: String,
    /// Longest frame; longer ones are skipped and counted.
    #[serde(default = "default_max_message")]
    max_message_bytes: ByteSize,
    /// Year for RFC 3164 timestamps (default: current, with rollover).
    year: Option<i32>,
    /// Zone for RFC 3164 timestamps (`UTC`, `+02:00`); default UTC.
    timezone: Option<String>,
    /// Serve TLS with this certificate and key.
    tls: Option<TlsKeys>,
    /// Connections served at once; more are closed at once and counted.
    #[serde(default = "default_max_connections")]
    max_connections: Positive<usize>,
}

fn default_max_connections() -> Positive<usize> {
    Positive::<usize>::of(crate::net::DEFAULT_MAX_CONNECTIONS)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsKeys {
    /// PEM certificate (chain), server certificate first.
    cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    key: PathBuf,
}

/// Most bytes read at a time while a connection sends a lot.
const READ_CHUNK: usize = 64 * 1024;

fn load_tls(t: &TlsKeys, cx: &BuildContext) -> Result<TlsAcceptor, ConfigError> {
    let read = |p: &PathBuf, key: &str| {
        std::fs::read(p).map_err(|e| cx.error(key, format!("cannot read {}: {e}", p.display())))
    };
    let cert_pem = read(&t.cert, "tls.cert")?;
    let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut cert_pem.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|e| cx.error("tls.cert", format!("invalid PEM in {}: {e}", t.cert.display())))?;
    if certs.is_empty() {
        return Err(cx.error("tls.cert", format!("no certificate in {}", t.cert.display())));
    }
    let key_pem = read(&t.key, "tls.key")?;
    let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut key_pem.as_slice())
        .map_err(|e| cx.error("tls.key", format!("invalid PEM in {}: {e}", t.key.display())))?
        .ok_or_else(|| cx.error("tls.key", format!("no private key in {}", t.key.display())))?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| cx.error("tls", e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| cx.error("tls", format!("certificate and key do not fit: {e}")))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn default_max_message() -> ByteSize {
    ByteSize(64 << 10)
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let address: SocketAddr =
        c.address.parse().map_err(|e| cx.error("address", format!("invalid socket address {:?}: {e}", c.address)))?;
    if c.max_message_bytes.0 == 0 || c.max_message_bytes.0 > (1 << 30) {
        return Err(cx.error("max_message_bytes", "must be between 1 byte and 1GiB"));
    }
    let opts = DateKeys { year: c.year, timezone: c.timezone }.options(cx)?;
    let tls = c.tls.as_ref().map(|t| load_tls(t, cx)).transpose()?;
    Ok(Box::new(SyslogTcp {
        address,
        max_message: c.max_message_bytes.0 as usize,
        opts,
        tls,
        max_connections: c.max_connections.get(),
    }))
}

struct SyslogTcp {
    address: SocketAddr,
    max_message: usize,
    opts: sluice_parsers::syslog::Options,
    tls: Option<TlsAcceptor>,
    max_connections: usize,
}

/// What every connection of one source shares: its framing and counters.
type Shared = StreamFraming;

#[async_trait]
impl Source for SyslogTcp {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let listener = TcpListener::bind(self.address).await.map_err(|e| format!("bind {}: {e}", self.address))?;
        let local = listener.local_addr()?;
        tracing::info!(source = %cx.id, address = %local, tls = self.tls.is_some(), "syslog_tcp source listening");
        let shared = Arc::new(Shared {
            mapper: Mapper {
                opts: self.opts,
                source: Arc::from(format!("syslog_tcp:{local}")),
                metrics: Arc::clone(&cx.metrics),
            },
            max_message: self.max_message,
            oversized: cx.metrics.counter("oversized_frames"),
            framing_errors: cx.metrics.counter("framing_errors"),
        });
        // Connections see the same cancellation, flush what they decoded and end.
        let conn_cx = cx.clone();
        crate::acked_stream::serve(listener, &cx, self.max_connections, self.tls.clone(), move |conn, peer| {
            let (cx, shared) = (conn_cx.clone(), Arc::clone(&shared));
            async move { read_connection(conn, peer_value(peer.ip()), &cx, &shared).await }
        })
        .await
    }
}

/// Reads one connection until EOF or shutdown.
async fn read_connection<S: AsyncRead + Unpin>(
    mut stream: S,
    peer: Value,
    cx: &SourceContext,
    shared: &Shared,
) -> Result<(), BoxError> {
    let mut dec = Decoder::new(shared.max_message);
    let mut rb = ReadBuf::new(READ_CHUNK);
    loop {
        let n = tokio::select! {
            _ = cx.shutdown.cancelled() => 0,
            r = rb.read_from(&mut stream) => r?,
        };
        let buf = rb.bytes();
        let eof = n == 0;
        cx.metrics.bytes_in.add(n as u64);
        let mut events = Vec::new();
        let pos = shared.decode(&mut dec, buf, eof, &peer, &mut events);
        buf.advance(pos);
        send(cx, events).await?;
        if eof {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Duration;

    use tokio::io::{AsyncWriteExt, ReadBuf};
    use tokio::net::TcpStream;

    use super::*;
    use crate::testkit::{build_source, source_context, Capture};
    use sluice_core::Event;

    /// A stream that returns the given chunks, one per read.
    struct Chunks(VecDeque<Vec<u8>>);

    impl AsyncRead for Chunks {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            if let Some(c) = self.0.pop_front() {
                assert!(c.len() <= buf.remaining());
                buf.put_slice(&c);
            }
            Poll::Ready(Ok(()))
        }
    }

    fn shared(cx: &SourceContext, max: usize) -> Shared {
        Shared {
            mapper: Mapper { opts: Default::default(), source: Arc::from("t"), metrics: Arc::clone(&cx.metrics) },
            max_message: max,
            oversized: cx.metrics.counter("oversized_frames"),
            framing_errors: cx.metrics.counter("framing_errors"),
        }
    }

    fn octet(msg: &str) -> String {
        format!("{} {msg}", msg.len())
    }

    /// The test stream: 300 messages alternating octet-counted (some with the
    /// rsyslog-style trailing LF inside the count) and newline-framed, then
    /// one oversized octet frame, one oversized line, one more good frame.
    fn stream() -> (Vec<u8>, usize) {
        let mut s = String::new();
        let mut n = 0;
        for i in 0..300 {
            let m = format!("<13>1 2024-01-02T03:04:05Z host app{} - - - message {i}", i % 7);
            match i % 3 {
                0 => s += &octet(&m),
                1 => s += &octet(&format!("{m}\n")),
                _ => s += &format!("{m}\n"),
            }
            n += 1;
        }
        s += &octet(&format!("<13>1 - h a - - - {}", "x".repeat(300)));
        s += &format!("<13>1 - h a - - - {}\n", "y".repeat(300));
        s += &octet("<13>1 - h app - - - message 300");
        n += 1;
        (s.into_bytes(), n)
    }

    #[tokio::test]
    async fn mixed_framing_split_at_random_boundaries() {
        let (input, want) = stream();
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        for round in 0..200 {
            let mut chunks = VecDeque::new();
            let mut p = 0;
            while p < input.len() {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let max = if round % 2 == 0 { 8 } else { 400 };
                let len = (1 + (seed % max) as usize).min(input.len() - p);
                chunks.push_back(input[p..p + len].to_vec());
                p += len;
            }
            let cap = Arc::new(Capture::default());
            let (cx, _s, m) = source_context(Arc::clone(&cap));
            let sh = shared(&cx, 256);
            read_connection(Chunks(chunks), Value::from("1.2.3.4"), &cx, &sh).await.unwrap();
            let events = cap.events.lock();
            // The two oversized frames are kept cut at 256 bytes and tagged.
            assert_eq!(events.len(), want + 2, "round {round}");
            let (cut, good): (Vec<&Event>, Vec<&Event>) = events.iter().partition(|e| e.has_tag("_oversized"));
            assert_eq!(cut.len(), 2, "round {round}");
            for (e, fill) in cut.iter().zip(['x', 'y']) {
                let text = sluice_core::codec::to_json_string(e);
                assert!(text.contains(&fill.to_string().repeat(200)), "round {round}: {text}");
            }
            for (i, e) in good.iter().enumerate() {
                assert_eq!(e.message(), Some(format!("message {i}").as_str()), "round {round}");
                assert!(!e.has_tag("_syslogparsefailure"));
            }
            assert_eq!(good[4].fields().get("appname").and_then(Value::as_str), Some("app4"));
            assert_eq!(m.counter("oversized_frames").get(), 2, "round {round}");
            assert_eq!(m.counter("framing_errors").get(), 0);
            assert_eq!(m.events_failed.get(), 0);
        }
    }

    #[tokio::test]
    async fn eof_keeps_partial_line_and_counts_truncated_octet_frame() {
        let cap = Arc::new(Capture::default());
        let (cx, _s, m) = source_context(Arc::clone(&cap));
        let sh = shared(&cx, 1024);
        let chunks = VecDeque::from([b"<13>1 - h a - - - last line, no newline".to_vec()]);
        read_connection(Chunks(chunks), Value::from("::1"), &cx, &sh).await.unwrap();
        assert_eq!(m.counter("framing_errors").get(), 0);
        let chunks = VecDeque::from([b"100 <13>1 - h a - - - cut".to_vec()]);
        read_connection(Chunks(chunks), Value::from("::1"), &cx, &sh).await.unwrap();
        let events = cap.events.lock();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].message(), Some("last line, no newline"));
        assert_eq!(m.counter("framing_errors").get(), 1);
    }

    async fn start() -> (
        SocketAddr,
        Arc<Capture>,
        tokio_util::sync::CancellationToken,
        Arc<sluice_core::metrics::ComponentMetrics>,
        tokio::task::JoinHandle<Result<(), BoxError>>,
    ) {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        let src = build_source(&SPEC, &format!("address = \"{addr}\"\nmax_message_bytes = 200")).unwrap();
        let cap = Arc::new(Capture::default());
        let (cx, shutdown, m) = source_context(Arc::clone(&cap));
        let task = tokio::spawn(src.run(cx));
        (addr, cap, shutdown, m, task)
    }

    async fn connect(addr: SocketAddr) -> TcpStream {
        for _ in 0..500 {
            if let Ok(s) = TcpStream::connect(addr).await {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("cannot connect to {addr}");
    }

    async fn wait_for(cap: &Capture, n: usize) {
        for _ in 0..500 {
            if cap.events.lock().len() >= n {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    #[tokio::test]
    async fn real_socket_half_close_oversized_and_garbage() {
        let (addr, cap, shutdown, m, task) = start().await;
        // A connection that only sends garbage, and one that stays idle.
        let mut garbage = connect(addr).await;
        garbage
            .write_all(b"\x00\xff\xfe 99999999999999 xx\n\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
            .await
            .unwrap();
        let idle = connect(addr).await;
        // A good one: oversized frame in the middle, then half-close with a partial last line.
        let mut s = connect(addr).await;
        let big = format!("<13>1 - h a - - - {}", "z".repeat(500));
        s.write_all(format!("{}\n<14>1 - h app - - - one\n", octet(&big)).as_bytes()).await.unwrap();
        s.write_all(b"<14>1 - h app - - - two").await.unwrap();
        s.shutdown().await.unwrap();
        // One event from the garbage line, three from the good connection
        // (the oversized frame kept cut and tagged).
        wait_for(&cap, 4).await;
        {
            let events = cap.events.lock();
            let good: Vec<&Event> =
                events.iter().filter(|e| e.fields().get("appname").and_then(Value::as_str) == Some("app")).collect();
            assert_eq!(good.len(), 2);
            assert_eq!(good[0].message(), Some("one"));
            assert_eq!(good[1].message(), Some("two"));
            assert_eq!(events.iter().filter(|e| e.has_tag("_oversized")).count(), 1);
            assert_eq!(good[1].fields().get("peer").and_then(Value::as_str), Some("127.0.0.1"));
        }
        assert_eq!(m.counter("oversized_frames").get(), 1);
        assert_eq!(m.counter("connections").get(), 3);
        // The garbage and idle connections end with the source, nothing crashed;
        // the garbage left as events (kept, lenient 3164 or tagged) is all counted.
        drop(garbage);
        drop(idle);
        shutdown.cancel();
        task.await.unwrap().unwrap();
        let events = cap.events.lock();
        assert_eq!(events.len() as u64, m.events_in.get());
        assert_eq!(m.events_in.get(), m.events_out.get());
    }

    #[test]
    fn tls_config_errors_name_keys() {
        let e = build_source(&SPEC, "address = \"127.0.0.1:0\"\ntls = { cert = \"/nonexistent.pem\", key = \"/x\" }")
            .err()
            .unwrap();
        assert_eq!(e.path, "test.syslog_tcp.tls.cert");
        let dir = tempfile::tempdir().unwrap();
        let (cert, _) = crate::tls::self_signed(dir.path());
        let e = build_source(
            &SPEC,
            &format!("address = \"127.0.0.1:0\"\ntls = {{ cert = \"{0}\", key = \"{0}\" }}", cert.display()),
        )
        .err()
        .unwrap();
        assert_eq!(e.path, "test.syslog_tcp.tls.key");
    }

    #[tokio::test]
    async fn tls_connections_and_plaintext_rejected() {
        use tokio_rustls::rustls::pki_types::ServerName;
        use tokio_rustls::rustls::{ClientConfig, RootCertStore};
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = crate::tls::self_signed(dir.path());
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        let body =
            format!("address = \"{addr}\"\ntls = {{ cert = \"{}\", key = \"{}\" }}", cert.display(), key.display());
        let src = build_source(&SPEC, &body).unwrap();
        let cap = Arc::new(Capture::default());
        let (cx, shutdown, m) = source_context(Arc::clone(&cap));
        let task = tokio::spawn(src.run(cx));

        let mut roots = RootCertStore::empty();
        for c in rustls_pemfile::certs(&mut std::fs::read(&cert).unwrap().as_slice()) {
            roots.add(c.unwrap()).unwrap();
        }
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = connect(addr).await;
        let mut tls = connector.connect(ServerName::try_from("localhost").unwrap(), tcp).await.unwrap();
        for i in 0..100 {
            tls.write_all(octet(&format!("<14>1 - h tlsapp - - - tls {i}\n")).as_bytes()).await.unwrap();
        }
        tls.shutdown().await.unwrap();
        // A plain-text sender to the TLS port: a failed handshake, counted, no event.
        let mut plain = connect(addr).await;
        plain.write_all(b"<14>1 - h a - - - plain\n").await.unwrap();
        wait_for(&cap, 100).await;
        for _ in 0..300 {
            if m.counter("tls_handshake_errors").get() == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        shutdown.cancel();
        task.await.unwrap().unwrap();
        let events = cap.events.lock();
        assert_eq!(events.len(), 100);
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e.message(), Some(format!("tls {i}").as_str()));
        }
        assert_eq!(m.counter("tls_handshake_errors").get(), 1);
        assert_eq!(m.counter("connections").get(), 2);
    }
}
