//! Fuzzes grok: an arbitrary (user-supplied) pattern either fails to compile
//! with an error or matches arbitrary input without panicking; the standard
//! COMBINEDAPACHELOG pattern matches arbitrary input without panicking.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sluice_parsers::grok::{GrokLibrary, GrokPattern};

fn library() -> &'static (GrokLibrary, GrokPattern) {
    static LIB: OnceLock<(GrokLibrary, GrokPattern)> = OnceLock::new();
    LIB.get_or_init(|| {
        let lib = GrokLibrary::legacy();
        let p = lib.compile("%{COMBINEDAPACHELOG}").expect("standard pattern compiles");
        (lib, p)
    })
}

fuzz_target!(|data: &[u8]| {
    let (lib, apache) = library();
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = apache.matches(text);
    if let Some((pattern, input)) = text.split_once('\n') {
        if pattern.len() < 200 {
            if let Ok(p) = lib.compile(pattern) {
                let _ = p.matches(input);
            }
        }
    }
});
