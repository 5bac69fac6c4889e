//! The hot paths of the instruction-count regression gate
//! (`scripts/perf-gate.sh`, issue #23): `hotpaths <path> <n>` runs one path
//! `n` times on fixed inputs and prints nothing but a checksum. The gate runs
//! it under `valgrind --tool=cachegrind` with `n` and with 0 and divides the
//! difference in instructions by `n`, so setup (compiling a pattern, opening
//! a queue or a store) cancels out and what is left is the cost of one
//! operation — the same on a quiet or a busy machine.
//!
//! Paths (one operation each):
//! - `json-decode`: the thesis event (`testdata/thesis/event.json`) into an `Event`;
//! - `grok-combined`: one Apache combined line through `%{COMBINEDAPACHELOG}`
//!   (legacy library) into an object;
//! - `syslog-5424`: one RFC 5424 message parsed;
//! - `queue-append-read`: one 400-byte record appended to the persisted
//!   queue, read back and acknowledged;
//! - `protocol-roundtrip`: a batch of 100 events encoded as a `BATCH` frame
//!   (lz4), the frame decoded and its events decoded;
//! - `store-index`: 100 events appended to the embedded store (so `n` = 100
//!   is 10,000 events; each a copy of one of four prepared batches), one
//!   commit at the end.
use std::hint::black_box;
use std::time::Duration;

use sluice_core::{Event, Identity, Value};

const EVENT: &str = include_str!("../../../testdata/thesis/event.json");

/// Apache combined lines, deterministic (no generator state beyond the index).
fn apache_line(i: usize) -> String {
    const PATHS: [&str; 4] = ["/", "/index.html", "/api/v1/items?id=42&sort=desc", "/static/js/app.3f2a1b.js"];
    const AGENTS: [&str; 3] =
        ["Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0", "curl/8.4.0", "-"];
    format!(
        "10.0.{}.{} - - [18/May/2016:10:44:{:02} +0000] \"GET {} HTTP/1.1\" {} {} \"-\" \"{}\"",
        i % 7,
        i % 251,
        i % 60,
        PATHS[i % PATHS.len()],
        [200, 304, 404, 500][i % 4],
        1000 + i,
        AGENTS[i % AGENTS.len()]
    )
}

const SYSLOG_5424: [&str; 3] = [
    "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut=\"3\" eventSource=\"Application\" eventID=\"1011\"] An application event log entry",
    "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - 'su root' failed for lonvick on /dev/pts/8",
    "<86>1 2024-05-06T07:08:09.123456+02:00 web-01 sshd 4242 - - Accepted publickey for deploy from 10.0.0.7 port 53211 ssh2",
];

fn thesis_event() -> Event {
    sluice_core::codec::event_from_json(EVENT.trim().as_bytes()).expect("the thesis event parses").0
}

/// 100 events like the thesis event, with distinct messages and hosts.
fn events(template: &Event, round: usize) -> Vec<Event> {
    (0..100)
        .map(|i| {
            let mut e = template.clone();
            e.timestamp += (round * 100 + i) as i64 * 1_000_000;
            e.fields_mut().insert("message", Value::from(format!("lognumber {} of round {round}", i)));
            e.identity = std::sync::Arc::new(Identity::new("g", "prod", format!("h{}", i % 10)));
            e
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<usize>().ok())) else {
        eprintln!("usage: hotpaths <json-decode|grok-combined|syslog-5424|queue-append-read|protocol-roundtrip|store-index> <n>");
        std::process::exit(2);
    };
    let sum = match path.as_str() {
        "json-decode" => json_decode(n),
        "grok-combined" => grok_combined(n),
        "syslog-5424" => syslog_5424(n),
        "queue-append-read" => queue_append_read(n),
        "protocol-roundtrip" => protocol_roundtrip(n),
        "store-index" => store_index(n),
        other => {
            eprintln!("hotpaths: unknown path {other:?}");
            std::process::exit(2);
        }
    };
    println!("{path} {n} {sum}");
}

fn json_decode(n: usize) -> usize {
    let bytes = EVENT.trim().as_bytes();
    (0..n)
        .map(|_| black_box(sluice_core::codec::event_from_json(black_box(bytes)).expect("parses").0).fields().len())
        .sum()
}

fn grok_combined(n: usize) -> usize {
    let p = sluice_parsers::grok::GrokLibrary::legacy().compile("%{COMBINEDAPACHELOG}").expect("compiles");
    let lines: Vec<String> = (0..64).map(apache_line).collect();
    let mut sum = 0;
    for i in 0..n {
        let line = &lines[i % lines.len()];
        let m = p.matches(line).expect("no error").expect("every line matches");
        let mut event = sluice_core::Object::with_capacity(16);
        event.insert(&"message", line.as_str());
        sum += sluice_parsers::grok::insert_captures(&mut event, &m);
    }
    sum
}

fn syslog_5424(n: usize) -> usize {
    let opts = sluice_parsers::syslog::Options::default();
    (0..n)
        .map(|i| {
            let m =
                sluice_parsers::syslog::parse(SYSLOG_5424[i % SYSLOG_5424.len()].as_bytes(), &opts).expect("parses");
            black_box(m).message.map_or(0, |s| s.len())
        })
        .sum()
}

fn queue_append_read(n: usize) -> usize {
    let dir = tempfile::tempdir().expect("temp dir");
    let (q, _) = sluice_queue::PersistedQueue::open(sluice_queue::QueueConfig {
        dir: dir.path().to_path_buf(),
        shards: 1,
        segment_bytes: 64 << 20,
        max_bytes: 1 << 30,
        fsync: sluice_queue::FsyncPolicy::Interval(Duration::from_secs(3600)),
        checkpoint_interval: Duration::from_secs(3600),
    })
    .expect("queue opens");
    let payload = [b'x'; 400];
    let mut sum = 0;
    for _ in 0..n {
        q.append_batch(0, &[(&payload[..], 1)]).expect("append");
        let r = q.next(Duration::from_secs(5)).expect("read").expect("a record");
        sum += r.payload.len();
        q.ack(r.id).expect("ack");
    }
    sum
}

fn protocol_roundtrip(n: usize) -> usize {
    use sluice_protocol::{compress, frame, Compression};
    let batch = events(&thesis_event(), 0);
    let mut enc = compress::BatchEncoder::new(Compression::Lz4, 0).expect("encoder");
    let mut sum = 0;
    let mut out = Vec::new();
    for i in 0..n {
        out.clear();
        enc.encode(i as u64, &batch, &mut out).expect("encodes");
        let (f, _) = frame::decode(&out, 64 << 20).expect("decodes").expect("a whole frame");
        let frame::Frame::Batch(b) = f else { panic!("not a batch frame") };
        sum += compress::decode_events(&b, 64 << 20).expect("events decode").len();
    }
    sum
}

fn store_index(n: usize) -> usize {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = sluice_store::Store::open(dir.path(), sluice_store::StoreOptions::default()).expect("store opens");
    // Four batches built once (setup); each operation indexes a copy of one.
    let template = thesis_event();
    let pool: Vec<Vec<Event>> = (0..4).map(|r| events(&template, r)).collect();
    let mut sum = 0;
    for round in 0..n {
        let batch = pool[round % pool.len()].clone();
        sum += batch.len();
        store.append_owned(batch, &mut None).expect("append");
    }
    store.commit().expect("commit");
    sum
}
