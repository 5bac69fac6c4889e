//! Fuzzes the date parser: arbitrary input with named formats and Joda
//! patterns (and the input as a pattern) never panics; and a round trip
//! against chrono as the reference formatter: an instant chosen by the
//! fuzzer (1970-2099, milliseconds, an offset of whole quarter hours),
//! written by chrono in a format's layout, parses back to that instant (to
//! the format's precision).
#![no_main]

use chrono::{DateTime, Datelike, FixedOffset, TimeZone};
use libfuzzer_sys::fuzz_target;
use sluice_parsers::date::DateParser;

const FORMATS: &[&str] = &[
    "ISO8601",
    "UNIX",
    "UNIX_MS",
    "RFC3164",
    "RFC2822",
    "HTTPDATE",
    "yyyy-MM-dd HH:mm:ss,SSS",
    "yyyyMMdd'T'HHmmss.SSSZ",
    "EEE MMM dd HH:mm:ss yyyy",
    "MM/dd/yy hh:mm:ss a ZZZ",
];

/// A format, how chrono writes an instant in it, and whether it keeps milliseconds.
type Layout = (&'static str, fn(&DateTime<FixedOffset>) -> String, bool);

const ROUND_TRIP: &[Layout] = &[
    ("ISO8601", |t| t.format("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string(), true),
    ("UNIX", |t| t.format("%s%.3f").to_string(), true),
    ("UNIX_MS", |t| t.timestamp_millis().to_string(), true),
    ("RFC3164", |t| t.format("%b %-d %H:%M:%S").to_string(), false),
    ("RFC2822", |t| t.to_rfc2822(), false),
    ("HTTPDATE", |t| t.format("%d/%b/%Y:%H:%M:%S %z").to_string(), false),
    ("yyyy-MM-dd HH:mm:ss,SSS", |t| t.format("%Y-%m-%d %H:%M:%S,%3f").to_string(), true),
    ("yyyyMMdd'T'HHmmss.SSSZ", |t| t.format("%Y%m%dT%H%M%S%.3f%z").to_string(), true),
    ("EEE MMM dd HH:mm:ss yyyy", |t| t.format("%a %b %d %H:%M:%S %Y").to_string(), false),
];

fn round_trip(d: &[u8; 8]) {
    let (format, write, keeps_ms) = ROUND_TRIP[usize::from(d[0]) % ROUND_TRIP.len()];
    // 1970-01-01 .. 2099-12-31
    let secs = i64::from(u32::from_le_bytes([d[1], d[2], d[3], d[4]])) % 4_102_444_800;
    let millis = i64::from(u16::from_le_bytes([d[5], d[6]]) % 1000);
    let Some(tz) = FixedOffset::east_opt(i32::from(d[7] as i8 % 57) * 900) else { return };
    let Some(t) = tz.timestamp_opt(secs, (millis * 1_000_000) as u32).single() else { return };
    let text = write(&t);
    let parser = DateParser::new(&[format], tz).expect("a known format").with_year(Some(t.year()));
    let want = secs * 1_000_000_000 + if keeps_ms { millis * 1_000_000 } else { 0 };
    match parser.parse(&text) {
        Ok(ns) => assert_eq!(ns, want, "{format}: {text:?} (offset {tz})"),
        Err(e) => panic!("{format}: {text:?} (offset {tz}) written by chrono does not parse: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    if let Some(head) = data.first_chunk::<8>() {
        round_trip(head);
    }
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Ok(input) = std::str::from_utf8(rest) else {
        return;
    };
    let Some(tz) = FixedOffset::east_opt(i32::from(sel as i8) * 900) else {
        return;
    };
    let format = FORMATS[usize::from(sel) % FORMATS.len()];
    if let Ok(p) = DateParser::new(&[format], tz) {
        let _ = p.with_year(Some(2024)).parse(input);
    }
    // The input as a pattern, parsing itself.
    if let Ok(p) = DateParser::new(&[input], tz) {
        let _ = p.with_year(Some(2024)).parse(input);
    }
});
