//! sluice-bench: the load generator behind `sluice bench gen`.
//!
//! Events are rendered from a template with a run id and a sequence number
//! (so the receiving side can count lost and duplicated events exactly) and
//! sent over TCP (newline-delimited) or UDP (one datagram per event), as fast
//! as possible or at a fixed rate. Fixed-rate sending is pinned to the start
//! epoch: event `i` is due at `start + i / rate`, so a stalled receiver makes
//! the sender fall behind schedule (reported), instead of silently slowing the
//! offered load (coordinated omission).

use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What to send.
#[derive(Debug, Clone)]
pub enum Template {
    /// The thesis's 395-byte JSON event with `seq` and `run` fields.
    Thesis,
    /// Apache combined log lines.
    Apache,
    /// RFC 5424 syslog lines.
    Syslog5424,
    /// RFC 3164 syslog lines.
    Syslog3164,
    /// Lines of a file, cycled, with ` seq=N` appended.
    File(Vec<String>),
}

/// Where to send.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// Newline-delimited over TCP.
    Tcp(SocketAddr),
    /// One datagram per event.
    Udp(SocketAddr),
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
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct GenReport {
    /// Events sent.
    pub sent: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Worst lag behind the fixed-rate schedule.
    pub max_lag: Duration,
}

/// Errors of a run.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    /// Network error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Bad arguments.
    #[error("{0}")]
    Invalid(String),
}

const THESIS: &str = include_str!("../../../bench/data/thesis-event.json");

/// Renders event `seq` of run `run` into `out` (no trailing newline).
pub fn render(t: &Template, run: &str, seq: u64, out: &mut Vec<u8>) {
    match t {
        Template::Thesis => {
            let [a, b, c] = thesis_parts();
            out.extend_from_slice(a.as_bytes());
            let _ = write!(out, "{seq}");
            out.extend_from_slice(b.as_bytes());
            let _ = write!(out, "{seq}");
            out.extend_from_slice(c.as_bytes());
            let _ = write!(out, ",\"run\":\"{run}\",\"seq\":{seq}}}");
        }
        Template::Apache => {
            let ip = format!("10.{}.{}.{}", (seq >> 16) & 255, (seq >> 8) & 255, seq & 255);
            let status = [200, 200, 200, 304, 404, 500][(seq % 6) as usize];
            let _ = write!(
                out,
                "{ip} - - [22/Nov/2026:10:{:02}:{:02} +0000] \"GET /item/{seq}?run={run} HTTP/1.1\" {status} {} \"http://example.com/start\" \"Mozilla/5.0 (X11; Linux x86_64) sluice-bench\"",
                (seq / 60) % 60,
                seq % 60,
                (seq * 37) % 50_000
            );
        }
        Template::Syslog5424 => {
            let _ = write!(out, "<165>1 2026-11-22T10:00:00.000Z host{} app {} ID47 [meta run=\"{run}\" seq=\"{seq}\"] event {seq} of run {run}", seq % 16, seq % 1000);
        }
        Template::Syslog3164 => {
            let _ = write!(out, "<34>Nov 22 10:00:00 host{} app[{}]: run={run} seq={seq} event", seq % 16, seq % 1000);
        }
        Template::File(lines) => {
            if lines.is_empty() {
                let _ = write!(out, "seq={seq}");
            } else {
                let l = &lines[(seq % lines.len() as u64) as usize];
                let _ = write!(out, "{l} seq={seq}");
            }
        }
    }
}

/// The thesis event split around its two sequence numbers (rendered once).
fn thesis_parts() -> &'static [String; 3] {
    static PARTS: std::sync::OnceLock<[String; 3]> = std::sync::OnceLock::new();
    PARTS.get_or_init(|| {
        let body = THESIS.trim_end().trim_end_matches('}');
        let (a, rest) = body.split_once("lognumber 1\"").unwrap_or((body, ""));
        let (b, c) = rest.split_once("\"logcount\":\"1\"").unwrap_or((rest, ""));
        [format!("{a}lognumber "), format!("\"{b}\"logcount\":\""), format!("\"{c}")]
    })
}

/// A run id from the clock.
pub fn new_run_id() -> String {
    let ns = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("r{:x}", ns & 0xffff_ffff_ffff)
}

/// Runs the generator to completion.
pub fn run(cfg: &GenConfig) -> Result<GenReport, GenError> {
    if cfg.connections == 0 {
        return Err(GenError::Invalid("connections must be at least 1".into()));
    }
    let start = Instant::now();
    let per = cfg.count / cfg.connections as u64;
    let mut handles = Vec::new();
    for c in 0..cfg.connections {
        let first = c as u64 * per;
        let n = if c + 1 == cfg.connections { cfg.count - first } else { per };
        let cfg = cfg.clone();
        handles.push(std::thread::spawn(move || send_range(&cfg, first, n, start)));
    }
    let mut report = GenReport::default();
    for h in handles {
        let r = h.join().map_err(|_| GenError::Invalid("sender thread panicked".into()))??;
        report.sent += r.sent;
        report.bytes += r.bytes;
        report.max_lag = report.max_lag.max(r.max_lag);
    }
    report.elapsed = start.elapsed();
    Ok(report)
}

fn send_range(cfg: &GenConfig, first: u64, n: u64, start: Instant) -> Result<GenReport, GenError> {
    let rate_per_conn = if cfg.rate > 0.0 { cfg.rate / cfg.connections as f64 } else { 0.0 };
    let chunk: u64 = if rate_per_conn > 0.0 { ((rate_per_conn / 1000.0).ceil() as u64).clamp(1, 512) } else { 512 };
    let mut report = GenReport::default();
    let mut buf = Vec::with_capacity(chunk as usize * 512);
    match cfg.target {
        Target::Tcp(addr) => {
            let mut s = TcpStream::connect(addr)?;
            let mut i = 0;
            while i < n {
                let k = chunk.min(n - i);
                pace(rate_per_conn, i, start, &mut report);
                buf.clear();
                for seq in first + i..first + i + k {
                    render(&cfg.template, &cfg.run_id, seq, &mut buf);
                    buf.push(b'\n');
                }
                s.write_all(&buf)?;
                report.sent += k;
                report.bytes += buf.len() as u64;
                i += k;
            }
            s.flush()?;
            s.shutdown(std::net::Shutdown::Write)?;
        }
        Target::Udp(addr) => {
            let s = UdpSocket::bind(if addr.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" })?;
            s.connect(addr)?;
            let mut i = 0;
            while i < n {
                let k = chunk.min(n - i);
                pace(rate_per_conn, i, start, &mut report);
                for seq in first + i..first + i + k {
                    buf.clear();
                    render(&cfg.template, &cfg.run_id, seq, &mut buf);
                    // A full socket buffer (ENOBUFS) is retried, never skipped.
                    loop {
                        match s.send(&buf) {
                            Ok(_) => break,
                            Err(e) if e.raw_os_error() == Some(105) => std::thread::yield_now(),
                            Err(e) => return Err(e.into()),
                        }
                    }
                    report.bytes += buf.len() as u64;
                }
                report.sent += k;
                i += k;
            }
        }
    }
    Ok(report)
}

fn pace(rate: f64, i: u64, start: Instant, report: &mut GenReport) {
    if rate <= 0.0 {
        return;
    }
    let due = start + Duration::from_secs_f64(i as f64 / rate);
    let now = Instant::now();
    if due > now {
        std::thread::sleep(due - now);
    } else {
        report.max_lag = report.max_lag.max(now - due);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thesis_template_is_the_thesis_event_plus_seq() {
        let mut out = Vec::new();
        render(&Template::Thesis, "r1", 42, &mut out);
        let s = String::from_utf8(out).unwrap();
        assert!(
            s.starts_with("{\"message\":\"2016-05-18 10:44:30:045 INFO LogGenerator run This is lognumber 42\""),
            "{s}"
        );
        assert!(s.ends_with(",\"logcount\":\"42\",\"run\":\"r1\",\"seq\":42}"), "{s}");
    }

    #[test]
    fn sends_exact_counts_over_tcp() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let reader = std::thread::spawn(move || {
            let mut total = 0;
            for _ in 0..3 {
                let (s, _) = l.accept().unwrap();
                total += std::io::BufRead::lines(std::io::BufReader::new(s)).count();
            }
            total
        });
        let cfg = GenConfig {
            target: Target::Tcp(addr),
            template: Template::Apache,
            count: 10_001,
            rate: 0.0,
            connections: 3,
            run_id: "t".into(),
        };
        let r = run(&cfg).unwrap();
        assert_eq!(r.sent, 10_001);
        assert_eq!(reader.join().unwrap(), 10_001);
    }
}
