//! Timestamp parsing to nanoseconds since the Unix epoch, with the formats the
//! Logstash `date` filter accepts: the named formats `ISO8601`, `UNIX`,
//! `UNIX_MS`, `RFC3164`, `RFC2822`, `HTTPDATE`, and Joda-style patterns such as
//! `yyyy-MM-dd HH:mm:ss,SSS`.
//!
//! Why a hand-written matcher: the date filter runs once per event, so a pattern
//! is compiled once ([`DateParser::new`]) into a short list of items that are
//! matched byte by byte, with no allocation per parse and no dependency on a
//! time-zone database. Zone offsets in the input win; inputs without an offset
//! are read in the configured fixed offset.
//!
//! Only fixed offsets are supported: a Joda `ZZZ` zone id is accepted for
//! `UTC`/`GMT`/`Z` only, and `z` (zone names) is rejected at construction, as
//! Joda itself cannot parse it.

mod pattern;

use self::pattern::{compile, expect, need_num, need_spaces, parse_unix, shift, skip_spaces, validate};
use chrono::{Datelike, FixedOffset, Timelike, Utc};
use thiserror::Error;

/// Errors from compiling formats or parsing a timestamp. Positions are byte
/// offsets into the pattern (construction) or the input (parsing).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DateError {
    /// `DateParser::new` was given no formats.
    #[error("no date formats given")]
    NoFormats,
    /// A pattern letter that Joda-Time does not define.
    #[error("unknown pattern token '{token}' at position {pos} of pattern {pattern:?}")]
    UnknownToken { token: char, pos: usize, pattern: String },
    /// A Joda token this parser does not implement (for example `z`, `w`, `G`).
    #[error("unsupported pattern token '{token}' at position {pos} of pattern {pattern:?}")]
    UnsupportedToken { token: char, pos: usize, pattern: String },
    /// A quoted literal in a pattern has no closing quote.
    #[error("unterminated quote at position {pos} of pattern {pattern:?}")]
    UnterminatedQuote { pos: usize, pattern: String },
    /// The input did not match the format.
    #[error("expected {expected} at byte {pos}")]
    Mismatch { pos: usize, expected: &'static str },
    /// A field parsed but its value is impossible (month 13, February 30, ...).
    #[error("{field} out of range at byte {pos}")]
    OutOfRange { pos: usize, field: &'static str },
    /// The format matched a prefix of the input and bytes were left over.
    #[error("unexpected trailing input at byte {pos}")]
    TrailingInput { pos: usize },
    /// The instant cannot be represented as i64 nanoseconds (years 1678..2262).
    #[error("timestamp outside the representable range (years 1678 to 2261)")]
    Overflow,
}

impl DateError {
    /// How far into the input this error happened; used to report the most
    /// informative error when several formats are tried.
    fn progress(&self) -> usize {
        match self {
            DateError::Mismatch { pos, .. } | DateError::OutOfRange { pos, .. } | DateError::TrailingInput { pos } => {
                *pos
            }
            DateError::Overflow => usize::MAX,
            _ => 0,
        }
    }
}

/// A broken-down calendar time (proleptic Gregorian), before applying a zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Civil {
    pub year: i32,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub nanos: u32,
}

impl Civil {
    /// Nanoseconds since the epoch for this wall-clock time at `offset_secs`
    /// east of UTC.
    pub(crate) fn to_epoch_nanos(self, offset_secs: i32) -> Result<i64, DateError> {
        let days = days_from_civil(self.year, self.month, self.day);
        let secs = days
            .checked_mul(86_400)
            .and_then(|s| {
                s.checked_add(i64::from(self.hour) * 3600 + i64::from(self.minute) * 60 + i64::from(self.second))
            })
            .and_then(|s| s.checked_sub(i64::from(offset_secs)))
            .ok_or(DateError::Overflow)?;
        secs.checked_mul(1_000_000_000).and_then(|n| n.checked_add(i64::from(self.nanos))).ok_or(DateError::Overflow)
    }
}

/// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's
/// algorithm). Valid for any i32 year.
pub(crate) fn days_from_civil(year: i32, month: u32, day: u32) -> i64 {
    let y = i64::from(year) - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

pub(crate) fn is_leap(year: i32) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

pub(crate) fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// A fixed UTC offset written `+HH:MM`, `+HHMM` or `+HH` (or with `-`);
/// `None` for anything else. Callers add their own names for UTC and their
/// own error message.
pub fn parse_fixed_offset(t: &str) -> Option<FixedOffset> {
    let (sign, rest) = match t.as_bytes().first() {
        Some(b'+') => (1, &t[1..]),
        Some(b'-') => (-1, &t[1..]),
        _ => return None,
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if !digits.bytes().all(|b| b.is_ascii_digit()) || !(digits.len() == 2 || digits.len() == 4) {
        return None;
    }
    let hours: i32 = digits[..2].parse().ok()?;
    let minutes: i32 = if digits.len() == 4 { digits[2..].parse().ok()? } else { 0 };
    if hours > 23 || minutes > 59 {
        return None;
    }
    FixedOffset::east_opt(sign * (hours * 3600 + minutes * 60))
}

/// How far ahead of the receiver's clock a timestamp without a year may be
/// and still be read as this year (senders' clocks run a little fast).
pub const YEAR_AHEAD_TOLERANCE_SECS: i64 = 86_400;

/// The year for a timestamp that carries none (RFC 3164 `Dec 10 06:55:46`),
/// given the receiver's wall clock `now` in the same zone: the latest of next,
/// this and last year that puts the time no more than a day ahead of `now`,
/// as rsyslog and Graylog read it. So `Dec 10` received on 26 Nov is last
/// December (this year's would be in the future, invisible in every "last …"
/// range), `Jan  1 00:00:05` received on 31 Dec at 23:59:58 is next year, and
/// a time up to a day ahead (a sender's fast clock) stays this year.
pub(crate) fn infer_year(c: Civil, now: Civil) -> i32 {
    let secs = |year: i32| {
        let days = days_from_civil(year, c.month, c.day);
        days * 86_400 + i64::from(c.hour) * 3600 + i64::from(c.minute) * 60 + i64::from(c.second)
    };
    let now_secs = days_from_civil(now.year, now.month, now.day) * 86_400
        + i64::from(now.hour) * 3600
        + i64::from(now.minute) * 60
        + i64::from(now.second);
    [now.year + 1, now.year]
        .into_iter()
        .find(|&y| secs(y) <= now_secs + YEAR_AHEAD_TOLERANCE_SECS)
        .unwrap_or(now.year - 1)
}

/// [`infer_year`] against the current wall clock in `tz`.
pub(crate) fn infer_year_now(c: Civil, tz: FixedOffset) -> i32 {
    let now = Utc::now().with_timezone(&tz);
    let now = Civil {
        year: now.year(),
        month: now.month(),
        day: now.day(),
        hour: now.hour(),
        minute: now.minute(),
        second: now.second(),
        nanos: 0,
    };
    infer_year(c, now)
}

const MONTHS: [&[u8]; 12] = [
    b"january",
    b"february",
    b"march",
    b"april",
    b"may",
    b"june",
    b"july",
    b"august",
    b"september",
    b"october",
    b"november",
    b"december",
];

const WEEKDAYS: [&[u8]; 7] = [b"monday", b"tuesday", b"wednesday", b"thursday", b"friday", b"saturday", b"sunday"];

/// Case-insensitive English month abbreviation (`Jan`) or, when `full`, also a
/// full name (`January`). Returns (month 1..=12, bytes consumed).
pub(crate) fn match_month(b: &[u8], full: bool) -> Option<(u32, usize)> {
    if b.len() < 3 {
        return None;
    }
    for (i, name) in MONTHS.iter().enumerate() {
        if full && b.len() >= name.len() && b[..name.len()].eq_ignore_ascii_case(name) {
            return Some((i as u32 + 1, name.len()));
        }
        if b[..3].eq_ignore_ascii_case(&name[..3]) {
            return Some((i as u32 + 1, 3));
        }
    }
    None
}

/// Case-insensitive English weekday, abbreviated or full. Returns bytes consumed.
fn match_weekday(b: &[u8]) -> Option<usize> {
    if b.len() < 3 {
        return None;
    }
    for name in WEEKDAYS {
        if b.len() >= name.len() && b[..name.len()].eq_ignore_ascii_case(name) {
            return Some(name.len());
        }
        if b[..3].eq_ignore_ascii_case(&name[..3]) {
            return Some(3);
        }
    }
    None
}

/// Reads between `min` and `max` ASCII digits at `*pos`.
fn digits(b: &[u8], pos: &mut usize, min: usize, max: usize) -> Option<u32> {
    let start = *pos;
    let mut v: u32 = 0;
    while *pos < b.len() && *pos - start < max && b[*pos].is_ascii_digit() {
        // Saturating: a pattern like `yyyyyyyyyyyy` allows more digits than
        // fit; the value is then rejected by range checks, never overflows.
        v = v.saturating_mul(10).saturating_add(u32::from(b[*pos] - b'0'));
        *pos += 1;
    }
    if *pos - start < min {
        *pos = start;
        return None;
    }
    Some(v)
}

/// Reads a fraction of a second: 1 or more digits, the first 9 significant.
fn fraction(b: &[u8], pos: &mut usize, max: usize) -> Option<u32> {
    let start = *pos;
    let mut v: u32 = 0;
    while *pos < b.len() && *pos - start < max && b[*pos].is_ascii_digit() {
        if *pos - start < 9 {
            v = v * 10 + u32::from(b[*pos] - b'0');
        }
        *pos += 1;
    }
    let n = *pos - start;
    if n == 0 {
        return None;
    }
    for _ in n..9 {
        v *= 10;
    }
    Some(v)
}

/// Reads a numeric zone offset `Z`, `±hh`, `±hhmm` or `±hh:mm` (colon required
/// when `need_colon`). Returns seconds east of UTC.
fn zone_offset(b: &[u8], pos: &mut usize, need_colon: bool) -> Result<i32, DateError> {
    match b.get(*pos) {
        Some(b'Z' | b'z') => {
            *pos += 1;
            Ok(0)
        }
        Some(&sign @ (b'+' | b'-')) => {
            *pos += 1;
            let hh = digits(b, pos, 2, 2).ok_or(DateError::Mismatch { pos: *pos, expected: "two-digit zone hour" })?;
            let mut mm = 0;
            if b.get(*pos) == Some(&b':') {
                *pos += 1;
                mm =
                    digits(b, pos, 2, 2).ok_or(DateError::Mismatch { pos: *pos, expected: "two-digit zone minute" })?;
            } else if need_colon {
                return Err(DateError::Mismatch { pos: *pos, expected: "`:` in zone offset" });
            } else if let Some(m) = digits(b, pos, 2, 2) {
                mm = m;
            }
            if hh > 23 || mm > 59 {
                return Err(DateError::OutOfRange { pos: *pos, field: "zone offset" });
            }
            let secs = (hh * 3600 + mm * 60) as i32;
            Ok(if sign == b'-' { -secs } else { secs })
        }
        _ => Err(DateError::Mismatch { pos: *pos, expected: "zone offset (`Z` or `+hh:mm`)" }),
    }
}

/// Result of [`parse_iso8601`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IsoParts {
    pub civil: Civil,
    /// Seconds east of UTC, if the input had a zone.
    pub offset: Option<i32>,
    /// Bytes consumed.
    pub len: usize,
}

/// Parses an ISO 8601 timestamp at the start of `b`. With `rfc3339` set it is
/// the strict RFC 3339 form syslog 5424 requires (`T`, seconds and a zone
/// `Z`/`±hh:mm` mandatory); otherwise a space may replace `T`, time, seconds
/// and zone are optional, `,` may introduce the fraction and the zone may be
/// `±hh` or `±hhmm`. Stops at the first byte that cannot continue the
/// timestamp; the caller decides what may follow.
pub(crate) fn parse_iso8601(b: &[u8], rfc3339: bool) -> Result<IsoParts, DateError> {
    let mut p = 0;
    let mut c = Civil::default();
    let num = |p: &mut usize, n: usize, what: &'static str| {
        digits(b, p, n, n).ok_or(DateError::Mismatch { pos: *p, expected: what })
    };
    let lit = |p: &mut usize, ch: u8, what: &'static str| {
        if b.get(*p) == Some(&ch) {
            *p += 1;
            Ok(())
        } else {
            Err(DateError::Mismatch { pos: *p, expected: what })
        }
    };
    c.year = num(&mut p, 4, "four-digit year")? as i32;
    lit(&mut p, b'-', "`-` after year")?;
    c.month = num(&mut p, 2, "two-digit month")?;
    lit(&mut p, b'-', "`-` after month")?;
    let day_pos = p;
    c.day = num(&mut p, 2, "two-digit day")?;
    if !(1..=12).contains(&c.month) {
        return Err(DateError::OutOfRange { pos: 5, field: "month" });
    }
    if c.day == 0 || c.day > days_in_month(c.year, c.month) {
        return Err(DateError::OutOfRange { pos: day_pos, field: "day" });
    }
    let has_time = match b.get(p) {
        Some(b'T' | b't') => true,
        Some(b' ') if !rfc3339 && b.get(p + 1).is_some_and(u8::is_ascii_digit) => true,
        _ if rfc3339 => return Err(DateError::Mismatch { pos: p, expected: "`T` between date and time" }),
        _ => false,
    };
    if !has_time {
        return Ok(IsoParts { civil: c, offset: None, len: p });
    }
    p += 1;
    let hour_pos = p;
    c.hour = num(&mut p, 2, "two-digit hour")?;
    lit(&mut p, b':', "`:` after hour")?;
    c.minute = num(&mut p, 2, "two-digit minute")?;
    let sec_pos = p;
    if rfc3339 || b.get(p) == Some(&b':') {
        lit(&mut p, b':', "`:` after minute")?;
        c.second = num(&mut p, 2, "two-digit second")?;
        if b.get(p) == Some(&b'.') || (!rfc3339 && b.get(p) == Some(&b',')) {
            p += 1;
            c.nanos =
                fraction(b, &mut p, usize::MAX).ok_or(DateError::Mismatch { pos: p, expected: "fraction digits" })?;
        }
    }
    if c.hour > 23 {
        return Err(DateError::OutOfRange { pos: hour_pos, field: "hour" });
    }
    if c.minute > 59 {
        return Err(DateError::OutOfRange { pos: hour_pos + 3, field: "minute" });
    }
    if c.second > 59 {
        return Err(DateError::OutOfRange { pos: sec_pos + 1, field: "second" });
    }
    let offset = match b.get(p) {
        Some(b'Z' | b'z' | b'+' | b'-') => Some(zone_offset(b, &mut p, rfc3339)?),
        _ if rfc3339 => return Err(DateError::Mismatch { pos: p, expected: "zone offset (`Z` or `+hh:mm`)" }),
        _ => None,
    };
    Ok(IsoParts { civil: c, offset, len: p })
}

/// One compiled element of a Joda-style pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    /// Literal bytes that must appear verbatim.
    Literal(Box<[u8]>),
    /// One or more spaces in the pattern: matches one or more spaces.
    Space,
    /// A numeric field with between `min` and `max` digits; `width` is the
    /// number of pattern letters.
    Num { field: Field, min: usize, max: usize, width: usize },
    /// `S...`: fraction of a second, up to `max` digits.
    Fraction { max: usize, width: usize },
    /// `MMM` (abbreviation) or `MMMM` (full name, abbreviation also accepted).
    MonthText { full: bool },
    /// `E...`: a weekday name, checked for syntax and otherwise ignored.
    Weekday,
    /// `a`: AM/PM.
    HalfDay,
    /// `Z`/`ZZ`: numeric offset or `Z`.
    Offset,
    /// `ZZZ`: a zone id; only UTC-equivalent ids are known.
    ZoneId,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Year,
    Year2,
    Month,
    Day,
    Hour24,
    Hour12,
    Hour0To11,
    Hour1To24,
    Minute,
    Second,
    DayOfWeekNum,
}

/// One way of reading a timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Format {
    Iso8601,
    Unix,
    UnixMs,
    Rfc2822,
    Pattern(Box<[Item]>),
}

/// A set of formats tried in order, as the Logstash date filter's `match`.
#[derive(Debug, Clone)]
pub struct DateParser {
    formats: Vec<Format>,
    tz: FixedOffset,
    year: Option<i32>,
}

impl DateParser {
    /// Compiles `formats`: the names `ISO8601`, `UNIX`, `UNIX_MS`, `RFC3164`,
    /// `RFC2822`, `HTTPDATE`, or Joda patterns. `tz` is used for inputs that
    /// carry no offset. Fails on an unknown or unsupported pattern letter.
    pub fn new<S: AsRef<str>>(formats: &[S], tz: FixedOffset) -> Result<Self, DateError> {
        if formats.is_empty() {
            return Err(DateError::NoFormats);
        }
        let formats = formats
            .iter()
            .map(|f| match f.as_ref() {
                "ISO8601" => Ok(Format::Iso8601),
                "UNIX" => Ok(Format::Unix),
                "UNIX_MS" => Ok(Format::UnixMs),
                "RFC2822" => Ok(Format::Rfc2822),
                "RFC3164" => compile("MMM d HH:mm:ss"),
                "HTTPDATE" => compile("dd/MMM/yyyy:HH:mm:ss Z"),
                p => compile(p),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(DateParser { formats, tz, year: None })
    }

    /// Fixes the year used for formats without one (default: the current
    /// year in `tz`, with December/January rollover).
    pub fn with_year(mut self, year: Option<i32>) -> Self {
        self.year = year;
        self
    }

    /// Parses `s` with each format in turn and returns nanoseconds since the
    /// epoch from the first that matches the whole input (surrounding ASCII
    /// whitespace ignored). On failure returns the error of the format that
    /// got furthest.
    pub fn parse(&self, s: &str) -> Result<i64, DateError> {
        let b = s.as_bytes();
        let start = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
        let end = b.len() - b[start..].iter().rev().take_while(|c| c.is_ascii_whitespace()).count();
        let b = &b[start..end];
        let mut best: Option<DateError> = None;
        for f in &self.formats {
            let r = match f {
                Format::Iso8601 => self.parse_iso(b),
                Format::Unix => parse_unix(b, 1_000_000_000),
                Format::UnixMs => parse_unix(b, 1_000_000),
                Format::Rfc2822 => self.parse_rfc2822(b),
                Format::Pattern(items) => self.parse_pattern(items, b),
            };
            match r {
                Ok(v) => return Ok(v),
                Err(e) => {
                    let e = shift(e, start);
                    if best.as_ref().is_none_or(|b| e.progress() >= b.progress()) {
                        best = Some(e);
                    }
                }
            }
        }
        Err(best.unwrap_or(DateError::NoFormats))
    }

    fn offset_or_tz(&self, o: Option<i32>) -> i32 {
        o.unwrap_or_else(|| self.tz.local_minus_utc())
    }

    fn parse_iso(&self, b: &[u8]) -> Result<i64, DateError> {
        let parts = parse_iso8601(b, false)?;
        if parts.len != b.len() {
            return Err(DateError::TrailingInput { pos: parts.len });
        }
        parts.civil.to_epoch_nanos(self.offset_or_tz(parts.offset))
    }

    /// `[Day, ]dd Mon yyyy HH:mm[:ss] zone` where zone is `±hhmm` or one of
    /// the RFC 822 names (UT, GMT, Z, EST, EDT, CST, CDT, MST, MDT, PST, PDT).
    fn parse_rfc2822(&self, b: &[u8]) -> Result<i64, DateError> {
        let mut p = 0;
        if let Some(n) = match_weekday(b) {
            p = n;
            if b.get(p) == Some(&b',') {
                p += 1;
            }
            skip_spaces(b, &mut p);
        }
        let mut c = Civil {
            day: digits(b, &mut p, 1, 2).ok_or(DateError::Mismatch { pos: p, expected: "day of month" })?,
            ..Civil::default()
        };
        need_spaces(b, &mut p)?;
        let (m, n) = match_month(&b[p..], false).ok_or(DateError::Mismatch { pos: p, expected: "month name" })?;
        c.month = m;
        p += n;
        need_spaces(b, &mut p)?;
        let ypos = p;
        let y = digits(b, &mut p, 2, 4).ok_or(DateError::Mismatch { pos: p, expected: "year" })?;
        c.year = if p - ypos == 2 {
            if y < 50 {
                2000 + y as i32
            } else {
                1900 + y as i32
            }
        } else {
            y as i32
        };
        need_spaces(b, &mut p)?;
        c.hour = need_num(b, &mut p, 2, "two-digit hour")?;
        expect(b, &mut p, b':', "`:` after hour")?;
        c.minute = need_num(b, &mut p, 2, "two-digit minute")?;
        if b.get(p) == Some(&b':') {
            p += 1;
            c.second = need_num(b, &mut p, 2, "two-digit second")?;
        }
        validate(&c, 0)?;
        need_spaces(b, &mut p)?;
        let rest = &b[p..];
        let off = match rest {
            b"UT" | b"GMT" | b"Z" | b"UTC" => 0,
            b"EST" => -5 * 3600,
            b"EDT" => -4 * 3600,
            b"CST" => -6 * 3600,
            b"CDT" => -5 * 3600,
            b"MST" => -7 * 3600,
            b"MDT" => -6 * 3600,
            b"PST" => -8 * 3600,
            b"PDT" => -7 * 3600,
            _ => {
                let o = zone_offset(b, &mut p, false)?;
                if p != b.len() {
                    return Err(DateError::TrailingInput { pos: p });
                }
                o
            }
        };
        c.to_epoch_nanos(off)
    }

    fn parse_pattern(&self, items: &[Item], b: &[u8]) -> Result<i64, DateError> {
        let mut p = 0;
        let mut c = Civil { month: 1, day: 1, ..Civil::default() };
        let mut year: Option<i32> = None;
        let mut pm: Option<bool> = None;
        let mut hour12 = false;
        let mut offset: Option<i32> = None;
        for item in items {
            match item {
                Item::Literal(lit) => {
                    if b.len() - p < lit.len() || !b[p..p + lit.len()].eq_ignore_ascii_case(lit) {
                        return Err(DateError::Mismatch { pos: p, expected: "literal text of the pattern" });
                    }
                    p += lit.len();
                }
                Item::Space => need_spaces(b, &mut p)?,
                Item::Num { field, min, max, .. } => {
                    let v = digits(b, &mut p, *min, *max)
                        .ok_or(DateError::Mismatch { pos: p, expected: field.describe() })?;
                    match field {
                        Field::Year => year = Some(i32::try_from(v).unwrap_or(i32::MAX)),
                        Field::Year2 => year = Some(2000 + v as i32),
                        Field::Month => c.month = v,
                        Field::Day => c.day = v,
                        Field::Hour24 => c.hour = v,
                        Field::Hour12 | Field::Hour0To11 => {
                            hour12 = true;
                            c.hour = if v == 12 { 0 } else { v };
                        }
                        Field::Hour1To24 => c.hour = if v == 24 { 0 } else { v },
                        Field::Minute => c.minute = v,
                        Field::Second => c.second = v,
                        Field::DayOfWeekNum => {}
                    }
                }
                Item::Fraction { max, .. } => {
                    c.nanos = fraction(b, &mut p, *max)
                        .ok_or(DateError::Mismatch { pos: p, expected: "fraction of second" })?;
                }
                Item::MonthText { full } => {
                    let (m, n) =
                        match_month(&b[p..], *full).ok_or(DateError::Mismatch { pos: p, expected: "month name" })?;
                    c.month = m;
                    p += n;
                }
                Item::Weekday => {
                    p += match_weekday(&b[p..]).ok_or(DateError::Mismatch { pos: p, expected: "weekday name" })?;
                }
                Item::HalfDay => {
                    let r = &b[p..];
                    if r.len() >= 2 && r[..2].eq_ignore_ascii_case(b"am") {
                        pm = Some(false);
                    } else if r.len() >= 2 && r[..2].eq_ignore_ascii_case(b"pm") {
                        pm = Some(true);
                    } else {
                        return Err(DateError::Mismatch { pos: p, expected: "AM or PM" });
                    }
                    p += 2;
                }
                Item::Offset => offset = Some(zone_offset(b, &mut p, false)?),
                Item::ZoneId => {
                    let r = &b[p..];
                    let known: [&[u8]; 5] = [b"Etc/UTC", b"UTC", b"GMT", b"UT", b"Z"];
                    match known.iter().find(|k| r.starts_with(k)) {
                        Some(k) => {
                            p += k.len();
                            offset = Some(0);
                        }
                        None => {
                            return Err(DateError::Mismatch { pos: p, expected: "zone id (only UTC/GMT are known)" })
                        }
                    }
                }
            }
        }
        if p != b.len() {
            return Err(DateError::TrailingInput { pos: p });
        }
        if hour12 && c.hour > 11 {
            return Err(DateError::OutOfRange { pos: 0, field: "hour" });
        }
        if pm == Some(true) {
            c.hour += 12;
        }
        c.year = match (year, self.year) {
            (Some(y), _) | (None, Some(y)) => y,
            (None, None) => infer_year_now(c, self.tz),
        };
        validate(&c, 0)?;
        c.to_epoch_nanos(self.offset_or_tz(offset))
    }
}

#[cfg(test)]
mod tests;
