//! End-to-end: the real binary with `[auth]` and the embedded store. The
//! first admin comes from `$SLUICE_ADMIN_PASSWORD`; users, groups and
//! assignments are made with the `sluice user|group|assign` commands while
//! the node runs; events of groups `acme` and `globex` arrive over TCP. Then
//! users log in over HTTP and must see only their own group through search,
//! aggregations, fields, live tail and a dashboard an admin shared with
//! everyone; CSRF, logout and the audit log are checked on the way.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::free_port;

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }
    fn cookies(&self) -> Vec<String> {
        self.headers
            .iter()
            .filter(|(k, _)| k == "set-cookie")
            .map(|(_, v)| v.split(';').next().unwrap_or("").to_string())
            .collect()
    }
}

fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines.next().unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_string() };
    Reply { status, headers, body }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&tail[..n]);
        rest = &tail[n + 2..];
    }
    out
}

/// A logged-in user: session cookie and CSRF token.
struct Session {
    cookie: String,
    csrf: String,
}

impl Session {
    fn login(port: u16, user: &str, password: &str) -> Self {
        let r =
            http(port, "POST", "/api/v1/auth/login", &[], &json!({"username": user, "password": password}).to_string());
        assert_eq!(r.status, 200, "login {user}: {}", r.body);
        assert_eq!(r.json()["status"], "authenticated");
        let raw: Vec<String> = r.headers.iter().filter(|(k, _)| k == "set-cookie").map(|(_, v)| v.clone()).collect();
        assert!(
            raw.iter().any(|c| c.starts_with("sluice_session=")
                && c.contains("HttpOnly")
                && c.contains("SameSite=Strict")
                && c.contains("Path=/")),
            "{raw:?}"
        );
        let cookie = r.cookies().join("; ");
        Self { cookie, csrf: r.json()["csrf_token"].as_str().unwrap().to_string() }
    }
    fn get(&self, port: u16, path: &str) -> Reply {
        http(port, "GET", path, &[("Cookie", &self.cookie)], "")
    }
    fn post(&self, port: u16, path: &str, body: &Value) -> Reply {
        http(port, "POST", path, &[("Cookie", &self.cookie), ("X-CSRF-Token", &self.csrf)], &body.to_string())
    }
}

fn cli(config: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let mut c = Command::new(BIN)
        .args(args)
        .arg("--config")
        .arg(config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(s) = stdin {
        c.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    let out = c.wait_with_output().unwrap();
    assert!(out.status.success(), "sluice {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn send(port: u16, lines: &[Value]) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    for l in lines {
        s.write_all(format!("{l}\n").as_bytes()).unwrap();
    }
}

fn groups_of(hits: &Value) -> Vec<String> {
    hits.as_array().unwrap().iter().map(|h| h["event"]["@group"].as_str().unwrap().to_string()).collect()
}

#[test]
fn users_see_only_their_assigned_sources_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let (api, pa, pg) = (free_port(), free_port(), free_port());
    let config: PathBuf = dir.path().join("node.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[node]
data_dir = "{data}"
[api]
address = "127.0.0.1:{api}"
[auth]
[auth.login_rate]
per_minute = 600
burst = 100
[pipelines.main]
batch_delay = "10ms"
[pipelines.main.sources.acme]
type = "tcp"
address = "127.0.0.1:{pa}"
format = "ndjson"
group = "acme"
subgroup = "web"
[pipelines.main.sources.globex]
type = "tcp"
address = "127.0.0.1:{pg}"
format = "ndjson"
group = "globex"
subgroup = "db"
[pipelines.main.sinks.store]
type = "store"
path = "{store}"
commit_interval = "50ms"
"#,
            data = dir.path().join("data").display(),
            store = dir.path().join("store").display(),
        ),
    )
    .unwrap();
    let out = Command::new(BIN).arg("validate").arg(&config).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let node = Proc(
        Command::new(BIN)
            .arg("run")
            .arg(&config)
            .env("SLUICE_ADMIN_PASSWORD", "first-admin-password")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", api)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(30), "node did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(http(api, "GET", "/api/v1/auth/config", &[], "").json()["methods"], json!(["password"]));

    // Users, groups and assignments through the CLI, while the node runs.
    cli(&config, &["group", "add", "acme"], None);
    cli(&config, &["user", "add", "alice", "--type", "viewer", "--password-stdin"], Some("alice-password-1\n"));
    cli(&config, &["group", "member", "add", "acme", "alice"], None);
    cli(&config, &["assign", "group", "acme", "acme"], None);
    let bob_out = cli(&config, &["user", "add", "bob", "--type", "operator"], None);
    let bob_pw = bob_out.lines().find_map(|l| l.strip_prefix("password: ")).unwrap().to_string();
    cli(&config, &["assign", "user", "bob", "globex/db/*"], None);
    let list = cli(&config, &["user", "list"], None);
    assert!(list.contains("alice") && list.contains("bob") && list.contains("admin"), "{list}");

    let admin = Session::login(api, "admin", "first-admin-password");
    let alice = Session::login(api, "alice", "alice-password-1");
    let bob = Session::login(api, "bob", &bob_pw);

    // Alice's live tail, opened before any event arrives.
    let mut tail = TcpStream::connect(("127.0.0.1", api)).unwrap();
    tail.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    tail.write_all(format!("GET /api/v1/tail HTTP/1.1\r\nHost: x\r\nCookie: {}\r\n\r\n", alice.cookie).as_bytes())
        .unwrap();
    let mut tail = BufReader::new(tail);
    let mut status = String::new();
    tail.read_line(&mut status).unwrap();
    assert!(status.contains(" 200 "), "{status}");

    // globex first, and committed (the tail is fed at commit) before acme is
    // sent: if it leaked into alice's tail, it would come before acme's.
    // Waits until the admin (assigned */*/*) sees `n` events.
    let wait_total = |n: u64| {
        let start = Instant::now();
        loop {
            let r = admin.get(api, "/api/v1/search");
            if r.json()["total"] == n {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "store never had {n} events: {}", r.body);
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    send(pg, &(0..3).map(|i| json!({"message": format!("globex {i}"), "secret_field": i})).collect::<Vec<_>>());
    wait_total(3);
    send(pa, &(0..5).map(|i| json!({"message": format!("acme {i}"), "status": 200 + i})).collect::<Vec<_>>());

    let mut tailed = Vec::new();
    while tailed.len() < 5 {
        let mut line = String::new();
        tail.read_line(&mut line).expect("tail line");
        if let Some(data) = line.trim().strip_prefix("data:") {
            let hit: Value = serde_json::from_str(data.trim()).unwrap();
            tailed.push(hit["event"]["@group"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(tailed, vec!["acme"; 5], "alice's tail");

    wait_total(8);

    // Search: GET with the cookie; POST needs the CSRF header.
    let r = alice.get(api, "/api/v1/search?size=100");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["total"], 5);
    assert_eq!(groups_of(&r.json()["hits"]), vec!["acme"; 5]);
    let r = http(api, "POST", "/api/v1/search", &[("Cookie", &alice.cookie)], "{}");
    assert_eq!((r.status, r.json()["error"]["type"].clone()), (403, json!("csrf_failed")));
    let r = http(api, "POST", "/api/v1/search", &[("Cookie", &alice.cookie), ("X-CSRF-Token", &bob.csrf)], "{}");
    assert_eq!(r.status, 403, "another session's CSRF token is refused");
    let r = alice.post(api, "/api/v1/search", &json!({"query": "message:globex"}));
    assert_eq!(r.json()["total"], 0, "{}", r.body);
    let r = bob.post(api, "/api/v1/search", &json!({"size": 100}));
    assert_eq!(groups_of(&r.json()["hits"]), vec!["globex"; 3]);

    // Aggregations and fields.
    let agg =
        json!({"aggs": {"g": {"type": "terms", "field": "@group"}, "s": {"type": "stats", "field": "secret_field"}}});
    let r = alice.post(api, "/api/v1/aggregate", &agg);
    assert_eq!(r.json()["total"], 5, "{}", r.body);
    assert_eq!(r.json()["aggs"]["g"]["buckets"], json!([{"key": "acme", "count": 5}]));
    assert_eq!(r.json()["aggs"]["s"]["count"], 0);
    let r = bob.post(api, "/api/v1/aggregate", &agg);
    assert_eq!(r.json()["aggs"]["g"]["buckets"], json!([{"key": "globex", "count": 3}]));
    let names = |r: Reply| -> Vec<String> {
        r.json()["fields"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap().to_string()).collect()
    };
    let alice_fields = names(alice.get(api, "/api/v1/fields"));
    assert!(alice_fields.contains(&"status".to_string()), "{alice_fields:?}");
    assert!(!alice_fields.contains(&"secret_field".to_string()), "{alice_fields:?}");
    assert!(names(bob.get(api, "/api/v1/fields")).contains(&"secret_field".to_string()));

    // A dashboard the admin shares with everyone shows each viewer their own data.
    let d = admin.post(
        api,
        "/api/v1/dashboards",
        &json!({"title": "All traffic", "sharing": {"everyone": true}, "panels": [
            {"id": "groups", "chart": "pie", "query": "", "aggs": {"g": {"type": "terms", "field": "@group"}}},
            {"id": "latest", "chart": "table", "query": "", "size": 20}
        ]}),
    );
    assert_eq!(d.status, 201, "{}", d.body);
    let id = d.json()["id"].as_i64().unwrap();
    assert_eq!(alice.get(api, "/api/v1/dashboards").json()["dashboards"][0]["can_edit"], false);
    let data = alice.post(api, &format!("/api/v1/dashboards/{id}/data"), &json!({}));
    assert_eq!(data.status, 200, "{}", data.body);
    let panels = &data.json()["panels"];
    assert_eq!(panels["groups"]["aggregate"]["aggs"]["g"]["buckets"], json!([{"key": "acme", "count": 5}]));
    assert_eq!(groups_of(&panels["latest"]["search"]["hits"]), vec!["acme"; 5]);
    let data = bob.post(api, &format!("/api/v1/dashboards/{id}/data"), &json!({}));
    assert_eq!(groups_of(&data.json()["panels"]["latest"]["search"]["hits"]), vec!["globex"; 3]);
    let r = http(
        api,
        "PUT",
        &format!("/api/v1/dashboards/{id}"),
        &[("Cookie", &alice.cookie), ("X-CSRF-Token", &alice.csrf)],
        &json!({"title": "mine now", "version": 1}).to_string(),
    );
    assert_eq!((r.status, r.json()["error"]["type"].clone()), (403, json!("forbidden")));

    // Rights by type: a viewer cannot manage users or read node stats; an operator can read stats.
    assert_eq!(alice.get(api, "/api/v1/users").status, 403);
    assert_eq!(alice.get(api, "/api/v1/node/stats").status, 403);
    assert_eq!(bob.get(api, "/api/v1/node/stats").status, 200);
    assert_eq!(admin.get(api, "/api/v1/users").json()["users"].as_array().unwrap().len(), 3);
    let me = alice.get(api, "/api/v1/me").json();
    assert_eq!(me["allowed"], json!([{"group": "acme", "subgroup": "*", "host": "*"}]));
    assert_eq!(me["permissions"], json!(["logs:read"]));
    assert_eq!(me["user"]["groups"], json!(["acme"]));

    // The audit log shows the CLI's changes; logout ends the session.
    let audit = admin.get(api, "/api/v1/audit?action=assignment.create").json();
    let targets: Vec<&str> =
        audit["records"].as_array().unwrap().iter().map(|r| r["target"].as_str().unwrap()).collect();
    assert_eq!(targets, ["user:bob", "group:acme", "user:admin"]);
    assert!(audit["records"][0]["actor"].as_str().unwrap().starts_with("cli:"));
    let r = http(api, "POST", "/api/v1/auth/logout", &[("Cookie", &alice.cookie), ("X-CSRF-Token", &alice.csrf)], "");
    assert_eq!(r.status, 204);
    assert_eq!(alice.get(api, "/api/v1/search").status, 401);
    drop(node);
}
