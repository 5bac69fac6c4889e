//! Fuzzes the GELF decoder: bounded decompression, the JSON mapping and
//! chunk reassembly never panic and keep their limits. The first byte picks
//! the part: even → the rest is one payload (decompressed, then decoded);
//! odd → the rest is a sequence of chunk datagrams, each prefixed by its
//! length (one byte), fed to one reassembler.
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use sluice_parsers::gelf::{decode, decompress, Chunk, ChunkLimits, Reassembler};

const MAX_BYTES: usize = 64 << 10;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode % 2 == 0 {
        if let Ok(json) = decompress(rest, MAX_BYTES) {
            assert!(json.len() <= MAX_BYTES);
            if let Ok(m) = decode(&json, 16) {
                assert!(m.fields.get("message").and_then(|v| v.as_str()).is_some_and(|s| !s.is_empty()));
            }
        }
        return;
    }
    let limits = ChunkLimits { max_chunks: 128, max_message_bytes: 4096, max_pending: 8, timeout: Duration::from_secs(5) };
    let mut r = Reassembler::new(limits);
    let t = Instant::now();
    let mut rest = rest;
    let mut step = 0u64;
    while let Some((&len, tail)) = rest.split_first() {
        let n = usize::from(len).min(tail.len());
        let (d, next) = tail.split_at(n);
        rest = next;
        step += 1;
        if let Ok(Chunk::Complete(m)) = r.push(d, t + Duration::from_millis(step * 100)) {
            assert!(m.len() <= limits.max_message_bytes);
        }
        assert!(r.pending() <= limits.max_pending);
    }
    r.expire(t + Duration::from_secs(3600));
    assert_eq!(r.pending(), 0);
});
