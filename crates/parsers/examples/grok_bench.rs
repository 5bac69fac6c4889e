//! Grok throughput benchmark: lines/s single-threaded (and with two threads
//! sharing one compiled pattern) for Apache access logs (COMBINEDAPACHELOG,
//! HTTPD_COMBINEDLOG) over generated lines, and Apache error logs
//! (HTTPD_ERRORLOG) over loghub's Apache_2k.log. Each figure is reported for
//! match only, match + reading every capture, and match + inserting the
//! captures into a fresh `sluice_core::Object` event (what the filter does).
//!
//! Run: `cargo run -p sluice-parsers --release --example grok_bench`

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_parsers::grok::{insert_captures, GrokLibrary, GrokPattern};

const APACHE_2K: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/loghub/Apache/Apache_2k.log");

/// Deterministic pseudo-random generator (xorshift), so runs are comparable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

fn combined_lines(n: usize) -> Vec<String> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let hosts = ["", "", "", "crawl-66-249-66-1.googlebot.com", "proxy.example.org"];
    let users = ["-", "-", "-", "frank", "alice@example.com"];
    let methods = ["GET", "GET", "GET", "POST", "HEAD", "PUT"];
    let paths = [
        "/",
        "/index.html",
        "/images/logo.png",
        "/api/v1/items?id=42&sort=desc",
        "/static/js/app.3f2a1b.js",
        "/wp-login.php",
    ];
    let refs = ["-", "https://www.example.com/", "https://search.example.net/?q=grok+logs"];
    let agents = [
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "curl/8.4.0",
        "-",
    ];
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    (0..n)
        .map(|_| {
            let host = match rng.pick(&hosts) {
                "" => format!(
                    "{}.{}.{}.{}",
                    rng.next() % 223 + 1,
                    rng.next() % 256,
                    rng.next() % 256,
                    rng.next() % 254 + 1
                ),
                h => h.to_owned(),
            };
            let status = [200, 200, 200, 304, 404, 500][(rng.next() % 6) as usize];
            let bytes = if status == 304 {
                "-".to_owned()
            } else {
                (rng.next() % 100_000).to_string()
            };
            format!(
                r#"{host} - {user} [{day:02}/{mon}/2024:{h:02}:{m:02}:{s:02} +0100] "{method} {path} HTTP/1.1" {status} {bytes} "{referrer}" "{agent}""#,
                user = rng.pick(&users),
                day = rng.next() % 28 + 1,
                mon = rng.pick(&months),
                h = rng.next() % 24,
                m = rng.next() % 60,
                s = rng.next() % 60,
                method = rng.pick(&methods),
                path = rng.pick(&paths),
                referrer = rng.pick(&refs),
                agent = rng.pick(&agents),
            )
        })
        .collect()
}

#[derive(Clone, Copy)]
enum Work {
    Match,
    Extract,
    Insert,
}

/// CPU time of the calling thread (Linux `/proc/thread-self/schedstat`), so
/// figures stay meaningful on a loaded machine; `None` elsewhere.
fn thread_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Runs `work` over `lines` repeatedly for about `budget`; returns
/// (lines per CPU-second of this thread, or per wall second if unknown;
/// matched fraction).
fn run(p: &GrokPattern, lines: &[String], work: Work, budget: Duration) -> (f64, f64) {
    let start = Instant::now();
    let cpu_start = thread_cpu();
    let mut done = 0usize;
    let mut matched = 0usize;
    while start.elapsed() < budget {
        for line in lines {
            let Ok(Some(m)) = p.matches(line) else {
                continue;
            };
            matched += 1;
            match work {
                Work::Match => {
                    black_box(m.range());
                }
                Work::Extract => {
                    for (field, value) in m.iter() {
                        black_box((field, value));
                    }
                }
                Work::Insert => {
                    let mut event = sluice_core::Object::with_capacity(16);
                    event.insert(&"message", line.as_str());
                    insert_captures(&mut event, &m);
                    black_box(&event);
                }
            }
        }
        done += lines.len();
    }
    let secs = match (cpu_start, thread_cpu()) {
        (Some(a), Some(b)) if b > a => (b - a).as_secs_f64(),
        _ => start.elapsed().as_secs_f64(),
    };
    (done as f64 / secs, matched as f64 / done as f64)
}

fn bench(name: &str, p: &Arc<GrokPattern>, lines: &Arc<Vec<String>>) {
    let budget = Duration::from_millis(1500);
    // Warm-up (pool, caches).
    run(p, lines, Work::Insert, Duration::from_millis(200));
    for (label, work) in [("match", Work::Match), ("match+extract", Work::Extract), ("match+insert", Work::Insert)] {
        let (rate, matched) = run(p, lines, work, budget);
        println!("{name:<40} {label:<14} {:>9.0} lines/s  ({:.1}% matched)", rate, matched * 100.0);
    }
    // Two threads sharing the compiled pattern (scratch pool contention);
    // the sum of per-thread rates (each per CPU-second).
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let (p, lines) = (Arc::clone(p), Arc::clone(lines));
            std::thread::spawn(move || run(&p, &lines, Work::Insert, budget).0)
        })
        .collect();
    let total: f64 = handles.into_iter().map(|h| h.join().unwrap_or(0.0)).sum();
    println!("{name:<40} {:<14} {total:>9.0} lines/s  (2 threads, shared pattern)", "match+insert");
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let legacy = GrokLibrary::legacy();
    let ecs = GrokLibrary::ecs_v1();
    let combined = Arc::new(combined_lines(10_000));
    let avg = combined.iter().map(String::len).sum::<usize>() / combined.len();
    println!("rates are lines per CPU-second of the matching thread (single core)");
    println!("generated Apache combined lines: {} (avg {avg} bytes)", combined.len());

    let t = Instant::now();
    let p = Arc::new(legacy.compile("%{COMBINEDAPACHELOG}")?);
    println!("compile COMBINEDAPACHELOG: {:?} ({} bytes of regex)", t.elapsed(), p.regex_source().len());
    bench("COMBINEDAPACHELOG (legacy)", &p, &combined);
    let p = Arc::new(ecs.compile("%{HTTPD_COMBINEDLOG}")?);
    bench("HTTPD_COMBINEDLOG (ecs-v1)", &p, &combined);

    match std::fs::read_to_string(APACHE_2K) {
        Ok(text) => {
            let lines = Arc::new(text.lines().map(str::to_owned).collect::<Vec<_>>());
            println!("loghub Apache_2k.log: {} lines", lines.len());
            let p = Arc::new(legacy.compile("%{HTTPD_ERRORLOG}")?);
            bench("HTTPD_ERRORLOG (legacy) Apache_2k", &p, &lines);
            let p = Arc::new(ecs.compile("%{HTTPD_ERRORLOG}")?);
            bench("HTTPD_ERRORLOG (ecs-v1) Apache_2k", &p, &lines);
        }
        Err(e) => println!("skipping Apache_2k.log ({APACHE_2K}): {e}"),
    }
    Ok(())
}
