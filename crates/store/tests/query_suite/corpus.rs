//! The corpus (loghub samples as events) and the helpers every case uses.

use std::sync::Arc;

use sluice_core::{Event, Identity, Object, Value};
use sluice_query::api::{Aggregate, Search};
use sluice_query::{Aggregation, Order, Principal, Query, SourcePattern, TimeRange};

pub const BASE: i64 = 1_700_000_000_000_000_000; // 2023-11-14T22:13:20Z
pub const SEC: i64 = 1_000_000_000;
const FILES: [(&str, &str); 3] =
    [("apache", "Apache/Apache_2k.log"), ("openssh", "OpenSSH/OpenSSH_2k.log"), ("linux", "Linux/Linux_2k.log")];

pub struct Corpus {
    /// (group, line index, line)
    pub lines: Vec<(String, usize, String)>,
}

pub fn load() -> Corpus {
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

pub fn tokens(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty() && t.len() <= 40).map(str::to_lowercase).collect()
}

pub fn event_of(group: &str, i: usize, line: &str, g: usize) -> Event {
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

/// The corpus as events, in the order every engine receives them.
pub fn corpus_events(c: &Corpus) -> Vec<Event> {
    c.lines.iter().enumerate().map(|(g, (group, i, line))| event_of(group, *i, line, g % 3)).collect()
}

pub fn all() -> Principal {
    Principal::new("admin", vec![SourcePattern::all()])
}

pub fn search(q: Query, size: usize) -> Search {
    Search {
        query: q,
        range: TimeRange::default(),
        size,
        search_after: None,
        fields: None,
        order: Order::Newest,
        sort: None,
    }
}

pub fn term(f: Option<&str>, v: &str) -> Query {
    Query::Term { field: f.map(String::from), value: v.into() }
}

pub fn agg(q: Query, range: TimeRange, aggs: Vec<(&str, Aggregation)>) -> Aggregate {
    Aggregate { query: q, range, aggs: aggs.into_iter().map(|(k, v)| (k.to_string(), v)).collect() }
}
