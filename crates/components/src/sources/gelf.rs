//! `gelf`: GELF 1.1 (Graylog Extended Log Format) over UDP or TCP.
//!
//! - `mode = "udp"`: one message per datagram, or chunked (`1e 0f`, up to
//!   128 chunks) and reassembled within `chunk_timeout` (default 5 s), at
//!   most `max_pending_messages` sets at once (one more drops the oldest,
//!   counted in `chunks_evicted`); a set not completed in time is dropped
//!   and counted (`chunks_expired`), a bad chunk header or an oversized set
//!   in `chunks_invalid`. A payload starting with the gzip or zlib magic is
//!   inflated, never past `max_decompressed_bytes` (no zip bombs).
//! - `mode = "tcp"`: frames end at a NUL byte (what Graylog and the GELF
//!   libraries send) or a newline (JSON holds neither raw), split by
//!   [`sluice_parsers::framing`]; at most `max_connections` at once ([`sluice_net::listener`]),
//!   a connection quiet for `idle_timeout` is closed (`idle_closed`), a
//!   frame longer than `max_message_bytes` is cut there and counted
//!   (`oversized_frames`) and the rest of it skipped.
//! - TLS (`tcp` and `http`): with `tls = { cert, key }` (and `client_ca`
//!   for client certificates) every connection is TLS; a failed or slow
//!   handshake (a plain-text sender) is counted in `tls_handshake_errors`
//!   and closed. UDP has no TLS: `tls` there is a config error.
//!
//! - `mode = "http"` (`gelf/http.rs`): `POST /gelf`, one payload per
//!   request (plain, gzip or zlib, or `Content-Encoding: gzip`), at most
//!   `max_message_bytes`; `202` once the queue took the event, `400` with the
//!   reason for a payload that does not decode (counted in `events_failed`
//!   and `bad_requests`, not stored: HTTP has an error answer). Every request
//!   needs one of the source's ingest `tokens` ([`crate::ingest_auth`]);
//!   the events get the token's identity. `auth = "none"` drops the check.
//!
//! Mapping (see [`sluice_parsers::gelf`] and `docs/specs/gelf.md`):
//! `short_message` → `message`, `timestamp` → the event time, `host` and
//! `full_message` kept, `level` → `level` (name) + `level_number`, `_x` →
//! `x`. The identity is the source's `group` / `subgroup` / `host`: the
//! sender's `host` is a field and never the identity.
//!
//! Bad input is never dropped silently: a payload that is not JSON, has no
//! `short_message`, is nested deeper than `max_depth` or inflates past the
//! limit becomes an event tagged `_gelfparsefailure` whose `message` is the
//! payload's text (or the reason, for a compressed payload) and whose
//! `gelf_error` says why; it is counted in `events_failed`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration, Positive};
use sluice_core::event::{now_ns, Identity};
use sluice_core::metrics::{ComponentMetrics, Counter};
use sluice_core::Event;
use sluice_net::{Listener, ListenerCounters, ReadBuf};
use sluice_parsers::framing;
use sluice_parsers::gelf::{self, Chunk, ChunkLimits, Reassembler, CHUNK_MAGIC};
use tokio::net::{TcpListener, UdpSocket};
use tokio_rustls::TlsAcceptor;

use crate::acked_stream::Conn as Stream;
use crate::ingest_auth::{self, AuthMode, IngestToken, TokenConfig};

mod http;

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "gelf",
    summary: "GELF 1.1 over UDP (chunked, zlib/gzip), TCP (NUL-delimited) or HTTP (POST /gelf)",
    example: "mode = \"udp\"\naddress = \"127.0.0.1:0\"\ngroup = \"acme\"\n",
    build,
};

/// Transport.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Udp,
    Tcp,
    Http,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// `udp` or `tcp`.
    mode: Mode,
    /// Listen address, e.g. `0.0.0.0:12201`.
    address: String,
    /// Largest message (a datagram, a reassembled chunk set, a TCP frame).
    #[serde(default = "crate::defaults::mib::<1>")]
    max_message_bytes: Positive<ByteSize>,
    /// Largest inflated payload.
    #[serde(default = "crate::defaults::mib::<8>")]
    max_decompressed_bytes: Positive<ByteSize>,
    /// Deepest JSON nesting accepted.
    #[serde(default = "crate::defaults::count::<32>")]
    max_depth: Positive<usize>,
    /// Most chunks per message (at most 128).
    #[serde(default = "default_max_chunks")]
    max_chunks: u8,
    /// Chunked messages waiting for their last chunk at once.
    #[serde(default = "crate::defaults::count::<1024>")]
    max_pending_messages: Positive<usize>,
    /// How long a chunk set may wait for its last chunk.
    #[serde(default = "crate::defaults::secs::<5>")]
    chunk_timeout: Positive<HumanDuration>,
    /// TCP connections served at once; more are closed and counted.
    #[serde(default = "crate::defaults::count::<16_384>")]
    max_connections: Positive<usize>,
    /// A TCP connection quiet this long is closed.
    #[serde(default = "crate::defaults::secs::<300>")]
    idle_timeout: Positive<HumanDuration>,
    /// Identity of every event (the sender cannot change it).
    #[serde(default)]
    group: String,
    /// Identity of every event.
    #[serde(default)]
    subgroup: String,
    /// Identity of every event (GELF's `host` stays a field).
    #[serde(default)]
    host: String,
    /// `mode = "http"`: `token` (default) or `none`.
    #[serde(default)]
    auth: AuthMode,
    /// `mode = "http"`: ingest tokens by name (their identity replaces the above).
    #[serde(default)]
    tokens: std::collections::BTreeMap<String, TokenConfig>,
    /// `mode = "tcp"` and `"http"`: TLS, with optional client certificates.
    #[serde(default)]
    tls: Option<crate::tls::ListenTls>,
}

fn default_max_chunks() -> u8 {
    gelf::MAX_CHUNKS
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let address: SocketAddr =
        c.address.parse().map_err(|e| cx.error("address", format!("invalid socket address {:?}: {e}", c.address)))?;
    if c.max_chunks == 0 || c.max_chunks > gelf::MAX_CHUNKS {
        return Err(cx.error("max_chunks", "must be between 1 and 128"));
    }
    let tokens = if c.mode == Mode::Http {
        ingest_auth::resolve(c.auth, &c.tokens, cx)?
    } else if !c.tokens.is_empty() || c.auth != AuthMode::Token {
        return Err(cx.error("tokens", "tokens and auth apply to mode = \"http\" only"));
    } else {
        Vec::new()
    };
    let tls = match (&c.tls, c.mode) {
        (Some(_), Mode::Udp) => {
            return Err(cx.error("tls", "tls applies to mode = \"tcp\" and \"http\" (UDP has none)"))
        }
        (t, _) => t.as_ref().map(|t| crate::http_listen::acceptor(t, cx)).transpose()?,
    };
    Ok(Box::new(Gelf {
        tls,
        auth: c.auth,
        tokens,
        mode: c.mode,
        address,
        max_message: c.max_message_bytes.0 as usize,
        limits: ChunkLimits {
            max_chunks: c.max_chunks,
            max_message_bytes: c.max_message_bytes.0 as usize,
            max_pending: c.max_pending_messages.get(),
            timeout: c.chunk_timeout.0,
        },
        max_connections: c.max_connections.get(),
        idle: c.idle_timeout.0,
        max_decompressed: c.max_decompressed_bytes.0 as usize,
        max_depth: c.max_depth.get(),
        identity: Arc::new(Identity::new(c.group, c.subgroup, c.host)),
    }))
}

struct Gelf {
    tls: Option<TlsAcceptor>,
    auth: AuthMode,
    tokens: Vec<IngestToken>,
    mode: Mode,
    address: SocketAddr,
    max_message: usize,
    limits: ChunkLimits,
    max_connections: usize,
    idle: Duration,
    max_decompressed: usize,
    max_depth: usize,
    identity: Arc<Identity>,
}

/// Turns payloads into events, counting failures.
struct Decoder {
    max_decompressed: usize,
    max_depth: usize,
    identity: Arc<Identity>,
    source: Arc<str>,
    metrics: Arc<ComponentMetrics>,
}

impl Decoder {
    /// The event of one complete payload (compressed or not); a bad one is
    /// kept, tagged `_gelfparsefailure`, with the reason in `gelf_error`.
    fn event(&self, payload: &[u8]) -> Event {
        let now = now_ns();
        let decoded = gelf::decompress(payload, self.max_decompressed)
            .map_err(|e| (e, None))
            .and_then(|json| gelf::decode(&json, self.max_depth).map_err(|e| (e, Some(json.into_owned()))));
        match decoded {
            Ok(m) => {
                let mut e = Event::new(
                    m.timestamp.unwrap_or(now),
                    m.fields,
                    Arc::clone(&self.identity),
                    Arc::clone(&self.source),
                );
                if m.bad_timestamp {
                    e.add_tag("_timestampparsefailure");
                }
                e
            }
            Err((err, json)) => {
                self.metrics.events_failed.inc();
                let text = match json {
                    Some(j) => String::from_utf8_lossy(&j).into_owned(),
                    None if !payload.starts_with(&[0x1f, 0x8b]) && payload.first() != Some(&0x78) => {
                        String::from_utf8_lossy(payload).into_owned()
                    }
                    None => err.to_string(),
                };
                let mut fields = sluice_core::Object::with_capacity(3);
                fields.insert("message", text);
                fields.insert("gelf_error", err.to_string());
                let mut e = Event::new(now, fields, Arc::clone(&self.identity), Arc::clone(&self.source));
                e.add_tag("_gelfparsefailure");
                e
            }
        }
    }
}

#[async_trait]
impl Source for Gelf {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        match self.mode {
            Mode::Udp => self.run_udp(cx).await,
            Mode::Tcp => self.run_tcp(cx).await,
            Mode::Http => self.run_http(cx).await,
        }
    }
}

/// Datagrams decoded per batch handed to the queue.
const UDP_BATCH: usize = 512;

impl Gelf {
    fn decoder(&self, local: SocketAddr, cx: &SourceContext) -> Decoder {
        Decoder {
            max_decompressed: self.max_decompressed,
            max_depth: self.max_depth,
            identity: Arc::clone(&self.identity),
            source: Arc::from(format!("gelf:{local}")),
            metrics: Arc::clone(&cx.metrics),
        }
    }

    async fn run_udp(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let sock = UdpSocket::bind(self.address).await.map_err(|e| format!("bind {}: {e}", self.address))?;
        let local = sock.local_addr()?;
        tracing::info!(source = %cx.id, address = %local, "gelf source listening (udp)");
        let decoder = self.decoder(local, &cx);
        let counters = UdpCounters {
            expired: cx.metrics.counter("chunks_expired"),
            invalid: cx.metrics.counter("chunks_invalid"),
            evicted: cx.metrics.counter("chunks_evicted"),
            duplicate: cx.metrics.counter("chunks_duplicate"),
            oversized: cx.metrics.counter("oversized_frames"),
        };
        let mut chunks = Reassembler::new(self.limits);
        let mut buf = vec![0u8; 65_536];
        let mut tick = tokio::time::interval((self.limits.timeout / 4).max(Duration::from_millis(50)));
        loop {
            tokio::select! {
                _ = cx.shutdown.cancelled() => return Ok(()),
                _ = tick.tick() => counters.expired.add(chunks.expire(Instant::now()) as u64),
                r = sock.recv_from(&mut buf) => {
                    let (n, _peer) = r?;
                    let mut events = Vec::new();
                    self.datagram(&buf[..n], &mut chunks, &decoder, &counters, &cx, &mut events);
                    // Whatever else already waits goes in the same batch.
                    while events.len() < UDP_BATCH {
                        match sock.try_recv_from(&mut buf) {
                            Ok((n, _)) => self.datagram(&buf[..n], &mut chunks, &decoder, &counters, &cx, &mut events),
                            Err(_) => break,
                        }
                    }
                    if !events.is_empty() {
                        let count = events.len() as u64;
                        cx.metrics.events_in.add(count);
                        cx.out.send(events).await?;
                        cx.metrics.events_out.add(count);
                    }
                }
            }
        }
    }

    fn datagram(
        &self,
        d: &[u8],
        chunks: &mut Reassembler,
        decoder: &Decoder,
        counters: &UdpCounters,
        cx: &SourceContext,
        out: &mut Vec<Event>,
    ) {
        cx.metrics.bytes_in.add(d.len() as u64);
        if d.is_empty() {
            return;
        }
        if d.starts_with(&CHUNK_MAGIC) {
            match chunks.push(d, Instant::now()) {
                Ok(Chunk::Complete(m)) => out.push(decoder.event(&m)),
                Ok(Chunk::Stored) => {}
                Ok(Chunk::StoredEvicting) => counters.evicted.inc(),
                Ok(Chunk::Duplicate) => counters.duplicate.inc(),
                Err(e) => {
                    counters.invalid.inc();
                    tracing::debug!(source = %cx.id, error = %e, "gelf chunk set dropped");
                }
            }
        } else if d.len() > self.max_message {
            counters.oversized.inc();
            let mut e = decoder.event(&d[..self.max_message]);
            e.add_tag("_oversized");
            out.push(e);
        } else {
            out.push(decoder.event(d));
        }
    }

    async fn run_tcp(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let listener = TcpListener::bind(self.address).await.map_err(|e| format!("bind {}: {e}", self.address))?;
        let local = listener.local_addr()?;
        let max_connections = self.max_connections;
        tracing::info!(source = %cx.id, address = %local, max_connections, tls = self.tls.is_some(), "gelf source listening (tcp)");
        let conn = Arc::new(Conn {
            decoder: self.decoder(local, &cx),
            max_frame: self.max_message,
            idle: self.idle,
            idle_closed: cx.metrics.counter("idle_closed"),
            oversized: cx.metrics.counter("oversized_frames"),
        });
        let conn_cx = cx.clone();
        crate::acked_stream::serve(listener, &cx, max_connections, self.tls.clone(), move |stream, _peer| {
            let (conn, cx) = (Arc::clone(&conn), conn_cx.clone());
            async move { conn.read(stream, &cx).await }
        })
        .await
    }
}

struct UdpCounters {
    expired: Arc<Counter>,
    invalid: Arc<Counter>,
    evicted: Arc<Counter>,
    duplicate: Arc<Counter>,
    oversized: Arc<Counter>,
}

/// One TCP connection's reader settings.
struct Conn {
    decoder: Decoder,
    max_frame: usize,
    idle: Duration,
    idle_closed: Arc<Counter>,
    oversized: Arc<Counter>,
}

/// Most bytes read at a time.
const READ_CHUNK: usize = 256 * 1024;

impl Conn {
    async fn read(&self, mut stream: Box<dyn Stream>, cx: &SourceContext) -> Result<(), BoxError> {
        let mut buf = ReadBuf::new(READ_CHUNK);
        let mut dec = framing::Decoder::with_mode(self.max_frame, framing::Mode::Newline);
        loop {
            let n = tokio::select! {
                _ = cx.shutdown.cancelled() => 0,
                r = tokio::time::timeout(self.idle, buf.read_from(&mut stream)) => match r {
                    Ok(r) => r?,
                    Err(_) => {
                        self.idle_closed.inc();
                        0
                    }
                },
            };
            let eof = n == 0;
            cx.metrics.bytes_in.add(n as u64);
            let mut events = Vec::new();
            let data = buf.bytes();
            let consumed = self.frames(data, eof, &mut dec, &mut events);
            let _ = data.split_to(consumed);
            if !events.is_empty() {
                let count = events.len() as u64;
                cx.metrics.events_in.add(count);
                cx.out.send(events).await?;
                cx.metrics.events_out.add(count);
            }
            if eof {
                return Ok(());
            }
        }
    }

    /// Decodes the complete frames of `data` (and the rest at `eof`) with
    /// the shared stream framing (a frame ends at NUL or `\n`: JSON never
    /// holds either raw); returns the bytes consumed.
    fn frames(&self, data: &[u8], eof: bool, dec: &mut framing::Decoder, out: &mut Vec<Event>) -> usize {
        let mut pos = 0;
        loop {
            let rest = &data[pos..];
            let (consumed, item) = if eof { dec.decode_eof(rest) } else { dec.decode(rest) };
            match item {
                None => return pos + consumed,
                Some(Ok(frame)) => {
                    let bytes = trim(&rest[frame.range]);
                    if frame.truncated {
                        self.oversized.inc();
                        let mut e = self.decoder.event(bytes);
                        e.add_tag("_oversized");
                        out.push(e);
                    } else if !bytes.is_empty() {
                        out.push(self.decoder.event(bytes));
                    }
                }
                // Newline framing has no octet counts; a frame cut by the
                // end of the stream is still delivered by `decode_eof`.
                Some(Err(_)) => {}
            }
            pos += consumed;
        }
    }
}

/// The frame without surrounding whitespace (a `\r` before `\n`, a `\n`
/// some senders add after the NUL).
fn trim(f: &[u8]) -> &[u8] {
    let start = f.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(f.len());
    let end = f.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(start, |i| i + 1);
    &f[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{source_context, Capture};
    use sluice_core::Value;
    use tokio::net::TcpStream;

    #[tokio::test]
    async fn tcp_and_http_over_tls_and_a_plaintext_sender_is_refused() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let dir = tempfile::tempdir().unwrap();
        let (cert, tls) = crate::testkit::tls_listen_config(dir.path());
        let mut l = crate::testkit::listening_source(&SPEC, &format!("mode = \"tcp\"\n{tls}"));
        let frames: String =
            (0..3).map(|i| format!(r#"{{"version":"1.1","host":"h","short_message":"tls {i}"}}"#) + "\0").collect();
        let plain = b"{\"version\":\"1.1\",\"host\":\"h\",\"short_message\":\"plain\"}\0";
        let messages = crate::testkit::tls_then_plain_text(&mut l, &cert, frames.as_bytes(), plain, 3).await;
        assert_eq!(messages, ["tls 0", "tls 1", "tls 2"]);

        let l = crate::testkit::listening_source(&SPEC, &format!("mode = \"http\"\nauth = \"none\"\n{tls}"));
        let body = r#"{"version":"1.1","host":"h","short_message":"over https"}"#;
        let mut s = crate::testkit::connect_tls(l.addr, &cert).await;
        let req = format!(
            "POST /gelf HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer).await;
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 202"), "{answer}");
        l.shutdown.cancel();
        l.task.await.unwrap().unwrap();
        assert_eq!(
            l.cap.events.lock().iter().map(|e| e.message().unwrap_or_default().to_owned()).collect::<Vec<_>>(),
            ["over https"]
        );
    }

    /// A TLS port that holds `max_connections` closes one more without a
    /// byte: a plain-text `503` would reach a TLS client as a broken record.
    #[tokio::test]
    async fn a_tls_port_at_max_connections_closes_without_plain_text() {
        use tokio::io::AsyncReadExt;
        let dir = tempfile::tempdir().unwrap();
        let (cert, tls) = crate::testkit::tls_listen_config(dir.path());
        let l = crate::testkit::listening_source(
            &SPEC,
            &format!("mode = \"http\"\nauth = \"none\"\nmax_connections = 1\n{tls}"),
        );
        let _held = crate::testkit::connect_tls(l.addr, &cert).await;
        let mut extra = crate::testkit::connect(l.addr).await;
        let mut got = Vec::new();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), extra.read_to_end(&mut got)).await;
        assert_eq!(String::from_utf8_lossy(&got), "", "nothing written before a TLS handshake");
        assert_eq!(l.metrics.counter("refused_connections").get(), 1);
        l.shutdown.cancel();
    }

    #[test]
    fn tls_on_udp_is_a_config_error() {
        let dir = tempfile::tempdir().unwrap();
        let (_, tls) = crate::testkit::tls_listen_config(dir.path());
        let e = crate::testkit::build_source(&SPEC, &format!("mode = \"udp\"\naddress = \"127.0.0.1:0\"\n{tls}"))
            .err()
            .unwrap();
        assert_eq!(e.path, "test.gelf.tls");
        assert!(e.message.contains("tcp"), "{}", e.message);
    }

    fn decoder(m: Arc<ComponentMetrics>) -> Decoder {
        Decoder {
            max_decompressed: 1 << 20,
            max_depth: 8,
            identity: Arc::new(Identity::new("acme", "web", "")),
            source: Arc::from("gelf:test"),
            metrics: m,
        }
    }

    #[test]
    fn bad_payloads_are_kept_tagged_and_counted() {
        let (_cx, _s, m) = source_context(Arc::new(Capture::default()));
        let d = decoder(Arc::clone(&m));
        let ok = d.event(br#"{"short_message":"hi","host":"h1","_user":"ann"}"#);
        assert_eq!(ok.message(), Some("hi"));
        assert_eq!(ok.identity.group, "acme");
        assert_eq!(ok.identity.host, "", "the sender's host is a field, not the identity");
        assert_eq!(ok.fields().get("host").and_then(Value::as_str), Some("h1"));
        let bad = d.event(b"not json");
        assert!(bad.has_tag("_gelfparsefailure"));
        assert_eq!(bad.message(), Some("not json"));
        assert!(bad.fields().get("gelf_error").and_then(Value::as_str).unwrap().starts_with("gelf: not JSON"));
        let none = d.event(br#"{"host":"h1"}"#);
        assert_eq!(none.message(), Some(r#"{"host":"h1"}"#));
        // A zip bomb (10 MiB of zeros in ~10 KiB) is refused at the limit, visibly.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut z, &vec![0u8; 10 << 20]).unwrap();
        let bomb = d.event(&z.finish().unwrap());
        assert!(bomb.has_tag("_gelfparsefailure"));
        let why = "gelf: the decompressed payload exceeds 1048576 bytes";
        assert_eq!(bomb.message(), Some(why));
        assert_eq!(bomb.fields().get("gelf_error").and_then(Value::as_str), Some(why));
        assert_eq!(m.events_failed.get(), 3);
    }

    #[test]
    fn tcp_frames_split_at_nul_or_newline_with_oversized_cut() {
        let (_cx, _s, m) = source_context(Arc::new(Capture::default()));
        let c = Conn {
            decoder: decoder(Arc::clone(&m)),
            max_frame: 40,
            idle: Duration::from_secs(1),
            idle_closed: m.counter("idle_closed"),
            oversized: m.counter("oversized_frames"),
        };
        let input = b"{\"short_message\":\"a\"}\0\n{\"short_message\":\"b\"}\0{\"short_message\":\"a very long message that is cut\"}\n{\"short_message\":\"c\"}";
        for cut in 0..input.len() {
            let mut out = Vec::new();
            let mut dec = framing::Decoder::with_mode(40, framing::Mode::Newline);
            let n = c.frames(&input[..cut], false, &mut dec, &mut out);
            let mut rest = input[n..cut].to_vec();
            rest.extend_from_slice(&input[cut..]);
            let n2 = c.frames(&rest, true, &mut dec, &mut out);
            assert_eq!(n2, rest.len());
            let msgs: Vec<_> = out.iter().map(|e| e.message().unwrap_or("").to_owned()).collect();
            assert_eq!(msgs.len(), 4, "cut at {cut}: {msgs:?}");
            assert_eq!((&*msgs[0], &*msgs[1], &*msgs[3]), ("a", "b", "c"));
            assert!(out[2].has_tag("_oversized") && out[2].has_tag("_gelfparsefailure"));
        }
    }

    #[tokio::test]
    async fn udp_reassembles_gzip_chunks_and_expires_incomplete_sets() {
        use std::io::Write;
        let probe = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        let cfg = format!("mode = \"udp\"\naddress = \"{addr}\"\nchunk_timeout = \"200ms\"\ngroup = \"acme\"");
        let src = crate::testkit::build_source(&SPEC, &cfg).unwrap();
        let cap = Arc::new(Capture::default());
        let (cx, shutdown, m) = source_context(Arc::clone(&cap));
        let task = tokio::spawn(src.run(cx));
        tokio::time::sleep(Duration::from_millis(100)).await;
        let json = format!(r#"{{"version":"1.1","host":"h","short_message":"{}","level":6,"_n":7}}"#, "x".repeat(3000));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(json.as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        let parts: Vec<&[u8]> = gz.chunks(gz.len().div_ceil(3)).collect();
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let chunk = |id: u8, seq: u8, count: u8, body: &[u8]| {
            let mut v = vec![0x1e, 0x0f, id, 1, 2, 3, 4, 5, 6, 7, seq, count];
            v.extend_from_slice(body);
            v
        };
        // Out of order, one duplicate; then a set that never completes.
        for seq in [2u8, 0, 0, 1] {
            sock.send_to(&chunk(9, seq, 3, parts[usize::from(seq)]), addr).unwrap();
        }
        sock.send_to(&chunk(10, 0, 2, b"{\"short"), addr).unwrap();
        sock.send_to(b"{\"short_message\":\"plain\"}", addr).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while (cap.events.lock().len() < 2 || m.counter("chunks_expired").get() < 1) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        shutdown.cancel();
        task.await.unwrap().unwrap();
        let events = cap.events.lock();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].message().map(str::len), Some(3000));
        assert_eq!(events[0].fields().get("level").and_then(Value::as_str), Some("info"));
        assert_eq!(events[0].fields().get("n").and_then(Value::as_i64), Some(7));
        assert_eq!(events[0].identity.group, "acme");
        assert_eq!(events[1].message(), Some("plain"));
        assert_eq!(m.counter("chunks_duplicate").get(), 1);
        assert_eq!(m.counter("chunks_expired").get(), 1);
        assert_eq!(m.events_failed.get(), 0);
    }

    #[tokio::test]
    async fn tcp_closes_idle_connections_and_refuses_beyond_max_connections() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        let cfg = format!("mode = \"tcp\"\naddress = \"{addr}\"\nmax_connections = 1\nidle_timeout = \"300ms\"");
        let src = crate::testkit::build_source(&SPEC, &cfg).unwrap();
        let cap = Arc::new(Capture::default());
        let (cx, shutdown, m) = source_context(Arc::clone(&cap));
        let task = tokio::spawn(src.run(cx));
        let mut first = loop {
            match TcpStream::connect(addr).await {
                Ok(s) => break s,
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        };
        first.write_all(b"{\"short_message\":\"one\"}\0").await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while cap.events.lock().is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // A second connection while the first is open is closed at once.
        let mut second = TcpStream::connect(addr).await.unwrap();
        let mut b = [0u8; 1];
        let r = tokio::time::timeout(Duration::from_secs(5), second.read(&mut b)).await.expect("second closed");
        assert!(matches!(r, Ok(0) | Err(_)), "{r:?}");
        // The first, silent, is closed after the idle timeout.
        let r = tokio::time::timeout(Duration::from_secs(5), first.read(&mut b)).await.expect("idle closed");
        assert!(matches!(r, Ok(0) | Err(_)), "{r:?}");
        shutdown.cancel();
        task.await.unwrap().unwrap();
        assert_eq!(cap.events.lock().len(), 1);
        assert_eq!(m.counter("idle_closed").get(), 1);
        assert_eq!(m.counter("refused_connections").get(), 1);
    }
}
