//! Splunk HTTP Event Collector (HEC) bodies: the `/services/collector/event`
//! format (one or more JSON objects, concatenated as Splunk accepts them,
//! each with an `event` and optional `time`, `host`, `source`,
//! `sourcetype`, `index`, `fields`) and the `/raw` format (lines). Pure and
//! bounded, fuzzed by `fuzz/fuzz_targets/splunk_hec.rs`; the mapping is in
//! `docs/specs/splunk_hec.md`.
//!
//! Mapping of one event object: `event` a string (or any non-object
//! value) → `message`; `event` an object → its keys as fields; then
//! `host`, `source`, `sourcetype`, `index` and each key of `fields` are
//! added as fields of those names, a clash with a key of the event keeping
//! the envelope's value under `splunk_<key>`; `time` (epoch seconds, a
//! number or a numeric string, with a fraction) → the event time. Keys the
//! event codec reserves (`@group`, …) are kept as `_@group`: the sender
//! never sets identity.

use sluice_core::{Object, Value};
use thiserror::Error;

/// Keys the event codec reserves (identity and time), never taken from a sender.
const RESERVED: [&str; 5] = ["@timestamp", "@group", "@subgroup", "@host", "@source"];
/// Envelope keys copied to fields.
const ENVELOPE: [&str; 4] = ["host", "source", "sourcetype", "index"];

/// Limits of one body.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most events (objects or raw lines) in one body.
    pub max_events: usize,
    /// Deepest JSON nesting (the envelope object is level 1).
    pub max_depth: usize,
}

/// Why a body was refused, with Splunk's code and text.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum HecError {
    /// The body holds nothing.
    #[error("No data")]
    NoData,
    /// Event `index` (0-based) is not a JSON object, or the body between
    /// objects is not whitespace.
    #[error("Invalid data format: event {index}: {reason}")]
    InvalidFormat {
        /// 0-based number of the event.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// Event `index` has no `event` key.
    #[error("Event field is required")]
    NoEvent {
        /// 0-based number of the event.
        index: usize,
    },
    /// Event `index` has an empty `event`.
    #[error("Event field cannot be blank")]
    BlankEvent {
        /// 0-based number of the event.
        index: usize,
    },
    /// More events than the limit.
    #[error("Invalid data format: more than {0} events in one request")]
    TooManyEvents(usize),
    /// `fields` is not an object of flat values.
    #[error("Error in handling indexed fields: event {index}")]
    IndexedFields {
        /// 0-based number of the event.
        index: usize,
    },
}

impl HecError {
    /// Splunk's numeric code for this error.
    pub fn code(&self) -> u32 {
        match self {
            HecError::NoData => 5,
            HecError::InvalidFormat { .. } | HecError::TooManyEvents(_) => 6,
            HecError::NoEvent { .. } => 12,
            HecError::BlankEvent { .. } => 13,
            HecError::IndexedFields { .. } => 15,
        }
    }

    /// The 0-based number of the event at fault, when one is.
    pub fn event_number(&self) -> Option<usize> {
        match self {
            HecError::InvalidFormat { index, .. }
            | HecError::NoEvent { index }
            | HecError::BlankEvent { index }
            | HecError::IndexedFields { index } => Some(*index),
            _ => None,
        }
    }
}

/// One decoded event.
#[derive(Debug, Clone, PartialEq)]
pub struct HecEvent {
    /// Its fields.
    pub fields: Object,
    /// Its time (ns since the epoch), when `time` was given and valid.
    pub timestamp: Option<i64>,
}

/// Splits a body of concatenated JSON objects: the byte ranges of each
/// top-level object and its nesting depth. Only whitespace may lie between
/// objects.
fn split_objects(body: &[u8], limits: Limits) -> Result<Vec<(usize, usize)>, HecError> {
    let mut out = Vec::new();
    let mut i = 0;
    let n = body.len();
    while i < n {
        let b = body[i];
        if b.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let index = out.len();
        if out.len() >= limits.max_events {
            return Err(HecError::TooManyEvents(limits.max_events));
        }
        if b != b'{' {
            return Err(HecError::InvalidFormat { index, reason: "expected a JSON object".into() });
        }
        let start = i;
        let (mut depth, mut in_str, mut esc) = (0usize, false, false);
        let mut end = None;
        while i < n {
            let c = body[i];
            i += 1;
            if in_str {
                if esc {
                    esc = false;
                } else if c == b'\\' {
                    esc = true;
                } else if c == b'"' {
                    in_str = false;
                }
                continue;
            }
            match c {
                b'"' => in_str = true,
                b'{' | b'[' => {
                    depth += 1;
                    if depth > limits.max_depth {
                        return Err(HecError::InvalidFormat {
                            index,
                            reason: format!("nested deeper than {}", limits.max_depth),
                        });
                    }
                }
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        match end {
            Some(e) => out.push((start, e)),
            None => return Err(HecError::InvalidFormat { index, reason: "unterminated JSON object".into() }),
        }
    }
    if out.is_empty() {
        return Err(HecError::NoData);
    }
    Ok(out)
}

/// Epoch seconds (a number or a numeric string) to nanoseconds.
fn time_ns(v: &Value) -> Option<i64> {
    let s = match v {
        Value::String(s) => s.as_str().trim().parse::<f64>().ok()?,
        other => other.as_f64()?,
    };
    if !s.is_finite() || !(0.0..9.0e9).contains(&s) {
        return None;
    }
    let whole = s.floor();
    let micros = ((s - whole) * 1e6).round() as i64;
    Some(whole as i64 * 1_000_000_000 + micros * 1000)
}

/// A field name with the codec's reserved keys moved aside.
fn safe_key(k: &str) -> std::borrow::Cow<'_, str> {
    if RESERVED.contains(&k) {
        std::borrow::Cow::Owned(format!("_{k}"))
    } else {
        std::borrow::Cow::Borrowed(k)
    }
}

/// Inserts `key` unless the event already has it (then as `splunk_<key>`).
fn insert_envelope(fields: &mut Object, key: &str, v: Value) {
    let key = safe_key(key);
    if fields.contains_key(key.as_ref()) {
        fields.insert(&format!("splunk_{key}"), v);
    } else {
        fields.insert(key.as_ref(), v);
    }
}

/// Decodes an `/event` body.
pub fn decode_events(body: &[u8], limits: Limits) -> Result<Vec<HecEvent>, HecError> {
    let ranges = split_objects(body, limits)?;
    let mut out = Vec::with_capacity(ranges.len());
    for (index, (s, e)) in ranges.into_iter().enumerate() {
        let value =
            Value::from_json(&body[s..e]).map_err(|err| HecError::InvalidFormat { index, reason: err.to_string() })?;
        let Value::Object(obj) = value else {
            return Err(HecError::InvalidFormat { index, reason: "expected a JSON object".into() });
        };
        let mut fields = Object::with_capacity(obj.len() + 4);
        let mut timestamp = None;
        let mut event = None;
        let mut envelope = Vec::new();
        let mut indexed = None;
        for (k, v) in obj.into_iter() {
            match k.as_str() {
                "event" => event = Some(v),
                "time" => match time_ns(&v) {
                    Some(t) => timestamp = Some(t),
                    None => envelope.push(("splunk_time".to_string(), v)),
                },
                "fields" => indexed = Some(v),
                k if ENVELOPE.contains(&k) => envelope.push((k.to_string(), v)),
                // Other envelope keys are not Splunk's; kept beside the event.
                k => envelope.push((k.to_string(), v)),
            }
        }
        match event {
            None | Some(Value::Null) => return Err(HecError::NoEvent { index }),
            Some(Value::String(s)) if s.as_str().is_empty() => return Err(HecError::BlankEvent { index }),
            Some(Value::Object(o)) if o.is_empty() => return Err(HecError::BlankEvent { index }),
            Some(Value::Object(o)) => {
                for (k, v) in o.into_iter() {
                    fields.insert(safe_key(k.as_str()).as_ref(), v);
                }
            }
            Some(v) => {
                fields.insert("message", v);
            }
        }
        for (k, v) in envelope {
            insert_envelope(&mut fields, &k, v);
        }
        match indexed {
            None | Some(Value::Null) => {}
            Some(Value::Object(o)) => {
                for (k, v) in o.into_iter() {
                    if v.is_object() {
                        return Err(HecError::IndexedFields { index });
                    }
                    insert_envelope(&mut fields, k.as_str(), v);
                }
            }
            Some(_) => return Err(HecError::IndexedFields { index }),
        }
        out.push(HecEvent { fields, timestamp });
    }
    Ok(out)
}

/// Splits a `/raw` body into its non-empty lines (`\r\n` or `\n`), each
/// cut at `max_line` bytes (on a UTF-8 boundary); invalid UTF-8 is replaced.
pub fn split_raw(body: &[u8], limits: Limits, max_line: usize) -> Result<Vec<String>, HecError> {
    let mut out = Vec::new();
    for line in body.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if out.len() >= limits.max_events {
            return Err(HecError::TooManyEvents(limits.max_events));
        }
        let mut s = String::from_utf8_lossy(line).into_owned();
        if s.len() > max_line {
            let mut cut = max_line;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
        }
        out.push(s);
    }
    if out.is_empty() {
        return Err(HecError::NoData);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Limits = Limits { max_events: 100, max_depth: 8 };

    #[test]
    fn concatenated_events_map_to_fields() {
        let body = br#"{"event":"hello","time":1700000000.25,"host":"web-1","sourcetype":"app","fields":{"env":"prod"}}
        {"event":{"message":"m","host":"inner","@group":"evil","n":1},"host":"outer"}"#;
        let ev = decode_events(body, L).unwrap();
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0].fields.get("message").and_then(Value::as_str), Some("hello"));
        assert_eq!(ev[0].fields.get("host").and_then(Value::as_str), Some("web-1"));
        assert_eq!(ev[0].fields.get("sourcetype").and_then(Value::as_str), Some("app"));
        assert_eq!(ev[0].fields.get("env").and_then(Value::as_str), Some("prod"));
        assert_eq!(ev[0].timestamp, Some(1_700_000_000_250_000_000));
        assert_eq!(ev[1].fields.get("host").and_then(Value::as_str), Some("inner"));
        assert_eq!(ev[1].fields.get("splunk_host").and_then(Value::as_str), Some("outer"));
        assert_eq!(ev[1].fields.get("_@group").and_then(Value::as_str), Some("evil"));
        assert!(ev[1].fields.get("@group").is_none());
        assert_eq!(ev[1].timestamp, None);
        let ev = decode_events(br#"{"event":"x","time":"1700000001"}"#, L).unwrap();
        assert_eq!(ev[0].timestamp, Some(1_700_000_001_000_000_000));
    }

    #[test]
    fn bad_bodies_get_splunk_codes() {
        let cases: &[(&[u8], u32, Option<usize>)] = &[
            (b"", 5, None),
            (b"  \n ", 5, None),
            (b"{\"event\":\"a\"} nope", 6, Some(1)),
            (b"{\"event\":\"a\"}{\"event\":", 6, Some(1)),
            (b"{\"event\":\"a\"}{\"time\":1}", 12, Some(1)),
            (b"{\"event\":\"\"}", 13, Some(0)),
            (b"{\"event\":\"a\",\"fields\":{\"x\":{\"y\":1}}}", 15, Some(0)),
            (b"{\"event\":[[[[[[[[[[1]]]]]]]]]]}", 6, Some(0)),
            (b"{\"event\":\"a\",}", 6, Some(0)),
        ];
        for (body, code, at) in cases {
            let e = decode_events(body, L).unwrap_err();
            assert_eq!((e.code(), e.event_number()), (*code, *at), "{:?}: {e}", String::from_utf8_lossy(body));
        }
        let many = "{\"event\":\"a\"}".repeat(101);
        assert_eq!(decode_events(many.as_bytes(), L).unwrap_err(), HecError::TooManyEvents(100));
    }

    #[test]
    fn raw_lines_are_split_and_cut() {
        let lines = split_raw(b"one\r\n\n two \nthr\xc3\xa9e", L, 4).unwrap();
        assert_eq!(lines, vec!["one", " two", "thr"]);
        assert_eq!(split_raw(b"\n\n", L, 10).unwrap_err(), HecError::NoData);
    }
}
