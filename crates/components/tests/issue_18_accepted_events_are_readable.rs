//! Issue #18, "one stored event breaks search for everyone who can see it":
//! whatever the sources accept must come back from search, fields and the
//! live tail. A property test feeds generated lines — JSON with numbers
//! beyond every range, integers beyond 64 bits, lone surrogates, nesting up
//! to 300 levels, reserved keys, and plain garbage — to the real `tcp`
//! source (ndjson over a socket) and the real `http` source (`POST /ndjson`
//! and `POST /_bulk`), stores every event they emit in a real store, and
//! checks that search returns each of them (no error marker, the same JSON),
//! that the field list answers, and that the tail delivers each of them.
//! Deterministic tests pin the outside tester's exact inputs.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use sluice_components::testkit::{build_source, source_context, Capture};
use sluice_core::codec::to_json_string;
use sluice_core::Event;
use sluice_query::api::Search;
use sluice_query::{Order, Principal, Query, SourcePattern, TimeRange};
use sluice_store::{Store, StoreOptions};

/// The two sources, running for the whole test binary.
struct Sources {
    tcp: SocketAddr,
    tcp_out: Arc<Capture>,
    http: SocketAddr,
    http_out: Arc<Capture>,
    _rt: tokio::runtime::Runtime,
}

fn free_addr() -> SocketAddr {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap()
}

fn sources() -> &'static Sources {
    static S: OnceLock<Sources> = OnceLock::new();
    S.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let start = |spec, addr: SocketAddr, extra: &str| {
            let src = build_source(spec, &format!("address = \"{addr}\"\n{extra}")).unwrap();
            let cap = Arc::new(Capture::default());
            let (cx, shutdown, _m) = source_context(Arc::clone(&cap));
            std::mem::forget(shutdown);
            rt.spawn(src.run(cx));
            let deadline = Instant::now() + Duration::from_secs(10);
            while TcpStream::connect(addr).is_err() {
                assert!(Instant::now() < deadline, "{addr} never listened");
                std::thread::sleep(Duration::from_millis(10));
            }
            cap
        };
        let (tcp, http) = (free_addr(), free_addr());
        let tcp_out = start(&sluice_components::sources::tcp::SPEC, tcp, "");
        // Ingest auth is tested with the http source; this sender does not authenticate.
        let http_out = start(&sluice_components::sources::http::SPEC, http, "auth = \"none\"");
        Sources { tcp, tcp_out, http, http_out, _rt: rt }
    })
}

/// One HTTP/1.1 request; `(status, body)`.
fn post(addr: SocketAddr, path: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/x-ndjson\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.split_whitespace().nth(1).unwrap().parse().unwrap(), body.to_string())
}

fn take_when(cap: &Capture, n: usize) -> Vec<Event> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if cap.events.lock().len() >= n {
            break;
        }
        assert!(Instant::now() < deadline, "only {} of {n} events arrived", cap.events.lock().len());
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = std::mem::take(&mut *cap.events.lock());
    assert_eq!(out.len(), n, "more events than lines");
    out
}

/// Sends `lines` through every ingest path; returns every event emitted.
fn ingest(lines: &[Vec<u8>]) -> Vec<Event> {
    // The tests share the sources: one at a time.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    let s = sources();
    let n = lines.len();
    let mut body = Vec::new();
    for l in lines {
        body.extend_from_slice(l);
        body.push(b'\n');
    }
    // tcp, ndjson: one event per line, always.
    let mut c = TcpStream::connect(s.tcp).unwrap();
    c.write_all(&body).unwrap();
    drop(c);
    let mut events = take_when(&s.tcp_out, n);
    // POST /ndjson: the same.
    let (status, reply) = post(s.http, "/ndjson", &body);
    assert_eq!(status, 200, "{reply}");
    let v: serde_json::Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(v["accepted"], n, "{reply}");
    events.extend(take_when(&s.http_out, n));
    // POST /_bulk: a document that is not an acceptable event is refused
    // per item (400) and not stored; every 201 is one event.
    let mut bulk = Vec::new();
    for l in lines {
        bulk.extend_from_slice(b"{\"index\":{\"_index\":\"p\"}}\n");
        bulk.extend_from_slice(l);
        bulk.push(b'\n');
    }
    let (status, reply) = post(s.http, "/_bulk", &bulk);
    assert_eq!(status, 200, "{reply}");
    let v: serde_json::Value = serde_json::from_str(&reply).unwrap();
    let items = v["items"].as_array().unwrap();
    assert_eq!(items.len(), n, "{reply}");
    let created = items.iter().filter(|i| i["index"]["status"] == 201).count();
    assert_eq!(created + items.iter().filter(|i| i["index"]["status"] == 400).count(), n, "{reply}");
    events.extend(take_when(&s.http_out, created));
    events
}

fn everyone() -> Principal {
    Principal::new("admin", vec![SourcePattern::all()])
}

/// Stores `events` and checks search, fields and tail return every one of them.
fn check_readable(events: &[Event]) {
    let dir = tempfile::tempdir().unwrap();
    let opts = StoreOptions { commit_interval: Duration::from_secs(3600), ..StoreOptions::default() };
    let store = Store::open(dir.path(), opts).unwrap();
    let mut tail = store.subscribe(&everyone(), &Query::All);
    store.append(events, &mut None).unwrap();
    store.commit().unwrap();
    // What each event is when written out: it must be JSON every reader reads.
    let mut want: Vec<String> = events
        .iter()
        .map(|e| {
            let text = to_json_string(e);
            let v: serde_json::Value =
                serde_json::from_str(&text).unwrap_or_else(|err| panic!("accepted but unreadable ({err}): {text}"));
            v.to_string()
        })
        .collect();
    want.sort();
    let search = Search {
        query: Query::All,
        range: TimeRange::default(),
        size: events.len() + 1,
        search_after: None,
        fields: None,
        order: Order::Newest,
        sort: None,
    };
    let page = store.search_sync(&everyone(), &search).unwrap();
    assert_eq!(page.total, events.len() as u64);
    for h in &page.hits {
        assert_eq!(h.error, None, "{}", h.event);
    }
    let mut got: Vec<String> = page.hits.iter().map(|h| h.event.to_string()).collect();
    got.sort();
    assert_eq!(got, want);
    let fields = store.fields_sync(&everyone(), &TimeRange::default()).unwrap();
    assert!(fields.iter().any(|f| f.name == "@timestamp"));
    let mut tailed = Vec::new();
    while let Ok(h) = tail.try_recv() {
        assert_eq!(h.error, None, "{}", h.event);
        tailed.push(h.event.to_string());
    }
    tailed.sort();
    assert_eq!(tailed, want);
    assert_eq!(store.counters.unrenderable.get(), 0);
    store.close().unwrap();
}

// ------------------------------------------------------------ generated lines

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "1e400",
            "-1e400",
            "1e99999",
            "1E+400",
            "-0.5e-400",
            "1e-400",
            "0",
            "-0",
            "1.5",
            "1E2",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775809",
            "123456789012345678901234567890",
            "1.7976931348623157e308",
            "1.8e308",
        ])
        .prop_map(str::to_string),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| format!("{f:e}")),
        "[1-9][0-9]{15,40}".prop_map(|s| s),
    ]
}

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            r#""plain""#,
            r#""\u00e9""#,
            r#""\ud800""#,
            r#""\udc00x""#,
            r#""\ud83d\ude00""#,
            r#""a\"b\\c""#,
            r#""\n\t\r\b\f\/""#,
            r#""é ü 日本""#,
            r#""1e400""#,
        ])
        .prop_map(str::to_string),
        any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap()),
    ]
}

fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![number(), string(), Just("true".into()), Just("false".into()), Just("null".into())];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec(("[a-z@_]{1,6}", inner), 0..4).prop_map(|v| {
                let members: Vec<String> = v.into_iter().map(|(k, x)| format!("\"{k}\":{x}")).collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

/// A value nested `levels` deep, arrays and objects mixed.
fn deep() -> impl Strategy<Value = String> {
    (1usize..300, any::<u64>(), number()).prop_map(|(levels, mix, leaf)| {
        let (mut open, mut close) = (String::new(), String::new());
        for i in 0..levels {
            if mix >> (i % 64) & 1 == 1 {
                open.push_str("{\"d\":");
                close.insert(0, '}');
            } else {
                open.push('[');
                close.insert(0, ']');
            }
        }
        format!("{open}{leaf}{close}")
    })
}

fn line() -> impl Strategy<Value = Vec<u8>> {
    let member = prop_oneof![value(), deep()];
    let doc = (
        prop::collection::vec(("[a-z]{1,5}", member), 0..4),
        prop::option::of(prop::sample::select(vec![
            r#""@timestamp":"2024-05-06T07:08:09.123Z""#,
            r#""@timestamp":"yesterday""#,
            r#""@group":"someone-else""#,
        ])),
    )
        .prop_map(|(members, reserved)| {
            let mut parts: Vec<String> = members.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            parts.extend(reserved.map(str::to_string));
            format!("{{{}}}", parts.join(",")).into_bytes()
        });
    let garbage = prop::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 1..40)
        .prop_filter("not blank", |l| !l.iter().all(u8::is_ascii_whitespace));
    prop_oneof![4 => doc, 1 => garbage]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn issue_18_any_event_the_sources_accept_is_returned_by_search_fields_and_tail(
        lines in prop::collection::vec(line(), 1..8)
    ) {
        let events = ingest(&lines);
        check_readable(&events);
    }
}

// ------------------------------------------------------- the tester's inputs

/// The outside tester's lines: numbers beyond the double range and nesting
/// from 127 to 255 levels.
fn poison() -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = [
        r#"{"message":"p","a":1e400}"#,
        r#"{"message":"p","a":-1e400}"#,
        r#"{"message":"p","a":1e99999}"#,
        r#"{"message":"p","a":123456789012345678901234567890}"#,
    ]
    .iter()
    .map(|l| l.as_bytes().to_vec())
    .collect();
    for levels in [127, 128, 200, 255] {
        lines.push(format!("{{\"message\":\"n\",\"a\":{}1{}}}", "[".repeat(levels), "]".repeat(levels)).into_bytes());
        lines.push(
            format!("{{\"message\":\"o\",\"a\":{}1{}}}", "{\"b\":".repeat(levels), "}".repeat(levels)).into_bytes(),
        );
    }
    lines
}

#[test]
fn issue_18_out_of_range_numbers_keep_their_text_and_deep_nesting_is_kept_as_a_tagged_line() {
    let lines = poison();
    let events = ingest(&lines);
    // tcp and /ndjson: every line is an event; the bulk path refused the 8 deep ones.
    assert_eq!(events.len(), 3 * lines.len() - 8);
    for path in [&events[..lines.len()], &events[lines.len()..2 * lines.len()]] {
        let mut numbers: Vec<String> = path
            .iter()
            .filter(|e| e.message() == Some("p"))
            .map(|e| e.fields().get("a").unwrap().as_str().unwrap().to_string())
            .collect();
        numbers.sort();
        assert_eq!(numbers, ["-1e400", "123456789012345678901234567890", "1e400", "1e99999"]);
        let deep: Vec<&Event> = path.iter().filter(|e| e.has_tag("_jsonparsefailure")).collect();
        assert_eq!(deep.len(), 8);
        for e in deep {
            let m = e.message().unwrap();
            assert!(m.starts_with("{\"message\":") && m.len() > 254, "the whole line is the message: {m}");
        }
    }
    check_readable(&events);
}
