//! The search backend follows the config across reloads (issue #20): a
//! `store` sink added by SIGHUP is searchable without a restart, and one
//! removed by SIGHUP stops answering (503 `no_store`) instead of serving a
//! store no pipeline writes any more. Before the fix the API kept whatever
//! it found at start: a store added by a reload was never searchable.

mod common;
use common::{free_port, http, wait_until, Dir, Proc};

const ADMIN: &str = "search-reload-e2e-admin-token-0";

/// A node with the API on `port` and a `tcp` ndjson source on `tcp`,
/// writing a file sink and, when `with_store`, the embedded store too.
fn config(dir: &Dir, port: u16, tcp: u16, with_store: bool) -> String {
    let store = if with_store {
        format!("[pipelines.main.sinks.store]\ntype = \"store\"\npath = \"{}\"\n", dir.path("store").display())
    } else {
        String::new()
    };
    format!(
        r#"
{head}[pipelines.main]
batch_delay = "10ms"
[pipelines.main.sources.tcp]
type = "tcp"
address = "127.0.0.1:{tcp}"
group = "acme"
[pipelines.main.sinks.out]
type = "file"
path = "{o}"
{store}"#,
        head = common::api_node_head(dir.root(), port, &format!("token = \"{ADMIN}\"")),
        o = dir.path("out.ndjson").display(),
    )
}

/// `GET /api/v1/search?query=<q>` as the admin: `(status, total or error type)`.
fn search(port: u16, q: &str) -> (u16, String) {
    let (status, body) = http(
        port,
        "GET",
        &format!("/api/v1/search?query={q}&from=now-1h&size=1"),
        &[("Authorization", &format!("Bearer {ADMIN}"))],
        b"",
    );
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    let what = match status {
        200 => v["total"].to_string(),
        _ => v["error"]["type"].as_str().unwrap_or(&body).to_string(),
    };
    (status, what)
}

fn send(tcp: u16, tag: &str, n: usize) {
    use std::io::Write as _;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", tcp)).unwrap();
    for i in 0..n {
        writeln!(s, "{{\"message\":\"{tag} {i}\"}}").unwrap();
    }
}

#[test]
fn issue_20_a_store_added_by_a_reload_is_searchable_and_one_removed_stops_answering() {
    let dir = Dir::new("search-reload");
    let (port, tcp) = (free_port(), free_port());
    let cfg = dir.path("c.toml");
    std::fs::write(&cfg, config(&dir, port, tcp, false)).unwrap();
    let mut p = Proc::start(&["run", cfg.to_str().unwrap()], &dir.path("log"), "sluice");
    common::wait_port(port, &mut p);
    common::wait_port(tcp, &mut p);
    assert_eq!(search(port, "*"), (503, "no_store".to_string()));

    // A reload adds a store sink: the API serves it, with exactly what the
    // pipeline wrote into it after the reload.
    common::reload(&mut p, &cfg, &config(&dir, port, tcp, true), 1);
    common::wait_port(tcp, &mut p);
    send(tcp, "after", 25);
    wait_until("25 events searchable", &mut p, || search(port, "after") == (200, "25".to_string()));
    assert_eq!(search(port, "*"), (200, "25".to_string()));

    // A reload removes it again: the API stops answering from it.
    common::reload(&mut p, &cfg, &config(&dir, port, tcp, false), 2);
    assert_eq!(search(port, "after"), (503, "no_store".to_string()));
    p.term();
    let log = std::fs::read_to_string(&p.log).unwrap();
    assert!(log.contains("search API serves the embedded store"), "{log}");
    assert!(log.contains("search API has no store any more"), "{log}");
}
