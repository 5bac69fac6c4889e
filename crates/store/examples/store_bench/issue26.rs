//! `--issue26`: the data set and the six queries of issue #26, in process
//! against the embedded store, the reference evaluation
//! ([`sluice_store::reference`], what the store did before the planned
//! paths) next to the planned paths with the result cache off, then with
//! it on.
//!
//! The data set is seeded (`--seed`, default 26): 2,000,000 Apache-like
//! events plus 20 carrying a unique token, evenly over 24 hours from
//! 2025-11-22T00:00Z, fields `host` (200 values), `path` (5,000 values,
//! Zipf-like popularity with a shuffled rank), `status`, `method`,
//! `user_agent`, `bytes`, `duration_ms` and a `message` with one word in
//! ~1 % of them — the shape of `bench/search.py`'s, not its bytes (that
//! one draws with Python's generator and loads over HTTP).
//!
//! Every query is answered by both paths first and the answers compared
//! (totals, hits in order, buckets); a difference aborts the run. Then
//! `--warmup` runs and `--runs` measured runs per path, alternated request
//! by request, repeated `--sets` times; p50 / p99 in ms per set. `--only I`
//! runs the query at index `I` (0–5) alone, e.g. under a profiler.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use sluice_core::{Event, Identity, Object, Value};
use sluice_query::api::{Aggregate, Search};
use sluice_query::{Aggregation, Principal, Query, SourcePattern, TimeRange};
use sluice_store::{reference, Store, StoreOptions};

use crate::{arg, page, pct};

const MS: i64 = 1_000_000;
const HOUR: i64 = 3_600_000 * MS;
const DAY: i64 = 24 * HOUR;
const T0: i64 = 1_763_769_600_000 * MS; // 2025-11-22T00:00:00Z
const BASE: u64 = 2_000_000;
const NEEDLES: u64 = 20;
const WORD_1PCT: &str = "kumquat";
const NEEDLE: &str = "zq7needle26";
const METHODS: [(&str, u32); 5] = [("GET", 70), ("POST", 18), ("PUT", 6), ("DELETE", 4), ("HEAD", 2)];
const STATUSES: [(i64, u32); 8] = [(200, 80), (301, 3), (304, 6), (404, 6), (500, 1), (502, 1), (503, 2), (401, 1)];
const SECTIONS: [&str; 10] = ["api", "static", "shop", "blog", "img", "user", "search", "docs", "cart", "admin"];

/// splitmix64: small, seeded, good enough for a benchmark's data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn weighted<T: Copy>(&mut self, table: &[(T, u32)]) -> T {
        let total: u32 = table.iter().map(|t| t.1).sum();
        let mut x = self.below(u64::from(total)) as u32;
        for &(v, w) in table {
            if x < w {
                return v;
            }
            x -= w;
        }
        table[table.len() - 1].0
    }
}

/// The data set's generator, in time order.
struct Gen {
    rng: Rng,
    paths: Vec<String>,
    order: Vec<usize>,
    cum: Vec<f64>,
    agents: Vec<String>,
    words: Vec<String>,
    identity: Arc<Identity>,
    source: Arc<str>,
}

impl Gen {
    fn new(seed: u64) -> Self {
        let mut rng = Rng(seed);
        let paths = (0..5000).map(|i| format!("/{}/{}/item-{i}", SECTIONS[i % 10], i / 10)).collect();
        let mut order: Vec<usize> = (0..5000).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut acc = 0.0;
        let cum = (0..5000)
            .map(|r| {
                acc += 1.0 / ((r + 1) as f64).powf(0.9);
                acc
            })
            .collect();
        let agents = (100..130)
            .map(|v| format!("Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/{v}.0"))
            .chain((0..20).map(|v| format!("curl/8.{v}.0")))
            .collect();
        // 99 plain words and the 1 % word.
        let words = (0..99).map(|i| format!("w{i:02}")).chain([WORD_1PCT.to_string()]).collect();
        let identity = Arc::new(Identity::new("web", "prod", "apache"));
        Self { rng, paths, order, cum, agents, words, identity, source: Arc::from("bench") }
    }

    fn event(&mut self, j: u64, total: u64) -> Event {
        let r = &mut self.rng;
        let ts = T0 + (DAY as i128 * j as i128 / total as i128) as i64;
        let method = r.weighted(&METHODS);
        let status = r.weighted(&STATUSES);
        let x = r.unit() * self.cum[self.cum.len() - 1];
        let path = &self.paths[self.order[self.cum.partition_point(|&c| c < x).min(4999)]];
        let host = format!("web-{:03}", r.below(200));
        let ua = &self.agents[r.below(self.agents.len() as u64) as usize];
        let size = 200 + r.below(49_800) as i64;
        let dur = 1 + r.below(1999) as i64;
        let mut word = self.words[r.below(self.words.len() as u64) as usize].as_str();
        if j % (total / NEEDLES) == total / (2 * NEEDLES) {
            word = NEEDLE;
        }
        let ip = format!("10.{}.{}.{}", r.below(256), r.below(256), 1 + r.below(254));
        let mut f = Object::with_capacity(8);
        f.insert("host", Value::from(host));
        f.insert("path", Value::from(path.clone()));
        f.insert("status", Value::Int(status));
        f.insert("method", Value::from(method));
        f.insert("user_agent", Value::from(ua.clone()));
        f.insert("bytes", Value::Int(size));
        f.insert("duration_ms", Value::Int(dur));
        f.insert(
            "message",
            Value::from(format!("{ip} - - \"{method} {path} HTTP/1.1\" {status} {size} {dur}ms {word}")),
        );
        Event::new(ts, f, Arc::clone(&self.identity), Arc::clone(&self.source))
    }
}

enum Q {
    S(Search),
    A(Aggregate),
}

fn search(query: Query, from: Option<i64>, to: Option<i64>) -> Q {
    Q::S(page(query, TimeRange { from_ns: from, to_ns: to }))
}

fn aggregate(name: &str, a: Aggregation) -> Q {
    Q::A(Aggregate {
        query: Query::All,
        range: TimeRange { from_ns: Some(T0), to_ns: Some(T0 + DAY) },
        aggs: BTreeMap::from([(name.to_string(), a)]),
    })
}

fn queries() -> Vec<(&'static str, Q)> {
    let q = |s: &str| sluice_query::parse(s).expect("bench query parses");
    vec![
        ("status:500, last 1 h", search(q("status:500"), Some(T0 + DAY - HOUR), Some(T0 + DAY))),
        ("full text, a word in ~1 % of messages, 24 h", search(q(WORD_1PCT), Some(T0), Some(T0 + DAY))),
        (
            "date histogram, 1-minute buckets, 24 h",
            aggregate("h", Aggregation::DateHistogram { interval: Some("1m".into()), buckets: None }),
        ),
        (
            "top 10 values of path (5,000 distinct), 24 h",
            aggregate("t", Aggregation::Terms { field: "path".into(), size: Some(10) }),
        ),
        ("a unique token over all time (20 hits)", search(q(NEEDLE), None, None)),
        ("newest 100 events of everything, 24 h", search(Query::All, Some(T0), Some(T0 + DAY))),
    ]
}

/// The answer of `q` by the reference path or the planned one, without
/// its `took_ms`, as text to compare; and the total.
fn answer(store: &Store, p: &Principal, q: &Q, planned: bool) -> (String, u64) {
    match q {
        Q::S(s) => {
            let mut r =
                if planned { store.search_sync(p, s) } else { reference::search(store, p, s) }.expect("bench search");
            r.took_ms = 0;
            (format!("{:?} {:?} {:?}", r.total, r.hits, r.next), r.total)
        }
        Q::A(a) => {
            let mut r = if planned { store.aggregate_sync(p, a) } else { reference::aggregate(store, p, a) }
                .expect("bench aggregate");
            r.took_ms = 0;
            (format!("{:?} {:?}", r.total, r.aggs), r.total)
        }
    }
}

fn open(dir: &std::path::Path, cache: bool) -> Arc<Store> {
    let d = StoreOptions::default();
    let opts = if cache { d } else { StoreOptions { result_cache_bytes: 0, ..d } };
    Store::open(dir, opts).expect("open store")
}

/// Runs `--issue26` (see the module docs).
pub fn run(args: &[String]) {
    let runs: usize = arg(args, "--runs").and_then(|v| v.parse().ok()).unwrap_or(30);
    let warmup: usize = arg(args, "--warmup").and_then(|v| v.parse().ok()).unwrap_or(3);
    let sets: usize = arg(args, "--sets").and_then(|v| v.parse().ok()).unwrap_or(1);
    let seed: u64 = arg(args, "--seed").and_then(|v| v.parse().ok()).unwrap_or(26);
    let dir = arg(args, "--dir")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("sluice-store-bench-26"));
    let reuse = args.iter().any(|a| a == "--reuse");
    let total = BASE + NEEDLES;
    if !reuse {
        let _ = std::fs::remove_dir_all(&dir);
        let store = open(&dir, false);
        let mut g = Gen::new(seed);
        let t0 = Instant::now();
        let mut j = 0;
        while j < total {
            let batch: Vec<Event> = (j..(j + 5000).min(total)).map(|k| g.event(k, total)).collect();
            j += batch.len() as u64;
            store.append_owned(batch, &mut None).expect("append");
        }
        store.commit().expect("commit");
        println!("loaded {total} events in {:.1} s (generation included)", t0.elapsed().as_secs_f64());
        store.close().expect("close");
    }
    let p = Principal::new("bench", vec![SourcePattern::all()]);
    // `--only I`: just the query at that index (0-5), e.g. under a profiler.
    let only: Option<usize> = arg(args, "--only").and_then(|v| v.parse().ok());
    // `--planned-only`: the reference path is not timed (profiling the planned one).
    let skip_reference = args.iter().any(|a| a == "--planned-only");
    let qs: Vec<_> =
        queries().into_iter().enumerate().filter(|(i, _)| only.is_none_or(|o| o == *i)).map(|x| x.1).collect();
    let store = open(&dir, false);
    let parts: Vec<(String, u64)> = store.partitions().iter().map(|p| (p.name.clone(), p.events)).collect();
    println!("issue26: {total} events, dir {}, partitions {parts:?}", dir.display());
    println!("load average: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
    for (name, q) in &qs {
        let (a, n) = answer(&store, &p, q, false);
        let (b, _) = answer(&store, &p, q, true);
        assert!(a == b, "{name}: the planned path answered differently from the reference\n{a}\n{b}");
        println!("  same answer on both paths: {name} (total {n})");
    }
    // (query, system) -> per-set (p50, p99)
    let mut figures: Vec<[Vec<(f64, f64)>; 3]> = (0..qs.len()).map(|_| Default::default()).collect();
    for set in 0..sets {
        for (qi, (_, q)) in qs.iter().enumerate() {
            let mut t: [Vec<f64>; 2] = Default::default();
            for r in 0..warmup + runs {
                for (sys, planned) in [(0, false), (1, true)] {
                    if skip_reference && !planned {
                        continue;
                    }
                    let s = Instant::now();
                    answer(&store, &p, q, planned);
                    if r >= warmup {
                        t[sys].push(s.elapsed().as_secs_f64() * 1e3);
                    }
                }
            }
            for (sys, v) in t.iter_mut().enumerate().filter(|(_, v)| !v.is_empty()) {
                figures[qi][sys].push((pct(v, 0.5), pct(v, 0.99)));
            }
        }
        eprintln!("set {} of {sets}: reference and planned done", set + 1);
    }
    store.close().expect("close");
    drop(store);
    let store = open(&dir, true);
    for _ in 0..sets {
        for (qi, (_, q)) in qs.iter().enumerate() {
            let mut t = Vec::new();
            for r in 0..warmup + runs {
                let s = Instant::now();
                answer(&store, &p, q, true);
                if r >= warmup {
                    t.push(s.elapsed().as_secs_f64() * 1e3);
                }
            }
            figures[qi][2].push((pct(&mut t, 0.5), pct(&mut t, 0.99)));
        }
    }
    store.close().expect("close");
    println!("load average: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
    println!("\np50 / p99 ms, median over {sets} set(s) of {runs} runs after {warmup} warm-ups");
    println!("| query | reference (before) | planned, cache off | planned, result cache |");
    println!("|---|---|---|---|");
    for ((name, _), f) in qs.iter().zip(&figures) {
        let cell = |v: &[(f64, f64)]| {
            if v.is_empty() {
                return "–".to_string();
            }
            let mut p50: Vec<f64> = v.iter().map(|x| x.0).collect();
            let mut p99: Vec<f64> = v.iter().map(|x| x.1).collect();
            format!("{:.1} / {:.1}", pct(&mut p50, 0.5), pct(&mut p99, 0.5))
        };
        println!("| {name} | {} | {} | {} |", cell(&f[0]), cell(&f[1]), cell(&f[2]));
    }
}
