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

/// `[search]` reading `url` (plain http, no credentials).
fn plain_search(url: &str) -> String {
    format!("endpoints = [\"{url}\"]\n")
}

/// The node of these tests: the API on `port` with the admin and `other`
/// tokens, `[search] backend = "opensearch"` on `index` with `search` (the
/// endpoint and credential keys), and an `http` source on the API whose
/// events the `elasticsearch` sink writes to `url`, `index`.
fn node_config(dir: &Dir, port: u16, url: &str, index: &str, search: &str) -> String {
    format!(
        r#"
{head}[api.tokens.other]
token = "{OTHER}"
allowed = [{{ group = "other" }}]
[search]
backend = "opensearch"
index = "{index}"
{search}
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
        head = common::api_node_head(&dir.path("data"), port, &format!("token = \"{ADMIN}\"")),
    )
}

/// A fresh index of this run (deleted when dropped), a node on it
/// (`node_config` with `search`), and 200 `hello` events sent through its
/// `/ndjson` and searchable. Returns the index, the node, its API port and
/// config path.
fn node_with_200_events(dir: &Dir, url: &str, search: &str) -> (Index, Proc, u16, std::path::PathBuf) {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let index = Index(url.to_string(), format!("sluice-e2e-{}-{nanos}", std::process::id()));
    let made = curl("PUT", &format!("{url}/{}", index.1), &sluice_opensearch::mapping::index_body().to_string());
    assert!(made.contains("\"acknowledged\":true"), "create index: {made}");
    let port = free_port();
    let config = dir.path("sluice.toml");
    std::fs::write(&config, node_config(dir, port, url, &index.1, search)).unwrap();
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
    (index, node, port, config)
}

#[test]
fn search_api_answers_from_opensearch_with_permissions() {
    let url = opensearch_url();
    let dir = Dir::new("opensearch");
    let (_index, mut node, port, _) = node_with_200_events(&dir, &url, &plain_search(&url));
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

/// nginx with TLS, basic auth and a required client certificate in front of
/// `upstream` (`scripts/tls_proxy.sh`), stopped when dropped.
struct TlsProxy(std::path::PathBuf);
impl Drop for TlsProxy {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join("scripts/tls_proxy.sh")).arg("stop").arg(&self.0).output();
    }
}

/// Issue #20: the read side over `https://` with a CA, basic auth and a
/// client certificate (OpenSearch behind an nginx TLS proxy that demands
/// all three), switched to by a reload of the running node — the backend is
/// rebuilt from the new `[search]`. A wrong password is an error answer
/// naming OpenSearch's 401, never an empty result.
#[test]
fn issue_20_search_over_tls_with_basic_auth_and_a_client_certificate_after_a_reload() {
    let url = opensearch_url();
    let dir = Dir::new("opensearch-tls");
    let (index, mut node, port, config) = node_with_200_events(&dir, &url, &plain_search(&url));
    let proxy_port = free_port();
    let pdir = dir.path("proxy");
    let o = Command::new(repo_root().join("scripts/tls_proxy.sh"))
        .arg("start")
        .arg(&pdir)
        .envs([
            ("PORT", proxy_port.to_string()),
            ("PASSWORD", "search side".into()),
            ("UPSTREAM", url.clone()),
            ("CLIENT_CERT", "required".into()),
        ])
        .output()
        .unwrap();
    let _proxy = TlsProxy(pdir.clone());
    assert!(o.status.success(), "tls_proxy.sh start: {}", String::from_utf8_lossy(&o.stderr));
    let secure = |password: &str| {
        let file = dir.path(&format!("password-{}", password.len()));
        std::fs::write(&file, format!("{password}\n")).unwrap();
        format!(
            "endpoints = [\"https://localhost:{proxy_port}\"]\nca_file = \"{ca}\"\n\
             client_cert_file = \"{cert}\"\nclient_key_file = \"{key}\"\n\
             auth = {{ type = \"basic\", user = \"sluice\", password_file = \"{p}\" }}\n",
            ca = pdir.join("ca.pem").display(),
            cert = pdir.join("client.pem").display(),
            key = pdir.join("client.key").display(),
            p = file.display(),
        )
    };
    let reload = |node: &mut Proc, search: String, nth: usize| {
        common::reload(node, &config, &node_config(&dir, port, &url, &index.1, &search), nth);
    };
    let accessed = || std::fs::read_to_string(pdir.join("logs/access.log")).unwrap_or_default().lines().count();

    // A wrong password: OpenSearch (its proxy) answers 401. That is the
    // node's error (500, the reason in its log), not the caller's (it was a
    // 400 quoting nginx's HTML page before).
    reload(&mut node, secure("wrong side"), 1);
    let (status, body) =
        http(port, "GET", "/api/v1/search?size=1&query=hello", &[("Authorization", &format!("Bearer {ADMIN}"))], b"");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status, 500, "{body}");
    assert_eq!(v["error"]["message"], "internal error (see the node's log)", "{body}");
    let log = std::fs::read_to_string(&node.log).unwrap();
    assert!(
        log.contains(&format!(
            "OpenSearch refused this node's credentials (https://localhost:{proxy_port}/{}/",
            index.1
        )) && log.contains("HTTP 401): check [search] auth"),
        "{log}"
    );
    // nginx writes its access log line once the answer is sent: wait for it.
    common::wait_until("the search in the proxy's access log", &mut node, || accessed() >= 1);

    // The right one: every event, through TLS, the password and the certificate.
    reload(&mut node, secure("search side"), 2);
    let before = accessed();
    assert_eq!(total(port, ADMIN, "hello"), 200);
    assert_eq!(total(port, ADMIN, "n:%5B10%20TO%2019%5D"), 10);
    assert_eq!(total(port, OTHER, "hello"), 0);
    common::wait_until("the searches in the proxy's access log", &mut node, || accessed() > before);
    node.term();
}
