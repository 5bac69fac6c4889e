//! Fuzzes grok: an arbitrary (user-supplied) pattern either fails to compile
//! with an error or matches arbitrary input without panicking, and so does
//! the standard COMBINEDAPACHELOG pattern. Each match agrees with a
//! reference: the pattern's own regex (`regex_source`) compiled afresh by
//! PCRE2 in UTF mode without JIT must find the same whole match and the same
//! captures, field by field (sluice uses a byte-mode JIT engine for ASCII
//! input and claims both modes behave the same there).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use pcre2::bytes::{Regex, RegexBuilder};
use sluice_parsers::grok::{GrokLibrary, GrokPattern};

fn library() -> &'static (GrokLibrary, GrokPattern, Regex) {
    static LIB: OnceLock<(GrokLibrary, GrokPattern, Regex)> = OnceLock::new();
    LIB.get_or_init(|| {
        let lib = GrokLibrary::legacy();
        let p = lib.compile("%{COMBINEDAPACHELOG}").expect("standard pattern compiles");
        let r = reference(&p).expect("its regex compiles");
        (lib, p, r)
    })
}

/// The reference engine for `p`: UTF mode, no JIT, the same flags.
fn reference(p: &GrokPattern) -> Result<Regex, pcre2::Error> {
    RegexBuilder::new().utf(true).dotall(true).multi_line(true).jit_if_available(false).build(p.regex_source())
}

/// `p` on `input` against the reference: same match, same captures.
fn agree(p: &GrokPattern, reference: &Regex, input: &str) {
    let Ok(got) = p.matches(input) else { return };
    // A match limit hit by either engine is an error, not a disagreement.
    let Ok(want) = reference.captures(input.as_bytes()) else { return };
    match (got, want) {
        (None, None) => {}
        (Some(m), Some(c)) => {
            let whole = c.get(0).expect("group 0");
            assert_eq!(m.range(), whole.start()..whole.end(), "{:?} on {input:?}: whole match", p.regex_source());
            // The fields are the pattern's named groups `g<n>`, in group order
            // (a user's own group named like that would not be a field: then
            // the counts differ and only the whole match is compared).
            let groups: Vec<usize> = reference
                .capture_names()
                .iter()
                .enumerate()
                .filter(|(_, n)| n.as_deref().is_some_and(|n| n.starts_with('g') && n[1..].parse::<usize>().is_ok()))
                .map(|(i, _)| i)
                .collect();
            if groups.len() == p.fields().len() {
                let reference_texts: Vec<&str> = groups
                    .iter()
                    .filter_map(|&i| c.get(i).filter(|g| !g.as_bytes().is_empty()))
                    .map(|g| std::str::from_utf8(g.as_bytes()).expect("utf-8 capture"))
                    .collect();
                let texts: Vec<&str> = p.fields().iter().filter_map(|f| m.text(f)).collect();
                assert_eq!(texts, reference_texts, "{:?} on {input:?}: captures", p.regex_source());
            }
        }
        (got, want) => panic!(
            "{:?} on {input:?}: sluice {} but the reference {}",
            p.regex_source(),
            if got.is_some() { "matches" } else { "does not match" },
            if want.is_some() { "does" } else { "does not" }
        ),
    }
}

fuzz_target!(|data: &[u8]| {
    let (lib, apache, apache_ref) = library();
    let Ok(text) = std::str::from_utf8(data) else { return };
    agree(apache, apache_ref, text);
    if let Some((pattern, input)) = text.split_once('\n') {
        if pattern.len() < 200 {
            if let Ok(p) = lib.compile(pattern) {
                if let Ok(r) = reference(&p) {
                    agree(&p, &r, input);
                }
            }
        }
    }
});
