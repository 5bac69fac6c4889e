//! The load generator (`sluice bench gen`): paced or as-fast-as-possible
//! injection over N connections into one of several outputs, with the
//! latency of every event counted from its intended send time.
//!
//! Each connection is an OS thread that owns a [`Pacer`] (its slice of the
//! pinned schedule), a [`Renderer`] and a [`Transport`], and runs
//! [`drive`]: take the next due batch, render it into a reusable buffer,
//! hand it to the transport, record the outcome in the shared [`Recorder`].
//!
//! What "completed" means depends on the output, and is what the
//! generator's own latency measures:
//! - `tcp`, `udp`, `file`: the write returned. A receiver that stops reading
//!   fills the socket buffers, the write blocks, every event due meanwhile is
//!   late — and counted late, from its intended time.
//! - `sluice` (the agent protocol, through the `sluice` sink's own client)
//!   and `http` (`_bulk`, through the `elasticsearch` sink's client): the
//!   receiver acknowledged the batch (in its queue / answered 2xx).
//! - `kafka` (the `kafka` sink: acks=all, idempotent producer): Kafka
//!   acknowledged every record of the batch.
//!
//! The case runner adds receivers ([`crate::collector`]) that count what
//! arrived at the end of a pipeline and measure end-to-end latency from the
//! same intended times.
//!
//! A run ends at quiescence: every sender finished and every batch was
//! acknowledged or failed, or `ack_timeout` passed (the report says how
//! many are unacknowledged). TCP outputs reconnect and re-send the batch
//! whose write failed (at-least-once from the sender's side, as a log
//! shipper would), for at most `retry_for`.

mod transport;

use self::transport::{FileOut, SinkOut, TcpOut, UdpOut};
use std::io::Write as _;
use std::net::{TcpStream, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use sluice_core::component::{BuildContext, Sink};
use sluice_core::{AckToken, Event};

use crate::clock::{Clock, RealClock};
use crate::latency::{Latency, LatencySummary};
use crate::procstat::thread_cpu_ns;
use crate::schedule::{Batch, Pacer, Schedule};
use crate::template::{Renderer, Shape, Template};
use crate::BenchError;

/// Stream framing for TCP outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One event per line.
    Newline,
    /// RFC 6587 octet counting (`LEN SP MSG`), for syslog over TCP.
    OctetCounting,
}

/// The agent-protocol output's settings (`sluice://` targets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SluiceTarget {
    /// Receivers, `host:port`.
    pub receivers: Vec<String>,
    /// The `sluice` sink's balancing algorithm.
    pub algorithm: String,
    /// `zstd`, `lz4` or `none`.
    pub compression: String,
    /// The token (or a `token_file`).
    pub token: Option<String>,
    /// A file holding the token.
    pub token_file: Option<PathBuf>,
    /// Group claimed in `HELLO`.
    pub group: String,
    /// Subgroup claimed in `HELLO`.
    pub subgroup: String,
    /// Unacknowledged batches per receiver.
    pub window: u32,
}

/// Partitions of a topic the `kafka://` output creates because it is missing
/// (as the bench's Kafka peer creates its run topics).
pub const KAFKA_PARTITIONS: u32 = 8;

/// Where the generator sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `tcp://HOST:PORT` (newline) or `tcp+octet://HOST:PORT` (RFC 6587).
    Tcp {
        /// `host:port`.
        addr: String,
        /// Framing.
        framing: Framing,
    },
    /// `udp://HOST:PORT`: one datagram per event.
    Udp {
        /// `host:port`.
        addr: String,
    },
    /// `file://PATH`: appended lines, for an agent to tail. Connection `c`
    /// of several writes `PATH.c`.
    File {
        /// The file.
        path: PathBuf,
    },
    /// `http://HOST:PORT[/prefix][?token=T]`: Elasticsearch `_bulk`
    /// requests, with `Authorization: ApiKey T` (an `http` source's ingest token).
    Http {
        /// The endpoint (requests go to `{endpoint}/_bulk`).
        endpoint: String,
        /// The ingest token.
        token: Option<String>,
    },
    /// `sluice://HOST:PORT[,HOST:PORT…][?algorithm=…&compression=…&token=…&token_file=…&group=…&subgroup=…&window=…]`:
    /// the agent protocol.
    Sluice(SluiceTarget),
    /// `kafka://BROKERS/TOPIC`: records produced by the `kafka` sink
    /// (acks=all); a batch completes when Kafka acknowledged all of it. The
    /// topic is created ([`KAFKA_PARTITIONS`] partitions) when missing. Needs
    /// a build with the Kafka connectors (the `sluice` binary's default).
    Kafka {
        /// Bootstrap servers.
        brokers: String,
        /// Topic.
        topic: String,
    },
}

impl Target {
    /// Parses a target URL (see the variants).
    pub fn parse(s: &str) -> Result<Self, BenchError> {
        let bad = |m: &str| BenchError::Invalid(format!("target {s:?}: {m}"));
        let (scheme, rest) = s
            .split_once("://")
            .ok_or_else(|| bad("expected tcp://, tcp+octet://, udp://, file://, http://, sluice:// or kafka://"))?;
        let addr = |r: &str| -> Result<String, BenchError> {
            if r.rsplit_once(':').is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok()) {
                Ok(r.to_string())
            } else {
                Err(bad("expected HOST:PORT"))
            }
        };
        Ok(match scheme {
            "tcp" => Self::Tcp { addr: addr(rest)?, framing: Framing::Newline },
            "tcp+octet" => Self::Tcp { addr: addr(rest)?, framing: Framing::OctetCounting },
            "udp" => Self::Udp { addr: addr(rest)? },
            "file" if !rest.is_empty() => Self::File { path: PathBuf::from(rest) },
            "http" => {
                let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
                let host = path.split('/').next().unwrap_or("");
                addr(host)?;
                let token = match query.split_once('=') {
                    None if query.is_empty() => None,
                    Some(("token", t)) if !t.is_empty() => Some(t.to_string()),
                    _ => return Err(bad(&format!("{query:?}: the only parameter is token=…"))),
                };
                Self::Http { endpoint: format!("http://{}", path.trim_end_matches('/')), token }
            }
            "sluice" => {
                let (hosts, query) = rest.split_once('?').unwrap_or((rest, ""));
                let receivers = hosts.split(',').map(addr).collect::<Result<Vec<_>, _>>()?;
                let mut t = SluiceTarget {
                    receivers,
                    algorithm: "round_robin".into(),
                    compression: "zstd".into(),
                    token: None,
                    token_file: None,
                    group: "bench".into(),
                    subgroup: String::new(),
                    window: 4,
                };
                for kv in query.split('&').filter(|kv| !kv.is_empty()) {
                    let (k, v) = kv.split_once('=').ok_or_else(|| bad(&format!("{kv:?}: expected key=value")))?;
                    match k {
                        "algorithm" => t.algorithm = v.into(),
                        "compression" => t.compression = v.into(),
                        "token" => t.token = Some(v.into()),
                        "token_file" => t.token_file = Some(v.into()),
                        "group" => t.group = v.into(),
                        "subgroup" => t.subgroup = v.into(),
                        "window" => t.window = v.parse().map_err(|_| bad("window: expected a number"))?,
                        _ => return Err(bad(&format!("unknown option {k:?}"))),
                    }
                }
                if t.token.is_none() && t.token_file.is_none() {
                    return Err(bad("the agent protocol needs token=… or token_file=…"));
                }
                Self::Sluice(t)
            }
            "kafka" => {
                let (brokers, topic) = rest.split_once('/').ok_or_else(|| bad("expected kafka://BROKERS/TOPIC"))?;
                Self::Kafka { brokers: brokers.into(), topic: topic.into() }
            }
            _ => return Err(bad(&format!("unknown scheme {scheme:?}"))),
        })
    }

    /// A short description for reports.
    pub fn describe(&self) -> String {
        match self {
            Self::Tcp { addr, framing: Framing::Newline } => format!("tcp://{addr}"),
            Self::Tcp { addr, framing: Framing::OctetCounting } => format!("tcp+octet://{addr}"),
            Self::Udp { addr } => format!("udp://{addr}"),
            Self::File { path } => format!("file://{}", path.display()),
            Self::Http { endpoint, .. } => endpoint.clone(),
            Self::Sluice(t) => format!("sluice://{} ({})", t.receivers.join(","), t.algorithm),
            Self::Kafka { brokers, topic } => format!("kafka://{brokers}/{topic}"),
        }
    }
}

/// A generator run.
#[derive(Debug, Clone)]
pub struct GenConfig {
    /// Where.
    pub target: Target,
    /// What.
    pub template: Template,
    /// Events in total.
    pub count: u64,
    /// Events per second in total; 0 = as fast as possible.
    pub rate: f64,
    /// Parallel connections (threads).
    pub connections: usize,
    /// Run id written into every event.
    pub run_id: String,
    /// Events intended before this are left out of latency figures.
    pub warmup: Duration,
    /// Most events per write / request / protocol batch.
    pub max_batch: u64,
    /// How long to wait for outstanding acknowledgements at the end.
    pub ack_timeout: Duration,
    /// How long a failing output is retried before the run fails.
    pub retry_for: Duration,
    /// Live progress on stderr (only drawn when stderr is a terminal).
    pub progress: bool,
}

impl GenConfig {
    /// A config with defaults for everything but target, template, count and rate.
    pub fn new(target: Target, template: Template, count: u64, rate: f64) -> Self {
        Self {
            target,
            template,
            count,
            rate,
            connections: 1,
            run_id: new_run_id(),
            warmup: Duration::ZERO,
            max_batch: 512,
            ack_timeout: Duration::from_secs(60),
            retry_for: Duration::from_secs(30),
            progress: false,
        }
    }
}

/// A run id from the clock: `r` and 12 hex digits.
pub fn new_run_id() -> String {
    let ns = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("r{:012x}", (ns as u64) & 0xffff_ffff_ffff)
}

/// What a run did (also the JSON `bench gen` prints).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct GenReport {
    /// The run id in every event.
    pub run: String,
    /// Target description.
    pub target: String,
    /// Template name.
    pub template: String,
    /// Offered rate (events/s; 0 = as fast as possible).
    pub target_rate: f64,
    /// Connections.
    pub connections: usize,
    /// Events handed to the output.
    pub sent: u64,
    /// Bytes written (rendered events, framing included; before compression).
    pub bytes: u64,
    /// Events whose write returned or whose batch was acknowledged.
    pub completed: u64,
    /// Events whose batch failed for good.
    pub failed: u64,
    /// Events neither completed nor failed when the run ended.
    pub unacknowledged: u64,
    /// Seconds from the start epoch to the last send.
    pub seconds: f64,
    /// `sent / seconds`.
    pub achieved_rate: f64,
    /// Worst lag of a batch behind its intended time, in ms.
    pub max_lag_ms: f64,
    /// Latency from intended send time to completion (after warm-up).
    pub latency: LatencySummary,
    /// Warm-up left out of `latency`, in seconds.
    pub warmup_s: f64,
    /// Reconnections and re-sent batches.
    pub retries: u64,
    /// CPU seconds of the sender threads.
    pub cpu_s: f64,
    /// Sender CPU per event, in nanoseconds.
    pub cpu_ns_per_event: f64,
}

/// Per-event send times (µs after the epoch, +1 so that 0 means unknown)
/// for runs without a schedule, so receivers can measure latency.
#[derive(Debug)]
pub struct SendTimes(Vec<AtomicU32>);

impl SendTimes {
    fn new(count: u64) -> Self {
        let mut v = Vec::with_capacity(count as usize);
        v.resize_with(count as usize, || AtomicU32::new(0));
        Self(v)
    }
}

/// Counters and latencies every connection of a run shares.
#[derive(Debug)]
pub struct Recorder {
    schedule: Schedule,
    warmup: Duration,
    clock: Arc<dyn Clock>,
    latency: Mutex<Latency>,
    send_times: Option<SendTimes>,
    sent: AtomicU64,
    bytes: AtomicU64,
    completed: AtomicU64,
    failed: AtomicU64,
    retries: AtomicU64,
    max_lag_ns: AtomicU64,
    last_send_ns: AtomicU64,
    cpu_ns: AtomicU64,
}

impl std::fmt::Debug for dyn Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Clock({:?})", self.now())
    }
}

impl Recorder {
    /// A recorder for `count` events on `schedule`; `send_times` keeps
    /// per-event send times when not paced (for receivers' latency).
    pub fn new(schedule: Schedule, warmup: Duration, clock: Arc<dyn Clock>, count: u64, send_times: bool) -> Self {
        Self {
            schedule,
            warmup,
            clock,
            latency: Mutex::new(Latency::new()),
            send_times: (send_times && !schedule.paced()).then(|| SendTimes::new(count)),
            sent: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            max_lag_ns: AtomicU64::new(0),
            last_send_ns: AtomicU64::new(0),
            cpu_ns: AtomicU64::new(0),
        }
    }

    /// The schedule.
    pub fn schedule(&self) -> Schedule {
        self.schedule
    }

    /// The warm-up.
    pub fn warmup(&self) -> Duration {
        self.warmup
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// When event `seq` was intended (paced) or sent (not paced; `None`
    /// when not recorded or not sent yet).
    pub fn intended(&self, seq: u64) -> Option<Duration> {
        if let Some(t) = self.schedule.intended(seq) {
            return Some(t);
        }
        let v = self.send_times.as_ref()?.0.get(seq as usize)?.load(Ordering::Relaxed);
        (v > 0).then(|| Duration::from_micros(u64::from(v - 1)))
    }

    /// Events handed to outputs so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Events completed so far.
    pub fn completed(&self) -> u64 {
        self.completed.load(Ordering::Relaxed)
    }

    /// Events failed so far.
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }

    /// Counts bytes written.
    pub fn add_bytes(&self, n: usize) {
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Counts a reconnection or a re-sent batch.
    pub fn retry(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    /// A batch is handed to the output at `now`.
    fn offer(&self, b: &Batch, now: Duration) {
        if let Some(due) = self.schedule.intended(b.first) {
            let lag = now.saturating_sub(due).as_nanos() as u64;
            self.max_lag_ns.fetch_max(lag, Ordering::Relaxed);
        }
        if let Some(st) = &self.send_times {
            let us = u32::try_from(b.offered.as_micros() + 1).unwrap_or(u32::MAX);
            for seq in b.seqs() {
                if let Some(slot) = st.0.get(seq as usize) {
                    slot.store(us, Ordering::Relaxed);
                }
            }
        }
        self.sent.fetch_add(b.n, Ordering::Relaxed);
    }

    /// Batch `b` completed now (written or acknowledged).
    pub fn complete(&self, b: &Batch) {
        let now = self.clock.now();
        {
            let mut h = self.latency.lock();
            for seq in b.seqs() {
                let intended = self.schedule.intended(seq).unwrap_or(b.offered);
                if intended >= self.warmup {
                    h.record(now.saturating_sub(intended));
                }
            }
        }
        self.completed.fetch_add(b.n, Ordering::Relaxed);
        self.last_send_ns.fetch_max(now.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Batch `b` failed for good.
    pub fn fail(&self, b: &Batch) {
        self.failed.fetch_add(b.n, Ordering::Relaxed);
    }

    /// The latency histogram so far.
    pub fn latency(&self) -> Latency {
        self.latency.lock().clone()
    }
}

/// What a transport did with a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Written (or acknowledged) when `send` returned.
    Done,
    /// The transport calls [`Recorder::complete`] or [`Recorder::fail`] later.
    Pending,
}

/// An output of the generator.
pub trait Transport: Send {
    /// Renders batch `b` with `r` and sends it.
    fn send(&mut self, r: &mut Renderer, b: &Batch, rec: &Arc<Recorder>) -> Result<Completion, BenchError>;
    /// Flushes and closes (waits for acknowledgements where there are any).
    fn finish(&mut self, rec: &Arc<Recorder>) -> Result<(), BenchError>;
}

/// Runs one connection: batches from `pacer` through `t` until done.
pub fn drive(
    clock: &dyn Clock,
    pacer: &mut Pacer,
    r: &mut Renderer,
    t: &mut dyn Transport,
    rec: &Arc<Recorder>,
) -> Result<(), BenchError> {
    while let Some(b) = pacer.next(clock) {
        rec.offer(&b, clock.now());
        match t.send(r, &b, rec) {
            Ok(Completion::Done) => rec.complete(&b),
            Ok(Completion::Pending) => {}
            Err(e) => {
                rec.fail(&b);
                return Err(e);
            }
        }
    }
    t.finish(rec)
}

/// The generator of one run.
pub struct Generator {
    cfg: GenConfig,
    clock: RealClock,
    rec: Arc<Recorder>,
}

impl Generator {
    /// A generator whose epoch is `clock`'s; `send_times` keeps per-event
    /// send times for receivers when the run is not paced.
    pub fn new(cfg: GenConfig, clock: RealClock, send_times: bool) -> Self {
        let rec = Arc::new(Recorder::new(Schedule::new(cfg.rate), cfg.warmup, Arc::new(clock), cfg.count, send_times));
        Self { cfg, clock, rec }
    }

    /// The shared recorder (for receivers and progress).
    pub fn recorder(&self) -> Arc<Recorder> {
        Arc::clone(&self.rec)
    }

    /// The config.
    pub fn config(&self) -> &GenConfig {
        &self.cfg
    }

    /// Runs to quiescence (see the module docs).
    pub fn run(&self) -> Result<GenReport, BenchError> {
        let cfg = &self.cfg;
        if cfg.connections == 0 {
            return Err(BenchError::Invalid("connections must be at least 1".into()));
        }
        if let Target::Kafka { brokers, topic } = &cfg.target {
            crate::kafka::ensure_topic(brokers, topic, KAFKA_PARTITIONS)?;
        }
        let runtime = match cfg.target {
            Target::Sluice(_) | Target::Http { .. } | Target::Kafka { .. } => Some(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .thread_name("bench-io")
                    .build()?,
            ),
            _ => None,
        };
        let conns = cfg.connections as u64;
        let done = Arc::new(AtomicBool::new(false));
        let progress = (cfg.progress && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(|| {
            let (rec, done, count, rate) = (Arc::clone(&self.rec), Arc::clone(&done), cfg.count, cfg.rate);
            std::thread::spawn(move || draw_progress(&rec, &done, count, rate))
        });
        let mut results = Vec::new();
        std::thread::scope(|scope| {
            let mut handles = Vec::new();
            for c in 0..conns {
                let rec = Arc::clone(&self.rec);
                let clock = self.clock;
                let handle = runtime.as_ref().map(|r| r.handle().clone());
                handles.push(scope.spawn(move || -> Result<(), BenchError> {
                    let cpu0 = thread_cpu_ns();
                    let shape = match cfg.target {
                        Target::Sluice(_) | Target::Http { .. } | Target::Kafka { .. } => Shape::Json,
                        _ => Shape::Native,
                    };
                    let mut r = Renderer::new(&cfg.template, &cfg.run_id, shape);
                    let mut pacer = Pacer::new(rec.schedule(), c, conns, cfg.count, cfg.max_batch);
                    let res =
                        open(cfg, c, handle).and_then(|mut t| drive(&clock, &mut pacer, &mut r, t.as_mut(), &rec));
                    rec.cpu_ns.fetch_add(thread_cpu_ns().saturating_sub(cpu0), Ordering::Relaxed);
                    res
                }));
            }
            for h in handles {
                results.push(h.join().unwrap_or_else(|_| Err(BenchError::Invalid("a sender thread panicked".into()))));
            }
        });
        // Quiescence: wait for the outstanding acknowledgements.
        let deadline = self.clock.now() + cfg.ack_timeout;
        while self.rec.completed() + self.rec.failed() < self.rec.sent() && self.clock.now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        done.store(true, Ordering::Relaxed);
        if let Some(p) = progress {
            let _ = p.join();
        }
        drop(runtime);
        for r in results {
            r?;
        }
        Ok(self.report())
    }

    /// The report of the run so far.
    pub fn report(&self) -> GenReport {
        let rec = &self.rec;
        let sent = rec.sent();
        let seconds = Duration::from_nanos(rec.last_send_ns.load(Ordering::Relaxed)).as_secs_f64();
        let cpu_s = rec.cpu_ns.load(Ordering::Relaxed) as f64 / 1e9;
        GenReport {
            run: self.cfg.run_id.clone(),
            target: self.cfg.target.describe(),
            template: self.cfg.template.name(),
            target_rate: self.cfg.rate,
            connections: self.cfg.connections,
            sent,
            bytes: rec.bytes.load(Ordering::Relaxed),
            completed: rec.completed(),
            failed: rec.failed(),
            unacknowledged: sent.saturating_sub(rec.completed() + rec.failed()),
            seconds,
            achieved_rate: if seconds > 0.0 { sent as f64 / seconds } else { 0.0 },
            max_lag_ms: rec.max_lag_ns.load(Ordering::Relaxed) as f64 / 1e6,
            latency: rec.latency().summary(),
            warmup_s: self.cfg.warmup.as_secs_f64(),
            retries: rec.retries.load(Ordering::Relaxed),
            cpu_s,
            cpu_ns_per_event: if sent > 0 { cpu_s * 1e9 / sent as f64 } else { 0.0 },
        }
    }
}

/// Draws a one-line progress bar with the live rate until `done`.
fn draw_progress(rec: &Recorder, done: &AtomicBool, count: u64, rate: f64) {
    let mut last = (rec.clock.now(), rec.sent());
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(500));
        let (now, sent) = (rec.clock.now(), rec.sent());
        let live = (sent - last.1) as f64 / (now - last.0).as_secs_f64().max(1e-3);
        last = (now, sent);
        let width = 30usize;
        let filled = (sent as f64 / count.max(1) as f64 * width as f64) as usize;
        let target = if rate > 0.0 { format!(" (target {rate:.0}/s)") } else { String::new() };
        eprint!(
            "\r[{}{}] {sent}/{count} sent, {} done, {live:.0}/s{target}   ",
            "#".repeat(filled.min(width)),
            " ".repeat(width - filled.min(width)),
            rec.completed()
        );
    }
    eprintln!();
}

/// Opens connection `c`'s transport.
fn open(cfg: &GenConfig, c: u64, rt: Option<tokio::runtime::Handle>) -> Result<Box<dyn Transport>, BenchError> {
    Ok(match &cfg.target {
        Target::Tcp { addr, framing } => Box::new(TcpOut {
            addr: addr.clone(),
            framing: *framing,
            stream: None,
            buf: Vec::with_capacity(1 << 20),
            retry_for: cfg.retry_for,
        }),
        Target::Udp { addr } => {
            let s = UdpSocket::bind(if addr.starts_with('[') { "[::]:0" } else { "0.0.0.0:0" })?;
            s.connect(addr.as_str())?;
            Box::new(UdpOut { socket: s, buf: Vec::with_capacity(65536) })
        }
        Target::File { path } => {
            let path =
                if cfg.connections > 1 { PathBuf::from(format!("{}.{c}", path.display())) } else { path.clone() };
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| BenchError::Invalid(format!("open {}: {e}", path.display())))?;
            Box::new(FileOut { file, buf: Vec::with_capacity(1 << 20) })
        }
        Target::Http { endpoint, token } => {
            // sluice's `_bulk` has no index templates; plain bodies keep the
            // generator's CPU what it was before the sink gzipped by default.
            let mut table = format!(
                "endpoint = {endpoint:?}\nindex = \"bench\"\nmax_item_retries = 0\ninstall_template = false\ncompression = \"none\"\n"
            );
            if let Some(t) = token {
                table.push_str(&format!("api_key = {t:?}\n"));
            }
            let rt = rt.ok_or_else(|| BenchError::Invalid("no runtime for http".into()))?;
            Box::new(SinkOut::new(rt, "elasticsearch", &table, false, cfg.retry_for)?)
        }
        Target::Sluice(t) => {
            let mut table = toml::map::Map::new();
            table.insert(
                "receivers".into(),
                toml::Value::Array(t.receivers.iter().map(|r| toml::Value::String(r.clone())).collect()),
            );
            table.insert("algorithm".into(), t.algorithm.clone().into());
            table.insert("compression".into(), t.compression.clone().into());
            if let Some(tok) = &t.token {
                table.insert("token".into(), tok.clone().into());
            }
            if let Some(f) = &t.token_file {
                table.insert("token_file".into(), f.display().to_string().into());
            }
            table.insert("group".into(), t.group.clone().into());
            table.insert("subgroup".into(), t.subgroup.clone().into());
            table.insert("host".into(), format!("bench-{c}").into());
            table.insert("window".into(), i64::from(t.window).into());
            table.insert("backoff_max".into(), "1s".into());
            table.insert("block_timeout".into(), "1s".into());
            table.insert("close_timeout".into(), format!("{}s", cfg.ack_timeout.as_secs().max(1)).into());
            let table = toml::to_string(&toml::Value::Table(table)).map_err(|e| BenchError::Invalid(e.to_string()))?;
            let rt = rt.ok_or_else(|| BenchError::Invalid("no runtime for sluice".into()))?;
            Box::new(SinkOut::new(rt, "sluice", &table, true, cfg.retry_for)?)
        }
        Target::Kafka { brokers, topic } => {
            // The `kafka` sink (acks=all, idempotent): a batch completes when
            // Kafka acknowledged every record of it.
            let mut table = toml::map::Map::new();
            table.insert("brokers".into(), brokers.clone().into());
            table.insert("topic".into(), topic.clone().into());
            table.insert("flush_timeout".into(), format!("{}s", cfg.ack_timeout.as_secs().max(1)).into());
            let table = toml::to_string(&toml::Value::Table(table)).map_err(|e| BenchError::Invalid(e.to_string()))?;
            let rt = rt.ok_or_else(|| BenchError::Invalid("no runtime for kafka".into()))?;
            Box::new(SinkOut::new(rt, "kafka", &table, true, cfg.retry_for)?)
        }
    })
}

#[cfg(test)]
mod tests;
