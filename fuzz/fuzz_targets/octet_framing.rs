//! Differential fuzzing of the frame decoder: feeding the input whole, split
//! at a fuzzer-chosen point, or byte by byte must give the same frames and
//! errors, and frames never exceed the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_parsers::framing::{Decoder, FrameError, Mode};

type Out = Vec<Result<Vec<u8>, FrameError>>;

fn run(mut dec: Decoder, max: usize, chunks: &[&[u8]]) -> Out {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    for (idx, chunk) in chunks.iter().enumerate() {
        buf.extend_from_slice(chunk);
        let last = idx + 1 == chunks.len();
        loop {
            let (n, item) = if last {
                dec.decode_eof(&buf)
            } else {
                dec.decode(&buf)
            };
            assert!(n <= buf.len());
            let item = item.map(|r| r.map(|f| buf[f.range].to_vec()));
            buf.drain(..n);
            match item {
                Some(Ok(f)) => {
                    assert!(f.len() <= max);
                    out.push(Ok(f));
                }
                Some(Err(e)) => out.push(Err(e)),
                None => break,
            }
        }
        // Buffered bytes stay bounded by the limit plus the longest header.
        assert!(last || buf.len() <= max + 12);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let max = usize::from(sel % 64) + 1;
    let mode = match sel / 64 {
        0 | 1 => Mode::Auto,
        2 => Mode::Newline,
        _ => Mode::OctetCounting,
    };
    let whole = run(Decoder::with_mode(max, mode), max, &[rest, b""]);
    let at = usize::from(sel) % (rest.len() + 1);
    let (a, b) = rest.split_at(at);
    assert_eq!(run(Decoder::with_mode(max, mode), max, &[a, b, b""]), whole);
    let mut bytes: Vec<&[u8]> = rest.chunks(1).collect();
    bytes.push(b"");
    assert_eq!(run(Decoder::with_mode(max, mode), max, &bytes), whole);
});
