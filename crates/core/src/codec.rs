//! Event encodings.
//!
//! - **ndjson output** ([`write_json`]): one JSON object per event, with the
//!   typed parts under reserved `@` keys (`@timestamp`, `@group`, `@subgroup`,
//!   `@host`, `@source`) followed by the event's fields — the shape sinks write
//!   and the store indexes.
//! - **JSON input** ([`event_from_json`]): the reverse; `@timestamp` becomes the
//!   typed timestamp when it parses, and identity keys in untrusted input are
//!   removed (identity comes from the receiving side, never from the payload).
//! - **queue records** ([`encode_batch`] / [`decode_batch`]): the compact
//!   binary form a batch takes inside the persisted queue (no JSON re-parse on
//!   the way out), specified in `docs/specs/queue-format.md`.

use std::sync::Arc;

use bytes::Bytes;
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
    /// Valid JSON nested deeper than [`crate::json::MAX_DEPTH`].
    #[error("json nested deeper than {limit} levels of objects and arrays")]
    TooDeep {
        /// The limit.
        limit: usize,
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
    if let Some(ns) = parse_utc_fast(s.as_bytes()) {
        return Some(ns);
    }
    DateTime::parse_from_rfc3339(s).ok().and_then(|d| d.timestamp_nanos_opt())
}

/// The common shape `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z` without chrono (the
/// `@timestamp` of nearly every JSON event); anything else is `None` and goes
/// to the full RFC 3339 parser.
fn parse_utc_fast(b: &[u8]) -> Option<i64> {
    if b.len() < 20 || b.len() > 30 || *b.last()? != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let mut v = 0i64;
        for c in b.get(r)? {
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + i64::from(c - b'0');
        }
        Some(v)
    };
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let frac = &b[19..b.len() - 1];
    let nanos = match frac {
        [] => 0,
        [b'.', digits @ ..] if !digits.is_empty() && digits.len() <= 9 => {
            num(20..20 + digits.len())? * 10i64.pow(9 - digits.len() as u32)
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3_600 + mi * 60 + sec;
    i64::try_from(i128::from(secs) * 1_000_000_000 + i128::from(nanos)).ok()
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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
    if let Some(raw) = event.raw() {
        raw.write_members(out);
    } else {
        for (k, v) in event.fields().iter() {
            if RESERVED.contains(&k) {
                continue;
            }
            out.push(b',');
            write_str(out, k);
            out.push(b':');
            v.write_json(out);
        }
    }
    out.push(b'}');
}

/// The event as a JSON string (tests, debugging, small outputs).
pub fn to_json_string(event: &Event) -> String {
    let mut out = Vec::with_capacity(256);
    write_json(event, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

impl From<crate::json::JsonError> for CodecError {
    fn from(e: crate::json::JsonError) -> Self {
        match e {
            crate::json::JsonError::Syntax { offset, message } => CodecError::Json { offset, message },
            crate::json::JsonError::TooDeep { limit } => CodecError::TooDeep { limit },
        }
    }
}

/// Parses one JSON object into an event. `@timestamp` (RFC 3339) becomes the
/// typed timestamp (else `now`; a value that does not parse is kept as the
/// field `_@timestamp`); the other reserved keys are removed.
/// Returns the event and whether a present `@timestamp` failed to parse.
/// Numbers and nesting follow [`crate::json`]: what this accepts, every
/// reader reads back.
pub fn event_from_json(bytes: &[u8]) -> Result<(Event, bool), CodecError> {
    let value = crate::json::parse_value(bytes)?;
    match value {
        Value::Object(mut fields) => Ok(event_from_object(&mut fields)),
        other => Err(CodecError::NotAnObject { found: other.type_name() }),
    }
}

/// Like [`event_from_json`] for a line that is its own buffer slice: the
/// fields stay JSON text until a field is needed ([`crate::raw`]), which
/// saves the parse for events nothing looks into. Falls back to
/// [`event_from_json`] for what the fast scan does not keep (errors,
/// reserved keys), so results and error messages are the same.
pub fn event_from_json_bytes(line: &Bytes) -> Result<(Event, bool), CodecError> {
    if let Some(scanned) = crate::raw::scan(line) {
        let ts = match scanned.timestamp() {
            Some(t) => match parse_timestamp(t) {
                Some(ns) => ns,
                // An unparseable @timestamp is kept (as `_@timestamp`): the eager path does it.
                None => return event_from_json(line),
            },
            None => crate::event::now_ns(),
        };
        return Ok((Event::from_raw(ts, scanned.raw, crate::event::no_identity(), crate::event::no_source()), false));
    }
    event_from_json(line)
}

/// Builds an event out of a parsed object (see [`event_from_json`]).
pub fn event_from_object(fields: &mut Object) -> (Event, bool) {
    let mut bad_ts = false;
    let mut ts = None;
    if !fields.iter().any(|(k, _)| k.starts_with('@')) {
        return (Event::from_fields(std::mem::take(fields)), false);
    }
    if let Some(v) = fields.remove(&"@timestamp") {
        match v.as_str().and_then(parse_timestamp) {
            Some(t) => ts = Some(t),
            None => {
                // Kept under another name: a field named `@timestamp` is
                // never written (the event's own time is), so it would be
                // lost on output. `_@timestamp` is what Logstash uses.
                bad_ts = true;
                fields.insert("_@timestamp", v);
            }
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

/// Version byte at the start of every encoded batch.
pub const BATCH_FORMAT: u8 = 1;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.push(0),
        Value::Bool(false) => out.push(1),
        Value::Bool(true) => out.push(2),
        Value::Int(i) => {
            out.push(3);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Value::Float(f) => {
            out.push(4);
            out.extend_from_slice(&f.to_le_bytes());
        }
        Value::String(s) => {
            out.push(5);
            put_str(out, s);
        }
        Value::Array(a) => {
            out.push(6);
            put_varint(out, a.len() as u64);
            for x in a {
                put_value(out, x);
            }
        }
        Value::Object(o) => {
            out.push(7);
            put_object(out, o);
        }
    }
}

fn put_object(out: &mut Vec<u8>, o: &Object) {
    put_varint(out, o.len() as u64);
    for (k, v) in o.iter() {
        put_str(out, k);
        put_value(out, v);
    }
}

/// Encodes a batch for the persisted queue (binary; layout in
/// `docs/specs/queue-format.md`, "Event batch payload").
pub fn encode_batch(events: &[Event], out: &mut Vec<u8>) {
    out.push(BATCH_FORMAT);
    put_varint(out, events.len() as u64);
    for e in events {
        out.extend_from_slice(&e.timestamp.to_le_bytes());
        put_str(out, &e.identity.group);
        put_str(out, &e.identity.subgroup);
        put_str(out, &e.identity.host);
        put_str(out, &e.source);
        match e.raw() {
            Some(raw) => {
                out.push(u8::from(e.dead_letter) | FLAG_RAW);
                let (bytes, skip) = raw.parts();
                put_varint(out, bytes.len() as u64);
                out.extend_from_slice(bytes);
                let (a, b) = skip.unwrap_or((0, 0));
                put_varint(out, u64::from(a));
                put_varint(out, u64::from(b));
            }
            None => {
                out.push(u8::from(e.dead_letter));
                put_object(out, e.fields());
            }
        }
    }
}

/// Flags byte: bit 0 is `dead_letter`; bit 1 says the fields follow as JSON
/// text (`len`, bytes, skip start, skip end) instead of encoded values.
const FLAG_RAW: u8 = 2;

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

const MAX_DEPTH: usize = 128;

impl<'a> Reader<'a> {
    fn err(&self, message: &str) -> CodecError {
        CodecError::Json { offset: self.pos, message: format!("invalid batch encoding: {message}") }
    }
    fn byte(&mut self) -> Result<u8, CodecError> {
        let b = *self.buf.get(self.pos).ok_or_else(|| self.err("unexpected end"))?;
        self.pos += 1;
        Ok(b)
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.buf.len()).ok_or_else(|| self.err("unexpected end"))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn varint(&mut self) -> Result<u64, CodecError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(self.err("varint too long"))
    }
    fn len(&mut self) -> Result<usize, CodecError> {
        let n = self.varint()?;
        // Every element takes at least one byte: a larger count is corrupt.
        if n > (self.buf.len() - self.pos) as u64 {
            return Err(self.err("length beyond the end"));
        }
        Ok(n as usize)
    }
    /// A length-prefixed byte string.
    fn bytes(&mut self) -> Result<&'a [u8], CodecError> {
        let n = self.len()?;
        self.take(n)
    }
    fn str(&mut self) -> Result<&'a str, CodecError> {
        let n = self.len()?;
        let b = self.take(n)?;
        std::str::from_utf8(b).map_err(|_| self.err("invalid utf-8"))
    }
    fn i64(&mut self) -> Result<i64, CodecError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_le_bytes(a))
    }
    fn value(&mut self, depth: usize) -> Result<Value, CodecError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        Ok(match self.byte()? {
            0 => Value::Null,
            1 => Value::Bool(false),
            2 => Value::Bool(true),
            3 => Value::Int(self.i64()?),
            4 => Value::Float(f64::from_bits(self.i64()? as u64)),
            5 => Value::from(self.str()?),
            6 => {
                let n = self.len()?;
                let mut a = Vec::with_capacity(n);
                for _ in 0..n {
                    a.push(self.value(depth + 1)?);
                }
                Value::Array(a)
            }
            7 => Value::Object(self.object(depth + 1)?),
            t => return Err(self.err(&format!("unknown value tag {t}"))),
        })
    }
    fn object(&mut self, depth: usize) -> Result<Object, CodecError> {
        let n = self.len()?;
        let mut o = Object::with_capacity(n);
        for _ in 0..n {
            let k = crate::value::Str::new(self.str()?);
            let v = self.value(depth)?;
            o.push_unique(k, v);
        }
        Ok(o)
    }
}

/// Decodes what [`encode_batch`] wrote. Consecutive events with the same
/// identity/source share one allocation again. Never panics on bad input.
pub fn decode_batch(bytes: &[u8]) -> Result<Vec<Event>, CodecError> {
    decode_batch_shared(&Bytes::copy_from_slice(bytes))
}

/// [`decode_batch`] over a shared buffer: events kept as JSON text slice it
/// instead of copying.
pub fn decode_batch_shared(shared: &Bytes) -> Result<Vec<Event>, CodecError> {
    let bytes: &[u8] = shared;
    let mut r = Reader { buf: bytes, pos: 0 };
    let version = r.byte()?;
    if version != BATCH_FORMAT {
        return Err(r.err(&format!("unsupported batch format {version}")));
    }
    let n = r.len()?;
    let mut events = Vec::with_capacity(n);
    let mut last_id: Arc<Identity> = Arc::default();
    let mut last_src: Arc<str> = Arc::from("");
    // The encoded identity and source of the event before: consecutive events
    // almost always share them, and one comparison of the encoded bytes is
    // cheaper than four of the strings.
    let mut last_encoded: &[u8] = &[];
    for _ in 0..n {
        let ts = r.i64()?;
        let id_start = r.pos;
        let (g, s, h, src) = (r.bytes()?, r.bytes()?, r.bytes()?, r.bytes()?);
        let encoded = &bytes[id_start..r.pos];
        if encoded != last_encoded {
            let utf8 = |b| std::str::from_utf8(b).map_err(|_| r.err("invalid utf-8"));
            let (g, s, h, src) = (utf8(g)?, utf8(s)?, utf8(h)?, utf8(src)?);
            if last_id.group != g || last_id.subgroup != s || last_id.host != h {
                last_id = Arc::new(Identity::new(g, s, h));
            }
            if *last_src != *src {
                last_src = Arc::from(src);
            }
            last_encoded = encoded;
        }
        let flags = r.byte()?;
        if flags & !(1 | FLAG_RAW) != 0 {
            return Err(r.err("bad flags"));
        }
        let mut event = if flags & FLAG_RAW != 0 {
            let n = r.len()?;
            let start = r.pos;
            r.take(n)?;
            let text = shared.slice(start..start + n);
            let (a, b) = (r.varint()?, r.varint()?);
            let skip = match (u32::try_from(a), u32::try_from(b)) {
                (Ok(0), Ok(0)) => None,
                (Ok(a), Ok(b)) => Some((a, b)),
                _ => return Err(r.err("bad skip range")),
            };
            // Bytes a scan accepted once; a torn or foreign record is caught by
            // the queue's checksum, so only the shape is checked here.
            if text.first() != Some(&b'{') || text.last() != Some(&b'}') {
                return Err(r.err("raw fields are not an object"));
            }
            let raw = crate::raw::RawJson::from_parts(text, skip).ok_or_else(|| r.err("bad skip range"))?;
            Event::from_raw(ts, raw, Arc::clone(&last_id), Arc::clone(&last_src))
        } else {
            Event::new(ts, r.object(0)?, Arc::clone(&last_id), Arc::clone(&last_src))
        };
        event.dead_letter = flags & 1 != 0;
        events.push(event);
    }
    if r.pos != bytes.len() {
        return Err(r.err("trailing bytes"));
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_timestamp_parse_agrees_with_chrono() {
        let chrono_ns = |s: &str| DateTime::parse_from_rfc3339(s).ok().and_then(|d| d.timestamp_nanos_opt());
        for s in [
            "2016-05-18T08:44:34.737Z",
            "2016-05-18T08:44:34Z",
            "2016-05-18t08:44:34.1Z",
            "1970-01-01T00:00:00Z",
            "1969-12-31T23:59:59.999999999Z",
            "2000-02-29T12:00:00.000001Z",
            "2100-02-28T23:59:59Z",
            "2262-04-11T23:47:16.854775807Z",
            "1677-09-21T00:12:43.145224192Z",
            "2024-12-31T23:59:59.123456789Z",
        ] {
            assert_eq!(parse_utc_fast(s.as_bytes()), chrono_ns(s), "{s}");
        }
        for s in [
            "2100-02-29T00:00:00Z",
            "2016-13-01T00:00:00Z",
            "2016-05-18T24:00:00Z",
            "2016-05-18T08:44:34.Z",
            "2016-05-18T08:44:34.1234567890Z",
            "2016-05-18 08:44:34Z",
            "2016-05-18T08:44:34+00:00",
            "+016-05-18T08:44:34Z",
        ] {
            assert_eq!(parse_utc_fast(s.as_bytes()), None, "{s}");
        }
        // Offsets still parse, through chrono.
        assert_eq!(parse_timestamp("2016-05-18T10:44:34+02:00"), parse_timestamp("2016-05-18T08:44:34Z"));
    }

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
        assert_eq!(e2.fields(), e.fields());
        assert_eq!(e2.timestamp, e.timestamp);
    }

    #[test]
    fn untrusted_identity_is_stripped_and_bad_timestamp_kept() {
        let (e, bad) = event_from_json(br#"{"@group":"other","@timestamp":"yesterday","a":1}"#).unwrap();
        assert!(bad);
        assert!(e.fields().get(&"@group").is_none());
        assert_eq!(e.fields().get(&"_@timestamp").and_then(|v| v.as_str()), Some("yesterday"));
    }

    /// Found by the `json_event` fuzz target from its seeds: an unparseable
    /// `@timestamp` was kept as a field named `@timestamp`, which every JSON
    /// writer skips (the event's own time goes there), so the value was lost
    /// on output. It is kept as `_@timestamp` (Logstash's name) instead.
    #[test]
    fn issue_24_an_unparseable_timestamp_survives_a_write_and_read() {
        for line in [&br#"{"@timestamp":"2016-05-(((18T08:44:34.737Z","a":1}"#[..], br#"{"@timestamp":12,"a":1}"#] {
            let (e, bad) = event_from_json(line).unwrap();
            assert!(bad);
            let text = to_json_string(&e);
            let (back, _) = event_from_json(text.as_bytes()).unwrap();
            assert_eq!(back.fields(), e.fields(), "{text}");
            assert!(e.fields().get(&"_@timestamp").is_some(), "{text}");
            let (lazy, lazy_bad) = event_from_json_bytes(&bytes::Bytes::copy_from_slice(line)).unwrap();
            assert_eq!((lazy.fields(), lazy_bad), (e.fields(), true));
        }
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
    fn corrupt_batches_are_errors_not_panics() {
        let mut e = Event::from_message("x");
        e.fields_mut().insert("nested", Value::Array(vec![Value::Float(1.5), Value::Null, Value::from("s")]));
        let mut buf = Vec::new();
        encode_batch(&[e], &mut buf);
        for cut in 0..buf.len() {
            assert!(decode_batch(&buf[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = buf.clone();
        bad[0] = 9;
        assert!(decode_batch(&bad).unwrap_err().to_string().contains("unsupported batch format 9"));
        buf.push(0);
        assert!(decode_batch(&buf).unwrap_err().to_string().contains("trailing bytes"));
    }

    #[test]
    fn batch_roundtrip() {
        let mut a = Event::from_message("one");
        a.identity = Arc::new(Identity::new("g", "s", "h"));
        a.source = Arc::from("tcp:1");
        let mut b = a.clone();
        b.fields_mut().insert("n", Value::from(5));
        b.dead_letter = true;
        let mut buf = Vec::new();
        encode_batch(&[a.clone(), b.clone()], &mut buf);
        let back = decode_batch(&buf).unwrap();
        assert_eq!(back, vec![a, b]);
        assert!(Arc::ptr_eq(&back[0].identity, &back[1].identity));
    }

    #[test]
    fn batch_identity_and_source_changes_between_events_are_kept() {
        let ev = |g: &str, s: &str, h: &str, src: &str| {
            let mut e = Event::from_message("m");
            e.identity = Arc::new(Identity::new(g, s, h));
            e.source = Arc::from(src);
            e
        };
        let events = vec![
            ev("g", "s", "h", "tcp:1"),
            ev("g", "s", "h", "tcp:1"),
            ev("g", "s", "hx", "tcp:1"),
            ev("g", "s", "hx", "tcp:2"),
            ev("gs", "", "hx", "tcp:2"),
            ev("g", "s", "hx", "tcp:2"),
            ev("", "", "", ""),
            ev("g", "s", "h", "tcp:1"),
        ];
        let mut buf = Vec::new();
        encode_batch(&events, &mut buf);
        let back = decode_batch(&buf).unwrap();
        assert_eq!(back, events);
        assert!(Arc::ptr_eq(&back[0].identity, &back[1].identity));
        assert!(Arc::ptr_eq(&back[2].identity, &back[3].identity));
        assert!(Arc::ptr_eq(&back[2].source, &back[1].source));
        assert!(!Arc::ptr_eq(&back[1].identity, &back[2].identity));
        // A host that is not UTF-8 is an error, in a later event too.
        let at = buf.windows(2).position(|w| w == b"hx").unwrap();
        buf[at] = 0xff;
        assert!(decode_batch(&buf).unwrap_err().to_string().contains("invalid utf-8"));
    }
}
