//! Fluentd's forward protocol (v1) over msgpack, bounded (see
//! `docs/specs/fluent_forward.md`): each message is one msgpack array,
//!
//! ```text
//! Message                  [tag, time, record, option?]
//! Forward                  [tag, [[time, record], ...], option?]
//! PackedForward            [tag, bin|str(msgpack [time, record] ...), option?]
//! CompressedPackedForward  PackedForward with option.compressed = "gzip"
//! time                     integer seconds | ext 0 (u32 seconds, u32 nanoseconds, big-endian)
//! option                   {"chunk": id, "size": n, "compressed": "gzip"}
//! ack (sent)               {"ack": id}
//! ```
//!
//! [`next_message`] reads one message from a buffer, `Ok(None)` when the
//! buffer holds only part of one (an error once the buffer passed
//! `max_message`); nesting is bounded by `max_depth`, a gzip payload by
//! `max_decompressed`, msgpack lengths never preallocate beyond the bytes
//! present.

use std::io::{Cursor, Read};

use rmpv::Value as Mp;
use sluice_core::{Object, Value};

/// Why a stream is not the forward protocol (the connection is closed).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ForwardError {
    /// Not msgpack, or a msgpack value of the wrong shape.
    #[error("fluent forward: {0}")]
    Invalid(String),
    /// A message longer than the limit.
    #[error("fluent forward: a message exceeds {0} bytes")]
    TooLarge(usize),
    /// Nested deeper than the limit.
    #[error("fluent forward: nested deeper than {0}")]
    TooDeep(usize),
    /// The gzip payload inflates past the limit.
    #[error("fluent forward: the decompressed payload exceeds {0} bytes")]
    DecompressedTooLarge(usize),
}

/// Limits of the decoder.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest message (msgpack bytes).
    pub max_message: usize,
    /// Largest inflated CompressedPackedForward payload.
    pub max_decompressed: usize,
    /// Deepest nesting of a message.
    pub max_depth: usize,
}

/// One record.
#[derive(Debug, PartialEq)]
pub struct Entry {
    /// Nanoseconds since the epoch.
    pub time_ns: i64,
    /// The record's fields.
    pub record: Object,
}

/// One message.
#[derive(Debug, PartialEq)]
pub struct Message {
    /// The tag.
    pub tag: String,
    /// Its records.
    pub entries: Vec<Entry>,
    /// `option.chunk`: the sender wants `{"ack": chunk}` back.
    pub chunk: Option<String>,
}

/// One msgpack value of `buf` and the bytes it takes; `None` if incomplete.
fn value(buf: &[u8], limits: &Limits) -> Result<Option<(Mp, usize)>, ForwardError> {
    if buf.is_empty() {
        return Ok(None);
    }
    let mut cur = Cursor::new(buf);
    // rmpv counts two steps per array or map level and two more for a
    // string or binary leaf: this is `max_depth` containers.
    match rmpv::decode::read_value_with_max_depth(&mut cur, limits.max_depth * 2 + 2) {
        Ok(v) => Ok(Some((v, cur.position() as usize))),
        Err(rmpv::decode::Error::DepthLimitExceeded) => Err(ForwardError::TooDeep(limits.max_depth)),
        Err(rmpv::decode::Error::InvalidMarkerRead(e) | rmpv::decode::Error::InvalidDataRead(e))
            if e.kind() == std::io::ErrorKind::UnexpectedEof =>
        {
            if buf.len() > limits.max_message {
                Err(ForwardError::TooLarge(limits.max_message))
            } else {
                Ok(None)
            }
        }
        Err(e) => Err(ForwardError::Invalid(e.to_string())),
    }
}

fn invalid(why: &str) -> ForwardError {
    ForwardError::Invalid(why.to_string())
}

/// The first message of `buf` and the bytes it takes, or `None`.
pub fn next_message(buf: &[u8], limits: &Limits) -> Result<Option<(Message, usize)>, ForwardError> {
    let Some((v, n)) = value(buf, limits)? else { return Ok(None) };
    if n > limits.max_message {
        return Err(ForwardError::TooLarge(limits.max_message));
    }
    let Mp::Array(mut parts) = v else { return Err(invalid("a message is not an array")) };
    if parts.len() < 2 || parts.len() > 4 {
        return Err(invalid("a message has 2 to 4 elements"));
    }
    let tag = match &parts[0] {
        Mp::String(s) => s.as_str().ok_or_else(|| invalid("the tag is not UTF-8"))?.to_string(),
        _ => return Err(invalid("the tag is not a string")),
    };
    let option_at = if matches!(parts[1], Mp::Array(_) | Mp::Binary(_) | Mp::String(_)) { 2 } else { 3 };
    let option = parts.get(option_at).cloned().unwrap_or(Mp::Nil);
    let opt = |key: &str| match &option {
        Mp::Map(m) => m.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v.clone()),
        _ => None,
    };
    let chunk = opt("chunk").and_then(|c| c.as_str().map(str::to_string));
    let mut entries = Vec::new();
    match std::mem::replace(&mut parts[1], Mp::Nil) {
        Mp::Array(list) => {
            for e in list {
                entries.push(entry(e)?);
            }
        }
        Mp::Binary(b) => packed(&b, opt("compressed").as_ref().and_then(Mp::as_str), limits, &mut entries)?,
        Mp::String(s) => packed(s.as_bytes(), opt("compressed").as_ref().and_then(Mp::as_str), limits, &mut entries)?,
        time => {
            let record = parts
                .get_mut(2)
                .map(|r| std::mem::replace(r, Mp::Nil))
                .ok_or_else(|| invalid("a message without a record"))?;
            entries.push(entry(Mp::Array(vec![time, record]))?);
        }
    }
    Ok(Some((Message { tag, entries, chunk }, n)))
}

/// The entries of a (gzip-compressed) PackedForward payload.
fn packed(b: &[u8], compressed: Option<&str>, limits: &Limits, out: &mut Vec<Entry>) -> Result<(), ForwardError> {
    let inflated;
    let mut data = b;
    match compressed {
        None | Some("text") => {}
        Some("gzip") => {
            let mut v = Vec::new();
            // Concatenated gzip members are one stream (Fluent Bit sends several).
            flate2::read::MultiGzDecoder::new(b)
                .take(limits.max_decompressed as u64 + 1)
                .read_to_end(&mut v)
                .map_err(|e| ForwardError::Invalid(format!("bad gzip payload: {e}")))?;
            if v.len() > limits.max_decompressed {
                return Err(ForwardError::DecompressedTooLarge(limits.max_decompressed));
            }
            inflated = v;
            data = &inflated;
        }
        Some(other) => return Err(ForwardError::Invalid(format!("unknown compression {other:?}"))),
    }
    let inner = Limits { max_message: data.len(), ..*limits };
    while !data.is_empty() {
        let Some((v, n)) = value(data, &inner)? else { return Err(invalid("a packed entry is cut short")) };
        out.push(entry(v)?);
        data = &data[n..];
    }
    Ok(())
}

fn entry(e: Mp) -> Result<Entry, ForwardError> {
    let Mp::Array(mut pair) = e else { return Err(invalid("an entry is not [time, record]")) };
    if pair.len() != 2 {
        return Err(invalid("an entry is not [time, record]"));
    }
    let record = match pair.pop() {
        Some(Mp::Map(m)) => object(m),
        _ => return Err(invalid("a record is not a map")),
    };
    let time_ns = match pair.pop() {
        Some(Mp::Integer(i)) => {
            i.as_i64().and_then(|s| s.checked_mul(1_000_000_000)).ok_or_else(|| invalid("time out of range"))?
        }
        Some(Mp::Ext(0, b)) if b.len() == 8 => {
            let s = i64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            let ns = i64::from(u32::from_be_bytes([b[4], b[5], b[6], b[7]]));
            s * 1_000_000_000 + ns
        }
        Some(Mp::F64(f)) if f.is_finite() && f.abs() < 9.0e9 => (f * 1e9) as i64,
        _ => return Err(invalid("time is not an integer or EventTime")),
    };
    Ok(Entry { time_ns, record })
}

fn object(m: Vec<(Mp, Mp)>) -> Object {
    let mut o = Object::with_capacity(m.len());
    for (k, v) in m {
        let key = match k {
            Mp::String(s) => s.into_str().unwrap_or_default(),
            Mp::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
            other => other.to_string(),
        };
        o.insert(key.as_str(), convert(v));
    }
    o
}

/// A msgpack value as an event value (binary as lossy UTF-8, extensions as null).
fn convert(v: Mp) -> Value {
    match v {
        Mp::Nil | Mp::Ext(..) => Value::Null,
        Mp::Boolean(b) => Value::Bool(b),
        Mp::Integer(i) => match i.as_i64() {
            Some(n) => Value::Int(n),
            None => i.as_u64().map_or(Value::Null, Value::from),
        },
        Mp::F32(f) => Value::new_f64(f64::from(f)).unwrap_or(Value::Null),
        Mp::F64(f) => Value::new_f64(f).unwrap_or(Value::Null),
        Mp::String(s) => match s.into_str() {
            Some(s) => Value::from(s),
            None => Value::Null,
        },
        Mp::Binary(b) => Value::from(String::from_utf8_lossy(&b).into_owned()),
        Mp::Array(a) => Value::Array(a.into_iter().map(convert).collect()),
        Mp::Map(m) => Value::Object(object(m)),
    }
}

/// A client's PING of the shared-key handshake:
/// `["PING", hostname, shared_key_salt, shared_key_hexdigest, username, password_digest]`.
#[derive(Debug, PartialEq, Eq)]
pub struct Ping {
    /// The client's hostname.
    pub hostname: String,
    /// The client's salt.
    pub salt: String,
    /// hex(sha512(salt + hostname + nonce + shared_key)).
    pub digest: String,
}

fn text(v: &Mp) -> Option<String> {
    match v {
        Mp::String(s) => s.as_str().map(str::to_string),
        Mp::Binary(b) => String::from_utf8(b.clone()).ok(),
        _ => None,
    }
}

/// The PING at the start of `buf`, or `None` if incomplete.
pub fn next_ping(buf: &[u8], limits: &Limits) -> Result<Option<(Ping, usize)>, ForwardError> {
    let Some((v, n)) = value(buf, limits)? else { return Ok(None) };
    let Mp::Array(parts) = v else { return Err(invalid("the handshake expects a PING array")) };
    if parts.len() < 4 || parts[0].as_str() != Some("PING") {
        return Err(invalid("the handshake expects [\"PING\", hostname, salt, digest, ...]"));
    }
    let field = |i: usize| text(&parts[i]).ok_or_else(|| invalid("a PING field is not a string"));
    Ok(Some((Ping { hostname: field(1)?, salt: field(2)?, digest: field(3)? }, n)))
}

fn encode(v: &Mp) -> Vec<u8> {
    let mut out = Vec::new();
    // INVARIANT: writing into a Vec cannot fail.
    rmpv::encode::write_value(&mut out, v).expect("write to Vec");
    out
}

/// The server's HELO: `["HELO", {"nonce": nonce, "auth": "", "keepalive": true}]`.
pub fn helo(nonce: &str) -> Vec<u8> {
    let opts = vec![
        (Mp::from("nonce"), Mp::from(nonce)),
        (Mp::from("auth"), Mp::from("")),
        (Mp::from("keepalive"), Mp::from(true)),
    ];
    encode(&Mp::Array(vec![Mp::from("HELO"), Mp::Map(opts)]))
}

/// The server's PONG: `["PONG", ok, reason, hostname, digest]`.
pub fn pong(ok: bool, reason: &str, hostname: &str, digest: &str) -> Vec<u8> {
    encode(&Mp::Array(vec![Mp::from("PONG"), Mp::from(ok), Mp::from(reason), Mp::from(hostname), Mp::from(digest)]))
}

/// The msgpack answer `{"ack": chunk}`.
pub fn ack(chunk: &str) -> Vec<u8> {
    encode(&Mp::Map(vec![(Mp::from("ack"), Mp::from(chunk))]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const L: Limits = Limits { max_message: 1 << 16, max_decompressed: 1 << 16, max_depth: 8 };

    fn mp(v: &Mp) -> Vec<u8> {
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, v).unwrap();
        out
    }

    fn rec(m: &str) -> Mp {
        Mp::Map(vec![(Mp::from("message"), Mp::from(m))])
    }

    fn time() -> Mp {
        Mp::Ext(0, vec![0x5e, 0, 0, 0, 0, 0, 0, 5])
    }

    #[test]
    fn the_four_modes_decode_with_chunk_and_split_anywhere() {
        let chunk = Mp::Map(vec![(Mp::from("chunk"), Mp::from("c1"))]);
        let pair = |m: &str| Mp::Array(vec![time(), rec(m)]);
        let packed: Vec<u8> = [mp(&pair("p1")), mp(&pair("p2"))].concat();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&packed).unwrap();
        let gz = gz.finish().unwrap();
        let msgs = [
            Mp::Array(vec![Mp::from("t"), Mp::from(1_600_000_000), rec("m"), chunk.clone()]),
            Mp::Array(vec![Mp::from("t"), Mp::Array(vec![pair("f1"), pair("f2")])]),
            Mp::Array(vec![Mp::from("t"), Mp::Binary(packed.clone()), chunk.clone()]),
            Mp::Array(vec![
                Mp::from("t"),
                Mp::Binary(gz),
                Mp::Map(vec![(Mp::from("compressed"), Mp::from("gzip")), (Mp::from("chunk"), Mp::from("c2"))]),
            ]),
        ];
        let stream: Vec<u8> = msgs.iter().flat_map(mp).collect();
        for cut in 0..stream.len() {
            let mut got = Vec::new();
            let mut pos = 0;
            while let Some((m, n)) = next_message(&stream[pos..cut], &L).unwrap() {
                got.push(m);
                pos += n;
            }
            while let Some((m, n)) = next_message(&stream[pos..], &L).unwrap_or_else(|e| panic!("cut {cut}: {e:?}")) {
                got.push(m);
                pos += n;
            }
            assert_eq!(pos, stream.len());
            let messages: Vec<Vec<&str>> = got
                .iter()
                .map(|m| m.entries.iter().map(|e| e.record.get("message").and_then(Value::as_str).unwrap()).collect())
                .collect();
            assert_eq!(messages, vec![vec!["m"], vec!["f1", "f2"], vec!["p1", "p2"], vec!["p1", "p2"]]);
            let chunks: Vec<Option<&str>> = got.iter().map(|m| m.chunk.as_deref()).collect();
            assert_eq!(chunks, vec![Some("c1"), None, Some("c1"), Some("c2")]);
            assert_eq!(got[0].entries[0].time_ns, 1_600_000_000_000_000_000);
            assert_eq!(got[1].entries[0].time_ns, 0x5e00_0000 * 1_000_000_000 + 5);
        }
        assert_eq!(ack("c1"), mp(&Mp::Map(vec![(Mp::from("ack"), Mp::from("c1"))])));
    }

    #[test]
    fn bad_input_is_refused_within_limits() {
        assert!(matches!(next_message(&mp(&Mp::from(1)), &L), Err(ForwardError::Invalid(_))));
        assert!(matches!(
            next_message(&mp(&Mp::Array(vec![Mp::from(1), Mp::from(2)])), &L),
            Err(ForwardError::Invalid(_))
        ));
        let mut deep = rec("x");
        for _ in 0..20 {
            deep = Mp::Array(vec![deep]);
        }
        let m = Mp::Array(vec![Mp::from("t"), Mp::from(1), deep]);
        assert_eq!(next_message(&mp(&m), &L), Err(ForwardError::TooDeep(8)));
        // An array announcing 2^32-1 elements in 6 bytes: incomplete, no huge allocation.
        assert_eq!(next_message(b"\xdd\xff\xff\xff\xff\xa1", &L), Ok(None));
        // ... and past max_message it is an error, not a wait.
        let mut big = b"\xdd\xff\xff\xff\xff".to_vec();
        big.extend(std::iter::repeat_n(0xc0u8, (1 << 16) + 1));
        assert_eq!(next_message(&big, &L), Err(ForwardError::TooLarge(1 << 16)));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![0xc0; 1 << 20]).unwrap();
        let bomb = Mp::Array(vec![
            Mp::from("t"),
            Mp::Binary(gz.finish().unwrap()),
            Mp::Map(vec![(Mp::from("compressed"), Mp::from("gzip"))]),
        ]);
        assert_eq!(next_message(&mp(&bomb), &L), Err(ForwardError::DecompressedTooLarge(1 << 16)));
    }
}

#[cfg(test)]
mod seed_tests {
    use super::*;

    /// The committed fuzz seeds (`fuzz/seeds/make.py`) are what they say.
    #[test]
    fn fuzz_seeds_decode_as_named() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/fluent_forward");
        let l = Limits { max_message: 1 << 20, max_decompressed: 64 << 10, max_depth: 16 };
        for (name, records, chunk) in
            [("message", 1, Some("c1")), ("forward", 2, None), ("packed", 2, Some("c2")), ("compressed", 2, Some("c3"))]
        {
            let b = std::fs::read(dir.join(format!("{name}.bin"))).unwrap();
            let (m, n) = next_message(&b, &l).unwrap().unwrap();
            assert_eq!((n, m.entries.len(), m.chunk.as_deref()), (b.len(), records, chunk), "{name}");
        }
        let b = std::fs::read(dir.join("bomb.bin")).unwrap();
        assert_eq!(next_message(&b, &l), Err(ForwardError::DecompressedTooLarge(64 << 10)));
    }
}
