//! Tests for the stream framing decoder: every split point of the input must
//! give the same frames and errors, octet counting and newlines mix,
//! oversized frames are cut at the limit (the rest skipped) and garbage is
//! reported once and skipped.

use sluice_parsers::framing::{Decoder, FrameError, Mode};

type Out = Vec<Result<Vec<u8>, FrameError>>;

/// A cut frame shows as its bytes followed by this marker.
const CUT: &[u8] = b"<cut>";

/// Feeds `chunks` one after another through a decoder, as a read loop would.
fn run(mut dec: Decoder, chunks: &[&[u8]]) -> Out {
    let mut buf: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            let (n, item) = dec.decode(&buf);
            assert!(n <= buf.len());
            let item = item.map(|r| r.map(|f| bytes_of(&buf, f)));
            buf.drain(..n);
            match item {
                Some(i) => out.push(i),
                None => break,
            }
        }
    }
    loop {
        let (n, item) = dec.decode_eof(&buf);
        let item = item.map(|r| r.map(|f| bytes_of(&buf, f)));
        buf.drain(..n);
        match item {
            Some(i) => out.push(i),
            None => break,
        }
    }
    out
}

fn bytes_of(buf: &[u8], f: sluice_parsers::framing::Frame) -> Vec<u8> {
    let mut v = buf[f.range].to_vec();
    if f.truncated {
        v.extend_from_slice(CUT);
    }
    v
}

/// Asserts that all two-way splits and byte-at-a-time feeding agree with
/// feeding everything at once, and returns that result.
fn all_splits(max: usize, mode: Mode, input: &[u8]) -> Out {
    let whole = run(Decoder::with_mode(max, mode), &[input]);
    for i in 0..=input.len() {
        let (a, b) = input.split_at(i);
        assert_eq!(run(Decoder::with_mode(max, mode), &[a, b]), whole, "split at {i}");
    }
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(run(Decoder::with_mode(max, mode), &bytes), whole);
    whole
}

fn ok(s: &str) -> Result<Vec<u8>, FrameError> {
    Ok(s.as_bytes().to_vec())
}

#[test]
fn newline_frames() {
    let out = all_splits(100, Mode::Auto, b"<13>a\r\n<14>bb\n\n<15>ccc");
    assert_eq!(out, vec![ok("<13>a"), ok("<14>bb"), ok("<15>ccc")]);
}

#[test]
fn octet_counting_with_rsyslog_trailing_newline() {
    // rsyslog counts a trailing "\n" inside the frame.
    let out = all_splits(100, Mode::Auto, b"6 <13>a\n5 <14>b7 <15>c\r\n");
    assert_eq!(out, vec![ok("<13>a"), ok("<14>b"), ok("<15>c")]);
}

#[test]
fn mixed_framing() {
    let input = b"<13>line one\n11 <13>counted<14>line two\n9 <15>x\ny z\n";
    let out = all_splits(100, Mode::Auto, input);
    assert_eq!(out, vec![ok("<13>line one"), ok("<13>counted"), ok("<14>line two"), ok("<15>x\ny z"),]);
}

#[test]
fn oversize_newline_frame_is_cut_and_the_rest_skipped() {
    let mut input = b"<13>ok\n".to_vec();
    input.extend(std::iter::repeat_n(b'x', 50));
    input.extend_from_slice(b"\n<14>after\n");
    let out = all_splits(10, Mode::Auto, &input);
    assert_eq!(out, vec![ok("<13>ok"), ok("xxxxxxxxxx<cut>"), ok("<14>after"),]);
}

#[test]
fn a_frame_of_exactly_the_limit_is_not_cut() {
    let out = all_splits(4, Mode::Newline, b"abcd\r\nabcde\r\nabcd");
    assert_eq!(out, vec![ok("abcd"), ok("abcd<cut>"), ok("abcd")]);
}

#[test]
fn oversize_at_eof() {
    let out = all_splits(4, Mode::Newline, b"abcdefgh");
    assert_eq!(out, vec![ok("abcd<cut>")]);
}

#[test]
fn oversize_octet_frame_is_cut_and_skipped_by_count() {
    let out = all_splits(5, Mode::Auto, b"12 <13>toolong!3 abc");
    assert_eq!(out, vec![ok("<13>t<cut>"), ok("abc"),]);
    // Cut before it all arrived, then the stream ends: the cut part is kept.
    let out = all_splits(5, Mode::Auto, b"12 <13>tool");
    assert_eq!(out, vec![ok("<13>t<cut>")]);
}

#[test]
fn garbage_length_resyncs_at_newline() {
    let out = all_splits(100, Mode::Auto, b"12a <13>junk\n<14>good\n");
    assert_eq!(
        out,
        vec![Err(FrameError::InvalidLength { offset: 0, reason: "expected a space after the length" }), ok("<14>good"),]
    );
    let out = all_splits(100, Mode::Auto, b"12345678901234 x\n3 abc");
    assert!(matches!(out[0], Err(FrameError::InvalidLength { offset: 0, .. })));
    assert_eq!(out[1], ok("abc"));
}

#[test]
fn truncated_octet_frame_at_eof() {
    let out = all_splits(100, Mode::Auto, b"3 abc10 <13>");
    assert_eq!(out, vec![ok("abc"), Err(FrameError::Truncated { offset: 5, expected: 10, got: 4 }),]);
}

#[test]
fn forced_octet_mode_rejects_non_digits() {
    let out = all_splits(100, Mode::OctetCounting, b"<13>x\n2 ab");
    assert!(matches!(out[0], Err(FrameError::InvalidLength { offset: 0, .. })));
    assert_eq!(out[1], ok("ab"));
}

#[test]
fn forced_newline_mode_keeps_digits() {
    let out = all_splits(100, Mode::Newline, b"5 abc\n");
    assert_eq!(out, vec![ok("5 abc")]);
}

#[test]
fn empty_input() {
    assert!(all_splits(10, Mode::Auto, b"").is_empty());
    assert!(all_splits(10, Mode::Auto, b"\n\r\n").is_empty());
}

#[test]
fn header_verdict_independent_of_split() {
    // Found by fuzzing: the error used to depend on how much had arrived.
    let out = all_splits(100, Mode::OctetCounting, b"0002222222222");
    assert_eq!(out, vec![Err(FrameError::InvalidLength { offset: 0, reason: "length starts with 0" })]);
    let out = all_splits(100, Mode::Auto, b"12345678901 x");
    assert_eq!(out, vec![Err(FrameError::InvalidLength { offset: 0, reason: "more than 10 digits" })]);
}

#[test]
fn issue_18_nul_ends_a_frame_as_python_sysloghandler_sends_over_tcp() {
    // logging.handlers.SysLogHandler over TCP: `<PRI>message\0`, no newline.
    let input = b"<14>first message\0<14>second\0<11>third, over a NUL\0";
    let frames: Vec<Vec<u8>> = all_splits(64, Mode::Auto, input).into_iter().map(Result::unwrap).collect();
    assert_eq!(frames, [&b"<14>first message"[..], b"<14>second", b"<11>third, over a NUL"]);
    // Mixed with newlines, CRLF and octet counting; stray NULs between frames are skipped.
    let input = b"\0<13>a\n\0\0<13>b\r\n11 <13>c xyzw\0<13>d\0";
    let frames: Vec<Vec<u8>> = all_splits(64, Mode::Auto, input).into_iter().map(Result::unwrap).collect();
    assert_eq!(frames, [&b"<13>a"[..], b"<13>b", b"<13>c xyzw", b"<13>d"]);
    // A frame cut at the limit resynchronises at the next NUL.
    let input = b"<13>0123456789abcdef\0<13>ok\0";
    assert_eq!(all_splits(8, Mode::Newline, input), vec![Ok([&b"<13>0123"[..], CUT].concat()), Ok(b"<13>ok".to_vec())]);
}
