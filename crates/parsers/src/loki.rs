//! Grafana Loki push bodies (`POST /loki/api/v1/push`): JSON and
//! snappy-compressed protobuf (`logproto.PushRequest`, messages written by
//! hand with prost-derive; no protoc). Pure and bounded, fuzzed by
//! `fuzz/fuzz_targets/loki.rs`; the mapping is in `docs/specs/loki.md`.
//!
//! Every entry becomes one [`LokiEntry`]: its line → `message`, its
//! stream's labels and its structured metadata → fields (a name the event
//! already has is kept as `loki_<name>`; the codec's reserved `@` keys as
//! `_@key`), its nanosecond timestamp → the event time.

use sluice_core::{Object, Value};
use thiserror::Error;

/// Limits of one body.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most entries (log lines) in one body.
    pub max_entries: usize,
    /// Most labels (or structured-metadata pairs) per stream or entry.
    pub max_labels: usize,
    /// Deepest JSON nesting.
    pub max_depth: usize,
    /// Largest snappy-decompressed protobuf.
    pub max_decompressed: usize,
}

/// Why a body was refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum LokiError {
    /// Snappy says the body is corrupt.
    #[error("loki: cannot snappy-decompress the body: {0}")]
    Snappy(String),
    /// The body would inflate past the limit.
    #[error("loki: the decompressed body exceeds {0} bytes")]
    TooLarge(usize),
    /// Not a `PushRequest` protobuf.
    #[error("loki: not a PushRequest protobuf: {0}")]
    Protobuf(String),
    /// Not JSON, or not the push shape.
    #[error("loki: invalid JSON push body: {0}")]
    Json(String),
    /// JSON nested deeper than the limit.
    #[error("loki: JSON nested deeper than {0}")]
    TooDeep(usize),
    /// A label set that does not parse.
    #[error("loki: invalid labels {0:?}")]
    Labels(String),
    /// A timestamp that is not nanoseconds since the epoch.
    #[error("loki: invalid timestamp {0:?}")]
    Timestamp(String),
    /// Too many entries or labels.
    #[error("loki: more than {0} {1} in one request")]
    TooMany(usize, &'static str),
}

/// One decoded log entry.
#[derive(Debug, Clone, PartialEq)]
pub struct LokiEntry {
    /// Its fields.
    pub fields: Object,
    /// Its time (ns since the epoch).
    pub timestamp: i64,
}

/// `logproto.PushRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PushRequest {
    /// The streams.
    #[prost(message, repeated, tag = "1")]
    pub streams: Vec<StreamAdapter>,
}

/// `logproto.StreamAdapter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StreamAdapter {
    /// The label set, `{name="value", …}`.
    #[prost(string, tag = "1")]
    pub labels: String,
    /// The entries.
    #[prost(message, repeated, tag = "2")]
    pub entries: Vec<EntryAdapter>,
    /// Ignored.
    #[prost(uint64, tag = "3")]
    pub hash: u64,
}

/// `logproto.EntryAdapter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EntryAdapter {
    /// `google.protobuf.Timestamp`.
    #[prost(message, optional, tag = "1")]
    pub timestamp: Option<Timestamp>,
    /// The log line.
    #[prost(string, tag = "2")]
    pub line: String,
    /// Structured metadata.
    #[prost(message, repeated, tag = "3")]
    pub structured_metadata: Vec<LabelPair>,
}

/// `logproto.LabelPairAdapter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LabelPair {
    /// Name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `google.protobuf.Timestamp`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Timestamp {
    /// Seconds since the epoch.
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    /// Nanoseconds within the second.
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

/// Parses a Prometheus label set `{a="x", b="y\"z"}`.
pub fn parse_labels(s: &str, max: usize) -> Result<Vec<(String, String)>, LokiError> {
    let bad = || LokiError::Labels(s.chars().take(200).collect());
    let inner = s.trim().strip_prefix('{').and_then(|r| r.strip_suffix('}')).ok_or_else(bad)?;
    let mut out = Vec::new();
    let mut rest = inner.trim_start();
    while !rest.is_empty() {
        if out.len() >= max {
            return Err(LokiError::TooMany(max, "labels"));
        }
        let eq = rest.find('=').ok_or_else(bad)?;
        let name = rest[..eq].trim();
        let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(bad());
        }
        rest = rest[eq + 1..].trim_start().strip_prefix('"').ok_or_else(bad)?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err(bad()),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, 't')) => value.push('\t'),
                    Some((_, c)) => value.push(c),
                    None => return Err(bad()),
                },
                Some((_, c)) => value.push(c),
            }
        };
        out.push((name.to_string(), value));
        rest = rest[end + 1..].trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r.trim_start();
        } else if !rest.is_empty() {
            return Err(bad());
        }
    }
    Ok(out)
}

/// Adds `name` unless present (then as `loki_<name>`); reserved keys moved aside.
fn put(fields: &mut Object, name: &str, v: Value) {
    let name = if name.starts_with('@') { format!("_{name}") } else { name.to_string() };
    if fields.contains_key(name.as_str()) {
        fields.insert(&format!("loki_{name}"), v);
    } else {
        fields.insert(name.as_str(), v);
    }
}

fn entry(line: String, labels: &[(String, String)], meta: &[(String, Value)], timestamp: i64) -> LokiEntry {
    let mut fields = Object::with_capacity(1 + labels.len() + meta.len());
    fields.insert("message", line);
    for (k, v) in labels {
        put(&mut fields, k, Value::from(v.as_str()));
    }
    for (k, v) in meta {
        put(&mut fields, k, v.clone());
    }
    LokiEntry { fields, timestamp }
}

/// Decodes a snappy-compressed protobuf body (`Content-Type: application/x-protobuf`).
pub fn decode_protobuf(body: &[u8], limits: Limits) -> Result<Vec<LokiEntry>, LokiError> {
    let len = snap::raw::decompress_len(body).map_err(|e| LokiError::Snappy(e.to_string()))?;
    if len > limits.max_decompressed {
        return Err(LokiError::TooLarge(limits.max_decompressed));
    }
    let raw = snap::raw::Decoder::new().decompress_vec(body).map_err(|e| LokiError::Snappy(e.to_string()))?;
    let req =
        <PushRequest as prost::Message>::decode(raw.as_slice()).map_err(|e| LokiError::Protobuf(e.to_string()))?;
    let total: usize = req.streams.iter().map(|s| s.entries.len()).sum();
    if total > limits.max_entries {
        return Err(LokiError::TooMany(limits.max_entries, "entries"));
    }
    let mut out = Vec::with_capacity(total);
    for s in req.streams {
        let labels = parse_labels(&s.labels, limits.max_labels)?;
        for e in s.entries {
            if e.structured_metadata.len() > limits.max_labels {
                return Err(LokiError::TooMany(limits.max_labels, "structured metadata pairs"));
            }
            let ts = e.timestamp.unwrap_or_default();
            let ns = ts
                .seconds
                .checked_mul(1_000_000_000)
                .and_then(|s| s.checked_add(i64::from(ts.nanos)))
                .filter(|_| (0..1_000_000_000).contains(&ts.nanos))
                .ok_or_else(|| LokiError::Timestamp(format!("{}s {}ns", ts.seconds, ts.nanos)))?;
            let meta: Vec<(String, Value)> =
                e.structured_metadata.into_iter().map(|p| (p.name, Value::from(p.value.as_str()))).collect();
            out.push(entry(e.line, &labels, &meta, ns));
        }
    }
    Ok(out)
}

/// Nanoseconds since the epoch from a JSON `values` timestamp (a decimal string).
fn ns_of(v: &Value) -> Result<i64, LokiError> {
    let parsed = match v {
        Value::String(s) => s.as_str().parse::<i64>().ok(),
        other => other.as_i64(),
    };
    parsed.ok_or_else(|| LokiError::Timestamp(v.to_json().chars().take(64).collect()))
}

/// Decodes a JSON body: `{"streams":[{"stream":{…},"values":[["<ns>","line",{meta}?],…]}]}`
/// (the v1 shape), or the legacy `{"streams":[{"labels":"{…}","entries":[{"ts":"RFC 3339","line":"…"}]}]}`.
pub fn decode_json(body: &[u8], limits: Limits) -> Result<Vec<LokiEntry>, LokiError> {
    if crate::gelf::nesting_depth(body) > limits.max_depth {
        return Err(LokiError::TooDeep(limits.max_depth));
    }
    let json_err = |m: &str| LokiError::Json(m.to_string());
    let v = Value::from_json(body).map_err(|e| LokiError::Json(e.to_string()))?;
    let streams = v.get("streams").and_then(Value::as_array).ok_or_else(|| json_err("no \"streams\" array"))?;
    let mut out = Vec::new();
    for s in streams {
        let (labels, items) = if let Some(stream) = s.get("stream") {
            let obj = stream.as_object().ok_or_else(|| json_err("\"stream\" is not an object"))?;
            if obj.len() > limits.max_labels {
                return Err(LokiError::TooMany(limits.max_labels, "labels"));
            }
            let labels: Vec<(String, String)> = obj
                .iter()
                .map(|(k, v)| (k.to_string(), v.as_str().map_or_else(|| v.to_json(), str::to_string)))
                .collect();
            (labels, s.get("values").and_then(Value::as_array).ok_or_else(|| json_err("no \"values\" array"))?)
        } else if let Some(l) = s.get("labels").and_then(Value::as_str) {
            let labels = parse_labels(l, limits.max_labels)?;
            (labels, s.get("entries").and_then(Value::as_array).ok_or_else(|| json_err("no \"entries\" array"))?)
        } else {
            return Err(json_err("a stream has neither \"stream\" nor \"labels\""));
        };
        if out.len() + items.len() > limits.max_entries {
            return Err(LokiError::TooMany(limits.max_entries, "entries"));
        }
        for item in items {
            if let Some(arr) = item.as_array() {
                let (Some(ts), Some(line)) = (arr.first(), arr.get(1).and_then(Value::as_str)) else {
                    return Err(json_err("a value is not [\"<ns>\", \"line\", …]"));
                };
                let mut meta = Vec::new();
                if let Some(m) = arr.get(2) {
                    let m = m.as_object().ok_or_else(|| json_err("structured metadata is not an object"))?;
                    if m.len() > limits.max_labels {
                        return Err(LokiError::TooMany(limits.max_labels, "structured metadata pairs"));
                    }
                    meta = m.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
                }
                out.push(entry(line.to_string(), &labels, &meta, ns_of(ts)?));
            } else {
                let line =
                    item.get("line").and_then(Value::as_str).ok_or_else(|| json_err("an entry has no \"line\""))?;
                let ts = item.get("ts").and_then(Value::as_str).unwrap_or("");
                let ns = chrono::DateTime::parse_from_rfc3339(ts)
                    .ok()
                    .and_then(|t| t.timestamp_nanos_opt())
                    .ok_or_else(|| LokiError::Timestamp(ts.chars().take(64).collect()))?;
                out.push(entry(line.to_string(), &labels, &[], ns));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Limits = Limits { max_entries: 10, max_labels: 4, max_depth: 8, max_decompressed: 1 << 16 };

    fn s<'a>(e: &'a LokiEntry, k: &str) -> Option<&'a str> {
        e.fields.get(k).and_then(Value::as_str)
    }

    #[test]
    fn labels_parse_with_escapes_and_refuse_garbage() {
        let l = parse_labels(r#"{job="api", msg="a \"q\" b\\c", _x = "1"}"#, 4).unwrap();
        assert_eq!(l[1], ("msg".to_string(), "a \"q\" b\\c".to_string()));
        assert_eq!(l[2], ("_x".to_string(), "1".to_string()));
        assert!(parse_labels("{}", 4).unwrap().is_empty());
        for bad in ["job=\"x\"", "{job=x}", "{1a=\"x\"}", "{a=\"x\" b=\"y\"}", "{a=\"x}"] {
            assert!(matches!(parse_labels(bad, 4), Err(LokiError::Labels(_))), "{bad}");
        }
        assert_eq!(parse_labels(r#"{a="1",b="2",c="3"}"#, 2), Err(LokiError::TooMany(2, "labels")));
    }

    #[test]
    fn json_v1_and_legacy_bodies_map_labels_and_times() {
        let b = br#"{"streams":[{"stream":{"job":"api","message":"lbl","@group":"x"},"values":[["1700000000123456789","hello",{"trace_id":"t1"}],["1","two"]]}]}"#;
        let e = decode_json(b, L).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(
            (s(&e[0], "message"), s(&e[0], "job"), s(&e[0], "trace_id")),
            (Some("hello"), Some("api"), Some("t1"))
        );
        assert_eq!((s(&e[0], "loki_message"), s(&e[0], "_@group")), (Some("lbl"), Some("x")));
        assert_eq!(e[0].timestamp, 1_700_000_000_123_456_789);
        let b = br#"{"streams":[{"labels":"{job=\"old\"}","entries":[{"ts":"2023-11-14T22:13:20.5Z","line":"l"}]}]}"#;
        let e = decode_json(b, L).unwrap();
        assert_eq!((s(&e[0], "job"), e[0].timestamp), (Some("old"), 1_700_000_000_500_000_000));
        for bad in [
            &b"{"[..],
            b"[]",
            br#"{"streams":[{"stream":{},"values":[["x","l"]]}]}"#,
            br#"{"streams":[{"values":[]}]}"#,
        ] {
            assert!(decode_json(bad, L).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let many = format!(r#"{{"streams":[{{"stream":{{}},"values":[{}]}}]}}"#, [r#"["1","x"]"#; 11].join(","));
        assert_eq!(decode_json(many.as_bytes(), L), Err(LokiError::TooMany(10, "entries")));
    }

    #[test]
    fn snappy_protobuf_round_trips_and_bombs_are_refused() {
        let req = PushRequest {
            streams: vec![StreamAdapter {
                labels: r#"{job="proto", level="warn"}"#.into(),
                entries: vec![EntryAdapter {
                    timestamp: Some(Timestamp { seconds: 1_700_000_000, nanos: 7 }),
                    line: "from proto".into(),
                    structured_metadata: vec![LabelPair { name: "user".into(), value: "ann".into() }],
                }],
                hash: 0,
            }],
        };
        let raw = prost::Message::encode_to_vec(&req);
        let body = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
        let e = decode_protobuf(&body, L).unwrap();
        assert_eq!(
            (s(&e[0], "message"), s(&e[0], "level"), s(&e[0], "user")),
            (Some("from proto"), Some("warn"), Some("ann"))
        );
        assert_eq!(e[0].timestamp, 1_700_000_000_000_000_007);
        let big = snap::raw::Encoder::new().compress_vec(&vec![0u8; 1 << 17]).unwrap();
        assert_eq!(decode_protobuf(&big, L), Err(LokiError::TooLarge(1 << 16)));
        assert!(matches!(decode_protobuf(b"\xff\xff\xff", L), Err(LokiError::Snappy(_))));
        let garbage = snap::raw::Encoder::new().compress_vec(b"\x0a\xff\xff").unwrap();
        assert!(matches!(decode_protobuf(&garbage, L), Err(LokiError::Protobuf(_))));
    }
}
