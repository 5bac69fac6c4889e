//! `sluice`: the sending side of the agent protocol
//! (`docs/specs/agent-protocol.md`): ships batches to N receivers (`sluice`
//! sources of processors or dispatchers), balancing **per batch** with one
//! of the algorithms of [`crate::balancer`].
//!
//! Why per batch: balancing per connection (what the thesis's Pen did) pins
//! a busy sender to one receiver; here every batch is placed on its own, and
//! each receiver keeps a *window* of several unacknowledged batches so the
//! link stays busy while acks travel.
//!
//! **Acknowledgement.** The sink takes each batch's ack token
//! ([`Sink::write_acked`]) and resolves it only when the receiver's `ACK`
//! (status queued) arrives, i.e. when the batch is in the receiver's queue.
//! `write_acked` returns as soon as a dispatcher task took the batch; it waits
//! while every window is full or no receiver is up (back-pressure: the
//! pipeline's queue — the agent's bounded disk spool when persisted — fills,
//! then the sources stop reading). It never drops: when nobody took the batch
//! within `block_timeout` it returns an error that keeps the token, the
//! runtime logs it and retries the same batch.
//!
//! **Failover.** One task per receiver connects (TLS optional), sends
//! `HELLO`, writes batches and reads acks. It sends a `PING` every
//! `heartbeat_interval`; a receiver silent for three intervals, a batch not
//! acknowledged within `ack_timeout` (default 30 s: a receiver that answers
//! `PING`s but holds batches, e.g. a wedged pipeline behind it), a closed or
//! reset connection, a write timeout or an `ERROR` frame ends the session:
//! every batch in flight to that receiver goes back to the dispatcher and is
//! sent to the others first (at-least-once: a batch the dead receiver had
//! queued but not acknowledged arrives twice, at most one window per failure).
//! The task reconnects with exponential backoff (`backoff_min` doubling up
//! to `backoff_max`, each wait with ±50 % jitter), and a receiver that is
//! back returns to rotation as soon as its `HELLO_OK` arrives. A receiver
//! that refuses the token or identity is logged at error and retried the
//! same way (the config may be fixed on the receiver's side).
//!
//! **Batches** are encoded once (`sluice_core::codec::encode_batch`,
//! compressed with `compression`) and the same bytes are re-sent on failover.
//! A batch whose encoding exceeds `max_batch_bytes` is split; a single event
//! larger than that can never be delivered: it is dropped, counted in
//! `oversized_events` and logged.
//!
//! **Pool changes at run time** ([`members`]): a reload that changes only
//! `receivers` updates the pool in place (no pipeline restart), and the
//! optional members API (`members_api`) adds and drains receivers over the
//! node's API listener. A drained receiver gets no new batch, finishes its
//! batches in flight, then is disconnected.
//!
//! **Outlier ejection and slow-start** ([`health`]): with
//! `outlier_detection`, a receiver failing `consecutive_failures` times in a
//! row (lost connection, retry ack, an ack slower than `slow_ack`) gets no
//! new batch for `ejection_time`; a receiver that returns (ejection over,
//! reconnected, added) takes a growing fraction of its batches over
//! `slow_start`.
//!
//! **Metrics.** On the sink: `batches`, `resent_batches` (after a failure or
//! a retry ack), `oversized_events`, `blocked` (times `block_timeout`
//! passed), `raw_bytes` (batch encodings before compression; `bytes_out` is
//! what goes on the wire). Per receiver, a component `<sink id>@<address>` of type
//! `sluice_receiver`: `events_out` (acknowledged events), `errors`
//! (connection failures), `connects`, `batches_sent`, `batches_acked`,
//! `batches_failed` (in flight when it failed, re-sent elsewhere),
//! `retry_acks`, `ack_latency_us_total` (sum; divide by `batches_acked`);
//! `ejections`; `ack_timeouts`; gauges (refreshed every 100 ms) `in_flight`, `share_permille`
//! (of the sink's acknowledged events), `ack_p50_us`, `ack_p99_us`, `state`
//! (0 down, 1 up, 2 ejected, 3 draining, 4 removed) and `admission_pct`
//! (slow-start). Each receiver's share and ack latency percentiles are also
//! logged when the sink closes.

pub mod health;
pub mod members;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::component::LiveConfig;
use sluice_core::component::{BoxError, BuildContext, Sink, SinkSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration};
use sluice_core::metrics::{ComponentMetrics, Counter, Gauge, LatencyHistogram};
use sluice_core::mount::MountGuard;
use sluice_core::{AckToken, Event};
use sluice_protocol::compress::BatchEncoder;
use sluice_protocol::conn::FrameReader;
use sluice_protocol::frame::{AckStatus, Frame, Hello, Mode};
use sluice_protocol::{fill_from_wire, Compression, VERSION};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::TlsConnector;
use tokio_util::sync::CancellationToken;

use self::health::{Health, OutlierConfig};
use self::members::{Member, MemberStatus, Pool};
use crate::balancer::{Algorithm, Balancer, Candidate};
use crate::net::check_address;
use crate::secret::TokenSource;
use crate::tls::{connector, ClientTls};

/// Registry entry.
pub const SPEC: SinkSpec = SinkSpec {
    name: "sluice",
    summary: "the sluice agent protocol to N receivers: per-batch balancing, acks, failover",
    example: "receivers = [\"127.0.0.1:5044\", { address = \"127.0.0.1:5045\", weight = 2 }]\nalgorithm = \"least_loaded\"\ntoken = \"0123456789abcdef0123\"\ngroup = \"acme\"\nsubgroup = \"web\"\n",
    build,
};

/// A receiver: an address, or a table with a weight.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum ReceiverConfig {
    /// `"host:port"`.
    Address(String),
    /// `{ address = "host:port", weight = 2 }`.
    Table(ReceiverTable),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReceiverTable {
    /// `host:port`.
    address: String,
    /// Share for `weighted_round_robin` (default 1).
    #[serde(default = "default_weight")]
    weight: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The receivers (`sluice` sources), at least one.
    receivers: Vec<ReceiverConfig>,
    /// `round_robin` (default), `weighted_round_robin`, `random`,
    /// `least_connections`, `least_loaded` or `credit`.
    #[serde(default = "default_algorithm")]
    algorithm: Algorithm,
    /// The token (or `token_env` / `token_file`).
    #[serde(default)]
    token: Option<String>,
    /// An environment variable holding the token.
    #[serde(default)]
    token_env: Option<String>,
    /// A file holding the token (relative paths under the node's data directory).
    #[serde(default)]
    token_file: Option<std::path::PathBuf>,
    /// Identity claimed in `HELLO` and given to events without a group.
    #[serde(default)]
    group: String,
    /// Subgroup claimed in `HELLO`.
    #[serde(default)]
    subgroup: String,
    /// Host claimed in `HELLO` (default: this machine's host name).
    #[serde(default)]
    host: Option<String>,
    /// `zstd` (default), `lz4` or `none`.
    #[serde(default = "default_compression")]
    compression: String,
    /// zstd level (1–19).
    #[serde(default = "default_level")]
    compression_level: i32,
    /// Unacknowledged batches per receiver (the receiver may lower it).
    #[serde(default = "default_window")]
    window: u32,
    /// Largest encoded batch before compression; larger batches are split.
    #[serde(default = "default_max_batch")]
    max_batch_bytes: ByteSize,
    /// Longest wait for a connection and its `HELLO_OK`.
    #[serde(default = "default_connect_timeout")]
    connect_timeout: HumanDuration,
    /// Longest wait for one batch to be written.
    #[serde(default = "default_write_timeout")]
    write_timeout: HumanDuration,
    /// `PING` period; a receiver silent for three periods is failed over.
    #[serde(default = "default_heartbeat")]
    heartbeat_interval: HumanDuration,
    /// Longest wait for a batch's `ACK` (Filebeat's `timeout`): a receiver
    /// that keeps answering `PING`s but holds a batch longer is failed over
    /// like a silent one ("0s": wait for ever).
    #[serde(default = "default_ack_timeout")]
    ack_timeout: HumanDuration,
    /// First reconnection delay.
    #[serde(default = "default_backoff_min")]
    backoff_min: HumanDuration,
    /// Longest reconnection delay.
    #[serde(default = "default_backoff_max")]
    backoff_max: HumanDuration,
    /// How long a write waits for a receiver to take the batch before
    /// returning an error (the runtime keeps the batch and retries).
    #[serde(default = "default_block_timeout")]
    block_timeout: HumanDuration,
    /// How long closing waits for the acks of batches in flight.
    #[serde(default = "default_close_timeout")]
    close_timeout: HumanDuration,
    /// Verify receivers with TLS.
    #[serde(default)]
    tls: Option<ClientTls>,
    /// Eject receivers that keep failing (absent: never eject).
    #[serde(default)]
    outlier_detection: Option<OutlierConfig>,
    /// A returning receiver's share ramps up over this long ("0s": at once).
    #[serde(default = "default_slow_start")]
    slow_start: HumanDuration,
    /// Serve the members API on the node's API listener with this token
    /// (`token`, `token_env` or `token_file`; a missing file is created).
    #[serde(default)]
    members_api: Option<TokenSource>,
}

pub(crate) fn default_weight() -> u32 {
    1
}
fn default_slow_start() -> HumanDuration {
    HumanDuration(Duration::ZERO)
}
fn default_algorithm() -> Algorithm {
    Algorithm::RoundRobin
}
fn default_compression() -> String {
    "zstd".into()
}
fn default_level() -> i32 {
    1
}
fn default_window() -> u32 {
    4
}
fn default_max_batch() -> ByteSize {
    ByteSize(8 << 20)
}
fn default_connect_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(5))
}
fn default_write_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(30))
}
fn default_ack_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(30))
}
fn default_heartbeat() -> HumanDuration {
    HumanDuration(Duration::from_secs(1))
}
fn default_backoff_min() -> HumanDuration {
    HumanDuration(Duration::from_millis(100))
}
fn default_backoff_max() -> HumanDuration {
    HumanDuration(Duration::from_secs(5))
}
fn default_block_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(10))
}
fn default_close_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(30))
}

/// What every task of one sink shares.
struct Settings {
    algorithm: Algorithm,
    hello: Hello,
    window: u32,
    connect_timeout: Duration,
    write_timeout: Duration,
    heartbeat: Duration,
    /// `None`: no limit.
    ack_timeout: Option<Duration>,
    backoff_min: Duration,
    backoff_max: Duration,
    tls: Option<(TlsConnector, Option<ServerName<'static>>)>,
    sink_id: String,
    outlier: Option<OutlierConfig>,
    slow_start: Duration,
}

/// One receiver's counters (kept for the sink's lifetime, also across a
/// drain and a re-add of the same address).
struct Receiver {
    address: String,
    metrics: Arc<ComponentMetrics>,
    connects: Arc<Counter>,
    sent: Arc<Counter>,
    acked: Arc<Counter>,
    failed: Arc<Counter>,
    retry_acks: Arc<Counter>,
    latency_total: Arc<Counter>,
    ejections: Arc<Counter>,
    ack_timeouts: Arc<Counter>,
    g_in_flight: Arc<Gauge>,
    g_share: Arc<Gauge>,
    g_p50: Arc<Gauge>,
    g_p99: Arc<Gauge>,
    g_state: Arc<Gauge>,
    g_admission: Arc<Gauge>,
    latency: LatencyHistogram,
}

impl Receiver {
    fn new(address: &str, cx: &BuildContext) -> Self {
        let child = cx.child("sink", &format!("{}@{address}", cx.id), "sluice_receiver", &cx.path);
        let m = child.metrics;
        Self {
            address: address.to_string(),
            connects: m.counter("connects"),
            sent: m.counter("batches_sent"),
            acked: m.counter("batches_acked"),
            failed: m.counter("batches_failed"),
            retry_acks: m.counter("retry_acks"),
            latency_total: m.counter("ack_latency_us_total"),
            ejections: m.counter("ejections"),
            ack_timeouts: m.counter("ack_timeouts"),
            g_in_flight: m.gauge("in_flight"),
            g_share: m.gauge("share_permille"),
            g_p50: m.gauge("ack_p50_us"),
            g_p99: m.gauge("ack_p99_us"),
            g_state: m.gauge("state"),
            g_admission: m.gauge("admission_pct"),
            latency: LatencyHistogram::default(),
            metrics: m,
        }
    }
}

/// Checks a `receivers` list (config, reload): addresses and duplicates.
pub(crate) fn parse_receivers(list: &[ReceiverConfig]) -> Result<Vec<Member>, (String, String)> {
    if list.is_empty() {
        return Err(("receivers".into(), "at least one receiver is needed".into()));
    }
    let mut out: Vec<Member> = Vec::new();
    for (i, r) in list.iter().enumerate() {
        let (address, weight) = match r {
            ReceiverConfig::Address(a) => (a.clone(), 1),
            ReceiverConfig::Table(t) => (t.address.clone(), t.weight),
        };
        check_address(&address).map_err(|m| (format!("receivers[{i}]"), m))?;
        if out.iter().any(|o| o.address == address) {
            return Err((format!("receivers[{i}]"), format!("{address} is listed twice")));
        }
        out.push(Member { address, weight });
    }
    Ok(out)
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Sink>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let members = parse_receivers(&c.receivers).map_err(|(k, m)| cx.error(&k, m))?;
    let src = TokenSource { token: c.token.clone(), token_env: c.token_env.clone(), token_file: c.token_file.clone() };
    let token = src.resolve(&cx.data_dir).map_err(|(k, m)| cx.error(k, m))?;
    let compression = Compression::from_name(&c.compression)
        .ok_or_else(|| cx.error("compression", format!("expected zstd, lz4 or none, found {:?}", c.compression)))?;
    if !(1..=19).contains(&c.compression_level) {
        return Err(cx.error("compression_level", "must be between 1 and 19"));
    }
    if c.window == 0 || c.window > 1024 {
        return Err(cx.error("window", "must be between 1 and 1024"));
    }
    if c.max_batch_bytes.0 < 1024 || c.max_batch_bytes.0 > (1 << 30) {
        return Err(cx.error("max_batch_bytes", "must be between 1KiB and 1GiB"));
    }
    for (key, d) in [
        ("connect_timeout", c.connect_timeout),
        ("write_timeout", c.write_timeout),
        ("heartbeat_interval", c.heartbeat_interval),
        ("backoff_min", c.backoff_min),
        ("block_timeout", c.block_timeout),
    ] {
        if d.0.is_zero() {
            return Err(cx.error(key, "must be greater than 0"));
        }
    }
    if c.backoff_max.0 < c.backoff_min.0 {
        return Err(cx.error("backoff_max", "must not be less than backoff_min"));
    }
    if let Some(o) = &c.outlier_detection {
        if o.consecutive_failures == 0 {
            return Err(cx.error("outlier_detection.consecutive_failures", "must be at least 1"));
        }
        if o.ejection_time.0.is_zero() {
            return Err(cx.error("outlier_detection.ejection_time", "must be greater than 0"));
        }
        if o.max_ejected_percent > 100 {
            return Err(cx.error("outlier_detection.max_ejected_percent", "must be at most 100"));
        }
    }
    if c.algorithm == Algorithm::WeightedRoundRobin && members.iter().all(|r| r.weight == 0) {
        return Err(cx.error("receivers", "every weight is 0: no receiver would get a batch"));
    }
    let members_token = match &c.members_api {
        None => None,
        Some(t) => {
            if cx.mounts.address().is_none() {
                return Err(cx.error("members_api", "needs the node's API listener ([api] address is empty)"));
            }
            Some(
                t.resolve_or_create(&cx.data_dir, cx.dry_run)
                    .map_err(|(k, m)| cx.error(&format!("members_api.{k}"), m))?,
            )
        }
    };
    let tls = match &c.tls {
        None => None,
        Some(t) => {
            // One connector; the name is per receiver unless configured.
            let (conn, _) = connector(t, &members[0].address).map_err(|(k, m)| cx.error(&format!("tls.{k}"), m))?;
            let name = match &t.server_name {
                Some(_) => {
                    Some(connector(t, &members[0].address).map_err(|(k, m)| cx.error(&format!("tls.{k}"), m))?.1)
                }
                None => None,
            };
            Some((conn, name))
        }
    };
    let host = c.host.clone().unwrap_or_else(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_default()
    });
    let mode = if c.algorithm == Algorithm::Credit { Mode::Credit } else { Mode::Push };
    let hello = Hello {
        min_version: VERSION,
        max_version: VERSION,
        mode,
        compressions: compression.bit(),
        token,
        group: c.group.clone(),
        subgroup: c.subgroup.clone(),
        host,
        agent: format!("sluice {}", env!("CARGO_PKG_VERSION")),
    };
    let encoder = BatchEncoder::new(compression, c.compression_level)
        .map_err(|e| cx.error("compression_level", e.to_string()))?;
    let m = &cx.metrics;
    Ok(Box::new(SluiceSink {
        settings: Arc::new(Settings {
            algorithm: c.algorithm,
            hello,
            window: c.window,
            connect_timeout: c.connect_timeout.0,
            write_timeout: c.write_timeout.0,
            heartbeat: c.heartbeat_interval.0,
            ack_timeout: Some(c.ack_timeout.0).filter(|d| !d.is_zero()),
            backoff_min: c.backoff_min.0,
            backoff_max: c.backoff_max.0,
            tls,
            sink_id: cx.id.clone(),
            outlier: c.outlier_detection.clone(),
            slow_start: c.slow_start.0,
        }),
        pool: Arc::new(Pool::new(members)),
        receivers: Arc::default(),
        cx: cx.clone(),
        members_token,
        mount: None,
        encoder,
        max_batch: c.max_batch_bytes.0 as usize,
        block_timeout: c.block_timeout.0,
        close_timeout: c.close_timeout.0,
        next_id: 0,
        running: None,
        cancel: CancellationToken::new(),
        counters: Arc::new(SinkCounters {
            batches: m.counter("batches"),
            resent: m.counter("resent_batches"),
            oversized: m.counter("oversized_events"),
            blocked: m.counter("blocked"),
            raw_bytes: m.counter("raw_bytes"),
        }),
        metrics: Arc::clone(m),
        frame: Vec::new(),
    }))
}

struct SinkCounters {
    batches: Arc<Counter>,
    resent: Arc<Counter>,
    oversized: Arc<Counter>,
    blocked: Arc<Counter>,
    raw_bytes: Arc<Counter>,
}

/// A batch on its way: its frame bytes (re-sent as they are on failover).
struct Job {
    id: u64,
    frame: Arc<Vec<u8>>,
    events: u64,
    ack: Option<AckToken>,
    sent_at: Instant,
}

/// The dispatcher's input channel and the signal it finished.
struct Running {
    input: Option<mpsc::Sender<Job>>,
    finished: oneshot::Receiver<()>,
}

/// Every receiver this sink has had, by address (their counters).
type ReceiverCache = Arc<parking_lot::Mutex<std::collections::BTreeMap<String, Arc<Receiver>>>>;

struct SluiceSink {
    settings: Arc<Settings>,
    pool: Arc<Pool>,
    receivers: ReceiverCache,
    cx: BuildContext,
    members_token: Option<String>,
    mount: Option<MountGuard>,
    encoder: BatchEncoder,
    max_batch: usize,
    block_timeout: Duration,
    close_timeout: Duration,
    next_id: u64,
    running: Option<Running>,
    cancel: CancellationToken,
    counters: Arc<SinkCounters>,
    metrics: Arc<ComponentMetrics>,
    frame: Vec<u8>,
}

impl Drop for SluiceSink {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

impl SluiceSink {
    /// Starts the dispatcher, which connects to every member (at the
    /// pipeline's start, or on the first write when used without a runtime).
    fn start_dispatcher(&mut self) -> &mut Running {
        self.running.get_or_insert_with(|| {
            let (input_tx, input_rx) = mpsc::channel::<Job>(1);
            let (ev_tx, ev_rx) = mpsc::unbounded_channel::<ConnEvent>();
            let (done_tx, done_rx) = oneshot::channel();
            let mut d = Dispatcher {
                balancer: Balancer::new(self.settings.algorithm),
                slots: Vec::new(),
                next_key: 0,
                retry: VecDeque::new(),
                held: None,
                counters: Arc::clone(&self.counters),
                settings: Arc::clone(&self.settings),
                pool: Arc::clone(&self.pool),
                receivers: Arc::clone(&self.receivers),
                cx: self.cx.clone(),
                events: ev_tx,
                cancel: self.cancel.clone(),
                rng: 0x9E37_79B9_7F4A_7C15,
                started: false,
            };
            d.reconcile();
            d.started = true;
            tokio::spawn(d.run(input_rx, ev_rx, self.cancel.clone(), done_tx));
            Running { input: Some(input_tx), finished: done_rx }
        })
    }

    /// Encodes `events` into one or more frames of at most `max_batch` raw bytes.
    fn encode(&mut self, events: &[Event], out: &mut Vec<(Arc<Vec<u8>>, u64, u64)>) {
        if events.is_empty() {
            return;
        }
        let id = self.next_id;
        self.frame.clear();
        let info = match self.encoder.encode(id, events, &mut self.frame) {
            Ok(i) => i,
            Err(e) => {
                // Only a batch over 4 GiB gets here; split it.
                tracing::debug!(sink = %self.settings.sink_id, error = %e, "batch encoding failed; splitting");
                sluice_protocol::compress::Encoded { raw_len: usize::MAX, wire_len: 0 }
            }
        };
        if info.raw_len <= self.max_batch {
            self.next_id += 1;
            self.metrics.bytes_out.add(self.frame.len() as u64);
            self.counters.raw_bytes.add(info.raw_len as u64);
            out.push((Arc::new(std::mem::take(&mut self.frame)), id, events.len() as u64));
            return;
        }
        if events.len() == 1 {
            self.counters.oversized.inc();
            tracing::error!(sink = %self.settings.sink_id, bytes = info.raw_len, max_batch_bytes = self.max_batch, "an event larger than max_batch_bytes can never be delivered; dropped and counted in oversized_events");
            return;
        }
        let (a, b) = events.split_at(events.len() / 2);
        self.encode(a, out);
        self.encode(b, out);
    }
}

#[async_trait]
impl Sink for SluiceSink {
    async fn start(&mut self) -> Result<(), BoxError> {
        self.start_dispatcher();
        if let Some(token) = &self.members_token {
            let base = members::base_path(&self.cx.pipeline, &self.cx.id);
            let router = members::router(Arc::clone(&self.pool), token.clone(), &base);
            let paths = vec![base.clone(), format!("{base}/drain")];
            let guard = self
                .cx
                .mounts
                .mount(&self.cx.path, paths, Arc::new(router))
                .map_err(|e| format!("members_api: {e}"))?;
            tracing::info!(sink = %self.settings.sink_id, path = %base, "members API mounted");
            self.mount = Some(guard);
        }
        Ok(())
    }

    fn live(&self) -> Option<Arc<dyn LiveConfig>> {
        Some(Arc::new(members::LivePool(Arc::clone(&self.pool))))
    }

    async fn write(&mut self, events: &[Event]) -> Result<(), BoxError> {
        let mut none = None;
        self.write_acked(events, &mut none).await
    }

    async fn write_acked(&mut self, events: &[Event], ack: &mut Option<AckToken>) -> Result<(), BoxError> {
        if events.is_empty() {
            return Ok(());
        }
        let block = self.block_timeout;
        let Some(input) = self.start_dispatcher().input.clone() else {
            return Err("the sluice sink is closed".into());
        };
        // Wait for room before taking anything: on timeout the batch and its
        // token stay with the runtime, which retries.
        let permit = match tokio::time::timeout(block, input.reserve()).await {
            Ok(Ok(p)) => p,
            Ok(Err(_)) => return Err("the sluice sink's dispatcher stopped".into()),
            Err(_) => {
                self.counters.blocked.inc();
                let addrs: Vec<String> = self.pool.wanted().into_iter().map(|m| m.address).collect();
                return Err(format!(
                    "no receiver took the batch within {block:?} (receivers down or every window full: {})",
                    addrs.join(", ")
                )
                .into());
            }
        };
        let mut frames = Vec::new();
        self.encode(events, &mut frames);
        let token = ack.take();
        let mut permit = Some(permit);
        for (frame, id, n) in frames {
            self.counters.batches.inc();
            let job = Job { id, frame, events: n, ack: token.clone(), sent_at: Instant::now() };
            match permit.take() {
                Some(p) => p.send(job),
                // The rest of a split batch waits without a limit: its first
                // part is already on its way.
                None => {
                    if input.send(job).await.is_err() {
                        return Err("the sluice sink's dispatcher stopped".into());
                    }
                }
            }
        }
        // The clones in the jobs carry the outcome.
        if let Some(t) = token {
            t.delivered();
        }
        Ok(())
    }

    async fn close(&mut self) -> Result<(), BoxError> {
        self.mount = None;
        let Some(mut running) = self.running.take() else { return Ok(()) };
        running.input = None;
        let result = match tokio::time::timeout(self.close_timeout, &mut running.finished).await {
            Ok(_) => Ok(()),
            Err(_) => Err(format!(
                "batches still unacknowledged after {:?}; they stay in the pipeline's queue (redelivered after a restart with a persisted queue)",
                self.close_timeout
            )
            .into()),
        };
        self.cancel.cancel();
        let receivers: Vec<Arc<Receiver>> = self.receivers.lock().values().cloned().collect();
        let total: u64 = receivers.iter().map(|r| r.metrics.events_out.get()).sum();
        for r in &receivers {
            let (n, p50, _, p99, max) = r.latency.summary();
            let share = if total == 0 { 0.0 } else { r.metrics.events_out.get() as f64 * 100.0 / total as f64 };
            tracing::info!(sink = %self.settings.sink_id, receiver = %r.address, events = r.metrics.events_out.get(), share_pct = format!("{share:.1}"), batches = n, ack_p50_us = p50, ack_p99_us = p99, ack_max_us = max, "receiver share");
        }
        result
    }
}

/// A frame for a connection task, tagged with the session it was meant for.
struct Outgoing {
    session: u64,
    /// The batch's id (its `ACK` names it).
    id: u64,
    frame: Arc<Vec<u8>>,
}

/// What connection tasks tell the dispatcher (`key` names the slot).
enum ConnEvent {
    Connected { key: u64, session: u64, window: u32, credits: u32 },
    Acked { key: u64, session: u64, id: u64, status: AckStatus, fill: u16, credits: u32 },
    Credit { key: u64, session: u64, credits: u32, fill: u16 },
    Fill { key: u64, session: u64, fill: u16 },
    Disconnected { key: u64, session: u64 },
}

/// One member of the pool as the dispatcher sees it.
struct Slot {
    key: u64,
    receiver: Arc<Receiver>,
    weight: u32,
    /// `false`: draining (no new batch; removed once nothing is in flight).
    wanted: bool,
    available: bool,
    connected_before: bool,
    session: u64,
    window: u32,
    credits: u32,
    fill: Option<f64>,
    in_flight: HashMap<u64, Job>,
    conn: mpsc::UnboundedSender<Outgoing>,
    cancel: CancellationToken,
    health: Health,
}

struct Dispatcher {
    balancer: Balancer,
    slots: Vec<Slot>,
    next_key: u64,
    /// Batches whose receiver failed: sent before new ones.
    retry: VecDeque<Job>,
    /// A new batch waiting for room.
    held: Option<Job>,
    counters: Arc<SinkCounters>,
    settings: Arc<Settings>,
    pool: Arc<Pool>,
    receivers: ReceiverCache,
    cx: BuildContext,
    events: mpsc::UnboundedSender<ConnEvent>,
    cancel: CancellationToken,
    rng: u64,
    /// Members joining after the start begin with a slow-start.
    started: bool,
}

impl Dispatcher {
    fn slot(&mut self, key: u64) -> Option<usize> {
        self.slots.iter().position(|s| s.key == key)
    }

    /// Brings the slots in line with the pool's wanted members: connects new
    /// ones, drains the ones no longer wanted, removes drained ones.
    fn reconcile(&mut self) {
        let wanted = self.pool.wanted();
        let now = Instant::now();
        for m in &wanted {
            if let Some(s) = self.slots.iter_mut().find(|s| s.receiver.address == m.address) {
                if !s.wanted {
                    tracing::info!(sink = %self.settings.sink_id, receiver = %m.address, "receiver wanted again; drain cancelled");
                }
                s.wanted = true;
                s.weight = m.weight;
                continue;
            }
            let receiver = Arc::clone(
                self.receivers
                    .lock()
                    .entry(m.address.clone())
                    .or_insert_with(|| Arc::new(Receiver::new(&m.address, &self.cx))),
            );
            let key = self.next_key;
            self.next_key += 1;
            let (tx, rx) = mpsc::unbounded_channel::<Outgoing>();
            let cancel = self.cancel.child_token();
            tokio::spawn(connection_task(
                key,
                Arc::clone(&receiver),
                Arc::clone(&self.settings),
                rx,
                self.events.clone(),
                cancel.clone(),
            ));
            let mut health = Health::default();
            if self.started {
                health.returned(now);
                tracing::info!(sink = %self.settings.sink_id, receiver = %m.address, weight = m.weight, "receiver added");
            }
            self.slots.push(Slot {
                key,
                receiver,
                weight: m.weight,
                wanted: true,
                available: false,
                connected_before: false,
                session: 0,
                window: 0,
                credits: 0,
                fill: None,
                in_flight: HashMap::new(),
                conn: tx,
                cancel,
                health,
            });
        }
        for s in self.slots.iter_mut() {
            if s.wanted && !wanted.iter().any(|m| m.address == s.receiver.address) {
                s.wanted = false;
                tracing::info!(sink = %self.settings.sink_id, receiver = %s.receiver.address, in_flight = s.in_flight.len(), "draining receiver: no new batches");
            }
        }
        self.remove_drained();
    }

    fn remove_drained(&mut self) {
        let sink = &self.settings.sink_id;
        self.slots.retain(|s| {
            if s.wanted || !s.in_flight.is_empty() {
                return true;
            }
            s.cancel.cancel();
            s.receiver.g_state.set(4);
            s.receiver.g_in_flight.set(0);
            tracing::info!(sink = %sink, receiver = %s.receiver.address, "receiver drained and removed");
            false
        });
    }

    fn candidates(&mut self, now: Instant) -> Vec<Candidate> {
        self.slots
            .iter_mut()
            .map(|s| {
                let ejected = s.health.ejected(now);
                Candidate {
                    available: s.available && s.wanted && !ejected,
                    in_flight: s.in_flight.len() as u32,
                    window: s.window,
                    weight: s.weight,
                    fill: s.fill,
                    credits: s.credits,
                }
            })
            .collect()
    }

    fn random01(&mut self) -> f64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        (x >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Sends `job` to a receiver, or gives it back when none can take it.
    fn place(&mut self, mut job: Job) -> Option<Job> {
        let now = Instant::now();
        let mut cands = self.candidates(now);
        let Some(mut idx) = self.balancer.pick(&cands) else { return Some(job) };
        // Slow-start: a returning receiver takes only part of what it is given.
        let admission = self.slots[idx].health.admission(now, self.settings.slow_start);
        if admission < 1.0 && self.random01() >= admission {
            cands[idx].available = false;
            if let Some(other) = self.balancer.pick(&cands) {
                idx = other;
            }
        }
        let s = &mut self.slots[idx];
        if self.balancer.algorithm() == Algorithm::Credit {
            s.credits = s.credits.saturating_sub(1);
        }
        if s.conn.send(Outgoing { session: s.session, id: job.id, frame: Arc::clone(&job.frame) }).is_err() {
            // The task is gone (cancelled): keep the job.
            s.available = false;
            return Some(job);
        }
        s.receiver.sent.inc();
        job.sent_at = Instant::now();
        s.in_flight.insert(job.id, job);
        None
    }

    /// Places retried batches first, then the held new one.
    fn place_all(&mut self) {
        while let Some(job) = self.retry.pop_front() {
            if let Some(back) = self.place(job) {
                self.retry.push_front(back);
                return;
            }
        }
        if let Some(job) = self.held.take() {
            self.held = self.place(job);
        }
    }

    fn fail_over(&mut self, i: usize) {
        let s = &mut self.slots[i];
        s.available = false;
        s.credits = 0;
        s.fill = None;
        let n = s.in_flight.len() as u64;
        if n > 0 {
            s.receiver.failed.add(n);
            self.counters.resent.add(n);
            tracing::warn!(sink = %self.settings.sink_id, receiver = %s.receiver.address, batches = n, "receiver failed; re-sending its unacknowledged batches to the others");
        }
        let mut jobs: Vec<Job> = s.in_flight.drain().map(|(_, j)| j).collect();
        jobs.sort_by_key(|j| j.id);
        for j in jobs.into_iter().rev() {
            self.retry.push_front(j);
        }
    }

    /// Counts a failure of slot `i`; ejects it when it reached the
    /// threshold and the pool can spare it.
    fn failure(&mut self, i: usize) {
        let Some(cfg) = self.settings.outlier.clone() else { return };
        if !self.slots[i].health.failure(&cfg) {
            return;
        }
        let now = Instant::now();
        let members = self.slots.iter().filter(|s| s.wanted).count();
        let ejected = self.slots.iter().filter(|s| s.wanted && s.health.is_ejected(now)).count();
        let s = &mut self.slots[i];
        if s.health.is_ejected(now) {
            return;
        }
        if ejected >= cfg.max_ejected(members) {
            tracing::debug!(sink = %self.settings.sink_id, receiver = %s.receiver.address, "outlier not ejected: max_ejected_percent reached");
            return;
        }
        let d = s.health.eject(now, &cfg);
        s.receiver.ejections.inc();
        tracing::warn!(sink = %self.settings.sink_id, receiver = %s.receiver.address, for_ = ?d, "receiver ejected: too many failures or slow acks in a row");
    }

    fn handle(&mut self, ev: ConnEvent) {
        match ev {
            ConnEvent::Connected { key, session, window, credits } => {
                let Some(i) = self.slot(key) else { return };
                let s = &mut self.slots[i];
                s.available = true;
                s.session = session;
                s.window = window;
                s.credits = credits;
                s.fill = None;
                if s.connected_before {
                    s.health.returned(Instant::now());
                }
                s.connected_before = true;
            }
            ConnEvent::Acked { key, session, id, status, fill, credits } => {
                let Some(i) = self.slot(key) else { return };
                let slow_ack = self.settings.outlier.as_ref().map(|o| o.slow_ack.0).filter(|d| !d.is_zero());
                let s = &mut self.slots[i];
                if s.session != session {
                    return;
                }
                s.fill = fill_from_wire(fill);
                s.credits = s.credits.saturating_add(credits);
                let Some(job) = s.in_flight.remove(&id) else { return };
                match status {
                    AckStatus::Queued => {
                        let r = &s.receiver;
                        let lat = job.sent_at.elapsed();
                        r.acked.inc();
                        r.metrics.events_out.add(job.events);
                        r.latency_total.add(u64::try_from(lat.as_micros()).unwrap_or(u64::MAX));
                        r.latency.record(lat);
                        if let Some(t) = job.ack {
                            t.delivered();
                        }
                        if slow_ack.is_some_and(|d| lat > d) {
                            self.failure(i);
                        } else {
                            s.health.success();
                        }
                    }
                    AckStatus::Retry => {
                        s.receiver.retry_acks.inc();
                        self.counters.resent.inc();
                        self.retry.push_back(job);
                        self.failure(i);
                    }
                }
            }
            ConnEvent::Credit { key, session, credits, fill } => {
                let Some(i) = self.slot(key) else { return };
                let s = &mut self.slots[i];
                if s.session == session {
                    s.credits = s.credits.saturating_add(credits);
                    s.fill = fill_from_wire(fill);
                }
            }
            ConnEvent::Fill { key, session, fill } => {
                let Some(i) = self.slot(key) else { return };
                let s = &mut self.slots[i];
                if s.session == session {
                    s.fill = fill_from_wire(fill);
                }
            }
            ConnEvent::Disconnected { key, session } => {
                let Some(i) = self.slot(key) else { return };
                if self.slots[i].session == session {
                    self.fail_over(i);
                    self.failure(i);
                }
            }
        }
    }

    /// Refreshes the per-receiver gauges and the members API's report.
    fn publish(&mut self) {
        let now = Instant::now();
        let total: u64 = self.receivers.lock().values().map(|r| r.metrics.events_out.get()).sum();
        let mut status = Vec::with_capacity(self.slots.len());
        for s in self.slots.iter_mut() {
            let r = &s.receiver;
            let events = r.metrics.events_out.get();
            let (_, p50, _, p99, _) = r.latency.summary();
            let ejected = s.health.is_ejected(now);
            let admission = (s.health.admission(now, self.settings.slow_start) * 100.0).round() as u32;
            let (state, code) = match (s.wanted, ejected, s.available) {
                (false, _, _) => ("draining", 3),
                (true, true, _) => ("ejected", 2),
                (true, false, true) => ("up", 1),
                (true, false, false) => ("down", 0),
            };
            let share = if total == 0 { 0.0 } else { events as f64 * 100.0 / total as f64 };
            r.g_in_flight.set(s.in_flight.len() as u64);
            r.g_share.set((share * 10.0).round() as u64);
            r.g_p50.set(p50);
            r.g_p99.set(p99);
            r.g_state.set(code);
            r.g_admission.set(u64::from(admission));
            status.push(MemberStatus {
                address: r.address.clone(),
                weight: s.weight,
                state,
                in_flight: s.in_flight.len(),
                events,
                share_pct: share,
                ack_p50_us: p50,
                ack_p99_us: p99,
                ejections: s.health.ejections(),
                admission_pct: admission,
            });
        }
        self.pool.publish(status);
    }

    fn idle(&self) -> bool {
        self.held.is_none() && self.retry.is_empty() && self.slots.iter().all(|s| s.in_flight.is_empty())
    }

    async fn run(
        mut self,
        mut input: mpsc::Receiver<Job>,
        mut events: mpsc::UnboundedReceiver<ConnEvent>,
        cancel: CancellationToken,
        done: oneshot::Sender<()>,
    ) {
        let mut input_open = true;
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let pool = Arc::clone(&self.pool);
        loop {
            self.place_all();
            if !input_open && self.idle() {
                self.publish();
                let _ = done.send(());
                return;
            }
            tokio::select! {
                _ = cancel.cancelled() => return,
                Some(ev) = events.recv() => {
                    self.handle(ev);
                    // Take every event already waiting before placing again.
                    while let Ok(ev) = events.try_recv() {
                        self.handle(ev);
                    }
                    self.remove_drained();
                }
                _ = pool.changed.notified() => self.reconcile(),
                _ = tick.tick() => {
                    self.remove_drained();
                    self.publish();
                }
                job = input.recv(), if input_open && self.held.is_none() && self.retry.is_empty() => match job {
                    Some(j) => self.held = Some(j),
                    None => input_open = false,
                },
            }
        }
    }
}

/// A small xorshift for backoff jitter.
struct Jitter(u64);
impl Jitter {
    fn factor(&mut self) -> f64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        0.5 + (x % 1000) as f64 / 1000.0
    }
}

async fn connection_task(
    key: u64,
    r: Arc<Receiver>,
    s: Arc<Settings>,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    events: mpsc::UnboundedSender<ConnEvent>,
    cancel: CancellationToken,
) {
    let mut backoff = s.backoff_min;
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1);
    let mut jitter = Jitter((seed ^ (key + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1);
    let mut session = 0u64;
    let mut failures = 0u64;
    loop {
        let attempt = tokio::select! {
            _ = cancel.cancelled() => return,
            a = tokio::time::timeout(s.connect_timeout, connect(&r.address, &s)) => a,
        };
        match attempt {
            Ok(Ok(conn)) => {
                session += 1;
                r.connects.inc();
                if failures > 0 {
                    tracing::info!(sink = %s.sink_id, receiver = %r.address, after_failures = failures, "receiver reconnected");
                }
                failures = 0;
                backoff = s.backoff_min;
                let Conn { reader, writer, window, credits } = conn;
                if events.send(ConnEvent::Connected { key, session, window, credits }).is_err() {
                    return;
                }
                let reason = run_session(key, session, reader, writer, &mut rx, &events, &s, &r, &cancel).await;
                let _ = events.send(ConnEvent::Disconnected { key, session });
                if cancel.is_cancelled() {
                    return;
                }
                r.metrics.errors.inc();
                tracing::warn!(sink = %s.sink_id, receiver = %r.address, reason = %reason, "receiver connection lost");
            }
            Ok(Err(e)) => {
                failures += 1;
                r.metrics.errors.inc();
                // Log the first failure and then every 10th, not every retry.
                if failures == 1 || failures.is_multiple_of(10) {
                    if e.starts_with("refused: bad_token") || e.starts_with("refused: identity_not_owned") {
                        tracing::error!(sink = %s.sink_id, receiver = %r.address, error = %e, failures, "receiver refused this agent");
                    } else {
                        tracing::warn!(sink = %s.sink_id, receiver = %r.address, error = %e, failures, "cannot connect to receiver");
                    }
                }
            }
            Err(_) => {
                failures += 1;
                r.metrics.errors.inc();
                if failures == 1 || failures.is_multiple_of(10) {
                    tracing::warn!(sink = %s.sink_id, receiver = %r.address, timeout = ?s.connect_timeout, failures, "connecting to receiver timed out");
                }
            }
        }
        let wait = backoff.mul_f64(jitter.factor());
        backoff = (backoff * 2).min(s.backoff_max);
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

type BoxRead = Box<dyn AsyncRead + Unpin + Send>;
type BoxWrite = Box<dyn AsyncWrite + Unpin + Send>;

struct Conn {
    reader: FrameReader<BoxRead>,
    writer: BoxWrite,
    window: u32,
    credits: u32,
}

/// Connects, runs TLS if configured, and does the `HELLO` exchange.
async fn connect(address: &str, s: &Settings) -> Result<Conn, String> {
    let tcp = TcpStream::connect(address).await.map_err(|e| format!("connect {address}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let (rd, mut wr): (BoxRead, BoxWrite) = match &s.tls {
        None => {
            let (r, w) = tcp.into_split();
            (Box::new(r), Box::new(w))
        }
        Some((conn, name)) => {
            let name = match name {
                Some(n) => n.clone(),
                None => {
                    let h = address.rsplit_once(':').map_or(address, |(h, _)| h);
                    let h = h.trim_start_matches('[').trim_end_matches(']').to_string();
                    ServerName::try_from(h).map_err(|e| format!("tls name for {address}: {e}"))?
                }
            };
            let tls = conn.connect(name, tcp).await.map_err(|e| format!("tls handshake with {address}: {e}"))?;
            let (r, w) = tokio::io::split(tls);
            (Box::new(r), Box::new(w))
        }
    };
    wr.write_all(&Frame::Hello(s.hello.clone()).to_bytes()).await.map_err(|e| format!("send HELLO: {e}"))?;
    wr.flush().await.map_err(|e| format!("send HELLO: {e}"))?;
    let mut reader = FrameReader::new(rd, 1 << 16);
    match reader.read().await {
        Ok(Some(Frame::HelloOk(ok))) => {
            if ok.version != VERSION {
                return Err(format!("receiver chose version {} (we speak {VERSION})", ok.version));
            }
            let window = s.window.min(ok.max_in_flight.max(1));
            let credits = if s.hello.mode == Mode::Credit { ok.initial_credits } else { 0 };
            Ok(Conn { reader, writer: wr, window, credits })
        }
        Ok(Some(Frame::Error { code, reason })) => Err(format!("refused: {code}: {reason}")),
        Ok(Some(other)) => Err(format!("expected HELLO_OK, got {}", other.kind())),
        Ok(None) => Err("closed before HELLO_OK".into()),
        Err(e) => Err(format!("reading HELLO_OK: {e}")),
    }
}

/// Runs one connected session until it fails; returns why.
#[allow(clippy::too_many_arguments)]
async fn run_session(
    key: u64,
    session: u64,
    mut reader: FrameReader<BoxRead>,
    mut writer: BoxWrite,
    rx: &mut mpsc::UnboundedReceiver<Outgoing>,
    events: &mpsc::UnboundedSender<ConnEvent>,
    s: &Settings,
    r: &Receiver,
    cancel: &CancellationToken,
) -> String {
    // Reading a frame is not cancel-safe: a task reads and forwards.
    let (ftx, mut frx) = mpsc::channel::<Result<Option<Frame>, String>>(64);
    let read_task = tokio::spawn(async move {
        loop {
            let r = reader.read().await.map_err(|e| e.to_string());
            let end = !matches!(r, Ok(Some(_)));
            if ftx.send(r).await.is_err() || end {
                return;
            }
        }
    });
    let mut ping = tokio::time::interval(s.heartbeat);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_heard = Instant::now();
    let mut nonce = 0u64;
    // Batches written in this session and not acknowledged yet, oldest first.
    let mut unacked: VecDeque<(u64, Instant)> = VecDeque::new();
    let reason = loop {
        tokio::select! {
            _ = cancel.cancelled() => break "sink stopped".to_string(),
            f = frx.recv() => {
                last_heard = Instant::now();
                let ev = match f {
                    Some(Ok(Some(Frame::Ack(a)))) => {
                        if let Some(i) = unacked.iter().position(|(id, _)| *id == a.id) {
                            unacked.remove(i);
                        }
                        ConnEvent::Acked { key, session, id: a.id, status: a.status, fill: a.fill, credits: a.credits }
                    }
                    Some(Ok(Some(Frame::Credit { credits, fill }))) => ConnEvent::Credit { key, session, credits, fill },
                    Some(Ok(Some(Frame::Pong { fill, .. }))) => ConnEvent::Fill { key, session, fill },
                    Some(Ok(Some(Frame::Ping { nonce }))) => {
                        let pong = Frame::Pong { nonce, fill: sluice_protocol::FILL_UNKNOWN }.to_bytes();
                        if let Err(e) = write(&mut writer, &pong, s.write_timeout).await { break e; }
                        continue;
                    }
                    Some(Ok(Some(Frame::Error { code, reason }))) => break format!("receiver error {code}: {reason}"),
                    Some(Ok(Some(other))) => break format!("unexpected {} frame from the receiver", other.kind()),
                    Some(Ok(None)) | None => break "closed by the receiver".to_string(),
                    Some(Err(e)) => break e,
                };
                if events.send(ev).is_err() { break "sink stopped".to_string(); }
            }
            out = rx.recv() => {
                let Some(out) = out else { break "sink stopped".to_string() };
                if out.session != session {
                    continue; // meant for an earlier, failed session: already re-queued
                }
                if let Err(e) = write(&mut writer, &out.frame, s.write_timeout).await { break e; }
                unacked.push_back((out.id, Instant::now()));
            }
            _ = ping.tick() => {
                if last_heard.elapsed() > s.heartbeat * 3 {
                    break format!("no frame from the receiver for {:?}", last_heard.elapsed());
                }
                if let (Some(limit), Some((id, sent))) = (s.ack_timeout, unacked.front()) {
                    if sent.elapsed() > limit {
                        r.ack_timeouts.inc();
                        break format!("batch {id} not acknowledged within ack_timeout ({limit:?})");
                    }
                }
                nonce += 1;
                if let Err(e) = write(&mut writer, &Frame::Ping { nonce }.to_bytes(), s.write_timeout).await { break e; }
            }
        }
    };
    read_task.abort();
    reason
}

async fn write(w: &mut BoxWrite, bytes: &[u8], timeout: Duration) -> Result<(), String> {
    match tokio::time::timeout(timeout, async {
        w.write_all(bytes).await?;
        w.flush().await
    })
    .await
    {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("write: {e}")),
        Err(_) => Err(format!("write timed out after {timeout:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::sluice as source;
    use crate::testkit::{build_sink, build_source, source_context, Capture};
    use sluice_core::Delivery;
    use std::net::SocketAddr;

    const TOKEN: &str = "acme-secret-0123456789";

    struct Receiver {
        addr: SocketAddr,
        cap: Arc<Capture>,
        shutdown: CancellationToken,
        task: tokio::task::JoinHandle<Result<(), BoxError>>,
    }

    fn free_addr() -> SocketAddr {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap()
    }

    async fn receiver(addr: SocketAddr) -> Receiver {
        let cfg = format!(
            "address = \"{addr}\"\nheartbeat_interval = \"1s\"\n[tokens.acme]\ntoken = \"{TOKEN}\"\ngroup = \"acme\"\n"
        );
        let src = build_source(&source::SPEC, &cfg).unwrap();
        let cap = Arc::new(Capture::default());
        let (cx, shutdown, _m) = source_context(Arc::clone(&cap));
        let task = tokio::spawn(src.run(cx));
        for _ in 0..200 {
            if TcpStream::connect(addr).await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Receiver { addr, cap, shutdown, task }
    }

    impl Receiver {
        async fn stop(self) -> Vec<Event> {
            self.shutdown.cancel();
            let _ = self.task.await;
            let v = self.cap.events.lock().clone();
            v
        }
    }

    fn sink_config(addrs: &[SocketAddr], algorithm: &str, extra: &str) -> String {
        let list: Vec<String> = addrs.iter().map(|a| format!("\"{a}\"")).collect();
        format!(
            "receivers = [{}]\nalgorithm = \"{algorithm}\"\ntoken = \"{TOKEN}\"\ngroup = \"acme\"\nsubgroup = \"web\"\nhost = \"agent-1\"\nbackoff_max = \"200ms\"\nheartbeat_interval = \"200ms\"\n{extra}",
            list.join(", ")
        )
    }

    fn batch(from: usize, n: usize) -> Vec<Event> {
        (from..from + n).map(|i| Event::from_message(format!("{i}"))).collect()
    }

    fn token() -> (AckToken, std::sync::mpsc::Receiver<Delivery>) {
        let _ = tracing_subscriber::fmt().with_test_writer().with_env_filter("debug").try_init();
        let (tx, rx) = std::sync::mpsc::channel();
        (
            AckToken::new(move |d| {
                let _ = tx.send(d);
            }),
            rx,
        )
    }

    fn seqs(events: &[Event]) -> Vec<usize> {
        let mut v: Vec<usize> = events.iter().map(|e| e.message().unwrap().parse().unwrap()).collect();
        v.sort_unstable();
        v
    }

    async fn wait_delivered(rx: &std::sync::mpsc::Receiver<Delivery>) -> Delivery {
        for _ in 0..1000 {
            if let Ok(d) = rx.try_recv() {
                return d;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("ack never resolved");
    }

    /// Waits (at most 10 s) until the sink's dispatcher sees every receiver
    /// of `addrs` up (the `state` gauge of `<sink id>@<address>`, 1 = up).
    async fn wait_all_up(cx: &BuildContext, addrs: &[SocketAddr]) {
        for _ in 0..1000 {
            let comps = cx.registry.components();
            let up = addrs.iter().all(|a| {
                let id = format!("{}@{a}", cx.id);
                comps.iter().any(|(_, c)| c.id == id && c.gauges().iter().any(|(k, v)| *k == "state" && *v == 1))
            });
            if up {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("receivers {addrs:?} never all up");
    }

    #[tokio::test]
    async fn round_robin_over_two_receivers_acks_every_batch_once() {
        let (a, b) = (receiver(free_addr()).await, receiver(free_addr()).await);
        let cx = BuildContext::for_test("sink", "out");
        let cfg = sink_config(&[a.addr, b.addr], "round_robin", "compression = \"lz4\"");
        let mut sink = (SPEC.build)(toml::from_str(&cfg).unwrap(), &cx).unwrap();
        // Both connected before the first batch: strict round robin then
        // alternates exactly (a receiver not up yet would be skipped).
        sink.start().await.unwrap();
        wait_all_up(&cx, &[a.addr, b.addr]).await;
        let mut rxs = Vec::new();
        for i in 0..20 {
            let (t, rx) = token();
            let mut ack = Some(t);
            sink.write_acked(&batch(i * 10, 10), &mut ack).await.unwrap();
            assert!(ack.is_none(), "the sink takes the token");
            rxs.push(rx);
        }
        for rx in &rxs {
            assert_eq!(wait_delivered(rx).await, Delivery::Delivered);
        }
        sink.close().await.unwrap();
        let (ea, eb) = (a.stop().await, b.stop().await);
        assert_eq!(ea.len() + eb.len(), 200);
        // Batch i (events 10i..10i+10) went to one receiver, batch i+1 to the other.
        let batches_of = |evs: &[Event]| -> Vec<usize> {
            let mut b: Vec<usize> = seqs(evs).iter().map(|s| s / 10).collect();
            b.dedup();
            b
        };
        let (ba, bb) = (batches_of(&ea), batches_of(&eb));
        assert_eq!((ea.len(), eb.len()), (100, 100), "strict round robin: {ba:?} / {bb:?}");
        assert!(ba.iter().zip(bb.iter()).all(|(x, y)| x.abs_diff(*y) == 1), "alternating: {ba:?} / {bb:?}");
        let mut all = ea.clone();
        all.extend(eb);
        assert_eq!(seqs(&all), (0..200).collect::<Vec<_>>());
        assert_eq!(*ea[0].identity, sluice_core::Identity::new("acme", "web", "agent-1"));
    }

    #[tokio::test]
    async fn failover_resends_to_the_survivor_and_a_returning_receiver_gets_traffic() {
        let (a, b) = (receiver(free_addr()).await, receiver(free_addr()).await);
        let (addr_a, addr_b) = (a.addr, b.addr);
        let mut sink = build_sink(&SPEC, &sink_config(&[addr_a, addr_b], "round_robin", "")).unwrap();
        let mut rxs = Vec::new();
        for i in 0..10 {
            let (t, rx) = token();
            sink.write_acked(&batch(i * 10, 10), &mut Some(t)).await.unwrap();
            rxs.push(rx);
        }
        for rx in rxs.drain(..) {
            assert_eq!(wait_delivered(&rx).await, Delivery::Delivered);
        }
        // a dies: everything goes to b.
        let ea1 = a.stop().await;
        for i in 10..30 {
            let (t, rx) = token();
            sink.write_acked(&batch(i * 10, 10), &mut Some(t)).await.unwrap();
            rxs.push(rx);
        }
        for rx in rxs.drain(..) {
            assert_eq!(wait_delivered(&rx).await, Delivery::Delivered);
        }
        // a returns on the same address and gets batches again.
        let a2 = receiver(addr_a).await;
        tokio::time::sleep(Duration::from_millis(600)).await;
        for i in 30..50 {
            let (t, rx) = token();
            sink.write_acked(&batch(i * 10, 10), &mut Some(t)).await.unwrap();
            rxs.push(rx);
        }
        for rx in rxs.drain(..) {
            assert_eq!(wait_delivered(&rx).await, Delivery::Delivered);
        }
        sink.close().await.unwrap();
        let (ea2, eb) = (a2.stop().await, b.stop().await);
        assert!(!ea2.is_empty(), "the returning receiver gets traffic again");
        let mut all = ea1;
        all.extend(ea2);
        all.extend(eb);
        let mut s = seqs(&all);
        s.dedup();
        assert_eq!(s, (0..500).collect::<Vec<_>>(), "nothing lost");
    }

    /// A receiver that says `HELLO_OK`, answers every `PING` and never
    /// acknowledges a batch; returns its address and how many batches it got.
    async fn wedged_receiver() -> (SocketAddr, Arc<std::sync::atomic::AtomicU64>) {
        use sluice_protocol::frame::HelloOk;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let batches = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = Arc::clone(&batches);
        tokio::spawn(async move {
            loop {
                let Ok((conn, _)) = listener.accept().await else { return };
                let counted = Arc::clone(&counted);
                tokio::spawn(async move {
                    let (rd, mut wr) = conn.into_split();
                    let mut reader = FrameReader::new(rd, 1 << 24);
                    while let Ok(Some(f)) = reader.read().await {
                        let reply = match f {
                            Frame::Hello(h) => Frame::HelloOk(HelloOk {
                                version: VERSION,
                                mode: h.mode,
                                max_batch_bytes: 1 << 24,
                                max_in_flight: 4,
                                initial_credits: 0,
                                heartbeat_ms: 200,
                                receiver: "wedged".into(),
                            }),
                            Frame::Ping { nonce } => Frame::Pong { nonce, fill: 0 },
                            Frame::Batch(_) => {
                                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                                continue;
                            }
                            _ => continue,
                        };
                        if wr.write_all(&reply.to_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (addr, batches)
    }

    #[tokio::test]
    async fn a_receiver_that_pings_but_never_acks_is_failed_over_after_ack_timeout() {
        let (wedged, held) = wedged_receiver().await;
        let good = receiver(free_addr()).await;
        let cx = BuildContext::for_test("sink", "out");
        let cfg = sink_config(&[wedged, good.addr], "round_robin", "ack_timeout = \"1s\"");
        let mut sink = (SPEC.build)(toml::from_str(&cfg).unwrap(), &cx).unwrap();
        let mut rxs = Vec::new();
        for i in 0..20 {
            let (t, rx) = token();
            sink.write_acked(&batch(i * 10, 10), &mut Some(t)).await.unwrap();
            rxs.push(rx);
        }
        // Every batch is acknowledged, the ones the wedged receiver held
        // through the good one once the timeout failed it over.
        for rx in rxs.drain(..) {
            assert_eq!(wait_delivered(&rx).await, Delivery::Delivered);
        }
        assert!(held.load(std::sync::atomic::Ordering::SeqCst) > 0, "the wedged receiver was given batches");
        sink.close().await.unwrap();
        let (_, metrics) = cx.registry.components().into_iter().find(|(_, m)| m.id == format!("out@{wedged}")).unwrap();
        let got = good.stop().await;
        assert_eq!(seqs(&got), (0..200).collect::<Vec<_>>(), "every event once, through the good receiver");
        assert!(metrics.counter("ack_timeouts").get() >= 1, "ack_timeouts counted");
    }

    #[tokio::test]
    async fn all_receivers_down_blocks_with_an_error_that_keeps_the_batch() {
        let addr = free_addr();
        let mut sink = build_sink(&SPEC, &sink_config(&[addr], "least_loaded", "block_timeout = \"300ms\"")).unwrap();
        // Two batches are taken: one held by the dispatcher, one in its channel.
        let (t1, rx1) = token();
        sink.write_acked(&batch(0, 5), &mut Some(t1)).await.unwrap();
        let (t2, rx2) = token();
        sink.write_acked(&batch(5, 5), &mut Some(t2)).await.unwrap();
        // The third finds no room: an error, the token stays with the caller.
        let (t3, rx3) = token();
        let mut ack = Some(t3);
        let e = sink.write_acked(&batch(10, 5), &mut ack).await.unwrap_err();
        assert!(e.to_string().starts_with("no receiver took the batch within 300ms"), "{e}");
        assert!(ack.is_some());
        assert!(rx1.try_recv().is_err(), "nothing resolved while every receiver is down");
        // The receiver comes up: the held batches are delivered, the retry goes through.
        let r = receiver(addr).await;
        sink.write_acked(&batch(10, 5), &mut ack).await.unwrap();
        for rx in [rx1, rx2, rx3] {
            assert_eq!(wait_delivered(&rx).await, Delivery::Delivered);
        }
        sink.close().await.unwrap();
        assert_eq!(seqs(&r.stop().await), (0..15).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn credit_mode_delivers_everything() {
        let (a, b) = (receiver(free_addr()).await, receiver(free_addr()).await);
        let mut sink = build_sink(&SPEC, &sink_config(&[a.addr, b.addr], "credit", "window = 2")).unwrap();
        let mut rxs = Vec::new();
        for i in 0..40 {
            let (t, rx) = token();
            sink.write_acked(&batch(i * 5, 5), &mut Some(t)).await.unwrap();
            rxs.push(rx);
        }
        for rx in &rxs {
            assert_eq!(wait_delivered(rx).await, Delivery::Delivered);
        }
        sink.close().await.unwrap();
        let mut all = a.stop().await;
        all.extend(b.stop().await);
        assert_eq!(seqs(&all), (0..200).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn large_batches_are_split_and_oversized_events_counted() {
        let r = receiver(free_addr()).await;
        let cx = BuildContext::for_test("sink", "s");
        let body = sink_config(&[r.addr], "round_robin", "max_batch_bytes = \"2KiB\"\ncompression = \"none\"");
        let mut sink = (SPEC.build)(toml::from_str(&body).unwrap(), &cx).unwrap();
        let mut events = batch(0, 100);
        events.push(Event::from_message("x".repeat(4096)));
        let (t, rx) = token();
        sink.write_acked(&events, &mut Some(t)).await.unwrap();
        assert_eq!(wait_delivered(&rx).await, Delivery::Delivered);
        sink.close().await.unwrap();
        assert_eq!(r.stop().await.len(), 100);
        assert_eq!(cx.metrics.counter("oversized_events").get(), 1);
        assert!(cx.metrics.counter("batches").get() >= 2);
    }

    #[test]
    fn config_errors_name_the_key() {
        let e = build_sink(&SPEC, "receivers = []\ntoken = \"0123456789abcdef\"").err().unwrap();
        assert_eq!(e.to_string(), "test.sluice.receivers: at least one receiver is needed");
        let e = build_sink(&SPEC, "receivers = [\"nope\"]\ntoken = \"0123456789abcdef\"").err().unwrap();
        assert!(e.to_string().starts_with("test.sluice.receivers[0]: expected \"host:port\""), "{e}");
        let e = build_sink(&SPEC, "receivers = [\"h:1\"]\nalgorithm = \"fastest\"\ntoken = \"0123456789abcdef\"")
            .err()
            .unwrap();
        assert!(e.to_string().starts_with("test.sluice.algorithm: "), "{e}");
        let e = build_sink(&SPEC, "receivers = [\"h:1\"]").err().unwrap();
        assert_eq!(e.to_string(), "test.sluice.token: set exactly one of `token`, `token_env` and `token_file`");
        let e = build_sink(&SPEC, "receivers = [\"h:1\"]\ntoken = \"0123456789abcdef\"\ncompression = \"gzip\"")
            .err()
            .unwrap();
        assert_eq!(e.to_string(), "test.sluice.compression: expected zstd, lz4 or none, found \"gzip\"");
        let e = build_sink(&SPEC, "receivers = [{ address = \"h:1\", wieght = 2 }]\ntoken = \"0123456789abcdef\"")
            .err()
            .unwrap();
        assert!(e.to_string().starts_with("test.sluice.receivers"), "{e}");
    }
}
