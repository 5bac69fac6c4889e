//! Dead-letter files: events a sink will never deliver (a document the
//! Elasticsearch bulk API refuses for good, an event the store would delete
//! on arrival), appended as ndjson lines `{<why>..., "document": <event>}`
//! to a file of the operator's choosing, so they are kept, counted and can
//! be replayed — never silently dropped.
//!
//! Not a component: the sinks with a `dead_letter_path` share it.

use std::path::Path;

use sluice_core::codec::write_json;
use sluice_core::component::BoxError;
use sluice_core::Event;
use tokio::io::AsyncWriteExt as _;

/// Appends one line to `out`: the members of `why` (each value already JSON
/// text), then `"document"`, the event as the `file` sink writes it.
pub fn encode(out: &mut Vec<u8>, why: &[(&str, &str)], event: &Event) {
    out.push(b'{');
    for (k, v) in why {
        out.push(b'"');
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b"\":");
        out.extend_from_slice(v.as_bytes());
        out.push(b',');
    }
    out.extend_from_slice(b"\"document\":");
    write_json(event, out);
    out.extend_from_slice(b"}\n");
}

/// Appends `lines` to `path` (created mode 0600: the events are logs) and
/// flushes them to the OS.
pub async fn append(path: &Path, lines: &[u8]) -> Result<(), BoxError> {
    let mut f = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .await
        .map_err(|e| format!("dead letter file {}: {e}", path.display()))?;
    f.write_all(lines).await.map_err(|e| format!("dead letter file {}: {e}", path.display()))?;
    f.flush().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_the_reasons_then_the_document() {
        let mut out = Vec::new();
        let e = Event::from_message("m");
        encode(&mut out, &[("status", "400"), ("error", "\"bad\"")], &e);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["status"], 400);
        assert_eq!(v["error"], "bad");
        assert_eq!(v["document"]["message"], "m");
        assert!(out.ends_with(b"}\n"));
    }
}
