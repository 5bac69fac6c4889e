//! Fuzzes kv extraction with a few option sets chosen by the first byte.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_parsers::kv::{KvOptions, KvParser, Transform, Whitespace};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Ok(input) = std::str::from_utf8(rest) else {
        return;
    };
    let opts = match sel % 4 {
        0 => KvOptions::default(),
        1 => KvOptions {
            field_split: "&?".into(),
            value_split: ":=".into(),
            include_brackets: false,
            ..KvOptions::default()
        },
        2 => KvOptions {
            trim_key: "<>[]".into(),
            trim_value: "\"',".into(),
            remove_char_key: "-".into(),
            transform_key: Some(Transform::Capitalize),
            prefix: "p_".into(),
            allow_empty_values: true,
            allow_duplicate_values: false,
            whitespace: Whitespace::Strict,
            ..KvOptions::default()
        },
        _ => KvOptions {
            field_split: "│,".into(),
            value_split: "→".into(),
            ..KvOptions::default()
        },
    };
    if let Ok(p) = KvParser::new(opts) {
        for (k, _) in p.parse(input) {
            assert!(!k.is_empty());
        }
    }
});
