//! The `_bulk` wire format: each document as an action line (`create` or
//! `index`, with `_index` and the event's `_id`) and a source line, and the
//! per-item outcomes read from the response.

use serde::Deserialize;
use sluice_core::codec::write_json;
use sluice_core::metrics::Counter;
use sluice_core::value::write_json_str;
use sluice_core::Event;

use super::metadata::{has_metadata, split_metadata};

/// The bulk action per document.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(super) enum Action {
    /// Fails with 409 when the id exists (data streams need it).
    Create,
    /// Creates or replaces.
    Index,
}

/// What happened to one document.
pub(super) enum Outcome {
    Done,
    Retry,
    Dead { status: u16, error: String },
}

#[derive(Deserialize)]
struct BulkResponse {
    errors: bool,
    items: Vec<std::collections::BTreeMap<String, ItemResult>>,
}

#[derive(Deserialize)]
struct ItemResult {
    status: u16,
    #[serde(default)]
    error: Option<sonic_rs::Value>,
}

/// Appends the action and source lines of `event` for `index` to `body`.
pub(super) fn push_doc(action: Action, index: &str, event: &Event, body: &mut Vec<u8>) {
    body.extend_from_slice(match action {
        Action::Create => b"{\"create\":{\"_index\":",
        Action::Index => b"{\"index\":{\"_index\":",
    });
    write_json_str(body, index);
    if has_metadata(event) {
        let (doc, id) = split_metadata(event);
        if let Some(id) = id {
            body.extend_from_slice(b",\"_id\":");
            write_json_str(body, &id);
        }
        body.extend_from_slice(b"}}\n");
        write_json(&doc, body);
    } else {
        body.extend_from_slice(b"}}\n");
        write_json(event, body);
    }
    body.push(b'\n');
}

/// Each of `n` documents' outcome from a 2xx bulk response; a 409 on
/// `create` is delivered (counted in `conflicts`).
pub(super) fn outcomes(resp: &[u8], n: usize, action: Action, conflicts: &Counter) -> Result<Vec<Outcome>, String> {
    let parsed: BulkResponse = sonic_rs::from_slice(resp).map_err(|e| format!("not a bulk response ({e})"))?;
    if parsed.items.len() != n {
        return Err(format!("the bulk response has {} items for {n} documents", parsed.items.len()));
    }
    if !parsed.errors {
        return Ok((0..n).map(|_| Outcome::Done).collect());
    }
    Ok(parsed
        .items
        .into_iter()
        .map(|m| {
            let Some(item) = m.into_values().next() else {
                return Outcome::Dead { status: 0, error: "empty item".into() };
            };
            match item.status {
                200..=299 => Outcome::Done,
                409 if action == Action::Create => {
                    conflicts.inc();
                    Outcome::Done
                }
                429 | 500..=599 => Outcome::Retry,
                status => Outcome::Dead {
                    status,
                    error: item.error.map(|v| sonic_rs::to_string(&v).unwrap_or_default()).unwrap_or_default(),
                },
            }
        })
        .collect())
}
