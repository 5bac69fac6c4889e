//! Fuzzes the Elasticsearch bulk body parser: never panics, and every action
//! it returns is consistent with the body (line numbers inside it, source
//! lines taken from it, `create`/`index` with a source line).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_parsers::es_bulk::{parse, Kind};

fuzz_target!(|data: &[u8]| {
    let lines = data.split(|b| *b == b'\n').count();
    if let Ok(actions) = parse(data) {
        assert!(!actions.is_empty());
        let mut last = 0;
        for a in &actions {
            assert!(a.line > last && a.line <= lines, "line {} of {lines}", a.line);
            last = a.line;
            if matches!(a.kind, Kind::Index | Kind::Create | Kind::Update) {
                assert!(a.source.is_some());
            }
            if let Some(src) = a.source {
                // A source line is a slice of the body.
                let start = src.as_ptr() as usize;
                let base = data.as_ptr() as usize;
                assert!(start >= base && start + src.len() <= base + data.len());
                assert!(!src.contains(&b'\n'));
            }
        }
    }
});
