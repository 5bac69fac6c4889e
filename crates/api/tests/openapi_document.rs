//! The committed `docs/openapi.json` is exactly what the code generates
//! (ADR 0104): the web UI's TypeScript types are generated from that file.

#[test]
fn committed_openapi_json_is_the_generated_document() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    let generated = sluice_api::openapi_json();
    if committed != generated {
        let line = committed.lines().zip(generated.lines()).position(|(a, b)| a != b).map_or(0, |i| i + 1);
        panic!(
            "{} is not what the code generates (first difference near line {line}); regenerate it with:\n    {}",
            sluice_api::openapi::COMMITTED_PATH,
            sluice_api::openapi::REGENERATE
        );
    }
}
