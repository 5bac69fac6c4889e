//! The agent protocol's frame decoder and batch payloads: arbitrary bytes
//! never panic, never allocate past the limits, and every frame that decodes
//! re-encodes to the same bytes; batch payloads decompress within their
//! declared length or fail cleanly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_protocol::compress::decode_events;
use sluice_protocol::frame::{decode, Frame};

const MAX_BATCH: u32 = 1 << 16;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while !rest.is_empty() {
        match decode(rest, MAX_BATCH) {
            Ok(Some((frame, used))) => {
                assert!(used <= rest.len());
                assert!(used >= 8);
                let again = frame.to_bytes();
                // Reserved bytes and flags are not kept, so compare decoded frames.
                let (back, n) = decode(&again, MAX_BATCH).unwrap().unwrap();
                assert_eq!(n, again.len());
                assert_eq!(back, frame);
                if let Frame::Batch(b) = &frame {
                    if let Ok(events) = decode_events(b, MAX_BATCH) {
                        assert_eq!(events.len(), b.events as usize);
                    }
                }
                rest = &rest[used..];
            }
            Ok(None) | Err(_) => break,
        }
    }
});
