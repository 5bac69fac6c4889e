//! Document metadata: `_id` and `_index` are taken out of an event before it
//! is written as a document (the server refuses them inside one); a string
//! or number `_id` becomes the bulk action's `_id`.

use sluice_core::value::Value;
use sluice_core::Event;

/// Fields Elasticsearch keeps as document metadata (see the module docs).
const METADATA_FIELDS: [&str; 2] = ["_id", "_index"];

/// Whether `event` has a metadata field; an event still held as JSON text is
/// scanned for `"_i` first, so it is not parsed for nothing.
pub(super) fn has_metadata(event: &Event) -> bool {
    if let Some(raw) = event.raw() {
        if memchr::memmem::find(raw.parts().0, b"\"_i").is_none() {
            return false;
        }
    }
    METADATA_FIELDS.iter().any(|k| event.fields().get(k).is_some())
}

/// `event` without its metadata fields, and the `_id` taken out of it.
pub(super) fn split_metadata(event: &Event) -> (Event, Option<String>) {
    let mut doc = event.clone();
    let fields = doc.fields_mut();
    let id = match fields.get("_id") {
        Some(Value::String(t)) => Some(t.as_str().to_string()),
        Some(v @ (Value::Int(_) | Value::Float(_))) => {
            let mut text = Vec::new();
            v.write_json(&mut text);
            Some(String::from_utf8_lossy(&text).into_owned())
        }
        _ => None,
    };
    if id.is_some() {
        fields.remove("_id");
    }
    if fields.get("_index").is_some_and(Value::is_str) {
        fields.remove("_index");
    }
    (doc, id)
}
