//! Throughput check for the syslog and date parsers: parses a few RFC 5424
//! and RFC 3164 lines (and ISO 8601 timestamps) in a loop and prints
//! messages per second. Run with `cargo run --release -p sluice-parsers
//! --example syslog_bench [seconds]`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use chrono::FixedOffset;
use sluice_parsers::date::DateParser;
use sluice_parsers::syslog::{self, Options};

const RFC5424: &[&str] = &[
    r#"<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"] An application event log entry..."#,
    "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - 'su root' failed for lonvick on /dev/pts/8",
    "<13>1 2019-02-13T19:48:34+00:00 74794bfb6795 root 8449 - - hello world from a container",
];

const RFC3164: &[&str] = &[
    "<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8",
    "<133>Jan 13 16:33:35 haproxy[73411]: Proxy sticky-servers started.",
    r#"<190>Dec 28 16:49:07 plertrood-thinkpad-x220 nginx: 127.0.0.1 - - [28/Dec/2019:16:49:07 +0000] "GET / HTTP/1.1" 304 0 "-" "Mozilla/5.0""#,
];

const ISO: &[&str] = &["2003-10-11T22:14:15.003Z", "2019-02-13T19:48:34+00:00", "2016-05-18 10:44:30,045"];

/// Runs `f` over `inputs` round-robin for `dur`; returns calls per second.
fn bench(dur: Duration, inputs: &[&str], mut f: impl FnMut(&str) -> bool) -> f64 {
    let start = Instant::now();
    let mut n: u64 = 0;
    let mut ok: u64 = 0;
    while start.elapsed() < dur {
        for _ in 0..1000 {
            for s in inputs {
                ok += u64::from(f(black_box(s)));
                n += 1;
            }
        }
    }
    assert_eq!(ok, n, "every benchmark input must parse");
    n as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let dur = Duration::from_secs_f64(secs);
    let opts = Options { year: Some(2024), ..Options::default() };
    let r5424 =
        bench(dur, RFC5424, |s| syslog::parse(s.as_bytes(), &opts).is_ok_and(|m| black_box(m).message.is_some()));
    println!("syslog rfc5424: {:>12.0} messages/s", r5424);
    let r3164 =
        bench(dur, RFC3164, |s| syslog::parse(s.as_bytes(), &opts).is_ok_and(|m| black_box(m).message.is_some()));
    println!("syslog rfc3164: {:>12.0} messages/s (year fixed)", r3164);
    let auto = Options::default();
    let r3164n = bench(dur, RFC3164, |s| syslog::parse(s.as_bytes(), &auto).is_ok());
    println!("syslog rfc3164: {:>12.0} messages/s (year from clock)", r3164n);
    // INVARIANT: offset 0 is valid and "ISO8601" is a known format.
    let utc = FixedOffset::east_opt(0).unwrap();
    let dp = DateParser::new(&["ISO8601"], utc).unwrap();
    let rdate = bench(dur, ISO, |s| dp.parse(s).is_ok());
    println!("date ISO8601:   {:>12.0} parses/s", rdate);
}
