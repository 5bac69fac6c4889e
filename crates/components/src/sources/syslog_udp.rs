//! `syslog_udp`: syslog messages (RFC 5424 or RFC 3164, detected per
//! message), one per datagram, mapped to events as described in
//! [`crate::syslog_event`]. Trailing NUL bytes are removed first (Python's
//! `logging.handlers.SysLogHandler` ends every datagram with one).
//!
//! Why this shape: UDP has no back-pressure, so the only defences against
//! loss are to receive fast and to know when the kernel dropped. Receiving runs
//! on `workers` plain OS threads doing blocking `recv_from` (no async wake-up
//! per datagram), each parsing and batching (`batch_size` datagrams or
//! `batch_delay`, whichever first) into a bounded channel of `queue_size`
//! events towards the pipeline. When the pipeline is slower, the channel
//! fills, receiving blocks and the socket buffer (`receive_buffer_bytes`,
//! `SO_RCVBUF`) absorbs the burst — beyond that the kernel drops, which is
//! counted, never hidden: the socket's `drops` column of `/proc/net/udp{,6}`
//! (found by the socket's inode) is polled every second into `kernel_drops`.
//! Nothing is buffered without bound.
//!
//! `workers` defaults to the number of cores (at most 8). Workers share one
//! socket by default (several threads in `recv_from` on the
//! same fd — the kernel hands each datagram to one of them). With
//! `reuse_port = true` each worker binds its own `SO_REUSEPORT` socket; the
//! kernel then spreads senders by address hash, which helps many senders but
//! not one (a single sender always lands on the same socket).
//!
//! Measured (`scripts/udp-bench.sh`: release build, blackhole pipeline, one
//! `udp_blast` sender of ~130-byte RFC 5424 datagrams with SD on the same
//! 2-core box, docs/benchmarks/journal.md "2026-11-23 night: syslog over UDP"): with one
//! worker, every datagram arrives with 0 kernel drops up to the most the
//! sender can produce there (≈ 280k/s). rsyslog's imudp on the same box
//! dropped 1,010 of 2 M at ≈ 186k/s in one of three runs. With the defaults
//! (2 workers here, an 8 MiB receive buffer) and another process keeping one
//! core busy, 200,000 datagrams/s arrived with 0 kernel drops in 10 of 10
//! runs of 2 M; with the kernel's 208 KiB default buffer, 2 of 2 runs dropped
//! 9,838 and 14,492 (journal "2026-11-27: syslog over UDP with the
//! defaults"). Batching receives with `recvmmsg` is the next step if more is
//! ever needed.
//!
//! A datagram longer than `max_message_bytes` is cut there, tagged
//! `_oversized` and counted (`oversized`); an empty one is ignored.
//!
//! Counters: `events_in`, `events_out`, `events_failed` (parse failures),
//! `bytes_in`, `errors` (receive errors), `kernel_drops`, `oversized`.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration, Positive};
use sluice_core::metrics::{ComponentMetrics, Counter};
use sluice_core::value::Value;
use sluice_core::Event;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::sync::mpsc;

use crate::syslog_event::{peer_value, DateKeys, Mapper, OVERSIZED};

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "syslog_udp",
    summary: "syslog (RFC 5424 / RFC 3164) over UDP, with kernel drop counting",
    example: "address = \"127.0.0.1:0\"\nworkers = 2\nreceive_buffer_bytes = \"4MiB\"\n",
    build,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Listen address, e.g. `0.0.0.0:514`.
    address: String,
    /// Receive threads.
    #[serde(default = "default_workers")]
    workers: usize,
    /// One `SO_REUSEPORT` socket per worker instead of one shared socket.
    #[serde(default)]
    reuse_port: bool,
    /// `SO_RCVBUF` to ask for (the kernel doubles it and caps it at
    /// `net.core.rmem_max`); the effective value is logged at start, with
    /// a warning when the kernel capped it. `0`: the kernel's default
    /// (`net.core.rmem_default`, 208 KiB on Debian).
    #[serde(default = "default_receive_buffer")]
    receive_buffer_bytes: ByteSize,
    /// Longest datagram kept whole; longer ones are cut and tagged `_oversized`.
    #[serde(default = "default_max_message")]
    max_message_bytes: ByteSize,
    /// Events buffered between the receive threads and the pipeline queue.
    #[serde(default = "default_queue_size")]
    queue_size: usize,
    /// Datagrams per batch handed to the pipeline.
    #[serde(default = "crate::defaults::count::<512>")]
    batch_size: Positive<usize>,
    /// Longest a received datagram waits for its batch to fill.
    #[serde(default = "default_batch_delay")]
    batch_delay: HumanDuration,
    /// Year for RFC 3164 timestamps (default: current, with rollover).
    year: Option<i32>,
    /// Zone for RFC 3164 timestamps (`UTC`, `+02:00`); default UTC.
    timezone: Option<String>,
}

/// One receive thread per core (at most 8): with one, a busy machine
/// dropped datagrams at 100k/s in 1 of 7 runs where two held in 10 of 10
/// (BENCHMARKS.md, issue #23).
fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}
/// 8 MiB: at 200,000 datagrams/s the kernel's 208 KiB default holds about
/// 1 ms of traffic (each small datagram costs ~700 bytes of buffer), so a
/// receive thread preempted by other work on the machine lost datagrams
/// (BENCHMARKS.md, issue #23); 8 MiB holds tens of milliseconds.
fn default_receive_buffer() -> ByteSize {
    ByteSize(8 << 20)
}
fn default_max_message() -> ByteSize {
    ByteSize(64 << 10)
}
fn default_queue_size() -> usize {
    8192
}
fn default_batch_delay() -> HumanDuration {
    HumanDuration(Duration::from_millis(10))
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let address: SocketAddr =
        c.address.parse().map_err(|e| cx.error("address", format!("invalid socket address {:?}: {e}", c.address)))?;
    if c.workers == 0 || c.workers > 64 {
        return Err(cx.error("workers", "must be between 1 and 64"));
    }
    if c.max_message_bytes.0 == 0 || c.max_message_bytes.0 > 65_536 {
        return Err(cx.error("max_message_bytes", "must be between 1 and 65536 (64KiB, above the largest UDP payload)"));
    }
    if c.queue_size < c.batch_size.get() {
        return Err(cx.error("queue_size", format!("must be at least batch_size ({})", c.batch_size)));
    }
    let rcvbuf = match c.receive_buffer_bytes.0 {
        0 => None,
        b => Some(usize::try_from(b).map_err(|_| cx.error("receive_buffer_bytes", "too large"))?),
    };
    let opts = DateKeys { year: c.year, timezone: c.timezone }.options(cx)?;
    Ok(Box::new(SyslogUdp {
        address,
        workers: c.workers,
        reuse_port: c.reuse_port,
        rcvbuf,
        max_message: c.max_message_bytes.0 as usize,
        queue_batches: c.queue_size.div_ceil(c.batch_size.get()),
        batch_size: c.batch_size.get(),
        batch_delay: c.batch_delay.0,
        opts,
    }))
}

struct SyslogUdp {
    address: SocketAddr,
    workers: usize,
    reuse_port: bool,
    rcvbuf: Option<usize>,
    max_message: usize,
    queue_batches: usize,
    batch_size: usize,
    batch_delay: Duration,
    opts: sluice_parsers::syslog::Options,
}

/// Idle read timeout: how quickly a receive thread notices shutdown.
const IDLE_TIMEOUT: Duration = Duration::from_millis(100);

impl SyslogUdp {
    fn bind_one(&self, addr: SocketAddr) -> std::io::Result<Socket> {
        let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        if self.reuse_port {
            s.set_reuse_port(true)?;
        }
        if let Some(n) = self.rcvbuf {
            s.set_recv_buffer_size(n)?;
        }
        s.bind(&addr.into())?;
        Ok(s)
    }

    /// The sockets the workers read: one shared, or one per worker.
    fn bind(&self) -> std::io::Result<(Vec<UdpSocket>, SocketAddr, usize)> {
        let first = self.bind_one(self.address)?;
        let effective = first.recv_buffer_size()?;
        let first: UdpSocket = first.into();
        let local = first.local_addr()?;
        let mut socks = vec![first];
        for _ in 1..self.workers {
            let s = if self.reuse_port { self.bind_one(local)?.into() } else { socks[0].try_clone()? };
            socks.push(s);
        }
        Ok((socks, local, effective))
    }
}

#[async_trait]
impl Source for SyslogUdp {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let (socks, local, effective) = self.bind().map_err(|e| format!("bind {}: {e}", self.address))?;
        tracing::info!(
            source = %cx.id,
            address = %local,
            workers = self.workers,
            reuse_port = self.reuse_port,
            receive_buffer_requested = ?self.rcvbuf,
            receive_buffer_effective = effective,
            "syslog_udp source listening"
        );
        if let Some(req) = self.rcvbuf {
            // Linux doubles the request (bookkeeping overhead) and reports the
            // doubled value; less than twice the request means rmem_max capped it.
            if effective < req.saturating_mul(2) {
                tracing::warn!(
                    source = %cx.id, requested = req, granted = effective / 2,
                    "receive buffer capped by the kernel's net.core.rmem_max: bursts may be dropped \
                     (counted in kernel_drops); raise it with `sysctl -w net.core.rmem_max={req}`"
                );
            }
        }
        let mut inodes: Vec<u64> = Vec::new();
        for s in &socks {
            if let Some(i) = socket_inode(s) {
                if !inodes.contains(&i) {
                    inodes.push(i);
                }
            }
        }
        let drops = DropPoller::new(inodes, cx.metrics.counter("kernel_drops"));

        let (tx, mut rx) = mpsc::channel::<Vec<Event>>(self.queue_batches);
        let stop = Arc::new(AtomicBool::new(false));
        let source: Arc<str> = Arc::from(format!("syslog_udp:{local}"));
        let mut threads = Vec::new();
        for (i, sock) in socks.into_iter().enumerate() {
            let w = Worker {
                sock,
                tx: tx.clone(),
                stop: Arc::clone(&stop),
                mapper: Mapper { opts: self.opts, source: Arc::clone(&source), metrics: Arc::clone(&cx.metrics) },
                max_message: self.max_message,
                batch_size: self.batch_size,
                batch_delay: self.batch_delay,
                metrics: Arc::clone(&cx.metrics),
                oversized: cx.metrics.counter("oversized"),
            };
            let t = std::thread::Builder::new().name(format!("{}-udp{i}", cx.id)).spawn(move || w.run())?;
            threads.push(t);
        }
        drop(tx);

        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let mut closed = false;
        loop {
            tokio::select! {
                _ = cx.shutdown.cancelled(), if !stop.load(Ordering::Relaxed) => {
                    // Workers flush and exit; the loop goes on draining until they are gone.
                    stop.store(true, Ordering::Relaxed);
                }
                _ = tick.tick() => drops.poll(),
                batch = rx.recv() => match batch {
                    Some(batch) => {
                        let n = batch.len() as u64;
                        if cx.out.send(batch).await.is_err() {
                            closed = true;
                            break;
                        }
                        cx.metrics.events_out.add(n);
                    }
                    None => break,
                },
            }
        }
        stop.store(true, Ordering::Relaxed);
        rx.close();
        drop(rx);
        let _ = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        })
        .await;
        drops.poll();
        if closed && !cx.shutdown.is_cancelled() {
            return Err("pipeline queue closed".into());
        }
        Ok(())
    }
}

/// One receive thread.
struct Worker {
    sock: UdpSocket,
    tx: mpsc::Sender<Vec<Event>>,
    stop: Arc<AtomicBool>,
    mapper: Mapper,
    max_message: usize,
    batch_size: usize,
    batch_delay: Duration,
    metrics: Arc<ComponentMetrics>,
    oversized: Arc<Counter>,
}

impl Worker {
    fn run(self) {
        // One byte more than the limit: a datagram that fills it was truncated.
        let mut buf = vec![0u8; self.max_message + 1];
        let mut batch: Vec<Event> = Vec::with_capacity(self.batch_size);
        let mut first_at = Instant::now();
        let mut last_ip: Option<IpAddr> = None;
        let mut last_peer = Value::Null;
        let mut timeout = IDLE_TIMEOUT;
        if self.sock.set_read_timeout(Some(timeout)).is_err() {
            self.metrics.errors.inc();
        }
        let mut last_error_log: Option<Instant> = None;
        while !self.stop.load(Ordering::Relaxed) {
            match self.sock.recv_from(&mut buf) {
                Ok((n, peer)) => {
                    self.metrics.bytes_in.add(n as u64);
                    let over = n > self.max_message;
                    let data = &buf[..n.min(self.max_message)];
                    // Python's SysLogHandler ends each datagram with a NUL.
                    let end = data.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
                    let data = &data[..end];
                    if !data.iter().all(u8::is_ascii_whitespace) {
                        let ip = peer.ip();
                        if last_ip != Some(ip) {
                            last_ip = Some(ip);
                            last_peer = peer_value(ip);
                        }
                        let mut e = self.mapper.event(data, &last_peer);
                        if over {
                            self.oversized.inc();
                            e.add_tag(OVERSIZED);
                        }
                        self.metrics.events_in.inc();
                        if batch.is_empty() {
                            first_at = Instant::now();
                        }
                        batch.push(e);
                    }
                }
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // E.g. ICMP errors surfacing on the socket: count, log at most once a minute.
                    self.metrics.errors.inc();
                    if last_error_log.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
                        last_error_log = Some(Instant::now());
                        tracing::warn!(source = %self.mapper.source, error = %e, "udp receive error");
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            let due = !batch.is_empty() && (batch.len() >= self.batch_size || first_at.elapsed() >= self.batch_delay);
            if due {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(self.batch_size));
                // Blocks while the channel is full: the socket buffer takes the burst.
                if self.tx.blocking_send(full).is_err() {
                    return;
                }
            }
            let want = if batch.is_empty() { IDLE_TIMEOUT } else { self.batch_delay.max(Duration::from_millis(1)) };
            if want != timeout {
                timeout = want;
                if self.sock.set_read_timeout(Some(timeout)).is_err() {
                    self.metrics.errors.inc();
                }
            }
        }
        if !batch.is_empty() {
            let _ = self.tx.blocking_send(batch);
        }
    }
}

/// The inode of a socket, from `/proc/self/fd/N` → `socket:[INODE]`.
fn socket_inode(s: &UdpSocket) -> Option<u64> {
    let link = std::fs::read_link(format!("/proc/self/fd/{}", s.as_raw_fd())).ok()?;
    let link = link.to_str()?;
    link.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
}

/// The `drops` column of the `/proc/net/udp` (or `udp6`) line for `inode`.
///
/// Line format (kernel `udp4_format_sock`): `sl local rem st tx:rx tr:when
/// retrnsmt uid timeout inode ref pointer drops`.
fn drops_for_inode(table: &str, inode: u64) -> Option<u64> {
    for line in table.lines().skip(1) {
        let cols: Vec<&str> = line.split_ascii_whitespace().collect();
        if cols.len() >= 13 && cols[9].parse::<u64>().ok() == Some(inode) {
            return cols[12].parse().ok();
        }
    }
    None
}

/// Polls the kernel's drop counters of the source's sockets into `kernel_drops`.
struct DropPoller {
    inodes: Vec<u64>,
    /// First reading per inode (the counter reports drops since start).
    baseline: parking_lot::Mutex<Vec<Option<u64>>>,
    reported: parking_lot::Mutex<u64>,
    counter: Arc<Counter>,
}

impl DropPoller {
    fn new(inodes: Vec<u64>, counter: Arc<Counter>) -> Self {
        let n = inodes.len();
        let p =
            Self { inodes, baseline: parking_lot::Mutex::new(vec![None; n]), reported: Default::default(), counter };
        p.poll();
        p
    }

    fn poll(&self) {
        if self.inodes.is_empty() {
            return;
        }
        let tables: Vec<String> =
            ["/proc/net/udp", "/proc/net/udp6"].iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect();
        let mut baseline = self.baseline.lock();
        let mut total = 0u64;
        for (i, inode) in self.inodes.iter().enumerate() {
            let Some(now) = tables.iter().find_map(|t| drops_for_inode(t, *inode)) else { continue };
            let base = *baseline[i].get_or_insert(now);
            total += now.saturating_sub(base);
        }
        let mut reported = self.reported.lock();
        if total > *reported {
            self.counter.add(total - *reported);
            *reported = total;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{build_source, source_context, Capture};

    const PROC_SAMPLE: &str = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  123: 0100007F:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000   101        0 18433 2 ffff8f3a0a2d2000 0
  456: 00000000:3E80 00000000:0000 07 00000000:00034000 00:00000000 00000000     0        0 991234 2 ffff8f3a0a2d2400 4711
";

    #[test]
    fn receive_workers_default_to_the_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(super::default_workers(), cores.min(8));
        assert!(super::default_workers() >= 1);
    }

    #[test]
    fn proc_net_udp_drops_by_inode() {
        assert_eq!(drops_for_inode(PROC_SAMPLE, 991234), Some(4711));
        assert_eq!(drops_for_inode(PROC_SAMPLE, 18433), Some(0));
        assert_eq!(drops_for_inode(PROC_SAMPLE, 101), None);
        assert_eq!(drops_for_inode("", 1), None);
    }

    #[test]
    fn config_errors_name_keys() {
        let e = build_source(&SPEC, "address = \"127.0.0.1:0\"\nworkers = 0").err().unwrap();
        assert_eq!(e.path, "test.syslog_udp.workers");
        let e = build_source(&SPEC, "address = \"127.0.0.1:0\"\ntimezone = \"Mars\"").err().unwrap();
        assert_eq!(e.path, "test.syslog_udp.timezone");
        let e = build_source(&SPEC, "address = \"127.0.0.1:0\"\nbogus = 1").err().unwrap();
        assert!(e.to_string().contains("unknown field `bogus`"), "{e}");
    }

    fn free_udp_port() -> SocketAddr {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.local_addr().unwrap()
    }

    async fn run_with(config: &str, datagrams: &[Vec<u8>]) -> (Vec<Event>, Arc<ComponentMetrics>) {
        let addr = free_udp_port();
        let src = build_source(&SPEC, &format!("address = \"{addr}\"\n{config}")).unwrap();
        let cap = Arc::new(Capture::default());
        let (cx, shutdown, m) = source_context(Arc::clone(&cap));
        let task = tokio::spawn(src.run(cx));
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        // Wait until the source is bound: a probe datagram is received.
        let mut probes = 0u64;
        for _ in 0..200 {
            client.send_to(b"<14>1 - - - - - - probe", addr).unwrap();
            probes += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
            if m.events_in.get() > 0 {
                break;
            }
        }
        let received_probes = m.events_in.get();
        assert!(received_probes > 0, "source never received");
        for (i, d) in datagrams.iter().enumerate() {
            client.send_to(d, addr).unwrap();
            if i % 256 == 255 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        let want = datagrams.len() as u64;
        for _ in 0..500 {
            if m.events_out.get() >= received_probes + want && m.events_in.get() == m.events_out.get() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        shutdown.cancel();
        task.await.unwrap().unwrap();
        let events: Vec<Event> = cap.events.lock().drain(..).filter(|e| e.message() != Some("probe")).collect();
        assert!(probes >= received_probes);
        (events, m)
    }

    #[tokio::test]
    async fn receives_exactly_n_mixed_datagrams() {
        let mut dgrams = Vec::new();
        for i in 0..1000 {
            dgrams.push(match i % 3 {
                0 => format!("<34>Oct 11 22:14:15 host app[{i}]: bsd {i}").into_bytes(),
                1 => format!("<165>1 2003-10-11T22:14:15.003Z h evntslog {i} ID47 [a@1 k=\"v{i}\"] ietf {i}")
                    .into_bytes(),
                _ => format!("<999> garbage {i}").into_bytes(),
            });
        }
        let (events, m) = run_with("workers = 2", &dgrams).await;
        assert_eq!(events.len(), 1000);
        let mut seen = vec![false; 1000];
        for e in &events {
            let msg = e.message().unwrap();
            let i: usize = msg.rsplit(' ').next().unwrap().parse().unwrap();
            assert!(!seen[i], "duplicate {i}");
            seen[i] = true;
            assert_eq!(e.fields().get("peer").and_then(Value::as_str), Some("127.0.0.1"));
            match i % 3 {
                0 => assert_eq!(e.fields().get("procid").and_then(Value::as_str), Some(i.to_string().as_str())),
                1 => {
                    let sd = e.fields().get("structured_data").unwrap().to_json();
                    assert_eq!(sd, format!(r#"{{"a@1":{{"k":"v{i}"}}}}"#));
                    assert_eq!(e.fields().get("msgid").and_then(Value::as_str), Some("ID47"));
                    assert_eq!(e.timestamp, 1_065_910_455_003_000_000);
                }
                _ => assert!(e.has_tag("_syslogparsefailure") && msg == format!("<999> garbage {i}")),
            }
        }
        assert_eq!(m.events_failed.get(), 333);
        assert_eq!(m.counter("kernel_drops").get(), 0);
        assert_eq!(m.counter("oversized").get(), 0);
        assert!(events[0].source.starts_with("syslog_udp:127.0.0.1:"), "{}", events[0].source);
    }

    #[tokio::test]
    async fn oversized_datagrams_are_cut_and_tagged() {
        let big = format!("<14>1 - h app - - - {}", "x".repeat(500));
        let (events, m) =
            run_with("max_message_bytes = 100\nreuse_port = true\nworkers = 2", &[big.into_bytes()]).await;
        assert_eq!(events.len(), 1);
        assert!(events[0].has_tag("_oversized"));
        assert_eq!(events[0].message().unwrap().len(), 100 - "<14>1 - h app - - - ".len());
        assert_eq!(m.counter("oversized").get(), 1);
    }

    #[tokio::test]
    async fn kernel_drops_are_read_for_a_real_socket() {
        // A socket nobody reads, with a tiny buffer: the kernel must drop, and
        // the poller must see it through /proc.
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket2::SockRef::from(&s).set_recv_buffer_size(1024).unwrap();
        let addr = s.local_addr().unwrap();
        let inode = socket_inode(&s).expect("inode");
        let counter = Arc::new(Counter::default());
        let p = DropPoller::new(vec![inode], Arc::clone(&counter));
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        for _ in 0..200 {
            c.send_to(&[b'x'; 1000], addr).unwrap();
        }
        p.poll();
        assert!(counter.get() > 100, "drops seen: {}", counter.get());
    }
}
