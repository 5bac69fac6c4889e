//! Event encodings.
//!
//! - **ndjson output** ([`write_json`]): one JSON object per event, with the
//!   typed parts under reserved `@` keys (`@timestamp`, `@group`, `@subgroup`,
//!   `@host`, `@source`) followed by the event's fields — the shape sinks write
//!   and the store indexes.
//! - **JSON input** ([`event_from_json`]): the reverse; `@timestamp` becomes the
//!   typed timestamp when it parses, and identity keys in untrusted input are
//!   removed (identity comes from the receiving side, never from the payload).
//! - **queue records** ([`encode_batch`] / [`decode_batch`]): the compact form a
//!   batch takes inside the persisted queue, specified in
//!   `docs/specs/queue-format.md`.

use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};

use crate::event::{Event, Identity};
use crate::value::{write_json_str, Object, Value};

/// Reserved output keys (never taken from untrusted input as identity).
pub const RESERVED: [&str; 5] = ["@timestamp", "@group", "@subgroup", "@host", "@source"];

/// A decoding problem.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The bytes are not JSON of the expected shape.
    #[error("invalid json at byte {offset}: {message}")]
    Json {
        /// Byte offset of the problem, when known.
        offset: usize,
        /// The parser's message.
        message: String,
    },
    /// Valid JSON, but not an object.
    #[error("expected a json object, found {found}")]
    NotAnObject {
        /// What was found instead.
        found: &'static str,
    },
}

/// Formats nanoseconds since the epoch as RFC 3339 UTC with up to nine
/// fractional digits (trailing zeros trimmed to 3/6/9 digits).
pub fn format_timestamp(ns: i64) -> String {
    let dt: DateTime<Utc> = DateTime::from_timestamp_nanos(ns);
    dt.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Parses an RFC 3339 timestamp to nanoseconds since the epoch.
pub fn parse_timestamp(s: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(s).ok().and_then(|d| d.timestamp_nanos_opt())
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    write_json_str(out, s);
}

/// Appends `event` as one JSON object (no newline) to `out`.
pub fn write_json(event: &Event, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"@timestamp\":\"");
    out.extend_from_slice(format_timestamp(event.timestamp).as_bytes());
    out.push(b'"');
    let id = &event.identity;
    for (k, v) in [("@group", &id.group), ("@subgroup", &id.subgroup), ("@host", &id.host)] {
        if !v.is_empty() {
            out.push(b',');
            write_str(out, k);
            out.push(b':');
            write_str(out, v);
        }
    }
    if !event.source.is_empty() {
        out.extend_from_slice(b",\"@source\":");
        write_str(out, &event.source);
    }
    for (k, v) in event.fields.iter() {
        if RESERVED.contains(&k) {
            continue;
        }
        out.push(b',');
        write_str(out, k);
        out.push(b':');
        v.write_json(out);
    }
    out.push(b'}');
}

/// The event as a JSON string (tests, debugging, small outputs).
pub fn to_json_string(event: &Event) -> String {
    let mut out = Vec::with_capacity(256);
    write_json(event, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn json_error(e: sonic_rs::Error) -> CodecError {
    CodecError::Json { offset: e.column().saturating_sub(1), message: e.to_string() }
}

/// Parses one JSON object into an event. `@timestamp` (RFC 3339) becomes the
/// typed timestamp (else `now`); the other reserved keys are removed.
/// Returns the event and whether a present `@timestamp` failed to parse.
pub fn event_from_json(bytes: &[u8]) -> Result<(Event, bool), CodecError> {
    let value: Value = sonic_rs::from_slice(bytes).map_err(json_error)?;
    match value {
        Value::Object(mut fields) => Ok(event_from_object(&mut fields)),
        other => Err(CodecError::NotAnObject { found: other.type_name() }),
    }
}

/// Builds an event out of a parsed object (see [`event_from_json`]).
pub fn event_from_object(fields: &mut Object) -> (Event, bool) {
    let mut bad_ts = false;
    let mut ts = None;
    if let Some(v) = fields.get(&"@timestamp") {
        match v.as_str().and_then(parse_timestamp) {
            Some(t) => ts = Some(t),
            None => bad_ts = true,
        }
        if !bad_ts {
            fields.remove(&"@timestamp");
        }
    }
    for k in &RESERVED[1..] {
        if fields.contains_key(k) {
            fields.remove(k);
        }
    }
    let mut event = Event::from_fields(std::mem::take(fields));
    if let Some(t) = ts {
        event.timestamp = t;
    }
    (event, bad_ts)
}

#[derive(serde::Serialize)]
struct RecordOut<'a>(i64, &'a str, &'a str, &'a str, &'a str, u8, &'a Object);

#[derive(serde::Deserialize)]
struct RecordIn(i64, String, String, String, String, u8, Object);

/// Encodes a batch for the persisted queue: one JSON array per event,
/// `[ts, group, subgroup, host, source, dead_letter, {fields}]`, newline-separated.
pub fn encode_batch(events: &[Event], out: &mut Vec<u8>) {
    for e in events {
        let id = &e.identity;
        let rec =
            RecordOut(e.timestamp, &id.group, &id.subgroup, &id.host, &e.source, u8::from(e.dead_letter), &e.fields);
        let _ = sonic_rs::to_writer(&mut *out, &rec);
        out.push(b'\n');
    }
}

/// Decodes what [`encode_batch`] wrote. Consecutive events with the same
/// identity/source share one allocation again.
pub fn decode_batch(bytes: &[u8]) -> Result<Vec<Event>, CodecError> {
    let mut events = Vec::new();
    let mut last_id: Arc<Identity> = Arc::default();
    let mut last_src: Arc<str> = Arc::from("");
    for line in bytes.split(|b| *b == b'\n') {
        if line.is_empty() {
            continue;
        }
        let RecordIn(ts, g, s, h, src, dl, fields) = sonic_rs::from_slice(line).map_err(json_error)?;
        if last_id.group != g || last_id.subgroup != s || last_id.host != h {
            last_id = Arc::new(Identity { group: g, subgroup: s, host: h });
        }
        if *last_src != *src {
            last_src = Arc::from(src);
        }
        events.push(Event {
            timestamp: ts,
            fields,
            identity: Arc::clone(&last_id),
            source: Arc::clone(&last_src),
            dead_letter: dl != 0,
        });
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    const THESIS: &str = r#"{"message":"2016-05-18 10:44:30:045 INFO LogGenerator run This is lognumber 1","@version":"1","@timestamp":"2016-05-18T08:44:34.737Z","source":"/home/kakor/log.log","offset":0,"type":"log","input_type":"log","beat":{"hostname":"ubuntu-1","name":"ubuntu-1"},"count":1,"fields":null,"host":"ubuntu-1","tags":["beats_input_codec_plain_applied"],"creation":"2016-05-18 10:44:30:045","logcount":"1"}"#;

    #[test]
    fn json_roundtrip_keeps_fields_and_timestamp() {
        let (e, bad) = event_from_json(THESIS.as_bytes()).unwrap();
        assert!(!bad);
        assert_eq!(e.timestamp, parse_timestamp("2016-05-18T08:44:34.737Z").unwrap());
        assert_eq!(e.message(), Some("2016-05-18 10:44:30:045 INFO LogGenerator run This is lognumber 1"));
        let out = to_json_string(&e);
        // Key order inside objects is not preserved (JSON objects are unordered).
        assert!(out.starts_with(r#"{"@timestamp":"2016-05-18T08:44:34.737Z","#), "{out}");
        assert!(out.contains(r#""message":"2016-05-18 10:44:30:045 INFO"#), "{out}");
        let (e2, _) = event_from_json(out.as_bytes()).unwrap();
        assert_eq!(e2.fields, e.fields);
        assert_eq!(e2.timestamp, e.timestamp);
    }

    #[test]
    fn untrusted_identity_is_stripped_and_bad_timestamp_kept() {
        let (e, bad) = event_from_json(br#"{"@group":"other","@timestamp":"yesterday","a":1}"#).unwrap();
        assert!(bad);
        assert!(e.fields.get(&"@group").is_none());
        assert_eq!(e.fields.get(&"@timestamp").and_then(|v| v.as_str()), Some("yesterday"));
    }

    #[test]
    fn errors_are_clear() {
        let e = event_from_json(b"[1,2]").unwrap_err();
        assert_eq!(e.to_string(), "expected a json object, found array");
        let e = event_from_json(b"{\"a\":").unwrap_err();
        assert!(e.to_string().starts_with("invalid json"), "{e}");
        assert!(event_from_json(b"\xff\xfe").is_err());
    }

    #[test]
    fn batch_roundtrip() {
        let mut a = Event::from_message("one");
        a.identity = Arc::new(Identity::new("g", "s", "h"));
        a.source = Arc::from("tcp:1");
        let mut b = a.clone();
        b.fields.insert("n", Value::from(5));
        b.dead_letter = true;
        let mut buf = Vec::new();
        encode_batch(&[a.clone(), b.clone()], &mut buf);
        let back = decode_batch(&buf).unwrap();
        assert_eq!(back, vec![a, b]);
        assert!(Arc::ptr_eq(&back[0].identity, &back[1].identity));
    }
}
