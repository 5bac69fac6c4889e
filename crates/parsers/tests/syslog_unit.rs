//! Syslog parser edge cases beyond the shared vectors: garbage, empty input,
//! invalid UTF-8, truncation, PRI limits, bad timestamps, SD escapes, 3164
//! year handling and detection.

use std::borrow::Cow;

use chrono::{Datelike, FixedOffset, Timelike};
use sluice_parsers::syslog::{
    facility_name, parse, parse_3164, parse_5424, severity_name, Options, Protocol, SyslogError,
};

fn opts() -> Options {
    Options { year: Some(2021), ..Options::default() }
}

#[test]
fn empty_and_whitespace() {
    assert_eq!(parse(b"", &opts()), Err(SyslogError::Empty));
    assert_eq!(parse(b" \r\n\t", &opts()), Err(SyslogError::Empty));
    assert_eq!(parse_5424(b"", &opts()), Err(SyslogError::Empty));
    assert_eq!(parse_3164(b"\n", &opts()), Err(SyslogError::Empty));
}

#[test]
fn priority_errors() {
    assert_eq!(parse(b"<999>1 - - - - - -", &opts()), Err(SyslogError::PriorityOutOfRange { pos: 1 }));
    assert_eq!(parse(b"<192>Jan  1 00:00:00 h m", &opts()), Err(SyslogError::PriorityOutOfRange { pos: 1 }));
    assert_eq!(
        parse(b"<99999999999999999999999>1 - - - - - -", &opts()),
        Err(SyslogError::PriorityOutOfRange { pos: 1 })
    );
    assert_eq!(parse(b"<>1 - - - - - -", &opts()), Err(SyslogError::InvalidPriority { pos: 1 }));
    assert_eq!(parse(b"<12", &opts()), Err(SyslogError::InvalidPriority { pos: 3 }));
    let e = parse(b"<1x>", &opts()).unwrap_err();
    assert_eq!(e, SyslogError::InvalidPriority { pos: 2 });
    assert!(e.to_string().contains("at byte 2"));
    let m = parse(b"<191>1 - - - - - -", &opts()).unwrap();
    assert_eq!((m.facility, m.severity), (Some(23), Some(7)));
    assert_eq!(facility_name(23), Some("local7"));
    assert_eq!(severity_name(7), Some("debug"));
    assert_eq!(facility_name(24), None);
}

#[test]
fn truncated_5424() {
    let full = b"<13>1 2019-02-13T19:48:34Z host app 42 ID [a b=\"c\"] msg";
    // Every prefix either parses (as 5424 or, before the version, 3164) or
    // fails with a position inside the input; none panics.
    for n in 0..full.len() {
        match parse(&full[..n], &opts()) {
            Ok(_) => {}
            Err(SyslogError::Empty) => assert_eq!(n, 0),
            Err(e) => {
                let s = e.to_string();
                assert!(s.contains("at byte"), "{s}");
            }
        }
    }
    assert_eq!(
        parse(b"<13>1 2019-02-13T19:48:34Z host app", &opts()),
        Err(SyslogError::UnexpectedEnd { pos: 35, expected: "space after app-name" })
    );
    assert_eq!(
        parse(b"<13>1 - h a p m", &opts()),
        Err(SyslogError::UnexpectedEnd { pos: 15, expected: "space after msgid" })
    );
}

#[test]
fn garbage_5424_is_rejected_with_position() {
    assert_eq!(
        parse(b"<13>1 - h a p m garbage", &opts()),
        Err(SyslogError::Expected { pos: 16, expected: "structured data (`-` or `[`)" })
    );
    assert_eq!(parse(b"<13>1 -  a p m -", &opts()), Err(SyslogError::Expected { pos: 8, expected: "hostname" }));
    assert_eq!(
        parse(b"<13>1 - h a p m -x", &opts()),
        Err(SyslogError::Expected { pos: 17, expected: "space after structured data" })
    );
    assert_eq!(
        parse(b"<13>1 - h a p m [x a=\"1\"]junk", &opts()),
        Err(SyslogError::Expected { pos: 25, expected: "space after structured data" })
    );
}

#[test]
fn bad_timestamps() {
    let cases: &[(&[u8], usize)] = &[
        (b"<13>1 2019-13-13T19:48:34Z h a p m -", 11),
        (b"<13>1 2019-02-30T19:48:34Z h a p m -", 14),
        (b"<13>1 2019-02-13T24:48:34Z h a p m -", 17),
        (b"<13>1 2019-02-13 19:48:34Z h a p m -", 16),
        (b"<13>1 2019-02-13T19:48:34 h a p m -", 25),
        (b"<13>1 2019-02-13T19:48:34+0100 h a p m -", 28),
        (b"<13>1 Feb 13 19:48:34 h a p m -", 6),
    ];
    for (input, pos) in cases {
        match parse(input, &opts()) {
            Err(SyslogError::InvalidTimestamp { pos: p, .. }) => {
                assert_eq!(p, *pos, "{}", String::from_utf8_lossy(input))
            }
            other => panic!("{}: {other:?}", String::from_utf8_lossy(input)),
        }
    }
    // Something after the timestamp other than a space.
    assert_eq!(
        parse(b"<13>1 2019-02-13T19:48:34Zx h a p m -", &opts()),
        Err(SyslogError::Expected { pos: 26, expected: "space after timestamp" })
    );
}

#[test]
fn timestamp_precision_and_offset() {
    let m = parse(b"<13>1 2019-02-13T19:48:34.123456789+05:30 h a p m -", &opts()).unwrap();
    let ts = m.timestamp.unwrap();
    assert_eq!(ts.nanosecond(), 123_456_789);
    assert_eq!(ts.offset().local_minus_utc(), 5 * 3600 + 1800);
}

#[test]
fn sd_escapes_and_order() {
    let m = parse(
        br#"<13>1 - h a p m [b x="q\"uote" y="back\\slash" z="br\]acket" w="other\n"][a k="v"][b dup="1"] msg"#,
        &opts(),
    )
    .unwrap();
    let ids: Vec<&str> = m.structured_data.iter().map(|e| e.id.as_ref()).collect();
    assert_eq!(ids, ["b", "a", "b"]);
    let p = &m.structured_data[0].params;
    assert_eq!(p[0], (Cow::Borrowed("x"), Cow::Borrowed("q\"uote")));
    assert_eq!(p[1].1, "back\\slash");
    assert_eq!(p[2].1, "br]acket");
    assert_eq!(p[3].1, "other\\n");
    // Unescaped values borrow from the input.
    assert!(matches!(m.structured_data[1].params[0].1, Cow::Borrowed(_)));
    assert_eq!(m.message.as_deref(), Some("msg"));
}

#[test]
fn malformed_sd_dropped_or_rejected() {
    let input = b"<13>1 - h a p m [ok a=\"1\"][bad x][ok2 b=\"2\"] msg";
    let m = parse(input, &opts()).unwrap();
    let ids: Vec<&str> = m.structured_data.iter().map(|e| e.id.as_ref()).collect();
    assert_eq!(ids, ["ok", "ok2"]);
    let strict = Options { strict_sd: true, ..opts() };
    assert_eq!(
        parse(input, &strict),
        Err(SyslogError::InvalidStructuredData { pos: 32, reason: "expected `=` after PARAM-NAME" })
    );
    assert_eq!(
        parse(b"<13>1 - h a p m [a b=\"unterminated", &opts()),
        Err(SyslogError::InvalidStructuredData { pos: 34, reason: "unterminated PARAM-VALUE" })
    );
}

#[test]
fn invalid_utf8_is_replaced_not_rejected() {
    let m = parse(b"<13>1 - h\xff a p m [i k=\"v\xfe\"] bad \xc3\x28 byte", &opts()).unwrap();
    assert_eq!(m.hostname.as_deref(), Some("h\u{fffd}"));
    assert_eq!(m.structured_data[0].params[0].1, "v\u{fffd}");
    assert_eq!(m.message.as_deref(), Some("bad \u{fffd}( byte"));
    assert!(matches!(m.appname, Some(Cow::Borrowed(_))));
    let m = parse(b"<13>Jan  1 00:00:00 h\xff app: x\xff", &opts()).unwrap();
    assert_eq!(m.hostname.as_deref(), Some("h\u{fffd}"));
    assert_eq!(m.message.as_deref(), Some("x\u{fffd}"));
}

#[test]
fn bom_and_trailing_newlines() {
    let m = parse(b"<13>1 - - - - - - \xEF\xBB\xBFhello\r\n\n", &opts()).unwrap();
    assert_eq!(m.message.as_deref(), Some("hello"));
    let m = parse(b"<13>1 - - - - - - \xEF\xBB\xBF", &opts()).unwrap();
    assert_eq!(m.message, None);
}

#[test]
fn rfc3164_variants() {
    let m = parse(b"<34>Oct 11 22:14:15 mymachine su[12]: hi there\n", &opts()).unwrap();
    assert_eq!(m.protocol, Protocol::Rfc3164);
    let ts = m.timestamp.unwrap();
    assert_eq!((ts.year(), ts.month(), ts.day()), (2021, 10, 11));
    assert!(m.year_inferred);
    assert_eq!(m.hostname.as_deref(), Some("mymachine"));
    assert_eq!(m.appname.as_deref(), Some("su"));
    assert_eq!(m.procid.as_deref(), Some("12"));
    assert_eq!(m.message.as_deref(), Some("hi there"));

    // No PRI, no hostname.
    let m = parse(b"Oct 11 22:14:15 kernel: boom", &opts()).unwrap();
    assert_eq!(m.priority, None);
    assert_eq!(m.hostname, None);
    assert_eq!(m.appname.as_deref(), Some("kernel"));

    // Milliseconds and zone from options.
    let tz = FixedOffset::east_opt(-3600).unwrap();
    let o = Options { tz, ..opts() };
    let m = parse(b"<13>oct  1 22:14:15.250 host msg", &o).unwrap();
    let ts = m.timestamp.unwrap();
    assert_eq!(ts.nanosecond(), 250_000_000);
    assert_eq!(ts.offset().local_minus_utc(), -3600);

    // Plain text: no timestamp, whole line is the message.
    let m = parse(b"just some text: here", &opts()).unwrap();
    assert_eq!(m.timestamp, None);
    assert_eq!(m.appname, None);
    assert_eq!(m.message.as_deref(), Some("just some text: here"));

    // Invalid date falls back to message.
    let m = parse(b"<13>Feb 30 10:00:00 host x", &opts()).unwrap();
    assert_eq!(m.timestamp, None);
    assert_eq!(m.message.as_deref(), Some("Feb 30 10:00:00 host x"));

    // `[info]` is not structured data in 3164.
    let m = parse(b"<13>Feb  3 10:00:00 host app: [info] started", &opts()).unwrap();
    assert!(m.structured_data.is_empty());
    assert_eq!(m.message.as_deref(), Some("[info] started"));
}

#[test]
fn detection_without_pri_falls_back() {
    // Looks like a 5424 version but is not valid 5424: kept as 3164 text.
    let m = parse(b"1 2 3 go", &opts()).unwrap();
    assert_eq!(m.protocol, Protocol::Rfc3164);
    assert_eq!(m.message.as_deref(), Some("1 2 3 go"));
}

#[test]
fn garbage_never_panics() {
    let samples: &[&[u8]] = &[
        b"<",
        b"<1",
        b"<1>",
        b"<1>1",
        b"<1>1 ",
        b"<1>1 -",
        b"<1>1 - - - - - [",
        b"<1>1 - - - - - [a",
        b"<1>1 - - - - - [a ",
        b"<1>1 - - - - - [a b",
        b"<1>1 - - - - - [a b=",
        b"<1>1 - - - - - [a b=\"",
        b"<1>1 - - - - - [a b=\"\\",
        b"<1>1 - - - - - []",
        b"<1>1 - - - - - [=]",
        b"<1>Jan",
        b"<1>Jan 1",
        b"<1>Jan 1 1",
        b"<1>Jan 1 10:00:0",
        b"<1>2020-01-01T",
        b"<1>x[",
        b"<1>x[1",
        b"<1>x[]:",
        b"\xff\xfe\xfd",
        b"<1>\xff[\xff]:",
        b"]]]]",
        b"[a b=\"c\"]",
    ];
    for s in samples {
        let _ = parse(s, &opts());
        let _ = parse_3164(s, &opts());
        let _ = parse_5424(s, &opts());
    }
}

/// Issue 22 item 7: an RFC 3164 date without a year that would be more than a
/// day ahead of now belongs to last year (as rsyslog and Graylog read it):
/// `Dec 10 06:55:46` received on 26 Nov is last December, not next month.
#[test]
fn rfc3164_date_ahead_of_now_is_last_year() {
    let now = chrono::Utc::now();
    let mut ahead = now + chrono::Duration::days(10);
    if (ahead.month(), ahead.day()) == (2, 29) {
        ahead += chrono::Duration::days(1);
    }
    let line = format!("<13>{} host app: ahead", ahead.format("%b %e %H:%M:%S"));
    let m = parse(line.as_bytes(), &Options::default()).unwrap();
    let ts = m.timestamp.unwrap();
    assert!(m.year_inferred);
    assert_eq!(
        (ts.year(), ts.month(), ts.day(), ts.hour(), ts.minute()),
        (ahead.year() - 1, ahead.month(), ahead.day(), ahead.hour(), ahead.minute()),
        "{line}"
    );
    assert!(ts.timestamp() <= now.timestamp());

    // Up to a day ahead (a sender's clock a little fast) stays this year.
    let soon = now + chrono::Duration::hours(20);
    let line = format!("<13>{} host app: soon", soon.format("%b %e %H:%M:%S"));
    let ts = parse(line.as_bytes(), &Options::default()).unwrap().timestamp.unwrap();
    assert_eq!((ts.year(), ts.month(), ts.day()), (soon.year(), soon.month(), soon.day()), "{line}");

    // Just past: this year.
    let past = now - chrono::Duration::hours(3);
    let line = format!("<13>{} host app: past", past.format("%b %e %H:%M:%S"));
    let ts = parse(line.as_bytes(), &Options::default()).unwrap().timestamp.unwrap();
    assert_eq!((ts.year(), ts.month(), ts.day()), (past.year(), past.month(), past.day()), "{line}");
}
