//! Pipeline-level filter benchmark: pushes generated events through a filter
//! chain in batches of 128 on one thread and reports events per CPU-second
//! (this thread's CPU time from `/proc/thread-self/schedstat`, falling back
//! to `/proc/thread-self/stat` at USER_HZ = 100) and per wall-second.
//!
//! Why: filters dominate the CPU cost of a Logstash-style pipeline; this
//! measures the chains people actually run, not isolated parsers.
//!
//! Scenarios:
//! 1. `legacy`: 200k Apache combined lines → grok `%{COMBINEDAPACHELOG}`
//!    (ecs disabled) → date `dd/MMM/yyyy:HH:mm:ss Z` on `timestamp` → mutate
//!    (convert `response` to integer, remove `timestamp`);
//! 2. `ecs`: the same lines → grok `%{HTTPD_COMBINEDLOG}` (ECS v1) → date →
//!    mutate (remove `timestamp`);
//! 3. `thesis`: 200k copies of the thesis event (`testdata/thesis/event.json`,
//!    varied) as text → json → date `yyyy-MM-dd HH:mm:ss:SSS` on `creation`.
//!
//! 4. `json`: the thesis lines → json only (the baseline of `remap-noop`).
//!
//! With `--features remap` (VRL), the same work as a `remap` program:
//! 5. `remap-thesis`: `. |= parse_json!(.message)` and `parse_timestamp` of
//!    `creation` (as `thesis`);
//! 6. `remap-grok`: `parse_grok` `%{COMBINEDAPACHELOG}`, `parse_timestamp`,
//!    `to_int` of `response` (as `legacy`);
//! 7. `remap-apache`: the same with VRL's `parse_apache_log(format: "combined")`;
//! 8. `remap-noop`: json, then a remap setting one field — the cost of
//!    converting an event to VRL and back (compare with `json`).
//!
//! Run: `cargo run --release -p sluice-components [--features remap] --example filter_bench [-- N [SCENARIO]]`

use std::time::Instant;

use sluice_components::filters;
use sluice_components::testkit::build_filter;
use sluice_core::component::Filter;
use sluice_core::Event;

const BATCH: usize = 128;

const THESIS: &str = include_str!("../../../testdata/thesis/event.json");

/// This thread's CPU time in nanoseconds.
fn thread_cpu_ns() -> Option<u64> {
    if let Ok(s) = std::fs::read_to_string("/proc/thread-self/schedstat") {
        if let Some(ns) = s.split_whitespace().next().and_then(|x| x.parse().ok()) {
            return Some(ns);
        }
    }
    let s = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let rest = s.get(s.rfind(')')? + 2..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 (utime) and 15 (stime); `rest` starts at field 3.
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks * 10_000_000)
}

/// A small deterministic generator (xorshift).
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

fn apache_lines(n: usize) -> Vec<String> {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let users = ["-", "frank", "alice", "bob-smith"];
    let methods = ["GET", "GET", "GET", "POST", "PUT", "DELETE", "HEAD"];
    let paths = [
        "/",
        "/index.html",
        "/images/kibana-search.png",
        "/api/v1/users",
        "/presentations/logstash-monitorama-2013/",
        "/blog/tags/puppet?flav=rss20",
        "/static/app.min.js",
    ];
    let statuses = ["200", "200", "200", "304", "404", "500", "301"];
    let referrers = ["-", "http://semicomplete.com/presentations/", "https://www.google.com/search?q=logstash", "-"];
    let agents = [
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/32.0.1700.77 Safari/537.36",
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "curl/7.68.0",
        "-",
    ];
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    (0..n)
        .map(|_| {
            let ip = format!("{}.{}.{}.{}", 1 + r.next() % 254, r.next() % 256, r.next() % 256, 1 + r.next() % 254);
            let bytes = if r.next().is_multiple_of(10) { "-".to_string() } else { (r.next() % 500_000).to_string() };
            let tz = ["+0000", "+0200", "-0500"][(r.next() % 3) as usize];
            format!(
                "{ip} - {} [{:02}/{}/20{:02}:{:02}:{:02}:{:02} {tz}] \"{} {} HTTP/1.1\" {} {bytes} \"{}\" \"{}\"",
                r.pick(&users),
                1 + r.next() % 28,
                MONTHS[(r.next() % 12) as usize],
                10 + r.next() % 15,
                r.next() % 24,
                r.next() % 60,
                r.next() % 60,
                r.pick(&methods),
                r.pick(&paths),
                r.pick(&statuses),
                r.pick(&referrers),
                r.pick(&agents),
            )
        })
        .collect()
}

fn thesis_lines(n: usize) -> Vec<String> {
    let base = THESIS.trim();
    (0..n)
        .map(|i| {
            let ms = i % 1000;
            let s = (i / 1000) % 60;
            base.replace("This is lognumber 1", &format!("This is lognumber {i}"))
                .replace("\"logcount\":\"1\"", &format!("\"logcount\":\"{i}\""))
                .replace("2016-05-18 10:44:30:045", &format!("2016-05-18 10:44:{s:02}:{ms:03}"))
        })
        .collect()
}

fn chain(configs: &[(&str, &str)]) -> Vec<Box<dyn Filter>> {
    configs
        .iter()
        .map(|(ty, body)| {
            let spec = filters::find(ty).unwrap_or_else(|| panic!("no filter type {ty}"));
            build_filter(spec, body).unwrap_or_else(|e| panic!("{ty}: {e}"))
        })
        .collect()
}

fn run(name: &str, filters: &[Box<dyn Filter>], lines: &[String]) {
    let mut batches: Vec<Vec<Event>> =
        lines.chunks(BATCH).map(|c| c.iter().map(Event::from_message).collect()).collect();
    // Warm-up (pattern pools, allocator) on a copy of the first batches.
    for b in batches.iter().take(40) {
        let mut b = b.clone();
        for f in filters {
            f.process(&mut b);
        }
    }
    let cpu0 = thread_cpu_ns();
    let t0 = Instant::now();
    for b in batches.iter_mut() {
        for f in filters {
            f.process(b);
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = match (cpu0, thread_cpu_ns()) {
        (Some(a), Some(b)) => Some((b - a) as f64 / 1e9),
        _ => None,
    };
    let n = lines.len() as f64;
    let failed = batches
        .iter()
        .flatten()
        .filter(|e| {
            e.fields()
                .get("tags")
                .is_some_and(|t| t.to_json().contains("failure") || t.to_json().contains("_remap_error"))
        })
        .count();
    let cpu_txt = cpu.map_or("n/a".to_string(), |c| format!("{c:.3} s CPU, {:.0} events/CPU-s", n / c));
    println!(
        "{name:<8} {} events: {wall:.3} s wall, {:.0} events/wall-s; {cpu_txt}; failures {failed}",
        lines.len(),
        n / wall
    );
    if let Some(e) = batches.first().and_then(|b| b.first()) {
        println!("         sample: {}", sluice_core::codec::to_json_string(e));
    }
}

// The allocator of the `sluice` binary, so figures match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200_000);
    // An optional second argument runs one scenario only.
    let only = std::env::args().nth(2);
    let want = |name: &str| only.as_deref().is_none_or(|o| o == name);
    let apache = apache_lines(n);
    let legacy = chain(&[
        ("grok", "match = { message = \"%{COMBINEDAPACHELOG}\" }\necs_compatibility = \"disabled\""),
        ("date", "match = [\"timestamp\", \"dd/MMM/yyyy:HH:mm:ss Z\"]"),
        ("mutate", "convert = { response = \"integer\" }\nremove_field = [\"timestamp\"]"),
    ]);
    if want("legacy") {
        run("legacy", &legacy, &apache);
    }
    let ecs = chain(&[
        ("grok", "match = { message = \"%{HTTPD_COMBINEDLOG}\" }"),
        ("date", "match = [\"timestamp\", \"dd/MMM/yyyy:HH:mm:ss Z\"]"),
        ("mutate", "remove_field = [\"timestamp\"]"),
    ]);
    if want("ecs") {
        run("ecs", &ecs, &apache);
    }
    drop(apache);
    let thesis =
        chain(&[("json", ""), ("date", "match = [\"creation\", \"yyyy-MM-dd HH:mm:ss:SSS\"]\ntimezone = \"+02:00\"")]);
    if want("thesis") {
        run("thesis", &thesis, &thesis_lines(n));
    }
    if want("json") {
        run("json", &chain(&[("json", "")]), &thesis_lines(n));
    }
    if filters::remap::AVAILABLE {
        remap_scenarios(n, &want);
    }
}

/// The remap (VRL) scenarios; `Etc/GMT-2` is the TZ database's name for UTC+02:00.
fn remap_scenarios(n: usize, want: &dyn Fn(&str) -> bool) {
    let remap = |program: &str| format!("timezone = \"Etc/GMT-2\"\nsource = '''\n{program}\n'''");
    if want("remap-thesis") {
        let f = chain(&[(
            "remap",
            &remap(". |= object!(parse_json!(.message))\n.@timestamp = parse_timestamp!(.creation, \"%Y-%m-%d %H:%M:%S:%3f\")"),
        )]);
        run("remap-thesis", &f, &thesis_lines(n));
    }
    if want("remap-noop") {
        let f = chain(&[("json", ""), ("remap", &remap(".x = 1"))]);
        run("remap-noop", &f, &thesis_lines(n));
    }
    let apache = if want("remap-grok") || want("remap-apache") { apache_lines(n) } else { Vec::new() };
    if want("remap-grok") {
        let f = chain(&[(
            "remap",
            &remap(
                ". |= parse_grok!(.message, \"%{COMBINEDAPACHELOG}\")\n.@timestamp = parse_timestamp!(del(.timestamp), \"%d/%b/%Y:%H:%M:%S %z\")\n.response = to_int!(.response)",
            ),
        )]);
        run("remap-grok", &f, &apache);
    }
    if want("remap-apache") {
        let f = chain(&[("remap", &remap(". |= parse_apache_log!(.message, format: \"combined\")"))]);
        run("remap-apache", &f, &apache);
    }
}
