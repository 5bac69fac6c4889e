//! `sluice`: the sending side of the agent protocol
//! (`docs/specs/agent-protocol.md`): ships batches to N receivers (`sluice`
//! sources of processors or dispatchers), balancing **per batch** with one
//! of the algorithms of [`balancer`].
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

pub mod balancer;
mod config;
mod conn;
mod dispatch;
pub mod health;
pub mod members;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::component::LiveConfig;
use sluice_core::component::{BoxError, BuildContext, Sink, SinkSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration, Positive};
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

use self::balancer::{Algorithm, Balancer, Candidate};
use self::config::Config;
pub(crate) use self::config::{default_weight, parse_receivers, ReceiverConfig};
use self::conn::connection_task;
use self::dispatch::{ConnEvent, Dispatcher, Jitter, Outgoing};
use self::health::{Health, OutlierConfig};
use self::members::{Member, MemberStatus, Pool};
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
    if c.backoff_max.0 < c.backoff_min.0 {
        return Err(cx.error("backoff_max", "must not be less than backoff_min"));
    }
    if let Some(o) = &c.outlier_detection {
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
    let host = c.host.clone().unwrap_or_else(|| sluice_core::secret::hostname().unwrap_or_default());
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

#[cfg(test)]
mod tests;
