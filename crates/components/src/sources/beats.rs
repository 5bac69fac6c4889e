//! `beats`: the Lumberjack v2 protocol of Filebeat, Winlogbeat, Metricbeat,
//! Logstash and other Beats forwarders (`output.logstash` on the sender).
//!
//! Frames (see [`sluice_parsers::lumberjack`] and `docs/specs/beats.md`): a
//! window size, then JSON data frames, plain or inside zlib-compressed
//! frames. Events are handed to the queue at the end of each window (or
//! every `max_batch` events of a large one) and the ACK naming the last
//! sequence number is written **only once the queue holds them durably**
//! ([`crate::acked_stream::send_durable`]): a persisted queue has appended
//! them, a memory queue's sinks took them. A batch the queue drops is never
//! acknowledged: the connection is closed and the sender sends it again.
//!
//! Mapping: each document's fields are kept as they are — `@metadata.beat`,
//! `host.name`, `agent.*`, Winlogbeat's `winlog.*` — and `@timestamp`
//! becomes the event time. The identity is the source's `group` /
//! `subgroup` / `host`: whatever the sender writes (`host.name`, an
//! `@host`) stays a field and never changes it.
//!
//! Limits: `max_connections` at once (more closed and counted), a
//! connection quiet for `idle_timeout` closed (`idle_closed`), frames
//! above `max_frame_bytes`, windows above `max_window`, payloads inflating
//! past `max_decompressed_bytes`, nested compression, an unknown version or
//! frame type: logged, counted in `frames_invalid`, connection closed
//! (Lumberjack has no error answer). A data frame whose payload is not a
//! JSON object (or nests deeper than the JSON limit) is kept as an event
//! tagged `_jsonparsefailure` with the text in `message`, counted in
//! `events_failed`. TLS (`tls = { cert, key }`) with optional client
//! certificates (`client_ca`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::acked_stream::{self, acked_stream_config, Conn, StreamListen};
use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::codec::event_from_json;
use sluice_core::component::{BoxError, BuildContext, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, Positive};
use sluice_core::event::{now_ns, Identity};
use sluice_core::metrics::Counter;
use sluice_core::Event;
use sluice_parsers::lumberjack::{self, Frame, Limits, LumberjackError};
use tokio::io::AsyncWriteExt;

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "beats",
    summary: "Lumberjack v2 (Filebeat, Winlogbeat, Logstash forwarders), ACK after the queue holds the batch",
    example: "address = \"127.0.0.1:0\"\ngroup = \"acme\"\n",
    build,
};

acked_stream_config! {
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Largest frame payload (a JSON document or a compressed block).
    #[serde(default = "crate::defaults::mib::<16>")]
    max_frame_bytes: Positive<ByteSize>,
    /// Largest inflated compressed block.
    #[serde(default = "crate::defaults::mib::<64>")]
    max_decompressed_bytes: Positive<ByteSize>,
    /// Largest window a sender may announce.
    #[serde(default = "crate::defaults::count_u32::<65_536>")]
    max_window: Positive<u32>,
    /// Events handed to the queue (and acknowledged) at once within a large window.
    #[serde(default = "crate::defaults::count::<4096>")]
    max_batch: Positive<usize>,
}
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let listen = c.listen(cx)?;
    Ok(Box::new(Beats {
        listen,
        limits: Limits { max_frame: c.max_frame_bytes.0 as usize, max_window: c.max_window.get() },
        max_decompressed: c.max_decompressed_bytes.0 as usize,
        max_batch: c.max_batch.get(),
    }))
}

struct Beats {
    listen: StreamListen,
    limits: Limits,
    max_decompressed: usize,
    max_batch: usize,
}

#[async_trait]
impl Source for Beats {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let (listener, local) = self.listen.bind("beats", &cx).await?;
        let session = Arc::new(Session {
            limits: self.limits,
            max_decompressed: self.max_decompressed,
            max_batch: self.max_batch,
            idle: self.listen.idle,
            identity: Arc::clone(&self.listen.identity),
            source: Arc::from(format!("beats:{local}")),
            invalid: cx.metrics.counter("frames_invalid"),
            idle_closed: cx.metrics.counter("idle_closed"),
            not_acked: cx.metrics.counter("batches_not_acked"),
            cx: cx.clone(),
        });
        acked_stream::serve(listener, &cx, self.listen.max_connections, self.listen.tls.clone(), move |conn, peer| {
            let s = Arc::clone(&session);
            async move { s.connection(conn, peer).await }
        })
        .await
    }
}

/// Settings and counters every connection shares.
struct Session {
    limits: Limits,
    max_decompressed: usize,
    max_batch: usize,
    idle: Duration,
    identity: Arc<Identity>,
    source: Arc<str>,
    invalid: Arc<Counter>,
    idle_closed: Arc<Counter>,
    not_acked: Arc<Counter>,
    cx: SourceContext,
}

/// Where a connection is within its current window.
#[derive(Default)]
struct Window {
    /// Data frames announced.
    size: u32,
    /// Data frames received.
    received: u32,
    /// Sequence number of the last data frame received.
    last_seq: u32,
    /// Events not yet handed to the queue.
    events: Vec<Event>,
}

impl Session {
    async fn connection(&self, mut conn: Box<dyn Conn>, peer: SocketAddr) -> Result<(), BoxError> {
        let cx = &self.cx;
        let mut buf: Vec<u8> = Vec::new();
        let mut w = Window::default();
        loop {
            // Every complete frame in the buffer.
            let mut pos = 0;
            loop {
                match lumberjack::next_frame(&buf[pos..], &self.limits) {
                    Ok(None) => break,
                    Ok(Some((frame, n))) => {
                        if let Err(e) = self.frame(frame, &mut w) {
                            return self.reject(peer, &e, w).await;
                        }
                        pos += n;
                    }
                    Err(e) => return self.reject(peer, &e, w).await,
                }
                let window_done = w.size > 0 && w.received >= w.size;
                if (window_done || w.events.len() >= self.max_batch) && !self.flush(&mut conn, &mut w, peer).await? {
                    return Ok(());
                }
                if window_done {
                    w = Window::default();
                }
            }
            buf.drain(..pos);
            let n = acked_stream::read_more(&mut conn, &mut buf, self.idle, &self.idle_closed, cx).await?;
            if n == 0 {
                // A partial window is never acknowledged; what was read still
                // goes in (the sender resends it: at least once).
                if !w.events.is_empty() {
                    acked_stream::send_durable(cx, std::mem::take(&mut w.events)).await?;
                }
                return Ok(());
            }
        }
    }

    /// Takes one frame into the window.
    fn frame(&self, frame: Frame<'_>, w: &mut Window) -> Result<(), LumberjackError> {
        match frame {
            Frame::Window(n) => {
                w.size = n;
                w.received = 0;
            }
            Frame::Json { seq, payload } => self.data(seq, payload, w),
            Frame::Compressed(z) => {
                let inflated = lumberjack::inflate(z, self.max_decompressed)?;
                for (seq, payload) in lumberjack::inner_frames(&inflated, &self.limits)? {
                    self.data(seq, payload, w);
                }
            }
        }
        Ok(())
    }

    fn data(&self, seq: u32, payload: &[u8], w: &mut Window) {
        w.received += 1;
        w.last_seq = seq;
        w.events.push(self.event(payload));
    }

    /// The event of one JSON document; a bad one is kept, tagged and counted.
    fn event(&self, payload: &[u8]) -> Event {
        let mut e = match event_from_json(payload) {
            Ok((mut e, bad_ts)) => {
                if bad_ts {
                    e.add_tag("_timestampparsefailure");
                }
                e
            }
            Err(err) => {
                self.cx.metrics.events_failed.inc();
                let mut fields = sluice_core::Object::with_capacity(3);
                fields.insert("message", String::from_utf8_lossy(payload).into_owned());
                fields.insert("beats_error", err.to_string());
                let mut e = Event::new(now_ns(), fields, sluice_core::event::no_identity(), Arc::clone(&self.source));
                e.add_tag("_jsonparsefailure");
                e
            }
        };
        e.identity = Arc::clone(&self.identity);
        e.source = Arc::clone(&self.source);
        e
    }

    /// Hands the window's events to the queue and, once durable, writes the
    /// ACK of the last sequence number. `false`: not acknowledged, the
    /// connection is to be closed.
    async fn flush(&self, conn: &mut Box<dyn Conn>, w: &mut Window, peer: SocketAddr) -> Result<bool, BoxError> {
        let events = std::mem::take(&mut w.events);
        if !events.is_empty() && !acked_stream::send_durable(&self.cx, events).await? {
            self.not_acked.inc();
            tracing::warn!(source = %self.cx.id, %peer, "the queue dropped a batch undelivered; closing without ACK");
            return Ok(false);
        }
        conn.write_all(&lumberjack::ack(w.last_seq)).await?;
        conn.flush().await?;
        Ok(true)
    }

    /// Logs and counts a malformed stream; what was read before it still
    /// goes in, unacknowledged (the sender resends it: at least once).
    async fn reject(&self, peer: SocketAddr, e: &LumberjackError, w: Window) -> Result<(), BoxError> {
        self.invalid.inc();
        tracing::warn!(source = %self.cx.id, %peer, error = %e, "beats: malformed stream, connection closed");
        if !w.events.is_empty() {
            acked_stream::send_durable(&self.cx, w.events).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
