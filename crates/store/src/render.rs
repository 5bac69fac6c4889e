//! A stored event as the API shows it: the JSON text kept in the index
//! becomes a hit's `event`.
//!
//! Why a module: ingest keeps every event within what `serde_json` reads
//! (`sluice_core::json`), but a store written by an older sluice, or an event
//! a filter built past those limits, may hold text that does not parse here
//! (`1e400`, nesting of 128 levels). One such document must never fail the
//! search page, the field list or the live tail it is part of (issue #18):
//! it is shown as a stand-in — its `@timestamp`, its stored text as
//! `message` and the tag `_unrenderable` — with the reason in the hit's
//! `error`, and counted ([`crate::Counters::unrenderable`], reported as the
//! `store` sink's `unrenderable_events` counter).

use sluice_core::codec::format_timestamp;
use sluice_core::metrics::Counter;
use sluice_query::Hit;

/// Tag of a stand-in event.
pub const UNRENDERABLE: &str = "_unrenderable";

/// The hit `id` for the stored JSON `text` of an event stamped `ts_ns`.
pub fn hit(id: String, text: &[u8], ts_ns: i64, unrenderable: &Counter) -> Hit {
    match serde_json::from_slice::<serde_json::Value>(text) {
        Ok(event) => Hit { id, event, error: None },
        Err(e) => {
            unrenderable.inc();
            let event = serde_json::json!({
                "@timestamp": format_timestamp(ts_ns),
                "message": String::from_utf8_lossy(text),
                "tags": [UNRENDERABLE],
            });
            Hit { id, event, error: Some(format!("the stored event cannot be shown as JSON: {e}")) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_serde_json_refuses_becomes_a_counted_stand_in() {
        let c = Counter::default();
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(200), "]".repeat(200));
        for (text, why) in [
            (r#"{"@timestamp":"2024-01-02T03:04:05Z","message":"p","a":1e400}"#, "number out of range"),
            (deep.as_str(), "recursion limit exceeded"),
        ] {
            let h = hit("7".into(), text.as_bytes(), 1_704_164_645_000_000_000, &c);
            assert_eq!(h.id, "7");
            assert_eq!(h.event["message"], text);
            assert_eq!(h.event["@timestamp"], "2024-01-02T03:04:05Z");
            assert_eq!(h.event["tags"], serde_json::json!([UNRENDERABLE]));
            let error = h.error.unwrap();
            assert!(error.starts_with("the stored event cannot be shown as JSON: ") && error.contains(why), "{error}");
        }
        assert_eq!(c.get(), 2);
        let ok = hit("8".into(), br#"{"a":1}"#, 0, &c);
        assert_eq!((ok.event, ok.error, c.get()), (serde_json::json!({"a": 1}), None, 2));
    }
}
