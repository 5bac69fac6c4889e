//! Lumberjack v2 frames (the Beats / Logstash forwarder protocol), read
//! incrementally and bounded (see `docs/specs/beats.md`):
//!
//! ```text
//! window      '2' 'W' count:u32be
//! json data   '2' 'J' seq:u32be len:u32be payload[len]     (a JSON object)
//! compressed  '2' 'C' len:u32be zlib[len]                   (inflates to frames)
//! ack (out)   '2' 'A' seq:u32be
//! ```
//!
//! [`next_frame`] returns one frame of a buffer, `Ok(None)` when the buffer
//! holds only part of one; a header announcing more than `max_frame` bytes
//! is an error at once (nothing that size is buffered). [`inflate`] inflates
//! a compressed frame's payload, never past `max_decompressed` bytes; the
//! frames inside are read with [`next_frame`] again, and one more
//! compressed frame inside is refused (no nesting).

use std::io::Read;

/// Why a stream is not Lumberjack v2 (the connection is closed).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LumberjackError {
    /// The version byte is not `2` (`1` is the old forwarder protocol).
    #[error("lumberjack: unsupported protocol version byte 0x{0:02x}")]
    Version(u8),
    /// A frame type this server does not take.
    #[error("lumberjack: unknown frame type 0x{0:02x}")]
    FrameType(u8),
    /// A frame announcing more bytes than allowed.
    #[error("lumberjack: a frame of {got} bytes exceeds the limit of {limit}")]
    FrameTooLarge {
        /// Announced size.
        got: u64,
        /// The limit.
        limit: usize,
    },
    /// A window of 0 or beyond the limit.
    #[error("lumberjack: window size {got} is not between 1 and {limit}")]
    Window {
        /// Announced window.
        got: u32,
        /// The limit.
        limit: u32,
    },
    /// The compressed payload does not inflate.
    #[error("lumberjack: bad zlib payload: {0}")]
    Inflate(String),
    /// The compressed payload inflates past the limit.
    #[error("lumberjack: the decompressed payload exceeds {0} bytes")]
    DecompressedTooLarge(usize),
    /// A compressed frame inside a compressed frame, or a partial frame at
    /// the end of an inflated payload.
    #[error("lumberjack: {0}")]
    Nesting(&'static str),
}

/// One frame.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// The number of data frames the sender will send before waiting for an ACK.
    Window(u32),
    /// One event.
    Json {
        /// Sequence number (1-based within the window).
        seq: u32,
        /// The JSON document.
        payload: &'a [u8],
    },
    /// zlib-compressed frames.
    Compressed(&'a [u8]),
}

/// Limits of the decoder.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest frame payload (JSON document or compressed block).
    pub max_frame: usize,
    /// Largest window.
    pub max_window: u32,
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// The first frame of `buf` and the bytes it takes, or `None` if `buf`
/// holds only part of it.
pub fn next_frame<'a>(buf: &'a [u8], limits: &Limits) -> Result<Option<(Frame<'a>, usize)>, LumberjackError> {
    if buf.len() < 2 {
        return Ok(None);
    }
    if buf[0] != b'2' {
        return Err(LumberjackError::Version(buf[0]));
    }
    let sized = |header: usize, len: u32| -> Result<Option<usize>, LumberjackError> {
        if len as usize > limits.max_frame {
            return Err(LumberjackError::FrameTooLarge { got: u64::from(len), limit: limits.max_frame });
        }
        let total = header + len as usize;
        Ok((buf.len() >= total).then_some(total))
    };
    match buf[1] {
        b'W' => {
            if buf.len() < 6 {
                return Ok(None);
            }
            let n = be32(&buf[2..]);
            if n == 0 || n > limits.max_window {
                return Err(LumberjackError::Window { got: n, limit: limits.max_window });
            }
            Ok(Some((Frame::Window(n), 6)))
        }
        b'J' => {
            if buf.len() < 10 {
                return Ok(None);
            }
            let (seq, len) = (be32(&buf[2..]), be32(&buf[6..]));
            Ok(sized(10, len)?.map(|end| (Frame::Json { seq, payload: &buf[10..end] }, end)))
        }
        b'C' => {
            if buf.len() < 6 {
                return Ok(None);
            }
            let len = be32(&buf[2..]);
            Ok(sized(6, len)?.map(|end| (Frame::Compressed(&buf[6..end]), end)))
        }
        t => Err(LumberjackError::FrameType(t)),
    }
}

/// Inflates a compressed frame's payload, at most `max_decompressed` bytes.
pub fn inflate(payload: &[u8], max_decompressed: usize) -> Result<Vec<u8>, LumberjackError> {
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(payload)
        .take(max_decompressed as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| LumberjackError::Inflate(e.to_string()))?;
    if out.len() > max_decompressed {
        return Err(LumberjackError::DecompressedTooLarge(max_decompressed));
    }
    Ok(out)
}

/// The data frames of an inflated payload, `(seq, json)` in order; a
/// window or compressed frame inside, or a partial frame at the end, is an
/// error.
pub fn inner_frames<'a>(inflated: &'a [u8], limits: &Limits) -> Result<Vec<(u32, &'a [u8])>, LumberjackError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < inflated.len() {
        match next_frame(&inflated[pos..], limits)? {
            None => return Err(LumberjackError::Nesting("a compressed frame ends inside a frame")),
            Some((Frame::Json { seq, payload }, n)) => {
                out.push((seq, payload));
                pos += n;
            }
            Some((Frame::Compressed(_), _)) => {
                return Err(LumberjackError::Nesting("a compressed frame inside a compressed frame"))
            }
            Some((Frame::Window(_), _)) => {
                return Err(LumberjackError::Nesting("a window frame inside a compressed frame"))
            }
        }
    }
    Ok(out)
}

/// The ACK frame for `seq`.
pub fn ack(seq: u32) -> [u8; 6] {
    let s = seq.to_be_bytes();
    [b'2', b'A', s[0], s[1], s[2], s[3]]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const L: Limits = Limits { max_frame: 64, max_window: 10 };

    fn json(seq: u32, p: &[u8]) -> Vec<u8> {
        let mut v = vec![b'2', b'J'];
        v.extend_from_slice(&seq.to_be_bytes());
        v.extend_from_slice(&(p.len() as u32).to_be_bytes());
        v.extend_from_slice(p);
        v
    }

    #[test]
    fn frames_split_anywhere_and_limits_hold() {
        let mut s = vec![b'2', b'W', 0, 0, 0, 2];
        s.extend(json(1, b"{\"a\":1}"));
        s.extend(json(2, b"{}"));
        for cut in 0..s.len() {
            let mut pos = 0;
            let mut n = 0;
            while let Some((_, used)) = next_frame(&s[pos..cut], &L).unwrap() {
                pos += used;
                n += 1;
            }
            let mut rest = s[pos..].to_vec();
            while let Some((f, used)) = next_frame(&rest, &L).unwrap() {
                if n == 1 {
                    assert_eq!(f, Frame::Json { seq: 1, payload: b"{\"a\":1}" });
                }
                rest.drain(..used);
                n += 1;
            }
            assert_eq!((n, rest.len()), (3, 0), "cut at {cut}");
        }
        assert_eq!(next_frame(b"1W", &L), Err(LumberjackError::Version(b'1')));
        assert_eq!(next_frame(b"2X", &L), Err(LumberjackError::FrameType(b'X')));
        assert_eq!(next_frame(b"2W\0\0\0\x0b", &L), Err(LumberjackError::Window { got: 11, limit: 10 }));
        // Refused from the header alone: nothing that size is waited for.
        assert_eq!(
            next_frame(b"2J\0\0\0\x01\xff\xff\xff\xff", &L),
            Err(LumberjackError::FrameTooLarge { got: u64::from(u32::MAX), limit: 64 })
        );
    }

    #[test]
    fn compressed_frames_inflate_bounded_and_unnested() {
        let inner = [json(1, b"{\"m\":1}"), json(2, b"{\"m\":2}")].concat();
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&inner).unwrap();
        let z = z.finish().unwrap();
        let inflated = inflate(&z, 1000).unwrap();
        assert_eq!(inner_frames(&inflated, &L).unwrap(), vec![(1, &b"{\"m\":1}"[..]), (2, &b"{\"m\":2}"[..])]);
        assert_eq!(inflate(&z, 10), Err(LumberjackError::DecompressedTooLarge(10)));
        assert!(matches!(inflate(b"not zlib", 10), Err(LumberjackError::Inflate(_))));
        let nested = [b"2C\0\0\0\x01x".to_vec()].concat();
        assert!(matches!(inner_frames(&nested, &L), Err(LumberjackError::Nesting(_))));
        assert!(matches!(inner_frames(&inner[..inner.len() - 1], &L), Err(LumberjackError::Nesting(_))));
        assert_eq!(ack(7), *b"2A\0\0\0\x07");
    }
}

#[cfg(test)]
mod seed_tests {
    use super::*;

    /// The committed fuzz seeds (`fuzz/seeds/make.py`) are what they say.
    #[test]
    fn fuzz_seeds_decode_as_named() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/lumberjack");
        let l = Limits { max_frame: 1 << 20, max_window: 1024 };
        let read = |n: &str| std::fs::read(dir.join(n)).unwrap();
        let plain = read("json-window.bin");
        let (w, n) = next_frame(&plain, &l).unwrap().unwrap();
        assert_eq!(w, Frame::Window(2));
        let Some((Frame::Json { seq: 1, payload }, _)) = next_frame(&plain[n..], &l).unwrap() else {
            panic!("a JSON frame")
        };
        assert!(payload.starts_with(b"{") && payload.windows(10).any(|w| w == b"winlogbeat"));
        let z = read("compressed-window.bin");
        let Some((Frame::Compressed(c), _)) = next_frame(&z[6..], &l).unwrap() else { panic!("a compressed frame") };
        assert_eq!(inner_frames(&inflate(c, 1 << 20).unwrap(), &l).unwrap().len(), 2);
        assert_eq!(next_frame(&read("v1.bin"), &l), Err(LumberjackError::Version(b'1')));
        let b = read("bomb.bin");
        let Some((Frame::Compressed(c), _)) = next_frame(&b[6..], &l).unwrap() else { panic!("a compressed frame") };
        assert_eq!(inflate(c, 64 << 10), Err(LumberjackError::DecompressedTooLarge(64 << 10)));
    }
}
