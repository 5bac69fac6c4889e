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

use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use serde::Deserialize;
use sluice_core::codec::event_from_json_bytes;
use sluice_core::component::{BoxError, BuildContext, Closed, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError};
use sluice_core::event::{no_identity, now_ns, MESSAGE};
use sluice_core::metrics::{ComponentMetrics, Counter};
use sluice_core::{Event, Object, Str, Text, Value};
use sluice_net::{Incoming, Listener, ListenerCounters, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "tcp",
    summary: "newline-delimited JSON (or plain text lines) over TCP",
    example: "address = \"127.0.0.1:0\"\n",
    build,
};

/// How each line is decoded.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LineFormat {
    /// One JSON object per line.
    Ndjson,
    /// Each line is the `message`.
    Lines,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Listen address, e.g. `0.0.0.0:5000`.
    address: String,
    /// `ndjson` (default) or `lines`.
    #[serde(default = "default_format")]
    format: LineFormat,
    /// Longest accepted line; longer lines are cut, tagged `_oversized` and counted.
    #[serde(default = "default_max_line")]
    max_line_bytes: ByteSize,
    /// Connections served at once; more are closed at once and counted.
    #[serde(default = "default_max_connections")]
    max_connections: usize,
}

fn default_format() -> LineFormat {
    LineFormat::Ndjson
}
fn default_max_line() -> ByteSize {
    ByteSize(1 << 20)
}
/// Default `max_connections` of the line sources (tcp, syslog_tcp).
pub const DEFAULT_MAX_CONNECTIONS: usize = 16_384;
fn default_max_connections() -> usize {
    DEFAULT_MAX_CONNECTIONS
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let address: SocketAddr =
        c.address.parse().map_err(|e| cx.error("address", format!("invalid socket address {:?}: {e}", c.address)))?;
    if c.max_line_bytes.0 == 0 {
        return Err(cx.error("max_line_bytes", "must be greater than 0"));
    }
    if c.max_connections == 0 {
        return Err(cx.error("max_connections", "must be at least 1"));
    }
    Ok(Box::new(Tcp {
        address,
        format: c.format,
        max_line: c.max_line_bytes.0 as usize,
        max_connections: c.max_connections,
    }))
}

struct Tcp {
    address: SocketAddr,
    format: LineFormat,
    max_line: usize,
    max_connections: usize,
}

#[async_trait]
impl Source for Tcp {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let listener = TcpListener::bind(self.address).await.map_err(|e| format!("bind {}: {e}", self.address))?;
        let local = listener.local_addr()?;
        tracing::info!(source = %cx.id, address = %local, max_connections = self.max_connections, "tcp source listening");
        let mut listener = Listener::new(listener, &cx.id, self.max_connections, ListenerCounters::of(&cx.metrics));
        let source: Arc<str> = Arc::from(format!("tcp:{local}"));
        let decoder = Arc::new(LineDecoder::new(self.format, self.max_line, &cx));
        loop {
            tokio::select! {
                _ = cx.shutdown.cancelled() => return Ok(()),
                incoming = listener.accept() => {
                    let (stream, guard) = match incoming {
                        Incoming::Open(stream, _peer, guard) => (stream, guard),
                        Incoming::Refused(..) => continue,
                    };
                    let cx = cx.clone();
                    let decoder = Arc::clone(&decoder);
                    let source = Arc::clone(&source);
                    tokio::spawn(async move {
                        let _guard = guard;
                        if let Err(e) = read_connection(stream, &cx, &decoder, &source).await {
                            cx.metrics.errors.inc();
                            tracing::debug!(source = %cx.id, error = %e, "connection ended with error");
                        }
                    });
                }
            }
        }
    }
}

async fn read_connection(
    mut stream: TcpStream,
    cx: &SourceContext,
    decoder: &LineDecoder,
    source: &Arc<str>,
) -> Result<(), BoxError> {
    let _ = stream.set_nodelay(true);
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

/// Carry-over between reads: whether we are skipping the tail of an oversized line.
#[derive(Default)]
pub struct LineState {
    skipping: bool,
}

/// Splits a byte stream into lines and decodes them into events. Shared by the
/// line-oriented sources.
pub struct LineDecoder {
    format: LineFormat,
    max_line: usize,
    metrics: Arc<ComponentMetrics>,
    oversized: Arc<Counter>,
}

impl LineDecoder {
    /// A decoder counting into the source's metrics.
    pub fn new(format: LineFormat, max_line: usize, cx: &SourceContext) -> Self {
        Self { format, max_line, metrics: Arc::clone(&cx.metrics), oversized: cx.metrics.counter("oversized_frames") }
    }

    /// Decodes every complete line in `buf` (and the rest when `eof`), returning
    /// how many bytes were consumed.
    pub fn decode(
        &self,
        chunk: &Bytes,
        eof: bool,
        state: &mut LineState,
        out: &mut Vec<Event>,
        source: &Arc<str>,
    ) -> usize {
        let buf: &[u8] = chunk;
        // One clock read per chunk: the lines of one read arrived together.
        let now = now_ns();
        let mut pos = 0;
        while pos < buf.len() {
            let rest = &buf[pos..];
            let nl = memchr::memchr(b'\n', rest);
            if state.skipping {
                match nl {
                    Some(i) => {
                        state.skipping = false;
                        pos += i + 1;
                        continue;
                    }
                    None => return buf.len(),
                }
            }
            let line_end = match nl {
                Some(i) if i <= self.max_line => i,
                Some(_) | None if rest.len() > self.max_line => {
                    // Oversized: keep the first max_line bytes, skip to the next newline.
                    self.oversized.inc();
                    let mut e = self.line_event(chunk, pos..pos + self.max_line, now, source);
                    e.add_tag("_oversized");
                    out.push(e);
                    match nl {
                        Some(i) => pos += i + 1,
                        None => {
                            state.skipping = true;
                            return buf.len();
                        }
                    }
                    continue;
                }
                Some(i) => i,
                None if eof => rest.len(),
                None => return pos,
            };
            let mut end = pos + line_end;
            if end > pos && buf[end - 1] == b'\r' {
                end -= 1;
            }
            if !buf[pos..end].iter().all(u8::is_ascii_whitespace) {
                out.push(self.line_event(chunk, pos..end, now, source));
            }
            pos += (line_end + 1).min(rest.len());
        }
        pos
    }

    /// The event for `chunk[range]`, stamped `now`. A plain line is copied
    /// once into a shared buffer that its `message` and a parser's captures
    /// slice (the chunk itself is not sliced: it may hold invalid UTF-8);
    /// JSON lines keep a slice of the chunk.
    fn line_event(&self, chunk: &Bytes, range: std::ops::Range<usize>, now: i64, source: &Arc<str>) -> Event {
        match self.format {
            LineFormat::Lines => {
                let line = &chunk[range];
                // Stored once, shared: a parser's captures are slices of it
                // (`Text::slice_of`), not copies.
                let message = match std::str::from_utf8(line) {
                    Ok(text) => Value::String(Text::shared(Arc::from(text))),
                    Err(_) => Value::from(String::from_utf8_lossy(line).as_ref()),
                };
                // Room for what a parsing filter typically adds (grok's
                // captures, tags) so the object is not regrown per event.
                let mut fields = Object::with_capacity(LINE_FIELDS_CAPACITY);
                fields.push_unique(Str::new(MESSAGE), message);
                Event::new(now, fields, no_identity(), Arc::clone(source))
            }
            LineFormat::Ndjson => {
                let line = chunk.slice(range);
                let mut e = match event_from_json_bytes(&line) {
                    Ok((e, bad_ts)) => {
                        let mut e = e;
                        if bad_ts {
                            e.add_tag("_timestampparsefailure");
                        }
                        e
                    }
                    Err(_) => {
                        self.metrics.events_failed.inc();
                        let mut e = Event::from_message(String::from_utf8_lossy(&line));
                        e.add_tag("_jsonparsefailure");
                        e
                    }
                };
                e.source = Arc::clone(source);
                e
            }
        }
    }
}

/// Initial key capacity of a plain line's event: `message` plus a grok
/// pattern's worth of captures (`%{COMBINEDAPACHELOG}` names 12 fields and
/// sets 11 of them) plus a few that later filters add (tags, a converted
/// or parsed field), so the object is not regrown — a copy — per event.
const LINE_FIELDS_CAPACITY: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{source_context, Capture};

    fn decoder(max: usize) -> (LineDecoder, Arc<sluice_core::metrics::ComponentMetrics>) {
        let (cx, _s, m) = source_context(Arc::new(Capture::default()));
        (LineDecoder::new(LineFormat::Ndjson, max, &cx), m)
    }

    #[test]
    fn splits_at_every_boundary_identically() {
        let input = b"{\"a\":1}\n{\"a\":2}\r\n\nnot json\n{\"a\":3}";
        let src: Arc<str> = Arc::from("t");
        for cut in 0..input.len() {
            let (d, _) = decoder(1024);
            let mut st = LineState::default();
            let mut out = Vec::new();
            let mut buf = input[..cut].to_vec();
            let c = d.decode(&Bytes::from(buf.clone()), false, &mut st, &mut out, &src);
            buf.drain(..c);
            buf.extend_from_slice(&input[cut..]);
            let c = d.decode(&Bytes::from(buf.clone()), true, &mut st, &mut out, &src);
            assert_eq!(c, buf.len());
            assert_eq!(out.len(), 4, "cut at {cut}");
            assert!(out[2].has_tag("_jsonparsefailure"));
            assert_eq!(out[2].message(), Some("not json"));
            assert_eq!(out[3].fields().get("a").unwrap().to_json(), "3");
        }
    }

    #[test]
    fn oversized_lines_are_cut_tagged_and_counted() {
        let (d, m) = decoder(8);
        let src: Arc<str> = Arc::from("t");
        let mut st = LineState::default();
        let mut out = Vec::new();
        // The long line arrives in two reads.
        let c = d.decode(&Bytes::from_static(b"0123456789abc"), false, &mut st, &mut out, &src);
        assert_eq!(c, 13);
        let c = d.decode(&Bytes::from_static(b"def\n{\"ok\":1}\n"), false, &mut st, &mut out, &src);
        assert_eq!(c, 13);
        assert_eq!(out.len(), 2);
        assert!(out[0].has_tag("_oversized"));
        assert_eq!(out[0].message(), Some("01234567"));
        assert!(out[1].fields().contains_key(&"ok"));
        assert_eq!(m.counter("oversized_frames").get(), 1);
    }

    #[test]
    fn plain_lines_become_messages_with_the_source_and_one_read_time() {
        let (cx, _s, m) = source_context(Arc::new(Capture::default()));
        let d = LineDecoder::new(LineFormat::Lines, 8, &cx);
        let src: Arc<str> = Arc::from("tcp:test");
        let mut st = LineState::default();
        let mut out = Vec::new();
        let before = now_ns();
        let c =
            d.decode(&Bytes::from_static(b"one\r\n  \n\xff\xfetwo\n0123456789\nlast"), true, &mut st, &mut out, &src);
        assert_eq!(c, 29);
        let messages: Vec<_> = out.iter().map(|e| e.message().unwrap_or("<none>")).collect();
        assert_eq!(messages, ["one", "\u{fffd}\u{fffd}two", "01234567", "last"]);
        assert!(out.iter().all(|e| &*e.source == "tcp:test" && e.timestamp == out[0].timestamp));
        assert!(out[0].timestamp >= before);
        assert!(out[2].has_tag("_oversized") && !out[0].has_tag("_oversized"));
        assert_eq!(out[0].fields().len(), 1);
        assert_eq!(m.counter("oversized_frames").get(), 1);
        assert_eq!(m.events_failed.get(), 0);
    }

    #[test]
    fn long_plain_lines_are_stored_once_shared() {
        let (cx, _s, _m) = source_context(Arc::new(Capture::default()));
        let d = LineDecoder::new(LineFormat::Lines, 1024, &cx);
        let src: Arc<str> = Arc::from("tcp:test");
        let mut out = Vec::new();
        let line = "a line longer than twenty-four bytes, so it is shared";
        let input = format!("{line}\nshort\nλ {line}\n");
        d.decode(&Bytes::from(input.into_bytes()), true, &mut LineState::default(), &mut out, &src);
        let texts: Vec<_> = out
            .iter()
            .map(|e| match e.fields().get(MESSAGE) {
                Some(Value::String(t)) => (t.as_str().to_owned(), t.is_shared()),
                other => panic!("message is {other:?}"),
            })
            .collect();
        assert_eq!(texts, [(line.to_owned(), true), ("short".to_owned(), false), (format!("λ {line}"), true)]);
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
