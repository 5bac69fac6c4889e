//! Incremental stream framing for TCP syslog and line-based sources:
//! newline-delimited frames and RFC 6587 octet counting (`LEN SP MSG`),
//! detected per frame in [`Mode::Auto`] the way rsyslog and syslog-ng do (a
//! frame starting with `1`-`9` is octet-counted, anything else, typically `<`,
//! runs to the next newline). NUL ends a newline-mode frame too, as in
//! rsyslog: Python's `SysLogHandler` ends every TCP message with one.
//!
//! Why this shape: the decoder owns no buffer and does no I/O, so it plugs into
//! any read loop (tokio `BytesMut`, a `Vec<u8>`, a fuzzer's slice) and can be
//! tested by splitting input at every byte. Memory stays bounded: of a frame
//! longer than `max_len` only the first `max_len` bytes are returned (as a
//! frame marked [`Frame::truncated`]); the rest is skipped (to the next
//! newline, or by its octet count) without being buffered.
//!
//! Contract of [`Decoder::decode`]: it is given the unconsumed bytes and returns
//! `(consumed, item)`. The caller takes the frame bytes (`buf[frame.range]`),
//! then drops the first `consumed` bytes. `item == None` means "need more
//! data": drop `consumed`, append newly read bytes, call again. The bytes that
//! were not consumed must be passed again unchanged at the front.
//!
//! ```
//! use sluice_parsers::framing::Decoder;
//! let mut dec = Decoder::new(1024);
//! let mut buf: Vec<u8> = b"<13>hello\n10 <13>world\n<14>tail".to_vec();
//! let mut frames = Vec::new();
//! loop {
//!     let (n, item) = dec.decode(&buf);
//!     let out = item.map(|r| r.map(|f| buf[f.range].to_vec()));
//!     buf.drain(..n);
//!     match out {
//!         Some(frame) => frames.push(frame.unwrap()),
//!         None => break, // read more into `buf` here; at EOF use decode_eof
//!     }
//! }
//! while let (n, Some(item)) = dec.decode_eof(&buf) {
//!     frames.push(buf[item.unwrap().range].to_vec());
//!     buf.drain(..n);
//! }
//! assert_eq!(frames, [&b"<13>hello"[..], b"<13>world", b"<14>tail"]);
//! ```

use std::ops::Range;

use thiserror::Error;

/// Which framing to expect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Per frame: a leading `1`-`9` means octet counting, anything else
    /// newline-delimited.
    #[default]
    Auto,
    /// Every frame ends at `\n`.
    Newline,
    /// Every frame is `LEN SP MSG`.
    OctetCounting,
}

/// How a frame was delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    Newline,
    OctetCounted,
}

/// A decoded frame: `range` indexes the slice given to `decode`. The
/// delimiter (`\n` or NUL) is excluded, as are a trailing `\r` and (for
/// octet-counted frames, where rsyslog puts it inside the count) a trailing
/// `\n`, `\r\n` or NUL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub range: Range<usize>,
    pub kind: FrameKind,
    /// The frame was longer than the limit: `range` holds its first
    /// `max_len` bytes and the rest was skipped.
    pub truncated: bool,
}

/// A framing problem; `offset` is the stream byte where the frame started.
/// After any error the decoder has already resynchronised.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FrameError {
    #[error("invalid octet count at stream byte {offset}: {reason}; skipped to the next newline")]
    InvalidLength { offset: u64, reason: &'static str },
    #[error("stream ended inside the frame at stream byte {offset}: {got} of {expected} bytes")]
    Truncated { offset: u64, expected: usize, got: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At a frame boundary. `scanned` bytes of a newline frame were already
    /// searched for `\n` (so long lines are not rescanned on every read).
    Boundary { scanned: usize },
    /// Skipping to the next newline (the rest of a cut or invalid frame).
    Discard,
    /// Skipping the rest of an oversized octet-counted frame.
    SkipOctets { remaining: usize },
}

/// Ends a newline-delimited frame: `\n`, or NUL, which rsyslog also
/// accepts and Python's `logging.handlers.SysLogHandler` appends to every
/// message over TCP (with no newline).
#[inline]
fn is_delimiter(b: u8) -> bool {
    b == b'\n' || b == 0
}

/// Maximum digits in an octet count (10 digits ≥ 4 GB, far past any limit).
const MAX_LEN_DIGITS: usize = 10;

enum Header {
    NeedMore,
    Invalid(&'static str),
    /// (message length, header length including the space)
    Ok(usize, usize),
}

fn parse_header(b: &[u8]) -> Header {
    // Checks are ordered so the verdict never depends on how much of the
    // header has arrived yet.
    match b.first() {
        None => return Header::NeedMore,
        Some(b'0') => return Header::Invalid("length starts with 0"),
        Some(c) if !c.is_ascii_digit() => return Header::Invalid("expected a digit"),
        Some(_) => {}
    }
    let mut v: u64 = 0;
    let mut i = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        if i >= MAX_LEN_DIGITS {
            return Header::Invalid("more than 10 digits");
        }
        v = v * 10 + u64::from(b[i] - b'0');
        i += 1;
    }
    match b.get(i) {
        None => Header::NeedMore,
        Some(b' ') => Header::Ok(usize::try_from(v).unwrap_or(usize::MAX), i + 1),
        Some(_) => Header::Invalid("expected a space after the length"),
    }
}

/// Incremental frame decoder; see the module docs for the calling contract.
#[derive(Debug, Clone)]
pub struct Decoder {
    max_len: usize,
    mode: Mode,
    state: State,
    /// Stream offset of the first byte of the next `buf`.
    offset: u64,
}

type Item = Option<Result<Frame, FrameError>>;

impl Decoder {
    /// Auto-detecting decoder that rejects frames longer than `max_len`.
    pub fn new(max_len: usize) -> Self {
        Self::with_mode(max_len, Mode::Auto)
    }

    /// Decoder for a fixed [`Mode`].
    pub fn with_mode(max_len: usize, mode: Mode) -> Self {
        Decoder { max_len, mode, state: State::Boundary { scanned: 0 }, offset: 0 }
    }

    /// Total bytes consumed so far (the stream offset of the next byte).
    pub fn stream_offset(&self) -> u64 {
        self.offset
    }

    fn done(&mut self, consumed: usize, item: Item) -> (usize, Item) {
        self.offset += consumed as u64;
        (consumed, item)
    }

    /// Decodes at most one frame from the front of `buf`; see module docs.
    pub fn decode(&mut self, buf: &[u8]) -> (usize, Item) {
        let mut c = 0;
        loop {
            match self.state {
                State::SkipOctets { remaining } => {
                    let n = remaining.min(buf.len() - c);
                    c += n;
                    if n == remaining {
                        self.state = State::Boundary { scanned: 0 };
                    } else {
                        self.state = State::SkipOctets { remaining: remaining - n };
                        return self.done(c, None);
                    }
                }
                State::Discard => match buf[c..].iter().position(|&x| is_delimiter(x)) {
                    Some(i) => {
                        c += i + 1;
                        self.state = State::Boundary { scanned: 0 };
                    }
                    None => return self.done(buf.len(), None),
                },
                State::Boundary { scanned } => {
                    // Empty lines and stray CR/LF/NUL between frames are skipped.
                    let skip = buf[c..].iter().take_while(|&&x| is_delimiter(x) || x == b'\r').count();
                    if skip > 0 {
                        c += skip;
                        self.state = State::Boundary { scanned: 0 };
                    }
                    let rest = &buf[c..];
                    let Some(&first) = rest.first() else {
                        return self.done(c, None);
                    };
                    let octet = match self.mode {
                        Mode::Auto => (b'1'..=b'9').contains(&first),
                        Mode::Newline => false,
                        Mode::OctetCounting => true,
                    };
                    let start = self.offset + c as u64;
                    if octet {
                        match parse_header(rest) {
                            Header::NeedMore => return self.done(c, None),
                            Header::Invalid(reason) => {
                                self.state = State::Discard;
                                let err = FrameError::InvalidLength { offset: start, reason };
                                return self.done(c, Some(Err(err)));
                            }
                            Header::Ok(len, hdr) => {
                                if len > self.max_len {
                                    // Keep the first max_len bytes, skip the rest by count.
                                    if rest.len() - hdr < self.max_len {
                                        return self.done(c, None);
                                    }
                                    let from = c + hdr;
                                    self.state = State::SkipOctets { remaining: len - self.max_len };
                                    let frame = Frame {
                                        range: from..from + self.max_len,
                                        kind: FrameKind::OctetCounted,
                                        truncated: true,
                                    };
                                    return self.done(from + self.max_len, Some(Ok(frame)));
                                }
                                if rest.len() - hdr < len {
                                    return self.done(c, None);
                                }
                                let from = c + hdr;
                                let mut to = from + len;
                                if to > from && is_delimiter(buf[to - 1]) {
                                    to -= 1;
                                }
                                if to > from && buf[to - 1] == b'\r' {
                                    to -= 1;
                                }
                                let frame = Frame { range: from..to, kind: FrameKind::OctetCounted, truncated: false };
                                return self.done(c + hdr + len, Some(Ok(frame)));
                            }
                        }
                    }
                    let from = scanned.min(rest.len());
                    match rest[from..].iter().position(|&x| is_delimiter(x)) {
                        Some(i) => {
                            let nl = from + i;
                            self.state = State::Boundary { scanned: 0 };
                            let mut end = nl;
                            if end > 0 && rest[end - 1] == b'\r' {
                                end -= 1;
                            }
                            let truncated = end > self.max_len;
                            let end = end.min(self.max_len);
                            let frame = Frame { range: c..c + end, kind: FrameKind::Newline, truncated };
                            return self.done(c + nl + 1, Some(Ok(frame)));
                        }
                        // Longer than the limit even if a `\r` ends it: cut now,
                        // skip to the newline.
                        None if rest.len() > self.max_len + 1 => {
                            self.state = State::Discard;
                            let frame = Frame { range: c..c + self.max_len, kind: FrameKind::Newline, truncated: true };
                            return self.done(buf.len(), Some(Ok(frame)));
                        }
                        None => {
                            self.state = State::Boundary { scanned: rest.len() };
                            return self.done(c, None);
                        }
                    }
                }
            }
        }
    }

    /// Like [`decode`](Self::decode), for when the stream has ended: once no
    /// complete frame is left, unterminated trailing bytes become a final
    /// newline frame (or `Truncated` for a partial octet-counted frame).
    /// Call until it returns `None`.
    pub fn decode_eof(&mut self, buf: &[u8]) -> (usize, Item) {
        let (c, item) = self.decode(buf);
        if item.is_some() {
            return (c, item);
        }
        let rest = &buf[c..];
        let start = self.offset;
        match self.state {
            State::Discard => {
                self.state = State::Boundary { scanned: 0 };
                (c, None)
            }
            State::SkipOctets { .. } => (c, None),
            State::Boundary { .. } if rest.is_empty() => (c, None),
            State::Boundary { .. } => {
                self.state = State::Boundary { scanned: 0 };
                let octet = match self.mode {
                    Mode::Auto => (b'1'..=b'9').contains(&rest[0]),
                    Mode::Newline => false,
                    Mode::OctetCounting => true,
                };
                self.offset += rest.len() as u64;
                if octet {
                    let (expected, got) = match parse_header(rest) {
                        Header::Ok(len, hdr) => (len, rest.len() - hdr),
                        _ => (0, 0),
                    };
                    let err = if expected == 0 {
                        FrameError::InvalidLength { offset: start, reason: "stream ended inside the length" }
                    } else {
                        FrameError::Truncated { offset: start, expected, got }
                    };
                    return (c + rest.len(), Some(Err(err)));
                }
                let mut end = rest.len();
                if rest[end - 1] == b'\r' {
                    end -= 1;
                }
                let truncated = end > self.max_len;
                let end = end.min(self.max_len);
                let frame = Frame { range: c..c + end, kind: FrameKind::Newline, truncated };
                (c + rest.len(), Some(Ok(frame)))
            }
        }
    }
}
