//! End-to-end test of the single-node layout: one port serves the API, the
//! node stats and the `http` source (`address = "api"`), with an admin token
//! generated on first start.

use std::io::Write;
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{free_port, Dir};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

/// Kills the child if the test fails half-way.
struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn signal(child: &Child, sig: &str) {
    assert!(Command::new("kill").args([sig, &child.id().to_string()]).status().unwrap().success());
}

/// The ingest token of the http sources in these tests (group `acme`).
const INGEST_TOKEN: &str = "api-e2e-ingest-token-0";

/// `headers` of a request to `path`: an ingest request (`/`, `/ndjson`,
/// `/_bulk`) carries `bearer` unless `headers` name an `Authorization` (an
/// empty one is left out).
fn ingest_headers<'a>(path: &str, headers: &[(&'a str, &'a str)], bearer: &'a str) -> Vec<(&'a str, &'a str)> {
    let ingest = path == "/" || path.ends_with("/ndjson") || path.ends_with("/_bulk");
    let mut all: Vec<(&str, &str)> = Vec::new();
    if ingest && !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")) {
        all.push(("Authorization", bearer));
    }
    all.extend(headers.iter().filter(|(_, v)| !v.is_empty()));
    all
}

/// [`common::http`] with [`ingest_headers`] carrying `INGEST_TOKEN`.
fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    let bearer = format!("Bearer {INGEST_TOKEN}");
    common::http(port, method, path, &ingest_headers(path, headers, &bearer), body)
}

/// Whether an empty `POST /ndjson` (with `headers`, as [`http`]) answers
/// `status`; `false` while the node still refuses or resets connections.
fn ndjson_answers(port: u16, headers: &[(&str, &str)], status: u16) -> bool {
    let bearer = format!("Bearer {INGEST_TOKEN}");
    common::try_http(port, "POST", "/ndjson", &ingest_headers("/ndjson", headers, &bearer), b"")
        .is_ok_and(|(s, _)| s == status)
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

fn wait_for(what: &str, child: &mut Child, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if ok() {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("sluice exited early ({status}) waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

fn config(dir: &Dir, port: u16, batch_size: usize) -> String {
    format!(
        r#"
{head}[pipelines.main]
batch_size = {batch_size}
batch_delay = "10ms"
[pipelines.main.sources.http]
type = "http"
address = "api"
[pipelines.main.sources.http.tokens.acme]
token = "{INGEST_TOKEN}"
group = "acme"
[pipelines.main.sinks.out]
type = "file"
path = "{o}"
"#,
        head = common::api_node_head(dir.root(), port, "token_file = \"admin.token\""),
        o = dir.path("out.ndjson").display()
    )
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(json).collect()
}

/// `promtool check metrics` (Debian's `prometheus` package, installed by
/// scripts/setup.sh) reads `text` without a single complaint: names, help
/// texts, types, units and suffixes as Prometheus wants them (issue #19).
fn promtool_accepts(text: &str) {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            common::skip::skip("tool", "promtool_accepts", &format!("promtool: {e} (scripts/setup.sh installs it)"));
            return;
        }
    };
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.trim().is_empty(), "promtool check metrics: {said}\n{text}");
}

#[test]
fn http_source_bulk_ndjson_stats_and_api_share_one_port() {
    let dir = Dir::new("api-port");
    let port = free_port();
    let cfg = dir.path("c.toml");
    std::fs::write(&cfg, config(&dir, port, 64)).unwrap();
    let log = dir.path("log");
    let child = Command::new(BIN)
        .args(["run", cfg.to_str().unwrap()])
        .env("SLUICE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut p = Proc(child);
    // The http source mounts when its pipeline runs; until then /_bulk is a 404.
    wait_for("the mounted /ndjson", &mut p.0, || ndjson_answers(port, &[], 200));

    // Elasticsearch bulk on the API port: two good documents, one bad (not indexed).
    let bulk = b"{\"index\":{\"_index\":\"other\"}}\n{\"message\":\"b1\"}\n{\"create\":{}}\n{\"message\":\"b2\"}\n{\"index\":{}}\nnot json\n";
    let (status, body) = http(port, "POST", "/logs/_bulk", &[("Content-Type", "application/x-ndjson")], bulk);
    assert_eq!(status, 200, "{body}");
    let v = json(&body);
    assert_eq!(v["errors"], true);
    let item_status: Vec<u64> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_object().unwrap().values().next().unwrap()["status"].as_u64().unwrap())
        .collect();
    assert_eq!(item_status, vec![201, 201, 400]);

    // ndjson on the same port.
    let (status, body) =
        http(port, "POST", "/ndjson", &[], b"{\"message\":\"n1\"}\n{\"message\":\"n2\"}\n{\"message\":\"n3\"}\n");
    assert_eq!((status, json(&body)), (200, serde_json::json!({"accepted": 3, "failed": 0})));

    // The Elasticsearch handshake answers at the root.
    let (status, body) = http(port, "GET", "/", &[], b"");
    assert_eq!((status, json(&body)["version"]["number"].as_str()), (200, Some("8.11.0")));

    // Stats and metrics on the same port count the source's events.
    let (status, body) = http(port, "GET", "/_node/stats", &[], b"");
    assert_eq!(status, 200);
    let v = json(&body);
    let src = &v["pipelines"]["main"]["plugins"]["sources"][0];
    assert_eq!((src["id"].as_str(), src["events"]["out"].as_u64()), (Some("http"), Some(5)));
    // When the source last handed events in (the Operations page's "last event").
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let last = src["gauges"]["last_event_timestamp_seconds"].as_u64().unwrap_or(0);
    assert!(last <= now && now - last < 600, "last event {last}, now {now}: {src}");
    let (status, body) = http(port, "GET", "/metrics", &[], b"");
    assert_eq!(status, 200);
    assert!(body.contains("sluice_pipeline_events_in_total{pipeline=\"main\"} 5"), "{body}");
    assert!(
        body.contains(
            "sluice_component_events_out_total{pipeline=\"main\",kind=\"source\",component=\"http\",type=\"http\"} 5"
        ),
        "{body}"
    );
    promtool_accepts(&body);

    // The generated admin token: mode 0600, accepted; the node has no store yet.
    let token_file = dir.path("admin.token");
    assert_eq!(std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777, 0o600);
    let token = std::fs::read_to_string(&token_file).unwrap().trim().to_string();
    assert_eq!(token.len(), 64);
    let auth = format!("Bearer {token}");
    let (status, body) = http(port, "GET", "/api/v1/search?query=", &[("Authorization", &auth)], b"");
    assert_eq!(
        (status, json(&body)),
        (503, serde_json::json!({"error": {"type": "no_store", "message": "this node has no search store"}}))
    );
    let (status, body) = http(port, "GET", "/api/v1/search", &[("Authorization", "Bearer nope")], b"");
    assert_eq!((status, json(&body)["error"]["type"].as_str()), (401, Some("unauthorized")));
    let (status, body) = http(port, "GET", "/api/v1/openapi.json", &[], b"");
    assert_eq!((status, json(&body)["openapi"].as_str()), (200, Some("3.1.0")));

    // A reload restarts the changed pipeline; its source mounts again.
    std::fs::write(&cfg, config(&dir, port, 32)).unwrap();
    signal(&p.0, "-HUP");
    let log_text = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_for("reload done", &mut p.0, || log_text().contains("reload done"));
    wait_for("the mount after reload", &mut p.0, || ndjson_answers(port, &[], 200));
    let (status, body) =
        http(port, "POST", "/_bulk", &[], b"{\"index\":{\"_index\":\"logs\"}}\n{\"message\":\"b3\"}\n");
    assert_eq!((status, json(&body)["errors"].as_bool()), (200, Some(false)));
    // The token file is reused, not regenerated.
    assert_eq!(std::fs::read_to_string(&token_file).unwrap().trim(), token);

    signal(&p.0, "-TERM");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = p.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "sluice did not stop");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit {status}: {}", log_text());
    let out = lines(&dir.path("out.ndjson"));
    let mut messages: Vec<&str> = out.iter().map(|e| e["message"].as_str().unwrap()).collect();
    messages.sort_unstable();
    assert_eq!(messages, vec!["b1", "b2", "b3", "n1", "n2", "n3"]);
    assert!(out.iter().all(|e| e["@group"] == "acme"));
    assert_eq!(out.iter().filter(|e| e["_index"] == "other").count(), 1);
    assert_eq!(out.iter().filter(|e| e["_index"] == "logs").count(), 2);
    assert!(log_text().contains("http source serving on the API listener"));
}

#[test]
fn address_api_without_an_api_server_is_a_config_error() {
    let dir = Dir::new("api-none");
    let cfg = dir.path("c.toml");
    std::fs::write(
        &cfg,
        "[api]\naddress = \"\"\n[pipelines.main.sources.http]\ntype = \"http\"\naddress = \"api\"\n\
         [pipelines.main.sinks.b]\ntype = \"blackhole\"\n",
    )
    .unwrap();
    let out = Command::new(BIN).args(["validate", cfg.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pipelines.main.sources.http.address: \"api\" needs the API server, but [api] address is empty"),
        "{err}"
    );
}

/// `queue.events` of pipeline `main` in `/_node/stats`, and the Prometheus gauge.
fn queue_depth(port: u16) -> (Option<u64>, bool) {
    let (_, body) = http(port, "GET", "/_node/stats", &[], b"");
    let v = json(&body);
    let n = v["pipelines"]["main"]["queue"]["events"].as_u64();
    let (_, metrics) = http(port, "GET", "/metrics", &[], b"");
    let gauge = n.is_some_and(|n| metrics.contains(&format!("sluice_pipeline_queue_events{{pipeline=\"main\"}} {n}")));
    (n, gauge)
}

#[test]
fn persisted_queue_backlog_shows_in_stats_and_drains_when_the_sink_returns() {
    let dir = Dir::new("api-backlog");
    let port = free_port();
    let sink_port = free_port();
    let cfg = dir.path("c.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[node]
data_dir = "{d}"
[api]
address = "127.0.0.1:{port}"
[pipelines.main]
batch_size = 50
batch_delay = "10ms"
[pipelines.main.queue]
type = "persisted"
[pipelines.main.sources.http]
type = "http"
address = "api"
[pipelines.main.sources.http.tokens.acme]
token = "{INGEST_TOKEN}"
group = "acme"
[pipelines.main.sinks.down]
type = "tcp"
address = "127.0.0.1:{sink_port}"
"#,
            d = dir.root().display()
        ),
    )
    .unwrap();
    let child = Command::new(BIN)
        .args(["run", cfg.to_str().unwrap()])
        .env("SLUICE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path("log")).unwrap())
        .spawn()
        .unwrap();
    let mut p = Proc(child);
    wait_for("the mounted /ndjson", &mut p.0, || ndjson_answers(port, &[], 200));
    // 300 events accepted into the persisted queue while the sink's peer is down.
    let body: String = (0..300).map(|i| format!("{{\"message\":\"q{i}\"}}\n")).collect();
    let (status, reply) = http(port, "POST", "/ndjson", &[], body.as_bytes());
    assert_eq!((status, json(&reply)), (200, serde_json::json!({"accepted": 300, "failed": 0})));
    // The backlog on disk is what the stats report (refreshed every second).
    wait_for("queue.events = 300", &mut p.0, || queue_depth(port) == (Some(300), true));
    // The peer comes up: every event arrives and the depth returns to 0.
    let listener = std::net::TcpListener::bind(("127.0.0.1", sink_port)).unwrap();
    let (conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    wait_for("queue.events = 0", &mut p.0, || queue_depth(port) == (Some(0), true));
    // Everything acknowledged; a clean stop closes the sink's connection, so
    // the reader sees every line the sink wrote, duplicates included.
    signal(&p.0, "-TERM");
    assert!(p.0.wait().unwrap().success(), "sluice did not stop cleanly");
    let mut got: Vec<String> = std::io::BufRead::lines(std::io::BufReader::new(conn))
        .map(|l| json(&l.expect("read a line before EOF"))["message"].as_str().unwrap().to_string())
        .collect();
    got.sort_by_key(|m| m[1..].parse::<u32>().unwrap());
    assert_eq!(got, (0..300).map(|i| format!("q{i}")).collect::<Vec<_>>(), "each event exactly once");
}

/// Issue 22 item 5 (ADR 0070): a node whose API listens beyond loopback
/// serves `/_node/stats` and `/metrics` only with a credential; `[api]
/// metrics_auth = "none"` opens them again, on purpose.
#[test]
fn node_stats_and_metrics_need_a_token_beyond_loopback() {
    for (extra, open) in [("", false), ("metrics_auth = \"none\"\n", true)] {
        let dir = Dir::new(if open { "metrics-open" } else { "metrics-token" });
        let port = free_port();
        let cfg = dir.path("c.toml");
        let text = config(&dir, port, 64)
            .replace(&format!("address = \"127.0.0.1:{port}\"\n"), &format!("address = \"0.0.0.0:{port}\"\n{extra}"));
        assert!(text.contains("0.0.0.0"), "{text}");
        std::fs::write(&cfg, text).unwrap();
        let child = Command::new(BIN)
            .args(["run", cfg.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path("log")).unwrap())
            .spawn()
            .unwrap();
        let mut p = Proc(child);
        wait_for("the API", &mut p.0, || TcpStream::connect(("127.0.0.1", port)).is_ok());
        let token = std::fs::read_to_string(dir.path("admin.token")).unwrap().trim().to_string();
        let auth = format!("Bearer {token}");
        for path in ["/_node/stats", "/metrics"] {
            let (status, body) = http(port, "GET", path, &[], b"");
            if open {
                assert_eq!(status, 200, "{path} with metrics_auth = \"none\": {body}");
            } else {
                assert_eq!((status, json(&body)["error"]["type"].as_str()), (401, Some("unauthorized")), "{path}");
                let (status, _) = http(port, "GET", path, &[("Authorization", "Bearer wrong")], b"");
                assert_eq!(status, 401, "{path} with a wrong token");
            }
            let (status, body) = http(port, "GET", path, &[("Authorization", &auth)], b"");
            assert_eq!(status, 200, "{path} with the admin token: {body}");
            assert!(body.contains("main"), "{path}: {body}");
        }
    }
}

/// Every entry under `dir` whose mode gives the group or others any access.
fn not_private(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.permissions().mode() & 0o077 != 0 {
                out.push(format!("{} {:o}", p.strip_prefix(dir).unwrap().display(), meta.permissions().mode() & 0o777));
            }
            if meta.is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Issue #18: `data/events.ndjson` was 0644 and the store and queue
/// directories 0755, so any local user read every group's logs. Everything
/// a node creates under its data directory (the directory itself, queue,
/// store, event file, tokens, users database) is now the owner's only.
#[test]
fn issue_18_files_under_the_data_dir_are_private() {
    let dir = Dir::new("api-modes");
    let port = free_port();
    let tcp = free_port();
    let agents = free_port();
    let data = dir.path("data");
    let cfg = dir.path("c.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
{head}[auth]
[pipelines.main]
batch_size = 16
batch_delay = "10ms"
[pipelines.main.queue]
type = "persisted"
[pipelines.main.sources.json]
type = "tcp"
address = "127.0.0.1:{tcp}"
[pipelines.main.sources.agents]
type = "sluice"
address = "127.0.0.1:{agents}"
[pipelines.main.sources.agents.tokens.default]
token_file = "agent.token"
group = "default"
[pipelines.main.sinks.events]
type = "file"
path = "{d}/events.ndjson"
[pipelines.main.sinks.store]
type = "store"
commit_interval = "100ms"
"#,
            d = data.display(),
            head = common::api_node_head(&data, port, "token_file = \"admin.token\"")
        ),
    )
    .unwrap();
    let child = Command::new(common::bin())
        .args(["run", cfg.to_str().unwrap()])
        .env("SLUICE_LOG", "info")
        .env("SLUICE_ADMIN_PASSWORD", "admin-password-for-the-test")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path("log")).unwrap())
        .spawn()
        .unwrap();
    let mut p = Proc(child);
    wait_for("the tcp source", &mut p.0, || TcpStream::connect(("127.0.0.1", tcp)).is_ok());
    let mut s = TcpStream::connect(("127.0.0.1", tcp)).unwrap();
    for i in 0..20 {
        writeln!(s, "{{\"message\":\"private {i}\"}}").unwrap();
    }
    drop(s);
    let events = data.join("events.ndjson");
    wait_for("20 events in the file", &mut p.0, || lines(&events).len() == 20);
    wait_for("a committed store partition", &mut p.0, || {
        std::fs::read_dir(data.join("store")).is_ok_and(|d| d.count() > 1)
    });
    for f in ["admin.token", "agent.token", "users.db", "events.ndjson", "store/store.json"] {
        assert!(data.join(f).exists(), "{f} missing");
    }
    assert!(data.join("queue/main/shard-0000").is_dir());
    assert_eq!(std::fs::metadata(&data).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(&events).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(not_private(&data), Vec::<String>::new());
}

/// Issue #18: anyone — a web page in a browser included — could write logs
/// through `/ndjson` and `/_bulk`; a cross-site `text/plain` post was stored.
/// The single-node example, as shipped (ports aside), generates an ingest
/// token on first start, refuses requests without it and requests a page
/// can make, and stamps the token's group on what it accepts.
#[test]
fn issue_18_the_single_node_example_needs_an_ingest_token_and_refuses_browsers() {
    let dir = Dir::new("api-ingest");
    let port = free_port();
    let example =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/single-node.toml"))
            .unwrap()
            .replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"))
            .replace("127.0.0.1:5514", &format!("127.0.0.1:{}", free_port()))
            .replace("127.0.0.1:5170", &format!("127.0.0.1:{}", free_port()))
            .replace("127.0.0.1:5044", &format!("127.0.0.1:{}", free_port()));
    let cfg = dir.path("single-node.toml");
    std::fs::write(&cfg, example).unwrap();
    let child = Command::new(common::bin())
        .current_dir(dir.root())
        .args(["run", cfg.to_str().unwrap()])
        .env("SLUICE_LOG", "info")
        .env("SLUICE_ADMIN_PASSWORD", "admin-password-for-the-test")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path("log")).unwrap())
        .spawn()
        .unwrap();
    let mut p = Proc(child);
    let none = [("Authorization", "")];
    wait_for("the mounted /ndjson", &mut p.0, || ndjson_answers(port, &none, 401));
    // The token the example generated: 64 hex characters, mode 0600.
    let token_file = dir.path("data/ingest.token");
    assert_eq!(std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777, 0o600);
    let token = std::fs::read_to_string(&token_file).unwrap().trim().to_string();
    assert_eq!(token.len(), 64);
    let bearer = format!("Bearer {token}");
    let ndjson = ("Content-Type", "application/x-ndjson");

    // Refused: no token; what a cross-site page can send, token or not.
    let (status, body) = http(port, "POST", "/ndjson", &[ndjson, none[0]], b"{\"message\":\"anonymous\"}\n");
    assert_eq!((status, json(&body)["error"]["type"].as_str()), (401, Some("security_exception")), "{body}");
    let page = [("Content-Type", "text/plain"), ("Origin", "https://evil.example"), none[0]];
    let (status, _) = http(port, "POST", "/ndjson", &page, b"{\"message\":\"cross-site\"}\n");
    assert_eq!(status, 415);
    let (status, _) = http(
        port,
        "POST",
        "/ndjson",
        &[("Content-Type", "text/plain"), ("Authorization", &bearer)],
        b"{\"message\":\"plain\"}\n",
    );
    assert_eq!(status, 415);
    let bulk = b"{\"index\":{\"_index\":\"logs\"}}\n{\"message\":\"foreign\"}\n";
    let (status, _) =
        http(port, "POST", "/_bulk", &[ndjson, ("Origin", "https://evil.example"), ("Authorization", &bearer)], bulk);
    assert_eq!(status, 403);

    // Accepted with the token, as curl and as Filebeat's api_key send it; the
    // payload's @group is not the sender's to choose.
    let (status, body) = http(
        port,
        "POST",
        "/ndjson",
        &[ndjson, ("Authorization", &bearer)],
        b"{\"message\":\"with token\",\"@group\":\"acme\"}\n",
    );
    assert_eq!((status, json(&body)["accepted"].as_u64()), (200, Some(1)), "{body}");
    let api_key = format!("ApiKey {}", base64(&format!("filebeat:{token}")));
    let bulk = b"{\"create\":{\"_index\":\"logs\"}}\n{\"message\":\"with api key\"}\n";
    let (status, body) = http(port, "POST", "/_bulk", &[ndjson, ("Authorization", &api_key)], bulk);
    assert_eq!((status, json(&body)["errors"].as_bool()), (200, Some(false)), "{body}");

    // Exactly those two are stored, in the token's group.
    let admin = format!("Bearer {}", std::fs::read_to_string(dir.path("data/admin.token")).unwrap().trim());
    let search = || {
        let (status, body) = http(port, "GET", "/api/v1/search?query=&from=now-1h", &[("Authorization", &admin)], b"");
        assert_eq!(status, 200, "{body}");
        json(&body)
    };
    wait_for("2 stored events", &mut p.0, || search()["total"] == 2);
    let v = search();
    let mut got: Vec<(String, String)> = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["event"]["message"].as_str().unwrap().into(), h["event"]["@group"].as_str().unwrap().into()))
        .collect();
    got.sort();
    assert_eq!(got, vec![("with api key".into(), "default".into()), ("with token".into(), "default".into())]);
    // Counted, in the stats the Operations page reads.
    let (_, body) = http(port, "GET", "/_node/stats", &[], b"");
    let stats = json(&body);
    let sources = stats["pipelines"]["main"]["plugins"]["sources"].as_array().unwrap().clone();
    let src = sources.iter().find(|s| s["id"] == "http").unwrap();
    assert_eq!(src["counters"]["browser_requests_refused"], 3, "{src}");
    assert!(src["counters"]["auth_failures"].as_u64().unwrap() >= 2, "{src}");
    let sinks = stats["pipelines"]["main"]["plugins"]["sinks"].as_array().unwrap().clone();
    let store = sinks.iter().find(|s| s["id"] == "store").unwrap();
    assert_eq!(store["counters"]["events_expired_on_arrival"], 0, "{store}");
}

/// Standard base64 (padded), for building credentials.
fn base64(s: &str) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in s.as_bytes().chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
