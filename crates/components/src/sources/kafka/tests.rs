//! Tests of the `kafka` component.

use super::decode::split_identity;
use super::*;
use crate::testkit::build_source;

fn decoder(trust: bool) -> Decoder {
    let metrics = Arc::new(ComponentMetrics::new("source", "k", "kafka"));
    Decoder { trust, last_identity: None, last_source: None, invalid: metrics.counter("invalid_records"), metrics }
}

#[test]
fn split_keeps_timestamp_and_removes_identity() {
    let rec = br#"{"@timestamp":"2026-01-01T00:00:00Z","@group":"g","@subgroup":"s","@host":"h","@source":"src","message":"hi","n":1}"#;
    let (p, rebuilt) = split_identity(rec).unwrap();
    assert_eq!((p.group, p.subgroup, p.host, p.source), (Some("g"), Some("s"), Some("h"), Some("src")));
    assert_eq!(rebuilt.unwrap(), br#"{"@timestamp":"2026-01-01T00:00:00Z","message":"hi","n":1}"#);
    // Only identity, no fields.
    let (_, rebuilt) = split_identity(br#"{"@timestamp":"2026-01-01T00:00:00Z","@host":"h"}"#).unwrap();
    assert_eq!(rebuilt.unwrap(), br#"{"@timestamp":"2026-01-01T00:00:00Z"}"#);
    // Nothing to remove: the bytes are used as they are.
    assert!(split_identity(br#"{"@timestamp":"2026-01-01T00:00:00Z","message":"x"}"#).unwrap().1.is_none());
    // Escapes in a reserved value: the eager path decides.
    assert!(split_identity(br#"{"@timestamp":"2026-01-01T00:00:00Z","@host":"a\"b","message":"x"}"#).is_none());
}

#[test]
fn identity_is_taken_only_when_trusted() {
    let mut src = Event::from_message("hello");
    src.identity = Arc::new(Identity::new("acme", "web", "h1"));
    src.source = Arc::from("/var/log/app.log");
    src.timestamp = 1_767_225_600_000_000_000;
    let rec = sluice_core::codec::to_json_string(&src);
    let e = decoder(true).decode(rec.as_bytes());
    assert_eq!(*e.identity, Identity::new("acme", "web", "h1"));
    assert_eq!(&*e.source, "/var/log/app.log");
    assert_eq!(e.timestamp, src.timestamp);
    assert_eq!(e.message(), Some("hello"));
    assert!(e.raw().is_some(), "the fields stay lazy");
    let e = decoder(false).decode(rec.as_bytes());
    assert_eq!(*e.identity, Identity::default());
    assert_eq!(&*e.source, "");
    assert_eq!(e.message(), Some("hello"));
    assert!(e.fields().get("@group").is_none() && e.fields().get("@host").is_none());
    // Reserved keys out of the usual order are still honoured (eager path).
    let odd = br#"{"message":"x","@host":"h2","@group":"g2"}"#;
    let e = decoder(true).decode(odd);
    assert_eq!(*e.identity, Identity::new("g2", "", "h2"));
    let e = decoder(false).decode(odd);
    assert_eq!(*e.identity, Identity::default());
    assert!(e.fields().get("@host").is_none());
}

#[test]
fn invalid_records_are_kept_tagged_and_counted() {
    let mut d = decoder(false);
    let e = d.decode(b"not json at all");
    assert_eq!(e.message(), Some("not json at all"));
    assert!(e.has_tag("_jsonparsefailure"));
    let e = d.decode(b"[1,2]");
    assert!(e.has_tag("_jsonparsefailure"));
    let e = d.decode(b"");
    assert!(e.has_tag("_jsonparsefailure"));
    assert_eq!(d.invalid.get(), 3);
    assert_eq!(d.metrics.events_failed.get(), 3);
}

#[test]
fn frontier_moves_over_the_acknowledged_prefix_only() {
    let f = Frontiers::default();
    let k: PartKey = (Arc::from("t"), 0);
    let one = |end| HashMap::from([(k.clone(), end)]);
    let a = f.register(&one(10));
    let b = f.register(&one(20));
    let c = f.register(&one(30));
    f.resolve(&b, RangeState::Acked);
    assert!(f.due(None, false).is_empty(), "a gap before b");
    f.resolve(&a, RangeState::Acked);
    assert_eq!(f.due(None, false), vec![(k.clone(), 20)]);
    assert!(f.due(None, false).is_empty(), "committed once");
    // At revocation and shutdown the frontier is committed again, in
    // case an asynchronous commit of it failed unseen.
    assert_eq!(f.due(None, true), vec![(k.clone(), 20)]);
    assert_eq!(f.due(Some(&[(Arc::from("other"), 0)]), true), vec![]);
    f.resolve(&c, RangeState::Failed);
    let d = f.register(&one(40));
    f.resolve(&d, RangeState::Acked);
    assert!(f.due(None, false).is_empty(), "a failed batch stops the frontier");
    // A commit that failed is committed again.
    f.uncommit(&[("t".into(), 0)]);
    assert_eq!(f.due(None, false), vec![(k.clone(), 20)]);
    // Acks of a partition that was revoked and assigned again are ignored.
    let old = f.register(&one(50));
    f.parts.lock().remove(&k);
    let new = f.register(&one(60));
    f.resolve(&old, RangeState::Acked);
    assert!(f.due(None, false).is_empty());
    f.resolve(&new, RangeState::Acked);
    assert_eq!(f.due(None, false), vec![(k, 60)]);
}

#[test]
fn config_errors_name_their_key() {
    let base = "brokers = \"127.0.0.1:1\"\ntopics = [\"t\"]\ngroup_id = \"g\"\n";
    let e = build_source(&SPEC, &format!("{base}start_from = \"yesterday\"")).err().unwrap();
    assert!(e.to_string().contains("test.kafka.start_from: invalid time"), "{e}");
    let e = build_source(&SPEC, &format!("{base}replay_from = \"1h\"")).err().unwrap();
    assert!(e.to_string().contains("replay_from: set both"), "{e}");
    let e = build_source(&SPEC, &format!("{base}replay_from = \"1h\"\nreplay_to = \"2h\"")).err().unwrap();
    assert!(e.to_string().contains("replay_to: must be after"), "{e}");
    let e = build_source(&SPEC, "brokers = \"127.0.0.1:1\"\ntopics = []\ngroup_id = \"g\"").err().unwrap();
    assert!(e.to_string().contains("topics: list at least one"), "{e}");
    let e = build_source(&SPEC, &format!("{base}assignment_strategy = \"sticky\"")).err().unwrap();
    assert!(e.to_string().contains("assignment_strategy"), "{e}");
    assert!(build_source(&SPEC, &format!("{base}start_from = \"2026-01-01T00:00:00Z\"")).is_ok());
}
