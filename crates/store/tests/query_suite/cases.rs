//! The cases every backend must pass: hit counts equal counts computed
//! independently over the same loghub lines; pagination; aggregations;
//! principal isolation on every path; the field list. Each takes a fresh
//! [`Engine`] (embedded store or OpenSearch).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use sluice_core::{Event, Identity, Object, Value};
use sluice_query::api::Search;
use sluice_query::{Aggregation, AggregationResult, Bound, Literal, Principal, Query, SourcePattern, TimeRange};

use super::corpus::{agg, all, event_of, search, term, tokens, BASE, SEC};
use super::engine::{count, setup, Engine};

pub fn loghub_query_counts_match_independent_counts(store: Engine) {
    let (store, c) = setup(store);
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
        sort: None,
    };
    assert_eq!(store.search_sync(&p, &s).unwrap().total, 300);
}

pub fn pagination_returns_every_hit_once_in_order(store: Engine) {
    let (store, _c) = setup(store);
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

pub fn aggregations_are_exact(store: Engine) {
    let (store, c) = setup(store);
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
    // Ties by value ascending (docs/query-semantics.md).
    assert_eq!((&buckets[0].key, &buckets[1].key), (&serde_json::json!("apache"), &serde_json::json!("linux")));
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

pub fn principal_isolation_on_every_path(store: Engine) {
    let (store, _c) = setup(store);
    let apache = Principal::new("a", vec![SourcePattern::new("apache", "*", "*")]);
    let glob = Principal::new("g", vec![SourcePattern::new("open*", "w?b", "h[1]")]);
    let host =
        Principal::new("h", vec![SourcePattern::new("linux", "*", "h2"), SourcePattern::new("apache", "web", "h0")]);
    let nobody = Principal::new("n", vec![]);
    assert_eq!(store.search_sync(&apache, &search(Query::All, 10)).unwrap().total, 2000);
    let page = store.search_sync(&apache, &search(Query::All, 10_000)).unwrap();
    assert!(page.hits.iter().all(|h| h.event["@group"] == "apache"));
    assert_eq!(store.search_sync(&glob, &search(Query::All, 10)).unwrap().total, 0); // `[` is literal
    assert_eq!(store.search_sync(&host, &search(Query::All, 10)).unwrap().total, 666 + 667);
    assert_eq!(store.search_sync(&nobody, &search(Query::All, 10)).unwrap().total, 0);
    // Even a query naming another group sees nothing of it.
    assert_eq!(store.search_sync(&apache, &search(term(Some("@group"), "openssh"), 10)).unwrap().total, 0);
    // Aggregations.
    let a = agg(
        Query::All,
        TimeRange::default(),
        vec![
            ("g", Aggregation::Terms { field: "@group".into(), size: None }),
            ("h", Aggregation::DateHistogram { interval: None, buckets: None }),
        ],
    );
    let r = store.aggregate_sync(&apache, &a).unwrap();
    assert_eq!(r.total, 2000);
    let AggregationResult::Terms { buckets, other } = &r.aggs["g"] else { panic!() };
    assert_eq!(buckets.len(), 1);
    assert_eq!(buckets[0].key, "apache");
    assert_eq!(*other, 0);
    let r = store.aggregate_sync(&nobody, &a).unwrap();
    assert_eq!(r.total, 0);
    // Fields.
    let f = store.fields_sync(&apache, &TimeRange::default()).unwrap();
    assert!(f.iter().any(|f| f.name == "http.status"));
    assert!(!f.iter().any(|f| f.name == "ssh_only"), "apache must not see openssh-only fields");
    let f = store.fields_sync(&all(), &TimeRange::default()).unwrap();
    assert!(f.iter().any(|f| f.name == "ssh_only"));
    assert!(store.fields_sync(&nobody, &TimeRange::default()).unwrap().is_empty());
    // Tail.
    let mut rx = store.tail_sync(&apache, &Query::All).unwrap();
    let mut rx_all = store.tail_sync(&all(), &Query::All).unwrap();
    let evs: Vec<Event> = ["apache", "openssh", "linux", "apache"]
        .iter()
        .enumerate()
        .map(|(i, g)| event_of(g, 5000 + i, "tail me", 0))
        .collect();
    store.append(&evs);
    // In order: a leaked openssh or linux event would come before the second apache one.
    let got: Vec<String> =
        store.recv(&mut rx, 2).iter().map(|h| h.event["@group"].as_str().unwrap().to_string()).collect();
    assert_eq!(got, vec!["apache", "apache"]);
    assert_eq!(store.recv(&mut rx_all, 4).len(), 4);
}

/// Issue 22 item 3: the field list comes from the data in range, not from a
/// sample of the newest events: `block_id`, on 1,200 older events of one
/// source, is listed although 1,500 newer events of another source lack it.
pub fn fields_come_from_every_event_in_range(store: Engine) {
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
    store.append(&events);
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

/// Issue #20: no query text widens the principal's filter — OR with
/// everything, wildcards and terms on identity fields, metadata field
/// names, `_exists_` of another group's field, aggregations over the
/// identity fields.
pub fn principal_filter_cannot_be_widened(store: Engine) {
    let (store, _c) = setup(store);
    let apache = Principal::new("a", vec![SourcePattern::new("apache", "*", "*")]);
    let wide = [
        Query::Or(vec![Query::All, term(Some("@group"), "openssh")]),
        Query::Or(vec![term(None, "sshd"), Query::Not(Box::new(term(None, "sshd")))]),
        Query::Wildcard { field: Some("@group".into()), pattern: "*".into() },
        Query::Wildcard { field: Some("@group".into()), pattern: "open*".into() },
        term(Some("_index"), "*"),
        Query::Wildcard { field: Some("_index".into()), pattern: "*".into() },
        Query::Not(term(Some("@group"), "apache").into()),
        Query::Exists { field: "ssh_only".into() },
        term(None, "sshd"),
    ];
    for q in wide {
        let page = store.search_sync(&apache, &search(q.clone(), 10_000)).unwrap();
        assert!(page.total <= 2000, "{q}: {}", page.total);
        assert!(page.hits.iter().all(|h| h.event["@group"] == "apache"), "{q}");
        let a = agg(
            q.clone(),
            TimeRange::default(),
            vec![("g", Aggregation::Terms { field: "@group".into(), size: None })],
        );
        let r = store.aggregate_sync(&apache, &a).unwrap();
        let AggregationResult::Terms { buckets, other } = &r.aggs["g"] else { panic!() };
        assert!(buckets.iter().all(|b| b.key == "apache"), "{q}: {buckets:?}");
        assert_eq!(*other, 0);
        assert_eq!(r.total, page.total, "{q}");
    }
    // Everything apache may read, and nothing more.
    let q = Query::Or(vec![Query::All, term(Some("@group"), "openssh")]);
    assert_eq!(store.search_sync(&apache, &search(q, 1)).unwrap().total, 2000);
    assert_eq!(count(&store, &apache, Query::Exists { field: "ssh_only".into() }), 0);
    assert_eq!(count(&store, &apache, term(None, "sshd")), 0);
}

/// Words split on every character that is not a letter or digit (issue
/// #20: OpenSearch's standard tokenizer keeps `pam_unix` and
/// `1.hinet-ip.hinet.net` together; the `sluice_text` analyser must not).
pub fn words_split_on_every_non_alphanumeric_character(store: Engine) {
    let (store, c) = setup(store);
    let p = all();
    let has = |w: &str| c.lines.iter().filter(|(_, _, l)| tokens(l).iter().any(|t| t == w)).count() as u64;
    for w in ["pam", "unix", "hinet", "net", "rhost"] {
        assert!(has(w) > 0, "{w} is in the corpus");
        assert_eq!(count(&store, &p, term(None, w)), has(w), "term {w}");
    }
}

/// Hits sorted by a field (issue #22): exact order over every page — by
/// value, events without the field last, ties newest first — the same on
/// every backend.
pub fn sort_by_field_pages_in_exact_order(store: Engine) {
    let (store, c) = setup(store);
    let p = all();
    let events = super::corpus::corpus_events(&c);
    // (group, n, ts) of each event, as the hits show them.
    let row = |h: &sluice_query::Hit| {
        let e = &h.event;
        let ts = sluice_core::codec::parse_timestamp(e["@timestamp"].as_str().unwrap()).unwrap();
        (e["@group"].as_str().unwrap().to_string(), e["n"].as_i64().unwrap(), ts)
    };
    let all_pages = |mut s: Search| {
        let mut out = Vec::new();
        loop {
            let page = store.search_sync(&p, &s).unwrap();
            out.extend(page.hits.iter().map(row));
            match page.next {
                Some(n) => s.search_after = Some(n),
                None => return (page.total, out),
            }
        }
    };
    let sorted = |q: Query, field: &str, desc: bool, size: usize| {
        let mut s = search(q, size);
        s.sort = Some(sluice_query::SortBy { field: field.into(), desc });
        s
    };
    // Line i of a file is the event with n = i.
    let rows: Vec<(String, i64, i64)> =
        c.lines.iter().zip(&events).map(|((g, i, _), e)| (g.clone(), *i as i64, e.timestamp)).collect();
    // `n` descending over all 6000 events in pages of 700: n desc, then newest first.
    let mut want = rows.clone();
    want.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)));
    let (total, got) = all_pages(sorted(Query::All, "n", true, 700));
    assert_eq!(total, 6000);
    assert_eq!(got.len(), 6000);
    assert_eq!(got, want);
    // Ascending, a query, a small page: the first ten of apache by n.
    let (total, got) = all_pages(sorted(term(Some("app"), "apache"), "n", false, 3));
    assert_eq!(total, 2000);
    let firsts: Vec<i64> = got.iter().take(10).map(|r| r.1).collect();
    assert_eq!(firsts, (0..10).collect::<Vec<_>>());
    // `odd` (a string on odd lines only), both directions: the events
    // without it last, newest first, on every page.
    for desc in [false, true] {
        let (total, got) = all_pages(sorted(term(Some("app"), "apache"), "odd", desc, 150));
        assert_eq!(total, 2000);
        let mut want: Vec<_> = rows.iter().filter(|r| r.0 == "apache").cloned().collect();
        want.sort_by(|a, b| (a.1 % 2 == 0).cmp(&(b.1 % 2 == 0)).then(b.2.cmp(&a.2)));
        assert_eq!(got, want, "odd desc={desc}");
    }
    // A string field: groups in byte order, newest first within each.
    let (_, got) = all_pages(sorted(Query::All, "app", false, 2500));
    let groups: Vec<&str> = [0, 1999, 2000, 3999, 4000, 5999].iter().map(|&i| got[i].0.as_str()).collect();
    assert_eq!(groups, ["apache", "apache", "linux", "linux", "openssh", "openssh"]);
    assert_eq!((got[0].1, got[1999].1), (1999, 0));
    // Full-text `message` cannot be sorted by.
    let e = store.search_sync(&p, &sorted(Query::All, "message", false, 10)).unwrap_err();
    assert_eq!(e.to_string(), "sort: message is a full-text field");
}
