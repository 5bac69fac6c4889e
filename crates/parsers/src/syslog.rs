//! Syslog message parsing: RFC 5424, lenient RFC 3164, and auto-detection.
//!
//! Why: the syslog sources receive whatever devices send, so [`parse`] must
//! never panic, must not copy in the common case (fields borrow from the
//! input), and must tell a malformed RFC 5424 message apart (an error with the
//! byte position, which the source counts while keeping the raw line) from the
//! endless variants of "BSD syslog", which are accepted leniently in the
//! manner of the `syslog-loose` crate.
//!
//! Input is bytes. Invalid UTF-8 is never an error: each text field is decoded
//! with [`String::from_utf8_lossy`], so it borrows when valid and is replaced
//! with U+FFFD (owned) only where a sequence is invalid, so a source keeps the
//! line instead of dropping it for one bad byte.
//!
//! Detection: after optional leading whitespace and an optional `<PRI>`, a
//! version (`1`..`999`) followed by a space selects RFC 5424 and its result,
//! error included, is returned; without a PRI a failed 5424 attempt falls back
//! to 3164 (so a bare line starting "1 " is not lost). Anything else is 3164.

use std::borrow::Cow;

use chrono::{DateTime, FixedOffset, NaiveDate};
use thiserror::Error;

use crate::date::{self, Civil, DateError};

/// Which grammar a message was parsed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Rfc5424,
    Rfc3164,
}

/// One structured-data element: `[id name="value" ...]`. Values have `\"`,
/// `\\` and `\]` unescaped (other backslashes are kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SdElement<'a> {
    pub id: Cow<'a, str>,
    pub params: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

/// A parsed syslog message. `None` means absent or the NILVALUE `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyslogMessage<'a> {
    pub protocol: Protocol,
    /// `<PRI>` value, 0..=191.
    pub priority: Option<u8>,
    /// `priority / 8`.
    pub facility: Option<u8>,
    /// `priority % 8`.
    pub severity: Option<u8>,
    /// RFC 5424 VERSION.
    pub version: Option<u16>,
    pub timestamp: Option<DateTime<FixedOffset>>,
    /// True when the timestamp carried no year (RFC 3164 `Mmm dd hh:mm:ss`):
    /// year and zone then came from [`Options`].
    pub year_inferred: bool,
    pub hostname: Option<Cow<'a, str>>,
    pub appname: Option<Cow<'a, str>>,
    pub procid: Option<Cow<'a, str>>,
    /// RFC 5424 MSGID.
    pub msgid: Option<Cow<'a, str>>,
    /// In order of appearance; duplicates are kept.
    pub structured_data: Vec<SdElement<'a>>,
    /// MSG with trailing whitespace removed (and a leading UTF-8 BOM in 5424
    /// unless [`Options::strip_bom`] is off); `None` when empty.
    pub message: Option<Cow<'a, str>>,
}

/// Receiver-side settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Year for RFC 3164 timestamps without one. `None`: the year that puts
    /// the time no more than a day ahead of the receiver's clock in `tz` (next,
    /// this or last year; `Dec 10` received on 26 Nov is last December).
    pub year: Option<i32>,
    /// Zone for timestamps without an offset (RFC 3164).
    pub tz: FixedOffset,
    /// Remove a UTF-8 BOM at the start of an RFC 5424 MSG (RFC 5424 §6.4 says
    /// it marks the encoding, it is not content). Default true.
    pub strip_bom: bool,
    /// RFC 5424: reject malformed structured-data elements instead of
    /// dropping them. Default false (dropped, as syslog-loose does).
    pub strict_sd: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { year: None, tz: utc(), strip_bom: true, strict_sd: false }
    }
}

fn utc() -> FixedOffset {
    // INVARIANT: an offset of 0 seconds is always in range.
    FixedOffset::east_opt(0).expect("zero offset is valid")
}

/// Why a message was rejected; `pos` is a byte offset into the input.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SyslogError {
    #[error("empty message")]
    Empty,
    #[error("invalid priority at byte {pos}: expected `<` followed by 1-3 digits and `>`")]
    InvalidPriority { pos: usize },
    #[error("priority out of range (0-191) at byte {pos}")]
    PriorityOutOfRange { pos: usize },
    #[error("unexpected end of input at byte {pos}: expected {expected}")]
    UnexpectedEnd { pos: usize, expected: &'static str },
    #[error("expected {expected} at byte {pos}")]
    Expected { pos: usize, expected: &'static str },
    #[error("invalid timestamp at byte {pos}: {reason}")]
    InvalidTimestamp { pos: usize, reason: String },
    #[error("invalid structured data at byte {pos}: {reason}")]
    InvalidStructuredData { pos: usize, reason: &'static str },
}

/// Standard facility keyword for a facility number (`kern`, `user`, ...,
/// `local7`), or `None` above 23.
pub fn facility_name(facility: u8) -> Option<&'static str> {
    const NAMES: [&str; 24] = [
        "kern",
        "user",
        "mail",
        "daemon",
        "auth",
        "syslog",
        "lpr",
        "news",
        "uucp",
        "cron",
        "authpriv",
        "ftp",
        "ntp",
        "security",
        "console",
        "solaris-cron",
        "local0",
        "local1",
        "local2",
        "local3",
        "local4",
        "local5",
        "local6",
        "local7",
    ];
    NAMES.get(usize::from(facility)).copied()
}

/// Standard severity keyword (`emerg` ... `debug`), or `None` above 7.
pub fn severity_name(severity: u8) -> Option<&'static str> {
    const NAMES: [&str; 8] = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"];
    NAMES.get(usize::from(severity)).copied()
}

/// Parses a syslog message, detecting RFC 5424 or RFC 3164 (see module docs).
pub fn parse<'a>(input: &'a [u8], opts: &Options) -> Result<SyslogMessage<'a>, SyslogError> {
    let (start, end) = trim(input);
    if start == end {
        return Err(SyslogError::Empty);
    }
    let b = &input[..end];
    let mut p = start;
    let pri = parse_pri(b, &mut p)?;
    if version_len(&b[p..]).is_some() {
        match parse_5424(input, opts) {
            Ok(m) => return Ok(m),
            Err(e) if pri.is_some() => return Err(e),
            Err(_) => {}
        }
    }
    parse_3164(input, opts)
}

/// Returns (start, end) of `input` without surrounding ASCII whitespace.
fn trim(input: &[u8]) -> (usize, usize) {
    let start = input.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(input.len());
    let end = input.iter().rposition(|c| !c.is_ascii_whitespace()).map_or(start, |i| i + 1);
    (start, end)
}

fn text(b: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// `<PRI>` if present. A `<` that does not start a valid PRI is an error.
fn parse_pri(b: &[u8], p: &mut usize) -> Result<Option<u8>, SyslogError> {
    if b.get(*p) != Some(&b'<') {
        return Ok(None);
    }
    let digits_start = *p + 1;
    let mut q = digits_start;
    let mut v: u32 = 0;
    while let Some(d) = b.get(q).filter(|d| d.is_ascii_digit()) {
        v = v.saturating_mul(10).saturating_add(u32::from(d - b'0'));
        q += 1;
    }
    if q == digits_start || b.get(q) != Some(&b'>') {
        return Err(SyslogError::InvalidPriority { pos: q });
    }
    if q - digits_start > 3 || v > 191 {
        return Err(SyslogError::PriorityOutOfRange { pos: digits_start });
    }
    *p = q + 1;
    Ok(Some(v as u8))
}

/// Length of an RFC 5424 VERSION (`[1-9][0-9]{0,2}`) followed by a space.
fn version_len(b: &[u8]) -> Option<usize> {
    let n = b.iter().take(4).take_while(|c| c.is_ascii_digit()).count();
    if (1..=3).contains(&n) && b[0] != b'0' && b.get(n) == Some(&b' ') {
        Some(n)
    } else {
        None
    }
}

fn split_pri(pri: Option<u8>) -> (Option<u8>, Option<u8>) {
    (pri.map(|p| p / 8), pri.map(|p| p % 8))
}

fn civil_to_datetime(c: Civil, offset: i32) -> Option<DateTime<FixedOffset>> {
    let off = FixedOffset::east_opt(offset)?;
    let naive =
        NaiveDate::from_ymd_opt(c.year, c.month, c.day)?.and_hms_nano_opt(c.hour, c.minute, c.second, c.nanos)?;
    naive.and_local_timezone(off).single()
}

/// Byte cursor over the trimmed input for the 5424 grammar.
struct Cursor<'a> {
    b: &'a [u8],
    p: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.p).copied()
    }

    fn sp(&mut self, expected: &'static str) -> Result<(), SyslogError> {
        match self.peek() {
            Some(b' ') => {
                self.p += 1;
                Ok(())
            }
            None => Err(SyslogError::UnexpectedEnd { pos: self.p, expected }),
            Some(_) => Err(SyslogError::Expected { pos: self.p, expected }),
        }
    }

    /// A header field: a non-empty run of non-space bytes; `-` is NILVALUE.
    fn field(&mut self, name: &'static str) -> Result<Option<Cow<'a, str>>, SyslogError> {
        let start = self.p;
        while self.p < self.b.len() && self.b[self.p] != b' ' {
            self.p += 1;
        }
        match &self.b[start..self.p] {
            [] if self.p == self.b.len() => Err(SyslogError::UnexpectedEnd { pos: start, expected: name }),
            [] => Err(SyslogError::Expected { pos: start, expected: name }),
            b"-" => Ok(None),
            f => Ok(Some(text(f))),
        }
    }
}

/// Parses a strict RFC 5424 message (the PRI may be missing, as some relays
/// strip it; leading/trailing whitespace is ignored). Malformed structured
/// data elements are dropped unless [`Options::strict_sd`] is set.
pub fn parse_5424<'a>(input: &'a [u8], opts: &Options) -> Result<SyslogMessage<'a>, SyslogError> {
    let (start, end) = trim(input);
    if start == end {
        return Err(SyslogError::Empty);
    }
    let mut c = Cursor { b: &input[..end], p: start };
    let priority = parse_pri(c.b, &mut c.p)?;
    let vlen = version_len(&c.b[c.p..])
        .ok_or(SyslogError::Expected { pos: c.p, expected: "version (1-999) followed by a space" })?;
    let mut version: u16 = 0;
    for d in &c.b[c.p..c.p + vlen] {
        version = version * 10 + u16::from(d - b'0');
    }
    c.p += vlen;
    c.sp("space after version")?;

    let timestamp = if c.peek() == Some(b'-') {
        c.p += 1;
        None
    } else {
        let ts_start = c.p;
        let parts = date::parse_iso8601(&c.b[c.p..], true).map_err(|e| ts_error(e, ts_start))?;
        c.p += parts.len;
        let dt = civil_to_datetime(parts.civil, parts.offset.unwrap_or(0))
            .ok_or(SyslogError::InvalidTimestamp { pos: ts_start, reason: "date out of range".to_owned() })?;
        Some(dt)
    };
    c.sp("space after timestamp")?;
    let hostname = c.field("hostname")?;
    c.sp("space after hostname")?;
    let appname = c.field("app-name")?;
    c.sp("space after app-name")?;
    let procid = c.field("procid")?;
    c.sp("space after procid")?;
    let msgid = c.field("msgid")?;
    c.sp("space after msgid")?;
    let structured_data = parse_sd_5424(&mut c, opts.strict_sd)?;
    let message = if c.p >= c.b.len() {
        None
    } else {
        c.sp("space after structured data")?;
        let mut m = &c.b[c.p..];
        if opts.strip_bom {
            m = m.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(m);
        }
        (!m.is_empty()).then(|| text(m))
    };
    let (facility, severity) = split_pri(priority);
    Ok(SyslogMessage {
        protocol: Protocol::Rfc5424,
        priority,
        facility,
        severity,
        version: Some(version),
        timestamp,
        year_inferred: false,
        hostname,
        appname,
        procid,
        msgid,
        structured_data,
        message,
    })
}

fn ts_error(e: DateError, base: usize) -> SyslogError {
    let pos = match e {
        DateError::Mismatch { pos, .. } | DateError::OutOfRange { pos, .. } => base + pos,
        _ => base,
    };
    let reason = match e {
        DateError::Mismatch { expected, .. } => format!("expected {expected}"),
        DateError::OutOfRange { field, .. } => format!("{field} out of range"),
        e => e.to_string(),
    };
    SyslogError::InvalidTimestamp { pos, reason }
}

fn parse_sd_5424<'a>(c: &mut Cursor<'a>, strict: bool) -> Result<Vec<SdElement<'a>>, SyslogError> {
    match c.peek() {
        Some(b'-') => {
            c.p += 1;
            return Ok(Vec::new());
        }
        Some(b'[') => {}
        None => return Err(SyslogError::UnexpectedEnd { pos: c.p, expected: "structured data (`-` or `[`)" }),
        Some(_) => return Err(SyslogError::Expected { pos: c.p, expected: "structured data (`-` or `[`)" }),
    }
    let mut out = Vec::new();
    while c.peek() == Some(b'[') {
        match sd_element(c.b, c.p) {
            Ok((el, next)) => {
                out.push(el);
                c.p = next;
            }
            Err(e) if strict => return Err(e),
            Err(e) => {
                // Lenient: drop the element up to the next `]`.
                match c.b[c.p..].iter().position(|&x| x == b']') {
                    Some(i) => c.p += i + 1,
                    None => return Err(e),
                }
            }
        }
    }
    Ok(out)
}

/// SD-NAME characters: printable US-ASCII except `=`, space, `]`, `"`. Bytes
/// above 0x7E are tolerated (decoded lossily) for lenient senders.
fn is_sd_name(ch: u8) -> bool {
    ch > b' ' && ch != b'=' && ch != b']' && ch != b'"' && ch != 0x7F
}

/// Parses `[id name="value" ...]` starting at `p` (which holds `[`); returns
/// the element and the position after `]`.
fn sd_element(b: &[u8], mut p: usize) -> Result<(SdElement<'_>, usize), SyslogError> {
    p += 1;
    let id_start = p;
    while p < b.len() && is_sd_name(b[p]) && b[p] != b'[' {
        p += 1;
    }
    if p == id_start {
        return Err(SyslogError::InvalidStructuredData { pos: p, reason: "expected SD-ID" });
    }
    let id = text(&b[id_start..p]);
    let mut params = Vec::new();
    loop {
        match b.get(p) {
            Some(b']') => return Ok((SdElement { id, params }, p + 1)),
            Some(b' ') => {
                while b.get(p) == Some(&b' ') {
                    p += 1;
                }
                if b.get(p) == Some(&b']') {
                    continue;
                }
                let name_start = p;
                while p < b.len() && is_sd_name(b[p]) {
                    p += 1;
                }
                if p == name_start {
                    return Err(SyslogError::InvalidStructuredData { pos: p, reason: "expected PARAM-NAME" });
                }
                let name = text(&b[name_start..p]);
                if b.get(p) != Some(&b'=') {
                    return Err(SyslogError::InvalidStructuredData { pos: p, reason: "expected `=` after PARAM-NAME" });
                }
                p += 1;
                if b.get(p) != Some(&b'"') {
                    return Err(SyslogError::InvalidStructuredData {
                        pos: p,
                        reason: "expected `\"` to open PARAM-VALUE",
                    });
                }
                p += 1;
                let v_start = p;
                let mut escaped = false;
                loop {
                    match b.get(p) {
                        None => {
                            return Err(SyslogError::InvalidStructuredData {
                                pos: p,
                                reason: "unterminated PARAM-VALUE",
                            })
                        }
                        Some(b'\\') => {
                            escaped = true;
                            p += 2;
                        }
                        Some(b'"') => break,
                        Some(_) => p += 1,
                    }
                }
                let raw = &b[v_start..p];
                p += 1;
                params.push((name, unescape_sd(raw, escaped)));
            }
            None => {
                return Err(SyslogError::InvalidStructuredData { pos: p, reason: "unterminated element, expected `]`" })
            }
            Some(_) => return Err(SyslogError::InvalidStructuredData { pos: p, reason: "expected space or `]`" }),
        }
    }
}

/// Unescapes `\"`, `\\` and `\]`; any other backslash is kept literally.
fn unescape_sd(raw: &[u8], has_backslash: bool) -> Cow<'_, str> {
    if !has_backslash {
        return text(raw);
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' && matches!(raw.get(i + 1), Some(b'"' | b'\\' | b']')) {
            out.push(raw[i + 1]);
            i += 2;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// Parses an RFC 3164 timestamp `Mmm dd hh:mm:ss[.frac]` (day space-padded or
/// not, month case-insensitive). Returns (civil without year, length).
fn bsd_timestamp(b: &[u8]) -> Option<(Civil, usize)> {
    let (month, mut p) = date::match_month(b, false)?;
    if b.get(p) != Some(&b' ') {
        return None;
    }
    while b.get(p) == Some(&b' ') {
        p += 1;
    }
    let num = |p: &mut usize, min: usize, max: usize| -> Option<u32> {
        let s = *p;
        let mut v = 0u32;
        while *p < b.len() && *p - s < max && b[*p].is_ascii_digit() {
            v = v * 10 + u32::from(b[*p] - b'0');
            *p += 1;
        }
        (*p - s >= min).then_some(v)
    };
    let day = num(&mut p, 1, 2)?;
    if b.get(p) != Some(&b' ') {
        return None;
    }
    p += 1;
    let hour = num(&mut p, 2, 2)?;
    (b.get(p) == Some(&b':')).then_some(())?;
    p += 1;
    let minute = num(&mut p, 2, 2)?;
    (b.get(p) == Some(&b':')).then_some(())?;
    p += 1;
    let second = num(&mut p, 2, 2)?;
    let mut nanos = 0;
    if b.get(p) == Some(&b'.') && b.get(p + 1).is_some_and(u8::is_ascii_digit) {
        p += 1;
        let s = p;
        while p < b.len() && b[p].is_ascii_digit() {
            if p - s < 9 {
                nanos = nanos * 10 + u32::from(b[p] - b'0');
            }
            p += 1;
        }
        for _ in (p - s).min(9)..9 {
            nanos *= 10;
        }
    }
    if hour > 23 || minute > 59 || second > 59 || day == 0 || day > 31 {
        return None;
    }
    Some((Civil { year: 0, month, day, hour, minute, second, nanos }, p))
}

/// Recognises a 3164 TAG at the start of `b`: `app[pid]`, `app[pid]:` or
/// `app:`, followed by whitespace or the end. Returns (app, pid, length).
fn tag(b: &[u8]) -> Option<Tag<'_>> {
    let n = b.iter().position(|&c| c.is_ascii_whitespace() || c == b':' || c == b'[').unwrap_or(b.len());
    if n == 0 {
        return None;
    }
    let mut p = n;
    let mut pid = None;
    if b.get(p) == Some(&b'[') {
        let close = b[p..].iter().position(|&c| c == b']')?;
        let inner = &b[p + 1..p + close];
        if inner.is_empty() || inner.iter().any(u8::is_ascii_whitespace) {
            return None;
        }
        pid = Some(inner);
        p += close + 1;
        if b.get(p) == Some(&b':') {
            p += 1;
        }
    } else if b.get(p) == Some(&b':') {
        p += 1;
    } else {
        return None;
    }
    if p < b.len() && !b[p].is_ascii_whitespace() {
        return None;
    }
    Some(Tag { app: &b[..n], pid, len: p })
}

/// A recognised 3164 TAG.
struct Tag<'a> {
    app: &'a [u8],
    pid: Option<&'a [u8]>,
    /// Bytes consumed, including `[pid]` and `:`.
    len: usize,
}

/// Lenient RFC 3164: everything is optional except a non-empty line. Reads
/// `<PRI>`, a timestamp (`Mmm dd hh:mm:ss` or ISO 8601), a hostname, a
/// `app[pid]:` tag, rsyslog-style `[id k="v"]` structured data (only elements
/// with at least one parameter, so `[info]` stays in the message), then the
/// message. A first word that is itself a tag (`haproxy[123]:`, `kernel:`)
/// means there is no hostname. A second word without `:` or `[pid]` is not a
/// tag: it starts the message (as go-syslog, unlike syslog-loose).
pub fn parse_3164<'a>(input: &'a [u8], opts: &Options) -> Result<SyslogMessage<'a>, SyslogError> {
    let (start, end) = trim(input);
    if start == end {
        return Err(SyslogError::Empty);
    }
    let b = &input[..end];
    let mut p = start;
    let priority = parse_pri(b, &mut p)?;
    skip_ws(b, &mut p);

    let mut timestamp = None;
    let mut year_inferred = false;
    if let Some((mut civil, n)) = bsd_timestamp(&b[p..]) {
        civil.year = opts.year.unwrap_or_else(|| date::infer_year_now(civil, opts.tz));
        if let Some(dt) = civil_to_datetime(civil, opts.tz.local_minus_utc()) {
            timestamp = Some(dt);
            year_inferred = true;
            p += n;
        }
    } else if b.get(p).is_some_and(u8::is_ascii_digit) {
        if let Ok(parts) = date::parse_iso8601(&b[p..], false) {
            let at_boundary = b.get(p + parts.len).is_none_or(u8::is_ascii_whitespace);
            let off = parts.offset.unwrap_or(opts.tz.local_minus_utc());
            if let (true, Some(dt)) = (at_boundary, civil_to_datetime(parts.civil, off)) {
                timestamp = Some(dt);
                p += parts.len;
            }
        }
    }

    let mut hostname = None;
    let mut appname = None;
    let mut procid = None;
    skip_ws(b, &mut p);
    let header = priority.is_some() || timestamp.is_some();
    if let Some(t) = tag(&b[p..]).filter(|_| header) {
        appname = Some(text(t.app));
        procid = t.pid.map(text);
        p += t.len;
    } else if timestamp.is_some() && p < b.len() && b[p] != b'[' {
        let n = b[p..].iter().position(u8::is_ascii_whitespace).unwrap_or(b.len() - p);
        hostname = Some(text(&b[p..p + n]));
        p += n;
        skip_ws(b, &mut p);
        if let Some(t) = tag(&b[p..]) {
            appname = Some(text(t.app));
            procid = t.pid.map(text);
            p += t.len;
        }
    }
    skip_ws(b, &mut p);

    let mut structured_data = Vec::new();
    while b.get(p) == Some(&b'[') {
        match sd_element(b, p) {
            Ok((el, next)) if !el.params.is_empty() && b.get(next).is_none_or(|&c| c == b' ' || c == b'[') => {
                structured_data.push(el);
                p = next;
            }
            _ => break,
        }
    }
    skip_ws(b, &mut p);
    let message = (p < b.len()).then(|| text(&b[p..]));
    let (facility, severity) = split_pri(priority);
    Ok(SyslogMessage {
        protocol: Protocol::Rfc3164,
        priority,
        facility,
        severity,
        version: None,
        timestamp,
        year_inferred,
        hostname,
        appname,
        procid,
        msgid: None,
        structured_data,
        message,
    })
}

fn skip_ws(b: &[u8], p: &mut usize) {
    while b.get(*p).is_some_and(u8::is_ascii_whitespace) {
        *p += 1;
    }
}
