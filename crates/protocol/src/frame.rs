//! Frames of the agent protocol and their byte layout (see
//! `docs/specs/agent-protocol.md`): an 8-byte header (`SL`, type, flags,
//! `u32` body length, little-endian) and a body.
//!
//! Decoding works on a plain buffer and never panics: [`decode`] returns
//! `Ok(None)` while a frame is incomplete and rejects an over-long frame as
//! soon as its header is in, before its body is buffered.

use crate::compress::Compression;
use crate::error::{ErrorCode, ProtocolError};

/// Frame magic.
pub const MAGIC: [u8; 2] = *b"SL";
/// Header length.
pub const HEADER_LEN: usize = 8;
/// Largest body of a control frame (every type but `BATCH`).
pub const MAX_CONTROL_BODY: u32 = 64 << 10;
/// Length of the fixed part of a `BATCH` body.
pub const BATCH_HEADER_LEN: usize = 24;
/// Longest identity part (group, subgroup, host) in a `HELLO`.
pub const MAX_IDENTITY_PART: usize = 255;

const T_HELLO: u8 = 0x01;
const T_HELLO_OK: u8 = 0x02;
const T_BATCH: u8 = 0x03;
const T_ACK: u8 = 0x04;
const T_CREDIT: u8 = 0x05;
const T_PING: u8 = 0x06;
const T_PONG: u8 = 0x07;
const T_ERROR: u8 = 0x08;

/// How the sender paces batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Up to `max_in_flight` unacknowledged batches.
    Push,
    /// One batch per credit granted by the receiver.
    Credit,
}

/// `HELLO`: the sender introduces itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// Lowest version the sender speaks.
    pub min_version: u8,
    /// Highest version the sender speaks.
    pub max_version: u8,
    /// Push or credit.
    pub mode: Mode,
    /// Bitmask of codecs the sender may use (bit 0 none, 1 zstd, 2 lz4).
    pub compressions: u8,
    /// The sender's secret.
    pub token: String,
    /// Claimed group.
    pub group: String,
    /// Claimed subgroup.
    pub subgroup: String,
    /// Claimed host.
    pub host: String,
    /// Free text: the sender's name and version.
    pub agent: String,
}

/// `HELLO_OK`: the receiver accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelloOk {
    /// Chosen version.
    pub version: u8,
    /// Confirmed mode.
    pub mode: Mode,
    /// Largest accepted payload (compressed or raw).
    pub max_batch_bytes: u32,
    /// Unacknowledged batches accepted per connection.
    pub max_in_flight: u32,
    /// Credits granted up front (credit mode).
    pub initial_credits: u32,
    /// How often the receiver expects a frame.
    pub heartbeat_ms: u32,
    /// The receiver's name.
    pub receiver: String,
}

/// `BATCH`: a compressed batch of events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// Sender-chosen id, echoed in the ack.
    pub id: u64,
    /// Events in the payload.
    pub events: u32,
    /// Payload codec.
    pub compression: Compression,
    /// Payload length after decompression.
    pub raw_len: u32,
    /// The (compressed) payload.
    pub payload: Vec<u8>,
}

/// What an `ACK` says about its batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckStatus {
    /// In the receiver's queue.
    Queued,
    /// Not queued (queue closed); send it elsewhere.
    Retry,
}

/// `ACK`: a batch is in the receiver's queue (or must be sent elsewhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    /// The batch.
    pub id: u64,
    /// Queued or retry.
    pub status: AckStatus,
    /// Queue fill in 1/10000 ([`crate::FILL_UNKNOWN`] when unknown).
    pub fill: u16,
    /// Credits granted with this ack.
    pub credits: u32,
}

/// One frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// Sender → receiver, first frame.
    Hello(Hello),
    /// Receiver → sender, answer to `HELLO`.
    HelloOk(HelloOk),
    /// A batch of events.
    Batch(Batch),
    /// A batch acknowledged.
    Ack(Ack),
    /// More credits.
    Credit {
        /// Credits granted.
        credits: u32,
        /// Queue fill in 1/10000.
        fill: u16,
    },
    /// Liveness probe.
    Ping {
        /// Echoed in the `PONG`.
        nonce: u64,
    },
    /// Answer to a `PING`.
    Pong {
        /// The `PING`'s nonce.
        nonce: u64,
        /// Queue fill in 1/10000.
        fill: u16,
    },
    /// A fatal problem; the connection closes after it.
    Error {
        /// What kind.
        code: ErrorCode,
        /// Human-readable reason.
        reason: String,
    },
}

impl Frame {
    /// The frame type's name (for errors and logs).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Hello(_) => "HELLO",
            Self::HelloOk(_) => "HELLO_OK",
            Self::Batch(_) => "BATCH",
            Self::Ack(_) => "ACK",
            Self::Credit { .. } => "CREDIT",
            Self::Ping { .. } => "PING",
            Self::Pong { .. } => "PONG",
            Self::Error { .. } => "ERROR",
        }
    }

    /// Appends the frame's bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        if let Self::Batch(b) = self {
            encode_batch_frame(b.id, b.events, b.compression, b.raw_len, &b.payload, out);
            return;
        }
        let start = out.len();
        out.extend_from_slice(&[MAGIC[0], MAGIC[1], 0, 0, 0, 0, 0, 0]);
        let ty = match self {
            Self::Hello(h) => {
                out.extend_from_slice(&[h.min_version, h.max_version, mode_byte(h.mode), h.compressions]);
                for s in [&h.token, &h.group, &h.subgroup, &h.host, &h.agent] {
                    put_str16(out, s);
                }
                T_HELLO
            }
            Self::HelloOk(h) => {
                out.extend_from_slice(&[h.version, mode_byte(h.mode), 0, 0]);
                for v in [h.max_batch_bytes, h.max_in_flight, h.initial_credits, h.heartbeat_ms] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                put_str16(out, &h.receiver);
                T_HELLO_OK
            }
            Self::Batch(_) => T_BATCH, // handled above
            Self::Ack(a) => {
                out.extend_from_slice(&a.id.to_le_bytes());
                out.push(match a.status {
                    AckStatus::Queued => 0,
                    AckStatus::Retry => 1,
                });
                out.push(0);
                out.extend_from_slice(&a.fill.to_le_bytes());
                out.extend_from_slice(&a.credits.to_le_bytes());
                T_ACK
            }
            Self::Credit { credits, fill } => {
                out.extend_from_slice(&credits.to_le_bytes());
                out.extend_from_slice(&fill.to_le_bytes());
                T_CREDIT
            }
            Self::Ping { nonce } => {
                out.extend_from_slice(&nonce.to_le_bytes());
                T_PING
            }
            Self::Pong { nonce, fill } => {
                out.extend_from_slice(&nonce.to_le_bytes());
                out.extend_from_slice(&fill.to_le_bytes());
                T_PONG
            }
            Self::Error { code, reason } => {
                out.extend_from_slice(&code.code().to_le_bytes());
                // Keep the frame within the control limit whatever the reason
                // (any reason that decoded fits, so it re-encodes unchanged).
                let mut r = reason.as_str();
                let max = MAX_CONTROL_BODY as usize - 4;
                if r.len() > max {
                    let mut cut = max;
                    while !r.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    r = &r[..cut];
                }
                put_str16(out, r);
                T_ERROR
            }
        };
        out[start + 2] = ty;
        let len = (out.len() - start - HEADER_LEN) as u32;
        out[start + 4..start + 8].copy_from_slice(&len.to_le_bytes());
    }

    /// The frame as a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode(&mut v);
        v
    }
}

fn mode_byte(m: Mode) -> u8 {
    match m {
        Mode::Push => 0,
        Mode::Credit => 1,
    }
}

fn put_str16(out: &mut Vec<u8>, s: &str) {
    // Callers keep strings short; a longer one is cut at a char boundary.
    let mut s = s;
    if s.len() > usize::from(u16::MAX) {
        let mut cut = usize::from(u16::MAX);
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s = &s[..cut];
    }
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Appends a complete `BATCH` frame (header, batch header, payload) to `out`.
pub fn encode_batch_frame(
    id: u64,
    events: u32,
    compression: Compression,
    raw_len: u32,
    payload: &[u8],
    out: &mut Vec<u8>,
) {
    let body = (BATCH_HEADER_LEN + payload.len()) as u32;
    out.reserve(HEADER_LEN + body as usize);
    out.extend_from_slice(&[MAGIC[0], MAGIC[1], T_BATCH, 0]);
    out.extend_from_slice(&body.to_le_bytes());
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&events.to_le_bytes());
    out.extend_from_slice(&[compression.byte(), 0, 0, 0]);
    out.extend_from_slice(&raw_len.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(payload);
}

/// A frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Frame type byte.
    pub ty: u8,
    /// Body length.
    pub len: u32,
}

fn type_name(ty: u8) -> &'static str {
    match ty {
        T_HELLO => "HELLO",
        T_HELLO_OK => "HELLO_OK",
        T_BATCH => "BATCH",
        T_ACK => "ACK",
        T_CREDIT => "CREDIT",
        T_PING => "PING",
        T_PONG => "PONG",
        T_ERROR => "ERROR",
        _ => "unknown",
    }
}

/// Parses and checks a header: magic, known type, body length within the
/// limit for its type (`max_batch_bytes` plus the batch header for `BATCH`).
pub fn parse_header(buf: &[u8; HEADER_LEN], max_batch_bytes: u32) -> Result<Header, ProtocolError> {
    if buf[0..2] != MAGIC {
        return Err(ProtocolError::BadMagic([buf[0], buf[1]]));
    }
    let ty = buf[2];
    if !(T_HELLO..=T_ERROR).contains(&ty) {
        return Err(ProtocolError::UnknownType(ty));
    }
    let len = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);
    let max =
        if ty == T_BATCH { u64::from(max_batch_bytes) + BATCH_HEADER_LEN as u64 } else { u64::from(MAX_CONTROL_BODY) };
    if u64::from(len) > max {
        return Err(ProtocolError::FrameTooLarge { kind: type_name(ty), len: u64::from(len), max });
    }
    Ok(Header { ty, len })
}

/// Decodes the first frame in `buf`: `Ok(None)` when more bytes are needed,
/// else the frame and the bytes it took. Errors as soon as the header is
/// known to be bad, before the body arrives.
pub fn decode(buf: &[u8], max_batch_bytes: u32) -> Result<Option<(Frame, usize)>, ProtocolError> {
    let Some(head) = buf.get(..HEADER_LEN) else { return Ok(None) };
    let mut h = [0u8; HEADER_LEN];
    h.copy_from_slice(head);
    let header = parse_header(&h, max_batch_bytes)?;
    let end = HEADER_LEN + header.len as usize;
    let Some(body) = buf.get(HEADER_LEN..end) else { return Ok(None) };
    Ok(Some((decode_body(header.ty, body.to_vec())?, end)))
}

/// Decodes a body of type `ty` (the header was checked by [`parse_header`]).
pub fn decode_body(ty: u8, body: Vec<u8>) -> Result<Frame, ProtocolError> {
    let kind = type_name(ty);
    if ty == T_BATCH {
        return decode_batch(body);
    }
    let mut r = Body { buf: &body, pos: 0, kind };
    let frame = match ty {
        T_HELLO => {
            let (min_version, max_version) = (r.u8()?, r.u8()?);
            let mode = mode_from(r.u8()?, kind)?;
            let compressions = r.u8()?;
            let token = r.str16()?;
            let group = r.str16()?;
            let subgroup = r.str16()?;
            let host = r.str16()?;
            let agent = r.str16()?;
            for (name, part) in [("group", &group), ("subgroup", &subgroup), ("host", &host)] {
                if part.len() > MAX_IDENTITY_PART {
                    return Err(r.err(format!("{name} longer than {MAX_IDENTITY_PART} bytes")));
                }
            }
            Frame::Hello(Hello { min_version, max_version, mode, compressions, token, group, subgroup, host, agent })
        }
        T_HELLO_OK => {
            let version = r.u8()?;
            let mode = mode_from(r.u8()?, kind)?;
            r.take(2)?;
            let max_batch_bytes = r.u32()?;
            let max_in_flight = r.u32()?;
            let initial_credits = r.u32()?;
            let heartbeat_ms = r.u32()?;
            let receiver = r.str16()?;
            Frame::HelloOk(HelloOk {
                version,
                mode,
                max_batch_bytes,
                max_in_flight,
                initial_credits,
                heartbeat_ms,
                receiver,
            })
        }
        T_ACK => {
            let id = r.u64()?;
            let status = match r.u8()? {
                0 => AckStatus::Queued,
                1 => AckStatus::Retry,
                s => return Err(r.err(format!("unknown ack status {s}"))),
            };
            r.take(1)?;
            let fill = r.u16()?;
            let credits = r.u32()?;
            Frame::Ack(Ack { id, status, fill, credits })
        }
        T_CREDIT => {
            let credits = r.u32()?;
            let fill = r.u16()?;
            Frame::Credit { credits, fill }
        }
        T_PING => Frame::Ping { nonce: r.u64()? },
        T_PONG => {
            let nonce = r.u64()?;
            let fill = r.u16()?;
            Frame::Pong { nonce, fill }
        }
        T_ERROR => {
            let code = ErrorCode::from_code(r.u16()?);
            let reason = r.str16()?;
            Frame::Error { code, reason }
        }
        t => return Err(ProtocolError::UnknownType(t)),
    };
    if r.pos != body.len() {
        return Err(r.err(format!("{} trailing bytes", body.len() - r.pos)));
    }
    Ok(frame)
}

fn decode_batch(mut body: Vec<u8>) -> Result<Frame, ProtocolError> {
    let mut r = Body { buf: &body, pos: 0, kind: "BATCH" };
    let id = r.u64()?;
    let events = r.u32()?;
    let c = r.u8()?;
    r.take(3)?;
    let raw_len = r.u32()?;
    r.take(4)?;
    let compression = Compression::from_byte(c)
        .ok_or_else(|| ProtocolError::Corrupt(format!("unknown compression {c} in batch {id}")))?;
    body.drain(..BATCH_HEADER_LEN);
    Ok(Frame::Batch(Batch { id, events, compression, raw_len, payload: body }))
}

fn mode_from(b: u8, kind: &'static str) -> Result<Mode, ProtocolError> {
    match b {
        0 => Ok(Mode::Push),
        1 => Ok(Mode::Credit),
        m => Err(ProtocolError::Malformed { kind, reason: format!("unknown mode {m}") }),
    }
}

struct Body<'a> {
    buf: &'a [u8],
    pos: usize,
    kind: &'static str,
}

impl<'a> Body<'a> {
    fn err(&self, reason: String) -> ProtocolError {
        ProtocolError::Malformed { kind: self.kind, reason }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtocolError> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.buf.len());
        let Some(end) = end else {
            return Err(self.err(format!("body ends at byte {} but {} more were needed", self.buf.len(), n)));
        };
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, ProtocolError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, ProtocolError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, ProtocolError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, ProtocolError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    fn str16(&mut self) -> Result<String, ProtocolError> {
        let n = usize::from(self.u16()?);
        let b = self.take(n)?;
        match std::str::from_utf8(b) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => Err(self.err("string is not utf-8".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Frame> {
        vec![
            Frame::Hello(Hello {
                min_version: 1,
                max_version: 1,
                mode: Mode::Credit,
                compressions: 0b111,
                token: "0123456789abcdef".into(),
                group: "acme".into(),
                subgroup: "web".into(),
                host: "h1".into(),
                agent: "sluice 0.1.0".into(),
            }),
            Frame::HelloOk(HelloOk {
                version: 1,
                mode: Mode::Push,
                max_batch_bytes: 16 << 20,
                max_in_flight: 8,
                initial_credits: 0,
                heartbeat_ms: 5000,
                receiver: "proc-1".into(),
            }),
            Frame::Batch(Batch {
                id: u64::MAX - 3,
                events: 2,
                compression: Compression::Lz4,
                raw_len: 99,
                payload: vec![1, 2, 3],
            }),
            Frame::Ack(Ack { id: 7, status: AckStatus::Retry, fill: 1234, credits: 2 }),
            Frame::Credit { credits: 5, fill: 10_000 },
            Frame::Ping { nonce: 42 },
            Frame::Pong { nonce: 42, fill: crate::FILL_UNKNOWN },
            Frame::Error { code: ErrorCode::IdentityNotOwned, reason: "group \"other\" is not token a's".into() },
        ]
    }

    #[test]
    fn every_frame_roundtrips_and_is_incomplete_until_its_last_byte() {
        for f in samples() {
            let bytes = f.to_bytes();
            for cut in 0..bytes.len() {
                assert!(decode(&bytes[..cut], 1 << 20).unwrap().is_none(), "{} cut at {cut}", f.kind());
            }
            let (back, used) = decode(&bytes, 1 << 20).unwrap().unwrap();
            assert_eq!(used, bytes.len());
            assert_eq!(back, f);
        }
    }

    #[test]
    fn header_layout_is_the_specs() {
        let b = Frame::Ping { nonce: 1 }.to_bytes();
        assert_eq!(&b[..8], &[b'S', b'L', 0x06, 0, 8, 0, 0, 0]);
        let b = Frame::Ack(Ack { id: 1, status: AckStatus::Queued, fill: 2, credits: 3 }).to_bytes();
        assert_eq!(b, [b'S', b'L', 4, 0, 16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 3, 0, 0, 0]);
    }

    #[test]
    fn bad_headers_are_rejected_before_the_body() {
        let e = decode(b"GET / HTTP/1.1\r\n", 1024).unwrap_err();
        assert_eq!(e.to_string(), "bad magic [47, 45]: not a sluice agent protocol frame");
        assert_eq!(e.code(), ErrorCode::ProtocolViolation);
        let e = decode(&[b'S', b'L', 0x33, 0, 0, 0, 0, 0], 1024).unwrap_err();
        assert_eq!(e.to_string(), "unknown frame type 0x33");
        // A 4 GiB batch announced: refused from the header alone.
        let e = decode(&[b'S', b'L', 0x03, 0, 0xff, 0xff, 0xff, 0xff], 1024).unwrap_err();
        assert_eq!(e.to_string(), "BATCH frame of 4294967295 bytes exceeds the limit of 1048 bytes");
        assert_eq!(e.code(), ErrorCode::Oversized);
        let e = decode(&[b'S', b'L', 0x06, 0, 0, 0, 2, 0], 1024).unwrap_err();
        assert!(e.to_string().starts_with("PING frame of 131072 bytes"), "{e}");
    }

    #[test]
    fn malformed_bodies_name_the_frame() {
        let mut b = Frame::Ping { nonce: 1 }.to_bytes();
        b[4] = 7;
        b.pop();
        let e = decode(&b, 1024).unwrap_err();
        assert_eq!(e.to_string(), "malformed PING frame: body ends at byte 7 but 8 more were needed");
        let mut b = Frame::Credit { credits: 1, fill: 0 }.to_bytes();
        b[4] += 1;
        b.push(0);
        assert_eq!(decode(&b, 1024).unwrap_err().to_string(), "malformed CREDIT frame: 1 trailing bytes");
        let mut hello = samples().remove(0).to_bytes();
        hello[10] = 9; // mode
        assert_eq!(decode(&hello, 1024).unwrap_err().to_string(), "malformed HELLO frame: unknown mode 9");
    }
}
