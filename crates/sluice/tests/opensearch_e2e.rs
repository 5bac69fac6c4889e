//! Issue #20, read side end to end: the `sluice` binary with
//! `[search] backend = "opensearch"` (the shape of `examples/opensearch.toml`)
//! takes events over HTTP, indexes them into a real OpenSearch node with the
//! `elasticsearch` sink, and `/api/v1/search` answers from OpenSearch — exact
//! counts, the query language's meaning, and a token of another group seeing
//! nothing.
//!
//! OpenSearch: `SLUICE_OPENSEARCH_URL` if set, else the shared node of
//! `scripts/opensearch.sh start` (started if needed). The index is this
//! run's own and is deleted afterwards.

use std::process::Command;
use std::time::{Duration, Instant};

mod common;
use common::{free_port, http, repo_root, wait_port, Dir, Proc};

const INGEST: &str = "opensearch-e2e-ingest-token-0";
const ADMIN: &str = "opensearch-e2e-admin-token-00";
const OTHER: &str = "opensearch-e2e-other-token-00";

fn opensearch_url() -> String {
    if let Ok(u) = std::env::var("SLUICE_OPENSEARCH_URL") {
        return u;
    }
    let run = |action: &str| {
        let o = Command::new(repo_root().join("scripts/opensearch.sh")).args([action, "main"]).output().unwrap();
        assert!(o.status.success(), "opensearch.sh {action}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    run("start");
    run("url")
}

/// `curl -s -X METHOD url -d body`: the HTTP status.
fn curl(method: &str, url: &str, body: &str) -> String {
    let o = Command::new("curl")
        .args(["-s", "-m", "30", "-X", method, url, "-H", "Content-Type: application/json", "-d", body])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

struct Index(String, String);
impl Drop for Index {
    fn drop(&mut self) {
        curl("DELETE", &format!("{}/{}", self.0, self.1), "");
    }
}

fn total(port: u16, token: &str, query: &str) -> u64 {
    let (status, body) = http(
        port,
        "GET",
        &format!("/api/v1/search?size=1&query={query}"),
        &[("Authorization", &format!("Bearer {token}"))],
        b"",
    );
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["total"].as_u64().unwrap()
}

#[test]
fn search_api_answers_from_opensearch_with_permissions() {
    let url = opensearch_url();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let index = Index(url.clone(), format!("sluice-e2e-{}-{nanos}", std::process::id()));
    let made = curl("PUT", &format!("{url}/{}", index.1), &sluice_opensearch::mapping::index_body().to_string());
    assert!(made.contains("\"acknowledged\":true"), "create index: {made}");

    let dir = Dir::new("opensearch");
    let port = free_port();
    let cfg = format!(
        r#"
[node]
data_dir = "{d}"
[api]
address = "127.0.0.1:{port}"
[api.tokens.admin]
token = "{ADMIN}"
allowed = [{{ group = "*" }}]
[api.tokens.other]
token = "{OTHER}"
allowed = [{{ group = "other" }}]
[search]
backend = "opensearch"
endpoints = ["{url}"]
index = "{index}"
[pipelines.main]
batch_size = 50
batch_delay = "10ms"
[pipelines.main.sources.http]
type = "http"
address = "api"
[pipelines.main.sources.http.tokens.acme]
token = "{INGEST}"
group = "acme"
[pipelines.main.sinks.opensearch]
type = "elasticsearch"
endpoint = "{url}"
index = "{index}"
"#,
        d = dir.path("data").display(),
        index = index.1
    );
    std::fs::write(dir.path("sluice.toml"), cfg).unwrap();
    let config = dir.path("sluice.toml");
    let mut node = Proc::start(&["run", config.to_str().unwrap()], &dir.path("sluice.log"), "sluice");
    wait_port(port, &mut node);

    let body: String =
        (0..200).map(|i| format!("{{\"message\":\"hello opensearch-e2e line {i}\",\"n\":{i}}}\n")).collect();
    // The http source mounts /ndjson on the API port once its pipeline runs.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, answer) =
            http(port, "POST", "/ndjson", &[("Authorization", &format!("Bearer {INGEST}"))], body.as_bytes());
        if status != 404 {
            assert!(status == 200 || status == 202, "{status} {answer}");
            break;
        }
        node.assert_alive();
        assert!(Instant::now() < deadline, "/ndjson not mounted after 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }

    // OpenSearch makes documents searchable at its next refresh (1 s).
    let deadline = Instant::now() + Duration::from_secs(60);
    while total(port, ADMIN, "hello") < 200 {
        node.assert_alive();
        assert!(Instant::now() < deadline, "not all 200 events searchable after 60 s: {}", total(port, ADMIN, "hello"));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(total(port, ADMIN, "hello"), 200);
    assert_eq!(total(port, ADMIN, "n:%5B10%20TO%2019%5D"), 10);
    assert_eq!(total(port, ADMIN, "%40group:acme"), 200);
    assert_eq!(total(port, ADMIN, "opensearch-e2e"), 200, "a multi-token term is a phrase");
    assert_eq!(total(port, ADMIN, "nosuchword"), 0);
    // Another group's token sees nothing of acme's events, whatever it asks.
    assert_eq!(total(port, OTHER, "hello"), 0);
    assert_eq!(total(port, OTHER, "%40group:acme%20OR%20*"), 0);
    node.term();
}
