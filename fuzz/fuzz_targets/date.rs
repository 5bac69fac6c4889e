//! Fuzzes the date parser with named formats and Joda patterns; also fuzzes
//! pattern compilation itself.
#![no_main]

use chrono::FixedOffset;
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

fuzz_target!(|data: &[u8]| {
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
