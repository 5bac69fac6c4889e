//! GELF 1.1 (Graylog Extended Log Format): payload decompression, chunk
//! reassembly and the JSON-to-fields mapping. Pure: time is passed in, so
//! every part is unit-tested and fuzzed (`fuzz/fuzz_targets/gelf.rs`).
//! The wire format and the mapping are in `docs/specs/gelf.md`.
//!
//! - [`decompress`]: a payload starting with the gzip magic (`1f 8b`) or a
//!   zlib header (`78 xx`, header checksum valid) is inflated, never past
//!   `max_bytes` (a zip bomb is refused, not expanded); anything else is
//!   taken as plain JSON.
//! - [`Reassembler`]: chunked UDP messages (`1e 0f`, 8-byte id, sequence
//!   number, sequence count ≤ 128) are kept until complete, bounded in
//!   pending sets, bytes per message and time.
//! - [`decode`]: the JSON object to fields: `short_message` → `message`,
//!   `timestamp` → the event time, `level` → `level` (name) and
//!   `level_number`, `version` → `gelf_version`, `_x` → `x` (`_id`, which
//!   GELF reserves, → `gelf_id`).

use std::collections::HashMap;
use std::io::Read;
use std::time::{Duration, Instant};

use sluice_core::{Object, Str, Value};
use thiserror::Error;

use crate::syslog::severity_name;

/// The two bytes that start a chunk.
pub const CHUNK_MAGIC: [u8; 2] = [0x1e, 0x0f];
/// Largest sequence count GELF allows.
pub const MAX_CHUNKS: u8 = 128;
/// Bytes of a chunk header: magic, id, sequence number, sequence count.
pub const CHUNK_HEADER: usize = 12;

/// Why a payload or chunk was refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum GelfError {
    /// The compressed stream is corrupt.
    #[error("gelf: cannot decompress the payload: {0}")]
    Decompress(String),
    /// Inflating would pass the limit.
    #[error("gelf: the decompressed payload exceeds {0} bytes")]
    DecompressedTooLarge(usize),
    /// Not a JSON document.
    #[error("gelf: not JSON: {0}")]
    NotJson(String),
    /// JSON, but not an object.
    #[error("gelf: the payload is not a JSON object")]
    NotObject,
    /// `short_message` is missing, empty or not a string.
    #[error("gelf: short_message is missing or not a non-empty string")]
    NoShortMessage,
    /// Arrays/objects nested deeper than the limit.
    #[error("gelf: JSON nested deeper than {0} levels")]
    TooDeep(usize),
    /// A chunk shorter than its header, or with a sequence count of 0 or
    /// above 128, or a sequence number not below the count.
    #[error("gelf: bad chunk header: {0}")]
    BadChunk(&'static str),
    /// The chunks of one message add up to more than the limit.
    #[error("gelf: chunked message exceeds {0} bytes")]
    MessageTooLarge(usize),
}

/// Inflates a gzip or zlib payload (detected by its magic) up to
/// `max_bytes`; returns anything else as it is.
pub fn decompress(payload: &[u8], max_bytes: usize) -> Result<std::borrow::Cow<'_, [u8]>, GelfError> {
    let limit = max_bytes as u64 + 1;
    let mut out = Vec::new();
    let read = if payload.starts_with(&[0x1f, 0x8b]) {
        flate2::read::GzDecoder::new(payload).take(limit).read_to_end(&mut out)
    } else if is_zlib(payload) {
        flate2::read::ZlibDecoder::new(payload).take(limit).read_to_end(&mut out)
    } else {
        if payload.len() > max_bytes {
            return Err(GelfError::DecompressedTooLarge(max_bytes));
        }
        return Ok(std::borrow::Cow::Borrowed(payload));
    };
    read.map_err(|e| GelfError::Decompress(e.to_string()))?;
    if out.len() > max_bytes {
        return Err(GelfError::DecompressedTooLarge(max_bytes));
    }
    Ok(std::borrow::Cow::Owned(out))
}

/// A zlib header: deflate (`CM = 8`), window ≤ 32 KiB, checksum valid.
fn is_zlib(p: &[u8]) -> bool {
    p.len() >= 2 && p[0] & 0x0f == 8 && p[0] >> 4 <= 7 && (u16::from(p[0]) << 8 | u16::from(p[1])) % 31 == 0
}

/// Deepest nesting of arrays and objects in `json` (strings skipped), read
/// before parsing so a deep document costs no recursion.
pub fn nesting_depth(json: &[u8]) -> usize {
    let (mut depth, mut max, mut in_str, mut esc) = (0usize, 0usize, false, false);
    for &b in json {
        if in_str {
            if esc {
                esc = false;
            } else if b == b'\\' {
                esc = true;
            } else if b == b'"' {
                in_str = false;
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// A decoded GELF message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The event fields (see the module docs for the mapping).
    pub fields: Object,
    /// `timestamp` in nanoseconds since the epoch, when given as a number.
    pub timestamp: Option<i64>,
    /// `timestamp` was present but not a usable number.
    pub bad_timestamp: bool,
}

/// Decodes one (decompressed) GELF JSON document. `max_depth` bounds the
/// nesting of the document itself (the top object is level 1).
pub fn decode(json: &[u8], max_depth: usize) -> Result<Message, GelfError> {
    if nesting_depth(json) > max_depth {
        return Err(GelfError::TooDeep(max_depth));
    }
    let value = Value::from_json(json).map_err(|e| GelfError::NotJson(e.to_string()))?;
    let Value::Object(obj) = value else {
        return Err(GelfError::NotObject);
    };
    let mut fields = Object::with_capacity(obj.len() + 1);
    let mut timestamp = None;
    let mut bad_timestamp = false;
    let mut extra = Vec::new();
    let mut message = None;
    for (key, v) in obj.into_iter() {
        match key.as_str() {
            "short_message" => message = Some(v),
            "version" => {
                fields.insert("gelf_version", v);
            }
            "timestamp" => match v.as_f64() {
                Some(s) if s.is_finite() && s.abs() < 9.0e9 => {
                    // Whole seconds and microseconds apart: `s * 1e9` in
                    // one f64 loses the last digits (…125 → …124999936).
                    let whole = s.floor();
                    let micros = ((s - whole) * 1e6).round() as i64;
                    timestamp = Some(whole as i64 * 1_000_000_000 + micros * 1000);
                }
                _ => {
                    bad_timestamp = true;
                    fields.insert("gelf_timestamp", v);
                }
            },
            "level" => {
                match v.as_i64().and_then(|n| u8::try_from(n).ok()).and_then(|n| severity_name(n).map(|s| (n, s))) {
                    Some((n, name)) => {
                        fields.insert("level", name);
                        fields.insert("level_number", i64::from(n));
                    }
                    None => {
                        fields.insert("level", v);
                    }
                }
            }
            "_id" => extra.push((Str::new("gelf_id"), v)),
            k if k.len() > 1 && k.starts_with('_') => extra.push((Str::new(&k[1..]), v)),
            _ => {
                fields.insert(key.as_str(), v);
            }
        }
    }
    match message {
        Some(Value::String(s)) if !s.as_str().is_empty() => {
            fields.insert("message", Value::String(s));
        }
        _ => return Err(GelfError::NoShortMessage),
    }
    // Additional fields never replace a standard one: a clash keeps its
    // underscore (`_host` beside `host`).
    for (k, v) in extra {
        if fields.contains_key(k.as_str()) {
            fields.insert(&format!("_{k}"), v);
        } else {
            fields.insert(k.as_str(), v);
        }
    }
    Ok(Message { fields, timestamp, bad_timestamp })
}

/// Limits of a [`Reassembler`].
#[derive(Debug, Clone, Copy)]
pub struct ChunkLimits {
    /// Most chunks per message (≤ 128).
    pub max_chunks: u8,
    /// Most bytes of one reassembled (still compressed) message.
    pub max_message_bytes: usize,
    /// Most messages waiting for chunks; one more evicts the oldest.
    pub max_pending: usize,
    /// How long a set may wait for its last chunk.
    pub timeout: Duration,
}

impl Default for ChunkLimits {
    fn default() -> Self {
        Self { max_chunks: MAX_CHUNKS, max_message_bytes: 1 << 20, max_pending: 1024, timeout: Duration::from_secs(5) }
    }
}

/// What a chunk did.
#[derive(Debug, PartialEq, Eq)]
pub enum Chunk {
    /// Stored; the set is not complete yet.
    Stored,
    /// A chunk already received (same id and number): ignored.
    Duplicate,
    /// The last chunk: the message, its parts joined in sequence order.
    Complete(Vec<u8>),
    /// Stored, but the pending table was full: the oldest set was dropped.
    StoredEvicting,
}

struct Pending {
    first: Instant,
    parts: Vec<Option<Vec<u8>>>,
    received: usize,
    bytes: usize,
}

/// Reassembles chunked GELF messages.
pub struct Reassembler {
    limits: ChunkLimits,
    pending: HashMap<[u8; 8], Pending>,
}

impl Reassembler {
    /// An empty reassembler.
    pub fn new(limits: ChunkLimits) -> Self {
        Self { limits, pending: HashMap::new() }
    }

    /// Sets waiting for chunks.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Takes one chunk datagram (starting with [`CHUNK_MAGIC`]). An error
    /// drops the chunk's whole set.
    pub fn push(&mut self, datagram: &[u8], now: Instant) -> Result<Chunk, GelfError> {
        if datagram.len() < CHUNK_HEADER || datagram[..2] != CHUNK_MAGIC {
            return Err(GelfError::BadChunk("shorter than the 12-byte header"));
        }
        let mut id = [0u8; 8];
        id.copy_from_slice(&datagram[2..10]);
        let (seq, count) = (datagram[10], datagram[11]);
        if count == 0 || count > self.limits.max_chunks.min(MAX_CHUNKS) {
            self.pending.remove(&id);
            return Err(GelfError::BadChunk("sequence count is 0 or above the limit"));
        }
        if seq >= count {
            self.pending.remove(&id);
            return Err(GelfError::BadChunk("sequence number not below the count"));
        }
        let body = &datagram[CHUNK_HEADER..];
        if count == 1 {
            self.pending.remove(&id);
            return if body.len() > self.limits.max_message_bytes {
                Err(GelfError::MessageTooLarge(self.limits.max_message_bytes))
            } else {
                Ok(Chunk::Complete(body.to_vec()))
            };
        }
        let mut evicted = false;
        if !self.pending.contains_key(&id) && self.pending.len() >= self.limits.max_pending {
            if let Some(oldest) = self.pending.iter().min_by_key(|(_, p)| p.first).map(|(k, _)| *k) {
                self.pending.remove(&oldest);
                evicted = true;
            }
        }
        let set = self.pending.entry(id).or_insert_with(|| Pending {
            first: now,
            parts: vec![None; usize::from(count)],
            received: 0,
            bytes: 0,
        });
        if set.parts.len() != usize::from(count) {
            self.pending.remove(&id);
            return Err(GelfError::BadChunk("sequence count differs from the set's first chunk"));
        }
        let slot = &mut set.parts[usize::from(seq)];
        if slot.is_some() {
            return Ok(Chunk::Duplicate);
        }
        set.bytes += body.len();
        if set.bytes > self.limits.max_message_bytes {
            self.pending.remove(&id);
            return Err(GelfError::MessageTooLarge(self.limits.max_message_bytes));
        }
        *slot = Some(body.to_vec());
        set.received += 1;
        if set.received == set.parts.len() {
            // INVARIANT: the entry was just used above.
            let done = self.pending.remove(&id).expect("set present");
            let mut out = Vec::with_capacity(done.bytes);
            for part in done.parts.into_iter().flatten() {
                out.extend_from_slice(&part);
            }
            return Ok(Chunk::Complete(out));
        }
        Ok(if evicted { Chunk::StoredEvicting } else { Chunk::Stored })
    }

    /// Drops the sets older than the timeout; returns how many.
    pub fn expire(&mut self, now: Instant) -> usize {
        let before = self.pending.len();
        let timeout = self.limits.timeout;
        self.pending.retain(|_, p| now.saturating_duration_since(p.first) < timeout);
        before - self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn chunk(id: u8, seq: u8, count: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![0x1e, 0x0f, id, 0, 0, 0, 0, 0, 0, 0, seq, count];
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn maps_the_standard_and_additional_fields() {
        let m = decode(
            br#"{"version":"1.1","host":"web-1","short_message":"hi","full_message":"hi\nthere","timestamp":1700000000.125,"level":3,"_user":"ann","_id":"x","_host":"other","facility":"app"}"#,
            16,
        )
        .unwrap();
        let f = &m.fields;
        assert_eq!(f.get("message").and_then(Value::as_str), Some("hi"));
        assert_eq!(f.get("full_message").and_then(Value::as_str), Some("hi\nthere"));
        assert_eq!(f.get("host").and_then(Value::as_str), Some("web-1"));
        assert_eq!(f.get("level").and_then(Value::as_str), Some("err"));
        assert_eq!(f.get("level_number").and_then(Value::as_i64), Some(3));
        assert_eq!(f.get("gelf_version").and_then(Value::as_str), Some("1.1"));
        assert_eq!(f.get("user").and_then(Value::as_str), Some("ann"));
        assert_eq!(f.get("gelf_id").and_then(Value::as_str), Some("x"));
        assert_eq!(f.get("_host").and_then(Value::as_str), Some("other"));
        assert_eq!(f.get("facility").and_then(Value::as_str), Some("app"));
        assert_eq!(m.timestamp, Some(1_700_000_000_125_000_000));
        assert!(!m.bad_timestamp);
    }

    #[test]
    fn refuses_bad_payloads_with_a_reason() {
        assert!(matches!(decode(b"not json", 16), Err(GelfError::NotJson(_))));
        assert_eq!(decode(b"[1]", 16), Err(GelfError::NotObject));
        assert_eq!(decode(br#"{"host":"a"}"#, 16), Err(GelfError::NoShortMessage));
        assert_eq!(decode(br#"{"short_message":""}"#, 16), Err(GelfError::NoShortMessage));
        let deep = format!(r#"{{"short_message":"x","_a":{}1{}}}"#, "[".repeat(40), "]".repeat(40));
        assert_eq!(decode(deep.as_bytes(), 16), Err(GelfError::TooDeep(16)));
        let m = decode(br#"{"short_message":"x","timestamp":"soon","level":"high"}"#, 16).unwrap();
        assert!(m.bad_timestamp && m.timestamp.is_none());
        assert_eq!(m.fields.get("level").and_then(Value::as_str), Some("high"));
    }

    #[test]
    fn decompresses_gzip_and_zlib_and_refuses_bombs() {
        let json = br#"{"short_message":"z"}"#;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(json).unwrap();
        let gz = gz.finish().unwrap();
        let mut zl = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        zl.write_all(json).unwrap();
        let zl = zl.finish().unwrap();
        assert_eq!(&*decompress(&gz, 1024).unwrap(), json);
        assert_eq!(&*decompress(&zl, 1024).unwrap(), json);
        assert_eq!(&*decompress(json, 1024).unwrap(), json);
        // 10 MB of zeros compress to ~10 KB; the limit stops inflating.
        let mut bomb = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        bomb.write_all(&vec![0u8; 10 << 20]).unwrap();
        let bomb = bomb.finish().unwrap();
        assert!(bomb.len() < 64 << 10);
        assert_eq!(decompress(&bomb, 1 << 20), Err(GelfError::DecompressedTooLarge(1 << 20)));
        assert!(matches!(decompress(&[0x78, 0x9c, 1, 2, 3], 1024), Err(GelfError::Decompress(_))));
    }

    #[test]
    fn reassembles_out_of_order_and_ignores_duplicates() {
        let mut r = Reassembler::new(ChunkLimits::default());
        let t = Instant::now();
        assert_eq!(r.push(&chunk(1, 2, 3, b"C"), t), Ok(Chunk::Stored));
        assert_eq!(r.push(&chunk(1, 0, 3, b"A"), t), Ok(Chunk::Stored));
        assert_eq!(r.push(&chunk(1, 0, 3, b"X"), t), Ok(Chunk::Duplicate));
        assert_eq!(r.push(&chunk(2, 0, 2, b"other"), t), Ok(Chunk::Stored));
        assert_eq!(r.push(&chunk(1, 1, 3, b"B"), t), Ok(Chunk::Complete(b"ABC".to_vec())));
        assert_eq!(r.pending(), 1);
    }

    #[test]
    fn expires_incomplete_sets_after_the_timeout() {
        let mut r = Reassembler::new(ChunkLimits { timeout: Duration::from_secs(5), ..ChunkLimits::default() });
        let t = Instant::now();
        r.push(&chunk(1, 0, 2, b"A"), t).unwrap();
        r.push(&chunk(2, 0, 2, b"A"), t + Duration::from_secs(3)).unwrap();
        assert_eq!(r.expire(t + Duration::from_millis(4999)), 0);
        assert_eq!(r.expire(t + Duration::from_secs(5)), 1);
        assert_eq!(r.pending(), 1);
        // A late chunk of the expired set starts a new set; it never completes the old one.
        assert_eq!(r.push(&chunk(1, 1, 2, b"B"), t + Duration::from_secs(6)), Ok(Chunk::Stored));
    }

    #[test]
    fn refuses_too_many_chunks_bad_headers_and_oversized_sets() {
        let mut r = Reassembler::new(ChunkLimits { max_message_bytes: 4, max_pending: 2, ..ChunkLimits::default() });
        let t = Instant::now();
        assert!(matches!(r.push(&chunk(1, 0, 129, b"A"), t), Err(GelfError::BadChunk(_))));
        assert!(matches!(r.push(&chunk(1, 0, 0, b"A"), t), Err(GelfError::BadChunk(_))));
        assert!(matches!(r.push(&chunk(1, 3, 3, b"A"), t), Err(GelfError::BadChunk(_))));
        assert!(matches!(r.push(&[0x1e, 0x0f, 1], t), Err(GelfError::BadChunk(_))));
        r.push(&chunk(1, 0, 3, b"AAA"), t).unwrap();
        assert_eq!(r.push(&chunk(1, 1, 3, b"BB"), t), Err(GelfError::MessageTooLarge(4)));
        assert_eq!(r.pending(), 0);
        r.push(&chunk(1, 0, 2, b"A"), t).unwrap();
        assert!(matches!(r.push(&chunk(1, 1, 3, b"A"), t), Err(GelfError::BadChunk(_))));
        r.push(&chunk(1, 0, 2, b"A"), t).unwrap();
        r.push(&chunk(2, 0, 2, b"A"), t + Duration::from_millis(1)).unwrap();
        assert_eq!(r.push(&chunk(3, 0, 2, b"A"), t + Duration::from_millis(2)), Ok(Chunk::StoredEvicting));
        assert_eq!(r.pending(), 2);
        // Set 1 was the oldest and is gone: its second chunk starts a new
        // set (evicting set 2) instead of completing it.
        assert_eq!(r.push(&chunk(1, 1, 2, b"B"), t), Ok(Chunk::StoredEvicting));
        assert_eq!(r.push(&chunk(3, 1, 2, b"B"), t), Ok(Chunk::Complete(b"AB".to_vec())));
    }
}
