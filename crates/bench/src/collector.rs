//! Receivers that count what reached the end of a pipeline.
//!
//! A case gives each processor a `tcp` sink (ndjson or lines) pointing at its
//! own collector endpoint; the collector reads every line, finds the run id
//! and sequence number ([`crate::extract`]) and records, exactly:
//! - which events arrived and how often ([`Tally`]: received, duplicated,
//!   lost, the missing ranges), across all endpoints;
//! - per endpoint (= per processor), the events that arrived in each second
//!   since the run's start epoch — the thesis's per-processor throughput and
//!   share charts;
//! - end-to-end latency from each event's intended send time (computed from
//!   its sequence number on a paced run, or looked up in the generator's
//!   send times when not paced), after the warm-up.
//!
//! Lines of another run or without a sequence number are counted as
//! `foreign`, never silently ignored. Counting costs a `memmem` search per
//! line; per-second counts and latencies are kept per connection thread and
//! merged every 250 ms.

use std::io::Read as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::gen::Recorder;
use crate::latency::{Latency, LatencySummary};
use crate::tally::{Accounting, Tally};

/// Largest line kept; longer lines are counted as foreign.
const MAX_LINE: usize = 16 << 20;

/// One endpoint's counters.
#[derive(Debug)]
struct Endpoint {
    name: String,
    lines: AtomicU64,
    unique: AtomicU64,
    duplicates: AtomicU64,
    seconds: Mutex<Vec<u64>>,
}

#[derive(Debug)]
struct Shared {
    run: Vec<u8>,
    tally: Tally,
    rec: RecorderSlot,
    latency: Mutex<Latency>,
    endpoints: Vec<Endpoint>,
    foreign: AtomicU64,
    stop: AtomicBool,
    active: AtomicUsize,
}

/// The generator's recorder, set when the load starts (the runner binds
/// collectors before it knows the start epoch).
pub type RecorderSlot = Arc<Mutex<Option<Arc<Recorder>>>>;

/// What one endpoint received.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndpointReport {
    /// The endpoint's (processor's) name.
    pub name: String,
    /// Events of the run received here, duplicates included.
    pub events: u64,
    /// Events received here first.
    pub unique: u64,
    /// Events received here that had arrived before (here or elsewhere).
    pub duplicates: u64,
    /// Events received in each second since the start epoch.
    pub per_second: Vec<u64>,
}

/// What the collector saw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CollectorReport {
    /// Exact accounting against what the generator sent.
    pub accounting: Accounting,
    /// End-to-end latency from intended send time (after warm-up).
    pub latency: LatencySummary,
    /// Per endpoint.
    pub endpoints: Vec<EndpointReport>,
    /// Lines of other runs, or without a run id and sequence number.
    pub foreign: u64,
}

/// Listening endpoints, one per name.
#[derive(Debug)]
pub struct Collector {
    shared: Arc<Shared>,
    addrs: Vec<(String, SocketAddr)>,
}

impl Collector {
    /// Binds one endpoint per `(name, address)` (`127.0.0.1:0` for any free
    /// port) for run `run_id` of `count` events timed by `rec`.
    pub fn start(binds: &[(String, String)], run_id: &str, count: u64, rec: Arc<Recorder>) -> std::io::Result<Self> {
        Self::start_deferred(binds, run_id, count, Arc::new(Mutex::new(Some(rec))))
    }

    /// Like [`Collector::start`], with the recorder set later in `rec`
    /// (lines arriving before are counted in second 0, without latency).
    pub fn start_deferred(
        binds: &[(String, String)],
        run_id: &str,
        count: u64,
        rec: RecorderSlot,
    ) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            run: run_id.as_bytes().to_vec(),
            tally: Tally::new(count),
            rec,
            latency: Mutex::new(Latency::new()),
            endpoints: binds
                .iter()
                .map(|(n, _)| Endpoint {
                    name: n.clone(),
                    lines: AtomicU64::new(0),
                    unique: AtomicU64::new(0),
                    duplicates: AtomicU64::new(0),
                    seconds: Mutex::new(Vec::new()),
                })
                .collect(),
            foreign: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            active: AtomicUsize::new(0),
        });
        let mut addrs = Vec::new();
        for (idx, (name, bind)) in binds.iter().enumerate() {
            let l = TcpListener::bind(bind.as_str())?;
            l.set_nonblocking(true)?;
            addrs.push((name.clone(), l.local_addr()?));
            let shared = Arc::clone(&shared);
            std::thread::Builder::new().name(format!("collect-{name}")).spawn(move || accept(l, idx, shared))?;
        }
        Ok(Self { shared, addrs })
    }

    /// The address of endpoint `name`.
    pub fn addr(&self, name: &str) -> Option<SocketAddr> {
        self.addrs.iter().find(|(n, _)| n == name).map(|(_, a)| *a)
    }

    /// Distinct events received so far.
    pub fn received(&self) -> u64 {
        self.shared.tally.unique()
    }

    /// Waits until `sent` distinct events arrived (then `settle` longer, for
    /// late duplicates) or `timeout` passed. True when all arrived.
    pub fn wait(&self, sent: u64, timeout: Duration, settle: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.received() < sent && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let all = self.received() >= sent;
        if all && !settle.is_zero() {
            std::thread::sleep(settle);
        }
        all
    }

    /// Events received so far at each endpoint, in endpoint order.
    pub fn counts(&self) -> Vec<u64> {
        self.shared.endpoints.iter().map(|e| e.lines.load(Ordering::Relaxed)).collect()
    }

    /// The report, given that `sent` events were sent.
    pub fn report(&self, sent: u64) -> CollectorReport {
        let s = &self.shared;
        CollectorReport {
            accounting: s.tally.accounting(sent),
            latency: s.latency.lock().summary(),
            endpoints: s
                .endpoints
                .iter()
                .map(|e| EndpointReport {
                    name: e.name.clone(),
                    events: e.lines.load(Ordering::Relaxed),
                    unique: e.unique.load(Ordering::Relaxed),
                    duplicates: e.duplicates.load(Ordering::Relaxed),
                    per_second: e.seconds.lock().clone(),
                })
                .collect(),
            foreign: s.foreign.load(Ordering::Relaxed),
        }
    }

    /// Stops accepting and reading; waits up to a second for readers to flush.
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let deadline = Instant::now() + Duration::from_secs(1);
        while self.shared.active.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

fn accept(l: TcpListener, idx: usize, shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::Relaxed) {
        match l.accept() {
            Ok((s, _)) => {
                let shared = Arc::clone(&shared);
                shared.active.fetch_add(1, Ordering::Relaxed);
                let spawned = std::thread::Builder::new().name("collect-conn".into()).spawn({
                    let shared = Arc::clone(&shared);
                    move || {
                        serve(s, idx, &shared);
                        shared.active.fetch_sub(1, Ordering::Relaxed);
                    }
                });
                if spawned.is_err() {
                    shared.active.fetch_sub(1, Ordering::Relaxed);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Per-connection counts, merged into the shared ones now and then.
struct Local {
    seconds: Vec<u64>,
    latency: Latency,
    lines: u64,
    unique: u64,
    duplicates: u64,
    foreign: u64,
}

impl Local {
    fn flush(&mut self, idx: usize, s: &Shared) {
        let e = &s.endpoints[idx];
        {
            let mut secs = e.seconds.lock();
            if secs.len() < self.seconds.len() {
                secs.resize(self.seconds.len(), 0);
            }
            for (i, n) in self.seconds.iter_mut().enumerate() {
                secs[i] += *n;
                *n = 0;
            }
        }
        if self.latency.count() > 0 {
            s.latency.lock().merge(&self.latency);
            self.latency.reset();
        }
        e.lines.fetch_add(std::mem::take(&mut self.lines), Ordering::Relaxed);
        e.unique.fetch_add(std::mem::take(&mut self.unique), Ordering::Relaxed);
        e.duplicates.fetch_add(std::mem::take(&mut self.duplicates), Ordering::Relaxed);
        s.foreign.fetch_add(std::mem::take(&mut self.foreign), Ordering::Relaxed);
    }

    fn line(&mut self, line: &[u8], s: &Shared, rec: Option<&Recorder>, now: Duration, sec: usize) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return;
        }
        let seq = match (crate::extract::run(line), crate::extract::seq(line)) {
            (Some(run), Some(seq)) if run == s.run.as_slice() => seq,
            _ => {
                self.foreign += 1;
                return;
            }
        };
        match s.tally.record(seq) {
            None => {
                self.foreign += 1;
                return;
            }
            Some(true) => self.unique += 1,
            Some(false) => self.duplicates += 1,
        }
        self.lines += 1;
        if self.seconds.len() <= sec {
            self.seconds.resize(sec + 1, 0);
        }
        self.seconds[sec] += 1;
        if let Some(t) = rec.and_then(|r| r.intended(seq).filter(|t| *t >= r.warmup())) {
            {
                self.latency.record(now.saturating_sub(t));
            }
        }
    }
}

fn serve(mut conn: TcpStream, idx: usize, s: &Shared) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(Duration::from_millis(100)));
    let mut buf = vec![0u8; 256 << 10];
    let mut len = 0;
    let mut local =
        Local { seconds: Vec::new(), latency: Latency::new(), lines: 0, unique: 0, duplicates: 0, foreign: 0 };
    let mut flushed = Instant::now();
    let mut skipping = false;
    loop {
        if len == buf.len() {
            if buf.len() < MAX_LINE {
                buf.resize(buf.len() * 2, 0);
            } else {
                // A line longer than MAX_LINE: count it and skip to its end.
                local.foreign += 1;
                skipping = true;
                len = 0;
            }
        }
        match conn.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => {
                let rec = s.rec.lock().clone();
                let now = rec.as_ref().map_or(Duration::ZERO, |r| r.clock().now());
                let sec = now.as_secs() as usize;
                let mut start = 0;
                for nl in memchr::memchr_iter(b'\n', &buf[len..len + n]) {
                    let end = len + nl;
                    if skipping {
                        skipping = false;
                    } else {
                        local.line(&buf[start..end], s, rec.as_deref(), now, sec);
                    }
                    start = end + 1;
                }
                len += n;
                if skipping {
                    len = 0;
                } else {
                    buf.copy_within(start..len, 0);
                    len -= start;
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
        if flushed.elapsed() >= Duration::from_millis(250) {
            local.flush(idx, s);
            flushed = Instant::now();
        }
        if s.stop.load(Ordering::Relaxed) {
            break;
        }
    }
    if len > 0 && !skipping {
        let rec = s.rec.lock().clone();
        let now = rec.as_ref().map_or(Duration::ZERO, |r| r.clock().now());
        local.line(&buf[..len], s, rec.as_deref(), now, now.as_secs() as usize);
    }
    local.flush(idx, s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::RealClock;
    use crate::gen::{Framing, GenConfig, Generator, Target};
    use crate::template::Template;
    use std::io::Write as _;

    fn binds(names: &[&str]) -> Vec<(String, String)> {
        names.iter().map(|n| (n.to_string(), "127.0.0.1:0".to_string())).collect()
    }

    /// A stand-in processor: reads the generator's lines and forwards them
    /// to two collector endpoints, dropping and duplicating on purpose.
    #[test]
    fn sent_equals_received_plus_lost_and_duplicates_are_counted() {
        let input = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut cfg = GenConfig::new(
            Target::Tcp { addr: input.local_addr().unwrap().to_string(), framing: Framing::Newline },
            Template::Thesis,
            20_000,
            0.0,
        );
        cfg.run_id = "rtest".into();
        let generator = Generator::new(cfg, RealClock::start(), true);
        let c = Collector::start(&binds(&["p1", "p2"]), "rtest", 20_000, generator.recorder()).unwrap();
        let (a1, a2) = (c.addr("p1").unwrap(), c.addr("p2").unwrap());
        let relay = std::thread::spawn(move || {
            let (s, _) = input.accept().unwrap();
            let mut p1 = TcpStream::connect(a1).unwrap();
            let mut p2 = TcpStream::connect(a2).unwrap();
            for line in std::io::BufRead::lines(std::io::BufReader::new(s)) {
                let line = line.unwrap();
                let seq = crate::extract::seq(line.as_bytes()).unwrap();
                match seq % 100 {
                    // 1 % lost.
                    7 => {}
                    // 2 % duplicated, once on each processor.
                    8 | 9 => {
                        writeln!(p1, "{line}").unwrap();
                        writeln!(p2, "{line}").unwrap();
                    }
                    _ if seq.is_multiple_of(2) => writeln!(p1, "{line}").unwrap(),
                    _ => writeln!(p2, "{line}").unwrap(),
                }
            }
            // Noise: another run's event and a line without a sequence number.
            writeln!(p1, "{{\"run\":\"other\",\"seq\":1}}\nhello").unwrap();
        });
        let r = generator.run().unwrap();
        relay.join().unwrap();
        assert_eq!(r.sent, 20_000);
        assert!(!c.wait(r.sent, Duration::from_millis(300), Duration::ZERO), "200 events were dropped");
        // The foreign lines come last on p1's connection: wait for them.
        let deadline = Instant::now() + Duration::from_secs(10);
        while c.report(r.sent).foreign < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        c.stop();
        let rep = c.report(r.sent);
        let a = &rep.accounting;
        assert_eq!((a.sent, a.received, a.lost, a.duplicated, a.out_of_range), (20_000, 19_800, 200, 400, 0));
        assert_eq!(a.sent, a.received + a.lost);
        assert_eq!(a.missing[..2], [(7, 7), (107, 107)]);
        assert_eq!(rep.foreign, 2);
        let total: u64 = rep.endpoints.iter().map(|e| e.events).sum();
        assert_eq!(total, 19_800 + 400);
        let per_second: u64 = rep.endpoints.iter().flat_map(|e| e.per_second.iter()).sum();
        assert_eq!(per_second, total);
        assert_eq!(rep.endpoints.iter().map(|e| e.unique).sum::<u64>(), 19_800);
        assert_eq!(rep.endpoints.iter().map(|e| e.duplicates).sum::<u64>(), 400);
        assert_eq!(rep.latency.count, 19_800 + 400, "every arrival has a latency from its send time");
    }
}
