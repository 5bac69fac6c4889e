//! Issue #21, the `gelf` source through the real binary with a real,
//! unmodified client: `pygelf` (installed into `.cache/venv` by
//! `scripts/python-env.sh`) sends over UDP — zlib-compressed and chunked,
//! forced by a small chunk size and long messages — and over TCP
//! (NUL-delimited); every event is counted and its fields checked in a file
//! sink.

mod common;
use common::{free_port, source, source_token, Dir};

const N: usize = 200;

#[test]
fn issue_21_pygelf_udp_chunked_and_tcp_store_every_event_with_its_fields() {
    let Some(python) = common::python_or_skip("gelf_e2e") else { return };
    let dir = Dir::new("gelf");
    let (tcp, udp) = (free_port(), free_port());
    let sources = [
        source("gtcp", "gelf", tcp, "mode = \"tcp\"\ngroup = \"acme\""),
        source("gudp", "gelf", udp, "mode = \"udp\"\ngroup = \"acme\"\nhost = \"pinned\""),
    ];
    let (mut p, out) = common::start_file_node(&dir, &sources.concat(), tcp);
    // Long, poorly compressible messages and a 300-byte chunk size: each UDP
    // message is several chunks. The sender is paced (UDP has no
    // back-pressure; the kernel buffer would overflow on a burst).
    let script = format!(
        r#"
import logging, hashlib, time
from pygelf import GelfTcpHandler, GelfUdpHandler
for name, h in (("udp", GelfUdpHandler(host="127.0.0.1", port={udp}, chunk_size=300, compress=True, _app="pytest", debug=True)),
                ("tcp", GelfTcpHandler(host="127.0.0.1", port={tcp}, _app="pytest", debug=True))):
    log = logging.getLogger(name)
    log.propagate = False
    log.setLevel(logging.DEBUG)
    h.domain = "sender-host"  # the GELF `host` the handler sends
    log.addHandler(h)
    for i in range({N}):
        pad = "".join(hashlib.sha256(f"{{name}}{{i}}{{k}}".encode()).hexdigest() for k in range(40))
        log.warning("%s message %d %s", name, i, pad)
        if i % 20 == 19:
            time.sleep(0.02)
    h.close()
"#
    );
    common::run_python(&python, &script);
    let events = common::wait_events("400 events", &mut p, &out, 2 * N);
    for name in ["tcp", "udp"] {
        let mut seen: Vec<usize> = events
            .iter()
            .filter_map(|e| {
                let m = e["message"].as_str()?.strip_prefix(&format!("{name} message "))?;
                assert_eq!(m.len(), m.find(' ').unwrap() + 1 + 40 * 64, "{name}: message cut");
                m.split(' ').next()?.parse().ok()
            })
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..N).collect::<Vec<_>>(), "{name}");
    }
    let e = &events[0];
    assert!(e.get("tags").is_none(), "{e}");
    assert_eq!(e["level"], "warning", "{e}");
    assert_eq!(e["level_number"], 4, "{e}");
    assert_eq!(e["app"], "pytest", "{e}");
    assert_eq!(e["gelf_version"], "1.1", "{e}");
    // The sender's `host` is a field; the identity is the source's (or,
    // unset, the node's), never the sender's.
    for e in &events {
        assert_eq!(e["host"], "sender-host", "{e}");
        assert_eq!(e["@group"], "acme", "{e}");
        let udp = e["message"].as_str().unwrap().starts_with("udp");
        let host = e["@host"].as_str().unwrap_or("");
        assert!(if udp { host == "pinned" } else { host != "sender-host" }, "{e}");
    }
    assert!(e["line"].as_i64().is_some() && e["logger_name"].as_str().is_some(), "{e}");
    assert!(events.iter().all(|e| e.get("tags").is_none()), "a tagged event");
    p.term();
}

/// `mode = "http"`: pygelf's `GelfHttpHandler` (zlib-compressed, labelled
/// `Content-Encoding: gzip,deflate`, and plain) with the ingest token in its
/// `headers`; a payload without `short_message` gets `400` and is not
/// stored; a wrong token `401`. Exact counts, the token's identity.
#[test]
fn issue_21_pygelf_http_stores_every_event_with_the_tokens_identity() {
    let Some(python) = common::python_or_skip("gelf_e2e") else { return };
    let dir = Dir::new("gelf-http");
    let port = free_port();
    let sources = [
        source("ghttp", "gelf", port, "mode = \"http\""),
        source_token("ghttp", "gelf-token-0123456789abcdef", "group = \"acme\"\nhost = \"pinned\""),
    ];
    let (mut p, out) = common::start_file_node(&dir, &sources.concat(), port);
    let script = format!(
        r#"
import logging
from pygelf import GelfHttpHandler
for name, compress in (("zlib", True), ("plain", False)):
    h = GelfHttpHandler(host="127.0.0.1", port={port}, compress=compress, _app="pytest")
    h.headers["Authorization"] = "Bearer gelf-token-0123456789abcdef"
    h.headers["Content-Type"] = "application/json"
    h.domain = "sender-host"
    log = logging.getLogger(name)
    log.propagate = False
    log.addHandler(h)
    for i in range({N}):
        log.warning("%s message %d", name, i)
"#
    );
    common::run_python(&python, &script);
    let json = ("Content-Type", "application/json");
    let auth = ("Authorization", "Bearer gelf-token-0123456789abcdef");
    let (s, b) = common::http(port, "POST", "/gelf", &[json, auth], br#"{"version":"1.1","host":"h"}"#);
    assert_eq!((s, b.trim()), (400, "gelf: short_message is missing or not a non-empty string"));
    let (s, _) =
        common::http(port, "POST", "/gelf", &[json, ("Authorization", "Bearer nope")], br#"{"short_message":"x"}"#);
    assert_eq!(s, 401);
    let events = common::wait_events("every event", &mut p, &out, 2 * N);
    for name in ["zlib", "plain"] {
        assert_eq!(common::numbered(&events, &format!("{name} message ")), (0..N).collect::<Vec<_>>(), "{name}");
    }
    for e in &events {
        assert_eq!(
            (&e["@group"], &e["@host"], &e["host"], &e["app"]),
            (&"acme".into(), &"pinned".into(), &"sender-host".into(), &"pytest".into()),
            "{e}"
        );
        assert!(e.get("tags").is_none(), "{e}");
    }
    p.term();
}
