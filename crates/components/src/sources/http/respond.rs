//! Responses: plain, JSON, Elasticsearch-style errors.

use super::*;

// ---------------------------------------------------------------- responses

pub(super) fn respond(status: StatusCode, body: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

pub(super) fn json(status: StatusCode, v: &Doc) -> Response {
    respond(status, sonic_rs::to_vec(v).unwrap_or_default())
}

/// An Elasticsearch-style error body: `{"error": {"root_cause": [..], "type", "reason"}, "status"}`.
pub(super) fn es_error(status: StatusCode, kind: &str, reason: &str) -> Response {
    let cause = sonic_rs::json!({"type": kind, "reason": reason});
    json(
        status,
        &sonic_rs::json!({
            "error": {"root_cause": [cause], "type": kind, "reason": reason},
            "status": status.as_u16(),
        }),
    )
}

pub(super) fn acknowledged() -> Response {
    json(StatusCode::OK, &sonic_rs::json!({"acknowledged": true}))
}

pub(super) fn not_found(what: &str) -> Response {
    es_error(StatusCode::NOT_FOUND, "resource_not_found_exception", &format!("{what} not found"))
}

pub(super) fn queue_closed() -> Response {
    es_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable_shards_exception",
        "pipeline queue is closed (shutting down)",
    )
}
