//! Issue #18, "hardening from an outside test", through the real binary:
//! the outside tester's poison events must leave search, the field list and
//! the live tail working for everyone.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod common;
use common::{free_port, http, wait_until, Dir, Proc};

/// The outside tester's lines: numbers beyond the double range, an integer
/// beyond 64 bits, and arrays and objects nested 127 to 255 levels deep.
fn poison() -> Vec<String> {
    let mut lines: Vec<String> = [
        r#"{"message":"p","a":1e400}"#,
        r#"{"message":"p","a":-1e400}"#,
        r#"{"message":"p","a":1e99999}"#,
        r#"{"message":"p","a":123456789012345678901234567890}"#,
    ]
    .map(str::to_string)
    .to_vec();
    for levels in [127, 128, 200, 255] {
        lines.push(format!("{{\"message\":\"n\",\"a\":{}1{}}}", "[".repeat(levels), "]".repeat(levels)));
        lines.push(format!("{{\"message\":\"o\",\"a\":{}1{}}}", "{\"b\":".repeat(levels), "}".repeat(levels)));
    }
    lines
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

/// Reads a live tail in the background; what arrived so far.
fn open_tail(port: u16, auth: &str) -> Arc<Mutex<Vec<u8>>> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "GET /api/v1/tail?query= HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\n\r\n").unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&got);
    std::thread::spawn(move || {
        let mut buf = [0u8; 65536];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    // The stream is open once its first comment arrived.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !String::from_utf8_lossy(&got.lock().unwrap()).contains(": open") {
        assert!(std::time::Instant::now() < deadline, "the tail never opened");
        std::thread::sleep(Duration::from_millis(20));
    }
    got
}

/// The `data:` lines of a tail, each parsed.
fn tail_hits(raw: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(raw).lines().filter_map(|l| l.strip_prefix("data: ")).map(json).collect()
}

#[test]
fn issue_18_poison_events_leave_search_fields_and_tail_working() {
    let dir = Dir::new("issue18-poison");
    let (api, tcp) = (free_port(), free_port());
    let cfg = dir.path("c.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[node]
data_dir = "{d}"
[api]
address = "127.0.0.1:{api}"
[api.tokens.admin]
token_file = "admin.token"
allowed = [{{ group = "*" }}]
[pipelines.main]
batch_delay = "10ms"
[pipelines.main.sources.http]
type = "http"
address = "api"
[pipelines.main.sources.tcp]
type = "tcp"
address = "127.0.0.1:{tcp}"
[pipelines.main.sinks.store]
type = "store"
commit_interval = "200ms"
"#,
            d = dir.root().display()
        ),
    )
    .unwrap();
    let mut p = Proc::start(&["run", cfg.to_str().unwrap()], &dir.path("log"), "sluice");
    wait_until("the mounted /ndjson", &mut p, || {
        TcpStream::connect(("127.0.0.1", api)).is_ok() && http(api, "POST", "/ndjson", &[], b"").0 == 200
    });
    let token = std::fs::read_to_string(dir.path("admin.token")).unwrap().trim().to_string();
    let auth = format!("Bearer {token}");
    let tail = open_tail(api, &auth);

    let lines = poison();
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let mut s = TcpStream::connect(("127.0.0.1", tcp)).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    drop(s);
    let (status, reply) = http(api, "POST", "/ndjson", &[], body.as_bytes());
    assert_eq!((status, json(&reply)), (200, serde_json::json!({"accepted": 12, "failed": 8})));
    let bulk: String = lines.iter().map(|l| format!("{{\"index\":{{\"_index\":\"p\"}}}}\n{l}\n")).collect();
    let (status, reply) = http(api, "POST", "/_bulk", &[], bulk.as_bytes());
    assert_eq!(status, 200, "{reply}");
    let statuses: Vec<u64> =
        json(&reply)["items"].as_array().unwrap().iter().map(|i| i["index"]["status"].as_u64().unwrap()).collect();
    assert_eq!(statuses, [[201; 4].as_slice(), &[400; 8]].concat(), "{reply}");
    // tcp and /ndjson keep every line (12 each), _bulk the 4 numbers.
    let want = 12 + 12 + 4;

    let search =
        |size: usize| http(api, "GET", &format!("/api/v1/search?query=&size={size}"), &[("Authorization", &auth)], b"");
    wait_until("every event searchable", &mut p, || {
        let (status, body) = search(1);
        status == 200 && json(&body)["total"] == want
    });
    let (status, body) = search(100);
    assert_eq!(status, 200, "{body}");
    let page = json(&body);
    let hits = page["hits"].as_array().unwrap();
    assert_eq!(hits.len(), want);
    assert!(hits.iter().all(|h| h.get("error").is_none() && h["event"].is_object()), "{body}");
    // The out-of-range numbers kept their text, 3 paths × 4 lines.
    let mut numbers: Vec<&str> = hits.iter().filter_map(|h| h["event"]["a"].as_str()).collect();
    numbers.sort_unstable();
    let mut expect = ["-1e400", "123456789012345678901234567890", "1e400", "1e99999"].repeat(3);
    expect.sort_unstable();
    assert_eq!(numbers, expect);
    // The deep lines are kept whole and tagged, 2 paths × 8 lines.
    let tagged = hits.iter().filter(|h| h["event"]["tags"] == serde_json::json!(["_jsonparsefailure"])).count();
    assert_eq!(tagged, 16);

    let (status, body) = http(api, "GET", "/api/v1/fields", &[("Authorization", &auth)], b"");
    assert_eq!(status, 200, "{body}");
    let fields = json(&body);
    let names: Vec<&str> = fields["fields"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"a") && names.contains(&"message"), "{names:?}");

    wait_until("every event on the tail", &mut p, || tail_hits(&tail.lock().unwrap()).len() >= want);
    let tailed = tail_hits(&tail.lock().unwrap());
    assert_eq!(tailed.len(), want);
    assert!(tailed.iter().all(|h| h["event"].is_object() && h.get("error").is_none()));

    // Nothing was shown as a stand-in; the 16 kept lines were counted as failed.
    let (_, stats) = http(api, "GET", "/_node/stats", &[], b"");
    let stats = json(&stats);
    let plugins = &stats["pipelines"]["main"]["plugins"];
    assert_eq!(plugins["sinks"][0]["counters"]["unrenderable_events"], 0, "{plugins}");
    let failed: u64 =
        plugins["sources"].as_array().unwrap().iter().map(|s| s["events"]["failed"].as_u64().unwrap()).sum();
    assert_eq!(failed, 8 + 8 + 8);
    p.term();
}
