//! `tcp`: forwards events to a TCP peer as ndjson or RFC 5424 syslog.
//!
//! Why: the plainest way to feed another log processor (Logstash `tcp`
//! input, rsyslog/syslog-ng `imtcp`, another sluice `tcp` source).
//!
//! - `encoding = "ndjson"` (default) writes one JSON object per event;
//!   `"syslog"` writes RFC 5424 messages (see [`super::encoding`] for how PRI,
//!   HOSTNAME, APP-NAME and MSG are taken from the event).
//! - `framing = "newline"` (default) ends each message with LF (CR/LF inside a
//!   syslog MSG become spaces); `"octet_counting"` prefixes each with its
//!   length and a space (RFC 6587 §3.4.1), which keeps multi-line messages.
//!
//! Delivery: the connection is opened lazily on the first write and a batch is
//! encoded into one reused buffer and written with a single `write_all`
//! (Nagle left on: one large write per batch). `Ok` means the kernel accepted
//! every byte; TCP itself gives no application-level acknowledgement, so bytes
//! in flight when the peer crashes can be lost — the same limit as every plain
//! TCP shipper. Before reusing a connection the sink checks whether the peer
//! already closed it (a non-blocking read), so a restarted receiver is noticed
//! before writing into a dead socket. Any error (connect, write, timeout)
//! drops the connection and returns `Err`; the runtime retries the whole batch
//! on a new connection. Delivery is therefore at-least-once: a batch that was
//! partly written before the error is sent again in full, so the receiver can
//! see duplicates.
//!
//! TLS: with `tls = { ca = "ca.pem" }` (and optionally `server_name`, else
//! the address's host) every connection is TLS (rustls, TLS 1.2/1.3) and the
//! receiver's certificate is verified against `ca` — RFC 5425 syslog over TLS
//! with `encoding = "syslog"` and `framing = "octet_counting"`, which is what
//! rsyslog's `imtcp` with `StreamDriver.Mode="1"` expects. See
//! [`crate::tls`].

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Sink, SinkSpec};
use sluice_core::config::{parse_table, ConfigError, HumanDuration, Positive};
use sluice_core::metrics::{ComponentMetrics, Counter};
use sluice_core::Event;
use tokio::net::TcpStream;

use super::encoding::{encode, Encoding};
use crate::net::{check_address, peer_closed, Stream};
use crate::tls::{connector, ClientTls};

/// Registry entry.
pub const SPEC: SinkSpec = SinkSpec {
    name: "tcp",
    summary: "ndjson or RFC 5424 syslog over TCP (newline or octet-counting framing)",
    example: "address = \"127.0.0.1:5140\"\nencoding = \"syslog\"\nframing = \"octet_counting\"\n",
    build,
};

/// How messages are delimited on the stream.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Framing {
    /// Each message ends with LF.
    Newline,
    /// `LEN SP MSG` (RFC 6587 octet counting).
    OctetCounting,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Peer, `host:port` (resolved on each connect).
    address: String,
    /// `ndjson` (default) or `syslog`.
    #[serde(default = "default_encoding")]
    encoding: Encoding,
    /// `newline` (default) or `octet_counting`.
    #[serde(default = "default_framing")]
    framing: Framing,
    /// Longest wait for a connection.
    #[serde(default = "crate::defaults::secs::<10>")]
    connect_timeout: Positive<HumanDuration>,
    /// Longest wait for one batch to be written.
    #[serde(default = "crate::defaults::secs::<30>")]
    write_timeout: Positive<HumanDuration>,
    /// Connect with TLS, verifying the peer against `ca`.
    #[serde(default)]
    tls: Option<ClientTls>,
}

fn default_encoding() -> Encoding {
    Encoding::Ndjson
}
fn default_framing() -> Framing {
    Framing::Newline
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Sink>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    check_address(&c.address).map_err(|m| cx.error("address", m))?;
    for (key, d) in [("connect_timeout", c.connect_timeout), ("write_timeout", c.write_timeout)] {
        if d.0.is_zero() {
            return Err(cx.error(key, "must be greater than 0"));
        }
    }
    let tls = c
        .tls
        .as_ref()
        .map(|t| connector(t, &c.address))
        .transpose()
        .map_err(|(k, m)| cx.error(&format!("tls.{k}"), m))?;
    Ok(Box::new(TcpSink {
        tls,
        connects: cx.metrics.counter("connects"),
        metrics: Arc::clone(&cx.metrics),
        c,
        stream: None,
        buf: Vec::with_capacity(64 << 10),
        scratch: Vec::new(),
    }))
}

struct TcpSink {
    c: Config,
    tls: Option<(tokio_rustls::TlsConnector, tokio_rustls::rustls::pki_types::ServerName<'static>)>,
    metrics: Arc<ComponentMetrics>,
    connects: Arc<Counter>,
    stream: Option<Stream>,
    buf: Vec<u8>,
    scratch: Vec<u8>,
}

impl TcpSink {
    fn encode(&mut self, events: &[Event]) {
        self.buf.clear();
        for e in events {
            match self.c.framing {
                Framing::Newline => {
                    encode(self.c.encoding, e, true, &mut self.buf);
                    self.buf.push(b'\n');
                }
                Framing::OctetCounting => {
                    self.scratch.clear();
                    encode(self.c.encoding, e, false, &mut self.scratch);
                    self.buf.extend_from_slice(self.scratch.len().to_string().as_bytes());
                    self.buf.push(b' ');
                    self.buf.extend_from_slice(&self.scratch);
                }
            }
        }
    }

    async fn connect(&mut self) -> Result<Stream, BoxError> {
        let addr = &self.c.address;
        let timeout = self.c.connect_timeout.0;
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(format!("connect {addr}: {e}").into()),
            Err(_) => return Err(format!("connect {addr}: timed out after {timeout:?}").into()),
        };
        stream.set_nodelay(false)?;
        let stream = match &self.tls {
            None => Stream::Plain(stream),
            Some((conn, name)) => match tokio::time::timeout(timeout, conn.connect(name.clone(), stream)).await {
                Ok(Ok(s)) => Stream::Tls(Box::new(s)),
                Ok(Err(e)) => return Err(format!("tls handshake with {addr}: {e}").into()),
                Err(_) => return Err(format!("tls handshake with {addr}: timed out after {timeout:?}").into()),
            },
        };
        self.connects.inc();
        Ok(stream)
    }
}

#[async_trait]
impl Sink for TcpSink {
    async fn write(&mut self, events: &[Event]) -> Result<(), BoxError> {
        if events.is_empty() {
            return Ok(());
        }
        self.encode(events);
        if self.stream.as_ref().is_some_and(|s| peer_closed(s.tcp())) {
            self.stream = None;
        }
        let mut stream = match self.stream.take() {
            Some(s) => s,
            None => self.connect().await?,
        };
        let addr = &self.c.address;
        match tokio::time::timeout(self.c.write_timeout.0, stream.write_all(&self.buf)).await {
            Ok(Ok(())) => {}
            // The stream is dropped: the retry reconnects.
            Ok(Err(e)) => return Err(format!("write to {addr}: {e}").into()),
            Err(_) => return Err(format!("write to {addr}: timed out after {:?}", self.c.write_timeout.0).into()),
        }
        self.metrics.bytes_out.add(self.buf.len() as u64);
        self.stream = Some(stream);
        Ok(())
    }

    async fn close(&mut self) -> Result<(), BoxError> {
        if let Some(mut s) = self.stream.take() {
            s.shutdown().await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::build_sink;
    use parking_lot::Mutex;
    use sluice_core::codec::to_json_string;
    use std::time::Duration;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;
    use tokio::task::JoinHandle;

    /// Accepts one connection at a time and appends everything it reads to `got`.
    fn serve(listener: TcpListener, got: Arc<Mutex<Vec<u8>>>) -> JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else { return };
                let mut buf = vec![0u8; 8192];
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => got.lock().extend_from_slice(&buf[..n]),
                    }
                }
            }
        })
    }

    async fn wait_for(got: &Mutex<Vec<u8>>, lines: usize) {
        for _ in 0..500 {
            if got.lock().iter().filter(|b| **b == b'\n').count() >= lines {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("timed out waiting for {lines} lines: {}", String::from_utf8_lossy(&got.lock()));
    }

    fn events(from: usize, n: usize) -> Vec<Event> {
        (from..from + n).map(|i| Event::from_message(format!("event {i:03}"))).collect()
    }

    #[tokio::test]
    async fn ndjson_lines_arrive_exactly() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let server = serve(listener, Arc::clone(&got));
        let cx = BuildContext::for_test("sink", "tcp");
        let mut s = (SPEC.build)(toml::from_str(&format!("address = \"{addr}\"")).unwrap(), &cx).unwrap();
        let evs = events(0, 25);
        for chunk in evs.chunks(10) {
            s.write(chunk).await.unwrap();
        }
        s.close().await.unwrap();
        wait_for(&got, 25).await;
        let text = String::from_utf8(got.lock().clone()).unwrap();
        let expected: Vec<String> = evs.iter().map(to_json_string).collect();
        assert_eq!(text.lines().collect::<Vec<_>>(), expected);
        assert_eq!(cx.metrics.bytes_out.get(), text.len() as u64);
        assert_eq!(cx.metrics.counter("connects").get(), 1);
        server.abort();
    }

    #[tokio::test]
    async fn reconnects_after_the_receiver_restarts_and_the_retried_batch_arrives() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let server = serve(listener, Arc::clone(&got));
        let cx = BuildContext::for_test("sink", "tcp");
        let v = toml::from_str(&format!("address = \"{addr}\"\nconnect_timeout = \"1s\"")).unwrap();
        let mut s = (SPEC.build)(v, &cx).unwrap();
        let all = events(0, 30);
        s.write(&all[0..10]).await.unwrap();
        wait_for(&got, 10).await;

        // The receiver dies (listener and connection closed).
        server.abort();
        let _ = server.await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let err = s.write(&all[10..20]).await.unwrap_err();
        assert!(err.to_string().contains(&addr.to_string()), "{err}");

        // It comes back on the same port; the runtime retries the same batch.
        let listener = TcpListener::bind(addr).await.unwrap();
        let server = serve(listener, Arc::clone(&got));
        s.write(&all[10..20]).await.unwrap();
        s.write(&all[20..30]).await.unwrap();
        s.close().await.unwrap();
        wait_for(&got, 30).await;
        // Exactly once each, in order: the failed write found the dead
        // connection before writing (the peer-closed check) and its connect
        // was refused, so nothing of batch 10..20 went out twice.
        let text = String::from_utf8(got.lock().clone()).unwrap();
        let expected: Vec<String> = all.iter().map(to_json_string).collect();
        assert_eq!(text.lines().collect::<Vec<_>>(), expected);
        assert_eq!(cx.metrics.counter("connects").get(), 2);
        server.abort();
    }

    #[tokio::test]
    async fn syslog_octet_counting_bytes_are_exact() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let server = serve(listener, Arc::clone(&got));
        let mut s =
            build_sink(&SPEC, &format!("address = \"{addr}\"\nencoding = \"syslog\"\nframing = \"octet_counting\""))
                .unwrap();
        let mut e = Event::from_message("line one\nline two");
        e.timestamp = 1_700_000_000_000_000_000;
        e.identity = Arc::new(sluice_core::Identity::new("g", "s", "web-1"));
        e.fields_mut().insert("appname", sluice_core::Value::from("nginx"));
        e.fields_mut().insert("severity", sluice_core::Value::from("err"));
        e.fields_mut().insert("facility", sluice_core::Value::from("local0"));
        let mut plain = Event::from_message("hi");
        plain.timestamp = 1_700_000_000_500_000_000;
        s.write(&[e, plain]).await.unwrap();
        s.close().await.unwrap();
        let m1 = "<131>1 2023-11-14T22:13:20Z web-1 nginx - - - line one\nline two";
        let m2 = "<13>1 2023-11-14T22:13:20.500Z - sluice - - - hi";
        let expected = format!("{} {m1}{} {m2}", m1.len(), m2.len());
        assert_eq!(expected.len(), 2 + 1 + 63 + 2 + 1 + 48);
        for _ in 0..500 {
            if got.lock().len() >= expected.len() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(String::from_utf8(got.lock().clone()).unwrap(), expected);
        server.abort();
    }

    #[tokio::test]
    async fn syslog_newline_framing_keeps_one_line_per_event() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let server = serve(listener, Arc::clone(&got));
        let mut s = build_sink(&SPEC, &format!("address = \"{addr}\"\nencoding = \"syslog\"")).unwrap();
        let mut e = Event::from_message("a\nb");
        e.timestamp = 1_700_000_000_000_000_000;
        s.write(&[e]).await.unwrap();
        s.close().await.unwrap();
        wait_for(&got, 1).await;
        assert_eq!(String::from_utf8(got.lock().clone()).unwrap(), "<13>1 2023-11-14T22:13:20Z - sluice - - - a b\n");
        server.abort();
    }

    #[tokio::test]
    async fn a_peer_that_stops_reading_hits_write_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // Accepts and never reads.
        let server = tokio::spawn(async move {
            let (_s, _) = listener.accept().await.unwrap();
            std::future::pending::<()>().await;
        });
        let mut s = build_sink(&SPEC, &format!("address = \"{addr}\"\nwrite_timeout = \"300ms\"")).unwrap();
        // Far more than the loopback socket buffers hold.
        let big = Event::from_message("x".repeat(32 << 20));
        let started = std::time::Instant::now();
        let err = s.write(&[big]).await.unwrap_err();
        assert!(err.to_string().contains("timed out after 300ms"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
        server.abort();
    }

    #[tokio::test]
    async fn connection_refused_is_an_error() {
        // Bind then drop to get a port nobody listens on.
        let addr = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
        let mut s = build_sink(&SPEC, &format!("address = \"{addr}\"")).unwrap();
        assert!(s.write(&events(0, 1)).await.is_err());
    }

    #[tokio::test]
    async fn syslog_over_tls_is_octet_counted_and_verified() {
        use tokio_rustls::TlsAcceptor;
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = crate::tls::self_signed(dir.path());
        let acceptor: TlsAcceptor =
            crate::tls::acceptor(&crate::tls::ServerTls { cert: cert.clone(), key: key.clone() }).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let got2 = Arc::clone(&got);
        let server = tokio::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            let mut s = acceptor.accept(s).await.unwrap();
            let mut buf = vec![0u8; 8192];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got2.lock().extend_from_slice(&buf[..n]),
                }
            }
        });
        let body = format!(
            "address = \"{addr}\"\nencoding = \"syslog\"\nframing = \"octet_counting\"\ntls = {{ ca = \"{}\", server_name = \"localhost\" }}",
            cert.display()
        );
        let mut s = build_sink(&SPEC, &body).unwrap();
        let mut e = Event::from_message("over tls");
        e.timestamp = 1_700_000_000_000_000_000;
        s.write(&[e.clone(), e]).await.unwrap();
        s.close().await.unwrap();
        server.await.unwrap();
        let m = "<13>1 2023-11-14T22:13:20Z - sluice - - - over tls";
        assert_eq!(String::from_utf8(got.lock().clone()).unwrap(), format!("{} {m}{} {m}", m.len(), m.len()));

        // A certificate the sink does not trust: the handshake fails with a clear error.
        let other = tempfile::tempdir().unwrap();
        let (other_cert, _) = crate::tls::self_signed(other.path());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = crate::tls::acceptor(&crate::tls::ServerTls { cert, key }).unwrap();
        let server = tokio::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            let _ = acceptor.accept(s).await;
        });
        let body =
            format!("address = \"{addr}\"\ntls = {{ ca = \"{}\", server_name = \"localhost\" }}", other_cert.display());
        let mut s = build_sink(&SPEC, &body).unwrap();
        let err = s.write(&events(0, 1)).await.unwrap_err();
        assert!(err.to_string().starts_with(&format!("tls handshake with {addr}: ")), "{err}");
        let _ = server.await;
    }

    #[test]
    fn config_errors_name_the_key() {
        let cases = [
            ("address = \"nope\"", "test.tcp.address: "),
            ("address = \"h:1\"\nframing = \"bogus\"", "test.tcp.framing: "),
            ("address = \"h:1\"\nwrite_timeout = \"0s\"", "test.tcp.write_timeout: "),
            ("address = \"h:1\"\ntls = { ca = \"/nonexistent.pem\" }", "test.tcp.tls.ca: cannot read /nonexistent.pem"),
        ];
        crate::testkit::check_errors(&SPEC, build_sink, &cases);
        assert!(build_sink(&SPEC, SPEC.example).is_ok());
    }
}
