//! The ndjson / plain-lines ingest endpoint: a body split into lines by
//! [`crate::lines::LineDecoder`] and queued as one batch.

use super::*;

// ---------------------------------------------------------------- ndjson / lines

pub(super) async fn ingest_lines(s: &Shared, req: Request, identity: Option<Arc<Identity>>) -> Response {
    let body = match read_body(s, req).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let mut events = Vec::new();
    let mut state = LineState::default();
    s.decoder.decode(&bytes::Bytes::from(body), true, &mut state, &mut events, &s.source);
    if let Some(id) = &identity {
        for e in &mut events {
            e.identity = Arc::clone(id);
        }
    }
    // Events still held as JSON text parsed cleanly: only the others can carry a failure tag.
    let failed = events
        .iter()
        .filter(|e| e.raw().is_none() && (e.has_tag("_jsonparsefailure") || e.has_tag("_oversized")))
        .count();
    let accepted = events.len();
    if !events.is_empty() {
        s.cx.metrics.events_in.add(accepted as u64);
        if s.cx.out.send(events).await.is_err() {
            return queue_closed();
        }
        s.cx.metrics.events_out.add(accepted as u64);
    }
    json(StatusCode::OK, &sonic_rs::json!({"accepted": accepted, "failed": failed}))
}
