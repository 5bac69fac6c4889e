//! Date patterns: compiling a Joda/strftime-style pattern into items, and
//! the small scanners (spaces, numbers, literals, epoch values) they run.

use super::*;

impl Field {
    pub(super) fn describe(self) -> &'static str {
        match self {
            Field::Year | Field::Year2 => "year digits",
            Field::Month => "month digits",
            Field::Day => "day digits",
            Field::Hour24 | Field::Hour12 | Field::Hour0To11 | Field::Hour1To24 => "hour digits",
            Field::Minute => "minute digits",
            Field::Second => "second digits",
            Field::DayOfWeekNum => "day-of-week digit",
        }
    }
}

pub(super) fn shift(e: DateError, by: usize) -> DateError {
    match e {
        DateError::Mismatch { pos, expected } => DateError::Mismatch { pos: pos + by, expected },
        DateError::OutOfRange { pos, field } => DateError::OutOfRange { pos: pos + by, field },
        DateError::TrailingInput { pos } => DateError::TrailingInput { pos: pos + by },
        e => e,
    }
}

pub(super) fn validate(c: &Civil, pos: usize) -> Result<(), DateError> {
    let field = if !(1..=12).contains(&c.month) {
        "month"
    } else if c.day == 0 || c.day > days_in_month(c.year, c.month) {
        "day"
    } else if c.hour > 23 {
        "hour"
    } else if c.minute > 59 {
        "minute"
    } else if c.second > 59 {
        "second"
    } else {
        return Ok(());
    };
    Err(DateError::OutOfRange { pos, field })
}

pub(super) fn skip_spaces(b: &[u8], p: &mut usize) {
    while b.get(*p) == Some(&b' ') {
        *p += 1;
    }
}

pub(super) fn need_spaces(b: &[u8], p: &mut usize) -> Result<(), DateError> {
    if b.get(*p) != Some(&b' ') {
        return Err(DateError::Mismatch { pos: *p, expected: "space" });
    }
    skip_spaces(b, p);
    Ok(())
}

pub(super) fn need_num(b: &[u8], p: &mut usize, n: usize, what: &'static str) -> Result<u32, DateError> {
    digits(b, p, n, n).ok_or(DateError::Mismatch { pos: *p, expected: what })
}

pub(super) fn expect(b: &[u8], p: &mut usize, ch: u8, what: &'static str) -> Result<(), DateError> {
    if b.get(*p) == Some(&ch) {
        *p += 1;
        Ok(())
    } else {
        Err(DateError::Mismatch { pos: *p, expected: what })
    }
}

/// `UNIX` / `UNIX_MS`: optional `-`, digits, optional `.fraction`; `unit` is
/// nanoseconds per integer unit.
pub(super) fn parse_unix(b: &[u8], unit: i64) -> Result<i64, DateError> {
    let mut p = 0;
    let neg = b.first() == Some(&b'-');
    if neg {
        p = 1;
    }
    let int_start = p;
    let mut whole: i64 = 0;
    while p < b.len() && b[p].is_ascii_digit() {
        whole = whole.checked_mul(10).and_then(|w| w.checked_add(i64::from(b[p] - b'0'))).ok_or(DateError::Overflow)?;
        p += 1;
    }
    if p == int_start {
        return Err(DateError::Mismatch { pos: p, expected: "digits of an epoch timestamp" });
    }
    let mut frac_nanos: i64 = 0;
    if b.get(p) == Some(&b'.') {
        p += 1;
        // Fraction of one `unit`: read up to 18 digits, scale to nanoseconds.
        let mut num: i64 = 0;
        let mut den: i64 = 1;
        let fstart = p;
        while p < b.len() && b[p].is_ascii_digit() {
            if p - fstart < 18 {
                num = num * 10 + i64::from(b[p] - b'0');
                den *= 10;
            }
            p += 1;
        }
        if p == fstart {
            return Err(DateError::Mismatch { pos: p, expected: "fraction digits" });
        }
        frac_nanos = ((i128::from(num) * i128::from(unit)) / i128::from(den)) as i64;
    }
    if p != b.len() {
        return Err(DateError::TrailingInput { pos: p });
    }
    let v = whole.checked_mul(unit).and_then(|v| v.checked_add(frac_nanos)).ok_or(DateError::Overflow)?;
    Ok(if neg { -v } else { v })
}

/// Translates a Joda-Time pattern into [`Item`]s.
pub(super) fn compile(pattern: &str) -> Result<Format, DateError> {
    let chars: Vec<(usize, char)> = pattern.char_indices().collect();
    let mut items: Vec<Item> = Vec::new();
    let mut lit: Vec<u8> = Vec::new();
    let flush = |lit: &mut Vec<u8>, items: &mut Vec<Item>| {
        if !lit.is_empty() {
            items.push(Item::Literal(std::mem::take(lit).into_boxed_slice()));
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let (pos, ch) = chars[i];
        if ch == '\'' {
            if chars.get(i + 1).map(|c| c.1) == Some('\'') {
                lit.push(b'\'');
                i += 2;
                continue;
            }
            let mut j = i + 1;
            loop {
                match chars.get(j) {
                    None => return Err(DateError::UnterminatedQuote { pos, pattern: pattern.to_owned() }),
                    Some((_, '\'')) if chars.get(j + 1).map(|c| c.1) == Some('\'') => {
                        lit.push(b'\'');
                        j += 2;
                    }
                    Some((_, '\'')) => break,
                    Some((_, c)) => {
                        let mut buf = [0u8; 4];
                        lit.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                        j += 1;
                    }
                }
            }
            i = j + 1;
            continue;
        }
        if ch == ' ' {
            flush(&mut lit, &mut items);
            while chars.get(i).map(|c| c.1) == Some(' ') {
                i += 1;
            }
            items.push(Item::Space);
            continue;
        }
        if !ch.is_ascii_alphabetic() {
            let mut buf = [0u8; 4];
            lit.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            i += 1;
            continue;
        }
        let mut n = 1;
        while chars.get(i + n).map(|c| c.1) == Some(ch) {
            n += 1;
        }
        flush(&mut lit, &mut items);
        let num = |field, n: usize| Item::Num { field, min: 1, max: n.max(2), width: n };
        let unsupported = || DateError::UnsupportedToken { token: ch, pos, pattern: pattern.to_owned() };
        let item = match ch {
            'y' | 'Y' | 'u' if n == 2 => Item::Num { field: Field::Year2, min: 2, max: 2, width: 2 },
            'y' | 'Y' | 'u' => Item::Num { field: Field::Year, min: 1, max: n.max(4), width: n },
            'M' if n >= 4 => Item::MonthText { full: true },
            'M' if n == 3 => Item::MonthText { full: false },
            'M' => num(Field::Month, n),
            'd' => num(Field::Day, n),
            'H' => num(Field::Hour24, n),
            'h' => num(Field::Hour12, n),
            'K' => num(Field::Hour0To11, n),
            'k' => num(Field::Hour1To24, n),
            'm' => num(Field::Minute, n),
            's' => num(Field::Second, n),
            'e' => num(Field::DayOfWeekNum, n),
            'S' => Item::Fraction { max: n.max(9), width: n },
            'E' => Item::Weekday,
            'a' => Item::HalfDay,
            'Z' if n >= 3 => Item::ZoneId,
            'Z' => Item::Offset,
            'G' | 'C' | 'x' | 'w' | 'D' | 'z' => return Err(unsupported()),
            _ => return Err(DateError::UnknownToken { token: ch, pos, pattern: pattern.to_owned() }),
        };
        items.push(item);
        i += n;
    }
    flush(&mut lit, &mut items);
    // Adjacent numeric fields (`yyyyMMdd`, `HHmmss`) need exact widths, as in Joda.
    let is_numeric = |it: &Item| matches!(it, Item::Num { .. } | Item::Fraction { .. });
    for idx in 0..items.len() {
        if !items.get(idx + 1).is_some_and(is_numeric) {
            continue;
        }
        match &mut items[idx] {
            Item::Num { min, max, width, .. } => {
                *min = *width;
                *max = *width;
            }
            Item::Fraction { max, width } => *max = *width,
            _ => {}
        }
    }
    Ok(Format::Pattern(items.into_boxed_slice()))
}
