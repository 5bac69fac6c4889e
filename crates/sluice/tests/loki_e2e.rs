//! Issue #21, the `loki` source through the real binary: the unmodified
//! `python-logging-loki` client (installed into `.cache/venv` by
//! `scripts/python-env.sh`) pushes with its v1 emitter (JSON `values` to
//! `/loki/api/v1/push`) and its legacy v0 emitter (`labels`/`entries` to
//! `/api/prom/push`), authenticated with Basic (the token as password);
//! then a snappy-compressed protobuf push (encoded here byte by byte, as
//! Promtail sends it), a malformed body (400, nothing stored) and a wrong
//! token (401). Exact counts and fields in a file sink.

mod common;
use common::{free_port, http, source, source_token, Dir};

const N: usize = 150;
const TOKEN: &str = "loki-token-0123456789abcdef";

/// A protobuf length-delimited field.
fn pb(field: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![(field << 3) | 2];
    let mut n = bytes.len();
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out.extend_from_slice(bytes);
    out
}

/// A protobuf varint field.
fn pb_varint(field: u8, mut n: u64) -> Vec<u8> {
    let mut out = vec![field << 3];
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out
}

/// Snappy raw format with literals only (what a compressor may emit).
fn snappy_literal(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut n = data.len();
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    for chunk in data.chunks(256) {
        out.push(60 << 2);
        out.push((chunk.len() - 1) as u8);
        out.extend_from_slice(chunk);
    }
    out
}

#[test]
fn issue_21_python_logging_loki_and_snappy_protobuf_store_every_entry_with_labels() {
    let Some(python) = common::python_or_skip("loki_e2e") else { return };
    let dir = Dir::new("loki");
    let port = free_port();
    let sources =
        [source("loki", "loki", port, ""), source_token("loki", TOKEN, "group = \"acme\"\nhost = \"pinned\"")];
    let (mut p, out) = common::start_file_node(&dir, &sources.concat(), port);

    let script = format!(
        r#"
import logging, logging_loki
for version, path in (("1", "/loki/api/v1/push"), ("0", "/api/prom/push")):
    h = logging_loki.LokiHandler(url="http://127.0.0.1:{port}" + path, tags={{"app": "pytest", "host": "sender"}},
                                 auth=("anyone", "{TOKEN}"), version=version)
    log = logging.getLogger("loki" + version)
    log.propagate = False
    log.setLevel(logging.INFO)
    log.addHandler(h)
    for i in range({N}):
        log.warning("v%s message %d", version, i)
"#
    );
    let st = common::run_python(&python, &script);
    assert!(
        !String::from_utf8_lossy(&st.stderr).contains("Traceback"),
        "the client saw an error:\n{}",
        String::from_utf8_lossy(&st.stderr)
    );

    // Snappy protobuf: one stream, two entries, one with structured metadata.
    let ts = |s: u64, n: u64| [pb_varint(1, s), pb_varint(2, n)].concat();
    let e1 =
        [pb(1, &ts(1_700_000_000, 5)), pb(2, b"proto one"), pb(3, &[pb(1, b"user"), pb(2, b"ann")].concat())].concat();
    let e2 = [pb(1, &ts(1_700_000_001, 0)), pb(2, b"proto two")].concat();
    let stream = [pb(1, br#"{job="promtail", level="info"}"#), pb(2, &e1), pb(2, &e2)].concat();
    let body = snappy_literal(&pb(1, &stream));
    let bearer = format!("Bearer {TOKEN}");
    let proto = ("Content-Type", "application/x-protobuf");
    let (s, b) = http(port, "POST", "/loki/api/v1/push", &[proto, ("Authorization", &bearer)], &body);
    assert_eq!((s, b.as_str()), (204, ""));
    // Refused: a wrong token, a malformed body (nothing of it stored).
    let json = ("Content-Type", "application/json");
    let (s, _) = http(port, "POST", "/loki/api/v1/push", &[json, ("Authorization", "Bearer nope")], b"{}");
    assert_eq!(s, 401);
    let bad = br#"{"streams":[{"stream":{"job":"x"},"values":[["1","refused"],["not-a-time","refused"]]}]}"#;
    let (s, b) = http(port, "POST", "/loki/api/v1/push", &[json, ("Authorization", &bearer)], bad);
    assert_eq!(s, 400, "{b}");
    assert!(b.contains("invalid timestamp \"\\\"not-a-time\\\"\""), "{b}");
    let (s, b) = http(port, "POST", "/loki/api/v1/push", &[proto, ("Authorization", &bearer)], b"\x05\x10junk");
    assert_eq!(s, 400, "{b}");

    let total = 2 * N + 2;
    let events = common::wait_events("every entry", &mut p, &out, total);
    for v in ["1", "0"] {
        assert_eq!(common::numbered(&events, &format!("v{v} message ")), (0..N).collect::<Vec<_>>(), "emitter v{v}");
    }
    for e in &events {
        assert_eq!((&e["@group"], &e["@host"]), (&"acme".into(), &"pinned".into()), "{e}");
        assert!(e.get("tags").is_none(), "{e}");
    }
    let e = events.iter().find(|e| e["message"] == "v1 message 3").unwrap();
    assert_eq!(
        (&e["app"], &e["severity"], &e["logger"], &e["host"]),
        (&"pytest".into(), &"warning".into(), &"loki1".into(), &"sender".into()),
        "{e}"
    );
    let e = events.iter().find(|e| e["message"] == "proto one").unwrap();
    assert_eq!((&e["job"], &e["level"], &e["user"]), (&"promtail".into(), &"info".into(), &"ann".into()), "{e}");
    assert_eq!(e["@timestamp"], "2023-11-14T22:13:20.000000005Z", "{e}");
    p.term();
}
