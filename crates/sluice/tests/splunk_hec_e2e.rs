//! Issue #21, the `splunk_hec` source through the real binary: the
//! unmodified `splunk-handler` client (installed into `.cache/venv` by
//! `scripts/python-env.sh`) sends batches of concatenated event objects to
//! `/services/collector/event`; then raw HTTP checks the `/raw` endpoint,
//! channel acknowledgements (`ackId` → `/ack` true once), Splunk's error
//! answers (bad token, malformed body with `invalid-event-number`) and that
//! nothing of a refused body is stored. Exact counts in a file sink.

mod common;
use common::{free_port, http, source, source_token, Dir};

const N: usize = 300;
const TOKEN: &str = "hec-token-0123456789abcdef";
const CHANNEL: &str = "0123abcd-0000-1111-2222-333344445555";

#[test]
fn issue_21_splunk_handler_and_hec_acks_store_every_event_with_the_tokens_identity() {
    let Some(python) = common::python_or_skip("splunk_hec_e2e") else { return };
    let dir = Dir::new("splunk_hec");
    let (plain, acked) = (free_port(), free_port());
    let sources = [
        source("hec", "splunk_hec", plain, ""),
        source_token("hec", TOKEN, "group = \"acme\"\nsubgroup = \"web\"\nhost = \"pinned\""),
        source("hecack", "splunk_hec", acked, "acknowledgements = true"),
        source_token("hecack", TOKEN, "group = \"acked\""),
    ];
    let (mut p, out) = common::start_file_node(&dir, &sources.concat(), plain);
    common::wait_port(acked, &mut p);

    let script = format!(
        r#"
import logging
from splunk_handler import SplunkHandler
h = SplunkHandler(host="127.0.0.1", port={plain}, token="{TOKEN}", index="main", protocol="http",
                  hostname="sender-host", source="pytest", sourcetype="py", flush_interval=0.2,
                  queue_size=0, verify=False, retry_count=0)
log = logging.getLogger("hec")
log.propagate = False
log.setLevel(logging.INFO)
log.addHandler(h)
for i in range({N}):
    log.info("hec message %d", i)
h.close()
"#
    );
    let st = common::run_python(&python, &script);
    assert!(!String::from_utf8_lossy(&st.stdout).contains("Exception"), "{}", String::from_utf8_lossy(&st.stdout));

    let auth = format!("Splunk {TOKEN}");
    let json = ("Content-Type", "application/json");
    // Splunk's error answers; nothing of a refused body is stored.
    let (s, b) = http(plain, "POST", "/services/collector/event", &[json], br#"{"event":"x"}"#);
    assert_eq!((s, b.contains(r#""code":2"#)), (401, true), "{b}");
    let (s, b) = http(plain, "POST", "/services/collector/event", &[json, ("Authorization", "Splunk nope")], b"{}");
    assert_eq!((s, b.contains(r#""code":4"#)), (403, true), "{b}");
    let (s, b) = http(
        plain,
        "POST",
        "/services/collector/event",
        &[json, ("Authorization", &auth)],
        br#"{"event":"refused 1"}{"event":"refused 2"}{"event":"#,
    );
    assert_eq!(s, 400, "{b}");
    assert!(b.contains(r#""code":6"#) && b.contains(r#""invalid-event-number":2"#), "{b}");
    let (s, b) = http(plain, "POST", "/services/collector/event", &[json, ("Authorization", &auth)], b"{\"time\":1}");
    assert_eq!((s, b.contains(r#""code":12"#)), (400, true), "{b}");
    // Raw lines, query-string metadata.
    let (s, b) = http(
        plain,
        "POST",
        "/services/collector/raw?sourcetype=rawtype&host=raw-host",
        &[("Authorization", &auth)],
        b"raw one\nraw two\r\n\nraw three\n",
    );
    assert_eq!((s, b.as_str()), (200, r#"{"text":"Success","code":0}"#));
    // Acknowledgements: a channel is required; ids per channel from 0; /ack true once.
    let (s, b) =
        http(acked, "POST", "/services/collector/event", &[json, ("Authorization", &auth)], b"{\"event\":\"a\"}");
    assert_eq!((s, b.contains(r#""code":10"#)), (400, true), "{b}");
    let ch = ("X-Splunk-Request-Channel", CHANNEL);
    for i in 0..2 {
        let body = format!(
            r#"{{"event":{{"message":"acked {i}","@group":"evil"}},"time":1700000000.5}} {{"event":"acked {i}b"}}"#
        );
        let (s, b) =
            http(acked, "POST", "/services/collector/event", &[json, ("Authorization", &auth), ch], body.as_bytes());
        assert_eq!((s, b), (200, format!(r#"{{"text":"Success","code":0,"ackId":{i}}}"#)));
    }
    let (s, b) =
        http(acked, "POST", "/services/collector/ack", &[json, ("Authorization", &auth), ch], br#"{"acks":[0,1,5]}"#);
    assert_eq!((s, b.as_str()), (200, r#"{"acks":{"0":true,"1":true,"5":false}}"#));
    let (_, b) =
        http(acked, "POST", "/services/collector/ack", &[json, ("Authorization", &auth), ch], br#"{"acks":[0]}"#);
    assert_eq!(b, r#"{"acks":{"0":false}}"#, "an ack is answered true once");

    let total = N + 3 + 4;
    let events = common::wait_events("every event", &mut p, &out, total);
    assert!(!events.iter().any(|e| e["message"].as_str().unwrap_or("").starts_with("refused")));
    let mut seen: Vec<usize> =
        events.iter().filter_map(|e| e["message"].as_str()?.strip_prefix("hec message ")?.parse().ok()).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..N).collect::<Vec<_>>());
    let e = events.iter().find(|e| e["message"] == "hec message 7").unwrap();
    assert_eq!(
        (&e["host"], &e["source"], &e["sourcetype"], &e["index"]),
        (&"sender-host".into(), &"pytest".into(), &"py".into(), &"main".into()),
        "{e}"
    );
    assert_eq!((&e["@group"], &e["@subgroup"], &e["@host"]), (&"acme".into(), &"web".into(), &"pinned".into()), "{e}");
    let raws: Vec<_> = events.iter().filter(|e| e["sourcetype"] == "rawtype").collect();
    assert_eq!(
        raws.iter().map(|e| e["message"].as_str().unwrap()).collect::<Vec<_>>(),
        ["raw one", "raw two", "raw three"]
    );
    assert_eq!(raws[0]["host"], "raw-host");
    let a = events.iter().find(|e| e["message"] == "acked 1").unwrap();
    assert_eq!((&a["@group"], &a["_@group"]), (&"acked".into(), &"evil".into()), "{a}");
    assert!(a["@timestamp"].as_str().unwrap().starts_with("2023-11-14T22:13:20.5"), "{a}");
    p.term();
}
