//! Date parser tests: examples from the Logstash date filter documentation and
//! spec (named formats and Joda patterns), the thesis event's timestamp, and
//! error reporting.

use chrono::FixedOffset;
use sluice_parsers::date::{DateError, DateParser};

const S: i64 = 1_000_000_000;
const MS: i64 = 1_000_000;

fn utc() -> FixedOffset {
    FixedOffset::east_opt(0).unwrap()
}

fn p(format: &str, input: &str) -> Result<i64, DateError> {
    DateParser::new(&[format], utc()).unwrap().with_year(Some(2020)).parse(input)
}

#[test]
fn thesis_event_timestamp() {
    assert_eq!(p("yyyy-MM-dd HH:mm:ss:SSS", "2016-05-18 10:44:30:045"), Ok(1_463_568_270 * S + 45 * MS));
}

#[test]
fn logstash_doc_patterns() {
    assert_eq!(p("MMM dd yyyy HH:mm:ss", "Aug 13 2010 00:03:44"), Ok(1_281_657_824 * S));
    assert_eq!(p("yyyy-MM-dd HH:mm:ss,SSS", "2014-01-28 14:32:10,123"), Ok(1_390_919_530 * S + 123 * MS));
    assert_eq!(p("dd/MMM/yyyy:HH:mm:ss Z", "10/Oct/2000:13:55:36 -0700"), Ok(971_211_336 * S));
    assert_eq!(p("yyyyMMdd'T'HHmmss.SSSZ", "20110419T034401.103+0000"), Ok(1_303_184_641 * S + 103 * MS));
    assert_eq!(p("MM/dd/yyyy hh:mm:ss a", "04/19/2011 03:44:01 PM"), Ok(1_303_227_841 * S));
    assert_eq!(p("EEE MMM dd HH:mm:ss yyyy", "Tue Apr 19 03:44:01 2011"), Ok(1_303_184_641 * S));
    assert_eq!(p("yyyy-MM-dd HH:mm:ss ZZZ", "2011-04-19 03:44:01 UTC"), Ok(1_303_184_641 * S));
    assert_eq!(p("yyyy-MM-dd HH:mm:ss ZZ", "2011-04-19 05:44:01 +02:00"), Ok(1_303_184_641 * S));
    // Full month name, 1-digit fields.
    assert_eq!(p("MMMM d, yyyy H:m:s", "April 19, 2011 3:44:1"), Ok(1_303_184_641 * S));
}

#[test]
fn named_formats() {
    assert_eq!(p("ISO8601", "2011-04-19T03:44:01.103Z"), Ok(1_303_184_641 * S + 103 * MS));
    assert_eq!(p("HTTPDATE", "10/Oct/2000:13:55:36 -0700"), Ok(971_211_336 * S));
    assert_eq!(p("UNIX", "1326149001.132"), Ok(1_326_149_001 * S + 132 * MS));
    assert_eq!(p("UNIX", "1326149001"), Ok(1_326_149_001 * S));
    assert_eq!(p("UNIX", "-1.5"), Ok(-S - S / 2));
    assert_eq!(p("UNIX_MS", "1366125117000"), Ok(1_366_125_117 * S));
    assert_eq!(p("UNIX_MS", "1366125117000.5"), Ok(1_366_125_117 * S + 500_000));
    assert_eq!(p("RFC2822", "Thu, 21 Dec 2000 16:01:07 +0200"), Ok(977_407_267 * S));
    assert_eq!(p("RFC2822", "21 Dec 2000 14:01:07 GMT"), Ok(977_407_267 * S));
    // RFC3164: year from options, both day paddings.
    assert_eq!(p("RFC3164", "Jan  5 15:33:03"), Ok(1_578_238_383 * S));
    assert_eq!(p("RFC3164", "Jan 05 15:33:03"), Ok(1_578_238_383 * S));
}

#[test]
fn iso8601_variants() {
    let base = 1_007_769_294 * S; // 2001-12-07T23:54:54Z
    for (input, want) in [
        ("2001-12-07T23:54:54Z", base),
        ("2001-12-07T23:54:54z", base),
        ("2001-12-07 23:54:54Z", base),
        ("2001-12-07T23:54:54", base),
        ("2001-12-07T23:54:54+00:00", base),
        ("2001-12-07T23:54:54-0000", base),
        ("2001-12-08T01:54:54+02", base),
        ("2001-12-07T23:54:54.123Z", base + 123 * MS),
        ("2001-12-07T23:54:54,123Z", base + 123 * MS),
        ("2001-12-07T23:54:54.123456789Z", base + 123_456_789),
        ("2001-12-07T23:54:54.1234567891Z", base + 123_456_789),
        ("2001-12-07T15:54:54.5-08:00", base + 500 * MS),
        ("  2001-12-07T23:54:54Z\n", base),
        ("2001-12-07T23:54", base - 54 * S),
        ("2001-12-07", base - (23 * 3600 + 54 * 60 + 54) * S),
    ] {
        assert_eq!(p("ISO8601", input), Ok(want), "{input}");
    }
    assert_eq!(p("ISO8601", "2001-01-01T00:00:00-0800"), Ok(978_336_000 * S));
}

#[test]
fn configured_timezone_applies_without_offset() {
    let tz = FixedOffset::east_opt(2 * 3600).unwrap();
    let d = DateParser::new(&["ISO8601"], tz).unwrap();
    assert_eq!(d.parse("2001-01-01 00:00:00"), Ok(978_300_000 * S));
    // An explicit offset wins.
    assert_eq!(d.parse("2001-01-01T00:00:00Z"), Ok(978_307_200 * S));
}

#[test]
fn formats_tried_in_order() {
    let d = DateParser::new(&["UNIX", "ISO8601", "dd/MMM/yyyy:HH:mm:ss Z"], utc()).unwrap();
    assert_eq!(d.parse("0"), Ok(0));
    assert_eq!(d.parse("1970-01-01T00:00:01Z"), Ok(S));
    assert_eq!(d.parse("01/Jan/1970:00:00:02 +0000"), Ok(2 * S));
    assert!(d.parse("nope").is_err());
}

#[test]
fn pattern_errors() {
    let e = DateParser::new(&["yyyy-qq"], utc()).unwrap_err();
    assert_eq!(e, DateError::UnknownToken { token: 'q', pos: 5, pattern: "yyyy-qq".into() });
    assert!(e.to_string().contains("unknown pattern token 'q' at position 5"));
    assert!(matches!(DateParser::new(&["HH:mm z"], utc()), Err(DateError::UnsupportedToken { token: 'z', .. })));
    assert!(matches!(DateParser::new(&["yyyy 'T"], utc()), Err(DateError::UnterminatedQuote { pos: 5, .. })));
    assert_eq!(DateParser::new(&[] as &[&str], utc()).unwrap_err(), DateError::NoFormats);
}

#[test]
fn input_errors() {
    assert_eq!(p("ISO8601", "2001-13-01T00:00:00Z"), Err(DateError::OutOfRange { pos: 5, field: "month" }));
    assert_eq!(p("ISO8601", "2001-02-29"), Err(DateError::OutOfRange { pos: 8, field: "day" }));
    assert_eq!(p("ISO8601", "2001-01-01T00:00:00Zjunk"), Err(DateError::TrailingInput { pos: 20 }));
    assert_eq!(
        p("yyyy-MM-dd", "2001/01/01"),
        Err(DateError::Mismatch { pos: 4, expected: "literal text of the pattern" })
    );
    assert_eq!(p("UNIX", "99999999999999999999"), Err(DateError::Overflow));
    assert_eq!(p("ISO8601", "9999-01-01"), Err(DateError::Overflow));
    for bad in ["", "x", "2001-", "2001-01-01T", "2001-01-01T25:00", "Feb 30 10:00:00"] {
        assert!(p("ISO8601", bad).is_err(), "{bad}");
        assert!(p("RFC3164", bad).is_err(), "{bad}");
    }
}

#[test]
fn year_inferred_when_missing() {
    let d = DateParser::new(&["MMM d HH:mm:ss"], utc()).unwrap();
    let v = d.parse("Jun  1 00:00:00").unwrap();
    // Some year within the representable range, not year 0.
    assert!(v > 1_500_000_000 * S);
}

#[test]
fn huge_numeric_fields_do_not_overflow() {
    assert!(p("yyyyyyyyyyyy", "999999999999").is_err());
    assert!(p("dddddddddddd", "999999999999").is_err());
    assert!(p("SSSSSSSSSSSSSSSS", "9999999999999999").is_ok());
}
