//! `fluent_forward`: Fluentd's forward protocol (Fluentd `out_forward`,
//! Fluent Bit `forward` output, the fluent-logger libraries) over TCP.
//!
//! Messages (see [`sluice_parsers::fluent_forward`] and
//! `docs/specs/fluent_forward.md`): Message, Forward, PackedForward and
//! CompressedPackedForward (gzip). A message whose option carries `chunk`
//! is answered `{"ack": chunk}` **only once the queue holds its records
//! durably** ([`crate::acked_stream::send_durable`]); one the queue drops
//! is never acknowledged (the connection is closed, the sender resends).
//! Messages without `chunk` are queued as they come.
//!
//! Mapping: each record's keys are the event's fields; the message's tag
//! is `fluent_tag`; the entry's time (integer seconds or EventTime) is the
//! event time. The identity is the source's `group` / `subgroup` / `host`
//! (a record's `host` stays a field).
//!
//! Limits: `max_connections`, `idle_timeout`, messages above
//! `max_message_bytes`, nesting above `max_depth`, gzip payloads inflating
//! past `max_decompressed_bytes`, anything not in the protocol's shape:
//! logged, counted in `messages_invalid`, connection closed (the protocol
//! has no error answer). TLS (`tls = { cert, key, client_ca }`) as Fluentd's
//! `transport tls`. With `shared_key`, a connection must first pass the
//! handshake (HELO / PING / PONG, `handshake`); a wrong key gets PONG
//! `false`, is counted in `auth_failures` and closed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::acked_stream::{self, acked_stream_config, Conn, StreamListen};
use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, Positive};
use sluice_core::event::Identity;
use sluice_core::metrics::Counter;
use sluice_core::Event;
use sluice_parsers::fluent_forward::{self, ForwardError, Limits, Message};
use tokio::io::AsyncWriteExt;

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "fluent_forward",
    summary:
        "Fluentd forward protocol (msgpack; Message/Forward/PackedForward, gzip), chunk ACK after the queue holds it",
    example: "address = \"127.0.0.1:0\"\ngroup = \"acme\"\n",
    build,
};

acked_stream_config! {
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Largest message (msgpack bytes).
    #[serde(default = "crate::defaults::mib::<16>")]
    max_message_bytes: Positive<ByteSize>,
    /// Largest inflated CompressedPackedForward payload.
    #[serde(default = "crate::defaults::mib::<64>")]
    max_decompressed_bytes: Positive<ByteSize>,
    /// Deepest nesting of arrays and maps in a message.
    #[serde(default = "default_max_depth")]
    max_depth: usize,
    /// With a key, every connection must pass the shared-key handshake
    /// (HELO / PING / PONG) before it sends messages.
    #[serde(default)]
    shared_key: Option<String>,
    /// The hostname this server gives in PONG (default: the machine's).
    #[serde(default)]
    self_hostname: Option<String>,
}
}

fn default_max_depth() -> usize {
    32
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let listen = c.listen(cx)?;
    if c.max_depth < 3 {
        return Err(cx.error("max_depth", "must be at least 3"));
    }
    if c.shared_key.as_deref() == Some("") {
        return Err(cx.error("shared_key", "must not be empty"));
    }
    let self_hostname = c.self_hostname.or_else(sluice_core::secret::hostname).unwrap_or_else(|| "sluice".into());
    Ok(Box::new(Forward {
        shared_key: c.shared_key,
        self_hostname,
        listen,
        limits: Limits {
            max_message: c.max_message_bytes.0 as usize,
            max_decompressed: c.max_decompressed_bytes.0 as usize,
            max_depth: c.max_depth,
        },
    }))
}

struct Forward {
    shared_key: Option<String>,
    self_hostname: String,
    listen: StreamListen,
    limits: Limits,
}

#[async_trait]
impl Source for Forward {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let (listener, local) = self.listen.bind("fluent_forward", &cx).await?;
        let session = Arc::new(Session {
            shared_key: self.shared_key.clone(),
            self_hostname: self.self_hostname.clone(),
            auth_failures: cx.metrics.counter("auth_failures"),
            limits: self.limits,
            idle: self.listen.idle,
            identity: Arc::clone(&self.listen.identity),
            source: Arc::from(format!("fluent_forward:{local}")),
            invalid: cx.metrics.counter("messages_invalid"),
            idle_closed: cx.metrics.counter("idle_closed"),
            not_acked: cx.metrics.counter("chunks_not_acked"),
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
    shared_key: Option<String>,
    self_hostname: String,
    auth_failures: Arc<Counter>,
    limits: Limits,
    idle: Duration,
    identity: Arc<Identity>,
    source: Arc<str>,
    invalid: Arc<Counter>,
    idle_closed: Arc<Counter>,
    not_acked: Arc<Counter>,
    cx: SourceContext,
}

impl Session {
    async fn connection(&self, mut conn: Box<dyn Conn>, peer: SocketAddr) -> Result<(), BoxError> {
        let cx = &self.cx;
        let mut buf: Vec<u8> = Vec::new();
        if let Some(key) = &self.shared_key {
            if !handshake::run(self, key, &mut conn, &mut buf).await? {
                return Ok(());
            }
        }
        loop {
            // Records of messages without `chunk`, queued together.
            let mut plain = Vec::new();
            let mut pos = 0;
            let failure = loop {
                match fluent_forward::next_message(&buf[pos..], &self.limits) {
                    Ok(None) => break None,
                    Err(e) => break Some(e),
                    Ok(Some((m, n))) => {
                        pos += n;
                        let chunk = m.chunk.clone();
                        self.events(m, &mut plain);
                        if let Some(chunk) = chunk {
                            if !acked_stream::send_durable(cx, std::mem::take(&mut plain)).await? {
                                self.not_acked.inc();
                                tracing::warn!(source = %cx.id, %peer, "the queue dropped a chunk undelivered; closing without ACK");
                                return Ok(());
                            }
                            conn.write_all(&fluent_forward::ack(&chunk)).await?;
                            conn.flush().await?;
                        }
                    }
                }
            };
            if !plain.is_empty() {
                acked_stream::send_durable(cx, plain).await?;
            }
            if let Some(e) = failure {
                self.reject(peer, &e);
                return Ok(());
            }
            buf.drain(..pos);
            let n = acked_stream::read_more(&mut conn, &mut buf, self.idle, &self.idle_closed, cx).await?;
            if n == 0 {
                return Ok(());
            }
        }
    }

    fn events(&self, m: Message, out: &mut Vec<Event>) {
        let tag: sluice_core::Value = m.tag.into();
        for e in m.entries {
            let mut fields = e.record;
            fields.insert("fluent_tag", tag.clone());
            out.push(Event::new(e.time_ns, fields, Arc::clone(&self.identity), Arc::clone(&self.source)));
        }
    }

    fn reject(&self, peer: SocketAddr, e: &ForwardError) {
        self.invalid.inc();
        tracing::warn!(source = %self.cx.id, %peer, error = %e, "fluent_forward: malformed stream, connection closed");
    }
}

mod handshake;

#[cfg(test)]
mod tests;
