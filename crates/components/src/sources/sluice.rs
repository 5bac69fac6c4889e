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

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration};
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
    #[serde(default = "default_max_connections")]
    max_connections: usize,
    /// Credit mode: credits granted when a sender connects (default: `max_in_flight`).
    #[serde(default)]
    initial_credits: Option<u32>,
    /// Credit mode: no credit is granted while the queue is fuller than this (0–1).
    #[serde(default = "default_high_water")]
    credit_high_water: f64,
    /// Longest wait for a `HELLO` (and TLS handshake) after accepting.
    #[serde(default = "default_handshake_timeout")]
    handshake_timeout: HumanDuration,
    /// Expected frame interval; a connection silent for three of these is closed.
    #[serde(default = "default_heartbeat")]
    heartbeat_interval: HumanDuration,
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
fn default_max_connections() -> usize {
    1024
}
fn default_high_water() -> f64 {
    0.5
}
fn default_handshake_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(10))
}
fn default_heartbeat() -> HumanDuration {
    HumanDuration(Duration::from_secs(5))
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
    if c.max_connections == 0 {
        return Err(cx.error("max_connections", "must be at least 1"));
    }
    if !(c.credit_high_water > 0.0 && c.credit_high_water <= 1.0) {
        return Err(cx.error("credit_high_water", "must be greater than 0 and at most 1"));
    }
    for (key, d) in [("handshake_timeout", c.handshake_timeout), ("heartbeat_interval", c.heartbeat_interval)] {
        if d.0.is_zero() {
            return Err(cx.error(key, "must be greater than 0"));
        }
    }
    let tls = c.tls.as_ref().map(acceptor).transpose().map_err(|(k, m)| cx.error(&join("tls", k), m))?;
    let name = c.name.clone().unwrap_or_else(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_default()
    });
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
        max_connections: c.max_connections,
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

/// Tells a sender beyond `max_connections` why, spending at most a second.
async fn refuse(mut stream: tokio::net::TcpStream, frame: Frame) {
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(&frame.to_bytes())).await;
}

/// Why a connection ends with an error frame.
struct Refusal {
    code: ErrorCode,
    reason: String,
}

impl Refusal {
    fn new(code: ErrorCode, reason: impl Into<String>) -> Self {
        Self { code, reason: reason.into() }
    }
}

impl From<ProtocolError> for Refusal {
    fn from(e: ProtocolError) -> Self {
        Self { code: e.code(), reason: e.to_string() }
    }
}

/// A decoded batch waiting for the queue.
struct Pending {
    id: u64,
    events: Vec<Event>,
}

async fn serve<S>(stream: S, peer: SocketAddr, cx: &SourceContext, s: &Arc<Settings>, counters: &Arc<Counters>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (rd, wr) = tokio::io::split(stream);
    let mut reader = FrameReader::new(rd, s.max_batch);
    // Frames to the sender go through one writer task.
    let (out_tx, out_rx) = mpsc::channel::<Frame>(64 + s.max_in_flight as usize);
    let writer = tokio::spawn(write_loop(wr, out_rx));
    let result = converse(&mut reader, &out_tx, peer, cx, s, counters).await;
    let failed = result.is_err();
    if let Err(r) = result {
        counters.count(r.code);
        tracing::debug!(source = %cx.id, %peer, code = %r.code, reason = %r.reason, "closing agent connection");
        let _ = out_tx.send(Frame::Error { code: r.code, reason: r.reason }).await;
    }
    drop(out_tx);
    let _ = writer.await;
    if failed {
        // Let the error frame reach the sender before the socket closes.
        reader.discard(1 << 20, Duration::from_millis(500)).await;
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(mut w: W, mut rx: mpsc::Receiver<Frame>) {
    let mut buf = Vec::with_capacity(4096);
    while let Some(f) = rx.recv().await {
        buf.clear();
        f.encode(&mut buf);
        // Coalesce what is already waiting (acks of consecutive batches).
        while let Ok(f) = rx.try_recv() {
            f.encode(&mut buf);
        }
        if w.write_all(&buf).await.is_err() || w.flush().await.is_err() {
            return;
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), w.shutdown()).await;
}

/// Reads the `HELLO` and checks version, token and identity.
/// `Ok(None)`: the peer closed without sending anything (a TCP health
/// check), which is not an error.
async fn handshake<R: AsyncRead + Unpin>(
    reader: &mut FrameReader<R>,
    s: &Settings,
) -> Result<Option<(Hello, usize)>, Refusal> {
    let frame = match tokio::time::timeout(s.handshake_timeout, reader.read()).await {
        Err(_) => return Err(Refusal::new(ErrorCode::Timeout, format!("no HELLO within {:?}", s.handshake_timeout))),
        Ok(r) => r?,
    };
    let hello = match frame {
        Some(Frame::Hello(h)) => h,
        Some(other) => {
            return Err(Refusal::new(ErrorCode::ProtocolViolation, format!("expected HELLO, got {}", other.kind())))
        }
        None => return Ok(None),
    };
    if !(hello.min_version..=hello.max_version).contains(&VERSION) {
        return Err(Refusal::new(
            ErrorCode::UnsupportedVersion,
            format!("sender speaks versions {}..={}, receiver speaks {VERSION}", hello.min_version, hello.max_version),
        ));
    }
    // Compare against every token so timing does not tell which one matched.
    let mut found = None;
    for (i, t) in s.tokens.iter().enumerate() {
        if ct_eq(t.secret.as_bytes(), hello.token.as_bytes()) {
            found = Some(i);
        }
    }
    let Some(ti) = found else {
        return Err(Refusal::new(ErrorCode::BadToken, "the token matches no configured token"));
    };
    let token = &s.tokens[ti];
    let id = Identity::new(&hello.group, &hello.subgroup, &hello.host);
    if !token.owns(&id) {
        return Err(Refusal::new(ErrorCode::IdentityNotOwned, not_owned(token, &id)));
    }
    Ok(Some((hello, ti)))
}

fn not_owned(t: &Token, id: &Identity) -> String {
    format!(
        "identity group {:?} subgroup {:?} is not owned by token {:?} (group {:?}{})",
        id.group,
        id.subgroup,
        t.name,
        t.group,
        if t.subgroups.is_empty() { String::new() } else { format!(", subgroups {:?}", t.subgroups) }
    )
}

async fn converse<R: AsyncRead + Unpin>(
    reader: &mut FrameReader<R>,
    out: &mpsc::Sender<Frame>,
    peer: SocketAddr,
    cx: &SourceContext,
    s: &Arc<Settings>,
    counters: &Arc<Counters>,
) -> Result<(), Refusal> {
    let (hello, ti) = tokio::select! {
        _ = cx.shutdown.cancelled() => return Err(Refusal::new(ErrorCode::ShuttingDown, "the receiver is stopping")),
        r = handshake(reader, s) => match r? {
            Some(h) => h,
            None => return Ok(()),
        },
    };
    let token = &s.tokens[ti];
    let mode = hello.mode;
    let hello_id = Arc::new(Identity::new(&hello.group, &hello.subgroup, &hello.host));
    tracing::debug!(source = %cx.id, %peer, token = %token.name, group = %hello.group, subgroup = %hello.subgroup, host = %hello.host, agent = %hello.agent, ?mode, "agent connected");
    let initial = if mode == Mode::Credit { s.initial_credits } else { 0 };
    counters.credits.add(u64::from(initial));
    let ok = Frame::HelloOk(HelloOk {
        version: VERSION,
        mode,
        max_batch_bytes: s.max_batch,
        max_in_flight: s.max_in_flight,
        initial_credits: initial,
        heartbeat_ms: u32::try_from(s.heartbeat.as_millis()).unwrap_or(u32::MAX),
        receiver: s.name.clone(),
    });
    if out.send(ok).await.is_err() {
        return Ok(());
    }

    // The queue task hands batches to the pipeline one at a time; the ack
    // task answers each when it is queued (or, in `delivered` mode, when the
    // pipeline's sinks acknowledged it).
    let (batch_tx, batch_rx) = mpsc::channel::<Pending>(s.max_in_flight as usize);
    let (done_tx, done_rx) = mpsc::unbounded_channel::<Done>();
    // Credits the sender holds (credit mode) and batches not yet acked.
    let held = Arc::new(AtomicUsize::new(initial as usize));
    let unacked = Arc::new(AtomicUsize::new(0));
    let stop_queue = CancellationToken::new();
    let stop_acks = CancellationToken::new();
    let queue_task = tokio::spawn(queue_loop(batch_rx, done_tx, cx.clone(), s.ack, stop_queue.clone()));
    let ack_task = tokio::spawn(ack_loop(
        done_rx,
        out.clone(),
        cx.clone(),
        Arc::clone(s),
        Arc::clone(counters),
        mode,
        Arc::clone(&held),
        Arc::clone(&unacked),
        stop_acks.clone(),
    ));
    let idle = s.heartbeat * 3;
    let mut cache: Option<Arc<Identity>> = None;
    let result = loop {
        let frame = tokio::select! {
            _ = cx.shutdown.cancelled() => break Err(Refusal::new(ErrorCode::ShuttingDown, "the receiver is stopping")),
            r = tokio::time::timeout(idle, reader.read()) => match r {
                Err(_) => break Err(Refusal::new(ErrorCode::Timeout, format!("no frame for {idle:?}"))),
                Ok(Err(e)) => break Err(e.into()),
                Ok(Ok(None)) => break Ok(()),
                Ok(Ok(Some(f))) => f,
            },
        };
        match frame {
            Frame::Batch(b) => {
                if unacked.load(Ordering::SeqCst) >= s.max_in_flight as usize {
                    break Err(Refusal::new(
                        ErrorCode::NoCredit,
                        format!("batch {} beyond max_in_flight ({})", b.id, s.max_in_flight),
                    ));
                }
                if mode == Mode::Credit {
                    let ok = held.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |h| h.checked_sub(1)).is_ok();
                    if !ok {
                        break Err(Refusal::new(ErrorCode::NoCredit, format!("batch {} sent without a credit", b.id)));
                    }
                }
                counters.batches.inc();
                cx.metrics.bytes_in.add(b.payload.len() as u64);
                let mut events = match decode_events(&b, s.max_batch) {
                    Ok(e) => e,
                    Err(e) => break Err(e.into()),
                };
                if let Err(r) = check_identities(&mut events, token, &hello_id, &mut cache) {
                    break Err(r);
                }
                cx.metrics.events_in.add(events.len() as u64);
                unacked.fetch_add(1, Ordering::SeqCst);
                if batch_tx.send(Pending { id: b.id, events }).await.is_err() {
                    break Ok(());
                }
            }
            Frame::Ping { nonce } => {
                let fill = fill_to_wire(cx.out.fill_ratio());
                if out.send(Frame::Pong { nonce, fill }).await.is_err() {
                    break Ok(());
                }
            }
            Frame::Pong { .. } => {}
            Frame::Error { code, reason } => {
                tracing::debug!(source = %cx.id, %peer, %code, %reason, "sender reported an error");
                break Ok(());
            }
            other => {
                break Err(Refusal::new(
                    ErrorCode::ProtocolViolation,
                    format!("unexpected {} frame from a sender", other.kind()),
                ))
            }
        }
    };
    // Batches already accepted are still queued and acknowledged (a closed
    // queue answers them with retry acks) before the connection closes.
    drop(batch_tx);
    if result.is_err() {
        stop_queue.cancel();
    }
    let _ = queue_task.await;
    // Acks already known go out; batches still waiting for their delivery
    // (`delivered` mode) are not waited for: the sender re-sends them.
    stop_acks.cancel();
    let _ = ack_task.await;
    result
}

/// Gives every event an owned identity: empty groups take the `HELLO`
/// identity, others must belong to the token.
fn check_identities(
    events: &mut [Event],
    token: &Token,
    hello_id: &Arc<Identity>,
    cache: &mut Option<Arc<Identity>>,
) -> Result<(), Refusal> {
    for e in events.iter_mut() {
        if e.identity.group.is_empty() {
            e.identity = Arc::clone(hello_id);
            continue;
        }
        if cache.as_ref().is_some_and(|c| Arc::ptr_eq(c, &e.identity) || **c == *e.identity) {
            continue;
        }
        if !token.may_carry(&e.identity) {
            return Err(Refusal::new(ErrorCode::IdentityNotOwned, not_owned(token, &e.identity)));
        }
        *cache = Some(Arc::clone(&e.identity));
    }
    Ok(())
}

/// A batch's outcome, for the ack task.
struct Done {
    id: u64,
    events: u64,
    queued: bool,
}

/// Hands batches to the pipeline one at a time and reports each outcome to
/// the ack task: at once after `send` (`queued`), or when the batch's token
/// resolves (`delivered`).
async fn queue_loop(
    mut rx: mpsc::Receiver<Pending>,
    done: mpsc::UnboundedSender<Done>,
    cx: SourceContext,
    ack: AckMode,
    stop: CancellationToken,
) {
    while let Some(p) = rx.recv().await {
        let (id, events) = (p.id, p.events.len() as u64);
        let sent = match ack {
            AckMode::Queued => tokio::select! {
                r = cx.out.send(p.events) => r.is_ok(),
                // The connection failed: the sender will resend; nothing more to queue.
                _ = stop.cancelled() => return,
            },
            AckMode::Delivered => {
                let tx = done.clone();
                let token = sluice_core::AckToken::new(move |d| {
                    let _ = tx.send(Done { id, events, queued: d == sluice_core::Delivery::Delivered });
                });
                tokio::select! {
                    // On `Err` the token was failed: the callback reports a retry.
                    r = cx.out.send_acked(p.events, token) => { let _ = r; continue; }
                    _ = stop.cancelled() => return,
                }
            }
        };
        if done.send(Done { id, events, queued: sent }).is_err() {
            return;
        }
    }
}

/// Answers every batch with an `ACK` carrying the queue fill and, in credit
/// mode, a credit (withheld while the queue is above the high-water mark and
/// granted with a `CREDIT` frame once it drains).
#[allow(clippy::too_many_arguments)]
async fn ack_loop(
    mut rx: mpsc::UnboundedReceiver<Done>,
    out: mpsc::Sender<Frame>,
    cx: SourceContext,
    s: Arc<Settings>,
    counters: Arc<Counters>,
    mode: Mode,
    held: Arc<AtomicUsize>,
    unacked: Arc<AtomicUsize>,
    stop: CancellationToken,
) {
    let mut withheld: u32 = 0;
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stopping = false;
    loop {
        let d = if stopping {
            // Answer what is already known, then end.
            match rx.try_recv() {
                Ok(d) => d,
                Err(_) => return,
            }
        } else {
            tokio::select! {
                d = rx.recv() => match d { Some(d) => d, None => return },
                _ = stop.cancelled() => { stopping = true; continue; }
                _ = tick.tick(), if withheld > 0 => {
                    let fill = cx.out.fill_ratio().unwrap_or(0.0);
                    if fill < s.high_water {
                        held.fetch_add(withheld as usize, Ordering::SeqCst);
                        counters.credits.add(u64::from(withheld));
                        let f = Frame::Credit { credits: withheld, fill: fill_to_wire(Some(fill)) };
                        withheld = 0;
                        if out.send(f).await.is_err() { return; }
                    }
                    continue;
                }
            }
        };
        let fill = cx.out.fill_ratio();
        let status = if d.queued {
            cx.metrics.events_out.add(d.events);
            counters.acks.inc();
            AckStatus::Queued
        } else {
            counters.retry_acks.inc();
            AckStatus::Retry
        };
        let mut credits = 0;
        if mode == Mode::Credit {
            if fill.unwrap_or(0.0) < s.high_water && withheld == 0 {
                credits = 1;
                held.fetch_add(1, Ordering::SeqCst);
                counters.credits.inc();
            } else {
                withheld += 1;
            }
        }
        unacked.fetch_sub(1, Ordering::SeqCst);
        if out.send(Frame::Ack(Ack { id: d.id, status, fill: fill_to_wire(fill), credits })).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{build_source, source_context, Capture};
    use sluice_protocol::compress::BatchEncoder;
    use sluice_protocol::conn::write_frame;
    use sluice_protocol::Compression;
    use tokio::net::TcpStream;

    const TOKEN: &str = "acme-secret-0123456789";
    const OTHER: &str = "globex-secret-0123456789";

    fn config(addr: SocketAddr, extra: &str) -> String {
        format!(
            "address = \"{addr}\"\nmax_in_flight = 4\n{extra}\n[tokens.acme]\ntoken = \"{TOKEN}\"\ngroup = \"acme\"\nsubgroups = [\"web\", \"db\"]\n[tokens.globex]\ntoken = \"{OTHER}\"\ngroup = \"globex\"\n"
        )
    }

    struct Server {
        addr: SocketAddr,
        cap: Arc<Capture>,
        shutdown: CancellationToken,
        metrics: Arc<sluice_core::metrics::ComponentMetrics>,
        task: tokio::task::JoinHandle<Result<(), BoxError>>,
    }

    impl Server {
        async fn start(extra: &str) -> Self {
            Self::start_with(extra, None).await
        }
        async fn start_with(extra: &str, out: Option<Arc<dyn sluice_core::component::Output>>) -> Self {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = probe.local_addr().unwrap();
            drop(probe);
            let src = build_source(&SPEC, &config(addr, extra)).unwrap();
            let cap = Arc::new(Capture::default());
            let (mut cx, shutdown, metrics) = source_context(Arc::clone(&cap));
            if let Some(o) = out {
                cx.out = o;
            }
            let task = tokio::spawn(src.run(cx));
            for _ in 0..200 {
                if TcpStream::connect(addr).await.is_ok() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Self { addr, cap, shutdown, metrics, task }
        }
        fn counter(&self, name: &'static str) -> u64 {
            self.metrics.counter(name).get()
        }
        async fn stop(self) {
            self.shutdown.cancel();
            self.task.await.unwrap().unwrap();
        }
    }

    struct Client {
        r: FrameReader<tokio::net::tcp::OwnedReadHalf>,
        w: tokio::net::tcp::OwnedWriteHalf,
    }

    impl Client {
        async fn connect(addr: SocketAddr) -> Self {
            let (r, w) = TcpStream::connect(addr).await.unwrap().into_split();
            Self { r: FrameReader::new(r, 1 << 20), w }
        }
        async fn hello(addr: SocketAddr, token: &str, group: &str, subgroup: &str, mode: Mode) -> (Self, Frame) {
            let mut c = Self::connect(addr).await;
            let h = Hello {
                min_version: 1,
                max_version: 3,
                mode,
                compressions: 0b111,
                token: token.into(),
                group: group.into(),
                subgroup: subgroup.into(),
                host: "host-1".into(),
                agent: "test".into(),
            };
            c.send(&Frame::Hello(h)).await;
            let reply = c.recv().await.expect("a reply to HELLO");
            (c, reply)
        }
        async fn send(&mut self, f: &Frame) {
            write_frame(&mut self.w, f).await.unwrap();
        }
        async fn recv(&mut self) -> Option<Frame> {
            tokio::time::timeout(Duration::from_secs(5), self.r.read())
                .await
                .expect("no frame within 5s")
                .ok()
                .flatten()
        }
        async fn batch(&mut self, id: u64, events: &[Event], c: Compression) {
            let mut enc = BatchEncoder::new(c, 1).unwrap();
            let mut buf = Vec::new();
            enc.encode(id, events, &mut buf).unwrap();
            self.w.write_all(&buf).await.unwrap();
        }
    }

    fn events(from: usize, n: usize, id: Option<(&str, &str)>) -> Vec<Event> {
        (from..from + n)
            .map(|i| {
                let mut e = Event::from_message(format!("event {i}"));
                if let Some((g, s)) = id {
                    e.identity = Arc::new(Identity::new(g, s, "other-host"));
                }
                e
            })
            .collect()
    }

    fn error_of(f: Option<Frame>) -> (ErrorCode, String) {
        match f {
            Some(Frame::Error { code, reason }) => (code, reason),
            other => panic!("expected an ERROR frame, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn batches_are_acked_after_queueing_with_identity_and_fill() {
        let srv = Server::start("").await;
        let (mut c, ok) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Push).await;
        let Frame::HelloOk(ok) = ok else { panic!("{ok:?}") };
        assert_eq!((ok.version, ok.max_in_flight, ok.initial_credits), (1, 4, 0));
        for (i, codec) in [Compression::None, Compression::Zstd, Compression::Lz4].into_iter().enumerate() {
            c.batch(i as u64 + 10, &events(i * 100, 100, None), codec).await;
        }
        // An event carrying its own identity of the same token (subgroup db).
        c.batch(20, &events(300, 5, Some(("acme", "db"))), Compression::Lz4).await;
        for id in [10, 11, 12, 20] {
            match c.recv().await {
                Some(Frame::Ack(a)) => {
                    assert_eq!(a.id, id);
                    assert_eq!(a.status, AckStatus::Queued);
                    assert_eq!(a.fill, sluice_protocol::FILL_UNKNOWN, "the capture output has no fill");
                }
                other => panic!("{other:?}"),
            }
        }
        c.send(&Frame::Ping { nonce: 77 }).await;
        assert_eq!(c.recv().await, Some(Frame::Pong { nonce: 77, fill: sluice_protocol::FILL_UNKNOWN }));
        let got = srv.cap.events.lock().clone();
        assert_eq!(got.len(), 305);
        for (i, e) in got.iter().enumerate() {
            assert_eq!(e.message(), Some(format!("event {i}").as_str()));
        }
        assert_eq!(*got[0].identity, Identity::new("acme", "web", "host-1"));
        assert_eq!(*got[304].identity, Identity::new("acme", "db", "other-host"));
        assert_eq!(srv.counter("batches"), 4);
        assert_eq!(srv.counter("acks"), 4);
        assert_eq!(srv.metrics.events_out.get(), 305);
        drop(c);
        srv.stop().await;
    }

    #[tokio::test]
    async fn delivered_mode_acks_when_the_sinks_acknowledge_in_their_order_and_relays_identities() {
        const RELAY: &str = "relay-secret-0123456789";
        let cap = Arc::new(crate::testkit::AckCapture::default());
        let extra = format!("ack = \"delivered\"\n[tokens.relay]\ntoken = \"{RELAY}\"\ngroup = \"acme\"\nrelay = true");
        let srv = Server::start_with(&extra, Some(Arc::clone(&cap) as Arc<dyn sluice_core::component::Output>)).await;
        let (mut c, ok) = Client::hello(srv.addr, RELAY, "acme", "", Mode::Push).await;
        assert!(matches!(ok, Frame::HelloOk(_)), "{ok:?}");
        // A relay token carries other tenants' events with their identity.
        c.batch(1, &events(0, 10, Some(("globex", "db"))), Compression::Lz4).await;
        c.batch(2, &events(10, 10, None), Compression::Lz4).await;
        c.batch(3, &events(20, 10, None), Compression::Lz4).await;
        for _ in 0..200 {
            if cap.tokens.lock().len() == 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Nothing is acknowledged while the sinks hold the batches.
        assert!(tokio::time::timeout(Duration::from_millis(200), c.r.read()).await.is_err(), "no ack before delivery");
        let mut tokens: Vec<sluice_core::AckToken> = std::mem::take(&mut *cap.tokens.lock());
        assert_eq!(tokens.len(), 3);
        // Delivered out of order, and one dropped undelivered: a retry ack.
        let t3 = tokens.pop().unwrap();
        let t2 = tokens.pop().unwrap();
        let t1 = tokens.pop().unwrap();
        t3.delivered();
        t1.delivered();
        drop(t2);
        let mut acks = Vec::new();
        for _ in 0..3 {
            match c.recv().await {
                Some(Frame::Ack(a)) => acks.push((a.id, a.status)),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(acks, [(3, AckStatus::Queued), (1, AckStatus::Queued), (2, AckStatus::Retry)]);
        assert_eq!(srv.counter("acks"), 2);
        assert_eq!(srv.counter("retry_acks"), 1);
        assert_eq!(srv.metrics.events_out.get(), 20);
        let got = cap.events.lock().clone();
        assert_eq!(*got[0].identity, Identity::new("globex", "db", "other-host"));
        assert_eq!(*got[10].identity, Identity::new("acme", "", "host-1"));
        drop(c);
        srv.stop().await;
    }

    #[tokio::test]
    async fn bad_token_and_foreign_identities_are_refused() {
        let srv = Server::start("").await;
        let (_c, r) = Client::hello(srv.addr, "wrong-token-0123456789", "acme", "web", Mode::Push).await;
        assert_eq!(error_of(Some(r)), (ErrorCode::BadToken, "the token matches no configured token".into()));
        // acme's token claiming globex.
        let (_c, r) = Client::hello(srv.addr, TOKEN, "globex", "web", Mode::Push).await;
        let (code, reason) = error_of(Some(r));
        assert_eq!(code, ErrorCode::IdentityNotOwned);
        assert_eq!(
            reason,
            "identity group \"globex\" subgroup \"web\" is not owned by token \"acme\" (group \"acme\", subgroups [\"web\", \"db\"])"
        );
        // A subgroup outside the token's list.
        let (_c, r) = Client::hello(srv.addr, TOKEN, "acme", "finance", Mode::Push).await;
        assert_eq!(error_of(Some(r)).0, ErrorCode::IdentityNotOwned);
        // A valid hello, then a batch smuggling another group's events: the
        // whole batch is refused, nothing queued, the connection closed.
        let (mut c, ok) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Push).await;
        assert!(matches!(ok, Frame::HelloOk(_)));
        let mut evs = events(0, 3, None);
        evs.extend(events(3, 1, Some(("globex", ""))));
        c.batch(1, &evs, Compression::Zstd).await;
        let (code, reason) = error_of(c.recv().await);
        assert_eq!(code, ErrorCode::IdentityNotOwned);
        assert!(reason.contains("group \"globex\""), "{reason}");
        assert_eq!(c.recv().await, None, "closed after the error");
        // globex's own token may write globex with any subgroup.
        let (_c, ok) = Client::hello(srv.addr, OTHER, "globex", "anything", Mode::Push).await;
        assert!(matches!(ok, Frame::HelloOk(_)));
        assert_eq!(srv.counter("auth_failures"), 1);
        assert_eq!(srv.counter("identity_refused"), 3);
        assert_eq!(srv.cap.events.lock().len(), 0);
        srv.stop().await;
    }

    #[tokio::test]
    async fn garbage_oversized_truncated_and_corrupt_input_get_errors_and_counters() {
        let srv = Server::start("max_batch_bytes = \"64KiB\"").await;
        // Garbage instead of a HELLO.
        let mut c = Client::connect(srv.addr).await;
        c.w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
        let (code, reason) = error_of(c.recv().await);
        assert_eq!(code, ErrorCode::ProtocolViolation);
        assert_eq!(reason, "bad magic [47, 45]: not a sluice agent protocol frame");
        // An oversized batch announced after a good hello.
        let (mut c, _) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Push).await;
        c.w.write_all(&[b'S', b'L', 3, 0, 0, 0, 0, 1]).await.unwrap();
        let (code, reason) = error_of(c.recv().await);
        assert_eq!(code, ErrorCode::Oversized);
        assert_eq!(reason, "BATCH frame of 16777216 bytes exceeds the limit of 65560 bytes");
        // A batch declaring a raw length over the limit (a bomb is refused
        // before decompressing; bounded decompression is tested in sluice-protocol).
        let (mut c, _) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Push).await;
        let bomb = vec![0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0];
        let f = Frame::Batch(sluice_protocol::Batch {
            id: 1,
            events: 1,
            compression: Compression::Zstd,
            raw_len: 8 << 20,
            payload: bomb,
        });
        c.send(&f).await;
        let (code, reason) = error_of(c.recv().await);
        assert_eq!(code, ErrorCode::Oversized);
        assert_eq!(reason, "batch payload of 8388608 bytes exceeds max_batch_bytes (65536)");
        // A corrupt payload.
        let (mut c, _) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Push).await;
        let f = Frame::Batch(sluice_protocol::Batch {
            id: 2,
            events: 1,
            compression: Compression::None,
            raw_len: 4,
            payload: vec![1, 1, 0, 0],
        });
        c.send(&f).await;
        let (code, reason) = error_of(c.recv().await);
        assert_eq!(code, ErrorCode::CorruptPayload);
        assert!(reason.starts_with("corrupt batch payload: invalid"), "{reason}");
        // A frame cut short by the sender closing.
        let (mut c, _) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Push).await;
        c.w.write_all(&[b'S', b'L', 6, 0, 8, 0, 0, 0, 1, 2]).await.unwrap();
        c.w.shutdown().await.unwrap();
        let (code, reason) = error_of(c.recv().await);
        assert_eq!(code, ErrorCode::ProtocolViolation);
        assert_eq!(reason, "connection closed in the middle of a frame (10 of 16 bytes)");
        // The source still serves.
        let (mut c, _) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Push).await;
        c.batch(3, &events(0, 2, None), Compression::Lz4).await;
        assert!(matches!(c.recv().await, Some(Frame::Ack(_))));
        assert_eq!(srv.counter("protocol_errors"), 2);
        assert_eq!(srv.counter("oversized_frames"), 2);
        assert_eq!(srv.counter("corrupt_batches"), 1);
        assert_eq!(srv.cap.events.lock().len(), 2);
        srv.stop().await;
    }

    /// An output that takes a batch only when a permit is added, with a settable fill.
    struct Gate {
        permits: tokio::sync::Semaphore,
        fill: parking_lot::Mutex<f64>,
    }

    #[async_trait]
    impl sluice_core::component::Output for Gate {
        async fn send(&self, _events: Vec<Event>) -> Result<(), sluice_core::component::Closed> {
            self.permits.acquire().await.map_err(|_| sluice_core::component::Closed)?.forget();
            Ok(())
        }
        fn fill_ratio(&self) -> Option<f64> {
            Some(*self.fill.lock())
        }
    }

    #[tokio::test]
    async fn credit_mode_grants_by_queue_room_and_refuses_batches_without_credit() {
        let gate = Arc::new(Gate { permits: tokio::sync::Semaphore::new(0), fill: parking_lot::Mutex::new(0.0) });
        let srv = Server::start_with("initial_credits = 2", Some(gate.clone())).await;
        let (mut c, ok) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Credit).await;
        let Frame::HelloOk(ok) = ok else { panic!("{ok:?}") };
        assert_eq!((ok.mode, ok.initial_credits), (Mode::Credit, 2));
        // The queue takes nothing, so no ack and no credit comes back: the
        // third batch has no credit.
        for id in 1..4 {
            c.batch(id, &events(0, 1, None), Compression::None).await;
        }
        let (code, reason) = error_of(c.recv().await);
        assert_eq!((code, reason.as_str()), (ErrorCode::NoCredit, "batch 3 sent without a credit"));

        // A full queue (fill 0.8 over the 0.5 high-water mark) withholds the
        // credit of an acked batch; it is granted once the queue drains.
        *gate.fill.lock() = 0.8;
        let (mut c, _) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Credit).await;
        gate.permits.add_permits(1);
        c.batch(10, &events(0, 1, None), Compression::None).await;
        let Some(Frame::Ack(a)) = c.recv().await else { panic!("no ack") };
        assert_eq!((a.id, a.status, a.fill, a.credits), (10, AckStatus::Queued, 8000, 0));
        *gate.fill.lock() = 0.1;
        assert_eq!(c.recv().await, Some(Frame::Credit { credits: 1, fill: 1000 }));
        assert_eq!(srv.counter("credits_granted"), 2 + 2 + 1);
        assert_eq!(srv.counter("protocol_errors"), 1, "the batch without credit");
        gate.permits.add_permits(100);
        srv.stop().await;
    }

    #[tokio::test]
    async fn handshake_timeout_closes_silent_connections() {
        let srv = Server::start("handshake_timeout = \"200ms\"").await;
        let mut c = Client::connect(srv.addr).await;
        let (code, reason) = error_of(c.recv().await);
        assert_eq!((code, reason.as_str()), (ErrorCode::Timeout, "no HELLO within 200ms"));
        assert_eq!(srv.counter("timeouts"), 1);
        srv.stop().await;
    }

    #[test]
    fn config_errors_name_the_key() {
        let e = build_source(&SPEC, "address = \"127.0.0.1:0\"\ntokens = {}").err().unwrap();
        assert_eq!(e.to_string(), "test.sluice.tokens: at least one token is needed: agents must authenticate");
        let e = build_source(&SPEC, "address = \"127.0.0.1:0\"\n[tokens.a]\ntoken = \"short\"\ngroup = \"g\"")
            .err()
            .unwrap();
        assert_eq!(e.to_string(), "test.sluice.tokens.a.token: the token must be at least 16 characters");
        let e = build_source(
            &SPEC,
            "address = \"127.0.0.1:0\"\n[tokens.a]\ntoken = \"0123456789abcdef\"\ngroup = \"g\"\nsubgroup = \"x\"",
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("unknown field `subgroup`"), "{e}");
        let e = build_source(
            &SPEC,
            "address = \"127.0.0.1:0\"\ntls = { cert = \"/nonexistent\", key = \"/x\" }\n[tokens.a]\ntoken = \"0123456789abcdef\"\ngroup = \"g\"",
        )
        .err()
        .unwrap();
        assert!(e.to_string().starts_with("test.sluice.tls.cert: cannot read /nonexistent"), "{e}");
    }
}
