//! Store benchmark: indexing throughput (events/s, events per CPU-second),
//! bytes on disk per event, then query latencies over the stored events,
//! sorts by a string unique to each event among them.
//!
//! ```text
//! cargo run --release -p sluice-store --example store_bench -- \
//!     [--events N] [--dir PATH] [--commit-events N] [--writer-threads N] [--zstd-level N] [--merge-factor N]
//!     [--runs N] [--keep] [--reuse]
//! cargo run --release -p sluice-store --example store_bench -- \
//!     --issue26 [--dir PATH] [--reuse] [--runs 30] [--warmup 3] [--sets 1] [--seed 26]
//! ```
//! With `--issue26`: issue #26's data set and six queries, the reference
//! path next to the planned one (see `issue26.rs`). Otherwise:
//! events are the 395-byte thesis event (`testdata/thesis/event.json`)
//! with varying sequence numbers, levels, words, hosts and timestamps spread
//! evenly over 26 hours. Generation is excluded from the timings (its CPU is
//! measured per thread and subtracted).

use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_core::{Event, Identity, Value};
use sluice_query::api::{Aggregate, Search};
use sluice_query::{Aggregation, Principal, Query, SourcePattern, TimeRange};
use sluice_store::{Store, StoreOptions};

mod issue26;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const HOUR: i64 = 3_600_000_000_000;
const START: i64 = 1_763_769_600_000_000_000; // 2025-11-22T00:00:00Z
const SPAN: i64 = 26 * HOUR;
const LEVELS: [&str; 4] = ["INFO", "WARN", "ERROR", "DEBUG"];
const WORDS: [&str; 8] = ["started", "stopped", "timeout", "connected", "refused", "retrying", "flushed", "rotated"];

/// User + system CPU seconds of the process (`self`) or the calling thread
/// (`thread-self`), the figures getrusage(2) reports, read from /proc (the
/// workspace denies `unsafe`, which a libc getrusage call needs).
fn cpu_seconds(who: &str) -> f64 {
    let Ok(s) = std::fs::read_to_string(format!("/proc/{who}/stat")) else { return 0.0 };
    let Some(rest) = s.rfind(')').map(|i| &s[i + 2..]) else { return 0.0 };
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 Hz on Linux).
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    ticks(11) + ticks(12)
}

/// A `/proc/self/status` figure in kB (`VmRSS:`, `VmHWM:`), as MiB.
fn status_mib(key: &str) -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

fn rss_mib() -> f64 {
    status_mib("VmRSS:")
}

pub(crate) fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

struct Gen {
    template: Event,
    raw_len: usize,
    groups: Vec<Arc<Identity>>,
}

impl Gen {
    fn new() -> Self {
        let raw = include_bytes!("../../../../testdata/thesis/event.json").to_vec();
        let raw_len = raw.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(raw.len(), |i| i + 1);
        let (template, _) = sluice_core::codec::event_from_json(&raw[..raw_len]).expect("thesis event parses");
        let groups = (0..50).map(|h| Arc::new(Identity::new(format!("g{}", h % 5), "prod", format!("h{h}")))).collect();
        Self { template, raw_len, groups }
    }

    fn event(&self, i: u64, n: u64) -> Event {
        let mut e = self.template.clone();
        e.timestamp = START + (SPAN as i128 * i as i128 / n as i128) as i64;
        let level = LEVELS[(i % 4) as usize];
        let word = WORDS[(i / 4 % 8) as usize];
        e.fields_mut().insert(
            "message",
            Value::from(format!("2016-05-18 10:44:30:045 {level} LogGenerator {word} This is lognumber {i}")),
        );
        e.fields_mut().insert("count", Value::Int(i as i64));
        e.fields_mut().insert("offset", Value::Int((i * 64) as i64));
        e.fields_mut().insert("logcount", Value::from(i.to_string()));
        e.identity = Arc::clone(&self.groups[(i % 50) as usize]);
        e
    }
}

/// A first page of 100 hits, newest first.
pub(crate) fn page(query: Query, range: TimeRange) -> Search {
    Search { query, range, size: 100, search_after: None, fields: None, order: Default::default(), sort: None }
}

pub(crate) fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// Peak RSS (`VmHWM`) in MiB, reset to the current RSS by `reset`.
fn peak_mib(reset: bool) -> f64 {
    if reset {
        // "5" resets the peak to the current RSS (proc(5), `clear_refs`).
        let _ = std::fs::write("/proc/self/clear_refs", "5");
    }
    status_mib("VmHWM:")
}

/// A sort by `logcount`, a string unique to each event (the shape of a
/// request id): every event of 24 h (read by the column's ordinals), and a
/// query matching one event in 400 (read document-led). p50 / p99 and how
/// far the peak RSS rose above the RSS before the runs.
fn sort_unique(store: &Store, p: &Principal, runs: usize) {
    let range = TimeRange { from_ns: Some(START), to_ns: Some(START + 24 * HOUR) };
    let sparse = Query::And(vec![
        Query::Term { field: Some("@host".into()), value: "h3".into() },
        Query::Term { field: None, value: WORDS[3].into() },
    ]);
    for (field, name, query, desc) in [
        ("count", "sort count:asc (a number rising with time), every event of 24 h", Query::All, false),
        ("count", "sort count:desc (a number rising with time), every event of 24 h", Query::All, true),
        ("logcount", "sort logcount:asc (unique strings), every event of 24 h", Query::All, false),
        ("logcount", "sort logcount:desc (unique strings), every event of 24 h", Query::All, true),
        (
            "logcount",
            "sort logcount:asc (unique strings), 1 event in 400 (@host AND word), 24 h",
            sparse.clone(),
            false,
        ),
        ("logcount", "sort logcount:desc (unique strings), 1 event in 400 (@host AND word), 24 h", sparse, true),
    ] {
        let mut s = page(query, range);
        s.sort = Some(sluice_query::SortBy { field: field.into(), desc });
        let before = peak_mib(true);
        let (mut v, mut total) = (Vec::new(), 0);
        for _ in 0..runs {
            let t = Instant::now();
            let r = store.search_sync(p, &s).expect("sort");
            v.push(t.elapsed().as_secs_f64() * 1e3);
            total = r.total;
        }
        let rise = peak_mib(false) - before;
        println!(
            "{name}: p50 {:.1} ms, p99 {:.1} ms (total {total}, {runs} runs); peak RSS +{rise:.0} MiB",
            pct(&mut v, 0.5),
            pct(&mut v, 0.99)
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--issue26") {
        return issue26::run(&args);
    }
    let n: u64 = arg(&args, "--events").and_then(|v| v.parse().ok()).unwrap_or(10_000_000);
    let runs: usize = arg(&args, "--runs").and_then(|v| v.parse().ok()).unwrap_or(200);
    let commit_events: usize =
        arg(&args, "--commit-events").and_then(|v| v.parse().ok()).unwrap_or(sluice_store::DEFAULT_COMMIT_EVENTS);
    let dir = arg(&args, "--dir")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("sluice-store-bench"));
    let reuse = args.iter().any(|a| a == "--reuse");
    if !reuse {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let d = StoreOptions::default();
    let opts = StoreOptions {
        commit_events,
        writer_threads: arg(&args, "--writer-threads").and_then(|v| v.parse().ok()).unwrap_or(d.writer_threads),
        merge_factor: arg(&args, "--merge-factor").and_then(|v| v.parse().ok()).unwrap_or(d.merge_factor),
        docstore_zstd_level: arg(&args, "--zstd-level").and_then(|v| v.parse().ok()).unwrap_or(d.docstore_zstd_level),
        ..d
    };
    let store = Store::open(&dir, opts.clone()).expect("open store");
    let g = Gen::new();
    println!(
        "store_bench: {n} events, commit_events = {commit_events}, writer_threads = {}, merge_factor = {}, zstd level {}, dir = {}",
        opts.writer_threads,
        opts.merge_factor,
        opts.docstore_zstd_level,
        dir.display()
    );
    println!("raw thesis event: {} bytes", g.raw_len);

    if !reuse {
        let batch = 2_000u64;
        let mut gen_cpu = 0.0;
        let cpu0 = cpu_seconds("self");
        let t0 = Instant::now();
        let mut gen_wall = Duration::ZERO;
        let mut i = 0;
        let mut last_report = Instant::now();
        while i < n {
            let g0 = Instant::now();
            let c0 = cpu_seconds("thread-self");
            let events: Vec<Event> = (i..(i + batch).min(n)).map(|k| g.event(k, n)).collect();
            gen_cpu += cpu_seconds("thread-self") - c0;
            gen_wall += g0.elapsed();
            i += events.len() as u64;
            store.append_owned(events, &mut None).expect("append");
            if last_report.elapsed() > Duration::from_secs(15) {
                last_report = Instant::now();
                let w = (t0.elapsed() - gen_wall).as_secs_f64();
                eprintln!("  {i} events, {:.0} events/s, rss {:.0} MiB", i as f64 / w, rss_mib());
            }
        }
        store.commit().expect("commit");
        let wall = (t0.elapsed() - gen_wall).as_secs_f64();
        let cpu = cpu_seconds("self") - cpu0 - gen_cpu;
        println!(
            "indexing: {n} events in {wall:.1} s = {:.0} events/s; {cpu:.1} CPU-s = {:.0} events per CPU-second",
            n as f64 / wall,
            n as f64 / cpu
        );
        println!("rss after indexing: {:.0} MiB", rss_mib());
    }
    // Let background merges settle before measuring the disk.
    std::thread::sleep(Duration::from_secs(5));
    let bytes = store.disk_bytes();
    let stored: u64 = store.partitions().iter().map(|p| p.events).sum();
    println!(
        "disk: {bytes} bytes for {stored} events = {:.1} bytes/event = {:.1}% of raw ({} partitions)",
        bytes as f64 / stored as f64,
        100.0 * bytes as f64 / stored as f64 / g.raw_len as f64,
        store.partitions().len()
    );

    let p = Principal::new("bench", vec![SourcePattern::all()]);
    let hours = (SPAN / HOUR - 1) as usize;
    let mut term = Vec::new();
    let mut text = Vec::new();
    let mut phrase = Vec::new();
    let mut hist = Vec::new();
    let mut dynamic = Vec::new();
    let mut totals = (0u64, 0u64, 0u64, 0u64, 0u64);
    for r in 0..runs {
        let h0 = START + (r % hours) as i64 * HOUR;
        let s = page(
            Query::Term { field: Some("@host".into()), value: format!("h{}", r % 50) },
            TimeRange { from_ns: Some(h0), to_ns: Some(h0 + HOUR) },
        );
        let t = Instant::now();
        totals.0 = store.search_sync(&p, &s).expect("term").total;
        term.push(t.elapsed().as_secs_f64() * 1e3);
        let s = page(Query::Term { field: None, value: WORDS[r % 8].into() }, TimeRange::default());
        let t = Instant::now();
        totals.1 = store.search_sync(&p, &s).expect("text").total;
        text.push(t.elapsed().as_secs_f64() * 1e3);
        let s = page(
            Query::Phrase { field: None, text: format!("{} LogGenerator {}", LEVELS[r % 4], WORDS[r % 8]) },
            TimeRange::default(),
        );
        let t = Instant::now();
        totals.2 = store.search_sync(&p, &s).expect("phrase").total;
        phrase.push(t.elapsed().as_secs_f64() * 1e3);
        // A dynamic field (column scan), high cardinality: one event per value.
        let first = ((h0 - START) as i128 * n as i128 / SPAN as i128) as u64;
        let k = first + (r as u64 * 7919) % (n / 27).max(1);
        let s = page(
            Query::Term { field: Some("logcount".into()), value: k.to_string() },
            TimeRange { from_ns: Some(h0), to_ns: Some(h0 + HOUR) },
        );
        let t = Instant::now();
        totals.4 = store.search_sync(&p, &s).expect("dynamic term").total;
        dynamic.push(t.elapsed().as_secs_f64() * 1e3);
        let d0 = START + (r % 2) as i64 * HOUR;
        let a = Aggregate {
            query: Query::All,
            range: TimeRange { from_ns: Some(d0), to_ns: Some(d0 + 24 * HOUR) },
            aggs: [("h".to_string(), Aggregation::DateHistogram { interval: None, buckets: Some(96) })].into(),
        };
        let t = Instant::now();
        totals.3 = store.aggregate_sync(&p, &a).expect("histogram").total;
        hist.push(t.elapsed().as_secs_f64() * 1e3);
    }
    for (name, v, total) in [
        ("term @host:hN, 1 h range, 100 hits", &mut term, totals.0),
        ("full text word, all time, 100 hits", &mut text, totals.1),
        ("phrase of 3 words, all time, 100 hits", &mut phrase, totals.2),
        ("date histogram 24 h, 96 buckets", &mut hist, totals.3),
        ("term logcount:N (dynamic, unique values), 1 h range, 100 hits", &mut dynamic, totals.4),
    ] {
        println!("{name}: p50 {:.1} ms, p99 {:.1} ms (last total {total}, {runs} runs)", pct(v, 0.5), pct(v, 0.99));
    }
    println!("rss after queries: {:.0} MiB", rss_mib());
    sort_unique(&store, &p, runs.min(30));
    store.close().expect("close");
    if !args.iter().any(|a| a == "--keep") && !reuse {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
