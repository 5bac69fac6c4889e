//! Fuzzes the Lumberjack v2 frame reader (the `beats` source): frames are
//! read one after another from the input, compressed ones inflated and
//! their inner frames read; nothing panics, no frame exceeds its limit and
//! no inflated payload exceeds `max_decompressed`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_parsers::lumberjack::{inflate, inner_frames, next_frame, Frame, Limits};

const LIMITS: Limits = Limits { max_frame: 64 << 10, max_window: 1024 };
const MAX_INFLATED: usize = 256 << 10;

fuzz_target!(|data: &[u8]| {
    let mut pos = 0;
    while let Ok(Some((frame, n))) = next_frame(&data[pos..], &LIMITS) {
        assert!(n > 0 && pos + n <= data.len());
        pos += n;
        match frame {
            Frame::Window(w) => assert!((1..=LIMITS.max_window).contains(&w)),
            Frame::Json { payload, .. } => assert!(payload.len() <= LIMITS.max_frame),
            Frame::Compressed(z) => {
                if let Ok(inflated) = inflate(z, MAX_INFLATED) {
                    assert!(inflated.len() <= MAX_INFLATED);
                    if let Ok(frames) = inner_frames(&inflated, &LIMITS) {
                        assert!(frames.iter().all(|(_, p)| p.len() <= LIMITS.max_frame));
                    }
                }
            }
        }
    }
});
