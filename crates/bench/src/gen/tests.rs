//! Tests of the `gen` module.

use super::*;
use crate::clock::SimClock;
use std::io::{BufRead, BufReader};

/// A transport on a simulated clock: sending takes no time, except that
/// the batch holding `stall_at` blocks for `stall` (a stalled receiver).
struct SimOut {
    clock: Arc<SimClock>,
    stall_at: u64,
    stall: Duration,
    seen: Vec<u64>,
}

impl Transport for SimOut {
    fn send(&mut self, r: &mut Renderer, b: &Batch, _: &Arc<Recorder>) -> Result<Completion, BenchError> {
        let mut buf = Vec::new();
        for seq in b.seqs() {
            buf.clear();
            r.render(seq, &mut buf);
            self.seen.push(crate::extract::seq(&buf).unwrap());
        }
        if b.seqs().any(|s| s == self.stall_at) {
            self.clock.advance(self.stall);
        }
        Ok(Completion::Done)
    }
    fn finish(&mut self, _: &Arc<Recorder>) -> Result<(), BenchError> {
        Ok(())
    }
}

fn sim_run(rate: f64, count: u64, stall_at: u64, stall: Duration) -> (Arc<Recorder>, Vec<u64>) {
    let clock = Arc::new(SimClock::new());
    let rec = Arc::new(Recorder::new(Schedule::new(rate), Duration::ZERO, clock.clone(), count, false));
    let mut out = SimOut { clock: clock.clone(), stall_at, stall, seen: Vec::new() };
    let mut pacer = Pacer::new(Schedule::new(rate), 0, 1, count, 256);
    let mut r = Renderer::new(&Template::Thesis, "sim", Shape::Native);
    drive(clock.as_ref(), &mut pacer, &mut r, &mut out, &rec).unwrap();
    (rec, out.seen)
}

#[test]
fn a_stalled_receiver_shows_in_the_latency_percentiles() {
    // 1000 events/s for 10 s; the send of event 2000 blocks for 1 s.
    let (rec, seen) = sim_run(1000.0, 10_000, 2000, Duration::from_secs(1));
    assert_eq!(seen, (0..10_000).collect::<Vec<_>>());
    assert_eq!((rec.sent(), rec.completed(), rec.failed()), (10_000, 10_000, 0));
    let s = rec.latency().summary();
    // Events 2000..=3000 were due during the stall and went out when it
    // ended, at 3.0 s: their latencies run from 1 s down to 0 — 10 % of
    // the run. Measured from the actual send times they would all be 0
    // (coordinated omission); from the intended times they are not.
    assert_eq!(s.count, 10_000);
    assert_eq!(s.p50_ms, 0.001, "half the events were sent on time: {s:?}");
    assert!((s.p99_ms - 900.0).abs() < 2.0, "{s:?}");
    assert!((s.p999_ms - 990.0).abs() < 2.0, "{s:?}");
    assert!((s.max_ms - 1000.0).abs() < 1.0, "{s:?}");
    assert_eq!(rec.max_lag_ns.load(Ordering::Relaxed), 999_000_000);
}

#[test]
fn warm_up_is_left_out_of_latency() {
    let clock = Arc::new(SimClock::new());
    let rec = Arc::new(Recorder::new(Schedule::new(100.0), Duration::from_secs(1), clock.clone(), 300, false));
    let mut out = SimOut { clock: clock.clone(), stall_at: 10, stall: Duration::from_millis(500), seen: Vec::new() };
    let mut pacer = Pacer::new(Schedule::new(100.0), 0, 1, 300, 64);
    let mut r = Renderer::new(&Template::Apache, "w", Shape::Native);
    drive(clock.as_ref(), &mut pacer, &mut r, &mut out, &rec).unwrap();
    let s = rec.latency().summary();
    // Only events intended at 1 s or later (100..300) count: the stall was in the warm-up.
    assert_eq!(s.count, 200);
    assert_eq!(s.max_ms, 0.001);
    assert_eq!(rec.completed(), 300);
}

fn collect_lines(l: std::net::TcpListener, conns: usize) -> std::thread::JoinHandle<Vec<u64>> {
    std::thread::spawn(move || {
        let mut seqs = Vec::new();
        for _ in 0..conns {
            let (s, _) = l.accept().unwrap();
            for line in BufReader::new(s).lines() {
                seqs.push(crate::extract::seq(line.unwrap().as_bytes()).unwrap());
            }
        }
        seqs.sort_unstable();
        seqs
    })
}

#[test]
fn sends_exact_counts_over_tcp_with_several_connections() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let reader = collect_lines(l, 3);
    let mut cfg = GenConfig::new(
        Target::Tcp { addr: addr.to_string(), framing: Framing::Newline },
        Template::Apache,
        10_001,
        0.0,
    );
    cfg.connections = 3;
    let r = Generator::new(cfg, RealClock::start(), false).run().unwrap();
    assert_eq!((r.sent, r.completed, r.failed, r.unacknowledged), (10_001, 10_001, 0, 0));
    assert_eq!(reader.join().unwrap(), (0..10_001).collect::<Vec<_>>());
    assert_eq!(r.latency.count, 10_001);
    // (cpu_s is not asserted: /proc CPU time has 10 ms ticks and the run
    // can take less than one.)
    assert!(r.bytes > 10_001 * 100, "{r:?}");
}

#[test]
fn octet_counting_frames_are_exact() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut all = Vec::new();
        std::io::Read::read_to_end(&mut s, &mut all).unwrap();
        let mut frames = Vec::new();
        let mut rest = &all[..];
        while !rest.is_empty() {
            let sp = rest.iter().position(|&b| b == b' ').unwrap();
            let n: usize = std::str::from_utf8(&rest[..sp]).unwrap().parse().unwrap();
            frames.push(String::from_utf8(rest[sp + 1..sp + 1 + n].to_vec()).unwrap());
            rest = &rest[sp + 1 + n..];
        }
        frames
    });
    let cfg = GenConfig::new(
        Target::Tcp { addr: addr.to_string(), framing: Framing::OctetCounting },
        Template::Syslog5424,
        1234,
        0.0,
    );
    let r = Generator::new(cfg, RealClock::start(), false).run().unwrap();
    let frames = reader.join().unwrap();
    assert_eq!(r.sent, 1234);
    assert_eq!(frames.len(), 1234);
    assert!(frames[1233].starts_with("<165>1 "), "{}", frames[1233]);
    assert_eq!(crate::extract::seq(frames[1233].as_bytes()), Some(1233));
}

#[test]
fn files_get_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.log");
    let cfg = GenConfig::new(Target::File { path: path.clone() }, Template::Syslog3164, 5000, 0.0);
    let r = Generator::new(cfg, RealClock::start(), false).run().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let seqs: Vec<u64> = text.lines().map(|l| crate::extract::seq(l.as_bytes()).unwrap()).collect();
    assert_eq!(seqs, (0..5000).collect::<Vec<_>>());
    assert_eq!(r.bytes, text.len() as u64);
}

#[test]
fn targets_parse_and_name_their_errors() {
    assert_eq!(
        Target::parse("tcp://127.0.0.1:5170").unwrap(),
        Target::Tcp { addr: "127.0.0.1:5170".into(), framing: Framing::Newline }
    );
    let Target::Sluice(t) = Target::parse("sluice://a:1,b:2?algorithm=credit&token=x&group=g&window=8").unwrap() else {
        panic!()
    };
    assert_eq!(t.receivers, vec!["a:1", "b:2"]);
    assert_eq!((t.algorithm.as_str(), t.window, t.group.as_str()), ("credit", 8, "g"));
    assert_eq!(
        Target::parse("sluice://a:1").unwrap_err().to_string(),
        "target \"sluice://a:1\": the agent protocol needs token=… or token_file=…"
    );
    assert_eq!(Target::parse("tcp://nohost").unwrap_err().to_string(), "target \"tcp://nohost\": expected HOST:PORT");
    assert_eq!(Target::parse("ftp://a:1").unwrap_err().to_string(), "target \"ftp://a:1\": unknown scheme \"ftp\"");
    assert_eq!(
        Target::parse("http://h:9200/es/?token=abc").unwrap(),
        Target::Http { endpoint: "http://h:9200/es".into(), token: Some("abc".into()) }
    );
    assert_eq!(Target::parse("http://h:9200").unwrap(), Target::Http { endpoint: "http://h:9200".into(), token: None });
    assert!(Target::parse("http://h:9200?user=x").is_err());
    assert_eq!(
        Target::parse("kafka://k:9092/logs").unwrap(),
        Target::Kafka { brokers: "k:9092".into(), topic: "logs".into() }
    );
    assert_eq!(
        Target::parse("kafka://k:9092").unwrap_err().to_string(),
        "target \"kafka://k:9092\": expected kafka://BROKERS/TOPIC"
    );
}
