//! The query suite over real loghub samples: hit counts equal counts computed
//! independently over the same lines; pagination; aggregations; principal
//! isolation on every path. Issue #26: the planned search and aggregation
//! paths (time-ordered segments, early termination, terms by ordinal, the
//! result cache) equal the reference evaluation and brute-force counts; the
//! cache is invalidated by new data and never crosses principals.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use sluice_core::{Event, Identity, Object, Value};
use sluice_query::api::{Aggregate, Search};
use sluice_query::{Aggregation, AggregationResult, Bound, Literal, Order, Principal, Query, SourcePattern, TimeRange};
use sluice_store::{reference, PartitionSpan, Store, StoreOptions};

const BASE: i64 = 1_700_000_000_000_000_000; // 2023-11-14T22:13:20Z
const SEC: i64 = 1_000_000_000;
const FILES: [(&str, &str); 3] =
    [("apache", "Apache/Apache_2k.log"), ("openssh", "OpenSSH/OpenSSH_2k.log"), ("linux", "Linux/Linux_2k.log")];

struct Corpus {
    /// (group, line index, line)
    lines: Vec<(String, usize, String)>,
}

fn load() -> Corpus {
    let mut lines = Vec::new();
    for (group, file) in FILES {
        let text = std::fs::read_to_string(format!("{}/../../testdata/loghub/{file}", env!("CARGO_MANIFEST_DIR")))
            .expect("loghub sample");
        for (i, l) in text.lines().enumerate() {
            lines.push((group.to_string(), i, l.to_string()));
        }
    }
    Corpus { lines }
}

fn tokens(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty() && t.len() <= 40).map(str::to_lowercase).collect()
}

fn event_of(group: &str, i: usize, line: &str, g: usize) -> Event {
    let mut fields = Object::new();
    fields.insert("message", Value::from(line));
    fields.insert("n", Value::Int(i as i64));
    fields.insert("flag", Value::Bool(i.is_multiple_of(2)));
    fields.insert("app", Value::from(group));
    if i % 2 == 1 {
        fields.insert("odd", Value::from("yes"));
    }
    if group == "openssh" {
        fields.insert("ssh_only", Value::from("x"));
    }
    let mut http = Object::new();
    http.insert("status", Value::Int(if i.is_multiple_of(10) { 500 } else { 200 }));
    fields.insert("http", http.into_value());
    let mut e = Event::from_fields(fields);
    // The three files interleave over 2000 s; seconds apart within a file.
    e.timestamp = BASE + (i as i64) * SEC + g as i64;
    e.identity = Arc::new(Identity::new(group, "web", format!("h{}", i % 3)));
    e.source = Arc::from(format!("/var/log/{group}.log").as_str());
    e
}

fn open(dir: &std::path::Path) -> Arc<Store> {
    let opts = StoreOptions { commit_interval: Duration::from_millis(100), ..StoreOptions::default() };
    Store::open(dir, opts).unwrap()
}

fn ingest(store: &Store, c: &Corpus) {
    let mut events = Vec::new();
    for (g, (group, i, line)) in c.lines.iter().enumerate() {
        events.push(event_of(group, *i, line, g % 3));
    }
    for chunk in events.chunks(1000) {
        store.append(chunk, &mut None).unwrap();
    }
    store.commit().unwrap();
}

fn all() -> Principal {
    Principal::new("admin", vec![SourcePattern::all()])
}

fn search(q: Query, size: usize) -> Search {
    Search { query: q, range: TimeRange::default(), size, search_after: None, fields: None, order: Order::Newest }
}

fn count(store: &Store, p: &Principal, q: Query) -> u64 {
    store.search_sync(p, &search(q, 1)).unwrap().total
}

fn term(f: Option<&str>, v: &str) -> Query {
    Query::Term { field: f.map(String::from), value: v.into() }
}

fn setup() -> (tempfile::TempDir, Arc<Store>, Corpus) {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = load();
    ingest(&store, &c);
    (dir, store, c)
}

#[test]
fn loghub_query_counts_match_independent_counts() {
    let (_d, store, c) = setup();
    let p = all();
    assert_eq!(c.lines.len(), 6000);
    assert_eq!(count(&store, &p, Query::All), 6000);
    let has = |w: &str| c.lines.iter().filter(|(_, _, l)| tokens(l).iter().any(|t| t == w)).count() as u64;
    // `grep -c -i -w` over the three files gives these counts (sshd: grep says
    // 2676, a Unicode-aware word split — the analyser, Python's `\w` — finds 2677).
    for (w, grep) in
        [("error", 642u64), ("sshd", 2676 + 1), ("failure", 987), ("authentication", 1088), ("session", 248)]
    {
        assert_eq!(has(w), grep, "independent count of {w}");
        assert_eq!(count(&store, &p, term(None, w)), grep, "term {w}");
        assert_eq!(count(&store, &p, term(Some("message"), &w.to_uppercase())), grep, "message:{w} upper");
    }
    // Phrases: consecutive tokens.
    let phrase = |a: &str, b: &str| {
        c.lines.iter().filter(|(_, _, l)| tokens(l).windows(2).any(|w| w[0] == a && w[1] == b)).count() as u64
    };
    let q = Query::Phrase { field: None, text: "authentication failure".into() };
    assert_eq!(count(&store, &p, q), phrase("authentication", "failure"));
    assert_eq!(phrase("authentication", "failure"), 986); // grep -c -i -w "authentication failure"
    let q = Query::Phrase { field: None, text: "Invalid user".into() };
    assert_eq!(count(&store, &p, q), phrase("invalid", "user"));
    // A multi-token term is a phrase.
    assert_eq!(count(&store, &p, term(None, "check-pass")), phrase("check", "pass"));
    // Wildcards on tokens.
    let prefix =
        |pre: &str| c.lines.iter().filter(|(_, _, l)| tokens(l).iter().any(|t| t.starts_with(pre))).count() as u64;
    assert_eq!(count(&store, &p, Query::Wildcard { field: None, pattern: "fail*".into() }), prefix("fail"));
    assert!(prefix("fail") > 1000);
    let q = Query::Wildcard { field: None, pattern: "Sess?on".into() };
    assert_eq!(count(&store, &p, q), has("session"));
    // Boolean.
    let both = c
        .lines
        .iter()
        .filter(|(_, _, l)| {
            let t = tokens(l);
            t.contains(&"sshd".into()) && t.contains(&"root".into())
        })
        .count() as u64;
    assert_eq!(count(&store, &p, Query::And(vec![term(None, "sshd"), term(None, "root")])), both);
    let either = c
        .lines
        .iter()
        .filter(|(_, _, l)| {
            let t = tokens(l);
            t.contains(&"error".into()) || t.contains(&"session".into())
        })
        .count() as u64;
    assert_eq!(count(&store, &p, Query::Or(vec![term(None, "error"), term(None, "session")])), either);
    assert_eq!(count(&store, &p, Query::Not(Box::new(term(None, "sshd")))), 6000 - has("sshd"));
    let q = Query::And(vec![term(None, "sshd"), Query::Not(Box::new(term(None, "root")))]);
    assert_eq!(count(&store, &p, q), has("sshd") - both);
    // Keywords are exact and case-sensitive.
    assert_eq!(count(&store, &p, term(Some("@group"), "linux")), 2000);
    assert_eq!(count(&store, &p, term(Some("@group"), "Linux")), 0);
    assert_eq!(count(&store, &p, term(Some("@host"), "h1")), 3 * 667);
    assert_eq!(count(&store, &p, Query::Wildcard { field: Some("@group".into()), pattern: "*ss*".into() }), 2000);
    assert_eq!(count(&store, &p, term(Some("@source"), "/var/log/apache.log")), 2000);
    // Dynamic fields: strings analysed, numbers numeric, booleans.
    assert_eq!(count(&store, &p, term(Some("app"), "APACHE")), 2000);
    assert_eq!(count(&store, &p, term(Some("n"), "5")), 3);
    assert_eq!(count(&store, &p, term(Some("n"), "5.0")), 3);
    assert_eq!(count(&store, &p, term(Some("http.status"), "500")), 600);
    assert_eq!(count(&store, &p, term(Some("flag"), "true")), 3000);
    assert_eq!(count(&store, &p, Query::Wildcard { field: Some("app".into()), pattern: "open*".into() }), 2000);
    assert_eq!(count(&store, &p, Query::Wildcard { field: Some("odd".into()), pattern: "*".into() }), 3000);
    // _exists_.
    assert_eq!(count(&store, &p, Query::Exists { field: "odd".into() }), 3000);
    assert_eq!(count(&store, &p, Query::Exists { field: "http".into() }), 6000);
    assert_eq!(count(&store, &p, Query::Exists { field: "ssh_only".into() }), 2000);
    assert_eq!(count(&store, &p, Query::Exists { field: "message".into() }), 6000);
    assert_eq!(count(&store, &p, Query::Exists { field: "nope".into() }), 0);
    assert_eq!(count(&store, &p, Query::Exists { field: "@group".into() }), 6000);
    // Ranges on numbers.
    let r = |lo: Bound, hi: Bound| Query::Range { field: "n".into(), lower: lo, upper: hi };
    let num = |v: f64| Literal::Number(v);
    assert_eq!(count(&store, &p, r(Bound::Inclusive(num(100.0)), Bound::Inclusive(num(199.0)))), 300);
    assert_eq!(count(&store, &p, r(Bound::Exclusive(num(100.0)), Bound::Exclusive(num(199.0)))), 294);
    assert_eq!(count(&store, &p, r(Bound::Inclusive(num(1990.0)), Bound::Unbounded)), 30);
    assert_eq!(count(&store, &p, r(Bound::Unbounded, Bound::Exclusive(Literal::Text("10".into())))), 30);
    // A range over analysed strings matches nothing.
    let q = Query::Range {
        field: "app".into(),
        lower: Bound::Inclusive(Literal::Text("a".into())),
        upper: Bound::Inclusive(Literal::Text("z".into())),
    };
    assert_eq!(count(&store, &p, q), 0);
    // Keyword ranges are lexicographic.
    let q = Query::Range {
        field: "@group".into(),
        lower: Bound::Inclusive(Literal::Text("b".into())),
        upper: Bound::Exclusive(Literal::Text("m".into())),
    };
    assert_eq!(count(&store, &p, q), 2000);
    // Ranges on @timestamp (RFC 3339 and epoch ms).
    let t = |s: i64| Literal::Text(sluice_core::codec::format_timestamp(BASE + s * SEC));
    let q = Query::Range { field: "@timestamp".into(), lower: Bound::Inclusive(t(0)), upper: Bound::Exclusive(t(10)) };
    assert_eq!(count(&store, &p, q), 30);
    let ms = |s: i64| Literal::Number(((BASE + s * SEC) / 1_000_000) as f64);
    let q = Query::Range { field: "@timestamp".into(), lower: Bound::Inclusive(ms(1990)), upper: Bound::Unbounded };
    assert_eq!(count(&store, &p, q), 30);
    // The request's time range.
    let s = Search {
        query: Query::All,
        range: TimeRange { from_ns: Some(BASE + 100 * SEC), to_ns: Some(BASE + 200 * SEC) },
        size: 10,
        search_after: None,
        fields: None,
        order: Default::default(),
    };
    assert_eq!(store.search_sync(&p, &s).unwrap().total, 300);
}

#[test]
fn pagination_returns_every_hit_once_in_order() {
    let (_d, store, _c) = setup();
    let p = all();
    let mut s = search(term(None, "sshd"), 333);
    let mut seen = HashSet::new();
    let mut last: Option<(i64, u64)> = None;
    let total = count(&store, &p, term(None, "sshd"));
    loop {
        let page = store.search_sync(&p, &s).unwrap();
        assert_eq!(page.total, total);
        for h in &page.hits {
            let ts = sluice_core::codec::parse_timestamp(h.event["@timestamp"].as_str().unwrap()).unwrap();
            let key = (ts, h.id.parse::<u64>().unwrap());
            if let Some(l) = last {
                assert!(key < l, "newest first: {key:?} after {l:?}");
            }
            last = Some(key);
            assert!(seen.insert(h.id.clone()), "hit {} twice", h.id);
        }
        match page.next {
            Some(n) => s.search_after = Some(n),
            None => break,
        }
    }
    assert_eq!(seen.len() as u64, total);
    // Hits have the ndjson shape.
    let page = store.search_sync(&p, &search(Query::All, 1)).unwrap();
    let e = &page.hits[0].event;
    assert_eq!(e["@group"], "linux");
    assert_eq!(e["@subgroup"], "web");
    assert_eq!(e["@source"], "/var/log/linux.log");
    assert_eq!(e["n"], 1999);
    // Field selection keeps the identity keys.
    let mut s = search(Query::All, 1);
    s.fields = Some(vec!["http.status".into()]);
    let e = &store.search_sync(&p, &s).unwrap().hits[0].event;
    assert_eq!(e["http"]["status"], 200);
    assert!(e.get("message").is_none());
    assert_eq!(e["@group"], "linux");
}

fn agg(q: Query, range: TimeRange, aggs: Vec<(&str, Aggregation)>) -> Aggregate {
    Aggregate { query: q, range, aggs: aggs.into_iter().map(|(k, v)| (k.to_string(), v)).collect() }
}

#[test]
fn aggregations_are_exact() {
    let (_d, store, c) = setup();
    let p = all();
    let range = TimeRange { from_ns: Some(BASE), to_ns: Some(BASE + 2000 * SEC) };
    let a = agg(
        Query::All,
        range,
        vec![
            ("h", Aggregation::DateHistogram { interval: None, buckets: Some(60) }),
            ("groups", Aggregation::Terms { field: "@group".into(), size: Some(2) }),
            ("apps", Aggregation::Terms { field: "app".into(), size: None }),
            ("status", Aggregation::Terms { field: "http.status".into(), size: None }),
            ("flags", Aggregation::Terms { field: "flag".into(), size: None }),
            ("n", Aggregation::Stats { field: "n".into() }),
        ],
    );
    let r = store.aggregate_sync(&p, &a).unwrap();
    assert_eq!(r.total, 6000);
    let AggregationResult::DateHistogram { interval_ms, buckets } = &r.aggs["h"] else { panic!() };
    assert_eq!(*interval_ms, 60_000); // 2000 s in <= 60 buckets
    assert!(buckets.len() <= 60);
    assert_eq!(buckets.iter().map(|b| b.count).sum::<u64>(), 6000);
    assert_eq!(buckets[0].key, serde_json::json!((BASE / 1_000_000).div_euclid(60_000) * 60_000));
    let AggregationResult::Terms { buckets, other } = &r.aggs["groups"] else { panic!() };
    assert_eq!(buckets.len(), 2);
    assert!(buckets.iter().all(|b| b.count == 2000));
    assert_eq!(*other, 2000);
    let AggregationResult::Terms { buckets, other } = &r.aggs["apps"] else { panic!() };
    let m: BTreeMap<String, u64> = buckets.iter().map(|b| (b.key.as_str().unwrap().to_string(), b.count)).collect();
    assert_eq!(m, BTreeMap::from([("apache".into(), 2000), ("linux".into(), 2000), ("openssh".into(), 2000)]));
    assert_eq!(*other, 0);
    let AggregationResult::Terms { buckets, .. } = &r.aggs["status"] else { panic!() };
    assert_eq!(buckets[0].key, serde_json::json!(200));
    assert_eq!(buckets[0].count, 5400);
    assert_eq!(buckets[1].key, serde_json::json!(500));
    assert_eq!(buckets[1].count, 600);
    let AggregationResult::Terms { buckets, .. } = &r.aggs["flags"] else { panic!() };
    assert_eq!(buckets.iter().map(|b| b.count).sum::<u64>(), 6000);
    let AggregationResult::Stats(s) = &r.aggs["n"] else { panic!() };
    assert_eq!(s.count, 6000);
    assert_eq!(s.min, Some(0.0));
    assert_eq!(s.max, Some(1999.0));
    assert_eq!(s.sum, 3.0 * (1999.0 * 2000.0 / 2.0));
    assert_eq!(s.avg, Some(999.5));
    // Histogram of a query without a range: buckets still sum to the total.
    let errors = c.lines.iter().filter(|(_, _, l)| tokens(l).contains(&"error".into())).count() as u64;
    let a = agg(
        term(None, "error"),
        TimeRange::default(),
        vec![("h", Aggregation::DateHistogram { interval: Some("1m".into()), buckets: None })],
    );
    let r = store.aggregate_sync(&p, &a).unwrap();
    assert_eq!(r.total, errors);
    let AggregationResult::DateHistogram { buckets, .. } = &r.aggs["h"] else { panic!() };
    assert_eq!(buckets.iter().map(|b| b.count).sum::<u64>(), errors);
}

#[tokio::test]
async fn principal_isolation_on_every_path() {
    use sluice_query::SearchBackend;
    let (_d, store, _c) = setup();
    let apache = Principal::new("a", vec![SourcePattern::new("apache", "*", "*")]);
    let glob = Principal::new("g", vec![SourcePattern::new("open*", "w?b", "h[1]")]);
    let host =
        Principal::new("h", vec![SourcePattern::new("linux", "*", "h2"), SourcePattern::new("apache", "web", "h0")]);
    let nobody = Principal::new("n", vec![]);
    assert_eq!(store.search(&apache, &search(Query::All, 10)).await.unwrap().total, 2000);
    let page = store.search(&apache, &search(Query::All, 10_000)).await.unwrap();
    assert!(page.hits.iter().all(|h| h.event["@group"] == "apache"));
    assert_eq!(store.search(&glob, &search(Query::All, 10)).await.unwrap().total, 0); // `[` is literal
    assert_eq!(store.search(&host, &search(Query::All, 10)).await.unwrap().total, 666 + 667);
    assert_eq!(store.search(&nobody, &search(Query::All, 10)).await.unwrap().total, 0);
    // Even a query naming another group sees nothing of it.
    assert_eq!(store.search(&apache, &search(term(Some("@group"), "openssh"), 10)).await.unwrap().total, 0);
    // Aggregations.
    let a = agg(
        Query::All,
        TimeRange::default(),
        vec![
            ("g", Aggregation::Terms { field: "@group".into(), size: None }),
            ("h", Aggregation::DateHistogram { interval: None, buckets: None }),
        ],
    );
    let r = store.aggregate(&apache, &a).await.unwrap();
    assert_eq!(r.total, 2000);
    let AggregationResult::Terms { buckets, other } = &r.aggs["g"] else { panic!() };
    assert_eq!(buckets.len(), 1);
    assert_eq!(buckets[0].key, "apache");
    assert_eq!(*other, 0);
    let r = store.aggregate(&nobody, &a).await.unwrap();
    assert_eq!(r.total, 0);
    // Fields.
    let f = store.fields(&apache, &TimeRange::default()).await.unwrap();
    assert!(f.iter().any(|f| f.name == "http.status"));
    assert!(!f.iter().any(|f| f.name == "ssh_only"), "apache must not see openssh-only fields");
    let f = store.fields(&all(), &TimeRange::default()).await.unwrap();
    assert!(f.iter().any(|f| f.name == "ssh_only"));
    assert!(store.fields(&nobody, &TimeRange::default()).await.unwrap().is_empty());
    // Tail.
    let mut rx = store.tail(&apache, &Query::All).await.unwrap();
    let mut rx_all = store.tail(&all(), &Query::All).await.unwrap();
    let evs: Vec<Event> = ["apache", "openssh", "linux", "apache"]
        .iter()
        .enumerate()
        .map(|(i, g)| event_of(g, 5000 + i, "tail me", 0))
        .collect();
    store.append(&evs, &mut None).unwrap();
    store.commit().unwrap();
    let mut got = Vec::new();
    while let Ok(h) = rx.try_recv() {
        got.push(h.event["@group"].as_str().unwrap().to_string());
    }
    assert_eq!(got, vec!["apache", "apache"]);
    let mut n = 0;
    while rx_all.try_recv().is_ok() {
        n += 1;
    }
    assert_eq!(n, 4);
}

/// The background commit (every `commit_interval`, 1 s by default) makes an
/// appended event searchable with no explicit `commit()`. The outcome is
/// asserted, not the speed: a generous deadline (a store that never commits
/// fails), the exact count, and how long it took printed.
#[test]
fn new_events_become_searchable_without_an_explicit_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap(); // commit_interval 1s
    assert_eq!(count(&store, &all(), term(None, "needle")), 0);
    let mut e = Event::from_message("fresh needle");
    e.identity = Arc::new(Identity::new("g", "s", "h"));
    store.append(&[e], &mut None).unwrap();
    let t0 = std::time::Instant::now();
    while count(&store, &all(), term(None, "needle")) == 0 {
        assert!(t0.elapsed() < Duration::from_secs(60), "not searchable 60 s after the append (no background commit)");
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("searchable after {:?} (commit_interval 1 s)", t0.elapsed());
    assert_eq!(count(&store, &all(), term(None, "needle")), 1);
}

// ---------------------------------------------------------------------------
// Issue #26: the planned paths (segments in time order with early
// termination, one pass per segment for aggregations, terms by ordinal, the
// result cache) answer exactly what the reference evaluation answers.

/// Time of line `i`: pairs of lines share a second, and the three files
/// share it too (six events per timestamp: ties broken by `_seq`), spread
/// over 10,000 s so that hourly partitions hold 2–3 hours.
fn spread_ts(i: usize) -> i64 {
    BASE + ((i * 37) % 2000 / 2) as i64 * 10 * SEC
}

/// The corpus in an hourly-partitioned store, in many segments: two thirds
/// in time order (segments with disjoint time ranges), the rest in
/// scrambled order (segments overlapping everything).
fn setup_segmented(cache_bytes: usize) -> (tempfile::TempDir, Arc<Store>, Corpus, Vec<Event>) {
    let dir = tempfile::tempdir().unwrap();
    let opts = StoreOptions {
        partition: PartitionSpan::Hour,
        commit_interval: Duration::from_secs(3600),
        result_cache_bytes: cache_bytes,
        ..StoreOptions::default()
    };
    let store = Store::open(dir.path(), opts).unwrap();
    let c = load();
    let mut events: Vec<Event> = c
        .lines
        .iter()
        .map(|(group, i, line)| {
            let mut e = event_of(group, *i, line, 0);
            e.timestamp = spread_ts(*i);
            // The last but one token: 700-odd distinct values.
            let t = tokens(line);
            if let Some(w) = t.len().checked_sub(2).and_then(|i| t.get(i)) {
                e.fields_mut().insert("word", Value::from(w.as_str()));
            }
            e
        })
        .collect();
    let (ordered, scrambled) = events.split_at_mut(4000);
    ordered.sort_by_key(|e| e.timestamp);
    for chunk in ordered.chunks(250).chain(scrambled.chunks(500)) {
        store.append(chunk, &mut None).unwrap();
        store.commit().unwrap();
    }
    (dir, store, c, events)
}

fn principals() -> Vec<Principal> {
    vec![
        all(),
        Principal::new("a", vec![SourcePattern::new("apache", "*", "*")]),
        Principal::new("h", vec![SourcePattern::new("linux", "*", "h2"), SourcePattern::new("open*", "web", "h0")]),
        Principal::new("n", vec![]),
    ]
}

fn suite_queries() -> Vec<Query> {
    let num = |v: f64| Literal::Number(v);
    vec![
        Query::All,
        term(None, "error"),
        term(None, "sshd"),
        Query::Phrase { field: None, text: "authentication failure".into() },
        Query::Wildcard { field: None, pattern: "fail*".into() },
        Query::And(vec![term(None, "sshd"), term(None, "root")]),
        Query::Or(vec![term(None, "error"), term(None, "session")]),
        Query::Not(Box::new(term(None, "sshd"))),
        term(Some("@group"), "linux"),
        term(Some("app"), "apache"),
        term(Some("http.status"), "500"),
        term(Some("flag"), "true"),
        Query::Exists { field: "odd".into() },
        Query::Range { field: "n".into(), lower: Bound::Inclusive(num(100.0)), upper: Bound::Inclusive(num(199.0)) },
        term(None, "nosuchword"),
    ]
}

fn ranges() -> Vec<TimeRange> {
    let at = |s: i64| Some(BASE + s * SEC);
    vec![
        TimeRange::default(),
        TimeRange { from_ns: at(0), to_ns: at(10_000) },
        TimeRange { from_ns: at(1234), to_ns: at(7777) },
        TimeRange { from_ns: at(3000), to_ns: at(3100) },
        TimeRange { from_ns: at(2500), to_ns: None },
        TimeRange { from_ns: None, to_ns: at(4000) },
    ]
}

/// A response without its timing.
fn untimed_search(mut r: sluice_query::SearchResponse) -> sluice_query::SearchResponse {
    r.took_ms = 0;
    r
}

fn untimed_agg(r: Result<sluice_query::AggregateResponse, sluice_query::BackendError>) -> String {
    match r {
        Ok(mut r) => {
            r.took_ms = 0;
            format!("{r:?}")
        }
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn issue_26_planned_search_equals_reference_with_paging_both_orders() {
    let (_d, store, _c, _) = setup_segmented(64 << 20);
    assert!(store.partitions().len() >= 3, "{:?}", store.partitions());
    let mut pages = 0;
    for p in principals() {
        for q in suite_queries() {
            for range in ranges() {
                for order in [Order::Newest, Order::Oldest] {
                    for size in [1, 7, 333] {
                        let mut s = Search { query: q.clone(), range, size, search_after: None, fields: None, order };
                        // Every page of small sizes would be slow in debug builds: the first four.
                        for _ in 0..4 {
                            let want = untimed_search(reference::search(&store, &p, &s).unwrap());
                            let got = untimed_search(store.search_sync(&p, &s).unwrap());
                            assert_eq!(got, want, "{} {q:?} {range:?} {order:?} size {size}", p.name);
                            // Again: now partly from the result cache.
                            let again = untimed_search(store.search_sync(&p, &s).unwrap());
                            assert_eq!(again, want, "cached: {} {q:?} {range:?} {order:?} size {size}", p.name);
                            pages += 1;
                            match want.next {
                                Some(n) => s.search_after = Some(n),
                                None => break,
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(pages > 2000, "{pages}");
}

#[test]
fn issue_26_oldest_first_pages_every_hit_once_in_ascending_order() {
    let (_d, store, _c, events) = setup_segmented(64 << 20);
    let mut s = Search {
        query: term(None, "sshd"),
        range: TimeRange::default(),
        size: 97,
        search_after: None,
        fields: None,
        order: Order::Oldest,
    };
    let want = events.iter().filter(|e| e.message().is_some_and(|m| tokens(m).contains(&"sshd".into()))).count();
    let mut seen = HashSet::new();
    let mut last: Option<(i64, u64)> = None;
    loop {
        let page = store.search_sync(&all(), &s).unwrap();
        assert_eq!(page.total as usize, want);
        for h in &page.hits {
            let ts = sluice_core::codec::parse_timestamp(h.event["@timestamp"].as_str().unwrap()).unwrap();
            let key = (ts, h.id.parse::<u64>().unwrap());
            assert!(last.is_none_or(|l| key > l), "oldest first: {key:?} after {last:?}");
            last = Some(key);
            assert!(seen.insert(h.id.clone()), "hit {} twice", h.id);
        }
        match page.next {
            Some(n) => s.search_after = Some(n),
            None => break,
        }
    }
    assert_eq!(seen.len(), want);
}

fn suite_aggs() -> BTreeMap<String, Aggregation> {
    let t = |f: &str, size| Aggregation::Terms { field: f.into(), size };
    [
        ("auto", Aggregation::DateHistogram { interval: None, buckets: None }),
        ("minute", Aggregation::DateHistogram { interval: Some("1m".into()), buckets: None }),
        ("groups", t("@group", Some(2))),
        ("hosts", t("@host", None)),
        ("apps", t("app", None)),
        ("status", t("http.status", None)),
        ("flags", t("flag", None)),
        ("numbers", t("n", Some(5))),
        ("words", t("word", Some(10))),
        ("words_all", t("word", Some(100_000))),
        ("none", t("word", Some(0))),
        ("missing", t("nosuchfield", None)),
        ("n", Aggregation::Stats { field: "n".into() }),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

#[test]
fn issue_26_planned_aggregations_equal_reference() {
    let (_d, store, _c, _) = setup_segmented(64 << 20);
    for p in principals() {
        for q in suite_queries() {
            for range in ranges() {
                let a = Aggregate { query: q.clone(), range, aggs: suite_aggs() };
                let want = untimed_agg(reference::aggregate(&store, &p, &a));
                assert_eq!(untimed_agg(store.aggregate_sync(&p, &a)), want, "{} {q:?} {range:?}", p.name);
                assert_eq!(untimed_agg(store.aggregate_sync(&p, &a)), want, "cached: {} {q:?} {range:?}", p.name);
                // One aggregation alone reads other cache entries than all together.
                for (name, one) in suite_aggs() {
                    let a = Aggregate { query: q.clone(), range, aggs: BTreeMap::from([(name, one)]) };
                    let want = untimed_agg(reference::aggregate(&store, &p, &a));
                    assert_eq!(untimed_agg(store.aggregate_sync(&p, &a)), want, "{} {q:?} {range:?} {a:?}", p.name);
                }
            }
        }
    }
    // Errors are the reference's errors.
    let a = Aggregate {
        query: Query::All,
        range: TimeRange::default(),
        aggs: BTreeMap::from([(
            "s".to_string(),
            Aggregation::DateHistogram { interval: Some("100ms".into()), buckets: None },
        )]),
    };
    let e = untimed_agg(store.aggregate_sync(&all(), &a));
    assert!(e.starts_with("error: s: interval 100ms gives"), "{}", &e[..e.len().min(300)]);
    assert_eq!(e, untimed_agg(reference::aggregate(&store, &all(), &a)));
}

/// Top `size` of (value, count) by count descending then value, and the rest.
fn brute_top<K: Ord + Clone>(counts: &BTreeMap<K, u64>, size: usize) -> (Vec<(K, u64)>, u64) {
    let mut v: Vec<(K, u64)> = counts.iter().map(|(k, n)| (k.clone(), *n)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let other = v.iter().skip(size).map(|x| x.1).sum();
    v.truncate(size);
    (v, other)
}

#[test]
fn issue_26_high_cardinality_terms_equal_brute_force_counts() {
    let (_d, store, _c, events) = setup_segmented(64 << 20);
    let range = TimeRange { from_ns: Some(BASE + 1234 * SEC), to_ns: Some(BASE + 7777 * SEC) };
    let apache = Principal::new("a", vec![SourcePattern::new("apache", "*", "*")]);
    for p in [all(), apache] {
        let visible: Vec<&Event> = events
            .iter()
            .filter(|e| p.may_read(&e.identity))
            .filter(|e| range.from_ns.is_none_or(|f| e.timestamp >= f) && range.to_ns.is_none_or(|t| e.timestamp < t))
            .collect();
        let mut words: BTreeMap<String, u64> = BTreeMap::new();
        let mut numbers: BTreeMap<i64, u64> = BTreeMap::new();
        for e in &visible {
            if let Some(w) = e.fields().get("word").and_then(Value::as_str) {
                *words.entry(w.to_string()).or_default() += 1;
            }
            if let Some(Value::Int(n)) = e.fields().get("n") {
                *numbers.entry(*n).or_default() += 1;
            }
        }
        if p.name == "admin" {
            assert!(words.len() > 300, "{} distinct words", words.len());
        }
        let a = Aggregate {
            query: Query::All,
            range,
            aggs: BTreeMap::from([
                ("w".to_string(), Aggregation::Terms { field: "word".into(), size: Some(10) }),
                ("n".to_string(), Aggregation::Terms { field: "n".into(), size: Some(10) }),
            ]),
        };
        for pass in ["computed", "cached"] {
            let r = store.aggregate_sync(&p, &a).unwrap();
            assert_eq!(r.total, visible.len() as u64, "{pass}");
            let AggregationResult::Terms { buckets, other } = &r.aggs["w"] else { panic!() };
            let got: Vec<(String, u64)> =
                buckets.iter().map(|b| (b.key.as_str().unwrap().to_string(), b.count)).collect();
            assert_eq!((got, *other), brute_top(&words, 10), "{pass} {}", p.name);
            let AggregationResult::Terms { buckets, other } = &r.aggs["n"] else { panic!() };
            let got: Vec<(i64, u64)> = buckets.iter().map(|b| (b.key.as_i64().unwrap(), b.count)).collect();
            assert_eq!((got, *other), brute_top(&numbers, 10), "{pass} {}", p.name);
        }
    }
}

fn counter(store: &Store, name: &str) -> u64 {
    use sluice_query::SearchBackend;
    store.counters().into_iter().find(|(n, _)| *n == name).map(|(_, v)| v).unwrap()
}

const HITS: &str = "sluice_store_result_cache_hits_total";
const MISSES: &str = "sluice_store_result_cache_misses_total";

fn terms_of(r: &sluice_query::AggregateResponse, name: &str) -> BTreeMap<String, u64> {
    let AggregationResult::Terms { buckets, .. } = &r.aggs[name] else { panic!() };
    buckets.iter().map(|b| (b.key.as_str().unwrap().to_string(), b.count)).collect()
}

#[test]
fn issue_26_cached_results_are_invalidated_by_new_data() {
    let (_d, store, _c, _) = setup_segmented(64 << 20);
    let p = all();
    let a = Aggregate {
        query: Query::All,
        range: TimeRange::default(),
        aggs: BTreeMap::from([
            ("apps".to_string(), Aggregation::Terms { field: "app".into(), size: None }),
            ("h".to_string(), Aggregation::DateHistogram { interval: Some("10m".into()), buckets: None }),
        ]),
    };
    let newest = search(Query::Wildcard { field: Some("app".into()), pattern: "*".into() }, 3);
    let first = store.aggregate_sync(&p, &a).unwrap();
    assert_eq!(first.total, 6000);
    let page = store.search_sync(&p, &newest).unwrap();
    let h0 = counter(&store, HITS);
    assert_eq!(untimed_agg(Ok(store.aggregate_sync(&p, &a).unwrap())), untimed_agg(Ok(first.clone())));
    assert_eq!(untimed_search(store.search_sync(&p, &newest).unwrap()), untimed_search(page.clone()));
    assert!(counter(&store, HITS) > h0, "the same requests again are answered from the cache");
    // New events: 30 apache events in the middle of the time range, and one
    // newer than everything.
    let mut new: Vec<Event> = (0..30)
        .map(|i| {
            let mut e = event_of("apache", 5000 + i, "fresh apache line", 0);
            e.timestamp = BASE + 4321 * SEC;
            e
        })
        .collect();
    let mut newest_event = event_of("linux", 9999, "the newest line", 0);
    newest_event.timestamp = BASE + 20_000 * SEC;
    new.push(newest_event);
    store.append(&new, &mut None).unwrap();
    store.commit().unwrap();
    let after = store.aggregate_sync(&p, &a).unwrap();
    assert_eq!(after.total, 6031);
    let (before_apps, after_apps) = (terms_of(&first, "apps"), terms_of(&after, "apps"));
    assert_eq!(after_apps["apache"], before_apps["apache"] + 30);
    assert_eq!(after_apps["linux"], before_apps["linux"] + 1);
    assert_eq!(untimed_agg(Ok(after)), untimed_agg(reference::aggregate(&store, &p, &a)));
    let page = store.search_sync(&p, &newest).unwrap();
    assert_eq!(page.total, 6031);
    assert_eq!(page.hits[0].event["message"], "the newest line");
    assert_eq!(untimed_search(page), untimed_search(reference::search(&store, &p, &newest).unwrap()));
}

#[test]
fn issue_26_cached_results_never_cross_principals() {
    let (_d, store, _c, _) = setup_segmented(64 << 20);
    let wide = Principal::new("wide", vec![SourcePattern::all()]);
    let narrow = Principal::new("narrow", vec![SourcePattern::new("apache", "*", "*")]);
    let a = Aggregate {
        query: Query::All,
        range: TimeRange::default(),
        aggs: BTreeMap::from([("g".to_string(), Aggregation::Terms { field: "@group".into(), size: None })]),
    };
    let wide_r = store.aggregate_sync(&wide, &a).unwrap();
    assert_eq!(untimed_agg(Ok(store.aggregate_sync(&wide, &a).unwrap())), untimed_agg(Ok(wide_r.clone())));
    let (h0, m0) = (counter(&store, HITS), counter(&store, MISSES));
    let narrow_r = store.aggregate_sync(&narrow, &a).unwrap();
    assert_eq!(wide_r.total, 6000);
    assert_eq!(terms_of(&wide_r, "g").len(), 3);
    assert_eq!(narrow_r.total, 2000);
    assert_eq!(terms_of(&narrow_r, "g"), BTreeMap::from([("apache".to_string(), 2000)]));
    assert_eq!(counter(&store, HITS), h0, "nothing of the other principal's entries is served");
    assert!(counter(&store, MISSES) > m0);
    // Its own entries are served to it next time, with its own answer.
    let h1 = counter(&store, HITS);
    assert_eq!(untimed_agg(Ok(store.aggregate_sync(&narrow, &a).unwrap())), untimed_agg(Ok(narrow_r)));
    assert!(counter(&store, HITS) > h1);
    // Searches too: the narrow principal's newest page holds only its events.
    let s = search(Query::Exists { field: "app".into() }, 50);
    let wide_page = store.search_sync(&wide, &s).unwrap();
    assert_eq!(untimed_search(store.search_sync(&wide, &s).unwrap()), untimed_search(wide_page.clone()));
    assert!(wide_page.hits.iter().any(|h| h.event["@group"] != "apache"));
    let h2 = counter(&store, HITS);
    let narrow_page = store.search_sync(&narrow, &s).unwrap();
    assert_eq!(counter(&store, HITS), h2);
    assert_eq!(narrow_page.total, 2000);
    assert!(narrow_page.hits.iter().all(|h| h.event["@group"] == "apache"));
}

#[test]
fn issue_26_a_sliding_window_reuses_the_segments_inside_it() {
    let (_d, store, _c, _) = setup_segmented(64 << 20);
    let p = all();
    let aggs = BTreeMap::from([
        ("h".to_string(), Aggregation::DateHistogram { interval: Some("1m".into()), buckets: None }),
        ("w".to_string(), Aggregation::Terms { field: "word".into(), size: Some(10) }),
    ]);
    let mut hits = counter(&store, HITS);
    for step in 0..4 {
        let range =
            TimeRange { from_ns: Some(BASE + (1000 + step * 60) * SEC), to_ns: Some(BASE + (8000 + step * 60) * SEC) };
        let a = Aggregate { query: Query::All, range, aggs: aggs.clone() };
        assert_eq!(untimed_agg(store.aggregate_sync(&p, &a)), untimed_agg(reference::aggregate(&store, &p, &a)));
        let now = counter(&store, HITS);
        if step > 0 {
            assert!(now > hits, "step {step}: segments inside both windows come from the cache");
        }
        hits = now;
    }
}

#[test]
fn issue_26_result_cache_off_computes_everything_and_counts_nothing() {
    let (_d, store, _c, _) = setup_segmented(0);
    let a = Aggregate { query: Query::All, range: TimeRange::default(), aggs: suite_aggs() };
    let want = untimed_agg(reference::aggregate(&store, &all(), &a));
    for _ in 0..2 {
        assert_eq!(untimed_agg(store.aggregate_sync(&all(), &a)), want);
    }
    assert_eq!((counter(&store, HITS), counter(&store, MISSES)), (0, 0));
}

/// Issue 22 item 3: the field list comes from the data in range, not from a
/// sample of the newest events: `block_id`, on 1,200 older events of one
/// source, is listed although 1,500 newer events of another source lack it.
#[test]
fn fields_come_from_every_event_in_range() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut events = Vec::new();
    for i in 0..2700usize {
        let hdfs = i < 1200;
        let mut fields = Object::new();
        fields.insert("message", Value::from(format!("line {i}")));
        if hdfs {
            fields.insert("block_id", Value::from(format!("blk_{i}")));
        } else {
            fields.insert("pid", Value::Int(i as i64));
        }
        let mut e = Event::from_fields(fields);
        e.timestamp = BASE + (i as i64) * SEC;
        e.identity = Arc::new(Identity::new(if hdfs { "hdfs" } else { "web" }, "", "h1"));
        events.push(e);
    }
    store.append(&events, &mut None).unwrap();
    store.commit().unwrap();
    let names = |f: Vec<sluice_query::FieldInfo>| f.into_iter().map(|f| f.name).collect::<Vec<_>>();
    let f = names(store.fields_sync(&all(), &TimeRange::default()).unwrap());
    assert!(f.contains(&"block_id".to_string()), "{f:?}");
    assert!(f.contains(&"pid".to_string()), "{f:?}");
    assert!(f.contains(&"message".to_string()), "{f:?}");
    assert!(f.contains(&"@group".to_string()), "{f:?}");
    // The range decides: the newer 1,500 events only have no block_id.
    let newer = TimeRange { from_ns: Some(BASE + 1200 * SEC), to_ns: None };
    let f = names(store.fields_sync(&all(), &newer).unwrap());
    assert!(!f.contains(&"block_id".to_string()), "{f:?}");
    assert!(f.contains(&"pid".to_string()), "{f:?}");
    // And the principal: web's reader never sees hdfs's fields.
    let web = Principal::new("web", vec![SourcePattern::new("web", "*", "*")]);
    let f = names(store.fields_sync(&web, &TimeRange::default()).unwrap());
    assert!(!f.contains(&"block_id".to_string()), "{f:?}");
    assert!(f.contains(&"pid".to_string()), "{f:?}");
    let hdfs = Principal::new("hdfs", vec![SourcePattern::new("hdfs", "*", "*")]);
    let f = names(store.fields_sync(&hdfs, &newer).unwrap());
    assert!(f.is_empty(), "no hdfs event in range: {f:?}");
}
