//! Fuzzes the Fluentd forward-protocol reader (the `fluent_forward`
//! source): messages are read one after another from the input; nothing
//! panics, nothing is read past the limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_parsers::fluent_forward::{next_message, Limits};

const LIMITS: Limits = Limits { max_message: 64 << 10, max_decompressed: 256 << 10, max_depth: 16 };

fuzz_target!(|data: &[u8]| {
    let mut pos = 0;
    while let Ok(Some((m, n))) = next_message(&data[pos..], &LIMITS) {
        assert!(n > 0 && n <= LIMITS.max_message && pos + n <= data.len());
        // Every record costs at least 3 input bytes (or inflated bytes).
        assert!(m.entries.len() <= n.max(LIMITS.max_decompressed));
        pos += n;
    }
});
