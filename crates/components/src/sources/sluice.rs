//! `sluice`: the receiving side of the agent protocol
//! (`docs/specs/agent-protocol.md`) — what a processor or dispatcher listens
//! with so agents can ship to it.
//!
//! Why: it is the one input that acknowledges each batch only after the
//! pipeline's queue holds it (durably, with a persisted queue), reports the
//! queue's fill so senders balance by load, grants credits in pull mode, and
//! checks that every event's identity belongs to the sender's token.
//!
//! **Tokens.** `[…sources.<id>.tokens.<name>]` with one of `token`,
//! `token_env`, `token_file` (at least 16 characters; a missing
//! `token_file` is created with a random token, mode 0600), the `group` the token
//! belongs to and optionally `subgroups` it may write (empty: any subgroup of
//! the group). A `HELLO` whose token matches none is refused (`bad_token`,
//! counted in `auth_failures`); one whose identity, or a batch holding an
//! event whose identity, is not the token's is refused (`identity_not_owned`,
//! counted in `identity_refused`): an error frame, then the connection is
//! closed and nothing of that batch is queued. Events with an empty group get
//! the `HELLO` identity. Identity keys (`group`, …) on this source's table
//! would override every event's identity and are best left out.
//!
//! **Per connection** a reader task decodes frames and a queue task hands
//! batches to the pipeline one at a time (`Output::send`) and answers with an
//! `ACK` carrying the queue fill (and, in credit mode, a credit); `PING`s are
//! answered by the reader at once, so a receiver whose queue is full still
//! looks alive. At most `max_in_flight` batches wait per connection (a sender
//! exceeding it gets `no_credit`), so memory is bounded by connections ×
//! `max_in_flight` × batch size. In credit mode a credit is withheld while
//! the queue is fuller than `credit_high_water` and granted with a `CREDIT`
//! frame once it drains.
//!
//! **Bad input** never ends the source: garbage, an oversized frame, a
//! truncated frame, a payload that does not decompress or decode (a bomb is
//! cut at the declared length, itself bounded by `max_batch_bytes`) each get
//! an `ERROR` frame with a reason, a counter (`protocol_errors`,
//! `oversized_frames`, `corrupt_batches`), a log line at debug, and the
//! connection closed. A connection silent for three heartbeat intervals, or
//! without a `HELLO` within `handshake_timeout`, is closed (`timeouts`).
//!
//! **Ack mode** (`ack`, explicit in a dispatcher's config):
//! - `queued` (default): the `ACK` goes out once `Output::send` returned —
//!   the batch is in this node's queue (durably, with a persisted queue).
//!   Right for processors, and for a dispatcher with a persisted queue:
//!   "in the dispatcher's queue" survives a crash of the dispatcher.
//! - `delivered`: the batch goes in with `Output::send_acked` and its `ACK`
//!   goes out only when the token resolves — with a memory queue, when every
//!   sink acknowledged it (a dispatcher's `sluice` sink: when a processor
//!   queued it). A dispatcher with a memory queue thus holds nothing an agent
//!   believes delivered: `kill -9` of the dispatcher loses nothing, the agent
//!   re-sends its unacknowledged batches to another dispatcher. A batch the
//!   pipeline drops undelivered gets a `retry` ack. Acks may then leave in
//!   another order than the batches arrived (senders match them by id).
//!
//! **Relay tokens** (`relay = true`): a dispatcher forwards many tenants'
//! events; a processor gives the dispatcher's token `relay = true`, so its
//! events keep the identity they carry whatever their group (the tenants'
//! own tokens were checked by the dispatcher). The `HELLO` identity must
//! still be the token's.
//!
//! TLS: `tls = { cert = "…", key = "…" }` (see [`crate::tls`]).
//!
//! Counters: `events_in`, `events_out`, `bytes_in` (wire bytes of batches),
//! `connections`, `refused_connections`, `auth_failures`, `identity_refused`,
//! `batches`, `acks`, `retry_acks`, `credits_granted`, `oversized_frames`,
//! `corrupt_batches`, `protocol_errors`, `timeouts`, `tls_handshake_errors`,
//! `accept_errors`; gauge `open_connections`. A connection beyond
//! `max_connections` gets a `too_many_connections` error frame; failed
//! accepts (descriptor limit) are waited out ([`sluice_net::listener`]).

mod session;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration, Positive};
use sluice_core::metrics::Counter;
use sluice_core::{Event, Identity};
use sluice_protocol::compress::decode_events;
use sluice_protocol::conn::FrameReader;
use sluice_protocol::frame::{Ack, AckStatus, Frame, Hello, HelloOk, Mode};
use sluice_protocol::{fill_to_wire, ErrorCode, ProtocolError, VERSION};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use self::session::{refuse, serve};
use crate::secret::{ct_eq, TokenSource};
use crate::tls::{acceptor, ServerTls};
use sluice_net::{Incoming, Listener, ListenerCounters};

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "sluice",
    summary: "the sluice agent protocol (agents, dispatchers): token auth, identity checks, acks after queueing",
    example: "address = \"127.0.0.1:0\"\n[tokens.acme]\ntoken = \"0123456789abcdef0123\"\ngroup = \"acme\"\nsubgroups = [\"web\"]\n",
    build,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Listen address, e.g. `0.0.0.0:5044`.
    address: String,
    /// Tokens agents authenticate with, by name.
    tokens: BTreeMap<String, TokenConfig>,
    /// Serve TLS with this certificate and key.
    #[serde(default)]
    tls: Option<ServerTls>,
    /// Largest batch payload accepted, compressed or raw.
    #[serde(default = "default_max_batch")]
    max_batch_bytes: ByteSize,
    /// Unacknowledged batches accepted per connection.
    #[serde(default = "default_max_in_flight")]
    max_in_flight: u32,
    /// Connections served at once; more are refused.
    #[serde(default = "crate::defaults::count::<1024>")]
    max_connections: Positive<usize>,
    /// Credit mode: credits granted when a sender connects (default: `max_in_flight`).
    #[serde(default)]
    initial_credits: Option<u32>,
    /// Credit mode: no credit is granted while the queue is fuller than this (0–1).
    #[serde(default = "default_high_water")]
    credit_high_water: f64,
    /// Longest wait for a `HELLO` (and TLS handshake) after accepting.
    #[serde(default = "crate::defaults::secs::<10>")]
    handshake_timeout: Positive<HumanDuration>,
    /// Expected frame interval; a connection silent for three of these is closed.
    #[serde(default = "crate::defaults::secs::<5>")]
    heartbeat_interval: Positive<HumanDuration>,
    /// Name announced to senders (default: the node's host name).
    #[serde(default)]
    name: Option<String>,
    /// When a batch is acknowledged: `queued` (in this node's queue, the
    /// default) or `delivered` (every sink of the pipeline acknowledged it).
    #[serde(default)]
    ack: AckMode,
}

/// When the receiver acknowledges a batch to its sender.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AckMode {
    /// Once the pipeline's queue holds the batch (`Output::send` returned).
    #[default]
    Queued,
    /// Once the pipeline's sinks acknowledged the batch (`Output::send_acked`).
    Delivered,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenConfig {
    /// The token itself (prefer `token_env` or `token_file`).
    #[serde(default)]
    token: Option<String>,
    /// An environment variable holding the token.
    #[serde(default)]
    token_env: Option<String>,
    /// A file holding the token (relative paths under the node's data directory).
    #[serde(default)]
    token_file: Option<std::path::PathBuf>,
    /// The group whose events this token may send.
    group: String,
    /// Subgroups it may send; empty means any subgroup of the group.
    #[serde(default)]
    subgroups: Vec<String>,
    /// A dispatcher's token: its events keep whatever identity they carry
    /// (the `HELLO` identity must still be the token's).
    #[serde(default)]
    relay: bool,
}

fn default_max_batch() -> ByteSize {
    ByteSize(16 << 20)
}
fn default_max_in_flight() -> u32 {
    8
}
fn default_high_water() -> f64 {
    0.5
}

/// A resolved token.
struct Token {
    name: String,
    secret: String,
    group: String,
    subgroups: Vec<String>,
    relay: bool,
}

impl Token {
    fn owns(&self, id: &Identity) -> bool {
        id.group == self.group && (self.subgroups.is_empty() || self.subgroups.contains(&id.subgroup))
    }

    /// Whether an event with identity `id` may come with this token.
    fn may_carry(&self, id: &Identity) -> bool {
        self.relay || self.owns(id)
    }
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let address: SocketAddr =
        c.address.parse().map_err(|e| cx.error("address", format!("invalid socket address {:?}: {e}", c.address)))?;
    if c.tokens.is_empty() {
        return Err(cx.error("tokens", "at least one token is needed: agents must authenticate"));
    }
    let mut tokens = Vec::new();
    for (name, t) in &c.tokens {
        let src =
            TokenSource { token: t.token.clone(), token_env: t.token_env.clone(), token_file: t.token_file.clone() };
        let secret = src
            .resolve_or_create(&cx.data_dir, cx.dry_run)
            .map_err(|(k, m)| cx.error(&format!("tokens.{name}.{k}"), m))?;
        if t.group.is_empty() {
            return Err(cx.error(&format!("tokens.{name}.group"), "must not be empty"));
        }
        if tokens.iter().any(|o: &Token| o.secret == secret) {
            return Err(cx.error(&format!("tokens.{name}"), "the same secret is configured for two tokens"));
        }
        tokens.push(Token {
            name: name.clone(),
            secret,
            group: t.group.clone(),
            subgroups: t.subgroups.clone(),
            relay: t.relay,
        });
    }
    if c.max_batch_bytes.0 == 0 || c.max_batch_bytes.0 > (1 << 30) {
        return Err(cx.error("max_batch_bytes", "must be between 1 byte and 1GiB"));
    }
    if c.max_in_flight == 0 || c.max_in_flight > 1024 {
        return Err(cx.error("max_in_flight", "must be between 1 and 1024"));
    }
    if !(c.credit_high_water > 0.0 && c.credit_high_water <= 1.0) {
        return Err(cx.error("credit_high_water", "must be greater than 0 and at most 1"));
    }
    let tls = c.tls.as_ref().map(acceptor).transpose().map_err(|(k, m)| cx.error(&join("tls", k), m))?;
    let name = c.name.clone().unwrap_or_else(|| sluice_core::secret::hostname().unwrap_or_default());
    Ok(Box::new(SluiceSource {
        address,
        tls,
        settings: Arc::new(Settings {
            tokens,
            max_batch: c.max_batch_bytes.0 as u32,
            max_in_flight: c.max_in_flight,
            initial_credits: c.initial_credits.unwrap_or(c.max_in_flight).min(c.max_in_flight),
            high_water: c.credit_high_water,
            handshake_timeout: c.handshake_timeout.0,
            heartbeat: c.heartbeat_interval.0,
            name,
            ack: c.ack,
        }),
        max_connections: c.max_connections.get(),
    }))
}

fn join(a: &str, b: &str) -> String {
    if b.is_empty() {
        a.to_string()
    } else {
        format!("{a}.{b}")
    }
}

struct Settings {
    tokens: Vec<Token>,
    max_batch: u32,
    max_in_flight: u32,
    initial_credits: u32,
    high_water: f64,
    handshake_timeout: Duration,
    heartbeat: Duration,
    name: String,
    ack: AckMode,
}

struct SluiceSource {
    address: SocketAddr,
    tls: Option<TlsAcceptor>,
    settings: Arc<Settings>,
    max_connections: usize,
}

/// Counters shared by every connection.
struct Counters {
    auth_failures: Arc<Counter>,
    identity_refused: Arc<Counter>,
    batches: Arc<Counter>,
    acks: Arc<Counter>,
    retry_acks: Arc<Counter>,
    credits: Arc<Counter>,
    oversized: Arc<Counter>,
    corrupt: Arc<Counter>,
    protocol: Arc<Counter>,
    timeouts: Arc<Counter>,
    handshake_errors: Arc<Counter>,
}

impl Counters {
    fn new(cx: &SourceContext) -> Self {
        let m = &cx.metrics;
        Self {
            auth_failures: m.counter("auth_failures"),
            identity_refused: m.counter("identity_refused"),
            batches: m.counter("batches"),
            acks: m.counter("acks"),
            retry_acks: m.counter("retry_acks"),
            credits: m.counter("credits_granted"),
            oversized: m.counter("oversized_frames"),
            corrupt: m.counter("corrupt_batches"),
            protocol: m.counter("protocol_errors"),
            timeouts: m.counter("timeouts"),
            handshake_errors: m.counter("tls_handshake_errors"),
        }
    }

    fn count(&self, code: ErrorCode) {
        match code {
            ErrorCode::BadToken => self.auth_failures.inc(),
            ErrorCode::IdentityNotOwned => self.identity_refused.inc(),
            ErrorCode::Oversized => self.oversized.inc(),
            ErrorCode::CorruptPayload => self.corrupt.inc(),
            ErrorCode::Timeout => self.timeouts.inc(),
            _ => self.protocol.inc(),
        }
    }
}

#[async_trait]
impl Source for SluiceSource {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let listener = TcpListener::bind(self.address).await.map_err(|e| format!("bind {}: {e}", self.address))?;
        let local = listener.local_addr()?;
        tracing::info!(source = %cx.id, address = %local, tls = self.tls.is_some(), "sluice source listening");
        let counters = Arc::new(Counters::new(&cx));
        let mut listener = Listener::new(listener, &cx.id, self.max_connections, ListenerCounters::of(&cx.metrics));
        let mut tasks = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                _ = cx.shutdown.cancelled() => break,
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                incoming = listener.accept() => {
                    let (stream, peer, guard) = match incoming {
                        Incoming::Open(stream, peer, guard) => (stream, peer, guard),
                        Incoming::Refused(stream, _peer) => {
                            // Counted and logged (throttled) by the listener.
                            // Plain-text senders learn why; TLS senders see a closed connection.
                            if self.tls.is_none() {
                                let reason = format!("the receiver serves at most {} connections", self.max_connections);
                                tasks.spawn(refuse(stream, Frame::Error { code: ErrorCode::TooManyConnections, reason }));
                            }
                            continue;
                        }
                    };
                    let _ = stream.set_nodelay(true);
                    let cx = cx.clone();
                    let settings = Arc::clone(&self.settings);
                    let counters = Arc::clone(&counters);
                    let tls = self.tls.clone();
                    tasks.spawn(async move {
                        let _guard = guard;
                        match tls {
                            None => serve(stream, peer, &cx, &settings, &counters).await,
                            Some(acceptor) => {
                                let hs = tokio::select! {
                                    _ = cx.shutdown.cancelled() => return,
                                    r = tokio::time::timeout(settings.handshake_timeout, acceptor.accept(stream)) => r,
                                };
                                match hs {
                                    Ok(Ok(s)) => serve(s, peer, &cx, &settings, &counters).await,
                                    Ok(Err(e)) => {
                                        counters.handshake_errors.inc();
                                        tracing::debug!(source = %cx.id, %peer, error = %e, "tls handshake failed");
                                    }
                                    Err(_) => {
                                        counters.handshake_errors.inc();
                                        tracing::debug!(source = %cx.id, %peer, "tls handshake timed out");
                                    }
                                }
                            }
                        }
                    });
                }
            }
        }
        // Connections see the cancellation, answer what they hold and close.
        while tasks.join_next().await.is_some() {}
        Ok(())
    }
}

#[cfg(test)]
mod tests;
